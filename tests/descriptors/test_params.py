"""(c) Params templates against the descriptors: placeholders, IP plan, secrets; and render()."""

import pytest
from descriptors_helpers import assert_problem, day12, find, problems_of

from bundle import params

EPS_WG = "params/eps_wg.yaml"
NSI = "params/nsi_eps_wg.yaml"


def run(bundle, file, mutate):
    return problems_of(bundle, params_override={file: mutate})


def test_every_placeholder_must_be_supplied(bundle):
    def drop(t):
        del t["additionalParamsForVnf"][0]["additionalParams"]["lte_k"]

    assert_problem(
        run(bundle, EPS_WG, drop),
        EPS_WG,
        "additionalParamsForVnf[0].additionalParams",
        "member hss: parameter 'lte_k' is not supplied (needed by vnf/hss/hss_vnfd.yaml vnfd.df[0]",
    )


def test_new_placeholder_in_a_vnfd_must_be_supplied(bundle):
    cfg = day12(find(bundle, "vnfd", "oai-spgwc"))["initial-config-primitive"][0]
    cfg["parameter"].append({"name": "ue-ip-pool", "value": "<ue_ip_pool>"})
    assert_problem(
        problems_of(bundle),
        "params/eps.yaml",
        "additionalParamsForVnf[2].additionalParams",
        "member spgwc: parameter 'ue_ip_pool' is not supplied",
    )


def test_unused_parameter_is_reported(bundle):
    def typo(t):
        t["additionalParamsForVnf"][1]["additionalParams"]["hss_adress"] = "172.16.6.129"

    assert_problem(
        run(bundle, EPS_WG, typo),
        EPS_WG,
        "additionalParamsForVnf[1].additionalParams.hss_adress",
        "not used by any primitive or cloud-init of vnfd oai-mme",
    )


def test_ip_must_be_inside_the_link_cidr(bundle):
    def move(t):
        t["vld"][1]["vnfd-connection-point-ref"][0]["ip-address"] = (
            "172.16.6.129"  # plain plan on the WG link
        )

    assert_problem(
        run(bundle, EPS_WG, move),
        EPS_WG,
        "vld[1].vnfd-connection-point-ref[0].ip-address",
        "172.16.6.129 is not a host address of 192.168.8.0/24 (link s6a)",
    )


def test_ip_must_be_unique_per_link(bundle):
    def dup(t):
        refs = t["vld"][1]["vnfd-connection-point-ref"]
        refs[1]["ip-address"] = refs[0]["ip-address"]

    assert_problem(
        run(bundle, EPS_WG, dup),
        EPS_WG,
        "vld[1].vnfd-connection-point-ref[1].ip-address",
        "192.168.8.129 is already used on link s6a",
    )


def test_ip_may_not_be_the_gateway(bundle):
    def gw(t):
        sgi = next(v for v in t["vld"] if v["name"] == "sgi")
        sgi["vnfd-connection-point-ref"][0]["ip-address"] = "10.254.1.1"

    assert_problem(
        run(bundle, EPS_WG, gw),
        EPS_WG,
        "vld[6].vnfd-connection-point-ref[0].ip-address",
        "is the gateway of link sgi",
    )


def test_member_index_must_exist(bundle):
    def bad(t):
        t["vld"][2]["vnfd-connection-point-ref"][0]["member-vnf-index-ref"] = "2"

    assert_problem(
        run(bundle, EPS_WG, bad),
        EPS_WG,
        "vld[2].vnfd-connection-point-ref[0].member-vnf-index-ref",
        "no member-vnf-index '2'",
    )


def test_connection_point_must_be_on_that_link(bundle):
    def bad(t):
        t["vld"][2]["vnfd-connection-point-ref"][0]["vnfd-connection-point-ref"] = "mme-s6a-ext"

    assert_problem(
        run(bundle, EPS_WG, bad),
        EPS_WG,
        "vld[2].vnfd-connection-point-ref[0].vnfd-connection-point-ref",
        "'mme-s6a-ext' of member mme is not connected to s11",
    )


def test_vld_name_must_be_a_virtual_link(bundle):
    def bad(t):
        t["vld"][0]["name"] = "mgmt"

    assert_problem(
        run(bundle, EPS_WG, bad), EPS_WG, "vld[0].name", "'mgmt' is not a virtual-link-desc of nsd oai-eps-wg"
    )


