"""The emulated VCA where Juju 2.9's unit agent differs from a naive one (no root: a tiny shell
charm; the charms themselves meet these semantics in tests/e2e):

* a hook's relation writes are seen by nobody before it ends, and only kept if it succeeded and
  its commit reached the controller; otherwise Juju runs it again;
* a unit reads other units' settings through a cache that only a hook about that unit
  refreshes;
* relation-list lists only the units whose joined hook has run;
* the order: install, relation-created, leadership, actions, lifecycle, relation hooks (one
  relation at a time, departed/broken/joined/changed by unit), update-status.
Each test fails on the emulation these replaced (writes at once, every unit listed, no cache,
actions first)."""
import os

import pytest

from testbed.emulators import scheduler, vca

DISPATCH = r"""#!/bin/sh
# Logs what each hook sees; on a trigger file, writes and then waits for a gate file.
log="$LOG_DIR/$(echo $JUJU_UNIT_NAME | tr / -).log"
peers=$(relation-list ${LIST_RID:+-r "$LIST_RID"} 2>/dev/null | tr -d '[]" \n')
seen=""
who=${READ_UNIT:-${JUJU_REMOTE_UNIT:-}}
[ -z "${JUJU_RELATION_ID:-}" ] || seen=$(relation-get -r "$JUJU_RELATION_ID" value "$who" 2>/dev/null | tr -d '" \n')
echo "$JUJU_DISPATCH_PATH ${JUJU_REMOTE_UNIT:--} list=$peers seen=$seen" >> "$log"
case "$JUJU_DISPATCH_PATH" in
  hooks/*-relation-joined)
    if [ -e "$LOG_DIR/publish-$(echo $JUJU_UNIT_NAME | tr / -)" ]; then
      relation-set "value=$(cat "$LOG_DIR/publish-$(echo $JUJU_UNIT_NAME | tr / -)")"
      while [ -n "${GATE:-}" ] && [ ! -e "$GATE" ]; do sleep 0.01; done
      [ ! -e "$LOG_DIR/fail" ] || exit 1
    fi ;;
esac
"""


@pytest.fixture
def model(tmp_path, monkeypatch):
    (tmp_path / "logs").mkdir()
    monkeypatch.setenv("LOG_DIR", str(tmp_path / "logs"))
    charm = tmp_path / "charm"
    charm.mkdir()
    (charm / "config.yaml").write_text("options: {}\n")
    (charm / "dispatch").write_text(DISPATCH)
    os.chmod(str(charm / "dispatch"), 0o755)
    m = vca.Model(str(tmp_path / "model"), hook_retry_min=0.01)     # Juju's timer, 500 times as fast
    m.charm = str(charm)
    m.logs_dir = tmp_path / "logs"
    yield m
    m.close()


def hooks(model, unit):
    with open(str(model.logs_dir / (unit.replace("/", "-") + ".log"))) as f:
        return [line.split() for line in f]


def publish(model, unit, value):
    (model.logs_dir / ("publish-" + unit.replace("/", "-"))).write_text(value)


def test_writes_are_committed_when_the_hook_ends_and_wake_the_peer_then(model):
    model.deploy("a", model.charm)
    model.deploy("b", model.charm)
    publish(model, "a/0", "k1")
    rid = model.relate("a:vpn", "b:vpn-peer")
    assert model.relation_data(rid)["a/0"] == {"value": "k1"}
    seen = [h for h in hooks(model, "b/0") if h[0] == "hooks/vpn-peer-relation-changed"]
    assert seen and seen[-1][3] == "seen=k1"


def test_a_failed_hook_keeps_none_of_its_writes(model):
    model.deploy("a", model.charm)
    model.deploy("b", model.charm)
    publish(model, "a/0", "k1")
    (model.logs_dir / "fail").write_text("")
    # Juju retries it for ever; the emulation reports a hook that keeps failing as the charm's error.
    with pytest.raises(vca.VcaError, match="relation-joined failed"):
        model.relate("a:vpn", "b:vpn-peer")
    assert model.relation_data(0)["a/0"] == {}
    assert [e.why for e in model.hook_errors] == ["exit 1"] * vca.MAX_HOOK_FAILURES


def test_a_refused_commit_drops_the_writes_and_runs_the_hook_again(model):
    model.deploy("a", model.charm)
    model.deploy("b", model.charm)
    publish(model, "a/0", "k1")
    model.faults.fail_commits("a/0", 2, hook="relation-joined")
    rid = model.relate("a:vpn", "b:vpn-peer")
    joined = [h for h in hooks(model, "a/0") if h[0] == "hooks/vpn-relation-joined"]
    assert len(joined) == 3, "the joined hook ran again after each refused commit"
    assert model.relation_data(rid)["a/0"] == {"value": "k1"}
    assert model.faults.injected["commit-failure"] == 2 and sum(model.retries.values()) == 2


