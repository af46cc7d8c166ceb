"""Faults of a Juju VCA that the emulated one can inject, and how a hook process is run.

The unit agents of OSM's VCA lose their controller connection and restart; Juju then runs the
interrupted hook again, with nothing it wrote kept (``hookcontext``). The lifecycle tests and
``make lifecycle`` inject exactly those:

* ``fail_commits(unit, n, hook)``: the next n hook commits of ``unit`` (of hooks whose name
  contains ``hook``, if given) do not reach the controller (the hook ran and exited 0, Juju
  drops its relation writes and runs it again);
* ``kill_hooks(unit, tool, n)``: the next n hooks of ``unit`` are killed the moment they call
  ``tool`` (the unit agent restarted mid-hook; the hook runs again from the start);
* ``controller_outage(seconds)``: for that long no hook starts and no commit succeeds.

``injected`` counts what was injected, for the report. Actions are not subject to these faults:
OSM waits for an action's own result and runs it again itself.
"""
import collections
import os
import signal
import subprocess
import threading
import time


class Faults(object):
    def __init__(self, backoff=0.2):
        self.backoff = backoff
        self._lock = threading.Lock()
        self._commit_failures = {}                       # unit -> [hook name part, commits still to refuse]
        self._kills = {}                                 # unit -> [tool, count]
        self._outage_until = 0.0
        self.injected = collections.Counter()

    # ------------------------------------------------------------------ what tests ask for
    def fail_commits(self, unit, count=1, hook=""):
        with self._lock:
            self._commit_failures[unit] = [hook, count]

    def kill_hooks(self, unit, tool="relation-set", count=1):
        with self._lock:
            self._kills[unit] = [tool, count]

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

    def kill_at(self, ctx, tool):
        """Called at every hook-tool call: kill the hook when a kill is armed for this tool."""
        if ctx.action or ctx.pid is None:
            return False
        with self._lock:
            armed = self._kills.get(ctx.unit)
            if not armed or armed[0] != tool:
                return False
            armed[1] -= 1
            if armed[1] <= 0:
                del self._kills[ctx.unit]
            self.injected["agent-restart"] += 1
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
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise
        return subprocess.CompletedProcess(argv, proc.returncode, out, None)
