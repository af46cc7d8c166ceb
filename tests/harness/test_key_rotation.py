"""rotate-keys make-before-break, the generic charm under Harness against the fake VNF: as the
rotating unit, as a unit that follows a peer's rotation, against a peer of the previous release,
with hostile rotation fields, through a failed start and a dropped hook commit, and against a
partner that never finishes or never follows (the deadlines). The related unit b/0 is played by
the test: it publishes what a unit of this release would (rotation.py). A hook at a later time
is played by setting the charm's ``hook_time`` (on Juju every hook is a new charm process that
reads the clock once).
"""
from fake_vnf import keypair
from harness_helpers import peer_data

from vpnaas.core import rotation

B_SERVICE = "172.16.0.2/32"
B_HOST = "192.168.8.20"


def partner(key=None, **more):
    bag = dict(peer_data(key), **{"rotation-protocol": "1"})
    bag.update(more)
    return bag


def routed(vnf, prefix=B_SERVICE):
    return vnf.routes[prefix][0]


def test_rotate_keys_runs_a_temporary_device_until_the_partner_has_the_new_key(ready, vnf):
    b_key = keypair()[1]
    rel = ready.relate("vpn", "b/0", partner(b_key))
    old = vnf.devices["wg-vpn"].public_key
    run = ready.act("rotate-keys", device="vpn")
    assert run.failed is None and run.results["rotation-wg-vpn"].startswith("make-before-break")
    new = run.results["public-key-wg-vpn"]
    # The new key is on the temporary device; the main device keeps the old one and the routes.
    assert vnf.devices["wr-vpn"].public_key == new != old == vnf.devices["wg-vpn"].public_key
    assert vnf.devices["wr-vpn"].interface["ListenPort"] == "51920"
    assert vnf.devices["wr-vpn"].interface["Address"] == "10.9.0.1/32"
    assert vnf.peer_keys("wr-vpn") == [b_key] and routed(vnf) == "wg-vpn"
    mine = ready.published(rel)
    assert (mine["public-key"], mine["next-key"], mine["next-endpoint"], mine["next-peer-keys"]) == \
        (old, new, "10.0.0.5:51920", b_key)
    assert "rotating keys, waiting for b/0 to follow" in ready.status.message
    # b/0 follows: its temporary device accepts the new key, and its routes use it.
    ready.harness.update_relation_data(rel, "b/0", {"next-endpoint": B_HOST + ":51920", "next-peer-keys": new})
    assert routed(vnf) == "wr-vpn" and ("172.16.0.2/32", "wg-vpn", "wr-vpn") in vnf.route_moves
    assert vnf.devices["wg-vpn"].public_key == new, "the idle main device took the new key"
    assert vnf.peer_keys("wg-vpn") == [b_key]
    mine = ready.published(rel)
    assert mine["public-key"] == mine["next-key"] == new and mine["next-peer-keys"] == b_key
    assert "new key in place, waiting for b/0" in ready.status.message
    # b/0's main device holds the new key and its routes are back there.
    ready.harness.update_relation_data(rel, "b/0", {"peer-keys": new, "next-peer-keys": ""})
    assert routed(vnf) == "wg-vpn" and "wr-vpn" not in vnf.devices
    mine = ready.published(rel)
    assert mine["public-key"] == new and not {"next-key", "next-endpoint", "next-peer-keys"} & set(mine)
    assert ready.charm._stored.rotating == "[]" and "rotat" not in ready.status.message
    assert ready.status.name == "active"


def test_a_unit_follows_a_peer_that_rotates(ready, vnf):
    b_old, b_new = keypair()[1], keypair()[1]
    rel = ready.relate("vpn", "b/0", partner(b_old))
    mine = vnf.devices["wg-vpn"].public_key
    ready.harness.update_relation_data(rel, "b/0", {"next-key": b_new, "next-endpoint": B_HOST + ":51920",
                                                    "next-peer-keys": mine})
    # A temporary device with this unit's own key accepts b/0's new key; the routes to b/0 use it.
    assert vnf.devices["wr-vpn"].public_key == mine and vnf.peer_keys("wr-vpn") == [b_new]
    assert vnf.devices["wr-vpn"].peers[0]["endpoint"] == B_HOST + ":51920"
    assert routed(vnf) == "wr-vpn" and vnf.peer_keys("wg-vpn") == [b_old]
    published = ready.published(rel)
    assert (published["next-peer-keys"], published["next-endpoint"], published["peer-keys"]) == \
        (b_new, "10.0.0.5:51920", b_old)
    assert "next-key" not in published and "following the key rotation of b/0" in ready.status.message
    # b/0's main device took the new key: this unit's main device follows, its routes go back.
    ready.harness.update_relation_data(rel, "b/0", {"public-key": b_new})
    assert vnf.peer_keys("wg-vpn") == [b_new] and routed(vnf) == "wg-vpn"
    assert vnf.peer_keys("wr-vpn") == [b_new], "b/0 still routes to this unit through it"
    published = ready.published(rel)
    assert published["peer-keys"] == b_new and "next-peer-keys" not in published
    # b/0's rotation is over: the temporary device goes.
    ready.harness.update_relation_data(rel, "b/0", {"next-key": "", "next-endpoint": "", "next-peer-keys": ""})
    assert "wr-vpn" not in vnf.devices and routed(vnf) == "wg-vpn"
    assert not {"next-endpoint", "next-peer-keys", "peer-keys"} & set(ready.published(rel))
    assert ready.status.name == "active"


