# shellcheck shell=bash
# oai-configure of the HSS (after configure.sh): Cassandra, schema, subscribers, Diameter
# certificates, the OP key. The render spec (it holds OP) and the provisioning arguments (they
# hold K) come from the program's data section (`secret`), never from an argument.

cass() {  # stop|start|restart
  if [ "$(oai_mode)" = systemd ]; then systemctl "$1" cassandra; else service cassandra "$1"; fi
}

wait_cql() {  # ip limit: bounded wait for Cassandra's CQL port, with progress
  local ip=$1 limit=$2 start=$SECONDS next=30 waited
  until cqlsh -e 'SHOW VERSION' "$ip" >/dev/null 2>&1; do
    waited=$((SECONDS - start))
    [ "$waited" -lt "$limit" ] || fail "Cassandra does not answer CQL on $ip after ${limit}s" \
      "(see /var/log/cassandra/system.log; the HSS VM needs >= 3 vCPU / 6 GB)"
    if [ "$waited" -ge "$next" ]; then
      progress "3/6 waiting for Cassandra CQL on $ip (${waited}s)"
      next=$((next + 30))
    fi
    sleep 2
  done
}

oai_configure_hss() {  # cassandra-ip src realm users imsi-first cassandra-timeout binary prefix provision.py-base64
  local ip=$1 src=$2 realm=$3 users=$4 imsi=$5 limit=$6 binary=$7 prefix=$8
  local log="$OAI_LOGS/oai-hss-configure.log"
  : > "$log"
  install_helper provision.py "$9"
  progress "1/6 rendering the HSS and Cassandra configuration"
  render_files "$(secret HSS_SPEC)"
  progress "2/6 starting Cassandra"
  # The Debian package started Cassandra once as "Test Cluster": its system keyspace must go
  # before the first start under our cluster name. Only the first time: later it holds vhss.
  if [ ! -e "$OAI_STATE/cassandra.initialised" ]; then
    cass stop >> "$log" 2>&1 || true
    local data=${OAI_CASSANDRA_DATA:-/var/lib/cassandra}
    rm -rf "$data"/data/system/* "$data"/commitlog/* "$data"/saved_caches/*
    OAI_CHANGED="$OAI_CHANGED cassandra"
  fi
  [ "$(oai_mode)" != systemd ] || systemctl enable cassandra >/dev/null 2>&1 || true
  case " $OAI_CHANGED " in
    *cassandra*) cass restart >> "$log" 2>&1 ;;
    *) cass start >> "$log" 2>&1 ;;
  esac || fail "Cassandra did not start (see $log and /var/log/cassandra/system.log)"
  progress "3/6 waiting for Cassandra CQL on $ip"
  wait_cql "$ip" "$limit"
  touch "$OAI_STATE/cassandra.initialised"
  progress "4/6 loading the HSS schema"
  if ! cqlsh -e 'DESCRIBE KEYSPACE vhss' "$ip" >/dev/null 2>&1; then
    [ -f "$src/src/hss_rel14/db/oai_db.cql" ] || fail "schema $src/src/hss_rel14/db/oai_db.cql missing"
    cqlsh --file "$src/src/hss_rel14/db/oai_db.cql" "$ip" >> "$log" 2>&1 \
      || fail "loading oai_db.cql failed (see $log)"
  fi
  progress "5/6 provisioning $users subscribers from $imsi"
  [ -f "$src/scripts/data_provisioning_users" ] || fail "$src/scripts/data_provisioning_users missing"
  secret HSS_PROVISION | base64 -d | python3 "$OAI_STATE/provision.py" \
    || fail "provisioning the subscribers failed (Cassandra on $ip, vhss keyspace?)"
  "$src/scripts/data_provisioning_mme" --id 3 --mme-identity "mme.$realm" --realm "$realm" \
    --ue-reachability 1 -C "$ip" >> "$log" 2>&1 || fail "provisioning the MME failed (see $log)"
  progress "6/6 Diameter certificates and the OP key"
  if [ "$(cat "$prefix/freeDiameter/.vpnaas-certs" 2>/dev/null || true)" != "$realm" ]; then
    (cd "$src/scripts" && ../src/hss_rel14/bin/make_certs.sh hss "$realm" "$prefix") >> "$log" 2>&1 \
      || fail "make_certs.sh failed (see $log)"
    printf '%s\n' "$realm" > "$prefix/freeDiameter/.vpnaas-certs"
    OAI_CHANGED="$OAI_CHANGED certificates"
  fi
  # Computes OPc from OP (in hss_rel14.json) into the database; output discarded (it shows keys).
  # From the folder the json's relative logs/ and conf/ paths assume, like the service.
  (cd "$prefix" && "$binary" -j "$prefix/hss_rel14.json" --onlyloadkey) >/dev/null 2>&1 \
    || fail "oai_hss --onlyloadkey failed (Cassandra, hss_rel14.json?)"
}