def test_multisite_vim_member_must_exist(bundle):
    def bad(t):
        t["vnf"][0]["member-vnf-index"] = "1"

    assert_problem(
        run(bundle, "params/eps_wg_multisite.yaml", bad),
        "params/eps_wg_multisite.yaml",
        "vnf[0].member-vnf-index",
        "no member-vnf-index '1'",
    )


def test_endpoint_address_must_be_the_members_link_address(bundle):
    def bad(t):
        t["additionalParamsForVnf"][2]["additionalParams"]["sxab_endpoint_address"] = "192.168.16.102"

    assert_problem(
        run(bundle, EPS_WG, bad),
        EPS_WG,
        "additionalParamsForVnf[2].additionalParams.sxab_endpoint_address",
        "192.168.16.102 but member spgwc has 192.168.16.101 on link sxab",
    )


def test_secrets_must_be_env_references(bundle):
    def leak(t):
        t["additionalParamsForVnf"][0]["additionalParams"]["lte_op"] = "1006020f0a478bf6b699f15c062e42b3"

    assert_problem(
        run(bundle, "params/eps.yaml", leak),
        "params/eps.yaml",
        "additionalParamsForVnf[0].additionalParams.lte_op",
        "a secret must be a ${VAR} reference",
    )


def test_nsi_subnet_must_exist(bundle):
    def bad(t):
        t["netslice-subnet"][0]["id"] = "1"

    problems = run(bundle, NSI, bad)
    assert_problem(
        problems, NSI, "netslice-subnet[0].id", "'1' is not a netslice-subnet of nst oai-eps-wg-embb"
    )


def test_nsi_plan_must_not_drift_from_the_ns_plan(bundle):
    def drift(t):
        t["netslice-subnet"][0]["vld"][0]["vnfd-connection-point-ref"][0]["ip-address"] = "192.168.8.130"

    assert_problem(
        run(bundle, NSI, drift),
        NSI,
        "netslice-subnet[0].vld",
        "differs from the vld plan of params/eps_wg.yaml",
    )


def test_nsi_placeholders_are_checked_per_subnet(bundle):
    def drop(t):
        del t["netslice-subnet"][0]["additionalParamsForVnf"][4]["additionalParams"]["mme_address"]

    assert_problem(
        run(bundle, NSI, drop),
        NSI,
        "netslice-subnet[0].additionalParamsForVnf[4].additionalParams",
        "member enb: parameter 'mme_address' is not supplied",
    )


def test_nsi_refuses_the_old_additional_params_for_subnet(bundle):
    """NBI's nsi_instantiate schema has no additionalParamsForSubnet (422); neither has ours."""

    def old_form(t):
        sub = t["netslice-subnet"][0]
        moved = sub.pop("additionalParamsForVnf")
        t["additionalParamsForSubnet"] = [{"id": sub["id"], "additionalParamsForVnf": moved}]

    assert_problem(run(bundle, NSI, old_form), NSI, "(top level)", "additionalParamsForSubnet")


def test_render_substitutes_every_variable():
    env = {
        "MGMT_NETWORK": "osm-ext",
        "LTE_K": "8baf473f2f8fd09487cccbd7097c6862",
        "LTE_OP": "11111111111111111111111111111111",
    }
    data = params.render("params/eps_wg.yaml", env)
    assert data["vld"][0]["vim-network-name"] == "osm-ext"
    assert data["additionalParamsForVnf"][0]["additionalParams"]["lte_k"] == env["LTE_K"]
    assert "${" not in repr(data)


def test_render_names_the_missing_variable():
    with pytest.raises(
        params.ParamsError,
        match=r"params/eps_wg_multisite.yaml: environment variable\(s\) not set: "
        r"LTE_OP, VIM_ACCOUNT_SITE2",
    ):
        params.render(
            "params/eps_wg_multisite.yaml", {"LTE_K": "0" * 32, "MGMT_NETWORK": "m", "VIM_ACCOUNT": "v"}
        )


def test_render_refuses_a_missing_file():
    with pytest.raises(params.ParamsError, match="params/nope.yaml: cannot read"):
        params.render("params/nope.yaml", {})


def test_substitution_does_not_inject_yaml():
    data = params.substitute({"a": "${X}"}, {"X": "b: c\nd: [e"})
    assert data == {"a": "b: c\nd: [e"}


