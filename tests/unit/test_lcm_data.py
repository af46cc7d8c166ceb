"""What the emulated LCM reads from a VNFD (testbed/emulators/lcm_data.py), point by point against the LCM 19
function it follows (seltonlucas/osm-capk@35936ae, LCM/osm_lcm; each test names it), on the
bundle's own VNFDs."""
import copy

import pytest
import yaml
from lcm_fakes import specs

from testbed.emulators import lcm_data

EPS, SA = specs("eps_wg"), specs("sa_wg")
EVERY_VNF = [(v, m) for v, group in (("eps_wg", EPS), ("sa_wg", SA)) for m in group]


def vnfd(member, group=EPS):
    return copy.deepcopy(group[member].vnfd)


def test_get_configuration_finds_an_entry_by_its_id_only():
    """data_utils/vnfd.py get_configuration: the day1-2 entry whose id is the one asked for."""
    spgwc, spgwu = vnfd("spgwc"), vnfd("spgwu")
    assert lcm_data.get_configuration(spgwc, "oai-spgwc")["id"] == "oai-spgwc"
    # The SPGW-U's only entry is VDU-level: asked with the VNFD's id (as ns.py update() does), None.
    assert lcm_data.get_configuration(spgwu, "oai-spgwu") is None
    assert lcm_data.get_configuration(spgwu, "spgwu")["id"] == "spgwu"
    del spgwc["df"][0]["lcm-operations-configuration"]
    assert lcm_data.get_configuration(spgwc, "oai-spgwc") is None


@pytest.mark.parametrize("variant, member", EVERY_VNF)
def test_heals_own_parameters_cannot_map_any_config_primitive_of_the_bundle(variant, member):
    """ns.py _map_primitive_params with what heal_N2VC passes (the request's vdu entry and
    rw_mgmt_ip): every `<name>` of the VNF's additionalParams is "not provided"."""
    doc = (EPS if variant == "eps_wg" else SA)[member].vnfd
    entry = lcm_data.get_configuration(doc, doc["id"]) or lcm_data.get_configuration(doc, doc["vdu"][0]["id"])
    config = next(p for p in entry["initial-config-primitive"] if p["name"] == "config")
    heal = {"vdu-id": doc["vdu"][0]["name"], "count-index": 0, "run-day1": True, "rw_mgmt_ip": "198.18.0.9"}
    with pytest.raises(lcm_data.LcmException, match=r"Parameter <\w+> needed to execute primitive config not provided"):
        lcm_data.map_primitive_params(config, {}, heal)


def test_instantiations_parameters_map_the_same_primitive():
    """At instantiation (ns.py instantiate(): {"OSM": get_osm_params(...)} + additionalParamsForVnf +
    rw_mgmt_ip) the same primitive maps; an INTEGER is converted, a dict becomes YAML flow text."""
    doc = EPS["spgwu"].vnfd
    config = next(p for p in doc["df"][0]["lcm-operations-configuration"]["operate-vnf-op-config"]["day1-2"][0]
                  ["initial-config-primitive"] if p["name"] == "config")
    names = [p["value"][1:-1] for p in config["parameter"] if str(p.get("value", "")).startswith("<")]
    params = {n: "x" for n in names}
    params.update(tac="7", slice_5qi="82", OSM={"count_index": 1, "vdu_id": "spgwu"}, rw_mgmt_ip="198.18.0.9")
    out = lcm_data.map_primitive_params(config, {}, params)
    assert out["tac"] == 7 and out["ssh-hostname"] == "198.18.0.9" and out["ssh-username"] == "ubuntu"
    assert out["slice-5qi"] == 82
    assert yaml.safe_load(out["osm-instance"]) == {"count_index": 1, "vdu_id": "spgwu"}
    assert out["osm-instance"].startswith("{")


def test_map_primitive_params_rules():
    """ns.py _map_primitive_params: the request's value first, a parameter without any value is
    an error, "!!yaml " is stripped, BOOLEAN is anything but "false", a bad INTEGER an error,
    ns_config_info added to config."""
    prim = {"name": "config", "parameter": [
        {"name": "a", "default-value": "d"}, {"name": "b", "value": "!!yaml [1, 2]"},
        {"name": "c", "data-type": "BOOLEAN", "value": "False"}, {"name": "e", "data-type": "BOOLEAN", "value": "no"}]}
    out = lcm_data.map_primitive_params(prim, {"a": "given"}, {"ns_config_info": "{}"})
    assert out == {"a": "given", "b": "[1, 2]", "c": False, "e": True, "ns_config_info": "{}"}
    with pytest.raises(lcm_data.LcmException, match="Parameter x needed to execute primitive p not provided"):
        lcm_data.map_primitive_params({"name": "p", "parameter": [{"name": "x"}]}, {}, {})
    with pytest.raises(lcm_data.LcmException, match="Parameter n of primitive p must be integer"):
        lcm_data.map_primitive_params({"name": "p", "parameter": [{"name": "n", "data-type": "INTEGER",
                                                                   "value": "seven"}]}, {}, {})


