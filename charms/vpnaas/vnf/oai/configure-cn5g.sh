# shellcheck shell=bash
# oai-configure of the 5G components (after configure.sh): the AMF, SMF and UPF (one generated
# YAML file each), MySQL (its listening address and init file) and the gNB. The CN5G files and
# MySQL's init file come from the program's data section (`secret`): the AMF's holds the database
# password, MySQL's the subscribers' keys.

oai_configure_cn5g() {  # title prefix n6-interface("-": none, "": the default route's)
  local title=$1 prefix=$2 n6=$3
  local -a vars=()
  # OAI's build helpers create the configuration folder world-writable (mkdir -m 777): the
  # generated file holds addresses (and the AMF's the database password).
  chmod 755 "$prefix"
  if [ "$n6" != - ]; then
    [ -n "$n6" ] || n6=$(default_route_dev)
    [ -n "$n6" ] || fail "no N6 interface: the VNF has no default route; set n6-interface"
    ip link show dev "$n6" >/dev/null 2>&1 || fail "N6 interface $n6 does not exist on this VNF"
    vars=("N6=$n6")
  fi
  progress "1/1 writing the $title configuration"
  render_files "$(secret CN5G_SPEC)" ${vars[@]+"${vars[@]}"}
}

oai_configure_mysql() {  # spec-base64 mysql-init.py-base64 init-file
  local init=$3 report rc=0
  progress "1/2 writing MySQL's listening address"
  render_files "$1"
  progress "2/2 writing MySQL's init file (database, users table, the AMF's account, subscribers)"
  install_helper mysql-init.py "$2"
  report=$(secret MYSQL_INIT | base64 -d | python3 "$OAI_STATE/mysql-init.py") || rc=$?
  if [ "$rc" != 0 ]; then
    printf '%s\n' "$report" | grep -m 1 '^ERROR ' || out "ERROR writing MySQL's init file failed"
    exit 3
  fi
  OAI_CHANGED="$OAI_CHANGED$(printf '%s\n' "$report" | sed -n 's/^CHANGED //p' | tr '\n' ' ')"
  chown mysql:mysql "$init" || fail "cannot give $init to the mysql user (is mysql-server-8.0 installed?)"
}

oai_configure_gnb() {  # spec-base64
  progress "1/1 rendering gnb.conf"
  render_files "$1"
}
