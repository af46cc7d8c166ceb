"""vpnaas.relation_cache: a relation-changed with nothing new is skipped before the plan reads
every relation; anything new (or a failed last reconcile) still reconciles."""
import base64

import pytest
import yaml
from ops.testing import Harness

from bundle.charmspec import charm_spec
from vpnaas import charm_base, relation_cache
from vpnaas.workload import Workload

SPEC = charm_spec("wireguard-proxy")
pytestmark = pytest.mark.usefixtures("in_tmp_dir")    # the charms' unit state (the cache file)


@pytest.fixture(autouse=True)
def _every_event_commits(monkeypatch):
    """Harness runs every event in one process with no commit between them: each event's cache
    becomes the cache at once (in a charm it does when ops has committed, see charm_base.main)."""
    save = relation_cache.save
    monkeypatch.setattr(relation_cache, "save", lambda d, state: (save(d, state), relation_cache.promote(d)))


def _bag(n, peer_keys=""):
    key = base64.b64encode(bytes([n]) * 32).decode()
    bag = {"vpnaas-schema": "1", "public-key": key, "endpoint": "192.168.64.{}:51820".format(n),
           "tunnel-address": "10.251.0.{}/24".format(n), "service-prefixes": "172.17.1.{}/32".format(n)}
    if peer_keys:
        bag["peer-keys"] = peer_keys
    return bag


class CountingCharm(charm_base.VpnaasCharm):
    """The real event handler; the reconcile only counts (no VNF here), and publishes
    ``publishes`` as this unit's public key (through the charm's own write path) when set."""
    calls = []
    fail = False
    publishes = ""

    def _on_event(self, event):
        self._event = event   # the reconcile no longer sees the event; the count needs its kind
        super()._on_event(event)

    def reconcile(self, force=False, rotate=(), restart=False):
        type(self).calls.append(self._event.handle.kind)
        if type(self).fail:
            self._set_applied("")
            raise charm_base.ReconcileFailed("ssh down")
        self.tunnels.snapshot()
        if type(self).publishes:
            for rel in self.tunnels.live("vpn"):
                self.tunnels.write(rel, {"public-key": type(self).publishes})
        self._set_applied("fingerprint-1")
        return None, None


class WaitingWorkload(Workload):
    waits_for_tunnels = True

    def wants_session(self, plan):
        return True


class WaitingComponent(CountingCharm):
    workload_type = WaitingWorkload


def _hub(cls, spokes=3):
    cls.calls, cls.fail, cls.publishes = [], False, ""
    h = Harness(cls, meta=yaml.safe_dump(SPEC["metadata"]), actions=yaml.safe_dump(SPEC["actions"]),
                config=yaml.safe_dump(SPEC["config"]))
    h.begin()
    h.update_config({"ssh-hostname": "10.0.0.5"})
    rids = []
    for i in range(spokes):
        app = "s{}".format(i + 1)
        rid = h.add_relation("vpn", app)
        h.add_relation_unit(rid, app + "/0")
        h.update_relation_data(rid, app + "/0", _bag(i + 2))
        rids.append(rid)
    return h, rids


def test_unchanged_tunnel_data_is_skipped_and_peer_keys_alone_do_not_wake_the_generic_charm():
    h, rids = _hub(CountingCharm)
    before = len(CountingCharm.calls)
    h.update_relation_data(rids[1], "s2/0", {"peer-keys": "abc"})       # only the notification changed
    assert len(CountingCharm.calls) == before
    h.update_relation_data(rids[1], "s2/0", {"endpoint": "192.168.64.99:51820"})   # real news
    assert len(CountingCharm.calls) == before + 1


def test_a_peer_that_starts_or_stops_asking_for_peer_keys_is_never_skipped():
    h, rids = _hub(CountingCharm)
    before = len(CountingCharm.calls)
    h.update_relation_data(rids[2], "s3/0", {"wants-peer-keys": "yes"})   # decides what the hub publishes
    h.update_relation_data(rids[2], "s3/0", {"wants-peer-keys": ""})
    assert len(CountingCharm.calls) == before + 2


def test_only_a_charm_with_a_waiting_component_waits_for_its_tunnels():
    assert WaitingComponent.workload_type.waits_for_tunnels and not CountingCharm.workload_type.waits_for_tunnels
    assert not charm_base.VpnaasCharm.workload_type.waits_for_tunnels


