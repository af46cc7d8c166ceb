"""The application-data mirror, on the real charm logged in to a fake VNF (relation_data, "Mirror").

A unit with several relations on one endpoint (a hub), as its application's leader, asks the
remote applications there for a mirror; the leader of such an application mirrors its unit's
publication (with its generation) in its application's bag, and nowhere else (a unit with one
relation per endpoint, as in the EPS, writes no application bag at all). The hub takes a mirror
only for a current member and a newer generation, and never plans with an older publication
than one it planned with (the review's probe: endpoint .21, .99 from the mirror, then an action
that re-reads the agent's cached copy of .21). The order of Juju's hooks is the emulated VCA's
(tests/e2e/test_spoke_join.py, the star): here each event is fired alone."""
from fake_vnf import keypair
from harness_helpers import peer_data

from vpnaas.core import relation_data

ME = "wireguard-proxy"


def endpoint_of(vnf, key):
    return next(p["endpoint"] for p in vnf.devices["wg-vpn"].peers if p["public-key"] == key)


def published(key, endpoint, generation, tunnel="10.9.0.2/24"):
    return dict(peer_data(key, endpoint=endpoint, tunnel=tunnel, service=""), generation=str(generation))


def hub(ready, n=2):
    """The unit related on ``vpn`` to ``n`` spoke applications s1 .. sn, each one unit that published."""
    ready.configure(**{"vpn-tunnel-address": "10.9.0.1/24"})
    rels, keys = {}, {}
    for i in range(1, n + 1):
        keys[i] = keypair()[1]
        rels[i] = ready.relate("vpn", "s{}/0".format(i), published(keys[i], "192.168.8.2{}:51820".format(i), 1,
                                                                   tunnel="10.9.0.{}/24".format(1 + i)))
    return rels, keys


def test_a_unit_with_one_relation_per_endpoint_writes_no_application_bag(ready, vnf):
    rel = ready.relate("vpn", "b/0", peer_data(keypair()[1]))
    ready.harness.charm.on.update_status.emit()
    assert "public-key" in ready.published(rel)
    assert ready.harness.get_relation_data(rel, ME) == {}, "no request, no mirror: the EPS's relations"


def test_the_hubs_leader_asks_each_spoke_application_for_a_mirror(ready, vnf):
    rels, _keys = hub(ready)
    for rel in rels.values():
        assert ready.harness.get_relation_data(rel, ME) == {relation_data.MIRROR_REQUEST: "1"}


def test_a_hub_that_does_not_lead_its_application_asks_nothing(proxy, vnf):
    proxy.harness.set_leader(False)
    assert proxy.act("generate-ssh-key").results == {"generated": "true"}
    vnf.authorize(proxy.charm.keystore.public_key())
    rels, _keys = hub(proxy)
    assert all(proxy.harness.get_relation_data(rel, ME) == {} for rel in rels.values())


def test_a_requested_leader_mirrors_its_publication_with_its_generation(ready, vnf):
    rel = ready.relate("vpn", "h/0", peer_data(keypair()[1]))
    assert ready.harness.get_relation_data(rel, ME) == {}
    ready.harness.update_relation_data(rel, "h", {relation_data.MIRROR_REQUEST: "1"})   # the hub's request
    mine = ready.published(rel)
    mirror = dict(ready.harness.get_relation_data(rel, ME))
    assert mirror == {k: v for k, v in relation_data.mirror(ready.charm.unit.name, mine).items() if v}
    assert mirror[relation_data.GENERATION] == mine[relation_data.GENERATION]
    # Its publication changes (a new peer key to announce): the mirror follows, a newer generation.
    ready.harness.update_relation_data(rel, "h/0", {"wants-peer-keys": "yes"})
    again = dict(ready.harness.get_relation_data(rel, ME))
    assert again["peer-keys"] and int(again[relation_data.GENERATION]) > int(mirror[relation_data.GENERATION])
    assert again[relation_data.GENERATION] == ready.published(rel)[relation_data.GENERATION]


def test_a_non_leader_never_writes_a_mirror(ready, vnf):
    ready.harness.set_leader(False)
    rel = ready.relate("vpn", "h/0", peer_data(keypair()[1]))
    ready.harness.update_relation_data(rel, "h", {relation_data.MIRROR_REQUEST: "1"})
    assert "public-key" in ready.published(rel) and ready.harness.get_relation_data(rel, ME) == {}


