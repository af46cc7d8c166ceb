# shellcheck shell=bash
# The tunnel step's part (sourced by tunnels.sh, after lib.sh and devices.sh): the pq-psk daemon
# (a post-quantum preshared key per tunnel, docs/security.md): one file per device in
# PQ_PSK_DIR, written from the charm's data section plus the device's public key (made here),
# and one daemon per VNF (systemd when the VNF has it, else a background process with a pid
# file, found by its lock when that file is lost, started again by the next step when it died). Idempotent: an unchanged file is not
# written, a running daemon of the same program is not restarted (it reloads changed files by
# itself); with pq-psk wanted on no device, the part touches nothing (no folder made, nothing
# written). What it owns: PQ_PSK_DIR's files carrying MARKER (and their temporary copies a killed
# step left), the folder once empty, the unit, the pid files, the log, the state, the program.
#
# Where things live: the daemon's configuration (the charm's, changed only when a peer or an
# option changes) in /etc/wireguard beside the devices' configurations; its state (epochs and
# counters, rewritten at every renewal, i.e. every 2 minutes by default) in /run: runtime state,
# worth nothing after a reboot, because the PSKs it describes lived only in the devices' memory and
# are gone with them (the first exchange after the reboot agrees a new one; a rebooted peer's old
# PSK is given up by the other end after RejectAfterTime: docs/security.md).

PQ_PSK_DIR=/etc/wireguard/pq-psk
PQ_PSK_STATE=/run/wireguard/vpnaas-pq-psk   # beside the UAPI sockets: private to the VNF even in the testbed
PQ_PSK_SERVICE=vpnaas-pq-psk
PQ_PSK_UNIT=/etc/systemd/system/vpnaas-pq-psk.service
PQ_PSK_PIDFILE=/run/wireguard/vpnaas-pq-psk.pid
PQ_PSK_LOG=/run/wireguard/vpnaas-pq-psk.log

pq_psk_ours() {  # pid: true when pid runs our daemon (its command line, read with builtins only)
  local -a args=()
  mapfile -d '' -n 4 -t args 2>/dev/null < "/proc/$1/cmdline" || return 1
  local IFS=' '
  [[ " ${args[*]} " == *" $DATAPLANE_DIR/pq-psk run "* ]]
}

pq_psk_locked() {  # true when a daemon holds its state's lock (the daemon takes an exclusive flock
  # on it for as long as it runs, and a second one exits at its start: pqpsk/main.go)
  [ -e "$PQ_PSK_STATE/lock" ] && ! flock -n "$PQ_PSK_STATE/lock" true 2>/dev/null
}

