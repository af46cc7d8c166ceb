"""add-peer and remove-peer with a key another peer holds (issue 36 item 3), on the shipped charm
under Harness against the fake VNF: a key belongs to the peer that held it first, and a call
about one peer never changes another. The deploy tool's side: tests/deploy/test_scale_hostile.py."""
import json

from fake_vnf import keypair
from harness_helpers import peer_data


def add_peer(unit, key, allowed, endpoint=""):
    return unit.act("add-peer", device="vpn", endpoint=endpoint, **{"public-key": key, "allowed-ips": allowed})


def test_a_second_add_peer_with_a_held_key_changes_nothing(ready, vnf):
    """Instance 2 reporting instance 1's key with its own addresses: the hub keeps instance 1."""
    _, one = keypair()
    assert add_peer(ready, one, "10.9.0.6/32,172.16.0.3/32", "192.168.8.21:51821").failed is None
    stored, applied, logins = ready.charm._stored.manual_peers, vnf.allowed_ips("wg-vpn"), vnf.logins
    for allowed, endpoint in (("10.9.0.10/32,172.16.0.4/32", "192.168.8.22:51821"),   # instance 2's addresses
                              ("10.9.0.6/32,172.16.0.3/32", "192.168.8.22:51821"),    # instance 1's, its endpoint
                              ("10.9.0.6/32", "192.168.8.21:51821")):                 # a part of them
        run = add_peer(ready, one, allowed, endpoint)
        assert run.failed == ("public-key: wg-vpn already has a manual peer with that key (allowed-ips "
                              "10.9.0.6/32,172.16.0.3/32, endpoint 192.168.8.21:51821): a key belongs to one peer; "
                              "remove-peer it first to give it other addresses")
        assert ready.charm._stored.manual_peers == stored and vnf.allowed_ips("wg-vpn") == applied
    assert vnf.logins == logins          # refused before any session
    # the same parameters again: nothing changes, the answer is the device's entry
    again = add_peer(ready, one, "172.16.0.3/32,10.9.0.6/32", "192.168.8.21:51821")
    assert again.failed is None and json.loads(again.results["tunnel"])["endpoint"] == "vpn"
    assert ready.charm._stored.manual_peers == stored and vnf.allowed_ips("wg-vpn") == applied


def test_an_add_peer_with_a_related_units_key_is_refused(ready, vnf):
    """Instance 0 is a related unit: its key is its own (manual peers would win a conflict)."""
    _, zero = keypair()
    ready.relate("vpn", "b/0", peer_data(zero))
    applied = vnf.allowed_ips("wg-vpn")
    run = add_peer(ready, zero, "10.9.0.10/32,172.16.0.4/32", "192.168.8.22:51821")
    assert run.failed is not None and "b/0" in run.failed
    assert ready.charm._stored.manual_peers == "{}" and vnf.allowed_ips("wg-vpn") == applied
    assert applied[zero] == ["10.9.0.2/32", "172.16.0.2/32"]


def test_remove_peer_naming_the_allowed_ips_removes_only_that_peer(ready, vnf):
    _, one = keypair()
    _, two = keypair()
    assert add_peer(ready, one, "10.9.0.6/32,172.16.0.3/32").failed is None
    assert add_peer(ready, two, "10.9.0.10/32,172.16.0.4/32").failed is None
    # scale-in of instance 2 with instance 1's key (what a lying instance 2 reports): refused
    run = ready.act("remove-peer", device="vpn", **{"public-key": one, "allowed-ips": "10.9.0.10/32,172.16.0.4/32"})
    assert run.failed == ("the manual peer with that key on wg-vpn has allowed-ips 10.9.0.6/32,172.16.0.3/32, "
                          "not 10.9.0.10/32,172.16.0.4/32: not removed")
    assert set(vnf.allowed_ips("wg-vpn")) == {one, two}
    run = ready.act("remove-peer", device="vpn", **{"public-key": two, "allowed-ips": "172.16.0.4/32,10.9.0.10/32"})
    assert run.failed is None and set(vnf.allowed_ips("wg-vpn")) == {one}
    bad = ready.act("remove-peer", device="vpn", **{"public-key": one, "allowed-ips": "10.9.0.6/32\nx"})
    assert bad.failed.startswith("allowed-ips: ") and set(vnf.allowed_ips("wg-vpn")) == {one}
    # without allowed-ips, as before: the key alone
    assert ready.act("remove-peer", device="vpn", **{"public-key": one}).failed is None
    assert "wg-vpn" not in vnf.devices
