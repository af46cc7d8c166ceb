# shellcheck shell=bash
# The metrics part of the tunnel step (after lib.sh and tunnels.sh): keep the WireGuard metrics
# exporter (vnf/wg-exporter.py) installed and running on this VNF's management address, and
# give it the charm's labels (which unit each peer key belongs to, the reference point, what was
# refused). Idempotent: a run with the same program, labels and address changes no file and
# restarts nothing. What it owns, and the only things it changes or removes: the files below.

METRICS_EXPORTER=/etc/wireguard/vpnaas-metrics-exporter.py
METRICS_COLLECT=/etc/wireguard/vpnaas-metrics-collect.py
METRICS_LABELS=/etc/wireguard/vpnaas-metrics.json
METRICS_REFUSED=/etc/wireguard/vpnaas-metrics.refused
METRICS_IMPL=/etc/wireguard/vpnaas-metrics.impl
# The collector compiled by an exporter of an earlier revision, which let Python cache it there.
METRICS_PYCACHE=/etc/wireguard/__pycache__
METRICS_SERVICE=vpnaas-wg-exporter
METRICS_UNIT=/etc/systemd/system/vpnaas-wg-exporter.service
METRICS_RUN=/run/wireguard
METRICS_PIDFILE=$METRICS_RUN/vpnaas-metrics-exporter.pid
METRICS_LOG=$METRICS_RUN/vpnaas-metrics-exporter.log

metrics_address() {  # the address this VNF's sshd answered the charm on: its management address
  local addr=
  # client port server port: the third word (read by bash, no program; no pathname expansion)
  read -r _ _ addr _ <<< "${VPNAAS_SSH_CONNECTION:-}" || true
  case "$addr" in
    ''|*[!0-9a-fA-F:.]*) return 0 ;;   # unknown, or not an address: no listener at all
  esac
  printf '%s' "$addr"
}

metrics_interface() {  # addr: MGMT_DEV, the device that holds the address (the exporter answers only there), or ""
  # The second word of the first line, read by bash (an awk and a pipeline were two processes more).
  local dev=
  MGMT_DEV=
  read -r _ dev _ < <(ip -o addr show to "$1" 2>/dev/null) || true
  dev=${dev%%@*}
  case "$dev" in
    ''|*[!A-Za-z0-9_.-]*) return 0 ;;
  esac
  if [ "${#dev}" -le 15 ]; then MGMT_DEV=$dev; fi
}

metrics_cmdline() {  # pid: CMDLINE set to its command line, words joined by spaces (read by bash alone)
  local -a args=()
  CMDLINE=
  mapfile -d '' -t args 2>/dev/null < "/proc/$1/cmdline" || return 0
  local IFS=' '
  CMDLINE="${args[*]} "
}

metrics_pid() {  # the pid of our running exporter without systemd, else nothing
  local pid=
  if [ -f "$METRICS_PIDFILE" ]; then read -r pid < "$METRICS_PIDFILE" || true; fi
  case "$pid" in ''|*[!0-9]*) return 0 ;; esac
  metrics_cmdline "$pid"
  case "$CMDLINE" in *"$METRICS_EXPORTER"*) printf '%s' "$pid" ;; esac
}

metrics_stop_daemon() {
  local pid
  pid=$(metrics_pid)
  if [ -n "$pid" ]; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$METRICS_PIDFILE"
}

metrics_listening() {  # addr port: something listens there (bounded wait)
  local i
  local listening
  for ((i = 1; i <= 50; i++)); do
    listening=$(ss -Hltn "( sport = :$2 )" 2>/dev/null) || listening=
    if [[ $listening == *"$1"* ]]; then return 0; fi
    [ "$i" = 50 ] || sleep 0.1
  done
  return 1
}