def test_the_hub_never_goes_back_a_generation(ready, vnf):
    """.21 (generation 1, unit data), .99 (generation 2, the mirror: the unit data Juju's agent hands
    stays the cached generation 1), then an action and an update-status read generation 1 again."""
    rels, keys = hub(ready)
    assert endpoint_of(vnf, keys[1]) == "192.168.8.21:51820"
    mirror = relation_data.mirror("s1/0", published(keys[1], "192.168.8.99:51820", 2))
    ready.harness.update_relation_data(rels[1], "s1", mirror)        # s1's application-data relation-changed
    assert endpoint_of(vnf, keys[1]) == "192.168.8.99:51820"
    ready.act("get-ssh-public-key")
    ready.harness.charm.on.update_status.emit()
    ready.harness.charm.on.config_changed.emit()
    assert endpoint_of(vnf, keys[1]) == "192.168.8.99:51820", "never back to the older publication"
    # Its unit data moves on (generation 3): taken; the mirror of generation 2 is older now.
    ready.harness.update_relation_data(rels[1], "s1/0", published(keys[1], "192.168.8.50:51820", 3))
    ready.harness.charm.on.update_status.emit()
    assert endpoint_of(vnf, keys[1]) == "192.168.8.50:51820"


def test_a_stale_mirror_is_never_taken(ready, vnf):
    rels, keys = hub(ready)
    # An older generation than the unit data the hub planned with: not taken.
    ready.harness.update_relation_data(rels[1], "s1", relation_data.mirror(
        "s1/0", published(keys[1], "192.168.8.77:51820", 1)))
    # A former leader's mirror: it names a unit that is no member of the relation.
    ready.harness.update_relation_data(rels[2], "s2", relation_data.mirror(
        "s2/7", published(keypair()[1], "192.168.8.78:51820", 9)))
    ready.harness.charm.on.update_status.emit()
    assert endpoint_of(vnf, keys[1]) == "192.168.8.21:51820" and endpoint_of(vnf, keys[2]) == "192.168.8.22:51820"
    assert sorted(vnf.peer_keys("wg-vpn")) == sorted(keys.values())


def test_a_pending_spoke_is_taken_from_its_mirror_in_a_hook_about_another(ready, vnf):
    """s2's unit data as this hook sees it is keyless (Juju's agent cached it before s2 published);
    its mirror is fresh in every hook: a hook about s1 takes s2's key too, in one session."""
    ready.configure(**{"vpn-tunnel-address": "10.9.0.1/24"})
    k1, k2 = keypair()[1], keypair()[1]
    r1 = ready.relate("vpn", "s1/0", {"vpnaas-schema": "1"})
    r2 = ready.relate("vpn", "s2/0", {"vpnaas-schema": "1"})
    ready.harness.disable_hooks()
    ready.harness.update_relation_data(r2, "s2", relation_data.mirror(
        "s2/0", published(k2, "192.168.8.22:51820", 1, tunnel="10.9.0.3/24")))
    ready.harness.enable_hooks()
    logins = vnf.logins
    ready.harness.update_relation_data(r1, "s1/0", published(k1, "192.168.8.21:51820", 1))
    assert sorted(vnf.peer_keys("wg-vpn")) == sorted([k1, k2]) and vnf.logins == logins + 1


def test_a_generation_above_the_units_real_one_never_pins_the_hub(ready, vnf):
    """The review's probe: s1's bag mirrors s1/0 at .66 with generation 99999999999999999999; then
    s1/0 publishes .50 with generation 6 in its own relation-changed: the hub follows it, and a
    later hook (no unit's) does not go back to the mirror."""
    rels, keys = hub(ready)
    ready.harness.update_relation_data(rels[1], "s1", relation_data.mirror(
        "s1/0", published(keys[1], "192.168.8.66:51820", "9" * 20)))
    ready.harness.update_relation_data(rels[1], "s1/0", published(keys[1], "192.168.8.50:51820", 6))
    assert endpoint_of(vnf, keys[1]) == "192.168.8.50:51820"
    ready.harness.charm.on.update_status.emit()
    ready.harness.charm.on.config_changed.emit()
    assert endpoint_of(vnf, keys[1]) == "192.168.8.50:51820"


def test_in_a_hook_about_a_unit_its_data_wins_over_a_kept_newer_generation(ready, vnf):
    """A kept reading of a higher generation than the unit's data now (a generation it wrote with
    a clock that was ahead, then its clock set back): in its own relation-changed its data is
    taken, and the kept newest starts again from it."""
    rels, keys = hub(ready)
    ready.harness.update_relation_data(rels[1], "s1/0", published(keys[1], "192.168.8.60:51820", 900))
    assert endpoint_of(vnf, keys[1]) == "192.168.8.60:51820"
    ready.harness.update_relation_data(rels[1], "s1/0", published(keys[1], "192.168.8.50:51820", 7))
    assert endpoint_of(vnf, keys[1]) == "192.168.8.50:51820"
    ready.harness.charm.on.update_status.emit()
    assert endpoint_of(vnf, keys[1]) == "192.168.8.50:51820"


