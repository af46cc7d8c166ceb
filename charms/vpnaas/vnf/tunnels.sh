# shellcheck shell=bash
# The tunnel step of a reconcile (after lib.sh): make the VNF's WireGuard devices, routes and
# service addresses match the charm's plan, in one SSH session, and report what is there.
#
# Values arrive only as arguments, already validated by the charm's grammar (validation.py);
# the config bodies arrive base64-encoded and never contain the private key, which is generated
# here and never leaves this machine. Everything is idempotent: a second run changes nothing.
#
# What the charm owns, and the only things it ever changes or removes:
#   - /etc/wireguard/<dev>.conf files that carry MARKER, their keys and .routes files (wg-<ep>, and
#     wr-<ep> while a key rotation runs a temporary device beside it: rotation.py);
#   - routes with protocol number VPNAAS_PROTO (iproute2 `proto`), never a connected, static or
#     operator route: a wanted route whose prefix already has a foreign route is refused;
#   - service addresses listed in OWNED_ADDRESSES, i.e. that this charm added itself;
#   - DATAPLANE_DIR (the userspace WireGuard programs it shipped, its wg-quick wrapper), the
#     <dev>.impl records and the wg-quick@<dev> drop-ins that start a device on a userspace program.

MARKER='# Managed by the VPNaaS charm; changes are overwritten on the next reconcile.'
VPNAAS_PROTO=148
ROUTES_HOOK=/etc/wireguard/vpnaas-routes.sh
SERVICE_HOOK=/etc/wireguard/vpnaas-service-addresses.sh
WANTED_ADDRESSES=/etc/wireguard/vpnaas-service-addresses
OWNED_ADDRESSES=/etc/wireguard/vpnaas-service-addresses.owned
SERVICE_DEVICE=vpnaas0
# The data plane (vpnaas/dataplane.py): the programs the charm installs, and per device the
# implementation it was brought up with (/etc/wireguard/<dev>.impl).
DATAPLANE_DIR=/usr/local/lib/vpnaas
DATAPLANE_WRAPPER=$DATAPLANE_DIR/wg-quick-userspace
DATAPLANE_DROPIN=vpnaas-dataplane.conf
declare -A USERSPACE=()    # implementation -> the program this step may start it with
declare -A DP_VERSION=()   # implementation -> its version (asked once per step)
TUNNELS_KERNEL=0           # 1: this VNF's kernel has the WireGuard module
WG_TIMEOUT=10              # s: a userspace daemon's UAPI socket that does not answer by then is wedged

# --------------------------------------------------------------------------- hooks run by wg-quick too
# These two functions are also installed as scripts (PreUp/PostUp of every managed device), so
# that a reboot brings back exactly what a reconcile applies, through the same guarded code.

# Addresses are compared as addresses, never as text: `ip` prints an IPv4-mapped IPv6 address as
# ::ffff:10.0.0.7 where Python before 3.13 writes ::ffff:a00:7, and a prefix that matched by text
# only would let the charm replace an operator's route. vpnaas_canon turns an address or prefix
# into one key (IPv4 dotted decimal, IPv6 all eight groups in four hex digits, always /len), and
# "" for anything else. Hand-written in POSIX awk because the VNF (Ubuntu's mawk included) has no
# address parser a shell hook can call; the tests hold it to Python's ipaddress.
# shellcheck disable=SC2089  # an awk program: its quotes are awk's
VPNAAS_CANON_AWK='
function vpnaas_hex(h,   i, v, c) {
  v = 0
  h = tolower(h)
  if (h == "" || length(h) > 4) return -1
  for (i = 1; i <= length(h); i++) {
    c = index("0123456789abcdef", substr(h, i, 1))
    if (c == 0) return -1
    v = v * 16 + c - 1
  }
  return v
}
function vpnaas_groups(text, out, n,   f, k, i, q, m) {
  if (text == "") return n
  m = split(text, f, ":")
  for (k = 1; k <= m; k++) {
    if (k == m && index(f[k], ".")) {
      if (split(f[k], q, ".") != 4) return -1
      for (i = 1; i <= 4; i++) if (q[i] !~ /^[0-9]+$/ || q[i] + 0 > 255) return -1
      out[++n] = (q[1] + 0) * 256 + q[2]
      out[++n] = (q[3] + 0) * 256 + q[4]
      continue
    }
    if ((i = vpnaas_hex(f[k])) < 0) return -1
    out[++n] = i
  }
  return n
}
function vpnaas_canon(p,   len, q, k, left, right, a, b, nl, nr, out, i, s) {
  len = ""
  if ((k = index(p, "/")) > 0) { len = substr(p, k + 1); p = substr(p, 1, k - 1) }
  if (len != "" && len !~ /^[0-9]+$/) return ""
  if (index(p, ":") == 0) {
    if (split(p, q, ".") != 4) return ""
    for (k = 1; k <= 4; k++) if (q[k] !~ /^[0-9]+$/ || q[k] + 0 > 255) return ""
    return (q[1] + 0) "." (q[2] + 0) "." (q[3] + 0) "." (q[4] + 0) "/" (len == "" ? 32 : len + 0)
  }
  if ((k = index(p, "::")) > 0) { left = substr(p, 1, k - 1); right = substr(p, k + 2) } else { left = p; right = "" }
  if (index(right, "::")) return ""
  nl = vpnaas_groups(left, a, 0)
  nr = vpnaas_groups(right, b, 0)
  if (nl < 0 || nr < 0 || (k == 0 && nl != 8) || (k > 0 && nl + nr > 7)) return ""
  for (i = 1; i <= nl; i++) out[i] = a[i]
  for (i = nl + 1; i <= 8 - nr; i++) out[i] = 0
  for (i = 1; i <= nr; i++) out[8 - nr + i] = b[i]
  s = sprintf("%04x", out[1])
  for (i = 2; i <= 8; i++) s = s ":" sprintf("%04x", out[i])
  return s "/" (len == "" ? 128 : len + 0)
}
'