metrics_ensure() {  # port: serve the tunnels' metrics on <management address>:port ("0": no exporter)
  local port=$1 addr dev changed=0 pid text sorted line impl='' refused=''
  if [ "$port" = 0 ]; then
    metrics_remove
    out "METRICS off"
    return 0
  fi
  require_tools python3 ss ip
  addr=$(metrics_address)
  [ -n "$addr" ] || fail "the management address is unknown (no SSH_CONNECTION): no exporter started"
  metrics_interface "$addr"
  dev=$MGMT_DEV
  [ -n "$dev" ] || fail "no interface holds the management address $addr: no exporter started"
  # One stat for the folders and every file compared below (lib.sh stat_prefetch)
  stat_prefetch /etc/wireguard "$METRICS_LABELS" "$METRICS_IMPL" "$METRICS_REFUSED" "$METRICS_EXPORTER" \
    "$METRICS_COLLECT" "$METRICS_UNIT"
  private_dir /etc/wireguard 700
  [ -d "$METRICS_RUN" ] || mkdir -p "$METRICS_RUN"
  # Each file compared before it is written (lib.sh write_if_changed): a step that changes
  # nothing touches none of them. The x keeps trailing line breaks a command substitution drops.
  data_text text METRICS_LABELS
  write_if_changed "$METRICS_LABELS" 600 "$text"
  # "device implementation version" per device this step applied (tunnels.sh dataplane_report)
  # and "device prefix" per route it refused, each list sorted and unique: one sort for both
  # (the tag in front of each line keeps the order of the lines after it)
  sorted=$(sort -u "${TUNNELS_LOG:-/dev/null}")
  while IFS= read -r line; do
    case "$line" in
      "dataplane "*) impl+=${line#dataplane }$'\n' ;;
      "refused "*) refused+=${line#refused }$'\n' ;;
    esac
  done <<< "$sorted"
  write_if_changed "$METRICS_IMPL" 600 "$impl"
  write_if_changed "$METRICS_REFUSED" 600 "$refused"
  data_text text METRICS_EXPORTER
  write_if_changed "$METRICS_EXPORTER" 700 "$text"
  changed=$WRITTEN
  data_text text METRICS_COLLECT
  write_if_changed "$METRICS_COLLECT" 600 "$text"
  if [ "$WRITTEN" = 1 ]; then changed=1; fi
  if [ -d "$METRICS_PYCACHE" ]; then metrics_forget_bytecode; fi
  if [ "${init:-none}" = systemd ]; then
    text=$(
      printf '%s\n' "$MARKER" '[Unit]' 'Description=VPNaaS WireGuard metrics exporter (Prometheus text format)'
      printf '%s\n' 'After=network-online.target' 'Wants=network-online.target' '[Service]'
      printf 'ExecStart=/usr/bin/python3 %s --listen %s --port %s --interface %s\n' "$METRICS_EXPORTER" "$addr" \
        "$port" "$dev"
      # Its log is the journal (rate-limited by journald); TasksMax bounds its threads.
      printf '%s\n' 'Restart=always' 'RestartSec=5' 'NoNewPrivileges=yes' 'ProtectSystem=strict' \
        'ProtectHome=yes' 'PrivateTmp=yes' 'TasksMax=64' '[Install]' 'WantedBy=multi-user.target'
    )
    write_if_changed "$METRICS_UNIT" 644 "$text"$'\n'
    if [ "$WRITTEN" = 1 ]; then
      changed=1
      systemctl daemon-reload
    fi
    systemctl enable "$METRICS_SERVICE" >/dev/null 2>&1
    if [ "$changed" = 1 ] || ! systemctl is-active --quiet "$METRICS_SERVICE"; then
      systemctl restart "$METRICS_SERVICE"
    fi
  else
    pid=$(metrics_pid)
    if [ -n "$pid" ]; then
      metrics_cmdline "$pid"
      case "$CMDLINE" in *"--listen $addr --port $port --interface $dev "*) ;; *) changed=1 ;; esac
    fi
    if [ "$changed" = 1 ] || [ -z "$pid" ]; then
      metrics_stop_daemon
      # No init system: a daemon in its own session with a pid file (not restarted at boot). Its
      # log is bounded: the exporter rotates it (--log); standard error, where only a crash of
      # the interpreter could write, is truncated at every start.
      setsid python3 "$METRICS_EXPORTER" --listen "$addr" --port "$port" --interface "$dev" --log "$METRICS_LOG" \
        > /dev/null 2> "$METRICS_LOG.stderr" < /dev/null &
      printf '%s\n' "$!" > "$METRICS_PIDFILE"
    fi
  fi
  metrics_listening "$addr" "$port" || fail "the exporter does not listen on $addr:$port ($(tail -n 1 \
    "$METRICS_LOG" 2>/dev/null | tr -cd '[:print:]' | cut -c1-200))"
  out "METRICS up $addr:$port $dev"
}

metrics_apply() {  # port: as metrics_ensure; a failure is reported (FAILED metrics ...), never stops the step
  isolated metrics metrics_ensure "$@"
}

metrics_forget_bytecode() {  # what an earlier revision's exporter left beside the collector
  rm -f "$METRICS_PYCACHE"/vpnaas-metrics-collect.*.pyc
  rmdir "$METRICS_PYCACHE" 2>/dev/null || true
}

metrics_remove() {  # the exporter and every file of it go
  if [ -e "$METRICS_UNIT" ]; then
    systemctl disable --now "$METRICS_SERVICE" >/dev/null 2>&1 || true
    rm -f "$METRICS_UNIT"
    systemctl daemon-reload >/dev/null 2>&1 || true
  fi
  metrics_stop_daemon
  rm -f "$METRICS_EXPORTER" "$METRICS_COLLECT" "$METRICS_LABELS" "$METRICS_REFUSED" "$METRICS_IMPL" \
    "$METRICS_LOG" "$METRICS_LOG.1" "$METRICS_LOG.stderr"
  metrics_forget_bytecode
}
