"""The OAI HSS (rel14) with Cassandra 2.1: build, configuration and service (prior-art §5.1, §6).

Cassandra 2.1 and Java 8 come from cloud-init (cloud-init/hss.cfg). oai-configure configures
Cassandra (cluster name, seeds/listen/rpc address = the HSS S6a service address,
GossipingPropertyFileSnitch, dc=DC1 because oai_db.cql creates the vhss keyspace for DC1), waits
for CQL with a bounded loop, loads the schema once, provisions the subscribers, writes the
freeDiameter configuration and certificates and loads the OP key. The LTE K and OP never appear on
a command line: the subscriber script is run in-process by a small python wrapper that reads its
arguments from stdin, and OP only goes into hss_rel14.json (mode 0600).
"""

from vpnaas import oai
from vpnaas import oai_validation as ov

q = oai.q
PREFIX = oai.PREFIX

#: Wrapper that runs OAI's data_provisioning_users with arguments read from stdin, so that the
#: key is not visible in ps; its own output (which would list the keys) is discarded.
_PROVISION = r"""
import json, os, runpy, sys
spec = json.load(sys.stdin)
null = os.open(os.devnull, os.O_WRONLY)
os.dup2(null, 1)
os.dup2(null, 2)
sys.argv = [spec["script"]] + spec["args"]
runpy.run_path(spec["script"], run_name="__main__")
"""