vpnaas_canon_lines() {  # prefix [source] lines on stdin -> "key<TAB>prefix<TAB>source-key<TAB>source" lines
  awk "$VPNAAS_CANON_AWK"'
    NF >= 1 { k = vpnaas_canon($1); if (k == "") next
              s = ($2 == "" || $2 == "-") ? "-" : $2; sk = (s == "-") ? "-" : vpnaas_canon(s)
              if (sk == "") sk = "-"
              print k "\t" $1 "\t" sk "\t" s }'
}

vpnaas_route_table() {  # family: table main as "key<TAB>dst<TAB>src-key<TAB>line", dst as ip prints it
  # A VNF booted without IPv6 has no -6 table: nothing to list there.
  { ip "$1" route show table main 2>/dev/null || true; } | awk -v fam="$1" "$VPNAAS_CANON_AWK"'
    $1 == "nexthop" { next }   # the next hops of a multipath route: their route was the line before
    { f = 1
      if ($1 ~ /^(unicast|local|broadcast|multicast|throw|unreachable|prohibit|blackhole|nat|anycast)$/) f = 2
      d = $f
      if (d == "") next
      if (d == "default") d = (fam == "-4") ? "0.0.0.0/0" : "::/0"
      k = vpnaas_canon(d)
      if (k == "") next
      sk = "-"
      for (i = f + 1; i < NF; i++) if ($i == "src") { sk = vpnaas_canon($(i + 1)); if (sk == "") sk = "-" }
      print k "\t" d "\t" sk "\t" $0 }'
}

vpnaas_rp_loose() {  # dev: loose reverse-path filtering on one of the charm's devices
  # While a key rotation runs, a packet may arrive on this device while its source is routed into
  # the other device of the same endpoint (each direction moves on its own): strict reverse-path
  # filtering would drop it. WireGuard accepts a source only from the peer whose AllowedIPs hold
  # it, which is stricter; so loose mode (2: the kernel applies the larger of "all" and the
  # device's value, so this holds whatever the VNF's default).
  local rpf="/proc/sys/net/ipv4/conf/$1/rp_filter"
  if [ -w "$rpf" ] && [ "$(cat "$rpf")" != 2 ]; then echo 2 > "$rpf"; fi
}

