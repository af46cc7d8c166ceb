"""The emulated VCA with Juju's concurrency, on a tiny shell charm (no root, no namespaces):
hooks of one unit in order, units at the same time, relation data propagated, and every
relation-changed names a unit of its own relation."""
import os
import threading
import time

from testbed.emulators import scheduler, vca

DISPATCH = """#!/bin/sh
# A charm in five lines: log every hook; publish this unit's name when a relation is joined.
log="$LOG_DIR/$(echo $JUJU_UNIT_NAME | tr / -).log"
echo "$JUJU_DISPATCH_PATH ${JUJU_RELATION_ID:-} ${JUJU_REMOTE_UNIT:-}" >> "$log"
case "$JUJU_DISPATCH_PATH" in
  hooks/install) while [ -n "${INSTALL_GATE:-}" ] && [ ! -e "$INSTALL_GATE" ]; do sleep 0.01; done
    # INSTALL_BARRIER=n: this install waits (60 s at most, then fails) until n installs run at once.
    touch "$LOG_DIR/installing-$(echo $JUJU_UNIT_NAME | tr / -)"
    waited=0
    while [ "$(ls "$LOG_DIR" | grep -c '^installing-')" -lt "${INSTALL_BARRIER:-0}" ]; do
      waited=$((waited + 1)); [ "$waited" -lt 6000 ] || exit 1; sleep 0.01
    done ;;
  hooks/config-changed) while [ -n "${CONFIG_GATE:-}" ] && [ ! -e "$CONFIG_GATE" ]; do sleep 0.01; done ;;
  hooks/*-relation-joined) relation-set "me=$JUJU_UNIT_NAME" ;;
esac
"""


def _charm(tmp_path):
    charm = tmp_path / "charm"
    charm.mkdir()
    (charm / "config.yaml").write_text("options: {}\n")
    (charm / "dispatch").write_text(DISPATCH)
    os.chmod(str(charm / "dispatch"), 0o755)
    return str(charm)


def _log(tmp_path, unit):
    with open(str(tmp_path / "logs" / (unit.replace("/", "-") + ".log"))) as f:
        return [line.split() for line in f]


def _setup(tmp_path, monkeypatch, parallel):
    (tmp_path / "logs").mkdir()
    monkeypatch.setenv("LOG_DIR", str(tmp_path / "logs"))
    return vca.Model(str(tmp_path / "model"), parallel=parallel), _charm(tmp_path)


def test_hooks_get_none_of_the_operators_python_settings(tmp_path, monkeypatch):
    model, charm = _setup(tmp_path, monkeypatch, parallel=1)
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.setenv("PYTHONPATH", "/somewhere/else")
    monkeypatch.setenv("JUJU_UNIT_NAME", "stale/7")
    model.deploy("hub", charm)
    env = model._env("hub/0", "hooks/install", {}, "hub/0-7")
    assert not [k for k in env if k.startswith("PYTHON")] and env["JUJU_CONTEXT_ID"] == "hub/0-7"
    assert env["JUJU_UNIT_NAME"] == "hub/0" and env["LOG_DIR"] == str(tmp_path / "logs")
    assert env["PATH"].split(os.pathsep)[0] == model.bin


def test_parallel_model_keeps_each_units_order_and_propagates_data(tmp_path, monkeypatch):
    model, charm = _setup(tmp_path, monkeypatch, parallel=3)
    for app in ("hub", "s1", "s2", "s3"):
        model.deploy(app, charm, wait=False)
    for spoke in ("s1", "s2", "s3"):
        model.relate("hub:vpn", spoke + ":vpn-peer", wait=False)
    model.settle()
    for unit in ("hub/0", "s1/0", "s2/0", "s3/0"):
        hooks = [entry[0] for entry in _log(tmp_path, unit)]
        # Juju 2.9: install first (relation-created only once installed); the lifecycle hooks
        # keep their order, whatever relation hooks the unit decided on in between.
        lifecycle = [h for h in hooks if not h.startswith("hooks/vpn")]
        assert lifecycle[:4] == ["hooks/install", "hooks/leader-elected", "hooks/config-changed", "hooks/start"]
        assert hooks[0] == "hooks/install" and any(h.endswith("-relation-created") for h in hooks)
    spoke = [entry[0] for entry in _log(tmp_path, "s1/0")]
    assert spoke.index("hooks/vpn-peer-relation-created") < spoke.index("hooks/vpn-peer-relation-joined")
    for rid, (_eps, units) in _relations(model).items():
        for unit in units:
            other = next(u for u in units if u != unit)
            assert model.relation_data(rid)[other]["me"] == other
    # The hub got a relation-changed from each spoke's publication.
    changed = [e for e in _log(tmp_path, "hub/0") if e[0] == "hooks/vpn-relation-changed"]
    assert {e[2] for e in changed} == {"s1/0", "s2/0", "s3/0"}


