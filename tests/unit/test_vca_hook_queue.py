"""The emulated VCA's hook queue, hook errors and interrupted actions, as Juju 2.9's uniter runs
them (no root: a tiny shell charm). Each test names the juju/juju source it follows (read on
the 2.9 line; docs/lifecycle.md, "The VCA as the testbed emulates it") and failed on the
emulation before (the action ran between a hook and the hook its commit queued; a failed hook
raised at once, or ran again every 0.2 s whatever else was pending; an action was never
interrupted)."""
import threading
import time

import pytest

from testbed.emulators import faults, scheduler, vca

DISPATCH = r"""#!/bin/sh
# Waits where a gate file is named and missing; fails a hook while its fail file holds a count.
name=${JUJU_DISPATCH_PATH#*/}
gate_var=$(echo "GATE_$name" | tr 'a-z-' 'A-Z_')
eval gate=\${$gate_var:-}
while [ -n "$gate" ] && [ ! -e "$gate" ]; do sleep 0.01; done
case "$JUJU_DISPATCH_PATH" in
  hooks/*-relation-joined) relation-set "me=$JUJU_UNIT_NAME" || exit 1 ;;
  actions/publish) relation-set -r "$(relation-ids vpn | tr -d '[]" \n')" "from-action=yes"; action-set done=yes ;;
esac
left="$LOG_DIR/fail-$name"
if [ -s "$left" ]; then
  n=$(cat "$left"); [ "$n" -gt 0 ] && { echo $((n - 1)) > "$left"; exit 1; }
fi
exit 0
"""


@pytest.fixture
def setup(tmp_path, monkeypatch):
    (tmp_path / "logs").mkdir()
    monkeypatch.setenv("LOG_DIR", str(tmp_path / "logs"))
    charm = tmp_path / "charm"
    charm.mkdir()
    (charm / "config.yaml").write_text("options: {}\n")
    (charm / "dispatch").write_text(DISPATCH)
    (charm / "dispatch").chmod(0o755)
    models = []

    def make(**kwargs):
        m = vca.Model(str(tmp_path / "model{}".format(len(models))), **kwargs)
        models.append(m)
        return m
    yield make, str(charm), tmp_path
    for m in models:
        m.close()


def fail(tmp_path, hook, times):
    (tmp_path / "logs" / ("fail-" + hook)).write_text(str(times))


def ran(model, unit):
    return [r.hook for r in model.hook_log if r.unit == unit]


def runs(model, unit, hook):
    return [r for r in model.hook_log if r.unit == unit and r.hook == hook]


def wait_until(predicate, what, limit=60.0):
    deadline = time.monotonic() + limit
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def action_in_background(model, unit, name):
    results = []
    thread = threading.Thread(target=lambda: results.append(model.run_action(unit, name, {}, wait=False)))
    thread.start()
    wait_until(lambda: any(j.unit == unit and j.rank == scheduler.ACTION for j in model.jobs._pending),
               "the action was not queued")
    return thread, results


# ---------------------------------------------------------------------- the hook queue
def test_start_queued_by_the_first_config_changed_runs_before_a_pending_action(setup, monkeypatch):
    """juju/juju worker/uniter/operation/runhook.go ``runHook.Commit``: config-changed of a unit
    not started yet queues start (Kind RunHook, Step Queued); worker/uniter/actions/resolver.go
    ``NextOp`` runs an action only in Continue or in a hook error, so the queued start comes first."""
    make, charm, tmp_path = setup
    model = make(parallel=2)
    monkeypatch.setenv("GATE_CONFIG_CHANGED", str(tmp_path / "open"))
    model.deploy("a", charm, wait=False)
    wait_until(lambda: model.hook_runs["a/0"] >= 2 and "a/0" in model.jobs._busy, "config-changed did not start")
    thread, results = action_in_background(model, "a/0", "do-it")
    (tmp_path / "open").touch()
    thread.join(30)
    model.settle()
    assert [r.status for r in results] == ["completed"]
    assert ran(model, "a/0") == ["hooks/install", "hooks/leader-elected", "hooks/config-changed", "hooks/start",
                                 "actions/do-it"]


