"""Faults of a Juju VCA that the emulated one can inject, Juju's hook retry timer, and how a hook
process is run.

The unit agents of OSM's VCA lose their controller connection and restart, and hooks fail.
Juju 2.9 treats all of these alike: the hook is in error (a hook killed by an agent restart is
found in the "pending" step when the agent starts again, ``worker/uniter/resolver.go``
``NextOp``; a commit that does not reach the controller fails the hook, ``runner/context``
``Flush``); nothing it wrote is kept (``hookcontext``), the unit reports ``hook failed``, runs
its actions but no other hook, and its retry timer runs the same hook again (``HookRetry``). An
action the agent was running when it restarted is failed ("action terminated",
``operation/failaction.go``) and never run again (``actions/resolver.go``). The lifecycle tests
and ``make lifecycle`` inject:

* ``fail_commits(unit, n, hook)``: the next n hook commits of ``unit`` (of hooks whose name
  contains ``hook``, if given) do not reach the controller (the hook ran and exited 0);
* ``kill_hooks(unit, tool, n)``: the next n hooks of ``unit`` are killed the moment they call
  ``tool`` (the unit agent restarted mid-hook);
* ``fail_hooks(unit, n, hook, tool)``: the next n hooks of ``unit`` (name containing ``hook``)
  get an error from their first call of ``tool``, as from an API call that failed: the charm
  fails the hook by itself (exit status 1);
* ``interrupt_actions(unit, action, tool, n)``: the next n runs of ``action`` on ``unit`` are
  killed when they call ``tool`` (the agent restarted while the action ran);
* ``controller_outage(seconds)``: for that long no hook starts and no commit succeeds.

``injected`` counts what was injected, for the report.
"""
import collections
import os
import random
import signal
import subprocess
import threading
import time

#: Juju 2.9's hook retry strategy (``apiserver/facades/agent/retrystrategy``: MinRetryTime 5 s,
#: MaxRetryTime 5 min, RetryTimeFactor 2, JitterRetryTime; the model's automatically-retry-hooks,
#: default true), run by the uniter's backoff timer (juju/utils ``BackoffTimer``: the first retry
#: after the minimum, each later one after factor times the previous, +-3 %, at most the maximum).
RETRY_MIN, RETRY_MAX, RETRY_FACTOR, RETRY_JITTER = 5.0, 300.0, 2, 0.03
#: The testbed knob: the first retry's delay in seconds (the maximum keeps Juju's ratio, 60 times
#: it), so that tests need not wait minutes. Unset: Juju's values.
RETRY_MIN_ENV = "VPNAAS_VCA_HOOK_RETRY_MIN"


class HookRetry(object):
    """The retry timer of each unit's uniter: ``delay(unit)`` when a hook of ``unit`` failed (the
    timer starts), ``reset(unit)`` when it succeeded (Juju stops the timer and resets the backoff)
    and when the unit agent restarted (a new uniter, a new timer). ``automatic`` False is the
    model's ``automatically-retry-hooks: false``: the hook waits for ``juju resolved``."""

    def __init__(self, minimum=None, automatic=True, seed=0):
        if minimum is None:
            minimum = float(os.environ.get(RETRY_MIN_ENV) or RETRY_MIN)
        self.minimum = float(minimum)
        self.maximum = self.minimum * (RETRY_MAX / RETRY_MIN)
        self.automatic = automatic
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self._current = {}
        #: (unit, seconds) of every timer started, in order: what the tests check the backoff by
        #: (the time a retry actually waited also holds the machine's scheduling).
        self.given = []

    def delay(self, unit):
        """Seconds until the failed hook of ``unit`` runs again; the next failure waits longer."""
        with self._lock:
            current = self._current.get(unit, self.minimum)
            following = current * RETRY_FACTOR * (1 + RETRY_JITTER * (self._random.random() * 2 - 1))
            self._current[unit] = min(following, self.maximum)
            self.given.append((unit, current))
            return current

    def reset(self, unit):
        with self._lock:
            self._current.pop(unit, None)


