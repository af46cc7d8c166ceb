# shellcheck shell=bash
# The tunnel step's part (sourced by tunnels.sh, after lib.sh): which WireGuard runs each device:
# the kernel module or a shipped userspace program.

declare -A USERSPACE=()    # implementation -> the program this step may start it with
declare -A SHIPPED=()      # shipped program -> its installed copy, checked by programs_check
declare -A DP_VERSION=()   # implementation -> its version (asked once per step)

kernel_probe() {  # TUNNELS_KERNEL=1 when the kernel can make a WireGuard device (asked once per step)
  [ -z "${TUNNELS_PROBED:-}" ] || return 0
  TUNNELS_PROBED=1
  # left over if an earlier run was killed here (asked of sysfs first: no `ip` when there is none)
  if [ -e /sys/class/net/vpnaas-probe ]; then ip link del vpnaas-probe 2>/dev/null || true; fi
  if ip link add vpnaas-probe type wireguard 2>/dev/null; then
    ip link del vpnaas-probe
    TUNNELS_KERNEL=1
  fi
}

programs_check() {  # [name sha256 always|nokernel]...: NEED each shipped program a device may need that is not here
  # First in the tunnel step, before the facts guard: a VNF met for the first time (its facts
  # unknown to the charm) asks for its programs in the same answer, so the charm sends them and the
  # next step applies, instead of a step for the facts, one for the programs and one to apply. It
  # only reads: nothing is applied before the facts guard and tunnels_prepare, which stops when a
  # program is missing. The shipped programs are used only when the installed copy is the
  # charm's byte for byte; one that is missing or differs is asked for (NEED). A copy's digest is
  # taken from PROGRAMS_DIGESTS while its file is the one hashed then (programs_cached); a digest
  # newly taken is recorded by tunnels_prepare, after the facts guard.
  local name digest when path have i
  local -a todo=() paths=()
  kernel_probe
  while [ $# -ge 3 ]; do
    name=$1 digest=$2 when=$3
    shift 3
    if [ "$when" = nokernel ] && [ "$TUNNELS_KERNEL" = 1 ]; then continue; fi
    todo+=("$name" "$digest")
    if [ -x "$DATAPLANE_DIR/$name" ]; then paths+=("$DATAPLANE_DIR/$name"); fi
  done
  programs_keys ${paths[@]+"${paths[@]}"}
  programs_digests_read
  for ((i = 0; i < ${#todo[@]}; i += 2)); do
    name=${todo[i]} digest=${todo[i + 1]}
    path=$DATAPLANE_DIR/$name
    have=
    if [ -n "${PROGRAM_KEY[$path]:-}" ]; then programs_cached "$name" "$path"; have=$PROGRAM_SHA256; fi
    if [ -n "$have" ] && [ "$have" = "$digest" ]; then
      SHIPPED[$name]=$path
      # pq-psk's start compares it with the running daemon's (pqpsk.sh), without hashing it again
      # shellcheck disable=SC2034  # read by tunnels/pqpsk.sh
      if [ "$name" = pq-psk ]; then PQ_PSK_DIGEST=$digest; fi
    else
      out "NEED $name"
      PROGRAMS_MISSING=1
    fi
  done
}

# The digest of each shipped program as last hashed, keyed by what the file system says of the
# file: "name sha256 ctime-seconds device inode size mtime ctime" (times to the nanosecond as
# stat prints them), instead of hashing several MB in every session (docs/figures.md, prof7). Any
# change of a file's bytes (a write in place, a truncation, a copy over it) sets its mtime and
# ctime; a file replaced by another is another inode with a new ctime; and no user-space call
# sets a ctime back (touch and utimensat set mtime and atime, and the ctime to now). So a file
# whose key is the one recorded still holds the bytes hashed then. What ctime cannot see: a write
# below the file system (the raw block device, the disk offline), or one made by root with the
# clock set back to the recorded ctime. A key is recorded only once the file has stayed unchanged
# for PROGRAMS_SETTLED s (in whole seconds: over 1 s in fact): on a kernel whose file timestamps advance once per tick, a change made
# within the same tick as the hashed one could otherwise keep its ctime (git's "racy" files).
PROGRAMS_DIGESTS=$DATAPLANE_DIR/.programs.sha256
PROGRAMS_SETTLED=2
declare -A PROGRAM_KEY=()      # path -> its key now
declare -A PROGRAM_DIGEST=()   # name -> "sha256 key" as recorded
PROGRAMS_DIGESTS_CHANGED=0

programs_keys() {  # path...: PROGRAM_KEY of each (one stat for all; a file that vanished has none)
  local text line
  PROGRAM_KEY=()
  [ $# -gt 0 ] || return 0
  text=$(stat -L -c '%n|%Z %d %i %s %y %z' -- "$@" 2>/dev/null) || true
  while [ -n "$text" ]; do
    line=${text%%$'\n'*}
    if [ "$line" = "$text" ]; then text=; else text=${text#*$'\n'}; fi
    case "$line" in *"|"*) PROGRAM_KEY[${line%%|*}]=${line#*|} ;; esac
  done
}

programs_digests_read() {  # PROGRAM_DIGEST from PROGRAMS_DIGESTS (a line that is not well formed is left out)
  local -a lines=()
  local line name rest
  PROGRAM_DIGEST=()
  PROGRAMS_DIGESTS_CHANGED=0
  [ -f "$PROGRAMS_DIGESTS" ] || return 0
  mapfile -t lines < "$PROGRAMS_DIGESTS" 2>/dev/null || true
  for line in ${lines[@]+"${lines[@]}"}; do
    name=${line%% *} rest=${line#* }
    case "$name" in wireguard-go|boringtun|pq-psk) ;; *) continue ;; esac
    [[ "$rest" =~ ^[0-9a-f]{64}\ [0-9]+\ [0-9]+\ [0-9]+\ [0-9]+\ . ]] || continue
    PROGRAM_DIGEST[$name]=$rest
  done
}

programs_cached() {  # name path: PROGRAM_SHA256, the file's sha256 ("" when unreadable), hashed only when its key changed
  local key=${PROGRAM_KEY[$2]:-} rec=${PROGRAM_DIGEST[$1]:-} now
  if [ -n "$key" ] && [ -n "$rec" ] && [ "${rec#* }" = "$key" ]; then
    PROGRAM_SHA256=${rec%% *}
    return 0
  fi
  PROGRAM_SHA256=$(sha256sum < "$2" 2>/dev/null) || PROGRAM_SHA256=
  PROGRAM_SHA256=${PROGRAM_SHA256%% *}
  # The key was read before the bytes were: a change in between makes the next key differ.
  printf -v now '%(%s)T' -1
  if [ -n "$PROGRAM_SHA256" ] && [ -n "$key" ] && [ $((now - ${key%% *})) -ge "$PROGRAMS_SETTLED" ]; then
    PROGRAM_DIGEST[$1]="$PROGRAM_SHA256 $key"
    PROGRAMS_DIGESTS_CHANGED=1
  fi
}

programs_digests_write() {  # PROGRAMS_DIGESTS, when a digest was recorded in this step
  [ "$PROGRAMS_DIGESTS_CHANGED" = 1 ] || return 0
  local name text=
  for name in wireguard-go boringtun pq-psk; do
    if [ -n "${PROGRAM_DIGEST[$name]:-}" ]; then text+="$name ${PROGRAM_DIGEST[$name]}"$'\n'; fi
  done
  write_if_changed "$PROGRAMS_DIGESTS" 600 "$text"
  PROGRAMS_DIGESTS_CHANGED=0
}

tunnels_prepare() {  # [name sha256 always|nokernel]...: as programs_check (a step that did not call it)
  require_tools wg wg-quick ip base64 sha256sum
  if [ -d /run/systemd/system ]; then init=systemd; else init=none; fi
  out "INIT $init"
  # The routes the VNF refuses during this step ("refused dev prefix" lines), and the data plane
  # of each device ("dataplane dev implementation version"), for the metrics (metrics.sh): one
  # file for both, sorted once there (the devices are applied in subshells: `isolated`).
  TUNNELS_LOG=$(mktemp)
  # shellcheck disable=SC2064  # the file name is fixed now
  trap "rm -f '$TUNNELS_LOG'" EXIT
  kernel_probe
  # A wireguard-go the charm did not ship: the one named by WG_QUICK_USERSPACE_IMPLEMENTATION, else
  # the VNF's own on PATH (what releases before the shipped programs used).
  local ug=${WG_QUICK_USERSPACE_IMPLEMENTATION:-} name
  case "${ug##*/}" in wireguard-go*) ;; *) ug=$(command -v wireguard-go || true) ;; esac
  if [ -n "$ug" ] && [ -x "$ug" ]; then USERSPACE[wireguard-go]=$ug; fi
  if [ $# -ge 3 ]; then programs_check "$@"; fi
  for name in "${!SHIPPED[@]}"; do USERSPACE[$name]=${SHIPPED[$name]}; done
  # A missing program: nothing is applied; the charm sends it in the same login and runs the step again.
  if [ "${PROGRAMS_MISSING:-0}" = 1 ]; then
    out DONE
    exit 0
  fi
  programs_digests_write
  if [ "$TUNNELS_KERNEL" = 1 ]; then
    out "IMPL kernel"
  elif [ -n "${USERSPACE[wireguard-go]:-}" ]; then
    dataplane_version wireguard-go   # in this shell: asked once per step, not again per device
    TUNNELS_IMPL="userspace ${USERSPACE[wireguard-go]} $DP_V"
    out "IMPL $TUNNELS_IMPL"
  else
    out "IMPL none"
  fi
  install_hooks
}

dataplane_version() {  # implementation: DP_V set to its version ("unknown" when it does not say)
  # Kept in DP_VERSION for the rest of the step (called in the step's own shell, not in $(...)).
  local v=${DP_VERSION[$1]:-}
  if [ -z "$v" ]; then
    if [ "$1" = kernel ]; then
      read -r v 2>/dev/null < /sys/module/wireguard/version || true   # 2> first: a missing file says nothing
    else
      # the second word of its first line, taken by bash (head and awk were two programs more)
      v=$("${USERSPACE[$1]}" --version 2>/dev/null || true)
      read -r _ v _ <<< "${v%%$'\n'*}" || true
    fi
    case "$v" in ''|*[!0-9A-Za-z._+-]*) v=unknown ;; esac
    DP_VERSION[$1]=$v
  fi
  DP_V=$v
}

install_wrapper() {  # wg-quick on a userspace program, whether or not the kernel has WireGuard
  # wg-quick makes a device with `ip link add <dev> type wireguard` and falls back to
  # WG_QUICK_USERSPACE_IMPLEMENTATION only where that fails *and* no module is loaded: it cannot
  # be told to use a userspace program on a kernel that has one. The wrapper runs wg-quick with a
  # bash function `ip` (exported: a function wins over any PATH, and wg-quick puts its own
  # directory first) that starts the program instead for exactly that call. WG_SUDO=true keeps
  # boringtun's privileges as root (else it drops them and cannot configure the device; its
  # command line parser takes true/false only, not 1).
  local real wrapper
  real=$(command -v ip)
  mkdir -p "$DATAPLANE_DIR"
  chmod 755 "$DATAPLANE_DIR"
  wrapper=$(
    printf '#!/bin/bash\n%s\nVPNAAS_IP=%q\n' "$MARKER" "$real"
    cat <<'WRAPPER'
# usage: wg-quick-userspace <program> up|down <device>
set -e
VPNAAS_USERSPACE=$1
shift
export VPNAAS_IP VPNAAS_USERSPACE WG_QUICK_USERSPACE_IMPLEMENTATION="$VPNAAS_USERSPACE" WG_SUDO=true
export WG_LOG_FILE="/run/wireguard/vpnaas-${!#}.log"
ip() {
  if [ "$#" = 5 ] && [ "$1 $2 $4 $5" = "link add type wireguard" ]; then
    "$VPNAAS_USERSPACE" "$3"
    return
  fi
  "$VPNAAS_IP" "$@"
}
export -f ip
exec wg-quick "$@"
WRAPPER
  )
  write_if_changed "$DATAPLANE_WRAPPER" 755 "$wrapper"$'\n'
}

dataplane_resolve() {  # choice (auto|kernel|wireguard-go|boringtun): sets DP_IMPL and DP_PROGRAM, or fails
  DP_IMPL=$1
  DP_PROGRAM=
  if [ "$DP_IMPL" = auto ]; then
    if [ "$TUNNELS_KERNEL" = 1 ]; then DP_IMPL=kernel; else DP_IMPL=wireguard-go; fi
  fi
  case "$DP_IMPL" in
    kernel)
      [ "$TUNNELS_KERNEL" = 1 ] || fail "kernel: this VNF's kernel has no WireGuard module (choose auto, wireguard-go or boringtun)" ;;
    wireguard-go|boringtun)
      DP_PROGRAM=${USERSPACE[$DP_IMPL]:-}
      [ -n "$DP_PROGRAM" ] || fail "$DP_IMPL is not installed on the VNF and the charm does not ship it" ;;
    *) fail "unknown implementation $DP_IMPL" ;;
  esac
}