def test_an_agent_restarted_mid_hook_runs_the_hook_again_from_the_start(model):
    model.deploy("a", model.charm)
    model.deploy("b", model.charm)
    publish(model, "a/0", "k2")
    model.faults.kill_hooks("a/0", tool="relation-set")
    rid = model.relate("a:vpn", "b:vpn-peer")
    assert model.faults.injected["agent-restart"] == 1
    assert len([h for h in hooks(model, "a/0") if h[0] == "hooks/vpn-relation-joined"]) == 2
    assert model.relation_data(rid)["a/0"] == {"value": "k2"}


def test_membership_starts_with_the_joined_hook(model):
    model.deploy("a", model.charm)
    model.deploy("b", model.charm, units=2)
    model.relate("a:vpn", "b:vpn-peer")
    seen = {(h[0], h[1]): h[2] for h in hooks(model, "a/0")}
    assert seen[("hooks/vpn-relation-created", "-")] == "list="
    assert seen[("hooks/vpn-relation-joined", "b/0")] == "list=b/0"
    assert seen[("hooks/vpn-relation-joined", "b/1")] == "list=b/0,b/1"


def test_another_relations_members_change_only_with_hooks_of_that_relation(model, monkeypatch):
    """Juju 2.9: every hook's context takes each relation's members from the agent's record
    (runner/context/contextfactory.go getContextRelations: RelationCache.Prune to
    relation/relationer.go ContextInfo), adjusts only its own relation (HookContext: InvalidateMember,
    RemoveMember), and only the commit of a joined or departed hook of a relation changes its record
    (relation/state.go UpdateStateForHook). So `relation-list -r j` in a hook about another relation
    answers what j's own hooks left (what the charms' relation memory relies on)."""
    model.deploy("a", model.charm)
    model.deploy("b", model.charm)
    model.deploy("c", model.charm)
    rid_b = model.relate("a:vpn", "b:vpn-peer")
    rid_c = model.relate("a:vpn", "c:vpn-peer")
    with model._update() as state:                  # c/1 entered the relation; a/0's joined has not run
        state["relations"][str(rid_c)]["units"].append("c/1")
        state["relations"][str(rid_c)]["data"]["c/1"] = {}
    monkeypatch.setenv("LIST_RID", str(rid_c))

    def listed_in_a_hook_about_b():
        model.run_hook("a/0", "vpn", "relation-changed", rid=rid_b, remote="b/0")
        return hooks(model, "a/0")[-1][2]
    assert listed_in_a_hook_about_b() == "list=c/0"
    model.run_hook("a/0", "vpn", "relation-joined", rid=rid_c, remote="c/1")
    assert hooks(model, "a/0")[-1][2] == "list=c/0,c/1", "its own joined hook lists it"
    assert listed_in_a_hook_about_b() == "list=c/0,c/1", "once that hook committed, every hook does"
    model.run_hook("a/0", "vpn", "relation-departed", rid=rid_c, remote="c/0", departing="c/0")
    assert hooks(model, "a/0")[-1][2] == "list=c/1"
    assert listed_in_a_hook_about_b() == "list=c/1"


def test_a_units_relation_changed_comes_right_after_its_joined_hook(model):
    """Juju 2.9: the joined hook's commit records ChangedPending (relation/state.go
    UpdateStateForHook), which relation/resolver.go nextHookForRelation returns before any other
    hook of the relation: joined b/0, changed b/0, joined b/1, changed b/1 (not both joins first)."""
    model.deploy("a", model.charm)
    model.deploy("b", model.charm, units=2)
    model.relate("a:vpn", "b:vpn-peer")
    wanted = ("hooks/vpn-relation-joined", "hooks/vpn-relation-changed")
    ran = [(h[0], h[1]) for h in hooks(model, "a/0") if h[0] in wanted]
    assert ran[:4] == [("hooks/vpn-relation-joined", "b/0"), ("hooks/vpn-relation-changed", "b/0"),
                       ("hooks/vpn-relation-joined", "b/1"), ("hooks/vpn-relation-changed", "b/1")], ran