def test_config_changed_queued_by_upgrade_charm_runs_before_a_pending_action(setup, monkeypatch):
    """runhook.go ``runHook.Commit``: upgrade-charm queues config-changed; the upgrade operation
    itself queues upgrade-charm (operation/deploy.go ``Commit``). An action queued meanwhile runs
    after both."""
    make, charm, tmp_path = setup
    model = make(parallel=2)
    model.deploy("a", charm)
    monkeypatch.setenv("GATE_UPGRADE_CHARM", str(tmp_path / "open"))
    model.upgrade_charm("a", charm, wait=False)
    wait_until(lambda: model.hook_runs["a/0"] == 4 and "a/0" in model.jobs._busy, "upgrade-charm did not start")
    thread, results = action_in_background(model, "a/0", "do-it")
    (tmp_path / "open").touch()
    thread.join(30)
    model.settle()
    assert ran(model, "a/0")[4:] == ["hooks/upgrade-charm", "hooks/config-changed", "actions/do-it"]


def test_with_nothing_queued_an_action_still_runs_before_config_changed(setup, monkeypatch):
    """worker/uniter/resolver.go ``NextOp``: after install (Continue) the leadership and actions
    resolvers come before ``nextOp``'s config-changed."""
    make, charm, tmp_path = setup
    model = make(parallel=2)
    monkeypatch.setenv("GATE_INSTALL", str(tmp_path / "open"))
    model.deploy("a", charm, wait=False)
    wait_until(lambda: "a/0" in model.jobs._busy, "install did not start")
    thread, _results = action_in_background(model, "a/0", "do-it")
    (tmp_path / "open").touch()
    thread.join(30)
    model.settle()
    assert ran(model, "a/0") == ["hooks/install", "hooks/leader-elected", "actions/do-it", "hooks/config-changed",
                                 "hooks/start"]


# ---------------------------------------------------------------------- hook errors
def check_backoff(model, waits, expected):
    """The retry timers a/0's failures started are ``expected`` (Juju's backoff: the first the
    minimum, each next factor 2 +-3 % of the last (1.03 ** 2 < 1.07), reset by a success), and
    each retry waited at least its timer (``waits``: from the failed run's end to the retry's
    start; the timer starts after that end). The timers are what the emulation decides; the
    waits add the machine's scheduling, which made tight upper bounds on them fail under load
    (a retry 0.7 s late, median of 10 runs of a niced test). A retry that waited for anything
    but its timer (another hook, a poll) would still take seconds longer: 5 s is the bound."""
    given = [seconds for unit, seconds in model.hook_retry.given if unit == "a/0"]
    assert len(given) == len(expected) == len(waits), (given, waits)
    for timer, want, got in zip(given, expected, waits):
        assert want * 0.93 <= timer <= want * 1.07 and timer <= got < timer + 5, (given, waits)


def test_juju_retries_a_failed_hook_after_5_10_20_s_up_to_5_min():
    """apiserver/facades/agent/retrystrategy ``HookRetryStrategy`` (MinRetryTime 5 s, MaxRetryTime
    5 min, RetryTimeFactor 2, JitterRetryTime) as juju/utils ``BackoffTimer`` runs it (the first
    wait the minimum, each next one factor times the last, +-3 %, at most the maximum)."""
    timer = faults.HookRetry(seed=1)
    assert (timer.minimum, timer.maximum, timer.automatic) == (5.0, 300.0, True)
    delays = [timer.delay("a/0") for _ in range(9)]
    assert delays[0] == 5.0
    expected = 5.0
    for got in delays[1:]:
        expected = min(expected * 2, 300.0)
        assert abs(got - expected) <= 0.031 * expected * 2 or got == 300.0, delays
    assert delays[-1] == 300.0 and delays[2] != 20.0
    timer.reset("a/0")
    assert timer.delay("a/0") == 5.0 and timer.delay("b/0") == 5.0


def test_the_backoff_base_is_a_testbed_knob(monkeypatch):
    monkeypatch.setenv(faults.RETRY_MIN_ENV, "0.05")
    timer = faults.HookRetry()
    assert (timer.minimum, timer.maximum) == (0.05, 3.0)
    assert faults.HookRetry(minimum=1).maximum == 60.0