vpnaas_routes() {  # dev: exactly the routes listed in /etc/wireguard/<dev>.routes point into dev
  # One listing of table main per family, not one query per prefix: a hub's device has two
  # routes per spoke, and this runs in every session that applies the device. A route already
  # there as wanted is left alone; only new or changed ones cost an `ip` call.
  local dev=$1 file="/etc/wireguard/$1.routes" key p s sk dst line fam msg f
  local -a src
  local -A foreign=() ours=() ours_dst=() ours_src=() wanted=() elsewhere=()
  [ -e "$file" ] || : > "$file"
  vpnaas_rp_loose "$dev"
  for fam in -4 -6; do
    while IFS=$'\t' read -r key dst sk line; do
      if [[ " $line " != *" proto $VPNAAS_PROTO "* ]]; then
        [ -n "${foreign[$key]:-}" ] || foreign[$key]=$line
      elif [[ " $line " == *" dev $dev "* ]]; then
        ours[$key]=$line
        ours_dst[$key]=$dst
        ours_src[$key]=$sk
      fi
    done < <(vpnaas_route_table "$fam")
  done
  # What another of the charm's devices is to hold: that device's run moves it there with `ip
  # route replace`; deleted here first, the prefix would be without a route meanwhile.
  for f in /etc/wireguard/*.routes; do
    if [ "$f" = "$file" ] || [ ! -e "$f" ]; then continue; fi
    while IFS=$'\t' read -r key _ _ _; do elsewhere[$key]=1; done < <(vpnaas_canon_lines < "$f")
  done
  while IFS=$'\t' read -r key p sk s; do
    wanted[$key]=1
    if [ -n "${foreign[$key]:-}" ]; then
      echo "REFUSED $dev $p a route this charm did not create is in the way: ${foreign[$key]}"
      continue
    fi
    if [ -n "${ours[$key]:-}" ] && [ "${ours_src[$key]}" = "$sk" ]; then
      continue
    fi
    src=()
    [ "$s" = - ] || src=(src "$s")
    case "$p" in *:*) fam=-6 ;; *) fam=-4 ;; esac
    if ! msg=$(ip "$fam" route replace "$p" dev "$dev" proto "$VPNAAS_PROTO" "${src[@]}" 2>&1); then
      echo "REFUSED $dev $p ip route: $msg"
    fi
  done < <(vpnaas_canon_lines < "$file")
  for key in "${!ours[@]}"; do
    case "$key" in 0.0.0.0/0|0000:0000:0000:0000:0000:0000:0000:0000/0) continue ;; esac
    if [ -n "${wanted[$key]:-}" ] || [ -n "${elsewhere[$key]:-}" ]; then continue; fi
    case "$key" in *:*) fam=-6 ;; *) fam=-4 ;; esac
    ip "$fam" route del "${ours_dst[$key]}" dev "$dev" proto "$VPNAAS_PROTO" 2>/dev/null || true
  done
}

vpnaas_service_addresses() {  # exactly the wanted service addresses that this charm added are up
  # A wanted line is "address [label]": a labelled IPv4 address (a reference point whose network
  # functions bind by interface name) goes up as <device>:<label>, lo:vpnaas-<label> on lo.
  local dev=lo label=() a key _sk _s owned
  local -A want=() own=() named=()
  [ -e "$WANTED_ADDRESSES" ] || : > "$WANTED_ADDRESSES"
  if ip link show dev "$SERVICE_DEVICE" >/dev/null 2>&1 || ip link add "$SERVICE_DEVICE" type dummy 2>/dev/null; then
    dev=$SERVICE_DEVICE
    ip link set dev "$dev" up
  fi
  if [ ! -e "$OWNED_ADDRESSES" ]; then
    # First run of this layout: adopt only what an earlier version of this charm put up.
    { ip -o addr show dev "$SERVICE_DEVICE" scope global 2>/dev/null || true
      ip -o -4 addr show dev lo label lo:vpnaas 2>/dev/null || true; } | awk '{print $4}' > "$OWNED_ADDRESSES"
    chmod 600 "$OWNED_ADDRESSES"   # whatever the step's umask (an OAI component's files set 022)
  fi
  while IFS=$'\t' read -r key a _sk _s; do want[$key]=$a; named[$key]=$_s; done < <(vpnaas_canon_lines < "$WANTED_ADDRESSES")
  while IFS=$'\t' read -r key a _sk _s; do own[$key]=$a; done < <(vpnaas_canon_lines < "$OWNED_ADDRESSES")
  for key in "${!want[@]}"; do
    a=${want[$key]}
    label=()
    case "$a" in
      *:*) ;;
      *) if [ "${named[$key]}" != - ]; then
           if [ "$dev" = lo ]; then label=(label "lo:vpnaas-${named[$key]}"); else label=(label "$dev:${named[$key]}"); fi
         elif [ "$dev" = lo ]; then label=(label lo:vpnaas); fi ;;
    esac
    if [ -n "$(ip -o addr show dev "$dev" to "$a" 2>/dev/null)" ]; then   # already up (ours or not)
      # ...then left alone, unless it is ours and lacks the label its reference point wants.
      if [ "${named[$key]}" = - ] || [ -z "${own[$key]:-}" ] \
         || [ -n "$(ip -o addr show dev "$dev" label "${label[1]}" to "$a" 2>/dev/null)" ]; then continue; fi
      ip addr del "$a" dev "$dev"
    fi
    ip addr add "$a" dev "$dev" "${label[@]}"
    own[$key]=$a
  done
  for key in "${!own[@]}"; do
    [ -z "${want[$key]:-}" ] || continue
    ip addr del "${own[$key]}" dev "$dev" 2>/dev/null || true
    unset "own[$key]"
  done
  # Written only when it changed, and compared before anything is written: a run that changes
  # nothing touches no file (and creates none beside it). This runs as a hook script too: no lib.sh.
  owned=$(for key in "${!own[@]}"; do printf '%s\n' "${own[$key]}"; done | sort)
  if [ "$owned" != "$(cat "$OWNED_ADDRESSES")" ]; then
    printf '%s' "${owned:+$owned$'\n'}" > "$OWNED_ADDRESSES.tmp"
    chmod 600 "$OWNED_ADDRESSES.tmp"
    mv -f "$OWNED_ADDRESSES.tmp" "$OWNED_ADDRESSES"
  fi
}

install_hook() {  # path function: a script that runs the function, written from this file's own code
  local script
  script=$(
    printf '#!/bin/bash\n%s\nset -e\n' "$MARKER"
    printf 'VPNAAS_PROTO=%s WANTED_ADDRESSES=%s OWNED_ADDRESSES=%s SERVICE_DEVICE=%s\n' \
      "$VPNAAS_PROTO" "$WANTED_ADDRESSES" "$OWNED_ADDRESSES" "$SERVICE_DEVICE"
    # shellcheck disable=SC2090  # printed as a declaration, quoted by bash itself
    declare -p VPNAAS_CANON_AWK
    declare -f vpnaas_canon_lines vpnaas_route_table vpnaas_rp_loose "$2"
    printf '%s "$@"\n' "$2"
  )
  write_if_changed "$1" 700 "$script"$'\n'
}

# --------------------------------------------------------------------------- the step's parts

tunnels_prepare() {  # [name sha256 always|nokernel]...: the shipped programs a device may need
  require_tools wg wg-quick ip base64 sha256sum
  if [ -d /run/systemd/system ]; then init=systemd; else init=none; fi
  out "INIT $init"
  ip link del vpnaas-probe 2>/dev/null || true   # left over if an earlier run was killed here
  # The routes the VNF refuses during this step ("dev prefix" lines), and the data plane of each
  # device ("dev implementation version"), for the metrics (metrics.sh).
  TUNNELS_REFUSED_LOG=$(mktemp)
  TUNNELS_DATAPLANE_LOG=$(mktemp)
  # shellcheck disable=SC2064  # the file names are fixed now
  trap "rm -f '$TUNNELS_REFUSED_LOG' '$TUNNELS_DATAPLANE_LOG'" EXIT
  if ip link add vpnaas-probe type wireguard 2>/dev/null; then
    ip link del vpnaas-probe
    TUNNELS_KERNEL=1
  fi
  # A wireguard-go the charm did not ship: the one named by WG_QUICK_USERSPACE_IMPLEMENTATION, else
  # the VNF's own on PATH (what releases before the shipped programs used).
  local ug=${WG_QUICK_USERSPACE_IMPLEMENTATION:-} name digest when path missing=0
  case "$(basename "${ug:-none}")" in wireguard-go*) ;; *) ug=$(command -v wireguard-go || true) ;; esac
  if [ -n "$ug" ] && [ -x "$ug" ]; then USERSPACE[wireguard-go]=$ug; fi
  # The shipped programs: used only when the installed copy is the charm's byte for byte. One
  # that is missing or differs is asked for (NEED) and nothing is applied: the charm sends it in
  # the same login and runs this step again.
  while [ $# -ge 3 ]; do
    name=$1 digest=$2 when=$3
    shift 3
    if [ "$when" = nokernel ] && [ "$TUNNELS_KERNEL" = 1 ]; then continue; fi
    path=$DATAPLANE_DIR/$name
    if [ -x "$path" ] && [ "$(sha256sum < "$path" | cut -d' ' -f1)" = "$digest" ]; then
      USERSPACE[$name]=$path
    else
      out "NEED $name"
      missing=1
    fi
  done
  if [ "$missing" = 1 ]; then
    out DONE
    exit 0
  fi
  if [ "$TUNNELS_KERNEL" = 1 ]; then
    out "IMPL kernel"
  elif [ -n "${USERSPACE[wireguard-go]:-}" ]; then
    TUNNELS_IMPL="userspace ${USERSPACE[wireguard-go]} $(dataplane_version wireguard-go)"
    out "IMPL $TUNNELS_IMPL"
  else
    out "IMPL none"
  fi
  install_hooks
}

dataplane_version() {  # implementation: its version ("unknown" when it does not say)
  local v=${DP_VERSION[$1]:-}
  if [ -z "$v" ]; then
    if [ "$1" = kernel ]; then
      v=$(cat /sys/module/wireguard/version 2>/dev/null || true)
    else
      v=$("${USERSPACE[$1]}" --version 2>/dev/null | head -n 1 | awk '{print $2}' || true)
    fi
    case "$v" in ''|*[!0-9A-Za-z._+-]*) v=unknown ;; esac
    DP_VERSION[$1]=$v
  fi
  printf '%s' "$v"
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

dataplane_current() {  # dev: the implementation the running device was brought up with ("" if none runs)
  local dev=$1 rec
  timeout "$WG_TIMEOUT" wg show "$dev" >/dev/null 2>&1 || return 0
  rec=$(cat "/etc/wireguard/$dev.impl" 2>/dev/null || true)
  if [ -n "$rec" ]; then printf '%s' "$rec"; return 0; fi
  # A device of a release before the choice: the kernel's, or wireguard-go (the only program then).
  if grep -qx DEVTYPE=wireguard "/sys/class/net/$dev/uevent" 2>/dev/null; then printf kernel; else printf wireguard-go; fi
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
  v=$(dataplane_version "$2")
  out "DATAPLANE $1 $2 $v"
  [ -z "${TUNNELS_DATAPLANE_LOG:-}" ] || printf '%s %s %s\n' "$1" "$2" "$v" >> "$TUNNELS_DATAPLANE_LOG"
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

install_hooks() {
  mkdir -p /etc/wireguard
  chmod 700 /etc/wireguard
  install_hook "$ROUTES_HOOK" vpnaas_routes
  install_hook "$SERVICE_HOOK" vpnaas_service_addresses
}

apply_routes() {  # dev: run the routes hook now and pass on what it refused
  local line _kind dev prefix _why
  "$ROUTES_HOOK" "$1" | while IFS= read -r line; do
    out "$line"
    read -r _kind dev prefix _why <<< "$line"
    [ -z "${TUNNELS_REFUSED_LOG:-}" ] || printf '%s %s\n' "$dev" "$prefix" >> "$TUNNELS_REFUSED_LOG"
  done
}

fact_lines() {  # name...: what the route policy must never route into a tunnel, as this VNF sees it
  local ifname fam cidr rest client name
  ip -o addr show | while read -r _ ifname fam cidr rest; do
    case "$ifname" in
      "$SERVICE_DEVICE") continue ;;
      wg-*|wr-*) grep -qxF "$MARKER" "/etc/wireguard/$ifname.conf" 2>/dev/null && continue ;;
    esac
    case "$rest" in *" lo:vpnaas"*) continue ;; esac
    echo "addr $cidr"
  done
  { ip -4 route show default 2>/dev/null || true; ip -6 route show default 2>/dev/null || true; } \
    | awk '{for (i = 1; i < NF; i++) if ($i == "via") print "gateway " $(i + 1)}'
  client=${VPNAAS_SSH_CONNECTION%% *}
  [ -z "$client" ] || echo "client $client"
  if [ -e /proc/net/if_inet6 ] && [ "$(cat /proc/sys/net/ipv6/conf/all/disable_ipv6 2>/dev/null || echo 1)" = 0 ]; then
    echo "ipv6 on"
  else
    echo "ipv6 off"
  fi
  # The peers' endpoint names as this VNF resolves them (what wg would send to): a peer's prefix
  # must not capture them either. "-" when a name does not resolve.
  for name in "$@"; do
    { timeout 10 getent ahosts "$name" 2>/dev/null || true; } | awk -v n="$name" '{print "resolve " n " " $1}' \
      | sort -u | grep . || echo "resolve $name -"
  done
}

facts_guard() {  # expected-digest name...: report the facts; apply nothing unless they are as expected
  # The charm planned with the facts whose digest it passes ("-": none yet). Facts that differ
  # (first contact, a VNF rebuilt at the same address, a new gateway or address, an endpoint
  # name that resolves elsewhere) end the step here, before anything is applied: the charm plans
  # again with what the VNF reports now and sends the step again in the same login.
  local expected=$1 lines digest
  shift
  lines=$(fact_lines "$@" | sort)
  digest=$(printf '%s\n' "$lines" | sha256sum | cut -d' ' -f1)
  printf '%s\n' "$lines" | while IFS= read -r line; do out "FACT $line"; done
  out "FACTS $digest"
  if [ "$expected" != "$digest" ]; then
    out "FACTS changed"
    out DONE
    exit 0
  fi
}

service_addresses() {  # address[=label]...: the wanted service addresses (PreUp of every device runs this too)
  local wanted
  wanted=$(printf '%s\n' "$@" | sed 's/=/ /' | grep . || true)
  write_if_changed "$WANTED_ADDRESSES" 600 "${wanted:+$wanted$'\n'}"
  "$SERVICE_HOOK"
}

iface_signature() {  # the [Interface] settings that wg syncconf cannot change
  grep -E '^(Address|MTU|Table|PreUp|PreDown|PostUp|PostDown) =' "$1" 2>/dev/null || true
}

device_down() {
  if [ "$init" = systemd ]; then systemctl disable --now "wg-quick@$1" >/dev/null 2>&1 || true; fi
  wg-quick down "$1" >/dev/null 2>&1 || true
  ip link del "$1" >/dev/null 2>&1 || true
}

device_up() {  # dev implementation program: (re)start the device on that implementation
  local -a quick=(wg-quick)
  if [ "$2" != kernel ]; then
    install_wrapper   # only where a device runs on a userspace program
    quick=("$DATAPLANE_WRAPPER" "$3")
  fi
  if [ "$init" = systemd ]; then
    dataplane_dropin "$@"
    systemctl enable "wg-quick@$1" >/dev/null 2>&1
    # Stopped with what it runs on now (its old drop-in may be gone), so that a device moving
    # between implementations never runs twice.
    systemctl stop "wg-quick@$1" >/dev/null 2>&1 || true
    wg-quick down "$1" >/dev/null 2>&1 || true
    ip link del "$1" >/dev/null 2>&1 || true
    systemctl restart "wg-quick@$1"
  else
    wg-quick down "$1" >/dev/null 2>&1 || true
    ip link del "$1" >/dev/null 2>&1 || true
    local msg
    if ! msg=$("${quick[@]}" up "$1" 2>&1); then fail "wg-quick up $1 failed: $(printf '%s' "$msg" | tail -n 1)"; fi
  fi
  write_if_changed "/etc/wireguard/$1.impl" 600 "$2"$'\n'
}

wg_canon_wanted() {  # a stripped wg configuration on stdin: the canonical lines device_unchanged compares
  # One line per fact, sorted by the caller: "key", "port", and per peer its preshared key,
  # keepalive, each allowed prefix, and its endpoint when that is an address literal (a name is
  # resolved by wg itself, and a peer without one is reached where it last sent from).
  awk -F' = ' '
    /^\[Interface\]/ { s = "i"; next }
    /^\[Peer\]/ { s = "p"; next }
    s == "i" && $1 == "PrivateKey" { print "key " $2 }
    s == "i" && $1 == "ListenPort" { print "port " $2 }
    s == "p" && $1 == "PublicKey" { p = $2; peers[p] = 1; psk[p] = "none"; ka[p] = "off" }
    s == "p" && $1 == "PresharedKey" { psk[p] = $2 }
    s == "p" && $1 == "PersistentKeepalive" { ka[p] = ($2 == 0 ? "off" : $2) }
    s == "p" && $1 == "Endpoint" && ($2 ~ /^[0-9.]+:[0-9]+$/ || $2 ~ /^\[[0-9a-fA-F:.]+\]:[0-9]+$/) { print "peer " p " endpoint " $2 }
    s == "p" && $1 == "AllowedIPs" { n = split($2, a, /, */); for (i = 1; i <= n; i++) if (a[i] != "") print "peer " p " allowed " a[i] }
    END { for (q in peers) { print "peer " q " psk " psk[q]; print "peer " q " keepalive " ka[q] } }'
}

