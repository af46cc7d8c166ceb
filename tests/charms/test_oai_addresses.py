"""A component's own and peer service addresses come from the registry alone (oai.addresses):
one for each reference point it is an end of, the peer's where the registry's ``peer-option``
says its NF needs it; a new reference point between existing components is its registry entry
(and the configuration line that uses it), with no other code changed."""
import base64
import copy
import ipaddress
import json

import pytest
import yaml
from charms_helpers import COMPONENTS, PEER_KEY, config_for

from bundle.charmspec import charm_spec
from vpnaas.core import model, registry
from vpnaas.core import plan as planning
from vpnaas.core.validation import InvalidValue
from vpnaas.oai import component as oai
from vpnaas.oai.cn5g import common as cn5g_common

with open(registry.PATH) as f:
    DOC = yaml.safe_load(f)


def checked_on_the_vnf(step):
    """{reference point: address} that the configure step's VNF-side check requires on the VNF
    (the arguments of oai_configure_addresses, vnf/oai/configure.sh), in the order sent."""
    [(first, count)] = [(first, count) for f, first, count in step.calls if f == "oai_configure_addresses"]
    pairs = step.args[first:first - 1 + count]  # after the component's title
    return dict(zip(pairs[::2], pairs[1::2]))


def first_address(config, endpoint):
    return ipaddress.ip_interface(config[endpoint + "-service-addresses"].split(",")[0].strip())


@pytest.mark.parametrize("name", sorted(COMPONENTS))
def test_each_component_has_an_address_on_each_of_its_reference_points(name):
    comp, config = COMPONENTS[name], config_for(name)
    at = comp.addresses_of(comp.config_values(config, None))
    ends = registry.load().endpoints_of(name)
    assert list(at.own) == [rp.name for rp in ends]
    assert at.own == {rp.name: first_address(config, rp.name) for rp in ends}
    assert at.peers == {rp.name: config[rp.peer_option(name)] for rp in ends if rp.peer_option(name)}
    assert at.peers or name == "spgwc", "every OAI component here but the SPGW-C reaches a peer"
    step = oai.configure_step(comp, comp.config_values(config, None))
    assert list(checked_on_the_vnf(step).items()) == [(rp, at.ip(rp)) for rp in at.own]


def test_each_peer_option_is_an_option_of_that_ends_charm():
    """The options the registry names are the charms' own (config.yaml): what an operator or a
    VNFD's config primitive sets is unchanged."""
    named = 0
    for rp in registry.load().reference_points.values():
        for side, option in rp.peer_options:
            component = rp.provider if side == "provider" else rp.requirer
            assert option in charm_spec(component)["config"]["options"], (rp.name, component, option)
            named += 1
    assert named == 12


def configuration_text(comp, values):
    """Everything a component's configure sends: the program, its arguments, its data section
    decoded, the service settings and the render spec (each file's edits and tokens)."""
    step = oai.configure_step(comp, values)
    secrets = {k: base64.b64decode(v).decode() for k, v in step.secrets.items()}
    return "\n".join([step.program(), json.dumps(step.args), json.dumps(secrets),
                      oai.service_settings(comp, values), json.dumps(comp.render_spec(values))])


@pytest.mark.parametrize("name,endpoint", [(name, rp.name) for name in sorted(COMPONENTS)
                                           for rp in registry.load().endpoints_of(name) if rp.peer_option(name)])
def test_each_peer_address_a_component_requires_reaches_its_configuration(name, endpoint):
    """A peer address the registry makes a component require (``peer-option``) is one its network
    function is configured with: required but never used, it would only refuse a start (the
    SPGW-C once required the MME's and the SPGW-U's, which OAI's SPGW-C never reads: the MME
    reaches it on S11 and the SPGW-U sets up the PFCP association)."""
    comp = COMPONENTS[name]
    option = registry.load().reference_points[endpoint].peer_option(name)
    marker = "10.123.45.67"
    text = configuration_text(comp, comp.config_values(config_for(name, **{option: marker}), None))
    assert marker in text, (name, endpoint, option)


