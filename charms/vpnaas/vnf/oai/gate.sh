# shellcheck shell=bash
# The OAI component's part of every reconcile (after tunnels.sh and oai-lib.sh): installs
# oai-service (vnf/oai/service.sh), what its prestart waits for, and the systemd unit; reports what is installed/configured/running, and starts
# the service only when every tunnel device has a handshake (waiting at most a few seconds for one
# in progress). It never fails the reconcile: problems are reported as `COMPONENT service failed`.

oai_gate() {  # component service binary wanted wait-seconds oai-service-base64 tunnels-base64 unit-base64 device...
  local c=$1 svc=$2 bin=$3 wanted=$4 wait=$5 service=$6 tunnels=$7 unit=$8 mode pending
  shift 8
  local devs=("$@")
  local unitdir="${OAI_UNIT_DIR:-/etc/systemd/system}" log="$OAI_LOGS/$svc.log"
  wait=${OAI_GATE_WAIT:-$wait}
  if [ -s "$OAI_STATE/$c.built" ]; then out "COMPONENT installed yes"; else out "COMPONENT installed no"; fi
  if [ ! -s "$OAI_STATE/$c.configured" ]; then
    out "COMPONENT configured no"
    out "COMPONENT service absent"
    return 0
  fi
  out "COMPONENT configured yes"
  mode=$(oai_mode)
  out "COMPONENT mode $mode"
  mkdir -p "$OAI_SBIN" "$(dirname "$log")"
  put_file "$OAI_SBIN/oai-service" 755 "$service" || true
  put_file "$OAI_STATE/$c.tunnels" 600 "$tunnels" || true
  if [ "$mode" = systemd ] && put_file "$unitdir/$svc.service" 644 "$unit"; then
    systemctl daemon-reload || true
  fi
  pending=$(gate_pending ${devs[@]+"${devs[@]}"})
  if [ "$wanted" = started ] && [ -n "$pending" ] && ! oai_is_running "$svc" "$bin"; then
    for _ in $(seq 1 $((wait * 4))); do
      pending=$(gate_pending ${devs[@]+"${devs[@]}"})
      [ -n "$pending" ] || break
      sleep 0.25
    done
  fi
  case "$wanted" in
    started)
      if oai_is_running "$svc" "$bin"; then out "COMPONENT service running"
      elif [ -n "$pending" ]; then out "COMPONENT service pending"; out "COMPONENT pending $pending"
      elif oai_start "$svc" "$c" "$OAI_SBIN/oai-$c-run" "$log"; then
        out "COMPONENT service starting"
      else out "COMPONENT service failed could not start $svc (see $log or journalctl -u $svc)"; fi ;;
    stopped)
      oai_stop "$svc" "$bin" || true
      out "COMPONENT service stopped" ;;
    *)
      if oai_is_running "$svc" "$bin"; then out "COMPONENT service running"
      else out "COMPONENT service stopped"; fi ;;
  esac
}

gate_pending() {  # device...: the devices without a handshake, space-separated
  local d missing=()
  for d in "$@"; do has_handshake "$d" || missing+=("$d"); done
  printf '%s' "${missing[*]}"
}