def test_a_second_rotation_waits_for_the_first(ready, vnf):
    rel = ready.relate("vpn", "b/0", partner())
    assert ready.act("rotate-keys").failed is None
    again = ready.act("rotate-keys", device="wg-vpn")
    assert again.failed.startswith("a key rotation is under way on wg-vpn (rotating keys, waiting for b/0 to "
                                   "follow); run rotate-keys again when it has finished (its deadline: ")
    ready.harness.update_relation_data(rel, "b/0", {"next-key": keypair()[1], "next-endpoint": B_HOST + ":51920"})
    assert "under way" in ready.act("rotate-keys").failed


def test_a_peer_of_the_previous_release_gets_the_key_rotated_in_place(ready, vnf):
    rel = ready.relate("vpn", "b/0", peer_data())
    old = vnf.devices["wg-vpn"].public_key
    run = ready.act("rotate-keys", device="vpn")
    assert run.failed is None and run.results["rotation-wg-vpn"].startswith("in place")
    assert vnf.devices["wg-vpn"].public_key == run.results["public-key-wg-vpn"] != old
    assert "wr-vpn" not in vnf.devices and ready.published(rel)["public-key"] == run.results["public-key-wg-vpn"]
    assert ready.charm._stored.rotating == "[]"


def test_a_rotation_that_could_not_start_is_not_left_half_done(ready, vnf):
    ready.relate("vpn", "b/0", partner())
    vnf.fault = "refused"
    run = ready.act("rotate-keys")
    assert run.failed.startswith("not rotated: ")
    assert ready.charm._stored.rotating == "[]"
    vnf.fault = None
    ready.harness.charm.on.update_status.emit()
    assert "wr-vpn" not in vnf.devices and ready.status.name == "active"


def test_a_publication_juju_dropped_mid_rotation_is_published_again_without_a_session(ready, vnf):
    rel = ready.relate("vpn", "b/0", partner())
    new = ready.act("rotate-keys").results["public-key-wg-vpn"]
    ready.harness.update_relation_data(rel, "b/0", {"next-endpoint": B_HOST + ":51920", "next-peer-keys": new})
    published = ready.published(rel)
    assert published["public-key"] == new
    ready.harness.update_relation_data(rel, ready.charm.unit.name, {k: "" for k in published})
    logins, keys = vnf.logins, {n: d.public_key for n, d in vnf.devices.items()}
    ready.harness.update_relation_data(rel, "b/0", {"unrelated": "retry"})   # Juju runs the hook again
    assert ready.content(rel) == {k: v for k, v in published.items() if k != "generation"} and vnf.logins == logins
    assert int(ready.published(rel)["generation"]) > int(published["generation"]), "written again: a newer one"
    assert {n: d.public_key for n, d in vnf.devices.items()} == keys


def test_hostile_rotation_fields_refuse_the_unit(ready, vnf):
    other = keypair()[1]
    ready.relate("vpn-peer", "c/0", dict(peer_data(other, tunnel="10.9.1.1/30", service="172.16.1.9/32")))
    rel = ready.relate("vpn", "b/0", partner())
    mine = vnf.devices["wg-vpn"].public_key
    for change, why in [({"next-key": other}, "its public key is also announced by c/0"),
                        ({"next-key": mine}, "it announces this VNF's own key"),
                        ({"next-endpoint": "203.0.113.9:51920"}, "is not on the host of its endpoint"),
                        ({"next-peer-keys": mine + "\n[Peer]"}, "b/0 next-peer-keys"),
                        ({"rotation-protocol": "1;reboot"}, "is not a protocol version")]:
        ready.harness.update_relation_data(rel, "b/0", dict({"next-key": "", "next-endpoint": ""}, **change))
        assert ready.status.name == "blocked" and why in ready.status.message, (change, ready.status.message)
        assert "wr-vpn" not in vnf.devices and vnf.peer_keys("wg-vpn-peer") == [other]
    # A later protocol this release does not speak: the unit is followed in place, as before.
    ready.harness.update_relation_data(rel, "b/0", {"next-peer-keys": "", "rotation-protocol": "2",
                                                    "next-key": keypair()[1], "next-endpoint": B_HOST + ":51920"})
    assert ready.status.name == "active" and "wr-vpn" not in vnf.devices


