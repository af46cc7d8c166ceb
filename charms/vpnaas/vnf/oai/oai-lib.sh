# shellcheck shell=bash
# Functions of the OAI steps (install, configure, the start gate), after lib.sh.
#
# Every value arrives as an argument of a call the charm wrote (vnfscript.Step.call) or, for the
# HSS keys, through lib.sh's data section (`secret NAME`); nothing here is generated. Report lines:
# PROGRESS <n>/<m> <text>, NOTE <text>, RESULT <key> <value>, COMPONENT <key> <value>, ERROR <text>.
# The directories can be moved with OAI_* variables (the tests run these functions in a temporary
# root).

umask 022
export DEBIAN_FRONTEND=noninteractive
OAI_STATE=${OAI_STATE_DIR:-/var/lib/vpnaas/oai}
OAI_LOGS=${OAI_LOG_DIR:-/var/log/vpnaas}
OAI_SBIN=${OAI_SBIN:-/usr/local/sbin}
OAI_PREFIX=${OAI_PREFIX:-/usr/local/etc/oai}
OAI_CLOUD_INIT_MARKER=${OAI_CLOUD_INIT_MARKER:-/var/lib/vpnaas/cloud-init-done}
OAI_DPKG_LOCK_TIMEOUT=600
OAI_FETCH_TIMEOUT=1800
OAI_CHANGED=''

progress() { out "PROGRESS $*"; }

oai_dirs() {
  mkdir -p "$OAI_STATE" "$OAI_LOGS"
  chmod 700 "$OAI_STATE"
}

wait_cloud_init() {  # limit: cloud-init must have finished (it installs packages and holds dpkg)
  local limit=$1 rc=0
  if command -v cloud-init >/dev/null 2>&1; then
    timeout "$limit" cloud-init status --wait >/dev/null 2>&1 || rc=$?
    [ "$rc" != 124 ] || fail "cloud-init still running after ${limit}s (see /var/log/cloud-init-output.log)"
    [ "$rc" = 0 ] || out "NOTE cloud-init finished with status $rc; checking the prerequisites here"
  else
    out "NOTE no cloud-init on this machine"
  fi
  [ -e "$OAI_CLOUD_INIT_MARKER" ] \
    || out "NOTE readiness marker $OAI_CLOUD_INIT_MARKER missing; installing what is missing here"
}

dpkg_locked() {
  command -v fuser >/dev/null 2>&1 || return 1
  fuser /var/lib/dpkg/lock-frontend /var/lib/dpkg/lock /var/lib/apt/lists/lock >/dev/null 2>&1
}

wait_dpkg_lock() {  # limit: bounded wait on the real condition (apt < 1.9 ignores DPkg::Lock::Timeout)
  local limit=$1 start=$SECONDS
  while dpkg_locked; do
    [ $((SECONDS - start)) -lt "$limit" ] \
      || fail "the dpkg lock is still held after ${limit}s (unattended-upgrades?)"
    sleep 3
  done
}

apt_get() {
  wait_dpkg_lock "$OAI_DPKG_LOCK_TIMEOUT"
  apt-get -q -y -o DPkg::Lock::Timeout="$OAI_DPKG_LOCK_TIMEOUT" "$@"
}

ensure_packages() {  # package...: installs the missing ones
  local p missing=()
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  [ "${#missing[@]}" -gt 0 ] || return 0
  out "NOTE installing ${missing[*]}"
  apt_get update >/dev/null || fail "apt-get update failed"
  apt_get install --no-install-recommends "${missing[@]}" >/dev/null || fail "apt-get install ${missing[*]} failed"
}