wg_canon_running() {  # dev endpoint-peers: the device's running configuration as wg_canon_wanted's lines
  # Endpoints only of the peers named (those with a literal endpoint in the wanted configuration).
  timeout "$WG_TIMEOUT" wg show "$1" dump 2>/dev/null | awk -F'\t' -v keep="$2" '
    BEGIN { n = split(keep, k, " "); for (i = 1; i <= n; i++) K[k[i]] = 1 }
    NR == 1 { print "key " $1; print "port " $3; next }
    { print "peer " $1 " psk " ($2 == "(none)" ? "none" : $2); print "peer " $1 " keepalive " $8
      if ($1 in K) print "peer " $1 " endpoint " $3
      n = split($4, a, ","); for (i = 1; i <= n; i++) if (a[i] != "(none)") print "peer " $1 " allowed " a[i] }'
}

device_unchanged() {  # dev stripped-configuration: true when the running device already is that
  # `wg syncconf` replaces every peer's allowed IPs even when they are the same, and the
  # userspace implementations remove and insert them one call at a time: a packet to or from
  # that peer in between finds no peer and is dropped (measured: 8-11 packets of 44,000 at 1,000
  # per second over 1,500 syncconfs of an unchanged configuration, wireguard-go). A step that
  # reconciles one tunnel would so cost the VNF's other tunnels an occasional packet. The private
  # key never leaves this function's pipes.
  local wanted peers running
  wanted=$(printf '%s\n' "$2" | wg_canon_wanted | LC_ALL=C sort) || return 1
  peers=$(printf '%s\n' "$wanted" | awk '$3 == "endpoint" { printf "%s ", $2 }')
  running=$(wg_canon_running "$1" "$peers" | LC_ALL=C sort) || return 1
  [ -n "$running" ] && [ "$wanted" = "$running" ]
}

