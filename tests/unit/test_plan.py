import pytest

from vpnaas.core import model, relation_data
from vpnaas.core import plan as p

MME = [model.TunnelEndpoint("s6a", "provider"), model.TunnelEndpoint("s11", "provider")]
BASE = {"ssh-hostname": "198.18.0.2", "tunnel-mtu": 1420, "persistent-keepalive": 25,
        "s6a-listen-port": 51821, "s11-listen-port": 51822,
        "s6a-endpoint-address": "192.168.8.2", "s6a-service-addresses": "172.16.6.2/32"}


def peer_bag(key, **over):
    bag = relation_data.encode(key, "192.168.8.129", 51821, "10.250.1.2/30", [])
    bag["service-prefixes"] = "172.16.6.129/32"
    bag.update(over)
    return bag


def test_no_relation_no_device():
    plan = p.build_plan(BASE, MME, {}, {})
    assert plan.errors == [] and plan.devices == []


def test_relation_without_data_gives_listening_device(wg_key):
    plan = p.build_plan(BASE, MME, {"s6a": [{}]}, {})
    dev = plan.device("s6a")
    assert dev.name == "wg-s6a" and dev.peers == []
    assert str(dev.address) == "10.250.1.1/30"  # provider: first host of the s6a network
    assert dev.waiting == ["waiting for the remote unit to join"]
    assert dev.publish_host == "192.168.8.2"


def test_requirer_takes_second_host_and_falls_back_to_ssh_hostname():
    plan = p.build_plan(dict(BASE, **{"s6a-endpoint-address": ""}), [model.TunnelEndpoint("s6a", "requirer")],
                        {"s6a": [{}]}, {})
    dev = plan.device("s6a")
    assert str(dev.address) == "10.250.1.2/30" and dev.publish_host == "198.18.0.2"


def test_complete_peer_data_gives_peer_with_routes(wg_key):
    key = wg_key()
    plan = p.build_plan(BASE, MME, {"s6a": [{"hss/0": peer_bag(key)}]}, {})
    dev = plan.device("s6a")
    assert [x.public_key for x in dev.peers] == [key]
    assert [str(n) for n in dev.peers[0].allowed_ips] == ["10.250.1.2/32", "172.16.6.129/32"]
    assert dev.peers[0].endpoint == "192.168.8.129:51821"
    # Routes carry this VNF's service address as preferred source.
    assert dev.routes() == [("10.250.1.2/32", "172.16.6.2"), ("172.16.6.129/32", "172.16.6.2")]


@pytest.mark.parametrize("missing", ["public-key", "endpoint", "tunnel-address", "vpnaas-schema"])
def test_partial_peer_data_waits(wg_key, missing):
    bag = peer_bag(wg_key())
    del bag[missing]
    dev = p.build_plan(BASE, MME, {"s6a": [{"hss/0": bag}]}, {}).device("s6a")
    assert dev.peers == [] and missing in dev.waiting[0] and dev.problems == []


@pytest.mark.parametrize("field, value", [
    ("public-key", "not-a-key"), ("endpoint", "192.168.8.129"), ("endpoint", "$(reboot):1"),
    ("tunnel-address", "10.250.1.2"), ("service-prefixes", "172.16.6.129/24"), ("vpnaas-schema", "2"),
])
def test_invalid_peer_data_is_reported_and_not_applied(wg_key, field, value):
    dev = p.build_plan(BASE, MME, {"s6a": [{"hss/0": peer_bag(wg_key(), **{field: value})}]}, {}).device("s6a")
    assert dev.peers == [] and len(dev.problems) == 1 and "hss/0" in dev.problems[0]


@pytest.mark.parametrize("key, value, fragment", [
    ("s6a-listen-port", "70000", "outside"),
    ("s6a-tunnel-address", "10.250.1.1", "prefix length"),
    ("s6a-service-addresses", "172.16.6.2/32;reboot", "s6a-service-addresses"),
    ("s6a-endpoint-address", "a b", "s6a-endpoint-address"),
    ("ssh-hostname", "x y;z", "ssh-hostname"),
    ("tunnel-mtu", "big", "tunnel-mtu"),
])
def test_bad_config_is_an_error(key, value, fragment):
    plan = p.build_plan(dict(BASE, **{key: value}), MME, {"s6a": [{}]}, {})
    assert plan.errors and fragment in plan.errors[0]


def test_same_port_twice_is_an_error():
    plan = p.build_plan(dict(BASE, **{"s11-listen-port": 51821}), MME, {"s6a": [{}], "s11": [{}]}, {})
    assert any("already used" in e for e in plan.errors)


def test_generic_endpoint_needs_tunnel_address():
    plan = p.build_plan({"ssh-hostname": "h", "tunnel-mtu": 1420, "persistent-keepalive": 0, "vpn-listen-port": 1},
                        [model.TunnelEndpoint("vpn", "provider")], {"vpn": [{}]}, {})
    assert plan.errors == [] and plan.missing == ["vpn-tunnel-address"]


def test_conflicting_peers_are_refused(wg_key):
    rels = {"s6a": [{"hss/0": peer_bag(wg_key()), "hss/1": peer_bag(wg_key())}]}
    dev = p.build_plan(BASE, MME, rels, {}).device("s6a")
    # Two newcomers claiming the same addresses: neither gets them (the policy's ownership rule).
    assert dev.peers == [] and all("also claimed by" in m for m in dev.problems)