pq_psk_pid() {  # the pid of our running daemon without systemd, else nothing
  # By its pid file, which the daemon's own process writes before it becomes the daemon; else,
  # when that file was lost while a daemon runs (it holds the lock), by the lock: the process of
  # our program that has the lock file open (-ef: the same file, not only the same path), whose
  # pid is then recorded again. Never a second daemon beside a running one.
  local pid d fd
  pid=
  if [ -f "$PQ_PSK_PIDFILE" ]; then read -r pid < "$PQ_PSK_PIDFILE" || true; fi
  case "$pid" in ''|*[!0-9]*) pid= ;; esac
  if [ -n "$pid" ] && pq_psk_ours "$pid"; then printf '%s' "$pid"; return 0; fi
  pq_psk_locked || return 0
  for d in /proc/[0-9]*; do
    pid=${d#/proc/}
    pq_psk_ours "$pid" || continue
    for fd in "$d"/fd/*; do
      if [ "$fd" -ef "$PQ_PSK_STATE/lock" ]; then
        printf '%s\n' "$pid" > "$PQ_PSK_PIDFILE.vpnaas-tmp" && mv -f "$PQ_PSK_PIDFILE.vpnaas-tmp" "$PQ_PSK_PIDFILE"
        printf '%s' "$pid"
        return 0
      fi
    done
  done
}

pq_psk_stop() {
  local pid
  if [ -e "$PQ_PSK_UNIT" ]; then
    systemctl disable --now "$PQ_PSK_SERVICE" >/dev/null 2>&1 || true
    rm -f "$PQ_PSK_UNIT"
    systemctl daemon-reload >/dev/null 2>&1 || true
  fi
  # Each daemon found (by its pid file, else by its lock), until none is left.
  for _ in 1 2 3; do
    pid=$(pq_psk_pid)
    [ -n "$pid" ] || break
    kill "$pid" 2>/dev/null || true
    # Until it is gone, 10 s at most (it saves its state first): a daemon still holding its lock
    # would make the next start fail ("another daemon holds"); 2 s was short on a loaded machine.
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    rm -f "$PQ_PSK_PIDFILE"
  done
  rm -f "$PQ_PSK_PIDFILE" "$PQ_PSK_PIDFILE.vpnaas-tmp" "$PQ_PSK_PIDFILE.ready"
}

pq_psk_forget() {  # pq-psk wanted nowhere: the daemon stopped, its state, log and pid files gone
  # (a restart for a new program keeps the state: its epochs stay monotonic, its counters go on).
  # The state describes PSKs no daemon keeps any more: a stale PQPEER line would say otherwise.
  pq_psk_stop
  if [ -e "$PQ_PSK_PIDFILE.sha256" ] || [ -e "$PQ_PSK_STATE" ] || [ -e "$PQ_PSK_LOG" ]; then
    rm -rf "$PQ_PSK_PIDFILE.sha256" "$PQ_PSK_STATE" "$PQ_PSK_LOG"
  fi
}

pq_psk_files() {  # dev data...: write each device's file, remove ours of devices not listed; "1" when any is left
  # Runs twice in every tunnel step (remote.py), on the critical path of every session: a file
  # that is already as wanted costs no program run (read and compared with builtins; the modes of
  # the folder and of every file asked once, by one stat).
  local dev data body pub f m want current keep=" " any=0
  local -A mode=()
  while IFS=' ' read -r m f; do mode[$f]=$m; done < <(stat -c '%a %n' -- "$PQ_PSK_DIR" "$PQ_PSK_DIR"/*.conf 2>/dev/null || true)
  while [ $# -ge 2 ]; do
    dev=$1 data=$2
    shift 2
    data_text body "${data}_PQ"   # by bash alone (twice a step, per device)
    while [[ $body == *$'\n' ]]; do body=${body%$'\n'}; done   # its trailing line breaks, as $(...) cut them
    if [ -z "$body" ] || [ ! -e "/etc/wireguard/$dev.key" ]; then continue; fi
    pub=$(wg pubkey < "/etc/wireguard/$dev.key" 2>/dev/null) || continue
    if [ ! -d "$PQ_PSK_DIR" ]; then mkdir -p "$PQ_PSK_DIR"; fi
    [ "${mode[$PQ_PSK_DIR]:-}" = 700 ] || { chmod 700 "$PQ_PSK_DIR"; mode[$PQ_PSK_DIR]=700; }
    f=$PQ_PSK_DIR/$dev.conf
    printf -v want '%s\npublic %s\n' "$body" "$pub"
    current=
    if [ -f "$f" ]; then read_whole current "$f"; fi
    if [ "$current" != "$want" ] || [ "${mode[$f]:-}" != 600 ]; then
      write_if_changed "$f" 600 "$want"
      # a running daemon reads it now, not at its next scan (2 s): a new peer's first exchange
      if [ "$WRITTEN" = 1 ]; then pq_psk_kick; fi
    fi
    keep="$keep$dev.conf "
    any=1
  done
  [ -d "$PQ_PSK_DIR" ] || { printf '%s' "$any"; return 0; }
  for f in "$PQ_PSK_DIR"/*.conf "$PQ_PSK_DIR"/*.conf.vpnaas-tmp; do
    [ -e "$f" ] || continue
    case "$keep" in *" ${f##*/} "*) continue ;; esac
    # A temporary copy is a step's that was killed between writing and renaming it (lib.sh).
    case "$f" in *.vpnaas-tmp) rm -f "$f"; continue ;; esac
    if grep -qxF "$MARKER" "$f"; then rm -f "$f"; fi
  done
  # The folder is the charm's: it goes with its last file (an operator's file keeps it).
  if [ "$any" = 0 ]; then rmdir "$PQ_PSK_DIR" 2>/dev/null || true; fi
  printf '%s' "$any"
}

