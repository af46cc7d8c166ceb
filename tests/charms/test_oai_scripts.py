"""The install/configure/start scripts of each component: content, pins, markers, bash syntax."""

import base64
import json
import re

import pytest
from charms_helpers import (
    COMPONENTS,
    LTE_K,
    LTE_OP,
    bash_syntax_ok,
    config_for,
    decoded_assignments,
    plan_with_peer,
)

from vpnaas import oai, oai_hss, oai_spgw
from vpnaas.validation import InvalidValue

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
}
BUILD_COMMANDS = {
    "hss": ["./build_hss_rel14 --check-installed-software --force", "./build_hss_rel14 --clean"],
    "mme": ["./build_mme --check-installed-software --force", "./build_mme --clean"],
    "spgwc": ["./build/scripts/build_spgwc -I -f", "./build/scripts/build_spgwc -c -V -b Debug -j"],
    "spgwu": ["./build/scripts/build_spgwu -I -f", "./build/scripts/build_spgwu -c -V -b Debug -j"],
    "enb": ["./build_oai -I --phy_simulators", "./build_oai -w SIMU --UE --eNB"],
}


def specs_of(script):
    """The renderer specs (JSON) carried by a configure script."""
    return [json.loads(text) for text in decoded_assignments(script) if text.startswith("{")]


def all_files(script):
    return {f["dst"]: f for spec in specs_of(script) for f in spec.get("files", [])}


def test_default_sources_are_pinned(component_name):
    comp = COMPONENTS[component_name]
    inputs = oai.install_plan(comp, config_for(component_name))
    assert (inputs["repository"], inputs["ref"]) == PINS[component_name]
    assert inputs["ref"] != "master"


def test_install_body_fetches_the_exact_ref_and_builds(component_name):
    comp = COMPONENTS[component_name]
    body = oai.install_body(comp, oai.install_plan(comp, config_for(component_name)))
    repo, ref = PINS[component_name]
    assert "REPO={}; REF={}".format(repo, ref) in body or "REPO={}; REF='{}'".format(repo, ref) in body
    assert 'fetch_source "$SRC" "$REPO" "$REF"' in body
    assert "SRC=/opt/oai/{}".format(component_name) in body
    for command in BUILD_COMMANDS[component_name]:
        assert command in body
    # Waits before apt: cloud-init (bounded) and the dpkg lock; progress lines for the display.
    assert "wait_cloud_init {}".format(oai.CLOUD_INIT_TIMEOUT) in body
    assert 'timeout "$limit" cloud-init status --wait' in oai.LIBRARY
    assert "DPkg::Lock::Timeout=600" in oai.LIBRARY
    assert re.search(r'progress "1/\d+ waiting for cloud-init"', body)
    assert (
        body.index("wait_cloud_init 1800")
        < body.index('fetch_source "$SRC"')
        < body.index(BUILD_COMMANDS[component_name][0])
    )


def test_install_marker_makes_a_rerun_a_no_op(component_name):
    comp = COMPONENTS[component_name]
    body = oai.install_body(comp, oai.install_plan(comp, config_for(component_name)))
    marker = "/var/lib/vpnaas/oai/{}.built".format(component_name)
    assert "BUILT={}".format(marker) in body
    check = body.index('"$REPO $REF"')
    assert check < body.index("wait_cloud_init {}".format(oai.CLOUD_INIT_TIMEOUT)), (
        "marker checked before any work"
    )
    assert 'out "RESULT state unchanged"' in body
    # The marker is written last, atomically, with the commit that was built.
    assert body.rindex('mv -f "$BUILT.tmp" "$BUILT"') > body.index(BUILD_COMMANDS[component_name][-1])


def test_install_override_of_repository_and_ref(component_name):
    comp = COMPONENTS[component_name]
    cfg = config_for(
        component_name,
        **{
            "oai-repository": "https://git.example.org/oai/fork.git",
            "oai-ref": "0123456789abcdef0123456789abcdef01234567",
        },
    )
    body = oai.install_body(comp, oai.install_plan(comp, cfg))
    assert "REPO=https://git.example.org/oai/fork.git; REF=0123456789abcdef0123456789abcdef01234567" in body


def test_install_script_runs_detached_and_is_valid_bash(component_name):
    comp = COMPONENTS[component_name]
    inputs = oai.install_plan(comp, config_for(component_name))
    script = oai.install_script(comp, inputs)
    assert "run_detached install-{} 7200 ".format(component_name) in script
    # The body travels as one base64 argument of run_detached.
    b64 = re.search(r"run_detached \S+ \d+ '?([A-Za-z0-9+/=]+)'?", script).group(1)
    assert base64.b64decode(b64).decode() == oai.install_body(comp, inputs)
    for text in (script, oai.install_body(comp, inputs)):
        ok, err = bash_syntax_ok(text)
        assert ok, err


