"""MySQL of the 5G core: the subscriber database the AMF reads in OAI's mini scenario.

Its own VNF, so that the database link between the AMF and MySQL crosses the network as the
reference point ``db``, inside WireGuard like every other interface. MySQL 8.0 is Ubuntu 22.04's
package (``mysql-server-8.0``, OAI's deployments use MySQL 8.0 too); the ``users`` table is
created from the definition in OAI's own database dump of the pinned CN5G release
(``docker-compose/database/oai_db1.sql`` of the federation repository at the release commit,
fetched without its submodules), and nothing else of that dump is loaded: its sample subscribers
have published keys. The charm writes MySQL's init file (``vnf/oai/mysql-init.py`` on the VNF):
the database, that table, the AMF's account (from the AMF's db address only, SELECT and UPDATE
on ``users``) and the subscribers (IMSI, K, OPc = AES-128_K(OP) xor OP, an initial SQN); MySQL
runs it at every start, so a changed password or key applies at the next start and nothing is
added twice (a subscriber's SQN, which the AMF advances, is kept). K, OP, OPc and the password
travel in the configure step's data section and are written only to that file (mode 0600, owned
by mysql). MySQL listens on its db service address only; the distribution's own unit is
disabled by oai-install so that only the charm's gated unit starts it, after the tunnel.
"""

from typing import List, NamedTuple, Optional, Tuple

from vpnaas.core import model
from vpnaas.oai import component as oai
from vpnaas.oai import validation as oai_validation
from vpnaas.oai.cn5g import common as cn5g_common
from vpnaas.vnf import vnfscript

#: OAI's database dump of the release, inside the fetched federation repository.
SCHEMA = "docker-compose/database/oai_db1.sql"
CNF = "/etc/mysql/mysql.conf.d/zz-vpnaas.cnf"
#: Under /etc/mysql: Ubuntu's AppArmor profile of mysqld lets it read there.
INIT_FILE = "/etc/mysql/vpnaas-init.sql"
DATABASE = "oai_db"
#: The subscribers' first SQN (OAI's examples start at 0x20); the AMF advances it by 32 per run.
FIRST_SQN = 32


class MysqlValues(NamedTuple):
    addresses: oai.Addresses   # own: db (where it listens); peer: the AMF's db (its account's only host)
    user: str
    password: str
    imsi_first: str
    users: int
    k: str
    op: str
    opc: str


class Mysql(oai.Component[MysqlValues]):
    name = "mysql"
    title = "MySQL"
    repository = cn5g_common.GROUP + "oai-cn5g-fed.git"
    ref = cn5g_common.FED_COMMIT
    program = "mysqld"
    prerequisites = oai.Component.prerequisites + ("mysql-server-8.0",)
    fetch_submodules = False
    ubuntu = "22.04"
    oai_build_script = False
    build_labels = ("taking MySQL out of the distribution's start-up (the charm's unit starts it)",)

    def binary_candidates(self) -> List[str]:
        return ["/usr/sbin/mysqld"]

    def config_values(self, config: oai.Options, plan: Optional[model.Plan]) -> MysqlValues:
        common = oai.common_values(config)
        imsi = oai_validation.digits(config.get("imsi-first"), "imsi-first", 6, 15)
        users = oai_validation.integer(config.get("number-of-users"), "number-of-users", 1, 10000)
        plmn = common.mcc + common.mnc
        last = str(int(imsi) + users - 1).zfill(len(imsi))
        if not imsi.startswith(plmn) or len(last) > len(imsi) or not last.startswith(plmn):
            raise oai_validation.InvalidValue("imsi-first: {} and number-of-users {} leave the PLMN {} (last IMSI {})"
                                              .format(imsi, users, plmn, last))
        k = oai_validation.secret_hex32(config.get("subscriber-k"), "subscriber-k")
        op = oai_validation.secret_hex32(config.get("subscriber-op"), "subscriber-op")
        return MysqlValues(
            addresses=self.addresses(config, plan),
            user=oai_validation.db_name(config.get("db-user"), "db-user"),
            password=oai_validation.secret_password(config.get("db-password"), "db-password"),
            imsi_first=imsi, users=users, k=k, op=op, opc=oai.opc(k, op))

    def secrets(self, values: MysqlValues) -> List[str]:
        return [values.password, values.k, values.op, values.opc]

    def run_argv(self, values: MysqlValues) -> List[str]:
        return [self.binary]   # Ubuntu's /etc/mysql/my.cnf, with the charm's file in mysql.conf.d

    def setup_settings(self, values: MysqlValues) -> List[Tuple[str, str]]:
        return [("dir", "/run/mysqld mysql")]   # what the distribution's unit made before each start

    def render_spec(self, values: MysqlValues) -> oai.RenderSpec:
        cnf = ("# Managed by the VPNaaS charm.\n[mysqld]\nbind-address = {}\nmysqlx-bind-address = 127.0.0.1\n"
               "skip-name-resolve = ON\ninit-file = {}\n").format(values.addresses.ip("db"), INIT_FILE)
        return {"files": [{"content": cnf, "dst": CNF}]}

    def init_spec(self, values: MysqlValues) -> oai.JsonObject:
        """What vnf/oai/mysql-init.py writes into INIT_FILE (it holds the keys and the password)."""
        return {"schema": "{}/{}".format(self.source_dir, SCHEMA), "dst": INIT_FILE, "database": DATABASE,
                "user": values.user, "host": values.addresses.peers["db"], "password": values.password,
                "imsi_first": values.imsi_first, "count": values.users, "k": values.k, "opc": values.opc,
                "sqn": FIRST_SQN}

    def configure_calls(self, step: vnfscript.Step, values: MysqlValues) -> None:
        step.secret("MYSQL_INIT", oai.b64_json(self.init_spec(values)))
        step.call("oai_configure_mysql", oai.b64_json(self.render_spec(values)),
                  oai.shipped_b64("oai/mysql-init.py"), INIT_FILE)

    def configure_files(self) -> List[str]:
        return ["oai/configure-cn5g.sh"]


COMPONENT = Mysql()