wg_named_endpoints() {  # a wg configuration on stdin: "peer <key> name <host:port>" per endpoint that is a name
  awk -F' = ' '
    /^\[/ { s = ($0 ~ /^\[Peer\]/) ? "p" : "i"; next }
    s == "p" && $1 == "PublicKey" { p = $2 }
    s == "p" && $1 == "Endpoint" && !($2 ~ /^[0-9.]+:[0-9]+$/ || $2 ~ /^\[[0-9a-fA-F:.]+\]:[0-9]+$/) { print "peer " p " name " $2 }'
}

wg_peer_changes() {  # wanted running names old-names: what makes the running device the wanted one
  # The first two are wg_canon_wanted's and wg_canon_running's sorted lines, the others
  # wg_named_endpoints' of the wanted and of the previous configuration (a name is compared with
  # the name it had: the running device shows only what it resolved to). One line per change,
  # in this order: "key", "port <n>", "set <peer> <endpoint> <keepalive> <allowed,...> <psk>" for
  # each peer to add or change ("-": leave that setting as it runs), "remove <peer>" for each
  # peer that is not wanted, "resync" for what only a whole sync can set (a preshared key).
  { printf '%s\n' "$1" | sed 's/^/W /'; printf '%s\n' "$2" | sed 's/^/R /'
    printf '%s\n' "$3" | sed 's/^/N /'; printf '%s\n' "$4" | sed 's/^/O /'; } | awk '
    { side = $1 }
    side == "N" && $2 == "peer" { name[$3] = $5; next }
    side == "O" && $2 == "peer" { old[$3] = $5; next }
    $2 == "key" { key[side] = $3; next }
    $2 == "port" { port[side] = $3; next }
    $2 == "peer" {
      k = $3
      if (!((side, k) in has)) { has[side, k] = 1; if (side == "W") order[++n] = k; else rorder[++m] = k }
      if ($4 == "allowed") al[side, k] = al[side, k] "," $5
      else val[side, k, $4] = $5
    }
    END {
      if (key["W"] != key["R"]) print "key"
      if (port["W"] != port["R"]) print "port " port["W"]
      for (i = 1; i <= n; i++) {
        k = order[i]; new = !(("R", k) in has); e = "-"; ka = "-"; a = "-"; p = "-"
        if (("W", k, "endpoint") in val) { if (new || val["W", k, "endpoint"] != val["R", k, "endpoint"]) e = val["W", k, "endpoint"] }
        else if (k in name) { if (new || name[k] != old[k]) e = name[k] }
        if (new || val["W", k, "keepalive"] != val["R", k, "keepalive"]) ka = val["W", k, "keepalive"]
        if (new || al["W", k] != al["R", k]) a = (al["W", k] == "") ? "(none)" : substr(al["W", k], 2)
        if (val["W", k, "psk"] != (new ? "none" : val["R", k, "psk"])) p = val["W", k, "psk"]
        if (p != "-" && p != "none") { print "resync"; continue }
        if (new || e != "-" || ka != "-" || a != "-" || p != "-") print "set " k " " e " " ka " " a " " p
      }
      for (i = 1; i <= m; i++) if (!(("W", rorder[i]) in has)) print "remove " rorder[i]
    }'
}

device_sync() {  # dev stripped-configuration previous-names: the running device made that configuration, peer by peer
  # Instead of `wg syncconf`, which replaces every peer's allowed IPs: the userspace
  # implementations remove and insert them one call at a time, so a packet to or from any peer in
  # between finds no peer and is lost (device_unchanged), on every spoke of a hub whenever one
  # spoke joins. Here only the peers that differ from the configuration are set (added or
  # changed: their endpoint, keepalive or allowed IPs, each only when it differs) and the peers
  # that are not in it removed, in one `wg set`; the others are not touched. Then the device is
  # compared whole once more, and synced whole only if it still differs. Sets SYNC_HOW:
  # "unchanged", "set <n>" (the changes: key, port, each peer set or removed) or "syncconf". Not for boringtun, whose
  # UAPI a partial update wedges (ensure_device gives it `wg setconf` instead).
  local dev=$1 wanted peers running changes kind peer ep ka allowed psk n=0 whole=0
  local -a args=() removals=()
  wanted=$(printf '%s\n' "$2" | wg_canon_wanted | LC_ALL=C sort) || return 1
  peers=$(printf '%s\n' "$wanted" | awk '$3 == "endpoint" { printf "%s ", $2 }')
  running=$(wg_canon_running "$dev" "$peers" | LC_ALL=C sort) || return 1
  changes=$(wg_peer_changes "$wanted" "$running" "$(printf '%s\n' "$2" | wg_named_endpoints)" "$3")
  if [ -n "$running" ] && [ -z "$changes" ]; then
    SYNC_HOW=unchanged
    return 0
  fi
  while read -r kind peer ep ka allowed psk; do
    case "$kind" in
      key) args+=(private-key "/etc/wireguard/$dev.key"); n=$((n + 1)) ;;
      port) args+=(listen-port "$peer"); n=$((n + 1)) ;;
      remove) removals+=(peer "$peer" remove); n=$((n + 1)) ;;
      set)
        args+=(peer "$peer")
        [ "$ep" = - ] || args+=(endpoint "$ep")
        [ "$ka" = - ] || args+=(persistent-keepalive "$ka")
        [ "$psk" = - ] || args+=(preshared-key /dev/null)
        if [ "$allowed" = "(none)" ]; then args+=(allowed-ips ""); elif [ "$allowed" != - ]; then args+=(allowed-ips "$allowed"); fi
        n=$((n + 1)) ;;
      *) whole=1 ;;
    esac
  done <<< "$changes"
  if [ "$whole" = 0 ] && [ -n "$running" ]; then
    timeout "$WG_TIMEOUT" wg set "$dev" "${args[@]}" "${removals[@]}"
    if device_unchanged "$dev" "$2"; then
      SYNC_HOW="set $n"
      return 0
    fi
  fi
  wg syncconf "$dev" <(printf '%s\n' "$2")
  SYNC_HOW=syncconf
}