fetch_source() {  # dir repo ref pin-list: the exact ref, shallow; a changed commit cleans the tree. Sets OAI_COMMIT.
  local dir=$1 repo=$2 ref=$3 pins=$4 before=""
  mkdir -p "$(dirname "$dir")"
  if [ -d "$dir/.git" ]; then
    before=$(git -C "$dir" rev-parse -q --verify 'HEAD^{commit}' 2>/dev/null || true)
  else
    rm -rf "$dir"
    git init -q "$dir"
  fi
  git -C "$dir" remote remove origin >/dev/null 2>&1 || true
  git -C "$dir" remote add origin "$repo"
  timeout "$OAI_FETCH_TIMEOUT" git -C "$dir" fetch -q --depth 1 --force origin "$ref" \
    || fail "cannot fetch $ref from $repo (network? ref exists?)"
  # An annotated tag's FETCH_HEAD is the tag object: the marker must name the commit.
  OAI_COMMIT=$(git -C "$dir" rev-parse 'FETCH_HEAD^{commit}')
  if [ "$before" != "$OAI_COMMIT" ]; then
    git -C "$dir" checkout -q --force --detach "$OAI_COMMIT"
    git -C "$dir" clean -q -ffdx
  fi
  pin_submodules "$dir" "$pins"
}

pin_submodules() {  # dir pin-list: every submodule at the commit the ref records, then the charm's pins
  local dir=$1 pins=$2
  [ -f "$dir/.gitmodules" ] || return 0
  if [ "${OAI_SUBMODULES:-yes}" = no ]; then   # set by the component's oai_prepare_<c> (install.sh)
    out "NOTE submodules not fetched: the component builds none of them"
    return 0
  fi
  git -C "$dir" submodule -q sync --recursive
  timeout "$OAI_FETCH_TIMEOUT" git -C "$dir" submodule -q update --init --recursive --force \
    || fail "cannot fetch the submodules of $dir at the commits the ref records"
  (cd "$dir" && bash "$OAI_STATE/oai-pin-submodules" "$pins") >> "$OAI_LOGS/oai-submodules.log" 2>&1 \
    || fail "cannot pin the submodules of $dir: $(tail -n 1 "$OAI_LOGS/oai-submodules.log")"
  rewrite_submodule_pulls "$dir" "$pins"
}

# OAI's build helpers pull after checking out the submodule commits the ref records: the HSS's runs
# `git submodule foreach git pull origin master`, the MME's `git pull origin master` in freeDiameter.
# That builds whatever the branch tips are today, and fails outright where the branch is gone
# (c-ares has only `main` now). Each pull becomes a call of oai-pin-submodules (pin-submodules.sh),
# which checks out the commits the charm pins: those OAI's own build of the ref got from the pull at
# the ref's date (docs/oai.md lists them and why).
OAI_PULL_PATTERN='(git submodule foreach (--recursive )?)?git pull( -q)? origin [A-Za-z0-9._/-]+'

rewrite_submodule_pulls() {  # dir pin-list: rewrites the pulls in the checkout's build helpers
  local dir=$1 repl f
  local -a files=()
  repl="bash '$OAI_STATE/oai-pin-submodules' '$2'"
  repl=$(printf '%s' "$repl" | sed 's/[\\&#]/\\&/g')
  mapfile -t files < <(grep -rlE "$OAI_PULL_PATTERN" "$dir/build/tools" "$dir/scripts" 2>/dev/null || true)
  for f in ${files[@]+"${files[@]}"}; do
    sed -i -E "s#$OAI_PULL_PATTERN#$repl#g" "$f"
    out "NOTE submodule pull replaced by the charm's pinned commits in ${f#"$dir"/}"
  done
}

run_logged() {  # log label command...: output to the log, a clear message on failure
  local log=$1 label=$2
  shift 2
  out "NOTE $label: $*" >> "$log"
  if ! "$@" >> "$log" 2>&1; then
    fail "$label failed; last lines: $(tail -n 5 "$log" | tr '\n' ' ' | cut -c1-400) (full log $log)"
  fi
}

install_helper() {  # name base64: a shipped helper program (render.py, provision.py) into the state dir
  oai_dirs
  write_file "$OAI_STATE/$1" 700 "$2"   # lib.sh: rewritten only when it changed
}

