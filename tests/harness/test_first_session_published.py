"""A unit that asks its peers for ``peer-keys`` and saw every related unit publish before its own
``config`` (a VNF configured after its peers and related before they published: OSM's order with
an LCM that configures one VNF after another, the demo's) reads them all in its first session and
applies their keys there: no second session, and the peers' handshakes need only their own
session (``published_peers``; ``VpnaasCharm.defers_unread``). "Saw publish": the second
relation-changed about the unit, as Juju runs one right after relation-joined and one per change
of its settings. A related unit not seen publishing keeps the first session deferring, as before
(test_first_session_reads.py). The real charm, logged in to a fake VNF."""
import pytest
from fake_vnf import keypair
from harness_helpers import CONFIG, peer_data

from vpnaas.charm import published_peers
from vpnaas.core.hookclock import CLOCK

FIRST = dict(CONFIG, **{"vpn-tunnel-address": "10.9.0.1/24"})


def spoke(i):
    return peer_data(keypair()[1], endpoint="192.168.8.{}:51820".format(20 + i), tunnel="10.9.0.{}/24".format(1 + i),
                     service="172.16.3.{}/32".format(i))


def joined(proxy, unit):
    """``unit`` related on ``vpn`` as Juju relates it: relation-joined, then the relation-changed
    Juju runs after it whatever the unit's data (ops' Harness runs only the first)."""
    rel = proxy.harness.add_relation("vpn", unit.split("/")[0])
    proxy.harness.add_relation_unit(rel, unit)
    proxy.harness._emit_relation_changed(rel, unit)
    return rel


@pytest.fixture
def asking(proxy, vnf):
    """The unit with its SSH key on the VNF, asking its peers for peer-keys, not configured."""
    assert proxy.act("generate-ssh-key").results == {"generated": "true"}
    vnf.authorize(proxy.charm.keystore.public_key())
    proxy.charm.workload.waits_for_tunnels = True
    proxy.charm.tunnels.wants_peer_keys = True
    return proxy


def sessions(caplog):
    return sum(1 for r in caplog.records if r.getMessage().startswith("reconcile: ssh session to"))


def test_peers_seen_publishing_before_the_config_are_applied_by_the_first_session(asking, vnf, caplog):
    rels = {unit: joined(asking, unit) for unit in ("s1/0", "s2/0")}
    assert asking.charm.defers_unread(), "joined, nothing published yet"
    data = {"s1/0": spoke(1), "s2/0": spoke(2)}
    for unit, bag in data.items():
        asking.harness.update_relation_data(rels[unit], unit, bag)     # their config: each publishes
    assert published_peers.load(asking.charm.state_dir) == {"{}/{}".format(rels[u], u): 2 for u in data}
    assert sessions(caplog) == 0 and not asking.charm.defers_unread()
    CLOCK.counts.clear()
    asking.configure(**FIRST)                                           # the first session
    assert sessions(caplog) == 1 and not CLOCK.counts.get("peers_deferred")
    assert sorted(vnf.peer_keys("wg-vpn")) == sorted(b["public-key"] for b in data.values())
    assert all(asking.published(rel)["public-key"] for rel in rels.values())


def test_one_peer_not_seen_publishing_keeps_the_first_session_deferring(asking, vnf):
    rels = {unit: joined(asking, unit) for unit in ("s1/0", "s2/0")}
    asking.harness.update_relation_data(rels["s1/0"], "s1/0", spoke(1))
    assert asking.charm.defers_unread()
    CLOCK.counts.clear()
    asking.configure(**FIRST)
    assert CLOCK.counts.get("peers_deferred") and vnf.peer_keys("wg-vpn") == []
    assert "public-key" in asking.published(rels["s1/0"])


def test_a_peer_whose_data_came_with_its_joined_hook_is_not_counted_published(asking, vnf):
    """A unit that published before this unit's relation-joined: one relation-changed covers both,
    which says nothing of its data; the first session defers it, as before."""
    rel = joined(asking, "s1/0")
    asking.harness.disable_hooks()
    asking.harness.update_relation_data(rel, "s1/0", spoke(1))
    asking.harness.enable_hooks()
    assert published_peers.load(asking.charm.state_dir) == {"{}/s1/0".format(rel): 1}
    assert asking.charm.defers_unread()
    asking.configure(**FIRST)
    assert vnf.peer_keys("wg-vpn") == []
