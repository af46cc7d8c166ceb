"""The OAI HSS (rel14) with Cassandra: build, configuration and service.

Java 8 comes from cloud-init (cloud-init/hss.cfg); Cassandra is installed by oai-install from the
repository the options name (default Apache's debian.cassandra.apache.org, series 311x: the 21x
series OAI's scripts name is no longer published). oai-configure configures
Cassandra (cluster name, seeds/listen/rpc address = the HSS S6a service address,
GossipingPropertyFileSnitch, dc=DC1 because oai_db.cql creates the vhss keyspace for DC1), waits
for CQL with a bounded loop, loads the schema once, provisions the subscribers, writes the
freeDiameter configuration and certificates and loads the OP key. The LTE K and OP never appear on
a command line: the subscriber script is run in-process by a small python wrapper that reads its
arguments from stdin (vnf/oai/provision.py), and OP only goes into hss_rel14.json (mode 0600).
Both travel in the step's data section. hss_rel14.json names its log files and the OSS file
relative to the working folder (``logs/hss.log``, ``conf/oss.json``): the HSS, and its
``--onlyloadkey`` run, start in /usr/local/etc/oai, where configure creates ``logs/`` and ``conf/``.
"""

from typing import List, NamedTuple, Optional, Tuple

from vpnaas.core import model
from vpnaas.oai import component as oai
from vpnaas.oai import validation as oai_validation
from vpnaas.vnf import vnfscript

PREFIX = oai.PREFIX
SUBMODULES = oai.GIT_SUBMODULES
#: What OAI's build of this ref (22 Oct 2020) got: its helper (build_helper.hss_rel14,
#: init_submodules) checks out the recorded submodule commits, then runs `git submodule foreach git
#: pull origin master`; build_cpp_driver and build_pistache then check out fixed commits. The commits
#: are the first-parent tips of each `master` on that day (docs/oai.md, "Pinned submodules").
HSS_SUBMODULE_PINS = (
    (SUBMODULES + "c-ares", "c15f403875ababb1149215d49683d720b3d035c7",
     "master on 2020-10-22 (c-ares renamed it main since; the pull fails today)"),
    (SUBMODULES + "rapidjson", "0ccdbf364c577803e2a751f5aededce935314313", "master on 2020-10-22"),
    (SUBMODULES + "cpp-driver", "c97dd437c3730421f006dc4f2e36b533e405d357",
     "tag 2.15.0, which build_cpp_driver checks out after the pull"),
    (SUBMODULES + "spdlog", "a51b4856377a71f81b6d74b9af459305c4c644f8",
     "master on 2020-10-22 (unchanged 2019-09 to 2022; the pull names master, not v1.x)"),
    oai.FREEDIAMETER_PIN,
    (SUBMODULES + "pistache", "117db02eda9d63935193ad98be813987f6c32b33",
     "the commit build_pistache checks out after the pull"),
)


class HssValues(NamedTuple):
    common: oai.Common
    addresses: oai.Addresses  # own: s6a (where Cassandra listens too); peer: the MME's s6a
    imsi_first: str
    msisdn_first: str
    users: int
    cassandra_timeout: int
    lte_k: str
    lte_op: str


