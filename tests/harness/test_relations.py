"""The tunnel relation under Harness: what a related unit's data does to the status and the VNF,
and what this unit publishes, when."""
from fake_vnf import keypair
from harness_helpers import peer_data


def test_incomplete_peer_data_waits_naming_the_unit(ready, vnf):
    ready.relate("vpn", "b/0", {"vpnaas-schema": "1", "endpoint": "192.168.8.20:51821"})
    assert ready.status.name == "waiting"
    assert ready.status.message == "vpn: b/0 has not published public-key, tunnel-address yet"
    assert vnf.devices["wg-vpn"].peers == []


def test_a_relation_without_units_waits_for_the_unit(ready, vnf):
    ready.harness.add_relation("vpn", "b")
    assert ready.status.name == "waiting"
    assert ready.status.message == "vpn: waiting for the remote unit to join"


def test_invalid_peer_data_blocks_naming_the_unit_with_a_short_printable_excerpt(ready, vnf):
    hostile = "x" * 300 + "\n[Peer]\nAllowedIPs = 0.0.0.0/0\x1b[2J"
    ready.relate("vpn", "b/0", peer_data(public_key=hostile))
    message = ready.status.message
    assert ready.status.name == "blocked"
    assert message.startswith("vpn: invalid data from b/0: b/0 public-key: ")
    assert all(" " <= ch <= "~" for ch in message) and len(message) < 200
    assert "AllowedIPs" not in message and "x" * 41 not in message
    assert vnf.devices["wg-vpn"].peers == []


def test_another_schema_version_blocks(ready, vnf):
    ready.relate("vpn", "b/0", dict(peer_data(), **{"vpnaas-schema": "2"}))
    assert ready.status.name == "blocked"
    assert "b/0 speaks relation schema '2'; this charm speaks '1' (upgrade both charms)" in ready.status.message


def test_publishes_once_the_key_is_known_on_the_vnf(ready, vnf):
    vnf.fault = "timeout"
    _, key = keypair()
    rel = ready.relate("vpn", "b/0", peer_data(key))
    assert ready.status.name == "waiting" and ready.published(rel) == {}
    vnf.fault = None
    ready.harness.charm.on.update_status.emit()
    # b/0 did not ask for peer-keys: it gets the tunnel data only (and no hook for nothing).
    assert ready.published(rel)["generation"].isdigit()
    assert ready.content(rel) == {
        "vpnaas-schema": "1",
        "public-key": vnf.devices["wg-vpn"].public_key,
        "endpoint": "10.0.0.5:51820",
        "tunnel-address": "10.9.0.1/30",
        "service-prefixes": "172.16.0.1/32",
        "rotation-protocol": "1",
        "pq-psk": "1",
    }
    assert vnf.peer_keys("wg-vpn") == [key]
    assert vnf.routes["172.16.0.2/32"] == ("wg-vpn", "172.16.0.1")


def test_peer_keys_go_only_to_a_unit_that_asks_for_them(ready, vnf):
    _, key = keypair()
    _, other = keypair()
    asks = ready.relate("vpn", "b/0", peer_data(key, wants_peer_keys=True))
    silent = ready.relate("vpn-peer", "c/0", peer_data(other, tunnel="10.9.1.1/30", service="172.16.1.1/32"))
    assert ready.published(asks)["peer-keys"] == key
    assert "peer-keys" not in ready.published(silent)
    # The plain tunnel charm waits for nothing, so it never asks.
    assert "wants-peer-keys" not in ready.published(asks)
    # b/0 stops asking (e.g. a charm revision without a waiting component): its wake-up is removed.
    ready.harness.update_relation_data(asks, "b/0", {"wants-peer-keys": ""})
    assert "peer-keys" not in ready.published(asks)


def test_a_hostile_wants_peer_keys_blocks_naming_the_unit_and_configures_nothing(ready, vnf):
    ready.relate("vpn", "b/0", dict(peer_data(), **{"wants-peer-keys": "yes\n[Peer]"}))
    assert ready.status.name == "blocked"
    assert ready.status.message.startswith("vpn: invalid data from b/0: b/0 wants-peer-keys: 'yes?[Peer]' is not")
    assert vnf.devices["wg-vpn"].peers == []


