"""Juju's hook scheduling for the emulated VCA: per unit one at a time, different units at once.

A Juju unit agent runs its unit's hooks and actions one at a time; the agents of different
units run independently. What an agent runs next is not simply what was queued first: Juju
2.9's uniter (``worker/uniter/resolver.go``, ``worker/uniter/relation/resolver.go``) decides
from the unit's state:

* a hook that the commit of the previous one queued (``operation/runhook.go`` ``Commit``: start
  after the first config-changed, config-changed after upgrade-charm; install and upgrade-charm
  after the charm is deployed) runs next, before anything else: the actions resolver runs an
  action only when the uniter is idle or a hook is in error (``actions/resolver.go``);
* otherwise install first; then relation-created hooks (only once installed); then leadership
  hooks (leader-elected, leader-settings-changed); then actions; then the other lifecycle hooks
  (config-changed, start, upgrade-charm); then relation hooks; update-status only when nothing
  else is pending;
* among relation hooks, one relation is picked in no fixed order (Go's map order), and within
  it the relation-changed of the unit whose relation-joined committed last comes first (the
  joined hook's commit records it as ``ChangedPending``: ``relation/state.go``
  ``UpdateStateForHook``, returned first by ``relation/resolver.go`` ``nextHookForRelation``),
  then departed, broken, the application-data relation-changed (no remote unit: the remote
  application's bag changed), joined, changed, each by sorted remote unit name: at juju/juju
  7b871e78 (2.9.42) ``nextHookForRelation`` departs units no longer members (lines 185-221),
  breaks the relation (223-240), then runs relation-changed for each application whose settings
  version differs from the one recorded (242-262, before any join: "trigger all app hooks
  first", line 161), then joins (265-287), then changed by unit (289 on);
* a hook in error (``resolver.go`` ``nextOpHookError``) is retried when its retry timer fires
  (``not_before``), and until then the unit runs its actions and nothing else; a pending action
  runs before the retry even once the timer has fired: ``uniterResolver.NextOp`` asks the
  actions resolver (``resolver.go`` lines 126-129 at juju/juju 7b871e78, 2.9.42) before it
  reaches the hook in error (lines 148-156), and ``actions/resolver.go`` ``NextOp`` (lines
  93-96) returns the next action in that state ("We can still run actions if the unit is in a
  hook error state"). The timer firing only bumps ``RetryHookVersion`` (``uniter.go`` lines
  345-359, ``remotestate/watcher.go`` line 774), which ``nextOpHookError`` reads (line 261).
  That is also where the timer starts (lines 272-277): once the resolver reaches the hook in
  error, so after the actions pending when it failed (``retry_in``: the timer starts when the
  unit has no action left).

``UnitScheduler`` gives every job such a rank (and relation hooks their relation, kind and
remote unit) and runs a unit's pending jobs by that order, in the order they were queued where
Juju has none, with a bounded number of worker threads. The relation picked among several is
drawn from a seeded generator: no order the charms could come to rely on, reproducible for a
seed. A unit decides what it runs next when it becomes free (or, free, when work arrives), as
the uniter does; waiting for one of the bounded slots, which Juju does not have, never changes
that decision, so an action queued a moment after a config change of an idle unit runs after its
config-changed, as on Juju. With ``parallel=1`` there are no threads at all: jobs run in the
calling thread, the next one of the unit that queued first.

``parallel=UNBOUNDED`` (0) is Juju's own concurrency under OSM: no unit waits for another's hook.
Juju 2.9's uniter takes the machine lock around every hook and action
(``worker/uniter/uniter.go`` ``acquireExecutionLock``), but that lock is one per machine
(``cmd/jujud/agent/machine.go``: ``machinelock.New`` in the machine agent, handed to the uniters
it runs; ``core/machinelock``: a host-wide mutex), and OSM's N2VC gives every proxy charm's
execution environment a machine of its own (``n2vc_juju_conn.py`` ``create_execution_environment``
→ ``libjuju.create_machine`` with no machine id: ``model.add_machine``). So the units of an NS
never share a lock; a bound here is a testbed choice, not Juju's. Workers are started as units
have work, at most one per unit that runs or has decided a job.

Written here rather than with concurrent.futures: a thread pool runs any queued job on any
free worker, while per-unit order needs "the best-ranked pending job of a unit that is not
busy".
"""
import collections
import random
import threading
import time