pq_psk_daemon() {  # start the daemon, or restart it when its program changed
  local prog="$DATAPLANE_DIR/pq-psk" text digest pid running ready rfd line started
  # The program's digest: programs_check has just checked the installed copy against it
  # (dataplane.sh), so it is not hashed again here (3 MB, twice in every step). The program
  # started is always the charm's own (that check), so it knows -ready.
  digest=${PQ_PSK_DIGEST:-}
  if [ -z "$digest" ]; then digest=$(sha256sum < "$prog" | cut -d' ' -f1); fi
  if [ "${init:-none}" = systemd ]; then
    text=$(printf '%s\n' "$MARKER" "# program sha256 $digest" '[Unit]' 'Description=VPNaaS pq-psk (post-quantum WireGuard preshared keys)' \
      'After=network-online.target' '[Service]' \
      "ExecStart=$prog run -config $PQ_PSK_DIR -state $PQ_PSK_STATE" 'Restart=always' 'RestartSec=5' \
      'NoNewPrivileges=yes' 'ProtectHome=yes' 'PrivateTmp=yes' '[Install]' 'WantedBy=multi-user.target')
    write_if_changed "$PQ_PSK_UNIT" 644 "$text"$'\n'
    if [ "$WRITTEN" = 1 ]; then systemctl daemon-reload; fi
    systemctl enable "$PQ_PSK_SERVICE" >/dev/null 2>&1
    if [ "$WRITTEN" = 1 ] || ! systemctl is-active --quiet "$PQ_PSK_SERVICE"; then systemctl restart "$PQ_PSK_SERVICE"; fi
    systemctl is-active --quiet "$PQ_PSK_SERVICE" || fail "the pq-psk daemon does not run (systemctl status $PQ_PSK_SERVICE)"
    return 0
  fi
  pid=$(pq_psk_pid)
  running=
  if [ -f "$PQ_PSK_PIDFILE.sha256" ]; then read -r running < "$PQ_PSK_PIDFILE.sha256" || true; fi
  if [ -n "$pid" ] && [ "$running" != "$digest" ]; then
    pq_psk_stop
    pid=
  fi
  if [ -z "$pid" ]; then
    mkdir -p "${PQ_PSK_PIDFILE%/*}"
    ready=$PQ_PSK_PIDFILE.ready
    rm -f "$PQ_PSK_PIDFILE" "$ready"
    # The daemon says it runs (its state folder made, its lock taken: pqpsk/main.go -ready) with
    # a line into a FIFO this step holds open for reading and writing (so neither end's open
    # waits for the other): the step goes on the moment it is said, not at the next look of a
    # poll. A daemon that exits at its start says nothing: the read ends after 3 s, and the check
    # below decides in every case, as it did alone.
    mkfifo -m 600 "$ready"
    exec {rfd}<>"$ready"
    # Its own session; the log holds one line per renewal and refusal, cut at start. The pid (and
    # the program's digest) is recorded by the daemon's own process before it becomes the daemon
    # (exec keeps the pid), the pid file renamed into place: a step killed at any point leaves
    # either no daemon or one its pid file names (or, that file lost, its lock: pq_psk_pid).
    # shellcheck disable=SC2016  # $$ and $1.. are the started shell's own
    setsid bash -c 'printf "%s\n" "$1" > "$2.sha256" && printf "%s\n" "$$" > "$2.vpnaas-tmp" && mv -f "$2.vpnaas-tmp" "$2" &&
      shift 2 && exec "$@"' pq-psk-start "$digest" "$PQ_PSK_PIDFILE" \
      "$prog" run -config "$PQ_PSK_DIR" -state "$PQ_PSK_STATE" -ready "$ready" > "$PQ_PSK_LOG" 2>&1 < /dev/null {rfd}<&- &
    started=$!
    # Until it says so or its process is gone, 30 s at most: a loaded machine can take seconds to
    # start a program (3 s was once the limit and failed a slow start), and one that exits at its
    # start is seen within 0.1 s (the step holds the FIFO's write end too, so no EOF tells it).
    for _ in $(seq 1 300); do
      if read -r -t 0.1 -u "$rfd" line; then break; fi
      kill -0 "$started" 2>/dev/null || break
    done
    exec {rfd}<&-
    rm -f "$ready"
    # Running means its state folder made and still alive: "PQPSK up" (and with it the capability
    # the charm publishes) is never said of a daemon that exited at its start.
    if [ -z "$(pq_psk_pid)" ] || [ ! -d "$PQ_PSK_STATE" ]; then
      fail "the pq-psk daemon exited at its start: $(tail -n 1 "$PQ_PSK_LOG" 2>/dev/null | tr -cd '[:print:]' | cut -c1-160)"
    fi
  fi
}

