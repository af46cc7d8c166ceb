"""The 5G standalone components: the generated CN5G files, MySQL's init file, the gNB's and the
nrUE's edits, the labelled service addresses, and where each secret may go."""
import base64
import importlib.util
import ipaddress
import os

import oai_tree
import pytest
import yaml
from charms_helpers import COMPONENTS, DB_PASSWORD, NR_K, NR_OP, config_for

from vpnaas.core import model, refpoints
from vpnaas.core.validation import InvalidValue
from vpnaas.oai import component as oai
from vpnaas.oai.cn5g import common as cn5g_common
from vpnaas.oai.cn5g import nrue
from vpnaas.vnf import vnfscript

HERE = os.path.dirname(os.path.abspath(__file__))
CN5G = ("amf", "smf", "upf")


def rendered(name, **overrides):
    """The NF's generated file with its interface placeholders resolved as on a VNF whose service
    addresses carry their reference point's label."""
    comp = COMPONENTS[name]
    values = comp.config_values(config_for(name, **overrides), None)
    entry = comp.render_spec(values)["files"][0]
    labels = {ip: "vpnaas0:" + rp for rp, ip in comp.own_addresses(values).items()}
    text = entry["content"]
    for token, value in entry["tokens"].items():
        text = text.replace(token, labels[value["iface_of"]] if "iface_of" in value else "ens3")
    return comp, values, entry, yaml.safe_load(text)


@pytest.mark.parametrize("name", CN5G)
def test_each_nf_gets_one_yaml_file_with_the_mini_scenario(name):
    comp, values, entry, doc = rendered(name)
    assert entry["dst"] == "/usr/local/etc/oai/{}.yaml".format(name) and entry["mode"] == "600"
    assert comp.run_argv(values) == ["/opt/oai/bin/" + name, "-c", entry["dst"], "-o"]
    assert doc["register_nf"] == {"general": False} and doc["http_version"] == 1
    own = doc["nfs"][name]
    # Every interface it binds is named by the label of that address; a peer's entry names none.
    for rp in comp.interfaces:
        assert "vpnaas0:" + rp in str(own)
    for peer, entry_ in doc["nfs"].items():
        if peer != name:
            assert "interface_name" not in str(entry_) and ipaddress.ip_address(entry_["host"])
    assert ipaddress.ip_address(own["host"])   # IP literals: IP node ids on N4, no DNS


def test_the_amf_reads_mysql_and_quotes_its_identifiers():
    _comp, _values, entry, doc = rendered("amf", **{"amf-region-id": "01", "sd": "00007B"})
    assert doc["database"]["host"] == "172.16.40.131" and doc["database"]["password"] == DB_PASSWORD
    amf = doc["amf"]
    assert amf["support_features_options"]["enable_simple_scenario"] is True
    # "01" stays text: yaml-cpp and PyYAML alike would read an unquoted 01 as the number 1.
    assert amf["served_guami_list"] == [{"mcc": "208", "mnc": "95", "amf_region_id": "01", "amf_set_id": "001",
                                         "amf_pointer": "01"}]
    assert amf["plmn_support_list"] == [{"mcc": "208", "mnc": "95", "tac": 600,
                                         "nssai": [{"sst": 1, "sd": "00007b"}]}]
    assert '"01"' in entry["content"] and doc["nfs"]["smf"]["host"] == "172.16.30.133"


def test_the_smf_and_upf_serve_the_same_session():
    _c, _v, _e, smf = rendered("smf")
    _c, _v, _e, upf = rendered("upf")
    assert smf["dnns"] == upf["dnns"] == [{"dnn": "oai", "pdu_session_type": "IPV4", "ipv4_subnet": "12.1.1.0/24"}]
    assert smf["smf"]["upfs"][0]["host"] == upf["nfs"]["upf"]["host"] == "172.16.20.134"
    assert upf["upf"]["smfs"] == [{"host": "172.16.20.133"}]
    assert smf["nfs"]["smf"]["n4"]["interface_name"] == "vpnaas0:n4"
    assert smf["smf"]["ue_mtu"] == 1376 and smf["smf"]["support_features"] == {
        "use_local_subscription_info": True, "use_local_pcc_rules": True}
    assert upf["upf"]["support_features"] == {"enable_bpf_datapath": False, "enable_snat": False}
    assert upf["nfs"]["upf"]["n6"] == {"interface_name": "ens3"}
    comp = COMPONENTS["upf"]
    values = comp.config_values(config_for("upf", **{"n6-interface": ""}), None)
    assert ("nat", "12.1.1.0/24") in comp.setup_settings(values)   # the default route's interface


@pytest.mark.parametrize("option,value", [("dnn", "oai;x"), ("sd", "0x0001"), ("sst", 256),
                                          ("session-ambr-ul", "lots"), ("ue-mtu", 9000)])
def test_bad_5g_values_are_refused(option, value):
    with pytest.raises(InvalidValue, match=option):
        COMPONENTS["smf"].config_values(config_for("smf", **{option: value}), None)


