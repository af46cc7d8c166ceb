"""A unit that asks its peers for ``peer-keys`` and saw every related unit publish its key in a
hook about that unit before its own ``config`` (a VNF configured after its peers: OSM's LCM one VNF
after another, a VNF added to a running NS) reads them all in its first session and applies their
keys there: no second session, and the peers' handshakes need only their own session
(``published_peers``; ``VpnaasCharm.defers_unread``). A related unit it did not see published keeps
the first session deferring, as before (test_first_session_reads.py). The real charm, logged in to
a fake VNF."""
import pytest
from fake_vnf import keypair
from harness_helpers import CONFIG, peer_data

from vpnaas.charm import published_peers
from vpnaas.core.hookclock import CLOCK

FIRST = dict(CONFIG, **{"vpn-tunnel-address": "10.9.0.1/24"})


def spoke(i, published=True):
    if not published:
        return {}
    return peer_data(keypair()[1], endpoint="192.168.8.{}:51820".format(20 + i), tunnel="10.9.0.{}/24".format(1 + i),
                     service="172.16.3.{}/32".format(i))


@pytest.fixture
def asking(proxy, vnf):
    """The unit with its SSH key on the VNF, asking its peers for peer-keys, not configured."""
    assert proxy.act("generate-ssh-key").results == {"generated": "true"}
    vnf.authorize(proxy.charm.keystore.public_key())
    proxy.charm.workload.waits_for_tunnels = True
    proxy.charm.tunnels.wants_peer_keys = True
    return proxy


def sessions(proxy, caplog):
    return sum(1 for r in caplog.records if r.getMessage().startswith("reconcile: ssh session to"))


def test_peers_seen_published_before_the_config_are_applied_by_the_first_session(asking, vnf, caplog):
    data = {"s1/0": spoke(1), "s2/0": spoke(2)}
    rels = {unit: asking.relate("vpn", unit, bag) for unit, bag in data.items()}     # their hooks end unconfigured
    state = asking.charm.state_dir
    assert sorted(published_peers.load(state)) == sorted("{}/{}".format(rels[u], u) for u in data)
    assert sessions(asking, caplog) == 0 and not asking.charm.defers_unread()
    CLOCK.counts.clear()
    asking.configure(**FIRST)                                                          # the first session
    assert sessions(asking, caplog) == 1 and not CLOCK.counts.get("peers_deferred")
    assert sorted(vnf.peer_keys("wg-vpn")) == sorted(b["public-key"] for b in data.values())
    assert all(asking.published(rel)["public-key"] for rel in rels.values())


def test_one_peer_not_seen_published_keeps_the_first_session_deferring(asking, vnf):
    rels = {"s1/0": asking.relate("vpn", "s1/0", spoke(1)), "s2/0": asking.relate("vpn", "s2/0", spoke(2, False))}
    assert published_peers.load(asking.charm.state_dir) == ["{}/s1/0".format(rels["s1/0"])]
    assert asking.charm.defers_unread()
    CLOCK.counts.clear()
    asking.configure(**FIRST)
    assert CLOCK.counts.get("peers_deferred") and vnf.peer_keys("wg-vpn") == []
    assert "public-key" in asking.published(rels["s1/0"])


def test_a_peer_related_after_the_others_were_seen_keeps_the_first_session_deferring(asking, vnf):
    asking.relate("vpn", "s1/0", spoke(1))
    asking.harness.disable_hooks()          # s2/0's hooks are queued behind config-changed
    asking.relate("vpn", "s2/0", spoke(2))
    asking.harness.enable_hooks()
    assert asking.charm.defers_unread()
    asking.configure(**FIRST)
    assert vnf.peer_keys("wg-vpn") == []