def test_other_units_settings_come_from_the_cache_until_a_hook_about_them_runs(model, monkeypatch):
    model.deploy("a", model.charm)
    model.deploy("b", model.charm, units=2)
    publish(model, "b/1", "old")
    rid = model.relate("a:vpn", "b:vpn-peer")
    monkeypatch.setenv("READ_UNIT", "b/1")          # every hook of a/0 reads b/1's settings
    model.run_hook("a/0", "vpn", "relation-changed", rid=rid, remote="b/0")
    with model._update() as state:                  # b/1's hook committed a new value ...
        state["relations"][str(rid)]["data"]["b/1"]["value"] = "new"
    model.run_hook("a/0", "vpn", "relation-changed", rid=rid, remote="b/0")
    assert hooks(model, "a/0")[-1][3] == "seen=old", "... but a hook about b/0 still sees b/1's cached settings"
    model.run_hook("a/0", "vpn", "relation-changed", rid=rid, remote="b/1")
    assert hooks(model, "a/0")[-1][3] == "seen=new"


def test_relation_hooks_run_in_the_resolvers_order_within_a_relation():
    s = scheduler.UnitScheduler(seed=3)
    ran = []
    for kind, remote in (("changed", "b/1"), ("joined", "b/1"), ("changed", "b/0"), ("joined", "b/0"),
                         ("departed", "b/2")):
        s.submit("a/0", lambda k=kind, r=remote: ran.append((k, r)), rank=scheduler.RELATION,
                 relation=("7", kind, remote))
    s.submit("a/0", lambda: ran.append(("created", "")), rank=scheduler.CREATED, relation=("8", "created", None))
    s.submit("a/0", lambda: ran.append(("action", "")), rank=scheduler.ACTION)
    s.submit("a/0", lambda: ran.append(("leader-elected", "")), rank=scheduler.LEADER)
    s.settle()
    assert ran == [("created", ""), ("leader-elected", ""), ("action", ""), ("departed", "b/2"), ("joined", "b/0"),
                   ("joined", "b/1"), ("changed", "b/0"), ("changed", "b/1")]


def test_an_application_data_relation_changed_runs_before_the_relations_joins():
    """Juju 2.9.42 relation/resolver.go nextHookForRelation: departs (lines 185-221), then each
    remote application's relation-changed (242-262), then joins (265-287), then changed by unit;
    the changed of a unit whose joined just committed (ChangedPending) before all of them."""
    s = scheduler.UnitScheduler(seed=5)
    ran = []
    for kind, remote in (("changed", "b/1"), ("joined", "b/1"), ("changed", None), ("joined", "b/0"),
                         ("departed", "b/2")):
        s.submit("a/0", lambda k=kind, r=remote: ran.append((k, r)), rank=scheduler.RELATION,
                 relation=("7", kind, remote))
    s.settle()
    assert ran == [("departed", "b/2"), ("changed", None), ("joined", "b/0"), ("joined", "b/1"), ("changed", "b/1")]
    ran[:] = []
    s.changed_pending("a/0", "7", "b/0")
    for kind, remote in (("changed", None), ("changed", "b/0")):
        s.submit("a/0", lambda k=kind, r=remote: ran.append((k, r)), rank=scheduler.RELATION,
                 relation=("7", kind, remote))
    s.settle()
    assert ran == [("changed", "b/0"), ("changed", None)], "ChangedPending first (lines 143-159)"


def test_among_relations_the_order_is_not_the_order_they_were_queued():
    orders = set()
    for seed in range(12):
        s = scheduler.UnitScheduler(seed=seed)
        ran = []
        for rid in ("1", "2", "3"):
            s.submit("a/0", lambda r=rid, out=ran: out.append(r), rank=scheduler.RELATION,
                     relation=(rid, "changed", "b/0"))
        s.settle()
        orders.add(tuple(ran))
    assert len(orders) > 1


def test_writes_made_before_a_units_relation_changed_runs_are_one_hook(model):
    """Juju 2.9 runs relation-changed for a remote unit when the settings version the remote-state
    watcher reports differs from the one recorded by the last hook about it
    (worker/uniter/relation/resolver.go ``nextHookForRelation``: "remote units whose latest version
    is not reflected in localState"; the hook carries the latest version and its commit records it,
    relation/state.go ``UpdateStateForHook``). So n writes of b/0 made while a/0 has not run the hook
    yet are one relation-changed, which reads the last of them; a write after it ran is another.
    The emulation records each write a hook covers (``HookRun.causes``): the instrumentation the
    hook classification (testbed.hookclass) reads."""
    model.deploy("a", model.charm)
    model.deploy("b", model.charm)
    rid = str(model.relate("a:vpn", "b:vpn-peer"))
    before = len(model.hook_log)
    writes = ["v1", "v2", "v3"]
    for value in writes:                            # three commits of b/0 before a/0 is free again
        with model._update() as state:
            state["relations"][rid]["data"]["b/0"]["value"] = value
        model._wake_remotes(rid, "b/0", ("b/0", "hooks/test", ["value"]))
    model.settle()
    changed = [r for r in model.hook_log[before:] if r.unit == "a/0" and r.hook == "hooks/vpn-relation-changed"]
    assert len(changed) == 1, "one hook for every write made before it ran"
    assert changed[0].remote == "b/0" and len(changed[0].causes) == len(writes)
    assert hooks(model, "a/0")[-1][3] == "seen=" + writes[-1]
    model.set_relation_data(rid, "b/0", {"value": "v4"})
    changed = [r for r in model.hook_log[before:] if r.unit == "a/0" and r.hook == "hooks/vpn-relation-changed"]
    assert len(changed) == 2 and changed[-1].causes == (("b/0", "set_relation_data", ["value"]),)