def test_the_spgwc_needs_no_peer_address():
    """OAI's SPGW-C (openair-spgwc 2020.w36: etc/spgw_c.conf, read by sgwc_config.cpp and
    pgw_config.cpp) is configured with its own S11, SX and S5/S8 interfaces only: with no related
    peer and no option, its configuration is complete."""
    comp = COMPONENTS["spgwc"]
    assert "mme-address" not in charm_spec("spgwc")["config"]["options"]
    assert "spgwu-address" not in charm_spec("spgwc")["config"]["options"]
    at = comp.addresses_of(comp.config_values(config_for("spgwc"), None))
    assert at.peers == {} and list(at.own) == [rp.name for rp in registry.load().endpoints_of("spgwc")]
    assert {"s11", "sxab"} <= set(at.own)


def extended(**entries):
    doc = copy.deepcopy(DOC)
    doc["reference-points"].update(entries)
    return registry.parse(doc)


def plan_with(endpoint, role, own, peer_service, tunnel="10.251.5.0/30"):
    """A plan in which ``endpoint``'s related unit published ``peer_service``."""
    hosts = list(ipaddress.ip_network(tunnel).hosts())
    mine, theirs = (hosts[0], hosts[1]) if role == "provider" else (hosts[1], hosts[0])
    bag = {"vpnaas-schema": "1", "public-key": PEER_KEY, "endpoint": "192.168.8.2:51899",
           "tunnel-address": "{}/30".format(theirs), "service-prefixes": peer_service}
    config = {"ssh-hostname": "10.0.0.5", "tunnel-mtu": 1420, "persistent-keepalive": 25,
              endpoint + "-listen-port": 51899, endpoint + "-tunnel-address": "{}/30".format(mine),
              endpoint + "-service-addresses": own, endpoint + "-peer-prefixes": peer_service}
    return planning.build_plan(config, [model.TunnelEndpoint(endpoint, role)], {endpoint: [{"peer/0": bag}]}, {})


#: Listen ports no reference point of the registry has: the synthetic ones below take them, so
#: that a registry extended elsewhere (the registry extension test's copy) keeps them free.
FREE_PORTS = [p for p in range(65000, 65100)
              if p not in {rp.listen_port for rp in registry.load().reference_points.values()}]

X5 = {"provider": "upf", "requirer": "smf", "listen-port": FREE_PORTS[0], "tunnel-network": "10.251.5.0/30",
      "service-network": "172.16.95.0/24", "carries": "a second PFCP", "labelled": True, "binds": "both",
      "peer-option": {"provider": "smf-x5-address", "requirer": "upf-x5-address"}}


def test_a_new_reference_point_is_its_registry_entry(monkeypatch):
    """x5, a new reference point between the UPF and the SMF, only in the registry: both ends get
    their own address on it and the other's, the SMF's file its label placeholder resolved to that
    address, and its configure step checks the address on the VNF. No module of theirs changed."""
    reg = extended(x5=X5)
    monkeypatch.setattr(registry, "load", lambda path=registry.PATH: reg)
    smf, upf = COMPONENTS["smf"], COMPONENTS["upf"]
    values = smf.config_values(config_for("smf", **{"x5-service-addresses": "172.16.95.3/32",
                                                    "upf-x5-address": "172.16.95.4"}), None)
    at = values.addresses
    assert (at.ip("x5"), at.peers["x5"]) == ("172.16.95.3", "172.16.95.4")
    assert list(at.own) == ["n4", "n11", "x5"] and list(at.peers) == ["n4", "n11", "x5"]
    assert smf.interfaces == ("n4", "n11", "x5")
    spec = smf.render_spec(values)["files"][0]
    assert spec["tokens"][cn5g_common.iface("x5")] == {"iface_of": "172.16.95.3"}
    step = oai.configure_step(smf, values)
    assert checked_on_the_vnf(step) == {"n4": at.ip("n4"), "n11": at.ip("n11"), "x5": "172.16.95.3"}
    # The other end, its peer address from the relation (no option set): what the SMF published.
    upf_config = config_for("upf", **{"x5-service-addresses": "172.16.95.4/32"})
    plan = plan_with("x5", "provider", "172.16.95.4/32", "172.16.95.3/32")
    at = upf.config_values(upf_config, plan).addresses
    assert (at.ip("x5"), at.peers["x5"]) == ("172.16.95.4", "172.16.95.3")
    with pytest.raises(InvalidValue, match=r"smf-x5-address: not set and the x5 relation has no peer service"):
        upf.config_values(upf_config, None)
    # The fixture gives every reference point its IP plan's address (the registry's default here);
    # the charm refuses to configure without one.
    assert config_for("upf")["x5-service-addresses"] == "172.16.95.1/32"
    with pytest.raises(InvalidValue, match=r"x5-service-addresses: not set; the UPF needs its X5 service address"):
        upf.config_values(config_for("upf", **{"x5-service-addresses": ""}), None)


