"""testbed.scheduler: Juju's hook order (per unit in order, units at once, bounded)."""
import threading
import time

import pytest

from testbed.emulators import scheduler


def _recorder(log, lock, unit, i, pause=0.0, running=None, peak=None):
    def job():
        with lock:
            running.add((unit, i)) if running is not None else None
            if peak is not None:
                peak.append(len(running))
        time.sleep(pause)
        with lock:
            log.append((unit, i))
            if running is not None:
                running.discard((unit, i))
        return (unit, i)
    return job


@pytest.mark.parametrize("parallel", [1, 3])
def test_each_unit_runs_its_jobs_in_order(parallel):
    s = scheduler.UnitScheduler(parallel)
    log, lock = [], threading.Lock()
    for i in range(5):
        for unit in ("a/0", "b/0", "c/0"):
            s.submit(unit, _recorder(log, lock, unit, i, pause=0.005 * (unit == "a/0")))
    s.settle()
    assert len(log) == 15
    for unit in ("a/0", "b/0", "c/0"):
        assert [i for u, i in log if u == unit] == list(range(5))


def test_units_run_at_the_same_time_within_the_bound():
    """Each job waits at a barrier for a second one to run beside it: one after another, the
    first job would never pass it (BrokenBarrierError after its generous timeout), whatever the
    load; the peak of jobs seen running at once is then exactly the bound. (Not a time taken:
    0.1 s jobs expected to end within 0.35 s failed on a loaded machine.)"""
    s = scheduler.UnitScheduler(2)
    log, lock, running, peak = [], threading.Lock(), set(), []
    pairs = threading.Barrier(2, timeout=60)

    def job(unit):
        def run():
            with lock:
                running.add(unit)
                peak.append(len(running))
            pairs.wait()
            with lock:
                running.discard(unit)
                log.append((unit, 0))
        return run
    for unit in ("a/0", "b/0", "c/0", "d/0"):
        s.submit(unit, job(unit))
    s.settle()
    assert sorted(log) == [(u, 0) for u in ("a/0", "b/0", "c/0", "d/0")]
    assert max(peak) == 2                 # two at once, never more than the bound


def test_one_unit_never_runs_two_jobs_at_once():
    s = scheduler.UnitScheduler(4)
    log, lock, running, peak = [], threading.Lock(), set(), []
    for i in range(4):
        s.submit("hub/0", _recorder(log, lock, "hub/0", i, pause=0.02, running=running, peak=peak))
    s.settle()
    assert max(peak) == 1 and [i for _u, i in log] == [0, 1, 2, 3]


@pytest.mark.parametrize("parallel", [1, 2])
def test_pending_job_with_same_key_is_coalesced(parallel):
    s = scheduler.UnitScheduler(parallel)
    gate = threading.Event()
    calls = []
    s.submit("a/0", gate.wait if parallel > 1 else (lambda: None))
    first = s.submit("a/0", lambda: calls.append(1), key="changed")
    second = s.submit("a/0", lambda: calls.append(2), key="changed")
    gate.set()
    s.settle()
    assert first is second and calls == [1]


@pytest.mark.parametrize("parallel", [1, 2])
def test_wait_returns_result_and_raises_error(parallel):
    s = scheduler.UnitScheduler(parallel)
    assert s.wait(s.submit("a/0", lambda: 42)) == 42

    def boom():
        raise ValueError("hook failed")
    with pytest.raises(ValueError):
        s.wait(s.submit("a/0", boom))
    s.settle()       # an error already handed to a waiter is not raised twice


def test_settle_raises_an_unwaited_error_once():
    s = scheduler.UnitScheduler(2)

    def boom():
        raise RuntimeError("x")
    s.submit("a/0", boom)
    s.submit("b/0", lambda: None)
    with pytest.raises(RuntimeError):
        s.settle()
    s.settle()
    assert s.idle()


def test_run_now_serial_jumps_the_queue():
    s = scheduler.UnitScheduler(1)
    order = []
    s.submit("a/0", lambda: order.append("queued"))
    s.run_now("a/0", lambda: order.append("now"))
    s.settle()
    assert order == ["now", "queued"]


def test_a_free_slot_goes_to_the_unit_with_the_longest_queue():
    s = scheduler.UnitScheduler(2)
    started, lock = [], threading.Lock()
    release_x, release_y, x_runs, y_runs = (threading.Event() for _ in range(4))

    def blocker(running, release):
        def job():
            running.set()
            release.wait(60)
        return job

    def job(name):
        def run():
            with lock:
                started.append(name)
        return run

    s.submit("x/0", blocker(x_runs, release_x))
    s.submit("y/0", blocker(y_runs, release_y))
    assert x_runs.wait(60) and y_runs.wait(60)         # both slots taken
    s.submit("b/0", job("b0"))                         # queued first, one job
    for i in range(3):
        s.submit("hub/0", job("hub{}".format(i)))      # queued later, three jobs
    release_x.set()                                    # one slot frees up; y/0 keeps the other
    deadline = time.monotonic() + 60
    while len(started) < 4 and time.monotonic() < deadline:
        time.sleep(0.01)
    release_y.set()
    s.settle()
    # The longest queue first; between equal queues, the one queued first.
    assert started == ["hub0", "hub1", "b0", "hub2"]


