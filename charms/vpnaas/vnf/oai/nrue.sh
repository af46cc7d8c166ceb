# shellcheck shell=bash
# The optional 5G UE on the gNB VNF (after lib.sh, oai-lib.sh and ue.sh): OAI's nr-uesoftmodem,
# built by the gNB's oai-install (build_oai --nrUE), registered through the gNB's RF simulator on
# the same VNF. Its SIM (IMSI, K, OPc) comes from the step's data section (`secret`).

oai_nrue_attach() {  # render.py-base64 build-dir sim-file imsi timeout nr-uesoftmodem-option...
  local render=$1 build=$2 sim=$3 imsi=$4 limit=$5 log="$OAI_LOGS/oai-nrue.log"
  shift 5
  oai_dirs
  [ -x "$build/nr-uesoftmodem" ] || fail "no $build/nr-uesoftmodem: run oai-install on the gNB first"
  oai_is_running oai-gnb nr-softmodem \
    || fail "the gNB is not running: run oai-start first (the UE registers through its RF simulator)"
  install_helper render.py "$render"
  progress "1/3 writing the UE's SIM for IMSI $imsi"
  render_files "$(secret UE_SPEC)"
  [ -s "$sim" ] || fail "the UE's SIM $sim was not written"
  progress "2/3 starting the UE (RF simulator client of this gNB)"
  ue_stop
  : > "$log"
  # Everything of the background job writes to the log: an inherited SSH channel would keep the
  # step's session open for as long as the UE runs.
  # shellcheck disable=SC2016  # expanded by the inner bash
  (cd "$build" && exec setsid bash -c 'echo $$ > "$1"; shift; exec "$@"' _ "$(ue_pidfile)" \
     ./nr-uesoftmodem -O "$sim" "$@") >> "$log" 2>&1 < /dev/null &
  progress "3/3 waiting for the registration and the PDU session (an address on $UE_IF)"
  ue_await "$imsi" "$limit" "$log" "the AMF's and SMF's logs"
}