def test_testbed_reads_the_nsi_subnet_form_and_refuses_the_old_one():
    """scripts/testbed/emulators/nsmodel.py takes a subnet's plan from its netslice-subnet item, as NBI does."""
    from testbed.emulators import nsmodel

    env = {"MGMT_NETWORK": "m", "LTE_K": "0" * 32, "LTE_OP": "1" * 32}
    data = params.render(NSI, env)
    plan = nsmodel._subnet_plan(data, "eps-wg")
    assert plan["vld"] == data["netslice-subnet"][0]["vld"]
    assert [a["member-vnf-index"] for a in plan["additionalParamsForVnf"]] == ["hss", "mme", "spgwc", "spgwu", "enb"]
    sub = data["netslice-subnet"][0]
    data["additionalParamsForSubnet"] = [{"id": "eps-wg", "additionalParamsForVnf": sub.pop("additionalParamsForVnf")}]
    with pytest.raises(nsmodel.NsModelError, match="additionalParamsForSubnet is refused"):
        nsmodel._subnet_plan(data, "eps-wg")


UE_PARAMS_FILES = ["params/eps_wg.yaml", "params/eps.yaml", "params/eps_wg_multisite.yaml", NSI]


def _enb_params(data):
    items = data.get("additionalParamsForVnf") or data["netslice-subnet"][0]["additionalParamsForVnf"]
    return next(i["additionalParams"] for i in items if i["member-vnf-index"] == "enb")


@pytest.mark.parametrize("file", UE_PARAMS_FILES)
def test_every_eps_params_file_gives_the_ue_an_imsi_the_hss_provisions(file):
    """The UE's SIM: an IMSI inside the HSS's default range (imsi-first, number-of-users of the HSS
    charm; the HSS VNFD does not override them) and the HSS's own K/OP, as ${VAR} references."""
    import yaml

    from bundle import ROOT

    with open(ROOT + "/charms/hss/config.yaml") as f:
        hss = yaml.safe_load(f)["options"]
    first, users = int(hss["imsi-first"]["default"]), hss["number-of-users"]["default"]
    enb = _enb_params(params.load(file))
    assert first <= int(enb["ue_imsi"]) < first + users
    assert enb["ue_lte_k"] == "${LTE_K}" and enb["ue_lte_op"] == "${LTE_OP}"
    rendered = _enb_params(params.render(file, params.dummy_env(params.load(file))))
    assert rendered["ue_lte_k"] == "0" * 32


def test_ue_secret_must_be_a_variable_reference(bundle):
    def leak(t):
        t["additionalParamsForVnf"][4]["additionalParams"]["ue_lte_k"] = "8baf473f2f8fd09487cccbd7097c6862"

    assert_problem(
        run(bundle, EPS_WG, leak),
        EPS_WG,
        "additionalParamsForVnf[4].additionalParams.ue_lte_k",
        "a secret must be a ${VAR} reference",
    )


def test_enb_vnfd_offers_the_ue_actions_as_day2_primitives(bundle):
    entry = day12(find(bundle, "vnfd", "oai-enb"))
    prims = {p["name"]: p for p in entry["config-primitive"]}
    assert "parameter" not in prims["ue-attach"]
    assert {p["name"]: p.get("mandatory", False) for p in prims["ue-iperf"]["parameter"]} == {
        "server": True, "seconds": False}
    config = {p["name"]: p["value"] for p in entry["initial-config-primitive"][0]["parameter"]}
    assert config["ue-imsi"] == "<ue_imsi>" and config["ue-lte-k"] == "<ue_lte_k>"


def test_a_service_address_outside_the_registrys_service_network_is_named(bundle):
    """The IP plan's service networks are the registry's: a params file is checked against them."""
    def move(t):
        t["additionalParamsForVnf"][0]["additionalParams"]["s6a_service_addresses"] = "172.16.7.129/32"

    at = "additionalParamsForVnf[0].additionalParams.s6a_service_addresses"
    assert_problem(run(bundle, EPS_WG, move), EPS_WG, at,
                   "172.16.7.129/32 is outside s6a's service network 172.16.6.0/24")


def test_service_addresses_on_a_reference_point_the_member_is_no_end_of_are_named(bundle):
    def stray(t):
        t["additionalParamsForVnf"][0]["additionalParams"]["s1u_service_addresses"] = "192.168.248.7/32"

    at = "additionalParamsForVnf[0].additionalParams.s1u_service_addresses"
    assert_problem(run(bundle, EPS_WG, stray), EPS_WG, at,
                   "hss is no end of reference point s1u (spgwu provides, enb requires")
