"""(c) Checks OSM does not make: primitives and relations against the charms (charm_spec)."""

import pytest
from descriptors_helpers import assert_problem, day12, find, problems_of

from bundle import charmspec

HSS = "vnf/hss/hss_vnfd.yaml"
MME = "vnf/mme/mme_vnfd.yaml"
D12 = "vnfd.df[0].lcm-operations-configuration.operate-vnf-op-config.day1-2[0]"
EPS_WG = "oai-eps-wg_ns/oai-eps-wg_nsd.yaml (generated from ns/eps_wg_nsd.yaml)"
OSM10 = "oai-eps-wg-osm10_ns/oai-eps-wg-osm10_nsd.yaml (generated from ns/eps_wg_nsd.yaml)"
REL = "nsd.nsd[0].ns-configuration.relation"


def test_every_primitive_is_an_action_of_its_charm(bundle):
    oai = 0
    for desc in bundle.vnfs:
        entry = day12(desc)
        actions = charmspec.charm_spec(entry["execution-environment-list"][0]["juju"]["charm"][:-6])[
            "actions"
        ]
        names = [p["name"] for p in entry["initial-config-primitive"] + entry["config-primitive"]]
        assert set(names) - {"config"} <= set(actions)
        if "oai-install" in actions:  # an OAI workload's day-1
            oai += 1
            assert [p["name"] for p in entry["initial-config-primitive"]] == [
                "config",
                "oai-install",
                "oai-configure",
                "oai-start",
            ]
    assert oai >= 5  # the EPS at least


def test_misspelt_initial_primitive(bundle):
    day12(find(bundle, "vnfd", "oai-hss"))["initial-config-primitive"][2]["name"] = "oai-instal"
    assert_problem(
        problems_of(bundle),
        HSS,
        D12 + ".initial-config-primitive[2].name",
        "'oai-instal' is not an action of charm hss",
    )


def test_misspelt_day2_primitive(bundle):
    day12(find(bundle, "vnfd", "oai-mme"))["config-primitive"][0]["name"] = "wg-status"
    assert_problem(
        problems_of(bundle),
        MME,
        D12 + ".config-primitive[0].name",
        "'wg-status' is not an action of charm mme",
    )


def test_config_parameter_must_be_a_charm_option(bundle):
    parameters = day12(find(bundle, "vnfd", "oai-hss"))["initial-config-primitive"][0]["parameter"]
    parameters.append({"name": "ssh-pasword", "value": "x"})
    problems = problems_of(bundle)
    assert_problem(
        problems,
        HSS,
        D12 + ".initial-config-primitive[0].parameter[{}].name".format(len(parameters) - 1),
        "'ssh-pasword' is not a config option of charm hss",
    )


def test_config_parameter_type_must_match_the_option(bundle):
    params = day12(find(bundle, "vnfd", "oai-hss"))["initial-config-primitive"][0]["parameter"]
    tac = next(i for i, p in enumerate(params) if p["name"] == "tac")
    del params[tac]["data-type"]
    assert_problem(
        problems_of(bundle),
        HSS,
        D12 + ".initial-config-primitive[0].parameter[{}].data-type".format(tac),
        "STRING but option 'tac' of charm hss is int",
    )


def test_unknown_action_parameter(bundle):
    prim = day12(find(bundle, "vnfd", "oai-mme"))["config-primitive"][1]  # add-peer
    prim["parameter"].append({"name": "peer-publickey", "data-type": "STRING"})
    assert_problem(
        problems_of(bundle),
        MME,
        D12 + ".config-primitive[1].parameter[4].name",
        "'peer-publickey' is not a parameter of action add-peer",
    )


def test_required_action_parameter_must_be_declared(bundle):
    prim = day12(find(bundle, "vnfd", "oai-mme"))["config-primitive"][1]  # add-peer
    prim["parameter"] = [p for p in prim["parameter"] if p["name"] != "public-key"]
    assert_problem(
        problems_of(bundle),
        MME,
        D12 + ".config-primitive[1].parameter",
        "required parameter 'public-key' of action add-peer (charm mme) is not given",
    )


def test_action_parameter_type_must_match(bundle):
    prim = day12(find(bundle, "vnfd", "oai-mme"))["config-primitive"][5]  # run
    prim["parameter"][0]["data-type"] = "INTEGER"
    assert_problem(
        problems_of(bundle),
        MME,
        D12 + ".config-primitive[5].parameter[0].data-type",
        "INTEGER but parameter 'command' of action run is STRING",
    )


def test_verify_ssh_credentials_is_not_listed(bundle):
    day12(find(bundle, "vnfd", "oai-hss"))["initial-config-primitive"].append(
        {"seq": 9, "name": "verify-ssh-credentials", "execution-environment-ref": "proxy-ee"}
    )
    assert_problem(problems_of(bundle), HSS, D12 + ".initial-config-primitive[4].name", "run by OSM itself")


def test_every_primitive_needs_a_defined_ee_ref(bundle):
    prims = day12(find(bundle, "vnfd", "oai-hss"))["initial-config-primitive"]
    del prims[1]["execution-environment-ref"]
    prims[2]["execution-environment-ref"] = "ee"
    problems = problems_of(bundle)
    assert_problem(problems, HSS, D12 + ".initial-config-primitive[1]", "execution-environment-ref missing")
    assert_problem(
        problems,
        HSS,
        D12 + ".initial-config-primitive[2].execution-environment-ref",
        "'ee' is not in execution-environment-list",
    )


