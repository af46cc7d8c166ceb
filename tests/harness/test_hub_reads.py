"""A hub's relation hook reads and validates only what it is about (relation_memory): its own
relation's members and remote unit's databag and the relations it must read back, while
update-status and the other checks read everything. The other relations' members are those the
memory recorded (Juju 2.9 changes them only with hooks of their own), read afresh whenever the
memory cannot answer (no record, a relation it has no entry for, a member it has no reading of);
nothing unvalidated is used. The real charm, logged in to a fake VNF."""
import pytest
from fake_vnf import keypair
from harness_helpers import CONFIG, peer_data
from listing_calls import ListingCalls

from vpnaas.charm import relation_cache, relation_memory
from vpnaas.core import unitstate
from vpnaas.core.hookclock import CLOCK

SPOKES = 6
ENDPOINTS = ("vpn", "vpn-peer")


@pytest.fixture
def hub(ready, vnf):
    ready.configure(**{"vpn-tunnel-address": "10.9.0.1/24"})
    rels = {}
    for i in range(1, SPOKES + 1):
        unit = "s{}/0".format(i)
        rels[unit] = ready.relate("vpn", unit, peer_data(keypair()[1], endpoint="192.168.8.{}:51820".format(20 + i),
                                                        tunnel="10.9.0.{}/24".format(1 + i),
                                                        service="172.16.3.{}/32".format(i)))
    assert len(vnf.peer_keys("wg-vpn")) == SPOKES
    return ready, rels


class Reads(object):
    """The hook-tool reads of databags a run makes: remote units' and this unit's own."""

    def __init__(self, harness):
        self.remote, self.own, self.apps = [], [], []
        backend = harness._backend
        original = backend.relation_get
        me = harness.charm.unit.name

        def relation_get(relation_id, member_name, is_app):
            # Applications' bags (the mirror and its request: relation_data) apart: Juju's agent
            # reads those afresh in every hook, they are never the stale copy a unit's data can be.
            (self.apps if is_app else self.own if member_name == me else self.remote).append(member_name)
            return original(relation_id, member_name, is_app)
        backend.relation_get = relation_get
        self.undo = lambda: setattr(backend, "relation_get", original)


def test_a_spokes_relation_changed_reads_and_validates_that_spoke_only(hub, vnf):
    unit, rels = hub
    reads = Reads(unit.harness)
    CLOCK.counts.clear()
    new = peer_data(keypair()[1], endpoint="192.168.8.23:51820", tunnel="10.9.0.4/24", service="172.16.3.3/32")
    unit.harness.update_relation_data(rels["s3/0"], "s3/0", new)
    assert new["public-key"] in vnf.peer_keys("wg-vpn") and len(vnf.peer_keys("wg-vpn")) == SPOKES
    assert set(reads.remote) == {"s3/0"}, reads.remote
    assert CLOCK.counts.get("peers_validated") == 1 and CLOCK.counts.get("peers_judged") == 1
    assert len(set(reads.own)) <= 2, "this hook's relation, and what the last run wrote"
    reads.undo()


def test_update_status_reads_every_spoke_and_everything_this_unit_published(hub, vnf):
    unit, rels = hub
    CLOCK.counts.clear()
    unit.charm.on.update_status.emit()
    # (Harness keeps the databags ops loaded in earlier events: the charm's own count is the measure.)
    assert CLOCK.counts.get("databags_read") == SPOKES and CLOCK.counts.get("own_databags_read") == SPOKES
    assert not CLOCK.counts.get("peers_validated"), "unchanged databags (same digests) are not validated again"


def test_another_spokes_data_is_what_its_own_last_hook_read_as_juju_hands_it(hub, vnf):
    """Juju 2.9 refreshes only the hook's own remote unit: a spoke's new data reaches the hub with
    that spoke's relation-changed. Until then the hub plans with what it read before (as Juju
    would answer it), and takes the news in the spoke's hook."""
    unit, rels = hub
    old = set(vnf.peer_keys("wg-vpn"))
    moved = peer_data(keypair()[1], endpoint="192.168.8.25:51820", tunnel="10.9.0.6/24", service="172.16.3.5/32")
    unit.harness.disable_hooks()
    unit.harness.update_relation_data(rels["s5/0"], "s5/0", moved)
    unit.harness.enable_hooks()
    unit.harness.update_relation_data(rels["s1/0"], "s1/0", {"wants-peer-keys": "yes"})
    assert set(vnf.peer_keys("wg-vpn")) == old
    unit.harness.update_relation_data(rels["s5/0"], "s5/0", {"peer-keys": ""})     # s5/0's own hook
    assert moved["public-key"] in vnf.peer_keys("wg-vpn")