def test_configure_script_is_valid_bash_and_secret_free(component_name):
    comp = COMPONENTS[component_name]
    values = comp.config_values(config_for(component_name), None)
    script = oai.configure_script(comp, values)
    ok, err = bash_syntax_ok(script)
    assert ok, err
    assert LTE_K not in script and LTE_OP not in script
    assert "tee -a" not in script and ">> /etc/hosts" not in script
    assert "oai-install has not completed" in script  # refuses to configure an unbuilt VNF
    assert "date -u +%FT%TZ > /var/lib/vpnaas/oai/{}.configured".format(component_name) in script


def test_generated_unit_prestart_run_and_setup_are_valid_bash(component_name):
    comp = COMPONENTS[component_name]
    values = comp.config_values(config_for(component_name), None)
    for text in (
        oai.render_prestart(comp, ["wg-s6a", "wg-s11"], 120),
        oai.render_setup_script(comp, values),
        oai.render_run_script(comp, values),
        "out(){ :; }\nhas_handshake(){ :; }\n" + oai.gate_script(comp, ["wg-s6a"], "started", 120),
    ):
        ok, err = bash_syntax_ok(text)
        assert ok, err
    unit = oai.render_unit(comp, ["wg-s6a"])
    assert "ExecStartPre=/usr/local/sbin/oai-{}-prestart".format(component_name) in unit
    assert "After=network-online.target wg-quick@wg-s6a.service" in unit
    assert "WantedBy=multi-user.target" in unit


def test_hss_configuration_values():
    comp = oai_hss.COMPONENT
    values = comp.config_values(config_for("hss"), None)
    script = oai.configure_script(comp, values)
    files = all_files(script)
    cassandra = files["/etc/cassandra/cassandra.yaml"]["yaml"]
    assert cassandra == {
        "cluster_name": "HSS Cluster",
        "seeds": "172.16.6.129",
        "listen_address": "172.16.6.129",
        "rpc_address": "172.16.6.129",
        "endpoint_snitch": "GossipingPropertyFileSnitch",
    }
    assert files["/etc/cassandra/cassandra-rackdc.properties"]["content"] == "dc=DC1\nrack=RAC1\n"
    tokens = files["/usr/local/etc/oai/hss_rel14.json"]["tokens"]
    assert tokens["@REALM@"] == "ntnu.no" and tokens["@HSS_FQDN@"] == "hss.ntnu.no"
    assert tokens["@OP_KEY@"] == LTE_OP  # only inside the base64 spec, never in clear text
    assert files["/usr/local/etc/oai/hss_rel14.json"]["mode"] == "600"
    # Bounded CQL wait with progress, no fixed sleep; schema once; provisioning via stdin.
    assert "until cqlsh -e 'SHOW VERSION' \"$IP\"" in script
    assert "Cassandra does not answer CQL on $IP after 600s" in script
    assert "DESCRIBE KEYSPACE vhss" in script
    provision = [json.loads(t) for t in decoded_assignments(script) if '"script"' in t][0]
    assert provision["args"][provision["args"].index("--key") + 1] == LTE_K
    assert provision["args"][provision["args"].index("--imsi-first") + 1] == "208951234500000"
    assert provision["args"][provision["args"].index("--verbose") + 1] == "False"
    assert 'make_certs.sh hss "$REALM"' in script
    assert "--onlyloadkey >/dev/null 2>&1" in script
    setup = oai.render_setup_script(comp, values)
    assert "172.16.6.129 hss.ntnu.no hss # vpnaas-oai" in setup and "172.16.6.2 mme.ntnu.no mme" in setup


