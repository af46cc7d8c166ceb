"""Size and count limits the 5G VNF side meets, each at the largest values the charms' grammar
accepts (issue 35), and the values the NFs' own readers refuse, which the grammar now refuses
first. What each limit is in its source is cited; `make oai-conformance` runs the upstream code
itself (MySQL's read_bootstrap_query, the NFs' YAML readers) over the same values."""
import re

import oai_tree
import pytest
from charms_helpers import COMPONENTS, DB_PASSWORD, NR_K, NR_OP, config_for
from test_cn5g import load_init

from vpnaas.core.validation import InvalidValue
from vpnaas.oai import component as oai
from vpnaas.oai.cn5g import nrue
from vpnaas.vnf import vnfscript

#: MySQL 8.0 sql/sql_bootstrap.h: MAX_BOOTSTRAP_QUERY_SIZE (and MAX_BOOTSTRAP_LINE_SIZE) 74000.
#: read_bootstrap_query (sql/sql_bootstrap.cc) fails when query_len + len + 1 >= it, where len
#: counts the line's newline: a one-line statement of n bytes fits while n + 1 + 1 < 74000.
MYSQL_BOOTSTRAP = 74000
#: Linux include/uapi/linux/binfmts.h MAX_ARG_STRLEN (32 pages): sshd hands the SSH command line
#: to the login shell as one argument.
MAX_ARG_STRLEN = 32 * 4096
LONGEST_DNN = "a" * 30 + "." + "b" * 31
#: The longest source the grammar accepts (oai_validation.repository, git_ref).
LONGEST_SOURCE = {"oai-repository": "https://" + "r" * 296 + ".git", "oai-ref": "v" * 128}
MAXIMA = {
    "common": dict(LONGEST_SOURCE, **{"mcc": "999", "mnc": "999", "tac": 65533, "sst": 255, "sd": "ffffff",
                                      "dnn": LONGEST_DNN, "ue-ip-pool": "10.0.0.0/8"}),
    "mysql": {"imsi-first": "999999000000000", "number-of-users": 10000, "db-user": "u" + "_" * 30 + "z",
              "db-password": "P" * 63 + "9"},
    "amf": {"amf-region-id": "ff", "amf-set-id": "3ff", "amf-pointer": "3f", "db-user": "u" + "_" * 30 + "z",
            "db-password": "P" * 63 + "9"},
    "smf": {"ue-mtu": 1500, "qos-5qi": 254, "session-ambr-ul": "999999Gbps", "session-ambr-dl": "999999Gbps"},
}


def maximal(name, **extra):
    values = dict(MAXIMA["common"], **MAXIMA.get(name, {}))
    values.update(extra)
    return config_for(name, **values)


def init_lines(users, **extra):
    init = load_init()
    comp = COMPONENTS["mysql"]
    values = comp.config_values(maximal("mysql", **dict({"number-of-users": users}, **extra)), None)
    return init, values, init.statements(comp.init_spec(values), oai_tree.USERS_DUMP)


@pytest.mark.parametrize("users", [1, 555, 556, 1024, 10000])
def test_every_init_file_statement_fits_mysqls_bootstrap_buffer(users):
    init, values, lines = init_lines(users)
    text = "\n".join(lines) + "\n"
    for line in text.splitlines(True):
        assert len(line.encode()) + 1 < MYSQL_BOOTSTRAP, "MySQL would stop its start on this statement"
        assert line.rstrip("\n").endswith(";") and "\n" not in line.rstrip("\n")
    inserts = [line for line in lines if line.startswith("INSERT INTO")]
    assert all(len(line) <= init.STATEMENT_BUDGET < MYSQL_BOOTSTRAP - 2 for line in inserts)
    imsis = re.findall(r"\('(\d{15})', 0x", text)
    first = int(values.imsi_first)
    assert imsis == [str(first + i) for i in range(users)], "every subscriber once, in order"
    # As many rows as fit: only the last statement may leave room for another row.
    row = len("('{}', 0x{}, 32, 0x{}, 0x{}), ".format("9" * 15, "0" * 32, "0" * 32, "0" * 32))
    assert all(len(line) + row > init.STATEMENT_BUDGET for line in inserts[:-1])


def test_one_statement_for_the_default_subscribers_is_what_mysql_refused():
    """The issue's figure: 1,024 rows in one INSERT are about 136 kB, past MySQL's 74,000."""
    _init, _values, lines = init_lines(1024)
    rows = sum(len(line) for line in lines if line.startswith("INSERT INTO"))
    assert 130000 < rows and rows > MYSQL_BOOTSTRAP


def test_a_statement_stops_at_the_budget_exactly(monkeypatch):
    init = load_init()
    spec = {"database": "oai_db", "imsi_first": "001010000000001", "count": 7, "k": "0" * 32, "opc": "1" * 32,
            "sqn": 32}
    one = init.subscribers(dict(spec, count=1))[0]
    row = len("('001010000000001', 0x{}, 32, 0x{}, 0x{})".format("0" * 32, "0" * 32, "1" * 32))
    monkeypatch.setattr(init, "STATEMENT_BUDGET", len(one) + 2 * (row + 2))   # exactly three rows
    out = init.subscribers(spec)
    assert [s.count("('00101") for s in out] == [3, 3, 1] and len(out[0]) == init.STATEMENT_BUDGET