def test_a_departed_spoke_is_gone_from_the_plan_and_from_the_memory(hub, vnf):
    unit, rels = hub
    gone = unit.harness.get_relation_data(rels["s2/0"], "s2/0")["public-key"]
    unit.harness.remove_relation_unit(rels["s2/0"], "s2/0")
    assert gone not in vnf.peer_keys("wg-vpn") and len(vnf.peer_keys("wg-vpn")) == SPOKES - 1
    assert not any(slot.endswith("/s2/0") for slot in unit.charm.memory.units)


def test_invalid_data_is_never_used_even_when_remembered(hub, vnf):
    """A spoke that publishes a key the grammar refuses is refused in its hook, and stays refused
    (the memory keeps the refusal, not the data) until it publishes good data again."""
    unit, rels = hub
    unit.harness.update_relation_data(rels["s4/0"], "s4/0", {"public-key": "not-a-key"})
    assert any("invalid data from s4/0" in p for p in unit.charm.build_plan().device("vpn").problems)
    unit.harness.update_relation_data(rels["s1/0"], "s1/0", {"wants-peer-keys": "yes"})
    plan = unit.charm.build_plan()
    assert "s4/0" not in {p.source for p in plan.device("vpn").peers}
    assert unit.charm.memory.units[relation_cache.slot(rels["s4/0"], "s4/0")]["reading"].get("invalid")


def test_the_memory_goes_through_its_file_and_back(hub, tmp_path):
    unit, _rels = hub
    unit.charm.memory.save(str(tmp_path))
    again = relation_memory.load(str(tmp_path))
    assert again.as_dict() == unit.charm.memory.as_dict()


def test_nothing_related_is_read_before_ssh_hostname_so_the_first_session_takes_every_key(proxy, vnf):
    """Before the config primitive sets ssh-hostname no run reads a related unit's data: Juju 2.9's
    unit agent would keep that (keyless) reading for actions and other relations' hooks until the
    unit's own next relation-changed, so the first session could not take the keys the spokes
    published meanwhile, each costing a session of its own."""
    unit = proxy
    unit.harness.disable_hooks()
    rels = {}
    for i in (1, 2):
        rels[i] = unit.relate("vpn", "s{}/0".format(i), {})
    unit.harness.enable_hooks()
    reads = Reads(unit.harness)
    assert unit.act("generate-ssh-key").results == {"generated": "true"}
    unit.act("get-ssh-public-key")
    unit.charm.on.config_changed.emit()
    unit.charm.on.update_status.emit()
    assert reads.remote == []
    vnf.authorize(unit.charm.keystore.public_key())
    keys = {}
    unit.harness.disable_hooks()      # the spokes publish; their relation-changed hooks wait in the queue
    for i in (1, 2):
        keys[i] = keypair()[1]
        unit.harness.update_relation_data(rels[i], "s{}/0".format(i), peer_data(
            keys[i], endpoint="192.168.8.{}:51820".format(20 + i), tunnel="10.9.0.{}/24".format(1 + i),
            service="172.16.3.{}/32".format(i)))
    unit.harness.update_config(dict(CONFIG, **{"vpn-tunnel-address": "10.9.0.1/24"}))
    unit.harness.enable_hooks()
    unit.charm.on.config_changed.emit()
    assert set(reads.remote) == {"s1/0", "s2/0"}
    assert set(vnf.peer_keys("wg-vpn")) == {keys[1], keys[2]}
    reads.undo()


class Lists(ListingCalls):
    """The relation ids a run lists the members of (relation-list, ``members``) and the endpoints
    it lists (relation-ids), from a hook's start: what ops' model knows is forgotten first, as in a
    new process (Harness keeps one model for every event)."""

    def __init__(self, harness):
        for ep in ENDPOINTS:
            harness.model.relations._invalidate(ep)
        super().__init__(harness)
        self.members = self.lists


def _spoke(i):
    return peer_data(keypair()[1], endpoint="192.168.8.{}:51820".format(20 + i), tunnel="10.9.0.{}/24".format(1 + i),
                     service="172.16.3.{}/32".format(i))


def test_a_spokes_relation_changed_lists_only_its_own_relation(hub, vnf):
    """ops restores the event's relation alone, and the charm takes the other relations' members
    from its memory (relation_memory): one relation-list, relation-ids once per endpoint, whatever
    the number of spokes."""
    unit, rels = hub
    lists = Lists(unit.harness)
    new = _spoke(3)
    unit.harness.update_relation_data(rels["s3/0"], "s3/0", new)
    assert new["public-key"] in vnf.peer_keys("wg-vpn") and len(vnf.peer_keys("wg-vpn")) == SPOKES
    assert lists.members == [rels["s3/0"]] and sorted(lists.ids) == sorted(ENDPOINTS), (lists.members, lists.ids)
    lists.undo()