class Faults(object):
    def __init__(self):
        self._lock = threading.Lock()
        self._commit_failures = {}                       # unit -> [hook name part, commits still to refuse]
        self._kills = {}                                 # unit -> [tool, count]
        self._tool_failures = {}                         # unit -> [hook name part, tool, count]
        self._interrupts = {}                            # (unit, action) -> [tool, count]
        self._outage_until = 0.0
        self.injected = collections.Counter()

    # ------------------------------------------------------------------ what tests ask for
    def fail_commits(self, unit, count=1, hook=""):
        with self._lock:
            self._commit_failures[unit] = [hook, count]

    def kill_hooks(self, unit, tool="relation-set", count=1):
        with self._lock:
            self._kills[unit] = [tool, count]

    def fail_hooks(self, unit, count=1, hook="", tool="status-set"):
        with self._lock:
            self._tool_failures[unit] = [hook, tool, count]

    def interrupt_actions(self, unit, action, tool="action-set", count=1):
        with self._lock:
            self._interrupts[(unit, action)] = [tool, count]

    def controller_outage(self, seconds):
        with self._lock:
            self._outage_until = max(self._outage_until, time.monotonic() + seconds)

    # ------------------------------------------------------------------ what the model asks
    def outage_left(self):
        with self._lock:
            return max(0.0, self._outage_until - time.monotonic())

    def wait_for_controller(self):
        """A unit agent cannot build a hook context without its controller: it waits."""
        left = self.outage_left()
        while left > 0:
            time.sleep(min(left, 0.1))
            left = self.outage_left()

    def commit_reaches_controller(self, unit, hook):
        with self._lock:
            if self._outage_until > time.monotonic():
                self.injected["commit-during-outage"] += 1
                return False
            armed = self._commit_failures.get(unit)
            if armed and armed[0] in hook:
                armed[1] -= 1
                if armed[1] <= 0:
                    del self._commit_failures[unit]
                self.injected["commit-failure"] += 1
                return False
            return True

    def tool_fails(self, ctx, tool):
        """Called at every hook-tool call: True when this call is to fail (``fail_hooks``), once
        per hook run."""
        if ctx.action or ctx.failed_tool:
            return False
        with self._lock:
            armed = self._tool_failures.get(ctx.unit)
            if not armed or armed[1] != tool or armed[0] not in ctx.hook:
                return False
            armed[2] -= 1
            if armed[2] <= 0:
                del self._tool_failures[ctx.unit]
            self.injected["hook-error"] += 1
        ctx.failed_tool = tool
        return True

    def kill_at(self, ctx, tool):
        """Called at every hook-tool call: kill the hook (or action) when a restart of its unit
        agent is armed for this tool."""
        # A tool call comes from the hook's own process: its pid is being recorded, if not yet.
        if ctx.pid is None and not ctx.started.wait(60):
            return False
        with self._lock:
            if ctx.action:
                key = (ctx.unit, ctx.hook.split("/", 1)[-1])
                armed, table, what = self._interrupts.get(key), self._interrupts, "action-interrupted"
            else:
                key = ctx.unit
                armed, table, what = self._kills.get(key), self._kills, "agent-restart"
            if not armed or armed[0] != tool:
                return False
            armed[1] -= 1
            if armed[1] <= 0:
                del table[key]
            self.injected[what] += 1
        ctx.killed = True
        try:
            os.killpg(ctx.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        return True

    @staticmethod
    def run_hook(ctx, argv, cwd, env, timeout):
        """Run a hook's process in a session of its own (so that a restart can kill all of it)."""
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                universal_newlines=True, start_new_session=True)
        ctx.pid = proc.pid
        ctx.started.set()
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise
        return subprocess.CompletedProcess(argv, proc.returncode, out, None)