def test_a_failed_hook_runs_again_with_backoff_and_nothing_else_but_actions_meanwhile(setup):
    """resolver.go ``nextOpHookError``: while a hook is in error, no other hook runs (it returns
    ErrNoOperation until the retry timer fires); actions/resolver.go ``NextOp`` still runs actions
    in that state ("We can still run actions if the unit is in a hook error state")."""
    make, charm, tmp_path = setup
    model = make(parallel=2, hook_retry_min=0.3)
    model.deploy("a", charm)
    model.deploy("b", charm)
    fail(tmp_path, "config-changed", 3)
    seen, actions = [], []

    def meanwhile():
        """The moment the first run failed (before its 0.3 s retry: a test thread woken by a
        poll could come after it on a loaded machine, and the action then ran after the retry)."""
        seen.append((model.unit_state("a/0")["hook-error"], model.status("a/0")))
        model.relate("a:vpn", "b:vpn-peer", wait=False)          # a/0's relation hooks wait
        actions.append(model.queue_action("a/0", "do-it"))
    model.when("a/0", "config-changed", meanwhile, failed=True)
    model.set_config("a", {"x": "1"}, wait=False)
    model.settle()
    assert seen == [({"hook": "config-changed", "message": 'hook failed: "config-changed"'},
                     ("error", 'hook failed: "config-changed"'))]                 # as juju status shows it
    assert [a.result.status for a in actions] == ["completed"]
    mine = ran(model, "a/0")[4:]
    assert mine[:5] == ["hooks/config-changed", "actions/do-it", "hooks/config-changed", "hooks/config-changed",
                        "hooks/config-changed"], mine
    assert mine[5] == "hooks/vpn-relation-created" and "hook-error" not in model.unit_state("a/0")
    assert model.status("a/0")[0] != "error"
    tries = runs(model, "a/0", "hooks/config-changed")[1:]
    waits = [later.started - earlier.ended for earlier, later in zip(tries, tries[1:])]
    check_backoff(model, waits, (0.3, 0.6, 1.2))
    assert [e.why for e in model.hook_errors] == ["exit 1"] * 3


def test_the_backoff_starts_again_after_a_hook_succeeded(setup):
    """uniter/resolver.go ``NextOp``: once no hook is in error the retry timer is stopped, which
    resets the backoff (``StopRetryHookTimer``, juju/utils ``BackoffTimer.Reset``)."""
    make, charm, tmp_path = setup
    model = make(hook_retry_min=0.2)
    model.deploy("a", charm)
    fail(tmp_path, "config-changed", 2)
    model.set_config("a", {"x": "1"})
    fail(tmp_path, "config-changed", 1)
    model.set_config("a", {"x": "2"})
    tries = runs(model, "a/0", "hooks/config-changed")[1:]
    assert len(tries) == 5
    waits = [tries[1].started - tries[0].ended, tries[2].started - tries[1].ended, tries[4].started - tries[3].ended]
    check_backoff(model, waits, (0.2, 0.4, 0.2))


def test_an_agent_restarted_mid_hook_runs_it_again_after_the_first_backoff(setup):
    """A hook killed by an agent restart is found pending when the uniter starts again: a hook
    error (resolver.go ``NextOp``, RunHook/Pending), retried by the new uniter's fresh timer."""
    make, charm, _tmp = setup
    model = make(hook_retry_min=0.3)
    model.deploy("a", charm)
    model.deploy("b", charm)
    model.faults.kill_hooks("a/0", tool="relation-set")
    model.relate("a:vpn", "b:vpn-peer")
    joined = runs(model, "a/0", "hooks/vpn-relation-joined")
    assert len(joined) == 2 and joined[1].started - joined[0].ended >= 0.29
    assert [e.why for e in model.hook_errors] == ["agent restarted"]


def test_without_automatic_retries_a_hook_in_error_waits_for_juju_resolved(setup):
    """environs/config ``automatically-retry-hooks`` false: resolver.go ``nextOpHookError`` waits
    for the resolved mode: ResolvedRetryHooks runs the hook again, ResolvedNoHooks skips it
    (``NewSkipHook``: committed without its writes, so its follow-up hook is still queued)."""
    make, charm, tmp_path = setup
    model = make(parallel=2, retry_hooks=False)
    fail(tmp_path, "config-changed", 1)
    with pytest.raises(vca.VcaError, match="waits for juju resolved: a/0"):
        model.deploy("a", charm)
    assert model.run_action("a/0", "do-it", {}, wait=False).status == "completed"      # actions still run
    model.resolved("a/0")
    assert ran(model, "a/0")[-3:] == ["actions/do-it", "hooks/config-changed", "hooks/start"]
    fail(tmp_path, "config-changed", 1)
    with pytest.raises(vca.VcaError, match="waits for juju resolved"):
        model.set_config("a", {"x": "1"})
    model.resolved("a/0", retry=False)
    assert ran(model, "a/0")[-1] == "hooks/config-changed" and "hook-error" not in model.unit_state("a/0")
    with pytest.raises(vca.VcaError, match="not in error"):
        model.resolved("a/0")