def test_a_peer_that_announces_too_much_keeps_only_what_it_may(ready, vnf):
    _, key = keypair()
    rel = ready.relate("vpn", "b/0", peer_data(key, service="172.16.5.0/24", wants_peer_keys=True))
    assert ready.status.name == "blocked"
    assert ready.status.message == ("vpn: refused 172.16.5.0/24 from b/0 on wg-vpn: a network; only single "
                                    "addresses unless vpn-peer-prefixes allows it, vpn: up, no handshake yet")
    assert vnf.allowed_ips("wg-vpn") == {key: ["10.9.0.2/32"]}
    assert "172.16.5.0/24" not in vnf.routes
    # The operator allows the network: the next config-changed applies it, and the unit is active.
    ready.configure(**{"vpn-peer-prefixes": "172.16.5.0/24"})
    assert ready.status.name == "active"
    assert vnf.allowed_ips("wg-vpn") == {key: ["10.9.0.2/32", "172.16.5.0/24"]}
    assert ready.published(rel)["peer-keys"] == key


def test_a_peer_that_announces_this_vnfs_own_key_is_refused(ready, vnf):
    ready.relate("vpn", "b/0", peer_data())
    own = vnf.devices["wg-vpn"].public_key
    ready.relate("vpn-peer", "c/0", peer_data(own, tunnel="10.9.1.1/30", service="172.16.1.1/32"))
    assert ready.status.name == "blocked"
    assert "refused c/0 on wg-vpn-peer: it announces this VNF's own key" in ready.status.message
    assert vnf.devices["wg-vpn-peer"].peers == []


def test_relation_broken_removes_the_device_and_writes_nothing_to_the_broken_relation(ready, vnf):
    rel = ready.relate("vpn", "b/0", peer_data())
    assert "wg-vpn" in vnf.devices
    writes = []
    relation_set = ready.harness._backend.relation_set

    def spy(relation_id, key, value, is_app):
        writes.append(relation_id)
        return relation_set(relation_id, key, value, is_app)
    ready.harness._backend.relation_set = spy
    ready.harness.remove_relation(rel)
    assert rel not in writes
    assert "wg-vpn" not in vnf.devices and "172.16.0.2/32" not in vnf.routes
    assert (ready.status.name, ready.status.message) == ("active", "ready, no tunnel related")


def test_a_vnf_whose_own_addresses_changed_is_replanned_in_the_same_login(ready, vnf):
    _, key = keypair()
    ready.relate("vpn", "b/0", peer_data(key, service="172.16.7.9/32"))
    assert vnf.routes["172.16.7.9/32"][0] == "wg-vpn"
    # The operator puts the VNF itself on 172.16.7.0/24: the peer's prefix would now capture it.
    vnf.interfaces.append(("eth2", "172.16.7.1/24"))
    logins, steps = vnf.logins, len(vnf.steps)
    ready.harness.charm.on.update_status.emit()
    # One login: the first step stops at its facts guard (other facts), the second applies the new plan.
    assert vnf.logins == logins + 1 and len(vnf.steps) == steps + 2
    assert vnf.steps[-2] == ["programs_check", "facts_guard"]
    assert "172.16.7.9/32" not in vnf.routes and vnf.allowed_ips("wg-vpn") == {key: ["10.9.0.2/32"]}
    assert ready.status.name == "blocked"
    assert ready.status.message.startswith("vpn: refused 172.16.7.9/32 from b/0 on wg-vpn: it overlaps this VNF's "
                                           "connected network 172.16.7.0/24")


def test_removal_leaves_nothing_of_the_tunnels_and_reconciles_no_more(ready, vnf):
    rel = ready.relate("vpn", "b/0", peer_data())
    assert vnf.devices and vnf.service_addresses
    ready.harness.remove_relation(rel)
    logins = vnf.logins
    ready.harness.charm.on.stop.emit()
    assert vnf.steps[-1] == ["teardown"] and vnf.logins == logins + 1
    assert vnf.devices == {} and vnf.routes == {} and vnf.service_addresses == []
    assert ready.status.message.startswith("removed: nothing of the tunnels is left on 10.0.0.5")
    ready.harness.charm.on.remove.emit()
    ready.harness.charm.on.update_status.emit()
    assert vnf.logins == logins + 1, "after stop, neither remove nor any other event touches the VNF again"
