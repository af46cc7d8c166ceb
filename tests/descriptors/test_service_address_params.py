"""A component's own service address on each of its reference points reaches its charm from the
registry alone: the VNFDs' day-1 `config` primitive gets ``<rp>-service-addresses`` <-
``<rp>_service_addresses`` generated (descriptors.add_service_addresses), and a params file that
names no address for it gets the registry's default (bundle.params.with_service_addresses)."""
import copy
import ipaddress

import pytest
import yaml
from descriptors_helpers import assert_problem, day12, find, problems_of

from bundle import ROOT, descriptors, params
from vpnaas.core import instance, registry

EPS_WG = "params/eps_wg.yaml"
ENV = {"MGMT_NETWORK": "mgmt", "LTE_K": "0" * 32, "LTE_OP": "1" * 32}
#: The SPGW-U's address on S1-U when the IP plan names none (the registry's rule, not a pin).
S1U_DEFAULT = registry.load().reference_points["s1u"].default_service_address("spgwu")
#: A listen port no reference point of the registry has (a synthetic one takes it).
FREE_PORT = min(set(range(65000, 65100)) - {rp.listen_port for rp in registry.load().reference_points.values()})


def _config(desc):
    return next(p for p in day12(desc)["initial-config-primitive"] if p["name"] == "config")


def _component(bundle, desc):
    return next(c.name for c in registry.load().with_vnfd() if c.vnfd == desc.source)


def test_every_vnfd_carries_each_service_address_of_its_component_once(bundle):
    """Sources and variants (-2x, -ms, OSM 10's): one parameter per reference point the registry
    makes the component an end of, in the registry's order; no VNFD source spells one."""
    reg = registry.load()
    for desc in bundle.vnfs:
        names = [p["name"] for p in _config(desc)["parameter"]]
        found = [(p["name"], p["value"]) for p in _config(desc)["parameter"]
                 if p["name"].endswith("-service-addresses")]
        want = [("{}-service-addresses".format(rp.name), "<{}_service_addresses>".format(rp.name))
                for rp in reg.endpoints_of(_component(bundle, desc))]
        assert found == want and len(set(names)) == len(names), desc.id
    for desc in bundle.sources:
        if desc.kind == "vnfd":
            with open(str(ROOT) + "/" + desc.source) as f:
                assert "-service-addresses" not in f.read(), desc.source


def test_the_generated_parameter_follows_its_endpoint_address(bundle):
    """Where the VNF has a link of its own for the reference point, its address parameter sits
    right after that link's endpoint address (the order a reader of the package expects)."""
    names = [p["name"] for p in _config(find(bundle, "vnfd", "oai-spgwu"))["parameter"]]
    assert names[names.index("sxab-endpoint-address") + 1] == "sxab-service-addresses"
    assert names[names.index("s1u-endpoint-address") + 1] == "s1u-service-addresses"


def test_a_vnfd_source_that_spells_a_service_address_is_refused(bundle):
    src = find(bundle, "vnfd", "oai-spgwc")
    desc = descriptors.Descriptor("vnfd", copy.deepcopy(src.data), src.source, src.source)
    spelled = ", ".join("{}-service-addresses".format(rp.name) for rp in registry.load().endpoints_of("spgwc"))
    with pytest.raises(descriptors.DescriptorError, match=r"vnf/spgwc/spgwc_vnfd.yaml: the config primitive's {} "
                                                          r"is generated from the registry".format(spelled)):
        descriptors.add_service_addresses(desc, "spgwc")


def test_a_vnfd_without_a_config_primitive_is_refused_naming_what_it_cannot_carry(bundle):
    src = find(bundle, "vnfd", "oai-hss")
    data = copy.deepcopy(src.data)
    entry = descriptors.day12(data["vnfd"])
    entry["initial-config-primitive"] = [p for p in entry["initial-config-primitive"] if p["name"] != "config"]
    desc = descriptors.Descriptor("vnfd", data, src.source, src.source)
    with pytest.raises(descriptors.DescriptorError,
                       match=r"vnf/hss/hss_vnfd.yaml: no day-1 `config` initial-config-primitive to carry "
                             r"s6a-service-addresses"):
        descriptors.add_service_addresses(desc, "hss")


def test_the_registry_default_keeps_each_end_and_its_scaled_instances_on_its_side():
    """Provider: the service network's first host; requirer: the first host of its upper half; a
    scaled VDU's instances (+k, up to the largest scale a VNFD allows) stay in their own half."""
    reg = registry.load()
    for rp in reg.reference_points.values():
        net = ipaddress.ip_network(rp.service_network)
        prov = ipaddress.ip_interface(rp.default_service_address(rp.provider))
        req = ipaddress.ip_interface(rp.default_service_address(rp.requirer))
        assert prov == ipaddress.ip_interface("{}/32".format(net.network_address + 1)), rp.name
        halves = list(net.subnets(prefixlen_diff=1))
        for k in range(3):
            (p,) = instance.service_addresses([prov], k, net, "x")
            (r,) = instance.service_addresses([req], k, net, "x")
            assert p.ip in halves[0] and r.ip in halves[1], (rp.name, k)
    assert reg.reference_points["s6a"].default_service_address("spgwu") == ""       # no end of it
    small = reg.reference_points["s6a"]._replace(service_network="10.9.9.0/30")
    assert small.default_service_address("mme") == ""                                # no room for two halves