def _wait_for_hook(tmp_path, unit, hook, limit=60.0):
    """Until ``unit`` has started ``hook`` (the charm logs a hook before it runs it)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            if any(e and e[0] == hook for e in _log(tmp_path, unit)):
                return
        except OSError:
            pass
        time.sleep(0.01)
    raise AssertionError("{} did not start {} within {} s".format(unit, hook, limit))


def _relations(model):
    state = model._read()
    return {rid: (rel["endpoints"], rel["units"]) for rid, rel in state["relations"].items()}


def test_relation_added_during_a_hook_wakes_nobody_with_a_foreign_unit(tmp_path, monkeypatch):
    model, charm = _setup(tmp_path, monkeypatch, parallel=2)
    model.deploy("b", charm)
    model.deploy("c", charm)
    gate = tmp_path / "install-gate"
    monkeypatch.setenv("INSTALL_GATE", str(gate))
    model.deploy("slow", charm, wait=False)           # its install runs while the relation appears
    _wait_for_hook(tmp_path, "slow/0", "hooks/install")
    model.relate("b:vpn", "c:vpn-peer", wait=False)
    gate.touch()
    model.settle()
    for unit in ("b/0", "c/0"):
        remotes = {e[2] for e in _log(tmp_path, unit) if e[0].endswith("-relation-changed")}
        assert remotes == {"c/0" if unit == "b/0" else "b/0"}


def test_parallel_hooks_of_different_units_overlap(tmp_path, monkeypatch):
    """Each install waits until all four run at once (a barrier in the charm): one after
    another, the first would fail (and be retried: more than 16 hooks, a hook error). Not a time
    taken: four 0.6 s installs begun within 0.6 s of each other is scheduling, not the emulation."""
    model, charm = _setup(tmp_path, monkeypatch, parallel=4)
    monkeypatch.setenv("INSTALL_BARRIER", "4")
    for app in ("a", "b", "c", "d"):
        model.deploy(app, charm, wait=False)
    model.settle()
    assert len(model.hook_log) == 16 and model.hook_errors == []
    installs = [r for r in model.hook_log if r.hook == "hooks/install"]
    assert max(r.started for r in installs) < min(r.ended for r in installs)   # all four at once


def test_a_busy_unit_runs_relation_created_its_action_then_one_config_changed_then_relation_hooks(tmp_path,
                                                                                                  monkeypatch):
    """What Juju 2.9's uniter picks next: relation-created first, then a pending action,
    config-changed (once, for every config change made meanwhile) before the other relation
    hooks queued earlier."""
    model, charm = _setup(tmp_path, monkeypatch, parallel=2)
    model.deploy("a", charm)
    model.deploy("b", charm)
    gate = tmp_path / "gate"
    monkeypatch.setenv("CONFIG_GATE", str(gate))              # config-changed waits for the gate
    model.set_config("a", {"x": "1"}, wait=False)
    deadline = time.monotonic() + 60                          # the deploy's config-changed ran too
    while sum(e[0] == "hooks/config-changed" for e in _log(tmp_path, "a/0")) < 2:
        assert time.monotonic() < deadline, "a/0 did not start its config-changed"
        time.sleep(0.01)
    model.relate("a:vpn", "b:vpn-peer", wait=False)               # queued while a/0 is busy
    model.set_config("a", {"x": "2"}, wait=False)
    model.set_config("a", {"x": "3"}, wait=False)
    results = []
    action = threading.Thread(target=lambda: results.append(model.run_action("a/0", "do-it", {}, wait=False)))
    action.start()
    while not any(j.unit == "a/0" and j.rank == scheduler.ACTION for j in model.jobs._pending):
        assert time.monotonic() < deadline, "the action was not queued"
        time.sleep(0.01)
    gate.touch()                                              # a/0 is free to choose now
    action.join(30)
    assert [r.status for r in results] == ["completed"]
    model.settle()
    hooks = [e[0] for e in _log(tmp_path, "a/0")]
    after = hooks[hooks.index("hooks/start") + 2:]                # after deploy's hooks and the busy one
    assert after[:5] == ["hooks/vpn-relation-created", "actions/do-it", "hooks/config-changed",
                         "hooks/vpn-relation-joined", "hooks/vpn-relation-changed"], hooks
    # b/0's joined hook commits its write when it ends: if a/0 ran its relation-changed before
    # that, Juju runs a second one for the new settings (and only then).
    assert after[5:] in ([], ["hooks/vpn-relation-changed"]), hooks
    assert model.unit_state("a/0")["config"]["x"] == "3"
