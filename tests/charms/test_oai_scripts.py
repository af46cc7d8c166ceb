"""What each component's steps carry: pins, build steps, render specs, generated service files."""

import base64
import os
import subprocess

import pytest
from charms_helpers import COMPONENTS, LTE_K, LTE_OP, bash_syntax_ok, config_for, plan_with_peer

from vpnaas.core.validation import InvalidValue
from vpnaas.oai import component as oai
from vpnaas.oai.lte import hss, spgw
from vpnaas.vnf import vnfscript

PINS = {
    "hss": (
        "https://github.com/simula/openairinterface-openair-hss.git",
        "dreibh/cassandra-build-fix-22oct2020",
    ),
    "mme": ("https://github.com/simula/openairinterface-openair-mme.git", "dreibh/asn1c-url-fix-14Oct2020"),
    "spgwc": ("https://github.com/simula/openairinterface-openair-spgwc.git", "2020.w36"),
    "spgwu": (
        "https://github.com/simula/openairinterface-openair-spgwu-tiny.git",
        "dreibh/tx-checksum-ip-generic-off",
    ),
    "enb": ("https://gitlab.eurecom.fr/oai/openairinterface5g.git", "v1.2.2"),
    # CN5G v2.0.0 by commit (the federation repository's release commit records them).
    "amf": ("https://gitlab.eurecom.fr/oai/cn5g/oai-cn5g-amf.git", "1386199ef610e632b00c90bfee5f7b1f5ae21632"),
    "smf": ("https://gitlab.eurecom.fr/oai/cn5g/oai-cn5g-smf.git", "f499edf0e2bd70f52ecd23fd6bfdb960b334cd69"),
    "upf": ("https://gitlab.eurecom.fr/oai/cn5g/oai-cn5g-upf.git", "93cab8f222a5d12ba8ab90fb436cce6cea4f0bff"),
    "mysql": ("https://gitlab.eurecom.fr/oai/cn5g/oai-cn5g-fed.git", "de62dc1ac5f4c134b521274e6a908608a9c5dad5"),
    "gnb": ("https://gitlab.eurecom.fr/oai/openairinterface5g.git", "v2.1.0"),
}
BUILD_COMMANDS = {
    "hss": ["cd scripts && ./build_hss_rel14 --check-installed-software --force",
            "cd scripts && ./build_hss_rel14 --clean"],
    "mme": ["cd scripts && ./build_mme --check-installed-software --force", "cd scripts && ./build_mme --clean"],
    "spgwc": ["./build/scripts/build_spgwc -I -f", "./build/scripts/build_spgwc -c -V -b Debug -j"],
    "spgwu": ["./build/scripts/build_spgwu -I -f", "./build/scripts/build_spgwu -c -V -b Debug -j"],
    "enb": ["source oaienv && cd cmake_targets && ./build_oai -I --phy_simulators",
            "source oaienv && cd cmake_targets && ./build_oai -w SIMU --UE --eNB"],
    "amf": ["cd build/scripts && ./build_amf -I -f", "cd build/scripts && ./build_amf -c -V -b Release -j"],
    "smf": ["cd build/scripts && ./build_smf -I -f", "cd build/scripts && ./build_smf -c -V -b Release -j"],
    "upf": ["cd build/scripts && ./build_upf -I -f", "cd build/scripts && ./build_upf -c -V -b Release -j"],
    "mysql": ["mysql_distribution_unit_off"],
    "gnb": ["source oaienv && cd cmake_targets && ./build_oai -I",
            "source oaienv && cd cmake_targets && ./build_oai --gNB --nrUE -w SIMU --ninja"],
}


def files_of(component, values):
    return {f["dst"]: f for f in component.render_spec(values)["files"]}


def test_default_sources_are_pinned(component_name):
    comp = COMPONENTS[component_name]
    inputs = oai.install_plan(comp, config_for(component_name))
    assert (inputs.repository, inputs.ref) == PINS[component_name]