class Hss(oai.Component):
    name = "hss"
    title = "HSS"
    repository = "https://github.com/simula/openairinterface-openair-hss.git"
    ref = "dreibh/cassandra-build-fix-22oct2020"
    program = "oai_hss"
    workdir = PREFIX
    secret_keys = ("lte_k", "lte_op")
    prerequisites = oai.Component.prerequisites + ("cassandra", "openjdk-8-jre-headless")

    def binary_candidates(self):
        return [
            "/usr/local/bin/oai_hss",
            self.source_dir + "/build/hss_rel14/bin/oai_hss",
            self.source_dir + "/src/hss_rel14/bin/oai_hss",
        ]

    def build_steps(self):
        return [
            (
                "installing the HSS build dependencies",
                "cd scripts && ./build_hss_rel14 --check-installed-software --force",
            ),
            ("building the HSS", "cd scripts && ./build_hss_rel14 --clean"),
        ]

    def before_units(self):
        return ["cassandra.service"]

    def config_values(self, config, plan):
        values = oai.common_values(config)
        values.update(
            {
                "hss_ip": str(oai.own_address(config, "s6a", self.title).ip),
                "mme_ip": oai.peer_address(config, plan, "s6a", "mme-address"),
                "imsi_first": ov.digits(config.get("imsi-first"), "imsi-first", 6, 15),
                "msisdn_first": ov.digits(config.get("msisdn-first"), "msisdn-first", 5, 15),
                "users": ov.integer(config.get("number-of-users"), "number-of-users", 1, 100000),
                "cassandra_timeout": ov.integer(
                    config.get("cassandra-timeout", 600), "cassandra-timeout", 30, 3600
                ),
                "lte_k": ov.secret_hex32(config.get("lte-k"), "lte-k"),
                "lte_op": ov.secret_hex32(config.get("lte-op"), "lte-op"),
            }
        )
        if not values["imsi_first"].startswith(values["mcc"] + values["mnc"]):
            raise ov.InvalidValue(
                "imsi-first: {} does not start with MCC+MNC {}{}".format(
                    values["imsi_first"], values["mcc"], values["mnc"]
                )
            )
        last = str(int(values["imsi_first"]) + values["users"] - 1).zfill(len(values["imsi_first"]))
        if len(last) > len(values["imsi_first"]) or not last.startswith(values["mcc"] + values["mnc"]):
            raise ov.InvalidValue(
                "number-of-users: {} users from {} leave the PLMN (last IMSI {})".format(
                    values["users"], values["imsi_first"], last
                )
            )
        return values

    def run_argv(self, values):
        return [self.binary, "-j", PREFIX + "/hss_rel14.json"]

    def setup_lines(self, values):
        realm = values["realm"]
        return oai.hosts_lines(
            [(values["hss_ip"], ["hss." + realm, "hss"]), (values["mme_ip"], ["mme." + realm, "mme"])]
        )

    def extra_files(self, values):
        # Before every start (boot included): Cassandra must answer CQL, or the HSS hangs.
        ready = "\n".join(
            [
                "#!/bin/bash",
                "# Managed by the VPNaaS charm: the HSS starts only once Cassandra answers CQL.",
                "limit={}; start=$SECONDS".format(values["cassandra_timeout"]),
                "until cqlsh -e 'SHOW VERSION' {} >/dev/null 2>&1; do".format(q(values["hss_ip"])),
                '  if [ $((SECONDS - start)) -ge "$limit" ]; then'
                ' echo "Cassandra not ready after ${limit}s" >&2;'
                " exit 1; fi",
                "  sleep 2",
                "done",
                "",
            ]
        )
        return [("{}/oai-hss-ready".format(oai.SBIN), "755", ready)]

    def render_spec(self, values):
        src = self.source_dir + "/etc/"
        realm, ip = values["realm"], values["hss_ip"]
        tokens = {
            "@PREFIX@": PREFIX,
            "@REALM@": realm,
            "@HSS_FQDN@": "hss." + realm,
            "@HSS_HOSTNAME@": "hss",
            "@cassandra_Server_IP@": ip,
            "@cassandra_IP@": ip,
            "@OP_KEY@": values["lte_op"],
            "@ROAMING_ALLOWED@": "true",
        }
        listen = {
            "pattern": r'#?[ \t]*ListenOn[ \t]*=[ \t]*"[^"\n]*"[ \t]*;',
            "repl": 'ListenOn = "{}";'.format(ip),
            "count": 1,
            "what": "ListenOn",
        }
        return {
            "files": [
                {"src": src + "acl.conf", "dst": PREFIX + "/freeDiameter/acl.conf", "tokens": tokens},
                {
                    "src": src + "hss_rel14_fd.conf",
                    "dst": PREFIX + "/freeDiameter/hss_rel14_fd.conf",
                    "tokens": tokens,
                    "edits": [listen],
                },
                {
                    "src": src + "hss_rel14.conf",
                    "dst": PREFIX + "/hss_rel14.conf",
                    "tokens": tokens,
                    "mode": "600",
                },
                {
                    "src": src + "hss_rel14.json",
                    "dst": PREFIX + "/hss_rel14.json",
                    "tokens": tokens,
                    "mode": "600",
                },
                {
                    "src": "/etc/cassandra/cassandra.yaml",
                    "dst": "/etc/cassandra/cassandra.yaml",
                    "check_tokens": False,
                    "yaml": {
                        "cluster_name": "HSS Cluster",
                        "seeds": ip,
                        "listen_address": ip,
                        "rpc_address": ip,
                        "endpoint_snitch": "GossipingPropertyFileSnitch",
                    },
                },
                {"content": "dc=DC1\nrack=RAC1\n", "dst": "/etc/cassandra/cassandra-rackdc.properties"},
            ]
        }

    def provision_spec(self, values):
        return {
            "script": self.source_dir + "/scripts/data_provisioning_users",
            "args": [
                "--apn",
                "default." + values["realm"],
                "--apn2",
                "internet." + values["realm"],
                "--key",
                values["lte_k"],
                "--imsi-first",
                values["imsi_first"],
                "--msisdn-first",
                values["msisdn_first"],
                "--mme-identity",
                "mme." + values["realm"],
                "--no-of-users",
                str(values["users"]),
                "--realm",
                values["realm"],
                "--cassandra-cluster",
                values["hss_ip"],
                "--verbose",
                "False",
            ],
        }

    def configure_body(self, values):
        realm, ip, src = values["realm"], values["hss_ip"], self.source_dir
        log = "{}/oai-hss-configure.log".format(oai.LOG_DIR)
        return "\n".join(
            [
                oai.spec_assignment("HSS_SPEC", self.render_spec(values)),
                oai.spec_assignment("HSS_PROVISION", self.provision_spec(values)),
                "IP={}; SRC={}; LOG={}; REALM={}".format(q(ip), q(src), q(log), q(realm)),
                ': > "$LOG"',
                'require_addr "$IP" "the HSS S6a service address"',
                'progress "1/6 rendering the HSS and Cassandra configuration"',
                'render_files "$HSS_SPEC"',
                'progress "2/6 starting Cassandra"',
                'cass() { if [ "$(oai_mode)" = systemd ]; then systemctl "$1" cassandra;'
                ' else service cassandra "$1"; fi; }',
                # The Debian package started Cassandra once as "Test Cluster": its system keyspace must
                # go before the first start with our cluster name. Only the first time: later it holds
                # the vhss schema.
                'if [ ! -e "$OAI_STATE/cassandra.initialised" ]; then',
                '  cass stop >> "$LOG" 2>&1 || true',
                "  rm -rf /var/lib/cassandra/data/system/* /var/lib/cassandra/commitlog/*"
                " /var/lib/cassandra/saved_caches/*",
                '  OAI_CHANGED="$OAI_CHANGED cassandra"',
                "fi",
                '[ "$(oai_mode)" != systemd ] || systemctl enable cassandra >/dev/null 2>&1 || true',
                'case " $OAI_CHANGED " in *cassandra*) cass restart >> "$LOG" 2>&1 ;;'
                ' *) cass start >> "$LOG" 2>&1 ;; esac'
                ' || fail "Cassandra did not start (see $LOG and /var/log/cassandra/system.log)"',
                'progress "3/6 waiting for Cassandra CQL on $IP"',
                "start=$SECONDS; next=30",
                "until cqlsh -e 'SHOW VERSION' \"$IP\" >/dev/null 2>&1; do",
                "  waited=$((SECONDS - start))",
                '  [ "$waited" -lt {t} ] || fail "Cassandra does not answer CQL on $IP after {t}s '
                '(see /var/log/cassandra/system.log; the HSS VM needs >= 3 vCPU / 6 GB)"'.format(
                    t=values["cassandra_timeout"]
                ),
                '  if [ "$waited" -ge "$next" ]; then'
                ' progress "3/6 waiting for Cassandra CQL on $IP (${waited}s)"; '
                "next=$((next + 30)); fi",
                "  sleep 2",
                "done",
                'touch "$OAI_STATE/cassandra.initialised"',
                'progress "4/6 loading the HSS schema"',
                "if ! cqlsh -e 'DESCRIBE KEYSPACE vhss' \"$IP\" >/dev/null 2>&1; then",
                '  [ -f "$SRC/src/hss_rel14/db/oai_db.cql" ]'
                ' || fail "schema $SRC/src/hss_rel14/db/oai_db.cql missing"',
                '  cqlsh --file "$SRC/src/hss_rel14/db/oai_db.cql" "$IP" >> "$LOG" 2>&1'
                ' || fail "loading oai_db.cql failed (see $LOG)"',
                "fi",
                'progress "5/6 provisioning {} subscribers from {}"'.format(
                    values["users"], values["imsi_first"]
                ),
                '[ -f "$SRC/scripts/data_provisioning_users" ]'
                ' || fail "$SRC/scripts/data_provisioning_users missing"',
                'printf "%s" "$HSS_PROVISION" | base64 -d | python3 -c {} '
                '|| fail "provisioning the subscribers failed (Cassandra on $IP, vhss keyspace?)"'.format(
                    q(_PROVISION)
                ),
                '"$SRC/scripts/data_provisioning_mme" --id 3 --mme-identity "mme.$REALM" --realm "$REALM" '
                '--ue-reachability 1 -C "$IP" >> "$LOG" 2>&1'
                ' || fail "provisioning the MME failed (see $LOG)"',
                'progress "6/6 Diameter certificates and the OP key"',
                'if [ "$(cat {p}/freeDiameter/.vpnaas-certs 2>/dev/null || true)" != "$REALM" ]; then'.format(
                    p=PREFIX
                ),
                '  (cd "$SRC/scripts" && ../src/hss_rel14/bin/make_certs.sh hss "$REALM" {p}) >> "$LOG" 2>&1 '
                '|| fail "make_certs.sh failed (see $LOG)"'.format(p=PREFIX),
                '  printf "%s\\n" "$REALM" > {p}/freeDiameter/.vpnaas-certs'.format(p=PREFIX),
                '  OAI_CHANGED="$OAI_CHANGED certificates"',
                "fi",
                # Computes OPc from OP (in hss_rel14.json) into the database; output discarded (keys).
                "{b} -j {p}/hss_rel14.json --onlyloadkey >/dev/null 2>&1 "
                '|| fail "oai_hss --onlyloadkey failed (Cassandra, hss_rel14.json?)"'.format(
                    b=q(self.binary), p=PREFIX
                ),
            ]
        )


COMPONENT = Hss()
