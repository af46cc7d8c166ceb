"""(a) The SOL006-subset schema: every rule has a broken input that it refuses."""

import pytest
from descriptors_helpers import assert_problem, day12, find, problems_of

HSS = "vnf/hss/hss_vnfd.yaml"
D12 = "vnfd.df[0].lcm-operations-configuration.operate-vnf-op-config.day1-2[0]"


def test_unknown_key_is_refused(bundle):
    find(bundle, "vnfd", "oai-hss").body["vdu"][0]["flavour-name"] = "x"
    assert_problem(problems_of(bundle), HSS, "vnfd.vdu[0]", "unknown key(s) 'flavour-name'")


def test_wrong_enum_is_refused(bundle):
    vdu = find(bundle, "vnfd", "oai-hss").body["vdu"][0]
    vdu["int-cpd"][0]["virtual-network-interface-requirement"][0]["virtual-interface"]["type"] = "VIRTIO-NET"
    assert_problem(
        problems_of(bundle),
        HSS,
        "vnfd.vdu[0].int-cpd[0].virtual-network-interface-requirement[0].virtual-interface.type",
        "'VIRTIO-NET' is not one of",
    )


@pytest.mark.parametrize("value", ["two", "2", -1])
def test_non_integer_cpu_count_is_refused(bundle, value):
    # pyangbind would silently store 0 for "two"; the project refuses it
    find(bundle, "vnfd", "oai-hss").body["virtual-compute-desc"][0]["virtual-cpu"]["num-virtual-cpu"] = value
    assert_problem(problems_of(bundle), HSS, "vnfd.virtual-compute-desc[0].virtual-cpu.num-virtual-cpu", "")


def test_non_numeric_seq_is_refused(bundle):
    day12(find(bundle, "vnfd", "oai-hss"))["initial-config-primitive"][1]["seq"] = "first"
    assert_problem(
        problems_of(bundle), HSS, D12 + ".initial-config-primitive[1].seq", "'first' is not of type 'integer'"
    )


def test_storage_must_be_a_list(bundle):
    find(bundle, "vnfd", "oai-hss").body["vdu"][0]["virtual-storage-desc"] = "hss-storage"
    assert_problem(problems_of(bundle), HSS, "vnfd.vdu[0].virtual-storage-desc", "is not of type 'array'")


def test_boolean_must_be_boolean(bundle):
    find(bundle, "nsd", "oai-eps").body["virtual-link-desc"][0]["mgmt-network"] = "maybe"
    assert_problem(
        problems_of(bundle),
        "oai-eps_ns/oai-eps_nsd.yaml (generated from ns/eps_wg_nsd.yaml)",
        "nsd.nsd[0].virtual-link-desc[0].mgmt-network",
        "is not of type 'boolean'",
    )


def test_cidr_with_host_bits_is_refused(bundle):
    vlp = find(bundle, "nsd", "oai-eps-wg").body["df"][0]["virtual-link-profile"][0]
    vlp["virtual-link-protocol-data"]["l3-protocol-data"]["cidr"] = "192.168.8.1/24"
    assert_problem(
        problems_of(bundle),
        "oai-eps-wg_ns/oai-eps-wg_nsd.yaml (generated from ns/eps_wg_nsd.yaml)",
        "nsd.nsd[0].df[0].virtual-link-profile[0].virtual-link-protocol-data.l3-protocol-data.cidr",
        "is not a 'ip-prefix'",
    )


def test_dhcp_key_is_refused(bundle):
    l3 = find(bundle, "nsd", "oai-eps-wg").body["df"][0]["virtual-link-profile"][0][
        "virtual-link-protocol-data"
    ]
    l3["l3-protocol-data"]["dhcp"] = True
    assert_problem(
        problems_of(bundle),
        "oai-eps-wg_ns/oai-eps-wg_nsd.yaml (generated from ns/eps_wg_nsd.yaml)",
        "nsd.nsd[0].df[0].virtual-link-profile[0].virtual-link-protocol-data.l3-protocol-data",
        "unknown key(s) 'dhcp'",
    )


def test_relation_with_both_syntaxes_is_refused(bundle):
    rel = find(bundle, "nsd", "oai-eps-wg").body["ns-configuration"]["relation"][0]
    rel["entities"] = [{"id": "mme", "endpoint": "s6a"}, {"id": "hss", "endpoint": "s6a"}]
    assert_problem(
        problems_of(bundle),
        "oai-eps-wg_ns/oai-eps-wg_nsd.yaml (generated from ns/eps_wg_nsd.yaml)",
        "nsd.nsd[0].ns-configuration.relation[0]",
        "",
    )


def test_nst_qos_resource_type_enum(bundle):
    find(bundle, "nst", "oai-eps-wg-urllc").body["quality-of-service"]["resource-type"] = "critical"
    assert_problem(
        problems_of(bundle), "nst/urllc_nst.yaml", "nst[0].quality-of-service.resource-type", "is not one of"
    )


def test_params_bad_ip_is_refused(bundle):
    def breaks(t):
        t["vld"][1]["vnfd-connection-point-ref"][0]["ip-address"] = "192.168.8.300"

    assert_problem(
        problems_of(bundle, params_override={"params/eps_wg.yaml": breaks}),
        "params/eps_wg.yaml",
        "vld[1].vnfd-connection-point-ref[0].ip-address",
        "is not a 'ip-address'",
    )


def test_params_underscore_member_index_is_refused(bundle):
    def breaks(t):
        item = t["additionalParamsForVnf"][0]
        item["member_vnf_index"] = item.pop("member-vnf-index")

    assert_problem(
        problems_of(bundle, params_override={"params/eps.yaml": breaks}),
        "params/eps.yaml",
        "additionalParamsForVnf[0]",
        "",
    )
