# shellcheck shell=bash
# The oai-configure step (after lib.sh and oai-lib.sh): the generic begin and end, and one function
# per component that renders its configuration and applies what it needs on the VNF.

oai_configure_begin() {  # component render.py-base64 oai-service-base64 settings-base64 prefix
  local run
  umask 022
  oai_dirs
  [ -s "$OAI_STATE/$1.built" ] \
    || fail "oai-install has not completed on this VNF (no $OAI_STATE/$1.built): run oai-install first"
  install_helper render.py "$2"
  mkdir -p "$5" "$5/freeDiameter" "$OAI_SBIN"
  put_file "$OAI_SBIN/oai-service" 755 "$3" || true
  put_file "$5/oai-$1.service" 644 "$4" || true
  run=$(printf '#!/bin/sh\n# Managed by the VPNaaS charm.\nexec %s run %s\n' "$OAI_SBIN/oai-service" "$1" | base64 -w0)
  put_file "$OAI_SBIN/oai-$1-run" 755 "$run" || true
}

oai_configure_dirs() {  # dir...: the folders the component's configuration names (e.g. logs/)
  mkdir -p "$@"
}

oai_configure_addresses() {  # title (reference-point ip)...: each own service address is on this VNF
  local title=$1
  shift
  while [ "$#" -ge 2 ]; do
    require_addr "$2" "the $title ${1^^} service address"
    shift 2
  done
}

oai_configure_setup() {  # component: what does not survive a reboot (also run before every start)
  "$OAI_SBIN/oai-service" setup "$1" || fail "oai-service setup $1 failed"
}

oai_configure_end() {  # component service binary
  # A running service only picks up a new configuration when it restarts: stop it here; the
  # reconcile that ends the action starts it again (after the tunnel handshake).
  if [ -n "$OAI_CHANGED" ]; then
    out "RESULT changed $OAI_CHANGED"
    if oai_is_running "$2" "$3"; then
      oai_stop "$2" "$3"
      out "RESULT restart needed"
    fi
  else
    out "RESULT changed none"
  fi
  date -u +%FT%TZ > "$OAI_STATE/$1.configured"
}

# --------------------------------------------------------------------------- per component
oai_configure_mme() {  # spec-base64 src freediameter-dir mme-fqdn
  local spec=$1 src=$2 fd=$3 fqdn=$4 log="$OAI_LOGS/oai-mme-configure.log" before
  : > "$log"
  progress "1/2 rendering mme.conf and mme_fd.conf"
  render_files "$spec"
  progress "2/2 checking the S6a certificate"
  # A fresh VNF has no certificate yet: the digest of no files is a value too, never a failure.
  before=$(files_digest "$fd"/*.pem)
  (cd "$src/scripts" && ./check_mme_s6a_certificate "$fd" "$fqdn") >> "$log" 2>&1 \
    || fail "check_mme_s6a_certificate failed (see $log)"
  [ "$before" = "$(files_digest "$fd"/*.pem)" ] || OAI_CHANGED="$OAI_CHANGED certificates"
}

oai_configure_spgwc() {  # spec-base64
  progress "1/1 rendering spgw_c.conf"
  render_files "$1"
}

default_route_dev() {  # empty without a default route (awk reads all: no SIGPIPE for ip under pipefail)
  ip -4 route show default | awk '!found {for (i = 1; i < NF; i++) if ($i == "dev") {print $(i + 1); found = 1; break}}'
}

oai_configure_spgwu() {  # spec-base64 sgi-interface-or-empty
  local sgi=$2
  [ -n "$sgi" ] || sgi=$(default_route_dev)
  [ -n "$sgi" ] || fail "no SGi interface: the VNF has no default route; set sgi-interface"
  ip link show dev "$sgi" >/dev/null 2>&1 || fail "SGi interface $sgi does not exist on this VNF"
  progress "1/1 rendering spgw_u.conf"
  render_files "$1" "SGI=$sgi"
}

oai_configure_enb() {  # spec-base64
  progress "1/1 rendering enb.conf"
  render_files "$1"
}