def test_manual_peer_validation(wg_key):
    key = wg_key()
    ep, entry = p.validate_manual_peer({"device": "wg-s6a", "public-key": key, "endpoint": "203.0.113.5:51820",
                                        "allowed-ips": "10.9.0.0/24"}, MME)
    assert ep == "s6a" and entry == {"public-key": key, "endpoint": "203.0.113.5:51820",
                                     "allowed-ips": ["10.9.0.0/24"]}
    plan = p.build_plan(BASE, MME, {}, {"s6a": [entry]})
    assert plan.device("s6a").peers[0].source == "manual"
    for bad in ({"device": "s1u"}, {"public-key": "x"}, {"allowed-ips": ""}, {"endpoint": "nohostport"}):
        params = dict({"device": "s6a", "public-key": key, "allowed-ips": "10.9.0.0/24"}, **bad)
        with pytest.raises(p.validation.InvalidValue):
            p.validate_manual_peer(params, MME)


def test_fingerprint_is_stable_and_sensitive(wg_key):
    key = wg_key()
    rels = {"s6a": [{"hss/0": peer_bag(key)}]}
    a = p.build_plan(BASE, MME, rels, {}).fingerprint()
    assert a == p.build_plan(dict(BASE), MME, rels, {}).fingerprint()
    assert a != p.build_plan(dict(BASE, **{"tunnel-mtu": 1380}), MME, rels, {}).fingerprint()
    assert a != p.build_plan(BASE, MME, {"s6a": [{"hss/0": peer_bag(wg_key())}]}, {}).fingerprint()


def test_fingerprint_of_a_device_waiting_for_a_unit_names_the_unit_not_the_wording():
    """A unit left unread (a first session's deferral) and then read without its key waits for the
    same unit: the same fingerprint, so a check right after the first session needs no step. Another
    unit, or no unit yet, is another fingerprint; the status keeps its wording (``waiting``)."""
    unread = relation_data.Reading("hss/0", incomplete="hss/0 (read when its data next changes)")

    def plan(rel):
        return p.build_plan(BASE, MME, {"s6a": [rel]}, {})
    deferred, keyless = plan({"hss/0": unread}), plan({"hss/0": {}})
    assert deferred.device("s6a").waiting == [unread.incomplete]
    assert keyless.device("s6a").waiting[0].startswith("hss/0 has not published ")
    assert deferred.fingerprint() == keyless.fingerprint()
    assert keyless.fingerprint() == plan({"hss/0": {"endpoint": "192.168.8.129:51821"}}).fingerprint()
    assert keyless.fingerprint() != plan({"hss/1": {}}).fingerprint()
    assert keyless.fingerprint() != plan({}).fingerprint()


def test_publication_names_configured_relation_peers_only(wg_key):
    key, manual = wg_key(), wg_key()
    plan = p.build_plan(BASE, MME, {"s6a": [{"hss/0": peer_bag(key)}]},
                        {"s6a": [{"public-key": manual, "endpoint": "", "allowed-ips": ["10.9.0.0/24"]}]})
    bag = relation_data.publication(plan.device("s6a"), wg_key())
    assert bag["peer-keys"] == "" and bag["wants-peer-keys"] == ""    # hss/0 did not ask; neither does this unit
    assert set(bag) == set(relation_data.PUBLISHED)
    plan = p.build_plan(BASE, MME, {"s6a": [{"hss/0": peer_bag(key, **{"wants-peer-keys": "yes"})}]},
                        {"s6a": [{"public-key": manual, "endpoint": "", "allowed-ips": ["10.9.0.0/24"]}]})
    bag = relation_data.publication(plan.device("s6a"), wg_key(), wants_peer_keys=True)
    assert bag["peer-keys"] == key and bag["wants-peer-keys"] == "yes"


def test_clash_on_a_later_prefix_is_reported_not_raised(wg_key):
    first = peer_bag(wg_key())
    second = peer_bag(wg_key(), **{"tunnel-address": "10.250.1.3/30"})   # same service prefix only
    dev = p.build_plan(BASE, MME, {"s6a": [{"hss/0": first, "hss/1": second}]}, {}).device("s6a")
    # Only the clashing prefix is dropped; both tunnels still work.
    assert [[str(x) for x in peer.allowed_ips] for peer in dev.peers] == [["10.250.1.2/32"], ["10.250.1.3/32"]]
    assert sorted(dev.problems) == [
        "refused 172.16.6.129/32 from hss/0 on wg-s6a: also claimed by hss/1 on wg-s6a",
        "refused 172.16.6.129/32 from hss/1 on wg-s6a: also claimed by hss/0 on wg-s6a"]


@pytest.mark.parametrize("key, value", [("ssh-port", "0"), ("ssh-port", "99999"), ("ssh-connect-timeout", "x")])
def test_ssh_options_are_validated(key, value):
    plan = p.build_plan(dict(BASE, **{key: value}), MME, {}, {})
    assert plan.errors and key in plan.errors[0]


def test_peer_keys_are_per_relation(wg_key):
    k1, k2 = wg_key(), wg_key()
    rels = {"s6a": [{"hss/0": peer_bag(k1, **{"wants-peer-keys": "yes"})},
                    {"hss2/0": peer_bag(k2, **{"tunnel-address": "10.250.1.5/30", "service-prefixes": "172.16.7.1/32",
                                               "wants-peer-keys": "yes"})}]}
    dev = p.build_plan(dict(BASE, **{"s6a-tunnel-address": "10.250.1.1/29"}), MME, rels, {}).device("s6a")
    assert relation_data.publication(dev, wg_key(), {"hss/0"})["peer-keys"] == k1
    assert relation_data.publication(dev, wg_key(), {"hss2/0"})["peer-keys"] == k2
