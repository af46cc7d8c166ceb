"""A unit that asks its peers for ``peer-keys`` (the OAI components) leaves unread, in its first
session, the related units it never read (``VpnaasCharm.defers_unread``): Juju 2.9 would keep
what it reads then until a hook about that unit, and OSM configures every VNF at once, so those
peers have usually not published yet. The first hook about any peer after that reads all of them
in one session; a peer that configured this unit's key says so in ``peer-keys``, a hook about it.
A unit that does not ask for peer-keys reads everything, as before. The real charm, logged in to a
fake VNF."""
import pytest
from fake_vnf import keypair
from harness_helpers import CONFIG, peer_data

from vpnaas.core.hookclock import CLOCK


def spoke(i):
    return peer_data(keypair()[1], endpoint="192.168.8.{}:51820".format(20 + i), tunnel="10.9.0.{}/24".format(1 + i),
                     service="172.16.3.{}/32".format(i))


@pytest.fixture
def keyed(proxy, vnf):
    """The unit with its SSH key on the VNF, related to two units that published, not configured."""
    assert proxy.act("generate-ssh-key").results == {"generated": "true"}
    vnf.authorize(proxy.charm.keystore.public_key())
    data = {"s1/0": spoke(1), "s2/0": spoke(2)}
    rels = {unit: proxy.relate("vpn", unit, bag) for unit, bag in data.items()}
    return proxy, rels, data


def remote_reads(proxy):
    """The remote units whose databags the charm reads from now on (hook-tool relation-get). Not the
    applications' bags (the mirror, relation_data): Juju's agent reads those afresh in every hook."""
    backend, me, seen = proxy.harness._backend, proxy.charm.unit.name, []
    original = backend.relation_get

    def relation_get(relation_id, member_name, is_app):
        if member_name != me and not is_app:
            seen.append(member_name)
        return original(relation_id, member_name, is_app)
    backend.relation_get = relation_get
    return seen


def asks_for_peer_keys(proxy):
    proxy.charm.workload.waits_for_tunnels = True
    proxy.charm.tunnels.wants_peer_keys = True


def test_the_first_session_of_a_unit_that_asks_for_peer_keys_leaves_never_read_units_unread(keyed, vnf):
    proxy, rels, data = keyed
    asks_for_peer_keys(proxy)
    assert proxy.charm.defers_unread()
    CLOCK.counts.clear()
    reads = remote_reads(proxy)
    proxy.configure(**dict(CONFIG, **{"vpn-tunnel-address": "10.9.0.1/24"}))    # config-changed: the first session
    assert CLOCK.counts.get("peers_deferred") and reads == [] and proxy.charm.memory.units == {}
    assert vnf.peer_keys("wg-vpn") == [] and "public-key" in proxy.published(rels["s1/0"])
    assert not proxy.charm.defers_unread(), "its key is published: from now on it reads as before"
    # s1/0 configured this unit's key (its peer-keys): the hook about s1/0 reads s2/0 as well.
    CLOCK.counts.clear()
    del reads[:]
    mine = proxy.published(rels["s1/0"])["public-key"]
    proxy.harness.update_relation_data(rels["s1/0"], "s1/0", dict(data["s1/0"], **{"peer-keys": mine}))
    assert sorted(vnf.peer_keys("wg-vpn")) == sorted(b["public-key"] for b in data.values())
    assert "s1/0" in reads and not CLOCK.counts.get("peers_deferred")
    assert len(proxy.charm.memory.units) == 2, "both read (Harness keeps what ops loaded: not a tool-call count)"


def test_a_unit_that_does_not_ask_for_peer_keys_reads_every_unit_in_its_first_session(keyed, vnf):
    proxy, rels, data = keyed
    assert not proxy.charm.defers_unread()
    proxy.configure(**dict(CONFIG, **{"vpn-tunnel-address": "10.9.0.1/24"}))
    assert sorted(vnf.peer_keys("wg-vpn")) == sorted(b["public-key"] for b in data.values())


def test_a_hook_about_a_unit_reads_that_unit_even_in_the_first_session(keyed, vnf):
    proxy, rels, data = keyed
    asks_for_peer_keys(proxy)
    proxy.harness.disable_hooks()
    proxy.configure(**dict(CONFIG, **{"vpn-tunnel-address": "10.9.0.1/24"}))
    proxy.harness.enable_hooks()
    reads = remote_reads(proxy)
    moved = spoke(3)
    proxy.harness.update_relation_data(rels["s2/0"], "s2/0", moved)        # the first session, about s2/0
    assert vnf.peer_keys("wg-vpn") == [moved["public-key"]]
    assert set(reads) == {"s2/0"}


def test_the_check_after_a_first_session_whose_peers_had_not_published_opens_no_step(proxy, vnf, caplog):
    """OSM's verify-ssh-credentials right after the first session (the bench's order: every VNF
    configured at once): a peer left unread then and read now, still without its key, changes
    nothing on the VNF, so the check logs in once to answer (``hostname``) instead of a whole step;
    its status still names the peer it waits for. Its key, published later, is a hook about it."""
    assert proxy.act("generate-ssh-key").results == {"generated": "true"}
    vnf.authorize(proxy.charm.keystore.public_key())
    asks_for_peer_keys(proxy)
    rel = proxy.relate("vpn", "s1/0", {})                           # related; nothing published yet
    proxy.configure(**dict(CONFIG, **{"vpn-tunnel-address": "10.9.0.1/24"}))    # the first session
    steps, logins = len(vnf.steps), vnf.logins
    assert steps and vnf.peer_keys("wg-vpn") == []
    result = proxy.act("verify-ssh-credentials")
    assert result.results.get("verified") == "true"
    assert len(vnf.steps) == steps, "no step: nothing to change on the VNF"
    assert vnf.logins == logins + 1 and any("verify: ssh session" in r.getMessage() for r in caplog.records)
    assert "s1/0" in proxy.charm.unit.status.message
    bag = spoke(1)                                                  # its key: a hook about s1/0
    proxy.harness.update_relation_data(rel, "s1/0", bag)
    assert vnf.peer_keys("wg-vpn") == [bag["public-key"]]