def test_a_write_before_the_changed_after_joined_runs_needs_no_hook_of_its_own():
    """The relation-changed Juju runs right after relation-joined carries the remote unit's latest
    settings version when it is chosen (relation/resolver.go ``nextHookForRelation``, the
    ChangedPending branch: ``ChangeVersion: remote.Members[unitName]``): a write of the remote unit
    that lands while that hook is still pending is covered by it, not a hook of its own (a write
    after it ran is: the test above)."""
    s = scheduler.UnitScheduler()
    ran = []
    key = vca.vcaops.changed_key("0", "b/0")
    s.submit("a/0", lambda: ran.append("joined"), relation=("0", "joined", "b/0"))
    pending = s.submit("a/0", lambda: ran.append("changed"), key=key, relation=("0", "changed", "b/0"),
                       cause=("b/0", "joined", []))
    again = s.submit("a/0", lambda: ran.append("changed again"), key=key, relation=("0", "changed", "b/0"),
                     cause=("b/0", "hooks/vpn-peer-relation-joined", ["value"]))
    s.settle()
    assert again is pending and ran == ["joined", "changed"]
    assert [c[1] for c in pending.causes] == ["joined", "hooks/vpn-peer-relation-joined"]


def test_an_applications_settings_are_read_afresh_in_each_hook_and_kept_within_it():
    """Juju 2.9 (``runner/context/cache.go``): ``Prune``, run when a hook's context is made, empties
    the application settings; ``ApplicationSettings`` keeps what it read for the rest of the hook.
    So a remote application's write is seen by the next hook of any relation, but not midway
    through a hook that has already read it (the emulation read the controller at every call)."""
    from testbed.emulators import hookcontext

    relations = {"7": {"data": {"spoke": {"key": "old"}, "spoke/0": {"key": "old"}}}}
    view = hookcontext.UnitView()
    view.members["7"] = {"spoke/0"}
    first = hookcontext.HookContext("hub/0", view, kind="changed", rid="3", remote="other/0")
    assert first.settings(relations, "7", "spoke") == {"key": "old"}
    assert first.settings(relations, "7", "spoke/0") == {"key": "old"}
    relations["7"]["data"]["spoke"] = {"key": "new"}
    relations["7"]["data"]["spoke/0"] = {"key": "new"}
    assert first.settings(relations, "7", "spoke") == {"key": "old"}      # kept within the hook
    later = hookcontext.HookContext("hub/0", view, kind="changed", rid="3", remote="other/0")
    assert later.settings(relations, "7", "spoke") == {"key": "new"}      # afresh in the next hook
    assert later.settings(relations, "7", "spoke/0") == {"key": "old"}    # a member: the cache


def test_a_unit_that_joins_later_gets_the_remote_applications_relation_changed_first(model):
    """Juju 2.9.42: a new unit's relation state records no application (relation/state.go), so
    when the remote application's settings version is not zero the resolver runs its
    relation-changed (no remote unit) before the joins (relation/resolver.go 242-262). Units
    already related have seen that application's data: none for them."""
    model.deploy("a", model.charm)
    model.deploy("b", model.charm)
    rid = model.relate("a:vpn", "b:vpn-peer")
    assert not [h for h in hooks(model, "b/0") if h[0] == "hooks/vpn-peer-relation-changed" and h[1] == "-"]
    with model._update() as state:
        state["relations"][str(rid)]["data"]["a"] = {"value": "mirror"}
    model.deploy("b", model.charm)                  # add-unit: b/1 joins the relation
    ran = [(h[0], h[1]) for h in hooks(model, "b/1") if "relation" in h[0]]
    app_changed = ("hooks/vpn-peer-relation-changed", "-")
    assert app_changed in ran, ran
    assert ran.index(app_changed) < ran.index(("hooks/vpn-peer-relation-joined", "a/0")), ran
    before = [(h[0], h[1]) for h in hooks(model, "b/0")]
    assert ("hooks/vpn-peer-relation-changed", "-") not in before