def test_a_new_reference_point_between_lte_components_is_its_registry_entry(monkeypatch):
    """The same for the EPS: s5x between the MME and the SPGW-U, where only the MME reads the
    peer's address (``peer-option`` for the requirer side only)."""
    reg = extended(s5x={"provider": "spgwu", "requirer": "mme", "listen-port": FREE_PORTS[1],
                        "tunnel-network": "10.251.6.0/30", "service-network": "172.16.96.0/24",
                        "carries": "a test", "peer-option": {"requirer": "spgwu-s5x-address"}})
    monkeypatch.setattr(registry, "load", lambda path=registry.PATH: reg)
    mme, spgwu = COMPONENTS["mme"], COMPONENTS["spgwu"]
    values = mme.config_values(config_for("mme", **{
        "s5x-service-addresses": "172.16.96.2/32", "spgwu-s5x-address": "172.16.96.1"}), None)
    at = mme.addresses_of(values)
    assert (str(at.own["s5x"]), at.peers["s5x"]) == ("172.16.96.2/32", "172.16.96.1")
    # The MME's configure step checks the new address on the VNF with its others (no line of
    # oai/lte/mme.py or vnf/oai/configure.sh names s5x).
    assert checked_on_the_vnf(oai.configure_step(mme, values)) == {rp: at.ip(rp) for rp in at.own}
    assert {"s6a", "s11", "s1c"} <= set(at.own) and list(at.own)[-1] == "s5x" and at.ip("s5x") == "172.16.96.2"
    values = spgwu.config_values(config_for("spgwu", **{"s5x-service-addresses": "172.16.96.1/32"}), None)
    at = spgwu.addresses_of(values)
    assert at.ip("s5x") == "172.16.96.1" and "s5x" not in at.peers
    assert checked_on_the_vnf(oai.configure_step(spgwu, values)) == {rp: at.ip(rp) for rp in at.own}
    assert {"sxab", "s1u"} <= set(at.own) and list(at.own)[-1] == "s5x"


@pytest.mark.parametrize("entry,message", [
    ({"peer-option": {"consumer": "x-address"}}, "peer-option maps provider and/or requirer to an option name"),
    ({"peer-option": ["smf-address"]}, "peer-option maps provider and/or requirer"),
    ({"peer-option": {"provider": "Smf Address"}}, "peer-option provider: 'Smf Address' is not an option name"),
    ({"peer-option": {"requirer": 7}}, "peer-option requirer: 7 is not an option name"),
])
def test_a_broken_peer_option_is_named(entry, message):
    with pytest.raises(registry.RegistryError, match="reference point x5: " + message):
        extended(x5=dict(X5, **entry))


def test_the_values_of_a_component_without_addresses_are_refused():
    class Bare(oai.Component[int]):
        name = "bare"

    with pytest.raises(TypeError, match="the values of bare carry no Addresses"):
        Bare().addresses_of(3)