drain_device() {  # dev: wait (at most 1 s) until dev has sent what was routed into it
  # A key rotation moves a direction's routes off a device and, in the same step, changes that
  # device's key (phase 3) or deletes it (phase 5). A packet routed into the device just before
  # the move may still be inside the WireGuard implementation (read from its TUN, not yet
  # encrypted and sent): a new key expires the session it would have used, a deleted device drops
  # it. So wait until the device's transmitted bytes stop growing for one poll interval. A packet
  # waiting for a handshake is never sent by this device anyway: the wait is bounded.
  local before after _
  before=$(timeout "$WG_TIMEOUT" wg show "$1" transfer 2>/dev/null | awk '{s += $3} END {print s + 0}') || return 0
  for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
    sleep 0.05
    after=$(timeout "$WG_TIMEOUT" wg show "$1" transfer 2>/dev/null | awk '{s += $3} END {print s + 0}') || return 0
    [ "$after" != "$before" ] || return 0
    before=$after
  done
}

stage_routes() {  # dev data-name ...: every planned device's route list, before any device is applied
  # So a prefix that moves between two of the charm's devices (a key rotation) is moved by the
  # device that gains it (`ip route replace`), whichever runs first: the other keeps it meanwhile.
  local f dev
  local -A planned=()
  while [ $# -ge 2 ]; do
    planned[$1]=1
    write_file "/etc/wireguard/$1.routes" 600 "$(data_item "$2_ROUTES")"
    # Before any route moves: the device that loses a route may still receive from it.
    vpnaas_rp_loose "$1"
    shift 2
  done
  # A device that is going away holds nothing any more: it protects no route of another.
  for f in /etc/wireguard/wg-*.routes /etc/wireguard/wr-*.routes; do
    [ -s "$f" ] || continue
    dev=$(basename "$f" .routes)
    [ -n "${planned[$dev]:-}" ] || : > "$f"
  done
}

device_key() {  # dev mode(keep|fresh|copy) source-dev: the device's private key file as the mode says; its public key in PUB
  local key="/etc/wireguard/$1.key" from want
  if [ "$2" = copy ]; then
    # A key rotation: a temporary device takes its main device's key, or a main device the new
    # key of its temporary one. Copied only when it differs (a repeated step changes nothing),
    # and never from a key file that wg refuses.
    from="/etc/wireguard/$3.key"
    if want=$(wg pubkey < "$from" 2>/dev/null) && [ "$want" != "$(wg pubkey < "$key" 2>/dev/null || true)" ]; then
      KEY_COPIED=1
      (umask 077 && cp "$from" "$key.vpnaas-tmp")
      chmod 600 "$key.vpnaas-tmp"
      mv -f "$key.vpnaas-tmp" "$key"
    fi
  fi
  # A missing, empty or corrupt key (wg pubkey refuses it) is replaced by a new one. Made 0600
  # whatever the step's umask (an OAI component's files set 022 for the step).
  if [ "$2" = fresh ] || ! PUB=$(wg pubkey < "$key" 2>/dev/null); then
    (umask 077 && wg genkey > "$key.vpnaas-tmp")
    mv -f "$key.vpnaas-tmp" "$key"
    PUB=$(wg pubkey < "$key")
  elif [ "$(stat -c %a "$key")" != 600 ]; then
    chmod 600 "$key"   # made by a release that left it to the umask
  fi
}

ensure_device() {  # dev key-mode key-source restart(0|1) data-name implementation: <name>_BODY (base64) in the data section
  local dev=$1 restart=$4 body
  local key="/etc/wireguard/$dev.key" conf="/etc/wireguard/$dev.conf" priv stripped wanted names
  dataplane_resolve "${6:-auto}"
  body=$(data_item "$5_BODY")
  KEY_COPIED=0
  device_key "$dev" "$2" "$3"
  out "PUBKEY $dev $PUB"
  priv=$(cat "$key")
  # The configuration as it must be, compared with the file before anything is written (the key
  # stays in this shell's memory: no copy of it lands anywhere but the file itself).
  wanted=$(printf '[Interface]\nPrivateKey = %s\n' "$priv" && printf '%s' "$body" | base64 -d && printf x)
  wanted=${wanted%x}
  # A device runs on one implementation for its whole life: another choice re-creates it (a short
  # break on this device only); the same choice never does.
  # A userspace daemon that no longer answers (WG_TIMEOUT) counts as gone: it is started again.
  if [ "$restart" = 0 ] && timeout "$WG_TIMEOUT" wg show "$dev" >/dev/null 2>&1 \
     && [ "$(iface_signature "$conf")" = "$(iface_signature <(printf '%s' "$wanted"))" ] \
     && [ "$(dataplane_current "$dev")" = "$DP_IMPL" ]; then
    local how=syncconf
    if [ "$DP_IMPL" = boringtun ]; then
      # boringtun 0.7.1 answers the partial updates of `wg syncconf` and `wg set` with EPROTO and
      # then never answers its UAPI socket again; a whole `wg setconf` it takes. So a changed
      # configuration is set whole, and an unchanged one not at all: setconf replaces the peers,
      # whose sessions then start over with a new handshake (docs/bench.md).
      how=unchanged
      cmp -s "$conf" <(printf '%s' "$wanted") || how=setconf
    fi
    names=$(wg_named_endpoints < "$conf" 2>/dev/null || true)   # what the running peers' names were
    write_if_changed "$conf" 600 "$wanted"
    write_if_changed "/etc/wireguard/$dev.impl" 600 "$DP_IMPL"$'\n'
    # The routes this device lost in this step (stage_routes, the temporary device applied first)
    # carry nothing new into it; what they already carried leaves before the new key expires its session.
    if [ "$KEY_COPIED" = 1 ]; then drain_device "$dev"; fi
    # strip first: a failure inside <(...) would go unnoticed and nothing would be applied
    stripped=$(wg-quick strip "$dev")
    if [ "$how" = syncconf ]; then
      device_sync "$dev" "$stripped" "$names"
      how=$SYNC_HOW
    elif [ "$how" = setconf ]; then
      wg setconf "$dev" <(printf '%s\n' "$stripped")
    fi
    apply_routes "$dev"
    dataplane_report "$dev" "$DP_IMPL"
    out "APPLIED $dev $how"
  else
    write_if_changed "$conf" 600 "$wanted"
    device_up "$dev" "$DP_IMPL" "$DP_PROGRAM"
    # PostUp already ran the hook; once more to report what it refused.
    apply_routes "$dev"
    dataplane_report "$dev" "$DP_IMPL"
    out "APPLIED $dev up"
  fi
}

apply_device() {  # as ensure_device; a failing device never stops the others or the report
  isolated "$1" ensure_device "$@"
}

remove_stale_devices() {  # wanted devices as arguments; only files carrying our marker are touched
  local f dev w keep
  for f in /etc/wireguard/wg-*.conf /etc/wireguard/wr-*.conf; do
    [ -e "$f" ] || continue
    grep -qxF "$MARKER" "$f" || continue
    dev=$(basename "$f" .conf)
    keep=0
    for w in "$@"; do [ "$w" = "$dev" ] && keep=1; done
    [ "$keep" = 1 ] && continue
    # A temporary device whose routes just went back to its main device may still hold packets.
    case "$dev" in wr-*) drain_device "$dev" ;; esac
    device_down "$dev"
    dataplane_forget "$dev"
    rm -f "$f" "/etc/wireguard/$dev.key" "/etc/wireguard/$dev.routes"
    out "REMOVED $dev"
  done
}