@pytest.mark.parametrize("parallel", [1, 2])
def test_a_unit_runs_actions_then_lifecycle_then_relation_hooks_then_idle_ones(parallel):
    """Juju 2.9's uniter: pending actions before any hook, config-changed and the other
    lifecycle hooks before relation hooks, update-status last; queue order within a rank."""
    s = scheduler.UnitScheduler(parallel)
    order, release, busy = [], threading.Event(), threading.Event()

    def blocker():
        busy.set()
        release.wait(60)

    def job(name):
        return lambda: order.append(name)

    if parallel > 1:
        s.submit("a/0", blocker, rank=scheduler.ACTION)  # the unit is busy while the rest is queued
        assert busy.wait(60)
    s.submit("a/0", job("update-status"), rank=scheduler.IDLE)
    s.submit("a/0", job("changed-1"), rank=scheduler.RELATION)
    s.submit("a/0", job("config-changed"), rank=scheduler.LIFECYCLE)
    s.submit("a/0", job("changed-2"), rank=scheduler.RELATION)
    s.submit("a/0", job("action-1"), rank=scheduler.ACTION)
    s.submit("a/0", job("start"), rank=scheduler.LIFECYCLE)
    s.submit("a/0", job("action-2"), rank=scheduler.ACTION)
    release.set()
    s.settle()
    assert order == ["action-1", "action-2", "config-changed", "start", "changed-1", "changed-2", "update-status"]


def test_serially_the_unit_that_queued_first_runs_its_best_ranked_job():
    s = scheduler.UnitScheduler(1)
    order = []
    s.submit("a/0", lambda: order.append("a-changed"), rank=scheduler.RELATION)
    s.submit("b/0", lambda: order.append("b-changed"), rank=scheduler.RELATION)
    s.submit("a/0", lambda: order.append("a-action"), rank=scheduler.ACTION)
    s.settle()
    assert order == ["a-action", "a-changed", "b-changed"]


def test_an_unknown_rank_is_refused_and_nothing_is_queued():
    s = scheduler.UnitScheduler(1)
    with pytest.raises(ValueError):
        s.submit("a/0", lambda: None, rank=42)
    assert s.idle()


def test_a_free_unit_keeps_the_job_it_decided_on_while_it_waits_for_a_slot():
    """Juju's agent of an idle unit starts config-changed as soon as the config changes; an
    action queued a moment later runs after it, even when the emulation's slots are all taken."""
    s = scheduler.UnitScheduler(2)
    order, release, busy = [], threading.Event(), threading.Event()

    def blocker():
        busy.set()
        release.wait(60)

    s.submit("x/0", blocker)
    s.submit("y/0", blocker)
    deadline = time.monotonic() + 60
    while s._busy != {"x/0", "y/0"} and time.monotonic() < deadline:   # both slots taken
        time.sleep(0.01)
    s.submit("a/0", lambda: order.append("config-changed"), rank=scheduler.LIFECYCLE)
    s.submit("a/0", lambda: order.append("relation-changed"), rank=scheduler.RELATION)
    s.submit("a/0", lambda: order.append("action"), rank=scheduler.ACTION)
    release.set()
    s.settle()
    assert order == ["config-changed", "action", "relation-changed"]


def test_unbounded_no_unit_waits_for_another_units_job():
    """parallel=UNBOUNDED, Juju under OSM (one machine, one machine lock, per unit): twelve units'
    jobs all run at once -- each waits until all twelve are running -- while each unit still runs
    its own jobs one at a time, in order, with at most one worker per unit."""
    units = ["u{}/0".format(i) for i in range(12)]
    s = scheduler.UnitScheduler(scheduler.UNBOUNDED)
    together = threading.Barrier(len(units), timeout=60)
    log, lock, running, peak = [], threading.Lock(), set(), []
    for unit in units:
        s.submit(unit, together.wait)
        s.submit(unit, _recorder(log, lock, unit, 1, running=running, peak=peak))
        s.submit(unit, _recorder(log, lock, unit, 2, running=running, peak=peak))
    s.settle()       # a barrier that broke (a unit kept waiting for a slot) raises here
    assert sorted(log) == sorted((u, i) for u in units for i in (1, 2))
    for unit in units:
        assert [i for u, i in log if u == unit] == [1, 2]
    assert len(s._workers) <= len(units) + 1       # one more watches retry timers