def test_initial_primitives_sorted_by_seq_with_no_verify_for_a_vnf():
    """data_utils/vnfd.py get_ee_sorted_initial_config_primitive_list: seq order, this EE's only;
    verify-ssh-credentials only for a record with "ssh-public-key" (never written by LCM 19);
    an NS record gets a config primitive."""
    prims = [{"seq": 3, "name": "c"}, {"seq": 1, "name": "config"}, {"seq": 2, "name": "b"},
             {"seq": 4, "name": "other-ee", "execution-environment-ref": "other"}]
    vnf = {"member-vnf-index": "spgwc"}
    assert [p["name"] for p in lcm_data.sorted_initial_primitives(prims, vnf, "proxy-ee")] == ["config", "b", "c"]
    with_key = dict(vnf, **{"ssh-public-key": "ssh-ed25519 AAAA"})
    assert [p["name"] for p in lcm_data.sorted_initial_primitives(prims, with_key, "proxy-ee")] == [
        "config", "verify-ssh-credentials", "b", "c"]
    assert [p["name"] for p in lcm_data.sorted_initial_primitives([], {"member-vnf-index": None}, None)] == ["config"]


def test_software_version_defaults_to_1_0():
    """data_utils/vnfd.py find_software_version."""
    doc = vnfd("mme")
    assert lcm_data.find_software_version(doc) == "1.0"
    del doc["software-version"]
    assert lcm_data.find_software_version({"vnfd": doc}) == "1.0"
    assert lcm_data.find_software_version({"software-version": "2.1"}) == "2.1"


def test_vca_type_follows_get_vca_info():
    """lcm_utils.py get_vca_info: juju with a charm is a proxy charm unless proxy is false or the
    cloud is k8s; helm-chart is helm-v3."""
    assert lcm_data.vca_type({"juju": {"charm": "a.charm", "proxy": True}}) == "lxc_proxy_charm"
    assert lcm_data.vca_type({"juju": {"charm": "a.charm"}}) == "lxc_proxy_charm"
    assert lcm_data.vca_type({"juju": {"charm": "a.charm", "proxy": False}}) == "native_charm"
    assert lcm_data.vca_type({"juju": {"charm": "a.charm", "cloud": "k8s"}}) == "k8s_proxy_charm"
    assert lcm_data.vca_type({"helm-chart": "c"}) == "helm-v3" and lcm_data.vca_type({"script": 1}) is None


def test_vca_records_per_instance_vnf_level_first():
    """ns.py instantiate()/scale(): per instance, the VNF-level entry's EEs, then each VDU's; the
    testbed's application runs the first (bundle.descriptors.day12's choice)."""
    records = lcm_data.vca_records(EPS["spgwu"].vnfd, "spgwu", {0: "spgwu", 1: "spgwu-z1"})
    assert [(r["vdu_id"], r["vdu_count_index"], r["ee_id"], r["vnfd_id"]) for r in records] == [
        ("spgwu", 0, "spgwu", "oai-spgwu"), ("spgwu", 1, "spgwu-z1", "oai-spgwu")]
    both = vnfd("spgwu")
    entries = both["df"][0]["lcm-operations-configuration"]["operate-vnf-op-config"]["day1-2"]
    entries.insert(0, dict(copy.deepcopy(entries[0]), id="oai-spgwu"))
    records = lcm_data.vca_records(both, "spgwu", {0: "spgwu"})
    assert [(r["vdu_id"], r["ee_id"], r["type"]) for r in records] == [
        (None, "spgwu", "lxc_proxy_charm"), ("spgwu", None, "lxc_proxy_charm")]


def test_vdu_name_is_what_the_vnfr_calls_the_vdu():
    doc = vnfd("spgwu")
    assert lcm_data.vdu_name(doc, "spgwu") == "spgwu"
    doc["vdu"][0]["name"] = "SPGW-U VM"
    assert lcm_data.vdu_name(doc, "spgwu") == "SPGW-U VM"