render_files() {  # spec-base64 [NAME=value...]: renders files; appends what changed to OAI_CHANGED
  local spec=$1 report rc=0
  shift
  report=$(printf '%s' "$spec" | base64 -d | python3 "$OAI_STATE/render.py" "$@") || rc=$?
  if [ "$rc" != 0 ]; then
    printf '%s\n' "$report" | grep -m 1 '^ERROR ' || out "ERROR rendering the configuration failed"
    exit 3
  fi
  OAI_CHANGED="$OAI_CHANGED$(printf '%s\n' "$report" | sed -n 's/^CHANGED //p' | tr '\n' ' ')"
}

has_addr() {  # ip: configured on some interface of this VNF
  # grep reads everything (no -q): an early exit would fail the pipeline (SIGPIPE) under pipefail.
  ip -o -4 addr show | awk '{split($4, a, "/"); print a[1]}' | grep -xF "$1" >/dev/null
}

files_digest() {  # file...: one checksum over those that exist; none (an unmatched glob) is a value too
  local f
  for f in "$@"; do
    if [ -f "$f" ]; then cat "$f"; fi
  done | md5sum
}

require_addr() {  # ip what
  has_addr "$1" || fail "$2 $1 is not configured on any interface of this VNF (the tunnel reconcile" \
    "puts service addresses on the dummy device; check the unit status and the *-service-addresses options)"
}

put_file() {  # path mode base64: written whole and atomically, only when it changed (status 1: it had not)
  # Compared before anything is written (lib.sh write_file): an unchanged file, and its folder,
  # are not touched at all.
  mkdir -p "$(dirname "$1")"
  write_file "$1" "$2" "$3"
  [ "$WRITTEN" = 1 ] || return 1
  OAI_CHANGED="$OAI_CHANGED$1 "
}

# --------------------------------------------------------------------------- the service
oai_mode() {
  if [ -n "${OAI_INIT:-}" ]; then echo "$OAI_INIT"
  elif [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then echo systemd
  else echo direct; fi
}

oai_pidfile() { echo "${OAI_RUN_DIR:-/run}/$1.pid"; }

oai_is_running() {  # service binary
  local pid
  if [ "$(oai_mode)" = systemd ]; then
    systemctl is-active --quiet "$1"
    return
  fi
  [ -s "$(oai_pidfile "$1")" ] || return 1
  pid=$(cat "$(oai_pidfile "$1")")
  kill -0 "$pid" 2>/dev/null || return 1
  tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -qE "$1|$(basename "$2")"
}

oai_stop() {  # service binary: bounded wait for the process to go
  local pid
  if [ "$(oai_mode)" = systemd ]; then
    systemctl disable --now "$1" >/dev/null 2>&1 || true
    return 0
  fi
  if ! oai_is_running "$1" "$2"; then
    rm -f "$(oai_pidfile "$1")"
    return 0
  fi
  pid=$(cat "$(oai_pidfile "$1")")
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
  if kill -0 "$pid" 2>/dev/null; then
    kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$(oai_pidfile "$1")"
}

oai_start() {  # service component run log
  if [ "$(oai_mode)" = systemd ]; then
    systemctl reset-failed "$1" >/dev/null 2>&1 || true
    systemctl enable "$1" >/dev/null 2>&1 || return 1
    systemctl start --no-block "$1" || return 1
  else
    # No init system: what the unit does (prestart, then the program), in its own session with a
    # pid file (not restarted at boot).
    # shellcheck disable=SC2016  # expanded by the inner bash
    setsid bash -c 'echo $$ > "$1"; "$2" prestart "$3" || exit 1; exec "$4"' _ "$(oai_pidfile "$1")" \
      "$OAI_SBIN/oai-service" "$2" "$3" >> "$4" 2>&1 < /dev/null &
  fi
}