def test_install_step_passes_the_inputs_as_arguments(component_name):
    comp = COMPONENTS[component_name]
    cfg = config_for(component_name, **{"oai-repository": "https://git.example.org/oai/fork.git",
                                        "oai-ref": "0123456789abcdef0123456789abcdef01234567"})
    step = oai.install_step(comp, oai.install_plan(comp, cfg))
    assert step.args[:6] == [component_name, comp.title, "https://git.example.org/oai/fork.git",
                             "0123456789abcdef0123456789abcdef01234567", "7200", str(len(comp.build_labels))]
    program = step.program()
    assert "fork.git" not in program, "values are arguments, never program text"
    ok, err = bash_syntax_ok(program)
    assert ok, err


def test_build_steps_run_the_pinned_build_commands(component_name, tmp_path):
    """oai_build_<c> (install.sh) with build_step and check_asn1c replaced by recorders."""
    comp = COMPONENTS[component_name]
    script = "\n".join([
        vnfscript.load("lib.sh"), vnfscript.load("oai/oai-lib.sh"), vnfscript.load("oai/install.sh"),
        'build_step() { shift 2; printf "%s|" "$@"; echo; }',
        "check_asn1c() { echo CHECK_ASN1C; }",
        'oai_build_{} "$1" "$2"'.format(component_name),
    ])
    result = subprocess.run(["bash", "-c", script, "x", str(tmp_path), str(tmp_path / "log")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stdout.decode().splitlines() if line != "CHECK_ASN1C"]
    labels = [line.split("|")[0] for line in lines]
    assert labels == list(comp.build_labels)
    words = [[w for w in line.split("|")[1:] if w] for line in lines]
    commands = [" ".join(w[2:] if w[:2] == ["bash", "-c"] else w) for w in words]
    assert commands == BUILD_COMMANDS[component_name]
    # The eNB's asn1c (cloned and built by build_oai -I into a log) is checked before the build.
    assert ("CHECK_ASN1C" in result.stdout.decode()) == (component_name == "enb")


def test_configure_step_is_valid_bash_and_secret_free(component_name):
    comp = COMPONENTS[component_name]
    values = comp.config_values(config_for(component_name), None)
    step = oai.configure_step(comp, values)
    program = step.program()
    code = program.rpartition("\n" + vnfscript.DATA_MARKER + "\n")[0] or program
    ok, err = bash_syntax_ok(code)
    assert ok, err
    for secret in (LTE_K, LTE_OP):
        assert secret not in code and secret not in step.command("ubuntu")
    assert "tee -a" not in code and ">> /etc/hosts" not in code


def test_service_settings_are_data_and_the_unit_calls_oai_service(component_name):
    comp = COMPONENTS[component_name]
    values = comp.config_values(config_for(component_name), None)
    lines = oai.service_settings(comp, values).splitlines()
    assert lines[0].startswith("#") and all(" " in line or line in ("workdir",) for line in lines[1:])
    assert "binary {}".format(comp.binary) in lines
    assert ["arg " + a for a in comp.run_argv(values)[1:]] == [line for line in lines if line.startswith("arg ")]
    with pytest.raises(InvalidValue):
        oai.settings_text([("host", "1.2.3.4 a\nnat 0.0.0.0/0")])
    unit = oai.render_unit(comp, ["wg-s6a"])
    assert "ExecStartPre=/usr/local/sbin/oai-service prestart {}".format(component_name) in unit
    assert "After=network-online.target wg-quick@wg-s6a.service" in unit
    assert "WantedBy=multi-user.target" in unit


def test_hss_configuration_values():
    comp = hss.COMPONENT
    values = comp.config_values(config_for("hss"), None)
    files = files_of(comp, values)
    cassandra = files["/etc/cassandra/cassandra.yaml"]["yaml"]
    assert cassandra == {
        "cluster_name": "HSS Cluster",
        "seeds": "172.16.6.129",
        "listen_address": "172.16.6.129",
        "rpc_address": "172.16.6.129",
        "endpoint_snitch": "GossipingPropertyFileSnitch",
    }
    assert files["/etc/cassandra/cassandra-rackdc.properties"]["content"] == "dc=DC1\nrack=RAC1\n"
    json_file = files["/usr/local/etc/oai/hss_rel14.json"]
    assert json_file["tokens"]["@REALM@"] == "ntnu.no" and json_file["tokens"]["@HSS_FQDN@"] == "hss.ntnu.no"
    assert json_file["tokens"]["@OP_KEY@"] == LTE_OP and json_file["mode"] == "600"
    # Each file gets exactly the placeholders its template has (a value for one it lacks fails).
    assert set(files["/usr/local/etc/oai/freeDiameter/acl.conf"]["tokens"]) == {"@REALM@"}
    assert "/usr/local/etc/oai/hss_rel14.conf" not in files  # read by nothing; invalid once filled in
    # The json's ossfile is conf/oss.json, relative to the folder the HSS starts in.
    assert files["/usr/local/etc/oai/conf/oss.json"]["src"].endswith("/etc/oss.json")
    assert comp.workdir == "/usr/local/etc/oai" and set(comp.work_dirs) == {"logs", "conf"}
    provision = comp.provision_spec(values)
    assert provision["args"][provision["args"].index("--key") + 1] == LTE_K
    assert provision["args"][provision["args"].index("--verbose") + 1] == "False"
    step = oai.configure_step(comp, values)
    assert set(step.secrets) == {"HSS_SPEC", "HSS_PROVISION"}
    assert ["/usr/local/etc/oai/logs", "/usr/local/etc/oai/conf"] == [
        step.args[i - 1] for f, first, n in step.calls if f == "oai_configure_dirs"
        for i in range(first, first + n)]
    settings = oai.service_settings(comp, values)
    assert "host 172.16.6.129 hss.ntnu.no hss\nhost 172.16.6.2 mme.ntnu.no mme\n" in settings
    assert "cql 172.16.6.129 600\n" in settings and "workdir /usr/local/etc/oai\n" in settings


def test_mme_configuration_values():
    comp = COMPONENTS["mme"]
    values = comp.config_values(config_for("mme", tac=601), None)
    files = files_of(comp, values)
    tokens = files["/usr/local/etc/oai/mme.conf"]["tokens"]
    fd = files["/usr/local/etc/oai/freeDiameter/mme_fd.conf"]["tokens"]
    assert fd["@HSS_IP_ADDR@"] == "172.16.6.129" and fd["@MME_FQDN@"] == "mme.ntnu.no"
    assert "@HSS_IP_ADDR@" not in tokens and "@HSS_REALM@" not in tokens
    assert tokens["@SGW_IPV4_ADDRESS_FOR_S11_0@"] == "172.16.1.104"
    assert tokens["@MME_IPV4_ADDRESS_FOR_S1_MME@"] == "192.168.247.102/32"
    assert tokens["@MME_INTERFACE_NAME_FOR_S1_MME@"] == {"iface_of": "192.168.247.102"}
    assert tokens["@MCC@"] == "208" and tokens["@MNC@"] == "95" and tokens["@MNC3_SGW_0@"] == "095"
    assert (tokens["@TAC_0@"], tokens["@TAC_1@"], tokens["@TAC_2@"]) == ("601", "602", "603")
    assert (tokens["@TAC-LB_SGW_0@"], tokens["@TAC-HB_SGW_0@"]) == ("59", "02")  # 601 = 0x0259
    assert tokens["@MME_GID@"] == "32768" and tokens["@MME_CODE@"] == "3"


SPGWC_POOLS = """\
    IP_ADDRESS_POOL :
    {
      IPV4_LIST = (
                      {RANGE = "10.0.0.2 - 10.0.0.100";},   # a comment
                      {RANGE = "10.0.0.101 - 10.0.0.200";},
                      {RANGE = "10.9.0.2 - 10.9.0.200";}
                  );
    };
    APN_LIST = (
      {APN_NI = "@DEFAULT_APN@"; PDN_TYPE = "IPv4"; IPV4_POOL  = 0; IPV6_POOL = -1},
      {APN_NI = "apn1"; PDN_TYPE = "IPv4"; IPV4_POOL = 1; IPV6_POOL = -1}
    );
"""


def _render(entry, text, *argv):
    import importlib.util

    spec = importlib.util.spec_from_file_location("oai_render_file", os.path.join(vnfscript.VNF_DIR, "oai",
                                                                                   "render.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    variables = dict(a.split("=", 1) for a in argv)
    return module.render_text(dict(entry, tokens={k: v for k, v in entry.get("tokens", {}).items()
                                                  if k in text or not k.startswith("@")}),
                              text, [], variables), module


def test_spgwc_ue_pool_edits_the_range_lines_that_exist():
    values = spgw.SPGWC.config_values(config_for("spgwc", **{"ue-ip-pool": "10.45.0.0/16"}), None)
    f = files_of(spgw.SPGWC, values)["/usr/local/etc/oai/spgw_c.conf"]
    assert "@UE_IP_ADDRESS_POOL@" not in f["tokens"], "the pinned template has no such placeholder"
    entry = dict(f, tokens={"@DEFAULT_APN@": "default.ntnu.no"})
    entry["edits"] = [e for e in f["edits"] if "RANGE" in e["what"] or "APN" in e["what"]]
    text, _ = _render(entry, SPGWC_POOLS)
    assert '{RANGE = "10.45.0.2 - 10.45.127.255";}' in text
    assert '{RANGE = "10.45.128.0 - 10.45.255.254";}' in text
    assert '{RANGE = "10.9.0.2 - 10.9.0.200";}' in text  # the others are left alone
    assert 'APN_NI = "internet.ntnu.no"' in text and 'APN_NI = "default.ntnu.no"' in text
    assert spgw.ue_ranges(__import__("ipaddress").ip_network("12.1.1.0/24")) == (
        "12.1.1.2 - 12.1.1.127", "12.1.1.128 - 12.1.1.254")


def test_spgwu_ue_pool_edits_network_and_snat():
    values = spgw.SPGWU.config_values(config_for("spgwu", **{"ue-ip-pool": "10.45.0.0/16"}), None)
    f = files_of(spgw.SPGWU, values)["/usr/local/etc/oai/spgw_u.conf"]
    assert f["tokens"]["@SPGWC0_IP_ADDRESS@"] == "172.55.55.101"
    assert f["tokens"]["@SGW_INTERFACE_NAME_FOR_SGI@"] == {"var": "SGI"}
    assert not {"@NETWORK_UE_IP@", "@NETWORK_UE_NAT_OPTION@"} & set(f["tokens"])
    template = ('    PDN_NETWORK_LIST  = (\n'
                '          {NETWORK_IPV4 = "10.0.0.0/24"; NETWORK_IPV6 = "2001:db8::/64"; SNAT = "yes";},\n'
                '          {NETWORK_IPV4 = "10.9.0.0/24"; SNAT = "no";}\n    );\n')
    entry = dict(f, tokens={}, edits=[e for e in f["edits"] if "UE network" in e["what"]])
    text, _ = _render(entry, template)
    assert '{NETWORK_IPV4 = "10.45.0.0/16"; NETWORK_IPV6 = "2001:db8::/64"; SNAT = "no";}' in text
    assert '{NETWORK_IPV4 = "10.9.0.0/24"; SNAT = "no";}' in text
    assert "nat 10.45.0.0/16\n" in oai.service_settings(spgw.SPGWU, values)


def test_enb_configuration_values():
    comp = COMPONENTS["enb"]
    values = comp.config_values(config_for("enb", prb=25), None)
    f = files_of(comp, values)["/usr/local/etc/oai/enb.conf"]
    assert f["src"].endswith("targets/PROJECTS/GENERIC-LTE-EPC/CONF/enb.band7.tm1.50PRB.usrpb210.conf")
    repl = {e["what"]: e["repl"] for e in f["edits"]}
    assert repl["tracking_area_code"] == r"tracking_area_code\g<1>= 600;"
    assert repl["N_RB_DL"] == r"N_RB_DL\g<1>= 25;"
    assert repl["mnc_length"] == r"mnc_length\g<1>= 2;"
    assert "192.168.247.102" in repl["mme_ip_address"]
    assert all(e.get("count") == 1 and e.get("required", True) for e in f["edits"])
    settings = oai.service_settings(comp, values)
    assert "env RFSIMULATOR=enb\n" in settings and "arg --rfsim\n" in settings
    assert "binary /opt/oai/bin/lte-softmodem\n" in settings
    assert "workdir \n" in settings  # empty: the build folder, where lte-softmodem finds the RF simulator
    # v1.2.2's build_oai builds into lte_build_oai (ran_build is later releases' name).
    assert comp.binary_candidates()[0].endswith("cmake_targets/lte_build_oai/build/lte-softmodem")


def test_peer_address_comes_from_the_relation_when_no_option_is_set():
    plan = plan_with_peer("s6a", "requirer", "172.16.6.2/32")
    values = hss.COMPONENT.config_values(config_for("hss", **{"mme-address": ""}), plan)
    assert values.addresses.peers["s6a"] == "172.16.6.2"
    values = hss.COMPONENT.config_values(config_for("hss", **{"mme-address": "172.16.6.9"}), plan)
    assert values.addresses.peers["s6a"] == "172.16.6.9"


def test_peer_address_missing_everywhere_is_a_clear_error():
    with pytest.raises(InvalidValue, match="mme-address: not set and the s6a relation has no peer service address"):
        hss.COMPONENT.config_values(config_for("hss", **{"mme-address": ""}), None)


def test_step_results_reads_the_shared_report():
    report = vnfscript.parse("PROGRESS 1/2 a\nNOTE n1\nRESULT state built\nRESULT commit abc\nPROGRESS 2/2 b\nDONE\n")
    assert oai.step_results(report) == oai.StepResults(results={"state": "built", "commit": "abc"}, notes=["n1"],
                                                       progress="2/2 b")
    with pytest.raises(vnfscript.StepError, match="boom"):
        vnfscript.parse("PROGRESS 1/2 a\nERROR boom\n")


def test_submodule_pins_are_what_oais_build_of_the_ref_got(component_name):
    """HSS and MME: freeDiameter at 673ea500 (master since 2020-09-17, 'Enable
    DISABLE_PEER_EXPIRY'), as OAI's helpers pulled it, not the 2017 commit the ref records; the
    pins travel as one argument of the install step, and only with the pinned default ref."""
    comp = COMPONENTS[component_name]
    step = oai.install_step(comp, oai.install_plan(comp, config_for(component_name)))
    pins = dict(p.split("=") for p in step.args[10].split())
    fd = {"build/git_submodules/freeDiameter": "673ea5000420427fd4eaf5f82cd8c3d28c8ffc77"}
    if component_name == "hss":
        assert len(pins) == 6 and fd.items() <= pins.items()
        assert pins["build/git_submodules/cpp-driver"] == "c97dd437c3730421f006dc4f2e36b533e405d357"  # 2.15.0
    else:
        assert pins == (fd if component_name == "mme" else {})
    assert base64.b64decode(step.args[11]).decode() == vnfscript.load("oai/pin-submodules.sh")
    other = config_for(component_name, **{"oai-ref": "develop"})
    assert oai.install_step(comp, oai.install_plan(comp, other)).args[10] == ""
