"""(b) The cross-checks OSM itself makes at onboarding."""

from descriptors_helpers import assert_problem, find, problems_of

HSS = "vnf/hss/hss_vnfd.yaml"
EPS_WG = "oai-eps-wg_ns/oai-eps-wg_nsd.yaml (generated from ns/eps_wg_nsd.yaml)"


def test_mgmt_cp_must_be_an_ext_cpd(bundle):
    find(bundle, "vnfd", "oai-hss").body["mgmt-cp"] = "hss-eth0"
    assert_problem(
        problems_of(bundle), HSS, "vnfd.mgmt-cp", "mgmt-cp='hss-eth0' must match an existing ext-cpd"
    )


def test_ext_cpd_must_point_to_an_existing_int_cpd(bundle):
    find(bundle, "vnfd", "oai-hss").body["ext-cpd"][1]["int-cpd"]["cpd"] = "hss-nope-int"
    assert_problem(
        problems_of(bundle), HSS, "vnfd.ext-cpd[1].int-cpd.cpd", "vdu 'hss' has no int-cpd 'hss-nope-int'"
    )


def test_vdu_references_must_exist(bundle):
    find(bundle, "vnfd", "oai-hss").body["vdu"][0]["virtual-storage-desc"] = ["nope"]
    assert_problem(
        problems_of(bundle), HSS, "vnfd.vdu[0].virtual-storage-desc[0]", "no virtual-storage-desc 'nope'"
    )


def test_cloud_init_file_must_exist(bundle):
    find(bundle, "vnfd", "oai-hss").body["vdu"][0]["cloud-init-file"] = "missing.cfg"
    assert_problem(
        problems_of(bundle), HSS, "vnfd.vdu[0].cloud-init-file", "cloud-init file 'missing.cfg' not found"
    )


def test_vnf_profile_vnfd_id_must_be_listed(bundle):
    find(bundle, "nsd", "oai-eps-wg").body["vnfd-id"].remove("oai-enb")
    assert_problem(
        problems_of(bundle),
        EPS_WG,
        "nsd.nsd[0].df[0].vnf-profile[4].vnfd-id",
        "'oai-enb' does not match any vnfd-id",
    )


def test_vnfd_id_must_be_a_vnfd_of_the_bundle(bundle):
    members = find(bundle, "nsd", "oai-eps-wg").body["vnfd-id"]
    members.append("oai-ue")
    assert_problem(
        problems_of(bundle), EPS_WG, "nsd.nsd[0].vnfd-id[{}]".format(len(members) - 1),
        "'oai-ue' is not a VNFD of the bundle"
    )


def test_constituent_cpd_must_be_an_ext_cpd_of_that_vnfd(bundle):
    conn = find(bundle, "nsd", "oai-eps-wg").body["df"][0]["vnf-profile"][0]["virtual-link-connectivity"][1]
    conn["constituent-cpd-id"][0]["constituent-cpd-id"] = "hss-s11-ext"
    assert_problem(
        problems_of(bundle),
        EPS_WG,
        "nsd.nsd[0].df[0].vnf-profile[0].virtual-link-connectivity[1].constituent-cpd-id[0].constituent-cpd-id",
        "'hss-s11-ext' is not an ext-cpd of vnfd 'oai-hss'",
    )


def test_constituent_base_element_must_be_the_profile_id(bundle):
    conn = find(bundle, "nsd", "oai-eps-wg").body["df"][0]["vnf-profile"][0]["virtual-link-connectivity"][0]
    conn["constituent-cpd-id"][0]["constituent-base-element-id"] = "1"
    assert_problem(
        problems_of(bundle),
        EPS_WG,
        "nsd.nsd[0].df[0].vnf-profile[0].virtual-link-connectivity[0].constituent-cpd-id[0]."
        "constituent-base-element-id",
        "must be the vnf-profile id 'hss'",
    )