def test_a_params_file_without_an_address_gets_the_registrys_and_validates(bundle):
    def drop(t):
        del t["additionalParamsForVnf"][3]["additionalParams"]["s1u_service_addresses"]

    assert not [p for p in problems_of(bundle, params_override={EPS_WG: drop}) if p.startswith(EPS_WG)]
    data = params.load(EPS_WG)
    drop(data)
    rendered = params.with_slice_5qi(params.substitute(data, ENV), members={None: ["spgwu"]})
    spgwu = next(i["additionalParams"] for i in rendered["additionalParamsForVnf"] if i["member-vnf-index"] == "spgwu")
    assert spgwu["s1u_service_addresses"] == S1U_DEFAULT                 # the registry's default
    assert spgwu["sxab_service_addresses"] == "172.55.55.102/32"         # what the file names wins


def test_a_named_address_that_is_the_other_ends_default_is_named(bundle):
    def clash(t):
        del t["additionalParamsForVnf"][3]["additionalParams"]["s1u_service_addresses"]    # spgwu: the default
        t["additionalParamsForVnf"][4]["additionalParams"]["s1u_service_addresses"] = S1U_DEFAULT

    assert_problem(problems_of(bundle, params_override={EPS_WG: clash}), EPS_WG,
                   "additionalParamsForVnf[4].additionalParams.s1u_service_addresses",
                   "{} is member spgwu's service address on s1u too".format(S1U_DEFAULT.split("/")[0]))


def test_an_address_a_scaled_instance_takes_is_named(bundle):
    """The SPGW-U's VDU may have 3 instances: instance +1 takes sxab 172.55.55.103, which the
    SPGW-C (listed first in the file) must not name; one instance fewer passes."""
    def clash(t):
        t["additionalParamsForVnf"][2]["additionalParams"]["sxab_service_addresses"] = "172.55.55.103/32"

    assert_problem(problems_of(bundle, params_override={EPS_WG: clash}), EPS_WG,
                   "additionalParamsForVnf[3].additionalParams.sxab_service_addresses",
                   "172.55.55.103 (this member's instance +1) is member spgwc's service address on sxab too")

    def beyond(t):
        t["additionalParamsForVnf"][2]["additionalParams"]["sxab_service_addresses"] = "172.55.55.105/32"

    assert not [p for p in problems_of(bundle, params_override={EPS_WG: beyond}) if "sxab too" in p]


def test_a_member_id_other_than_its_components_name_is_refused(bundle, monkeypatch):
    """bundle.params knows a member's component by its vnf-profile id."""
    real = descriptors.load_yaml

    def renamed(relpath):
        data = real(relpath)
        if relpath == "ns/eps_wg_nsd.yaml":
            data["nsd"]["nsd"][0]["df"][0]["vnf-profile"][0]["id"] = "hss-1"
        return data

    monkeypatch.setattr(descriptors, "load_yaml", renamed)
    with pytest.raises(descriptors.DescriptorError, match=r"vnf-profile hss-1 \(hss\): a member's id is its "
                                                          r"component's name"):
        descriptors.load_bundle()


def test_a_new_reference_point_reaches_the_vnfds_and_params_from_its_registry_entry(monkeypatch):
    """x9 between the existing MME and SPGW-U, added to a copy of the registry only: both VNFDs
    carry its parameter, every params file of an NS with either end gets its address, and the
    bundle validates with no descriptor or params edit."""
    with open(registry.PATH) as f:
        doc = yaml.safe_load(f)
    doc["reference-points"]["x9"] = {"provider": "mme", "requirer": "spgwu", "listen-port": FREE_PORT,
                                     "tunnel-network": "10.250.97.0/30", "service-network": "172.31.97.0/24",
                                     "carries": "a synthetic interface"}
    extended = registry.parse(doc)
    monkeypatch.setattr(registry, "load", lambda path=registry.PATH: extended)
    bundle = descriptors.load_bundle()
    for vnfd_id in ("oai-mme", "oai-spgwu-osm10"):
        assert {"name": "x9-service-addresses", "value": "<x9_service_addresses>"} in _config(
            find(bundle, "vnfd", vnfd_id))["parameter"]
    rendered = params.render("params/epc.yaml", ENV, members=descriptors.members_of(bundle, "oai-epc"))
    got = {i["member-vnf-index"]: i["additionalParams"].get("x9_service_addresses")
           for i in rendered["additionalParamsForVnf"]}
    assert (got["mme"], got["spgwu"], got["hss"]) == ("172.31.97.1/32", "172.31.97.129/32", None)
    # The params files' checks (the charms' options are the built charms': the extension test
    # builds them from an extended registry, tests/packages/test_registry_extension.py).
    assert not [p for p in problems_of(bundle) if p.startswith("params/")]


def test_a_reference_point_without_a_service_network_needs_its_params_lines(monkeypatch):
    """No service network in the registry, no default: `make validate` names each params file and
    member that lacks the address the generated parameter asks for."""
    with open(registry.PATH) as f:
        doc = yaml.safe_load(f)
    doc["reference-points"]["x9"] = {"provider": "mme", "requirer": "spgwu", "listen-port": FREE_PORT,
                                     "tunnel-network": "10.250.97.0/30", "carries": "a synthetic interface"}
    extended = registry.parse(doc)
    monkeypatch.setattr(registry, "load", lambda path=registry.PATH: extended)
    assert "x9" not in extended.default_service_addresses("mme")
    problems = problems_of(descriptors.load_bundle())
    assert_problem(problems, "params/epc.yaml", "additionalParamsForVnf[1].additionalParams",
                   "member mme: parameter 'x9_service_addresses' is not supplied (needed by vnf/mme/mme_vnfd.yaml")
    assert_problem(problems, "params/eps_wg.yaml", "additionalParamsForVnf[3].additionalParams",
                   "member spgwu: parameter 'x9_service_addresses' is not supplied")
