# shellcheck shell=bash
# The optional UE on the eNB VNF (after lib.sh and oai-lib.sh): OAI's lte-uesoftmodem, built by the
# eNB's oai-install (build_oai --UE), attached through the eNB's RF simulator on the same VNF, as
# the thesis did by hand. Its SIM (IMSI, K, OPc) comes from the step's data section (`secret`).

UE_IF=oaitun_ue1

ue_pidfile() { echo "${OAI_RUN_DIR:-/run}/oai-ue.pid"; }

ue_running() {
  local pid
  [ -s "$(ue_pidfile)" ] || return 1
  pid=$(cat "$(ue_pidfile)")
  kill -0 "$pid" 2>/dev/null
}

ue_stop() {
  local pid
  ue_running || { rm -f "$(ue_pidfile)"; return 0; }
  pid=$(cat "$(ue_pidfile)")
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
  kill -KILL -- "-$pid" 2>/dev/null || true
  rm -f "$(ue_pidfile)"
}

ue_address() {  # the UE's IPv4 address on its tunnel interface; empty (not a failure) without one
  { ip -4 -o addr show dev "$UE_IF" 2>/dev/null || true; } | awk '!n++ {split($4, a, "/"); print a[1]}'
}

oai_ue_attach() {  # render.py-base64 src imsi downlink-frequency prb timeout
  local src=$2 imsi=$3 dl=$4 prb=$5 limit=$6
  local build="$src/cmake_targets/lte_build_oai/build" tools="$src/cmake_targets/nas_sim_tools/build"
  local log="$OAI_LOGS/oai-ue.log"
  oai_dirs
  [ -x "$build/lte-uesoftmodem" ] || fail "no $build/lte-uesoftmodem: run oai-install on the eNB first"
  [ -x "$tools/conf2uedata" ] || fail "no $tools/conf2uedata: run oai-install on the eNB first"
  oai_is_running oai-enb lte-softmodem || fail "the eNB is not running: run oai-start first (the UE attaches through its RF simulator)"
  install_helper render.py "$1"
  progress "1/3 writing the UE's SIM for IMSI $imsi"
  render_files "$(secret UE_SPEC)"
  (cd "$build" && "$tools/conf2uedata" -c "$OAI_STATE/ue.conf" -o "$build") > "$log" 2>&1 \
    || fail "conf2uedata failed (see $log)"
  progress "2/3 starting the UE (RF simulator client of this eNB)"
  ue_stop
  # Everything of the background job writes to the log: an inherited SSH channel would keep the
  # step's session open for as long as the UE runs.
  # shellcheck disable=SC2016  # expanded by the inner bash
  (cd "$build" && RFSIMULATOR=127.0.0.1 exec setsid bash -c 'echo $$ > "$1"; shift; exec "$@"' _ "$(ue_pidfile)" \
     ./lte-uesoftmodem -C "$dl" -r "$prb" --rfsim --nokrnmod) >> "$log" 2>&1 < /dev/null &
  progress "3/3 waiting for the attach (an address on $UE_IF)"
  ue_await "$imsi" "$limit" "$log" "the MME's log"
}

ue_await() {  # imsi limit log core-log: bounded wait for the UE's address, with progress; the results
  local imsi=$1 limit=$2 log=$3 start addr next=15
  start=$SECONDS
  for _ in $(seq 1 50); do [ -s "$(ue_pidfile)" ] && break; sleep 0.1; done
  until addr=$(ue_address) && [ -n "$addr" ]; do
    ue_running || fail "the UE exited before attaching; last lines: $(tail -n 5 "$log" | tr '\n' ' ' | cut -c1-300)"
    if [ $((SECONDS - start)) -ge "$limit" ]; then
      ue_stop
      fail "no attach after ${limit}s (no address on $UE_IF; see $log and $4)"
    fi
    if [ $((SECONDS - start)) -ge "$next" ]; then
      progress "3/3 waiting for the attach ($((SECONDS - start))s)"
      next=$((next + 15))
    fi
    sleep 1
  done
  out "RESULT imsi $imsi"
  out "RESULT ip $addr"
  out "RESULT interface $UE_IF"
  out "RESULT seconds $((SECONDS - start))"
}

oai_ue_iperf() {  # server seconds: throughput and RTT from the UE through S1-U to a server behind SGi
  local server=$1 seconds=$2 addr json rtt
  addr=$(ue_address)
  [ -n "$addr" ] || fail "the UE is not attached (no address on $UE_IF): run ue-attach first"
  rtt=$(ping -n -q -c 5 -I "$addr" "$server" 2>/dev/null | awk -F/ '/^rtt|^round-trip/ {print $5}' || true)
  # The step itself runs under a timeout (vnfscript), which bounds a hanging connect too.
  json=$(iperf3 -c "$server" -B "$addr" -t "$seconds" -J 2>/dev/null) \
    || fail "iperf3 from $addr to $server failed (is iperf3 -s running there and routed via SGi?)"
  out "RESULT ip $addr"
  out "RESULT rtt-ms ${rtt:-none}"
  out "RESULT iperf3 $(printf '%s' "$json" | base64 -w0)"
}