def test_a_hook_tool_that_fails_fails_the_hook_which_juju_retries_while_an_action_runs(setup):
    """faults.fail_hooks: a hook tool answers an error (the charm's hook then fails by itself, as
    an ops charm does on a ModelError); the retry timer runs it again, and an action queued the
    moment it failed (``when``) runs in between (actions/resolver.go ``NextOp``)."""
    make, charm, _tmp = setup
    model = make(hook_retry_min=0.2)
    model.deploy("a", charm)
    model.deploy("b", charm)
    model.faults.fail_hooks("a/0", 2, hook="relation-joined", tool="relation-set")
    jobs = []
    model.when("a/0", "relation-joined", lambda: jobs.append(model.queue_action("a/0", "do-it")), failed=True)
    rid = model.relate("a:vpn", "b:vpn-peer")
    assert model.relation_data(rid)["a/0"] == {"me": "a/0"} and model.faults.injected["hook-error"] == 2
    mine = ran(model, "a/0")
    assert mine[mine.index("hooks/vpn-relation-joined"):][:4] == [
        "hooks/vpn-relation-joined", "actions/do-it", "hooks/vpn-relation-joined", "hooks/vpn-relation-joined"]
    assert jobs[0].result.status == "completed"
    assert [e.why for e in model.hook_errors] == ["exit 1", "exit 1"]


def test_serially_an_action_asked_as_a_hook_failed_runs_before_its_retry_however_long_another_unit_runs(
        setup, monkeypatch):
    """The lifecycle's hook-error-retry on the serial VCA (what failed under load): a/0's hook fails
    and an action is asked for it at that moment; b/0's action, queued before, runs first and
    ends only after a/0's retry timer has fired. Juju asks the actions resolver before
    ``nextOpHookError`` (``worker/uniter/resolver.go`` ``uniterResolver.NextOp``), so the action
    still runs before the retry; the emulation ran the retry first."""
    make, charm, tmp_path = setup
    gate = tmp_path / "logs" / "gate"
    monkeypatch.setenv("GATE_WAIT_GATE", str(gate))
    model = make(hook_retry_min=0.2)
    model.deploy("a", charm)
    model.deploy("b", charm)
    fail(tmp_path, "config-changed", 1)
    jobs = []
    model.when("a/0", "config-changed", lambda: jobs.append(model.queue_action("a/0", "do-it")), failed=True)

    def open_gate_once_the_timer_fired():
        wait_until(lambda: "a/0" in model._in_error, "a/0's hook did not fail")
        fires = model._in_error["a/0"].not_before
        wait_until(lambda: time.monotonic() > fires, "the retry timer did not fire")
        gate.write_text("")
    opener = threading.Thread(target=open_gate_once_the_timer_fired)
    opener.start()
    model._queue_hook("a/0", "config-changed")
    model.queue_action("b/0", "wait-gate")
    model.settle()
    opener.join(60)
    mine = ran(model, "a/0")
    assert mine[mine.index("hooks/config-changed", 3):] == ["hooks/config-changed", "actions/do-it",
                                                             "hooks/config-changed"], mine
    b_ended = runs(model, "b/0", "actions/wait-gate")[0].ended
    assert b_ended > model._in_error["a/0"].not_before and jobs[0].result.status == "completed"


# ---------------------------------------------------------------------- interrupted actions
def test_an_action_interrupted_by_an_agent_restart_fails_and_is_never_run_again(setup):
    """worker/uniter/actions/resolver.go ``NextOp``: an action found running when the uniter
    starts is failed ("the only safe thing to do is fail the action, since rerunning an arbitrary
    command can potentially be hazardous"); operation/failaction.go ``Execute`` fails it with
    "action terminated". Nothing it wrote is kept; the unit's other work goes on."""
    make, charm, _tmp = setup
    model = make()
    model.deploy("a", charm)
    model.deploy("b", charm)
    rid = model.relate("a:vpn", "b:vpn-peer")
    model.faults.interrupt_actions("a/0", "publish", tool="action-set")
    result = model.run_action("a/0", "publish", {})
    assert (result.status, result.message, result.results) == ("failed", "action terminated", {})
    assert "from-action" not in model.relation_data(rid)["a/0"]
    assert model.faults.injected["action-interrupted"] == 1
    model.update_status(["a/0"])
    assert ran(model, "a/0").count("actions/publish") == 1 and ran(model, "a/0")[-1] == "hooks/update-status"
    again = model.run_action("a/0", "publish", {})
    assert again.status == "completed" and model.relation_data(rid)["a/0"]["from-action"] == "yes"
