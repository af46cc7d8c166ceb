"""A unit of a scaled VDU (OSM's <OSM> as osm-instance) under Harness against the fake VNF: it
publishes and applies its own addresses; a hostile <OSM> blocks it and changes nothing."""
import json

from fake_vnf import keypair
from harness_helpers import peer_data


def own_bag(proxy, rel):
    return proxy.harness.get_relation_data(rel, proxy.harness.charm.unit.name)


def test_instance_two_takes_its_own_addresses_and_answers_add_peer_with_them(ready, vnf):
    """Never related (OSM relates only instance 0): the hub is a manual peer (deploy scale)."""
    ready.configure(**{"osm-instance": "{count_index: 2, member_vnf_index: spgwu, vdu_id: vm}"})
    _private, key = keypair()
    act = ready.act("add-peer", device="vpn", endpoint="192.168.8.20:51821",
                    **{"public-key": key, "allowed-ips": "10.9.0.2/32,172.16.0.2/32"})
    assert act.failed is None, act.failed
    entry = json.loads(act.results["tunnel"])
    assert (entry["address"], entry["service-addresses"]) == ("10.9.0.9/30", ["172.16.0.3/32"])
    assert entry["public-key"] == act.results["public-key-wg-vpn"] and entry["listen-port"] == 51820
    assert ready.status.name == "active", ready.status.message


def test_a_hostile_osm_parameter_blocks_and_applies_nothing(ready, vnf):
    rel = ready.relate("vpn", "b/0", peer_data())
    steps = len(vnf.steps)
    ready.configure(**{"osm-instance": "{count_index: '1; rm -rf /'}"})
    assert ready.status.name == "blocked" and "osm-instance: count_index" in ready.status.message
    assert len(vnf.steps) == steps
    assert own_bag(ready, rel)["tunnel-address"] == "10.9.0.1/30"