# shellcheck disable=SC2034  # DP_CURRENT is read by tunnels/devices.sh
dataplane_current() {  # dev [running]: DP_CURRENT, the implementation the running device was brought up with ("" if none runs)
  # "running": the caller has just seen the device answer (not asked again). Set in the caller's
  # shell, not printed: no subshell.
  local dev=$1 rec=
  DP_CURRENT=
  if [ "${2:-}" != running ]; then timeout "$WG_TIMEOUT" wg show "$dev" >/dev/null 2>&1 || return 0; fi
  if [ -f "/etc/wireguard/$dev.impl" ]; then IFS= read -r rec < "/etc/wireguard/$dev.impl" || true; fi
  if [ -n "$rec" ]; then DP_CURRENT=$rec; return 0; fi
  # A device of a release before the choice: the kernel's, or wireguard-go (the only program then).
  if grep -qx DEVTYPE=wireguard "/sys/class/net/$dev/uevent" 2>/dev/null; then DP_CURRENT=kernel; else DP_CURRENT=wireguard-go; fi
}

dataplane_dropin() {  # dev implementation program: systemd starts wg-quick@dev on that program
  local dir="/etc/systemd/system/wg-quick@$1.service.d"
  local f="$dir/$DATAPLANE_DROPIN"
  if [ "$2" = kernel ]; then
    if [ -e "$f" ]; then
      rm -f "$f"
      rmdir "$dir" 2>/dev/null || true
      systemctl daemon-reload
    fi
    return 0
  fi
  mkdir -p "$dir"
  write_if_changed "$f" 644 "$(printf '%s\n[Service]\nExecStart=\nExecStart=%s %s up %%i\n' "$MARKER" \
    "$DATAPLANE_WRAPPER" "$3"; printf 'ExecStop=\nExecStop=%s %s down %%i' "$DATAPLANE_WRAPPER" "$3")"$'\n'
  if [ "$WRITTEN" = 1 ]; then systemctl daemon-reload; fi
}

dataplane_report() {  # dev implementation: the DATAPLANE line, and the same for the metrics
  local v
  dataplane_version "$2"
  v=$DP_V
  out "DATAPLANE $1 $2 $v"
  [ -z "${TUNNELS_LOG:-}" ] || printf 'dataplane %s %s %s\n' "$1" "$2" "$v" >> "$TUNNELS_LOG"
}

dataplane_forget() {  # dev: its record and drop-in go with it
  local dir="/etc/systemd/system/wg-quick@$1.service.d"
  rm -f "/etc/wireguard/$1.impl"
  if [ -e "$dir/$DATAPLANE_DROPIN" ]; then
    rm -f "$dir/$DATAPLANE_DROPIN"
    rmdir "$dir" 2>/dev/null || true
    systemctl daemon-reload >/dev/null 2>&1 || true
  fi
}