has_handshake() {  # every peer of every named device has completed a handshake
  local dev
  for dev in "$@"; do
    wg show "$dev" latest-handshakes >/dev/null 2>&1 || return 1
    [ -n "$(wg show "$dev" peers)" ] || return 1
    wg show "$dev" latest-handshakes | awk '$2 == 0 {bad=1} END {exit bad}' || return 1
  done
}

report() {  # devices...: host, time and every peer of every device (never the private key)
  out "HOST $(hostname)"
  out "NOW $(date +%s)"
  local dev line
  for dev in "$@"; do
    if timeout "$WG_TIMEOUT" wg show "$dev" >/dev/null 2>&1; then out "UP $dev"; else out "DOWN $dev"; continue; fi
    # Peer lines only: the first line of the dump holds the private key.
    wg show "$dev" dump | tail -n +2 | while IFS= read -r line; do out "PEER $dev $line"; done
  done
}

teardown() {  # the charm is being removed: everything it put on the VNF for its tunnels goes, nothing else
  local a
  if [ -d /run/systemd/system ]; then init=systemd; else init=none; fi
  remove_stale_devices ""   # no device is wanted any more
  if [ -x "$SERVICE_HOOK" ]; then
    : > "$WANTED_ADDRESSES"
    "$SERVICE_HOOK"
  fi
  # The service device is the charm's own; it goes once no address is left on it (an address
  # the charm did not add keeps it, and the operator's address with it).
  if ip link show dev "$SERVICE_DEVICE" >/dev/null 2>&1; then
    a=$(ip -o addr show dev "$SERVICE_DEVICE" 2>/dev/null || true)
    if [ -z "$a" ]; then ip link del "$SERVICE_DEVICE"; else out "NOTE $SERVICE_DEVICE kept: it holds addresses the charm did not add"; fi
  fi
  rm -f "$ROUTES_HOOK" "$SERVICE_HOOK" "$WANTED_ADDRESSES" "$OWNED_ADDRESSES"
  # The shipped programs and the wrapper: every device that ran on them is down now. Named one by
  # one: nothing else in the directory is the charm's to remove (and it may be a mount point).
  rm -f "$DATAPLANE_DIR/wireguard-go" "$DATAPLANE_DIR/boringtun" "$DATAPLANE_WRAPPER"
  rmdir "$DATAPLANE_DIR" 2>/dev/null || true
  metrics_remove
  out "TORNDOWN"
}