class Hss(oai.Component[HssValues]):
    name = "hss"
    title = "HSS"
    repository = "https://github.com/simula/openairinterface-openair-hss.git"
    ref = "dreibh/cassandra-build-fix-22oct2020"
    program = "oai_hss"
    option_sources = ("src/hss_rel14/src",)
    workdir = PREFIX
    prerequisites = oai.Component.prerequisites + ("openjdk-8-jre-headless", "curl", "apt-transport-https")

    def binary_candidates(self) -> List[str]:
        return [
            "/usr/local/bin/oai_hss",
            self.source_dir + "/build/hss_rel14/bin/hss",
        ]

    build_labels = ("installing the HSS build dependencies", "building the HSS")
    submodule_pins = HSS_SUBMODULE_PINS
    work_dirs = ("logs", "conf")

    def install_args(self, config: oai.Options) -> List[str]:
        """Cassandra's apt source (oai_prepare_hss in install.sh installs Cassandra from it)."""
        return [
            oai_validation.repository(config.get("cassandra-apt-repository") or "", "cassandra-apt-repository"),
            oai_validation.apt_series(config.get("cassandra-series") or "", "cassandra-series"),
            oai_validation.https_url(config.get("cassandra-keys-url") or "", "cassandra-keys-url"),
        ]

    def before_units(self) -> List[str]:
        return ["cassandra.service"]

    def config_values(self, config: oai.Options, plan: Optional[model.Plan]) -> HssValues:
        values = HssValues(
            common=oai.common_values(config),
            addresses=self.addresses(config, plan),
            imsi_first=oai_validation.digits(config.get("imsi-first"), "imsi-first", 6, 15),
            msisdn_first=oai_validation.digits(config.get("msisdn-first"), "msisdn-first", 5, 15),
            users=oai_validation.integer(config.get("number-of-users"), "number-of-users", 1, 100000),
            cassandra_timeout=oai_validation.integer(config.get("cassandra-timeout", 600), "cassandra-timeout",
                                                     30, 3600),
            lte_k=oai_validation.secret_hex32(config.get("lte-k"), "lte-k"),
            lte_op=oai_validation.secret_hex32(config.get("lte-op"), "lte-op"),
        )
        plmn = values.common.mcc + values.common.mnc
        if not values.imsi_first.startswith(plmn):
            raise oai_validation.InvalidValue(
                "imsi-first: {} does not start with MCC+MNC {}".format(values.imsi_first, plmn)
            )
        last = str(int(values.imsi_first) + values.users - 1).zfill(len(values.imsi_first))
        if len(last) > len(values.imsi_first) or not last.startswith(plmn):
            raise oai_validation.InvalidValue(
                "number-of-users: {} users from {} leave the PLMN (last IMSI {})".format(
                    values.users, values.imsi_first, last
                )
            )
        return values

    def configure_timeout(self, values: HssValues) -> int:
        return oai.CONFIGURE_TIMEOUT + values.cassandra_timeout

    def run_argv(self, values: HssValues) -> List[str]:
        return [self.binary, "-j", PREFIX + "/hss_rel14.json"]

    def secrets(self, values: HssValues) -> List[str]:
        return [values.lte_k, values.lte_op]

    def setup_settings(self, values: HssValues) -> List[Tuple[str, str]]:
        realm, ip = values.common.realm, values.addresses.ip("s6a")
        return [
            ("host", "{} hss.{} hss".format(ip, realm)),
            ("host", "{} mme.{} mme".format(values.addresses.peers["s6a"], realm)),
            # Before every start (boot included): Cassandra must answer CQL, or the HSS hangs.
            ("cql", "{} {}".format(ip, values.cassandra_timeout)),
        ]

    def render_spec(self, values: HssValues) -> oai.RenderSpec:
        src = self.source_dir + "/etc/"
        realm, ip = values.common.realm, values.addresses.ip("s6a")
        fqdn = "hss." + realm
        listen: oai.JsonObject = {
            "pattern": r'#?[ \t]*ListenOn[ \t]*=[ \t]*"[^"\n]*"[ \t]*;',
            "repl": 'ListenOn = "{}";'.format(ip),
            "count": 1,
            "what": "ListenOn",
        }
        return {
            "files": [
                {"src": src + "acl.conf", "dst": PREFIX + "/freeDiameter/acl.conf", "tokens": {"@REALM@": realm}},
                {
                    "src": src + "hss_rel14_fd.conf",
                    "dst": PREFIX + "/freeDiameter/hss_rel14_fd.conf",
                    "tokens": {"@PREFIX@": PREFIX, "@REALM@": realm, "@HSS_FQDN@": fqdn},
                    "edits": [listen],
                },
                # Not etc/hss_rel14.conf: no program reads it (oai_hss -j reads the json), and with its
                # unquoted @cassandra_Server_IP@ filled in it is not even valid libconfig.
                {
                    "src": src + "hss_rel14.json",
                    "dst": PREFIX + "/hss_rel14.json",
                    "tokens": {
                        "@PREFIX@": PREFIX,
                        "@REALM@": realm,
                        "@HSS_FQDN@": fqdn,
                        "@cassandra_Server_IP@": ip,
                        "@OP_KEY@": values.lte_op,
                        "@ROAMING_ALLOWED@": "true",
                    },
                    "mode": "600",
                },
                # hss_rel14.json's "ossfile" is conf/oss.json, relative to the working folder.
                {"src": src + "oss.json", "dst": PREFIX + "/conf/oss.json"},
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

    def provision_spec(self, values: HssValues) -> oai.JsonObject:
        realm = values.common.realm
        return {
            "script": self.source_dir + "/scripts/data_provisioning_users",
            "args": [
                "--apn",
                "default." + realm,
                "--apn2",
                "internet." + realm,
                "--key",
                values.lte_k,
                "--imsi-first",
                values.imsi_first,
                "--msisdn-first",
                values.msisdn_first,
                "--mme-identity",
                "mme." + realm,
                "--no-of-users",
                str(values.users),
                "--realm",
                realm,
                "--cassandra-cluster",
                values.addresses.ip("s6a"),
                "--verbose",
                "False",
            ],
        }

    def configure_files(self) -> List[str]:
        return ["oai/configure-hss.sh"]

    def configure_calls(self, step: vnfscript.Step, values: HssValues) -> None:
        step.secret("HSS_SPEC", oai.b64_json(self.render_spec(values)))
        step.secret("HSS_PROVISION", oai.b64_json(self.provision_spec(values)))
        step.call(
            "oai_configure_hss",
            values.addresses.ip("s6a"),
            self.source_dir,
            values.common.realm,
            values.users,
            values.imsi_first,
            values.cassandra_timeout,
            self.binary,
            PREFIX,
            oai.shipped_b64("oai/provision.py"),
        )


COMPONENT = Hss()