def test_a_component_waiting_for_peer_keys_is_woken_by_them():
    h, rids = _hub(WaitingComponent)
    before = len(WaitingComponent.calls)
    h.update_relation_data(rids[0], "s1/0", {"peer-keys": "abc"})
    assert len(WaitingComponent.calls) == before + 1


def test_after_a_failed_reconcile_nothing_is_skipped():
    h, rids = _hub(CountingCharm)
    CountingCharm.fail = True
    h.update_relation_data(rids[0], "s1/0", {"endpoint": "192.168.64.50:51820"})
    n = len(CountingCharm.calls)
    h.update_relation_data(rids[0], "s1/0", {"peer-keys": "x"})
    assert len(CountingCharm.calls) == n + 1


def test_relation_hooks_before_configuration_are_skipped_until_config_arrives():
    CountingCharm.calls, CountingCharm.fail = [], False
    h = Harness(CountingCharm, meta=yaml.safe_dump(SPEC["metadata"]), actions=yaml.safe_dump(SPEC["actions"]),
                config=yaml.safe_dump(SPEC["config"]))
    h.begin()
    rid = h.add_relation("vpn", "s1")
    h.add_relation_unit(rid, "s1/0")
    h.update_relation_data(rid, "s1/0", _bag(2))
    assert CountingCharm.calls == []            # created, joined, changed: no VNF to reach yet
    h.update_config({"ssh-hostname": "10.0.0.5"})
    assert CountingCharm.calls == ["config_changed"]
    h.update_relation_data(rid, "s1/0", {"endpoint": "192.168.64.77:51820"})
    assert CountingCharm.calls == ["config_changed", "vpn_relation_changed"]


def test_other_events_are_never_skipped():
    h, rids = _hub(CountingCharm)
    n = len(CountingCharm.calls)
    h.update_config({"ssh-hostname": "10.0.0.9"})
    h.charm.on.update_status.emit()
    assert CountingCharm.calls[n:] == ["config_changed", "update_status"]


def test_digest_covers_only_the_chosen_fields():
    fields = ("public-key", "endpoint")
    assert relation_cache.digest({"public-key": "k", "endpoint": "e", "peer-keys": "1"}, fields) == \
        relation_cache.digest({"public-key": "k", "endpoint": "e", "peer-keys": "2"}, fields)
    assert relation_cache.digest({"public-key": "k"}, fields) != relation_cache.digest({"public-key": "k2"}, fields)


def test_a_publication_juju_dropped_is_published_again_by_the_next_hook(monkeypatch):
    """The hook that published this unit's data ran the charm (cache written, stored state
    committed), but Juju dropped its relation writes (the commit did not reach the controller).
    Juju retries: the retry must reach the charm, which publishes again, without update-status."""
    h, rids = _hub(CountingCharm)
    mine = h.charm.unit.name
    CountingCharm.publishes = "published"
    h.update_relation_data(rids[0], "s1/0", {"endpoint": "192.168.64.60:51820"})   # reconciled: published, cache taken
    assert h.get_relation_data(rids[0], mine)["public-key"] == "published"
    n = len(CountingCharm.calls)
    h.update_relation_data(rids[0], "s1/0", {"peer-keys": "1"})
    assert len(CountingCharm.calls) == n, "nothing new, and Juju holds the publication: skipped"
    h.update_relation_data(rids[0], mine, {"public-key": ""})       # what Juju holds after the drop
    h.update_relation_data(rids[0], "s1/0", {"peer-keys": "2"})     # the retried hook: nothing new from s1/0
    assert len(CountingCharm.calls) == n + 1


def test_the_writes_of_the_last_run_on_other_relations_are_read_back_before_a_hook_is_skipped():
    """A run that wrote on relations other than its hook's (a new key: every relation): a dropped
    commit loses those writes too, so the gate reads them back (a few at most) before it skips."""
    h, rids = _hub(CountingCharm)
    mine = h.charm.unit.name
    CountingCharm.publishes = "published"
    h.update_relation_data(rids[0], "s1/0", {"endpoint": "192.168.64.60:51820"})   # writes on all three
    assert relation_cache.load(h.charm.state_dir)["written"] == sorted(str(r) for r in rids)
    n = len(CountingCharm.calls)
    h.update_relation_data(rids[0], mine, {"public-key": ""})       # dropped: on rids[2] too
    h.update_relation_data(rids[2], mine, {"public-key": ""})
    h.update_relation_data(rids[1], "s2/0", {"peer-keys": "2"})     # a hook on a relation it did not lose
    assert len(CountingCharm.calls) == n + 1