#: Ranks, lowest first: what a Juju unit agent runs next among its pending work. QUEUED: a hook
#: the previous operation's commit queued. A hook in error (a job with ``not_before``) is outside
#: the ranks: while it is pending the unit runs its actions, then it, nothing else.
QUEUED, INSTALL, CREATED, LEADER, ACTION, LIFECYCLE, RELATION, IDLE = range(8)
RANKS = (QUEUED, INSTALL, CREATED, LEADER, ACTION, LIFECYCLE, RELATION, IDLE)
#: ``parallel`` meaning no bound across units (one worker per unit with work, as Juju under OSM).
UNBOUNDED = 0
#: The longest the serial scheduler sleeps at once while only a timer is pending.
_NAP = 0.5
#: ``not_before`` of a hook in error that waits for ``juju resolved`` (no retry timer).
PARKED = float("inf")


class Stuck(Exception):
    """Nothing can run any more: every pending job waits for ``juju resolved``."""
#: Within one relation, the order of the uniter's relation resolver ("app-changed": a relation-changed
#: with no remote unit, about the remote application's bag; module docstring).
RELATION_KINDS = ("departed", "broken", "app-changed", "joined", "changed")


class Job(object):
    __slots__ = ("unit", "fn", "key", "rank", "relation", "done", "result", "error", "reported", "not_before",
                 "in_error", "timer", "causes")

    def __init__(self, unit, fn, key, rank, relation=None, not_before=None, timer=None):
        self.unit, self.fn, self.key, self.rank = unit, fn, key, rank
        self.relation = relation    # (relation id, kind, remote unit) of a relation hook
        self.done, self.result, self.error, self.reported = False, None, None, False
        #: A hook in error: not run before this time.monotonic(); until then the unit runs
        #: nothing but its actions.
        self.not_before = not_before
        #: A hook in error (its retry), whether its timer has fired or ``juju resolved`` released it.
        self.in_error = not_before is not None or timer is not None
        #: Seconds of its retry timer, not started yet: the unit still has actions to run first.
        self.timer = timer
        if timer is not None:
            self.not_before = PARKED
        #: Why it was queued, each time it was (a coalesced relation-changed has several causes):
        #: instrumentation only, read by the hook it runs (``current_causes``).
        self.causes = []

    def due(self, now):
        return self.not_before is None or self.not_before <= now

    def parked(self):
        return self.not_before == PARKED

    def relation_order(self):
        rid, kind, remote = self.relation
        if kind == "changed" and not remote:
            kind = "app-changed"
        return (RELATION_KINDS.index(kind) if kind in RELATION_KINDS else len(RELATION_KINDS), remote or "")

    def run(self):
        _current.job = self
        try:
            self.result = self.fn()
        except Exception as e:  # noqa: BLE001 - any failure of a hook goes to whoever waits or settles
            self.error = e
        finally:
            _current.job = None
        self.done = True


_current = threading.local()


def current_causes():
    """The causes of the job this thread runs (a copy; [] outside a job)."""
    job = getattr(_current, "job", None)
    return list(job.causes) if job is not None else []