@pytest.mark.parametrize("password", ["short", "has space in it", "quote'ch4racters", "a" * 65, "tok@en@xyz1234"])
def test_a_database_password_outside_the_grammar_is_refused_without_showing_it(password):
    with pytest.raises(InvalidValue) as e:
        COMPONENTS["amf"].config_values(config_for("amf", **{"db-password": password}), None)
    assert "db-password" in str(e.value) and password not in str(e.value)


@pytest.mark.parametrize("name", ["amf", "mysql"])
def test_secrets_travel_in_the_data_section_only(name):
    comp = COMPONENTS[name]
    values = comp.config_values(config_for(name), None)
    step = oai.configure_step(comp, values)
    code = step.program().rpartition("\n" + vnfscript.DATA_MARKER + "\n")[0]
    sent = [DB_PASSWORD] + ([NR_K, oai.opc(NR_K, NR_OP)] if name == "mysql" else [])
    data = repr({k: base64.b64decode(v).decode() for k, v in step.secrets.items()})
    for secret in sent:
        assert secret not in code and all(secret not in a for a in step.args)
        assert secret in data
    # OP itself never leaves the charm: MySQL stores OPc.
    assert NR_OP not in data + code + " ".join(step.args)
    assert set(comp.secrets(values)) == set(sent + ([NR_OP] if name == "mysql" else []))