def test_config_runs_first(bundle):
    day12(find(bundle, "vnfd", "oai-hss"))["initial-config-primitive"][0]["seq"] = 10
    assert_problem(
        problems_of(bundle), HSS, D12 + ".initial-config-primitive[0].seq", "config must run first"
    )


@pytest.mark.parametrize("charm", ["hss", "hss.tar.gz", "pcrf.charm"])
def test_charm_must_be_a_packed_bundle_charm(bundle, charm):
    day12(find(bundle, "vnfd", "oai-hss"))["execution-environment-list"][0]["juju"]["charm"] = charm
    assert_problem(
        problems_of(bundle),
        HSS,
        D12 + ".execution-environment-list[0].juju.charm",
        "is not <charm>.charm for a charm of the bundle",
    )


def test_relation_endpoint_must_exist(bundle):
    find(bundle, "nsd", "oai-eps-wg").body["ns-configuration"]["relation"][0]["requirer"]["endpoint"] = (
        "interfaces6a"
    )
    assert_problem(
        problems_of(bundle),
        EPS_WG,
        REL + "[0].requirer.endpoint",
        "charm hss requires no endpoint 'interfaces6a'",
    )


def test_relation_roles_must_be_opposite_and_right(bundle):
    rel = find(bundle, "nsd", "oai-eps-wg").body["ns-configuration"]["relation"][0]
    rel["provider"], rel["requirer"] = rel["requirer"], rel["provider"]
    problems = problems_of(bundle)
    assert_problem(
        problems,
        EPS_WG,
        REL + "[0].provider.endpoint",
        "charm hss provides no endpoint 's6a' (it is under requires)",
    )
    assert_problem(
        problems,
        EPS_WG,
        REL + "[0].requirer.endpoint",
        "charm mme requires no endpoint 's6a' (it is under provides)",
    )


def test_relation_interfaces_must_match(bundle):
    rel = find(bundle, "nsd", "oai-eps-wg").body["ns-configuration"]["relation"][1]  # s11 mme -> spgwc
    rel["requirer"]["endpoint"] = "sxab"
    assert_problem(
        problems_of(bundle),
        EPS_WG,
        REL + "[1]",
        "interfaces differ: mme has 'wireguard-s11', spgwc has 'wireguard-sxab'",
    )


def test_relation_profile_must_exist(bundle):
    find(bundle, "nsd", "oai-eps-wg").body["ns-configuration"]["relation"][2]["requirer"][
        "vnf-profile-id"
    ] = "5"
    assert_problem(problems_of(bundle), EPS_WG, REL + "[2].requirer.vnf-profile-id", "no vnf-profile '5'")


def test_osm10_entities_first_is_the_provider(bundle):
    rel = find(bundle, "nsd", "oai-eps-wg-osm10").body["ns-configuration"]["relation"][3]  # sxab
    rel["entities"].reverse()
    assert_problem(
        problems_of(bundle),
        OSM10,
        REL + "[3].entities[0].endpoint",
        "charm spgwc provides no endpoint 'sxab'",
    )


def test_day12_id_must_be_the_vnfd_id(bundle):
    """NBI checks a charm (and LCM deploys one) only for the day1-2 entry whose id is the vnfd id;
    another id silently means no charm and no parameter check."""
    day12(find(bundle, "vnfd", "oai-hss"))["id"] = "hss-vnf"
    assert_problem(
        problems_of(bundle),
        HSS,
        "vnfd.df[0].lcm-operations-configuration",
        "no day1-2 entry with the vnfd id 'oai-hss'",
    )


# --- the metrics exporter's endpoint (docs/metrics.md) ------------------------------------------

EXPORTER = "vnfd.df[0].exporters-endpoints"


def test_every_vnfd_for_newest_osm_declares_the_exporter_and_every_osm10_one_leaves_it_out(bundle):
    for desc in bundle.vnfs:
        exp = desc.body["df"][0].get("exporters-endpoints")
        if desc.id.endswith("-osm10"):
            assert exp is None, desc.id
        else:
            assert exp == {"metric-path": "/metrics", "metric-port": 9586,
                           "external-connection-point-ref": desc.body["mgmt-cp"]}, desc.id
    for desc in bundle.nss:
        osm10 = desc.id.endswith("-osm10")
        assert all(v.endswith("-osm10") == osm10 for v in desc.body["vnfd-id"]), desc.id
        assert all(p["vnfd-id"].endswith("-osm10") == osm10 for p in desc.body["df"][0]["vnf-profile"]), desc.id


def test_an_exporter_port_that_is_not_the_charms_is_refused(bundle):
    find(bundle, "vnfd", "oai-hss").body["df"][0]["exporters-endpoints"]["metric-port"] = 9100
    assert_problem(problems_of(bundle), HSS, EXPORTER + ".metric-port", "9100 is not the charm's metrics-port (9586)")


def test_an_exporter_on_another_connection_point_is_refused(bundle):
    exp = find(bundle, "vnfd", "oai-hss").body["df"][0]["exporters-endpoints"]
    exp["external-connection-point-ref"] = "hss-s6a-ext"
    assert_problem(problems_of(bundle), HSS, EXPORTER + ".external-connection-point-ref",
                   "hss-s6a-ext is not the management connection point hss-mgmt-ext")