class UnitScheduler(object):
    def __init__(self, parallel=1, seed=0):
        self.parallel = UNBOUNDED if int(parallel) == UNBOUNDED else max(1, int(parallel))
        self._random = random.Random(seed)
        self._cv = threading.Condition()
        self._pending = collections.deque()
        self._busy = set()
        self._decided = {}           # unit -> the job it runs next, waiting for a free slot
        self._changed_pending = {}   # (unit, relation id) -> the remote unit whose joined hook committed
        self._finished = []          # failed jobs nobody waited for, reported by settle()
        self._workers = []
        #: (unit, time.monotonic()) of every retry timer started (``retry_in``), in order: when a
        #: report's retry could start at the earliest.
        self.timers_started = []

    # ------------------------------------------------------------------ queueing
    def submit(self, unit, fn, key=None, rank=RELATION, relation=None, not_before=None, cause=None,
               retry_in=None):
        """Queue ``fn`` for ``unit`` with ``rank`` (one of RANKS); a relation hook names its
        ``relation`` as (relation id, kind, remote unit); a hook in error the seconds of its retry
        timer (``retry_in``: it starts once the unit has no pending action, ``_start_timer``) or
        the time.monotonic() of its retry (``not_before``; PARKED: no timer, ``juju resolved``
        releases it). A pending job with the same (unit, key) is not queued
        twice (Juju runs one relation-changed for several changes of a remote unit's data, one
        config-changed for several config changes); that job is returned instead, with the better
        of the two ranks (a config-changed an upgrade-charm queues covers one already pending).
        ``cause`` (instrumentation) is added to the job's causes either way."""
        if rank not in RANKS:
            raise ValueError("unknown rank {!r}".format(rank))
        with self._cv:
            if key is not None:
                for job in self._pending:
                    if job.unit == unit and job.key == key:
                        job.rank = min(job.rank, rank)
                        if cause is not None:
                            job.causes.append(cause)
                        return job
            job = Job(unit, fn, key, rank, relation, not_before, retry_in)
            if cause is not None:
                job.causes.append(cause)
            self._pending.append(job)
            if retry_in is not None:
                self._start_timer(unit)
            if self.parallel != 1:
                if unit not in self._busy and unit not in self._decided:
                    self._decide(unit)
                self._start_workers()
                self._cv.notify_all()
            return job

    def run_now(self, unit, fn):
        """Run ``fn`` for ``unit`` as soon as the unit is free, ahead of its pending jobs; returns
        its result. Serially, that is at once (the unit is free: nothing runs in between)."""
        if self.parallel == 1:
            return fn()
        return self.wait(self.submit(unit, fn, rank=ACTION))

    def changed_pending(self, unit, rid, remote):
        """``unit``'s relation-joined about ``remote`` on ``rid`` committed: its relation-changed
        about ``remote`` is that relation's next hook (Juju's ``ChangedPending``)."""
        with self._cv:
            self._changed_pending[(unit, str(rid))] = remote

    def release(self, job, fn=None):
        """A parked job may run now (``juju resolved``), as ``fn`` if given."""
        with self._cv:
            job.not_before, job.timer = None, None
            if fn is not None:
                job.fn = fn
            self._cv.notify_all()

    def wait(self, job):
        """Until ``job`` has run; returns its result or raises its error."""
        if self.parallel == 1:
            while not job.done:
                self._run_next_serially()
        else:
            with self._cv:
                while not job.done:
                    self._cv.wait()
        job.reported = True
        if job.error is not None:
            raise job.error
        return job.result

    def settle(self):
        """Until nothing is pending or running (a hook in error included: its retry is waited
        for); raises the first error of a job nobody waited for."""
        if self.parallel == 1:
            while self._pending:
                self._run_next_serially()
        else:
            with self._cv:
                while self._pending or self._busy or self._decided:
                    if not self._busy and not self._decided and all(j.parked() for j in self._pending):
                        raise Stuck(self._stuck())
                    self._cv.wait(_NAP)
        failed = [j for j in self._finished if not j.reported]
        self._finished = []
        if failed:
            for job in failed:
                job.reported = True
            raise failed[0].error

    def idle(self):
        with self._cv:
            return not self._pending and not self._busy and not self._decided

    # ------------------------------------------------------------------ running
    def _run_next_serially(self):
        """Run the next job of the first unit (in queue order) that has one it may run now; when
        every unit only waits for a hook's retry timer, sleep until the first one fires."""
        now = time.monotonic()
        job = None
        for unit in _in_order(j.unit for j in self._pending):
            job = self._first_of(unit, now)
            if job is not None:
                break
        if job is None:
            wait = self._due_in(now)
            if wait is None:
                raise Stuck(self._stuck())
            time.sleep(min(_NAP, wait))
            return
        self._pending.remove(job)
        job.run()
        self._start_timer(job.unit)
        if job.error is not None:
            job.reported = True
            raise job.error

    def _start_timer(self, unit):
        """``unit``'s agent is free or its hook just failed: where its resolver reaches
        ``nextOpHookError`` (no action pending), the retry timer of its hook in error starts
        (``resolver.go`` lines 272-277; called with the lock held or serially)."""
        if any(j.unit == unit and j.rank == ACTION for j in self._pending) or \
                getattr(self._decided.get(unit), "rank", None) == ACTION:
            return
        for job in self._pending:
            if job.unit == unit and job.timer is not None:
                now = time.monotonic()
                job.not_before, job.timer = now + job.timer, None
                self.timers_started.append((unit, now))

    def _due_in(self, now):
        """Seconds until the first retry timer of a pending hook fires (None: no timer)."""
        waits = [j.not_before - now for j in self._pending if not j.due(now) and not j.parked()]
        return min(waits) if waits else None

    def _stuck(self):
        return "every pending job waits for juju resolved: {}".format(
            ", ".join(sorted({j.unit for j in self._pending if j.parked()})))

    def _start_workers(self):
        """As many workers as ``parallel`` allows, but no more than units that run or have decided
        a job (called with the lock held). Unbounded, one more: a unit whose hook in error waits
        for its retry timer has decided nothing, and with every worker inside another unit's hook
        nobody would watch that timer (a retry due at 0.4 s ran at 3 s, when a 3 s hook of another
        unit ended; Juju's uniter of that unit retries on time)."""
        wanted = len(self._busy) + len(self._decided)
        limit = wanted + 1 if self.parallel == UNBOUNDED else min(self.parallel, max(wanted, 1))
        while len(self._workers) < limit:
            t = threading.Thread(target=self._work, name="vca-unit-{}".format(len(self._workers)), daemon=True)
            self._workers.append(t)
            t.start()

    def _first_of(self, unit, now=None):
        """The job ``unit``'s agent runs next: the lowest rank, the first queued within it; among
        relation hooks, one relation drawn at random, then the resolver's order within it. A hook
        in error leaves only the unit's actions, first queued first, and runs itself once none is
        pending and its retry timer has fired (None: the unit waits), as ``uniterResolver.NextOp``
        asks the actions resolver before ``nextOpHookError`` (module docstring)."""
        now = time.monotonic() if now is None else now
        mine = [job for job in self._pending if job.unit == unit]
        in_error = next((job for job in mine if job.in_error), None)
        if in_error is not None:
            action = next((job for job in mine if job.rank == ACTION), None)
            return action if action is not None or not in_error.due(now) else in_error
        best = None
        for job in mine:
            if best is None or job.rank < best.rank:
                best = job
        if best is None or best.rank != RELATION or best.relation is None:
            return best
        mine = [j for j in self._pending if j.unit == unit and j.rank == RELATION and j.relation is not None]
        rid = self._random.choice(sorted({j.relation[0] for j in mine}))
        promised = self._changed_pending.pop((unit, rid), None)
        for job in mine:
            if promised is not None and job.relation == (rid, "changed", promised):
                return job      # (never an application's relation-changed: its remote unit is None)
        return min((j for j in mine if j.relation[0] == rid), key=Job.relation_order)

    def _decide(self, unit):
        """``unit`` is free: fix the job it runs next (called with the lock held)."""
        job = self._first_of(unit)
        if job is not None:
            self._pending.remove(job)
            self._decided[unit] = job

    def _next(self):
        """The decided job of the unit with the most work queued (decided first among equals);
        called with the lock held. On Juju every unit agent runs its own queue and nothing
        makes a unit wait; here ``parallel`` slots are shared, and handing a free slot to the
        longest queue keeps that unit (a hub with k relations, which gets 3k relation hooks in
        a row) moving as its agent would. A free unit that had nothing it could run (a hook in
        error) decides again: its retry timer may have fired."""
        for unit in _in_order(j.unit for j in self._pending):
            if unit not in self._busy and unit not in self._decided:
                self._decide(unit)
        if not self._decided:
            return None
        queued = dict.fromkeys(self._decided, 1)
        for job in self._pending:
            if job.unit in queued:
                queued[job.unit] += 1
        unit = max(self._decided, key=queued.get)      # max keeps the first of equals
        return self._decided.pop(unit)

    def _work(self):
        while True:
            with self._cv:
                job = self._next()
                while job is None:
                    self._cv.wait(self._due_in(time.monotonic()))
                    job = self._next()
                self._busy.add(job.unit)
                self._start_workers()       # a retry timer may have let several units decide
            job.run()
            with self._cv:
                self._busy.discard(job.unit)
                self._start_timer(job.unit)
                self._decide(job.unit)
                if job.error is not None:
                    self._finished.append(job)
                self._cv.notify_all()


def _in_order(units):
    """Each unit once, in the order first seen."""
    return list(collections.OrderedDict.fromkeys(units))