def test_a_temporary_device_that_fails_is_offered_to_nobody(ready, vnf):
    rel = ready.relate("vpn", "b/0", partner())
    vnf.broken_devices["wr-vpn"] = "wg-quick up wr-vpn failed: Address already in use"
    run = ready.act("rotate-keys")
    assert run.failed == "not rotated: wr-vpn: wg-quick up wr-vpn failed: Address already in use"
    assert not {"next-key", "next-endpoint", "next-peer-keys"} & set(ready.published(rel))
    assert ready.charm._stored.rotating == "[]"
    assert "wr-vpn failed" in ready.status.message and ready.status.name == "blocked"
    del vnf.broken_devices["wr-vpn"]
    ready.harness.charm.on.update_status.emit()
    assert "wr-vpn" not in vnf.devices and ready.status.name == "active"


def later(ready, seconds):
    """The next hook runs ``seconds`` after the last one."""
    ready.charm.hook_time += seconds


def test_a_rotation_a_peer_never_finishes_is_followed_until_its_deadline_only(ready, vnf):
    """Issue 36: a related unit that publishes rotation-protocol 1 with a next-key and a
    next-endpoint and never finishes. It may delay its own tunnel, never this unit's operations."""
    b_key = keypair()[1]
    rel = ready.relate("vpn", "b/0", partner(b_key))
    mine = vnf.devices["wg-vpn"].public_key
    ready.harness.update_relation_data(rel, "b/0", {"next-key": keypair()[1], "next-endpoint": B_HOST + ":51920",
                                                    "next-peer-keys": mine})     # it even offers its path
    assert "wr-vpn" in vnf.devices and routed(vnf) == "wr-vpn"
    assert "following the key rotation of b/0" in ready.status.message
    assert "run rotate-keys again when it has finished (its deadline: " in ready.act("rotate-keys").failed
    later(ready, rotation.FOLLOW_DEADLINE - 60)
    ready.harness.charm.on.update_status.emit()
    assert "wr-vpn" in vnf.devices, "still within its time"
    later(ready, 61)
    ready.harness.charm.on.update_status.emit()       # any hook after the deadline
    assert "wr-vpn" not in vnf.devices and routed(vnf) == "wg-vpn" and vnf.peer_keys("wg-vpn") == [b_key]
    assert not {"next-endpoint", "next-peer-keys"} & set(ready.published(rel))
    assert "rotation deadline passed for b/0: in place" in ready.status.message
    # This unit's own rotation proceeds (b/0, followed no more, gets the new key in place).
    run = ready.act("rotate-keys")
    assert run.failed is None and run.results["rotation-wg-vpn"].startswith("in place")
    assert vnf.devices["wg-vpn"].public_key == run.results["public-key-wg-vpn"]
    # Dropping its rotation and starting another at once does not buy b/0 a new deadline ...
    ready.harness.update_relation_data(rel, "b/0", {"next-key": "", "next-endpoint": ""})
    later(ready, 10)
    ready.harness.update_relation_data(rel, "b/0", {"next-key": keypair()[1], "next-endpoint": B_HOST + ":51920"})
    assert "wr-vpn" not in vnf.devices and ready.act("rotate-keys").failed is None
    # ... only being idle for as long does.
    ready.harness.update_relation_data(rel, "b/0", {"next-key": "", "next-endpoint": ""})
    later(ready, rotation.FOLLOW_DEADLINE + 1)
    ready.harness.update_relation_data(rel, "b/0", {"next-key": keypair()[1], "next-endpoint": B_HOST + ":51920"})
    assert "wr-vpn" in vnf.devices and "following the key rotation of b/0" in ready.status.message


def test_a_rotation_a_partner_never_follows_switches_at_its_deadline_and_ends(ready, vnf):
    rel = ready.relate("vpn", "b/0", partner())
    old = vnf.devices["wg-vpn"].public_key
    new = ready.act("rotate-keys").results["public-key-wg-vpn"]
    later(ready, rotation.DEADLINE / 2)
    ready.harness.charm.on.update_status.emit()
    assert vnf.devices["wg-vpn"].public_key == old and "waiting for b/0 to follow" in ready.status.message
    later(ready, rotation.DEADLINE / 2 + 1)
    ready.harness.charm.on.update_status.emit()
    # b/0 never followed: the main device took the new key anyway; b/0 follows it in place.
    assert vnf.devices["wg-vpn"].public_key == new and ready.published(rel)["public-key"] == new
    assert "rotation deadline passed for b/0: in place" in ready.status.message
    ready.harness.charm.on.update_status.emit()
    assert "wr-vpn" not in vnf.devices and ready.charm._stored.rotating == "[]"
    assert not {"next-key", "next-endpoint", "next-peer-keys"} & set(ready.published(rel))
    assert ready.status.name == "active" and "rotat" not in ready.status.message