def steps_of(name, config):
    comp = COMPONENTS[name]
    values = comp.config_values(config, None)
    steps = [oai.install_step(comp, oai.install_plan(comp, config)), oai.configure_step(comp, values)]
    gate = vnfscript.Step(["tunnels.sh"])
    oai.add_gate(gate, comp, ["wg-n2", "wg-n3", "wg-n4", "wg-n11", "wg-db"], "started", 300)
    steps.append(gate)
    return steps


@pytest.mark.parametrize("name", ["mysql", "amf", "smf", "upf", "gnb"])
def test_every_5g_step_fits_the_command_line_at_the_largest_values(name):
    config = maximal(name) if name != "gnb" else config_for(
        "gnb", **dict(MAXIMA["common"], mnc="99", **{"ue-imsi": "999991234500001", "ue-k": NR_K, "ue-op": NR_OP,
                                                     "ue-dnn": LONGEST_DNN}))
    steps = steps_of(name, config)
    if name == "gnb":
        steps.append(nrue.attach_step(nrue.values(config)))
    for step in steps:
        line = step.command("ubuntu", timeout=7200)
        assert len(line.encode()) <= vnfscript.MAX_COMMAND < MAX_ARG_STRLEN
        assert len(step.program()) <= vnfscript.MAX_PROGRAM
        for secret in (DB_PASSWORD, "P" * 63 + "9", NR_K, NR_OP):
            assert secret not in line


def test_the_upf_names_its_smf_as_a_map_with_host_before_its_upf_info():
    """OAI's UPF reads smfs[i]["host"]; a bare address throws in yaml-cpp and loses upf_info."""
    comp = COMPONENTS["upf"]
    doc = comp.document(comp.config_values(config_for("upf"), None))
    assert doc["upf"]["smfs"] == [{"host": "172.16.20.133"}]
    keys = list(doc["upf"])
    assert keys.index("smfs") < keys.index("upf_info")
    assert "    - host: \"172.16.20.133\"\n" in comp.render_spec(comp.config_values(config_for("upf"), None))[
        "files"][0]["content"]


@pytest.mark.parametrize("option,value,good", [("amf-set-id", "400", "3ff"), ("amf-pointer", "40", "3f")])
def test_the_amf_identifiers_fit_their_bits(option, value, good):
    """3GPP TS 23.003 2.10.1: AMF set id 10 bits, pointer 6; OAI's AMF refuses more (its
    AMF_SET_ID_REGEX ^[0-3][A-Fa-f0-9]{2}$, AMF_POINTER_REGEX ^[0-3][A-Fa-f0-9]$)."""
    with pytest.raises(InvalidValue, match="{}: {} is more than".format(option, value)):
        COMPONENTS["amf"].config_values(config_for("amf", **{option: value}), None)
    assert COMPONENTS["amf"].config_values(config_for("amf", **{option: good.upper()}), None)


def test_a_dnn_has_at_most_62_characters():
    """TS 23.003 9.1/9A: 63 octets encoded (a length octet per label); the nrUE of v2.1.0 writes
    its DNN's length in one octet too."""
    for name, option in (("smf", "dnn"), ("upf", "dnn")):
        assert COMPONENTS[name].config_values(config_for(name, **{option: LONGEST_DNN}), None).session.dnn == \
            LONGEST_DNN
        with pytest.raises(InvalidValue, match="at most 62"):
            COMPONENTS[name].config_values(config_for(name, **{option: LONGEST_DNN + "b"}), None)
    with pytest.raises(InvalidValue, match="ue-dnn"):
        nrue.values(config_for("gnb", **{"ue-imsi": "208951234500001", "ue-k": NR_K, "ue-op": NR_OP,
                                             "ue-dnn": "x" * 63}))


def test_the_5qi_stops_where_the_smfs_reader_does():
    """OAI's SMF validates 5qi in [1, 254] (qos_profile_config_value): 255 would stop it."""
    with pytest.raises(InvalidValue, match="qos-5qi"):
        COMPONENTS["smf"].config_values(config_for("smf", **{"qos-5qi": 255}), None)
    assert COMPONENTS["smf"].config_values(config_for("smf", **{"qos-5qi": 254}), None).five_qi == 254


def test_the_nrue_refuses_a_three_digit_mnc_and_says_why():
    config = config_for("gnb", mnc="001", **{"ue-imsi": "208001234500001", "ue-k": NR_K, "ue-op": NR_OP})
    with pytest.raises(InvalidValue) as e:
        nrue.values(config)
    assert "3 digits" in str(e.value) and "nmc_size" in str(e.value)
    # the core itself takes a 3-digit MNC (its readers do: `make oai-conformance`)
    assert COMPONENTS["amf"].config_values(config_for("amf", mnc="001"), None).common.mnc == "001"