def test_a_spoke_whose_vnf_is_briefly_unreachable_keeps_its_mirror(ready, vnf):
    """A failed reconcile has no plan: the mirror of the publication Juju still holds stays (it
    used to be written empty, and the hub lost the spoke's key until the next good run)."""
    rel = ready.relate("vpn", "h/0", peer_data(keypair()[1]))
    ready.harness.update_relation_data(rel, "h", {relation_data.MIRROR_REQUEST: "1"})
    mirror = dict(ready.harness.get_relation_data(rel, ME))
    assert mirror.get("public-key") == ready.published(rel)["public-key"]
    vnf.fault = "refused"
    ready.harness.update_relation_data(rel, "h/0", peer_data(keypair()[1], endpoint="192.168.8.30:51820"))
    assert ready.harness.charm.unit.status.name == "waiting", "the reconcile failed"
    assert dict(ready.harness.get_relation_data(rel, ME)) == mirror, "the mirror stays while the VNF is away"
    vnf.fault = None
    ready.harness.charm.on.update_status.emit()
    again = dict(ready.harness.get_relation_data(rel, ME))
    assert again["public-key"] == mirror["public-key"]
    assert again[relation_data.GENERATION] == ready.published(rel)[relation_data.GENERATION]


def _spoke_mirroring(ready):
    rel = ready.relate("vpn", "h/0", peer_data(keypair()[1]))
    ready.harness.update_relation_data(rel, "h", {relation_data.MIRROR_REQUEST: "1"})
    mirror = dict(ready.harness.get_relation_data(rel, ME))
    assert mirror.get("public-key")
    return rel, mirror


def _juju_drops(ready, rel, bags):
    """What Juju does with a hook whose commit it dropped: the bags are as they were before it."""
    ready.harness.disable_hooks()
    for who, before in bags.items():
        now = dict(ready.harness.get_relation_data(rel, who))
        ready.harness.update_relation_data(rel, who, dict({k: "" for k in now}, **before))
    ready.harness.enable_hooks()


def test_a_mirror_write_juju_dropped_with_the_units_is_written_again(ready, vnf):
    rel, mirror = _spoke_mirroring(ready)
    unit_before = dict(ready.published(rel))
    ready.harness.update_relation_data(rel, "h/0", {"wants-peer-keys": "yes"})   # both bags change
    assert ready.published(rel)["peer-keys"] and ready.harness.get_relation_data(rel, ME)["peer-keys"]
    _juju_drops(ready, rel, {ready.charm.unit.name: unit_before, ME: mirror})
    ready.harness.charm.on.config_changed.emit()
    mine = ready.published(rel)
    assert mine["peer-keys"]
    again = dict(ready.harness.get_relation_data(rel, ME))
    assert again["peer-keys"] == mine["peer-keys"] and again[relation_data.GENERATION] == mine[relation_data.GENERATION]


def test_an_application_bag_write_juju_dropped_alone_is_written_again(ready, vnf):
    """The mirror's first write (the hub's request came; this unit's publication did not change)
    is lost: the next run reads the application bag back and writes it again."""
    rel, mirror = _spoke_mirroring(ready)
    _juju_drops(ready, rel, {ME: {}})
    ready.harness.charm.on.config_changed.emit()
    assert dict(ready.harness.get_relation_data(rel, ME)) == mirror


def test_the_remote_applications_bags_are_read_once_per_run(ready, vnf, monkeypatch):
    """Juju's agent keeps an application's settings for the rest of a hook: a run that plans twice
    (an action's reconcile, then its plan again) reads each remote application's bag once."""
    from vpnaas.charm import relation_lookup
    hub(ready)
    reads = []
    real = relation_lookup.app_bag

    def counted(model, relation_id, app):
        if app != ME:
            reads.append((relation_id, app))
        return real(model, relation_id, app)
    monkeypatch.setattr(relation_lookup, "app_bag", counted)
    tunnels = ready.charm.tunnels
    tunnels.begin_run(refresh_apps=True)
    tunnels.snapshot()
    tunnels.snapshot()
    assert sorted(reads) == sorted(set(reads)) and len(reads) == 2, reads
    tunnels.begin_run()