pq_psk_kick() {  # a device was just written: a running daemon looks at it now (pqpsk/main.go: the kick file)
  # A peer added again or a device re-created has no preshared key until the daemon puts the
  # agreed one back; at its next look (5 s) that could cost the peer a handshake attempt (5 s
  # more). A file, not a signal: a signal before the daemon's handler is installed would end it.
  # Only where the daemon keeps its state (it runs), and only after a change: an unchanged step
  # touches nothing. Truncated by the shell rather than touched by a program (one process fewer
  # per changed device): the daemon sees the write through inotify, and its time where it looks.
  if [ -d "$PQ_PSK_STATE" ]; then : > "$PQ_PSK_STATE/kick"; fi
}

pq_psk_ensure() {  # dev data...: as pq_psk_files, then the daemon runs exactly when a file is left
  if [ "$(pq_psk_files "$@")" = 1 ]; then
    [ -x "$DATAPLANE_DIR/pq-psk" ] || fail "pq-psk is not installed on the VNF and the charm does not ship it"
    pq_psk_daemon
    out "PQPSK up"
  else
    pq_psk_forget
    out "PQPSK off"
  fi
}

pq_psk_apply() {  # as pq_psk_ensure; a failure is reported (FAILED pq-psk ...), never stops the step
  isolated pq-psk pq_psk_ensure "$@"
}

pq_psk_report() {  # the daemon's per-peer state: "PQPEER <dev> <peer> <state> <epoch> <renewals> <last> <refusals>"
  local f
  for f in "$PQ_PSK_STATE"/*.status; do
    [ -e "$f" ] || continue
    # Only well-formed lines (the grammar is report.py's too): public values, counters, times.
    # No interval expressions ({42}): mawk, the VNFs' awk (Ubuntu 18.04) and Debian's, has none
    # and would match nothing; the key's length is checked with length() instead.
    awk '$1 == "peer" && NF == 21 && length($2) <= 15 && $2 ~ /^[A-Za-z0-9_.-]+$/ && length($3) == 44 && $3 ~ /^[A-Za-z0-9+\/]+[AEIMQUYcgkosw048]=$/ &&
         $9 ~ /^(waiting|ok|failing)$/ && $11 ~ /^[0-9]+$/ && $13 ~ /^[0-9]+$/ && $15 ~ /^[0-9]+$/ && $17 ~ /^[0-9]+$/ &&
         length($11) <= 20 && length($13) <= 20 && length($15) <= 20 && length($17) <= 20 {
         print "PQPEER " $2 " " $3 " " $9 " " $11 " " $13 " " $15 " " $17 }' "$f" | head -n 4096 |
      while IFS= read -r line; do out "$line"; done
  done
}