def test_update_status_lists_every_relation_and_replaces_the_remembered_membership(hub, vnf):
    unit, rels = hub
    unit.charm.memory.relations[str(rels["s2/0"])]["units"] = []      # a record gone wrong
    lists = Lists(unit.harness)
    unit.charm.on.update_status.emit()
    assert sorted(lists.members) == sorted(rels.values())
    assert unit.charm.memory.members(rels["s2/0"], "vpn") == ["s2/0"]
    lists.undo()


def test_a_broken_relation_leaves_the_membership_and_the_next_hooks_list_only_their_own(hub, vnf):
    unit, rels = hub
    gone = unit.harness.get_relation_data(rels["s2/0"], "s2/0")["public-key"]
    unit.harness.remove_relation(rels["s2/0"])
    assert gone not in vnf.peer_keys("wg-vpn") and len(vnf.peer_keys("wg-vpn")) == SPOKES - 1
    assert str(rels["s2/0"]) not in unit.charm.memory.relations
    lists = Lists(unit.harness)
    unit.harness.update_relation_data(rels["s4/0"], "s4/0", _spoke(4))
    assert lists.members == [rels["s4/0"]] and gone not in vnf.peer_keys("wg-vpn")
    lists.undo()


def test_a_relation_the_memory_has_no_entry_for_is_read_whole(hub, vnf):
    """A relation whose hooks never reached the charm (the gate ended them, or they are still
    queued) while Juju lists a member on it: a hook about another relation lists it, and reads
    the member it does not know, as Juju would list and answer them."""
    unit, rels = hub
    unit.harness.disable_hooks()
    new = _spoke(7)
    rid = unit.relate("vpn", "s7/0", new)
    unit.harness.enable_hooks()
    lists = Lists(unit.harness)
    unit.harness.update_relation_data(rels["s1/0"], "s1/0", _spoke(1))
    assert sorted(lists.members) == sorted([rels["s1/0"], rid])
    assert new["public-key"] in vnf.peer_keys("wg-vpn") and unit.charm.memory.members(rid, "vpn") == ["s7/0"]
    lists.undo()


def test_a_unit_that_joined_while_the_memory_was_lost_is_planned(hub, vnf):
    """The memory lost (a new charm revision's grammar, an unreadable file): the next hook reads
    every relation and unit, whatever it is about."""
    unit, rels = hub
    unit.harness.disable_hooks()
    unit.harness.add_relation_unit(rels["s5/0"], "s5/1")
    second = _spoke(8)
    unit.harness.update_relation_data(rels["s5/0"], "s5/1", second)
    unit.harness.enable_hooks()
    unit.charm.memory.relations = None
    lists = Lists(unit.harness)
    unit.harness.update_relation_data(rels["s1/0"], "s1/0", _spoke(1))
    assert sorted(lists.members) == sorted(rels.values())
    assert second["public-key"] in vnf.peer_keys("wg-vpn")
    assert unit.charm.memory.members(rels["s5/0"], "vpn") == ["s5/0", "s5/1"]
    lists.undo()


def test_a_remembered_member_juju_no_longer_lists_is_not_used(hub, vnf):
    """A membership record ahead of Juju's (a hook whose commit Juju did not make, run again by
    Juju): a remembered member with no reading kept makes its relation read afresh."""
    unit, rels = hub
    unit.charm.memory.relations[str(rels["s6/0"])]["units"].append("s6/9")
    lists = Lists(unit.harness)
    unit.harness.update_relation_data(rels["s1/0"], "s1/0", _spoke(1))
    assert sorted(lists.members) == sorted([rels["s1/0"], rels["s6/0"]])
    assert unit.charm.memory.members(rels["s6/0"], "vpn") == ["s6/0"] and len(vnf.peer_keys("wg-vpn")) == SPOKES
    lists.undo()


def test_a_run_that_died_after_its_step_makes_the_next_hook_list_every_relation(hub, vnf):
    """The memory is saved at the commit: a run that stepped the VNF and died before it (the
    vnf-unconfirmed mark) leaves a membership record behind the VNF, and behind Juju's when Juju
    is told to skip that hook. The next relation hook, about another relation, lists every
    relation as Juju has it (review7 H1)."""
    unit, rels = hub
    kept = unit.harness.get_relation_data(rels["s2/0"], "s2/0")["public-key"]
    unit.charm.memory.relations[str(rels["s2/0"])]["units"] = []      # the record of before the dead run
    unitstate.mark_vnf_unconfirmed(unit.charm.state_dir)
    lists = Lists(unit.harness)
    unit.harness.update_relation_data(rels["s1/0"], "s1/0", _spoke(1))
    assert sorted(lists.members) == sorted(rels.values())
    assert unit.charm.memory.members(rels["s2/0"], "vpn") == ["s2/0"] and kept in vnf.peer_keys("wg-vpn")
    lists.undo()