def load_init():
    path = os.path.join(vnfscript.VNF_DIR, "oai", "mysql-init.py")
    spec = importlib.util.spec_from_file_location("mysql_init", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_mysql_init_file_takes_the_table_from_the_dump_and_none_of_its_rows(tmp_path):
    init = load_init()
    comp = COMPONENTS["mysql"]
    values = comp.config_values(config_for("mysql", **{"number-of-users": 3}), None)
    spec = dict(comp.init_spec(values), schema=str(tmp_path / "dump.sql"), dst=str(tmp_path / "init.sql"))
    lines = init.statements(spec, oai_tree.USERS_DUMP)
    assert lines[0] == "CREATE DATABASE IF NOT EXISTS `oai_db`;"
    assert lines[1].startswith("CREATE TABLE IF NOT EXISTS `oai_db`.`users` (`imsi` varchar(15) NOT NULL,")
    assert lines[1].endswith(") ENGINE=MyISAM DEFAULT CHARSET=latin1;")
    assert "001010000000001" not in "".join(lines), "a row of the dump"
    assert lines[2] == "CREATE USER IF NOT EXISTS 'oai'@'172.16.40.132' IDENTIFIED BY '{}';".format(DB_PASSWORD)
    assert lines[4] == "GRANT SELECT, UPDATE ON `oai_db`.`users` TO 'oai'@'172.16.40.132';"
    opc = oai.opc(NR_K, NR_OP)
    assert "('208951234500002', 0x{}, 32, 0x{}, 0x{})".format(NR_K, "0" * 32, opc) in lines[5]
    assert lines[5].endswith("ON DUPLICATE KEY UPDATE `key` = new.`key`, `OPc` = new.`OPc`;")
    assert "sqn` =" not in lines[5]      # the SQN the AMF advanced is kept
    assert all("\n" not in line and "--" not in line for line in lines)   # one statement a line
    with pytest.raises(init.InitError, match="no CREATE TABLE `users`"):
        init.statements(spec, "CREATE TABLE `apn` (\n  `id` int\n);\n")


def test_mysql_listens_on_its_db_address_only():
    comp = COMPONENTS["mysql"]
    values = comp.config_values(config_for("mysql"), None)
    cnf = comp.render_spec(values)["files"][0]
    assert cnf["dst"] == "/etc/mysql/mysql.conf.d/zz-vpnaas.cnf"
    assert "bind-address = 172.16.40.131\n" in cnf["content"]
    assert "init-file = /etc/mysql/vpnaas-init.sql\n" in cnf["content"]
    assert comp.setup_settings(values) == [("dir", "/run/mysqld mysql")]
    with pytest.raises(InvalidValue, match="leave the PLMN"):
        comp.config_values(config_for("mysql", **{"imsi-first": "208959999999999", "number-of-users": 2}), None)


def test_the_gnb_edits_and_the_nrue_sim(tmp_path):
    comp = COMPONENTS["gnb"]
    values = comp.config_values(config_for("gnb", sd="000001"), None)
    entry = comp.render_spec(values)["files"][0]
    template = oai_tree.template(entry)
    from oai_conformance import checks

    assert checks.edit_counts(template, entry["edits"]) == []
    assert comp.run_argv(values)[1:] == ["-O", "/usr/local/etc/oai/gnb.conf", "--gNBs.[0].min_rxtxtime", "6",
                                         "--rfsim", "--sa"]
    ue = nrue.values(config_for("gnb", **{"ue-imsi": "208951234500001", "ue-k": NR_K, "ue-op": NR_OP}))
    assert ue.opc == oai.opc(NR_K, NR_OP)
    sim = nrue.sim_spec(ue)["files"][0]
    assert sim["mode"] == "600" and sim["dst"] == nrue.SIM_FILE
    step = nrue.attach_step(ue)
    assert NR_K not in step.program().rpartition(vnfscript.DATA_MARKER)[0] and NR_K not in " ".join(step.args)
    assert step.args[-len(nrue.argv()):] == nrue.argv() and "ffffff" in str(sim["edits"])


def test_labelled_reference_points_label_their_addresses_and_the_eps_stays_unlabelled():
    plan = model.Plan()
    for ep, addrs in (("n2", ["192.168.250.132/32"]), ("s1c", ["192.168.247.102/32"]),
                      ("n11", ["172.16.30.132/32", "fd00::1/128"])):
        plan.devices.append(model.Device(ep, 1, ipaddress.ip_interface("10.250.9.1/30"), 1420, 25,
                                         [ipaddress.ip_interface(a) for a in addrs], "h"))
    assert plan.service_address_args() == ["192.168.250.132/32=n2", "192.168.247.102/32",
                                           "172.16.30.132/32=n11", "fd00::1/128"]
    assert all(len("lo:vpnaas-" + label) <= 15 for label in refpoints.LABELS.values())


def test_cn5g_yaml_writes_what_oai_writes():
    text = cn5g_common.to_yaml({"a": cn5g_common.YES, "b": [{"c": "01", "d": []}, "e"], "f": {"g": 2}})
    assert text.splitlines()[1:] == ['a: yes', 'b:', '  - c: "01"', '    d: []', '  - "e"', 'f:', '  g: 2']
    assert yaml.safe_load(text) == {"a": True, "b": [{"c": "01", "d": []}, "e"], "f": {"g": 2}}


NRUE_STUB = """#!/bin/bash
printf '%s\\n' "$(basename "$0") $*" >> "{calls}"
"""


def test_nrue_sh_registers_through_the_gnb_and_keeps_the_keys_off_the_command_line(tmp_path):
    """nrue.sh with stand-ins: the nrUE (gets its address after a moment) and ip."""
    import subprocess

    from charms_helpers import run_step

    build, stubs, calls, state = tmp_path / "build", tmp_path / "stubs", tmp_path / "calls", tmp_path / "state"
    for d in (build, stubs, state, tmp_path / "run", tmp_path / "log", tmp_path / "src"):
        d.mkdir(parents=True)
    attached = tmp_path / "attached"
    (build / "nr-uesoftmodem").write_text(NRUE_STUB.format(calls=calls) + 'test -s "$2" || exit 1\nsleep 1\n'
                                          'touch "{}"\nexec sleep 60\n'.format(attached))
    (stubs / "ip").write_text('#!/bin/bash\n[ -e "{}" ] && echo "9: oaitun_ue1    inet 12.1.1.2/24 scope global"\n'
                              .format(attached))
    for f in (stubs / "ip", build / "nr-uesoftmodem"):
        os.chmod(str(f), 0o755)
    gnb = subprocess.Popen(["bash", "-c", "exec -a nr-softmodem sleep 60"])  # "the gNB is running"
    (tmp_path / "run" / "oai-gnb.pid").write_text(str(gnb.pid))
    ue = nrue.values(config_for("gnb", **{"ue-imsi": "208951234500001", "ue-k": NR_K, "ue-op": NR_OP}))
    spec = nrue.sim_spec(ue)
    template = tmp_path / "src" / "ue.conf"
    template.write_text(oai_tree.template(spec["files"][0]))
    spec["files"][0].update(src=str(template), dst=str(state / "nrue.conf"))
    step = vnfscript.Step([oai.LIB, "oai/ue.sh", "oai/nrue.sh"]).secret("UE_SPEC", oai.b64_json(spec))
    step.call("oai_nrue_attach", oai.shipped_b64("oai/render.py"), str(build), str(state / "nrue.conf"), ue.imsi, 20,
              *nrue.argv())
    env = dict(os.environ, OAI_STATE_DIR=str(state), OAI_LOG_DIR=str(tmp_path / "log"),
               OAI_RUN_DIR=str(tmp_path / "run"), OAI_INIT="direct")
    try:
        rc, out, err = run_step(step, env=env, stubs=stubs, timeout=20)
        assert rc == 0, out + err
        assert "RESULT imsi 208951234500001" in out and "RESULT ip 12.1.1.2" in out
        sim = (state / "nrue.conf").read_text()
        assert oct(os.stat(str(state / "nrue.conf")).st_mode & 0o777) == "0o600"
        assert 'key = "{}";'.format(NR_K) in sim and 'opc= "{}";'.format(oai.opc(NR_K, NR_OP).upper()) in sim
        called = calls.read_text()
        assert called.startswith("nr-uesoftmodem -O {} -r 106 --numerology 1 --band 78 -C 3619200000 --sa --rfsim"
                                 .format(state / "nrue.conf"))
        assert NR_K not in called and NR_K not in out
    finally:
        gnb.kill()
        gnb.wait()
        pid = tmp_path / "run" / "oai-ue.pid"
        if pid.exists():  # the UE stand-in this test started, by its id
            subprocess.run(["kill", "--", "-" + pid.read_text().strip()], stderr=subprocess.DEVNULL)