def test_mme_configuration_values():
    comp = COMPONENTS["mme"]
    values = comp.config_values(config_for("mme", tac=601), None)
    tokens = all_files(oai.configure_script(comp, values))["/usr/local/etc/oai/mme.conf"]["tokens"]
    assert tokens["@HSS_IP_ADDR@"] == "172.16.6.129"
    assert tokens["@SGW_IPV4_ADDRESS_FOR_S11_0@"] == "172.16.1.104"
    assert tokens["@MME_IPV4_ADDRESS_FOR_S1_MME@"] == "192.168.247.102/32"
    assert tokens["@MME_INTERFACE_NAME_FOR_S1_MME@"] == {"iface_of": "192.168.247.102"}
    assert tokens["@MCC@"] == "208" and tokens["@MNC@"] == "95" and tokens["@MNC3_SGW_0@"] == "095"
    assert (tokens["@TAC_0@"], tokens["@TAC_1@"], tokens["@TAC_2@"]) == ("601", "602", "603")
    assert (tokens["@TAC-LB_SGW_0@"], tokens["@TAC-HB_SGW_0@"]) == ("59", "02")  # 601 = 0x0259
    assert tokens["@MME_GID@"] == "32768" and tokens["@MME_CODE@"] == "3"


def test_spgwc_configuration_values():
    values = oai_spgw.SPGWC.config_values(config_for("spgwc"), None)
    f = all_files(oai.configure_script(oai_spgw.SPGWC, values))["/usr/local/etc/oai/spgw_c.conf"]
    assert f["tokens"]["@UE_IP_ADDRESS_POOL@"] == "12.1.1.2 - 12.1.1.254"
    assert f["tokens"]["@DEFAULT_APN@"] == "default.ntnu.no"
    assert f["tokens"]["@DEFAULT_DNS_IPV4_ADDRESS@"] == "10.1.1.1"
    what = {e["what"]: e for e in f["edits"]}
    assert what["the address of SGW_INTERFACE_NAME_FOR_S11"]["required_if_shared"] == "172.16.1.104"
    assert 'APN_NI = "internet.ntnu.no"' == what["the second APN"]["repl"]


def test_spgwu_configuration_values():
    values = oai_spgw.SPGWU.config_values(config_for("spgwu"), None)
    script = oai.configure_script(oai_spgw.SPGWU, values)
    spec = json.loads(re.search(r"SPGWU_JSON='([^']+)'", script).group(1))
    edits = {e["what"]: e for e in spec["files"][0]["edits"]}
    assert edits["SPGW-C_LIST"]["repl"].endswith('{ IPV4_ADDRESS="172.55.55.101"; }')
    setup = oai.render_setup_script(oai_spgw.SPGWU, values)
    assert "net.ipv4.ip_forward=1" in setup
    assert "iptables -t nat -C POSTROUTING -s 12.1.1.0/24" in setup  # checked before appended


def test_enb_configuration_values():
    comp = COMPONENTS["enb"]
    values = comp.config_values(config_for("enb", prb=25), None)
    f = all_files(oai.configure_script(comp, values))["/usr/local/etc/oai/enb.conf"]
    assert f["src"].endswith("targets/PROJECTS/GENERIC-LTE-EPC/CONF/enb.band7.tm1.50PRB.usrpb210.conf")
    repl = {e["what"]: e["repl"] for e in f["edits"]}
    assert repl["tracking_area_code"] == r"tracking_area_code\g<1>= 600;"
    assert repl["N_RB_DL"] == r"N_RB_DL\g<1>= 25;"
    assert repl["mnc_length"] == r"mnc_length\g<1>= 2;"
    assert "192.168.247.102" in repl["mme_ip_address"]
    assert repl["ENB_IPV4_ADDRESS_FOR_S1U"] == r'ENB_IPV4_ADDRESS_FOR_S1U\g<1>= "192.168.248.57/32";'
    assert all(e.get("count") == 1 and e.get("required", True) for e in f["edits"])
    run = oai.render_run_script(comp, values)
    assert "export RFSIMULATOR=enb" in run and "--rfsim" in run and "/opt/oai/bin/lte-softmodem" in run
    assert comp.binary_candidates()[0].endswith("cmake_targets/ran_build/build/lte-softmodem")


def test_peer_address_comes_from_the_relation_when_no_option_is_set():
    plan = plan_with_peer("s6a", "requirer", "172.16.6.2/32")
    values = oai_hss.COMPONENT.config_values(config_for("hss", **{"mme-address": ""}), plan)
    assert values["mme_ip"] == "172.16.6.2"
    # The explicit option wins (variants without tunnels, or an operator override).
    values = oai_hss.COMPONENT.config_values(config_for("hss", **{"mme-address": "172.16.6.9"}), plan)
    assert values["mme_ip"] == "172.16.6.9"


def test_peer_address_missing_everywhere_is_a_clear_error():
    with pytest.raises(
        InvalidValue, match="mme-address: not set and the s6a relation has no peer service address"
    ):
        oai_hss.COMPONENT.config_values(config_for("hss", **{"mme-address": ""}), None)