def test_unbounded_a_retry_runs_on_its_timer_while_another_units_hook_still_runs():
    """A unit's hook in error waits for its retry timer only: its retry runs while another unit's
    long hook is still running (that hook waits for the retry to have run, 60 s at most)."""
    s = scheduler.UnitScheduler(scheduler.UNBOUNDED)
    retried, seen = threading.Event(), []
    s.submit("b/0", lambda: seen.append(retried.wait(60)))
    s.submit("a/0", retried.set, not_before=time.monotonic() + 0.2)
    s.settle()
    assert seen == [True], "the retry waited for another unit's hook"


def _until(moment):
    """Return once time.monotonic() has passed ``moment`` (a retry timer has fired)."""
    while time.monotonic() <= moment:
        time.sleep(0.005)


def test_serially_a_pending_action_runs_before_a_retry_whose_timer_fired_during_another_units_hook():
    """juju/juju 2.9 ``worker/uniter/resolver.go`` ``uniterResolver.NextOp``: the actions resolver
    is asked (lines 126-129) before the hook in error is (``nextOpHookError``, lines 148-156), so
    an action pending when the retry timer has fired still runs first. The serial VCA of the
    end-to-end tests ran the retry first once another unit's hook outlasted the timer (the
    lifecycle's hook-error-retry on a loaded machine: its action ran after the retry)."""
    s = scheduler.UnitScheduler(1)
    order = []
    due = time.monotonic() + 0.05
    s.submit("b/0", lambda: (_until(due), order.append("b-hook")))    # queued first: runs past a/0's timer
    s.submit("a/0", lambda: order.append("a-retry"), rank=scheduler.QUEUED, not_before=due)
    s.submit("a/0", lambda: order.append("a-action"), rank=scheduler.ACTION)
    s.submit("a/0", lambda: order.append("a-changed"), rank=scheduler.RELATION)
    s.settle()
    assert order == ["b-hook", "a-action", "a-retry", "a-changed"]


@pytest.mark.parametrize("parallel", [2, scheduler.UNBOUNDED])
def test_a_unit_in_error_runs_every_pending_action_before_the_retry_whose_timer_fired(parallel):
    """The same with units at once: an action still pending when the unit's previous action
    ends, after the retry timer fired, runs before the retry (``resolver.go`` ``NextOp``)."""
    s = scheduler.UnitScheduler(parallel)
    order, started, queued = [], threading.Event(), threading.Event()

    def first():
        started.set()
        queued.wait(60)
        _until(due)
        order.append("a-action-1")
    s.submit("a/0", first, rank=scheduler.ACTION)
    assert started.wait(60)
    due = time.monotonic() + 0.05
    s.submit("a/0", lambda: order.append("a-retry"), rank=scheduler.QUEUED, not_before=due)
    s.submit("a/0", lambda: order.append("a-action-2"), rank=scheduler.ACTION)
    queued.set()
    s.settle()
    assert order == ["a-action-1", "a-action-2", "a-retry"]


def test_a_hook_resolved_runs_after_the_pending_actions():
    """``juju resolved`` (ResolvedRetryHooks) is read by ``nextOpHookError`` too, after the
    actions resolver: a pending action still runs first."""
    s = scheduler.UnitScheduler(1)
    order = []
    retry = s.submit("a/0", lambda: order.append("a-retry"), rank=scheduler.QUEUED, not_before=scheduler.PARKED)
    s.submit("a/0", lambda: order.append("a-action"), rank=scheduler.ACTION)
    s.release(retry)
    s.settle()
    assert order == ["a-action", "a-retry"]


@pytest.mark.parametrize("parallel", [1, 2, scheduler.UNBOUNDED])
def test_the_retry_timer_starts_after_the_actions_pending_when_the_hook_failed(parallel):
    """``resolver.go`` ``nextOpHookError`` starts the retry timer (lines 272-277), and
    ``uniterResolver.NextOp`` reaches it only when the actions resolver has nothing: an action
    asked while the hook ran runs first and the timer starts when it ended (the emulation started
    it as the hook failed, so the retry followed the action at once)."""
    s = scheduler.UnitScheduler(parallel)
    times = {}

    def action():
        _until(times["failed"] + 0.3)                   # longer than the timer
        times["action ended"] = time.monotonic()

    def hook():
        s.submit("a/0", action, rank=scheduler.ACTION)  # asked while the hook runs
        times["failed"] = time.monotonic()
        s.submit("a/0", lambda: times.setdefault("retried", time.monotonic()), rank=scheduler.QUEUED, retry_in=0.1)
    s.submit("a/0", hook)
    s.settle()
    assert times["retried"] - times["action ended"] >= 0.1, times