def test_mgmt_network_may_not_have_protocol_data(bundle):
    df = find(bundle, "nsd", "oai-eps-wg").body["df"][0]
    df["virtual-link-profile"].append(
        {
            "id": "mgmtnet",
            "virtual-link-desc-id": "mgmtnet",
            "virtual-link-protocol-data": {"l3-protocol-data": {"ip-version": "ipv4", "cidr": "10.0.0.0/24"}},
        }
    )
    assert_problem(
        problems_of(bundle),
        EPS_WG,
        "nsd.nsd[0].df[0].virtual-link-profile[7].virtual-link-protocol-data",
        "mgmt-network virtual link may not have",
    )


def test_sapd_must_name_a_virtual_link(bundle):
    find(bundle, "nsd", "oai-eps-wg").body["sapd"][0]["virtual-link-desc"] = "mgmt"
    assert_problem(
        problems_of(bundle), EPS_WG, "nsd.nsd[0].sapd[0].virtual-link-desc", "no virtual-link-desc 'mgmt'"
    )


def test_nst_nsd_ref_must_be_an_nsd(bundle):
    find(bundle, "nst", "oai-eps-wg-embb").body["netslice-subnet"][0]["nsd-ref"] = "OAI-EPC_nsdwg"
    assert_problem(
        problems_of(bundle),
        "nst/embb_nst.yaml",
        "nst[0].netslice-subnet[0].nsd-ref",
        "'OAI-EPC_nsdwg' is not an NSD of the bundle",
    )


def test_nst_nss_ref_must_be_the_subnet_id_not_the_nsd_id(bundle):
    # the earlier implementation's regression
    vld = find(bundle, "nst", "oai-eps-wg-embb").body["netslice-vld"][0]
    vld["nss-connection-point-ref"][0]["nss-ref"] = "oai-eps-wg"
    assert_problem(
        problems_of(bundle),
        "nst/embb_nst.yaml",
        "nst[0].netslice-vld[0].nss-connection-point-ref[0].nss-ref",
        "must be a netslice-subnet id",
    )


def test_nst_connection_point_must_be_a_sapd(bundle):
    vld = find(bundle, "nst", "oai-eps-wg-urllc").body["netslice-vld"][0]
    vld["nss-connection-point-ref"][0]["nsd-connection-point-ref"] = "mgmtnet"
    assert_problem(
        problems_of(bundle),
        "nst/urllc_nst.yaml",
        "nst[0].netslice-vld[0].nss-connection-point-ref[0].nsd-connection-point-ref",
        "'mgmtnet' is not a sapd of nsd 'oai-eps-wg'",
    )


def test_descriptor_file_name_must_end_in_vnfd_yaml(bundle):
    find(bundle, "vnfd", "oai-hss").source = "vnf/hss/hss.yaml"
    assert_problem(problems_of(bundle), HSS, "(file name)", "'hss.yaml' must end in _vnfd.yaml")


def test_generated_ids_must_be_unique(bundle):
    find(bundle, "vnfd", "oai-hss-2x").body["id"] = "oai-hss"
    problems = problems_of(bundle)
    assert any("vnfd.id: id 'oai-hss' is also used by vnf/hss/hss_vnfd.yaml" in p for p in problems), problems


def test_virtual_link_connectivity_must_name_a_virtual_link(bundle):
    conn = find(bundle, "nsd", "oai-eps-wg").body["df"][0]["vnf-profile"][0]["virtual-link-connectivity"][1]
    conn["virtual-link-profile-id"] = "s6b"
    assert_problem(
        problems_of(bundle),
        EPS_WG,
        "nsd.nsd[0].df[0].vnf-profile[0].virtual-link-connectivity[1].virtual-link-profile-id",
        "no virtual-link-desc 's6b'",
    )


def test_a_day12_id_that_is_the_vnfd_id_and_a_vdu_id_is_named(bundle):
    """LCM looks the entry up for the VNF and again for each VDU: one id that is both would deploy
    the proxy charm twice (found when a generic component's VNFD was named after its VDU)."""
    hss = find(bundle, "vnfd", "oai-hss").body
    hss["vdu"][0]["id"] = "oai-hss"
    assert_problem(problems_of(bundle), "vnf/hss/hss_vnfd.yaml",
                   "vnfd.df[0].lcm-operations-configuration.operate-vnf-op-config.day1-2[0].id",
                   "day1-2 id 'oai-hss' is both the vnfd id and a vdu id")
