"""vpnaas.charm.relation_lookup: ops' model, with a relation looked up by id built alone (one
relation-list, not one per relation of its endpoint), answers exactly what ops answers: the same
relation, its units, the endpoint's list holding the very objects already built, a relation Juju
no longer lists as ops builds it. On ops 1.5.4 under its own test harness (Python 3.6 too)."""
import pytest
import yaml
from listing_calls import ListingCalls
from ops.charm import CharmBase
from ops.testing import Harness

from vpnaas.charm import relation_lookup

META = yaml.safe_dump({"name": "hub", "provides": {"vpn": {"interface": "wireguard"}},
                       "requires": {"vpn-peer": {"interface": "wireguard"}}, "peers": {"ring": {"interface": "r"}}})


@pytest.fixture(params=["by id", "ops"])
def hub(request):
    """A unit with 5 relations on ``vpn`` (2 units each), with and without relation_lookup."""
    if request.param == "by id":
        relation_lookup.install()
    try:
        harness = Harness(CharmBase, meta=META)
        harness.begin()
        rids = []
        for i in range(5):
            rid = harness.add_relation("vpn", "s{}".format(i))
            for n in range(2):
                harness.add_relation_unit(rid, "s{}/{}".format(i, n))
            rids.append(rid)
        harness.model.relations._invalidate("vpn")      # what a new hook's model knows: nothing
        yield harness, rids, request.param
        harness.cleanup()
    finally:
        relation_lookup.uninstall()


def test_the_mapping_is_ops_own_unless_installed(hub):
    harness, _rids, mode = hub
    assert isinstance(harness.model.relations, relation_lookup.RelationsById) == (mode == "by id")


def test_a_relation_looked_up_by_id_is_built_alone_and_the_same_every_time(hub):
    harness, rids, mode = hub
    calls = ListingCalls(harness)
    rel = harness.model.get_relation("vpn", rids[2])
    assert rel.id == rids[2] and sorted(u.name for u in rel.units) == ["s2/0", "s2/1"] and rel.app.name == "s2"
    assert harness.model.get_relation("vpn", rids[2]) is rel
    if mode == "by id":
        assert calls.lists == [rids[2]] and calls.ids == []
    else:
        assert sorted(calls.lists) == sorted(rids) and calls.ids == ["vpn"]


def test_the_endpoints_list_is_ops_and_holds_the_relations_already_built(hub):
    harness, rids, _mode = hub
    rel = harness.model.get_relation("vpn", rids[1])
    listed = harness.model.relations["vpn"]
    assert [r.id for r in listed] == rids and listed[1] is rel
    assert harness.model.get_relation("vpn", rids[3]) is listed[3]
    assert {u.name for r in listed for u in r.units} == {"s{}/{}".format(i, n) for i in range(5) for n in range(2)}


def test_ids_lists_the_endpoint_without_building_a_relation():
    relation_lookup.install()
    try:
        harness = Harness(CharmBase, meta=META)
        harness.begin()
        rids = [harness.add_relation("vpn", "s{}".format(i)) for i in range(3)]
        harness.model.relations._invalidate("vpn")
        calls = ListingCalls(harness)
        assert harness.model.relations.ids("vpn") == rids and harness.model.relations.ids("vpn") == rids
        assert calls.ids == ["vpn"] and calls.lists == []
        assert harness.model.relations.ids("vpn-peer") == []
        with pytest.raises(KeyError):
            harness.model.relations.ids("nope")
        harness.cleanup()
    finally:
        relation_lookup.uninstall()


def test_a_relation_juju_no_longer_lists_is_built_as_ops_builds_it(hub):
    """ops' own rule: a relation id not listed (dead, or its relation-broken) is built alone, with
    the units relation-list gives (none when Juju says it is not found)."""
    harness, _rids, _mode = hub
    rel = harness.model.get_relation("vpn", 99)
    assert rel.id == 99 and rel.units == set()


def test_the_other_lookups_are_ops_own(hub):
    harness, rids, _mode = hub
    from ops.model import ModelError, TooManyRelatedAppsError
    with pytest.raises(TooManyRelatedAppsError):
        harness.model.get_relation("vpn")
    assert harness.model.get_relation("vpn-peer") is None
    with pytest.raises(ModelError):
        harness.model.get_relation("vpn", str(rids[0]))
    with pytest.raises(KeyError):
        harness.model.get_relation("nope", 1)


def test_the_harness_changes_reach_a_relation_built_by_id(hub):
    """ops' harness forgets an endpoint's relations when it changes them; so does the mapping."""
    harness, rids, _mode = hub
    assert len(harness.model.get_relation("vpn", rids[0]).units) == 2
    harness.add_relation_unit(rids[0], "s0/2")
    assert len(harness.model.get_relation("vpn", rids[0]).units) == 3


def test_a_peer_relation_looked_up_by_id_is_a_peer_relation():
    relation_lookup.install()
    try:
        harness = Harness(CharmBase, meta=META)
        harness.begin()
        rid = harness.add_relation("ring", "hub")
        harness.model.relations._invalidate("ring")
        rel = harness.model.get_relation("ring", rid)
        assert rel.app is harness.model.app
        harness.cleanup()
    finally:
        relation_lookup.uninstall()
