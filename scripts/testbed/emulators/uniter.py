"""What a Juju 2.9 unit agent's uniter does once a hook has run, for the emulated VCA (a mixin of
``vca.Model``, which runs the hooks): commit what the hook queues next, or hold the unit in
error and retry the hook with Juju's backoff; ``juju resolved``; and the test instrumentation that
acts at the moment a hook ends (``when``).

juju/juju, 2.9 line: ``worker/uniter/operation/runhook.go`` ``runHook.Commit`` (start queued after
the first config-changed, config-changed after upgrade-charm); ``worker/uniter/resolver.go``
``uniterResolver.NextOp`` and ``nextOpHookError`` (a hook in error: no other hook, actions still
run; the retry timer, or the resolved mode with automatically-retry-hooks off);
``worker/uniter/uniter.go`` (the retry timer: ``faults.HookRetry``).
"""
import collections
import time

from testbed.emulators import scheduler

#: Runs of one hook whose run or commit did not complete, before the emulation gives up.
MAX_RETRIES = 20
#: Runs in a row in which one hook failed on its own (exit status), before the emulation reports
#: the charm's error (Juju would keep retrying it, every 5 minutes at most).
MAX_HOOK_FAILURES = 4
#: One failed hook run: when it ended, why ("exit 1", "agent restarted", "commit refused"), its log.
HookError = collections.namedtuple("HookError", "at unit hook why log")


class VcaError(Exception):
    pass


class Uniter(object):
    def when(self, unit, hook, fn, failed=None):
        """``fn()`` once, as soon as the next hook of ``unit`` whose name contains ``hook`` has
        ended (``failed``: only one that failed, or only one that committed; None: either): what
        an operator or OSM does at that moment (the lifecycle operations: a downgrade in the
        middle of a rotation, an action while a hook is in error)."""
        with self._lock:
            self._triggers.append((unit, hook, failed, fn))

    def _triggered(self, unit, hook, failed):
        with self._lock:
            due = [t for t in self._triggers if t[0] == unit and t[1] in hook and t[2] in (None, failed)]
            self._triggers = [t for t in self._triggers if t not in due]
        for trigger in due:
            trigger[3]()

    def _hook_committed(self, unit, hook):
        """What the commit of ``hook`` changes in the unit agent's state: the error cleared and
        the retry timer reset (``resolver.go``); start queued after the first config-changed,
        config-changed after upgrade-charm (``operation/runhook.go`` ``Commit``)."""
        self.hook_retry.reset(unit)
        with self._update() as state:
            u = state["units"][unit]
            u.pop("hook-error", None)
            self._failures.pop((unit, hook), None)
            started = u.get("started", True)
            if hook == "start":
                u["started"] = True
        if hook == "config-changed" and not started:
            self._queue_hook(unit, "start", rank=scheduler.QUEUED)
        elif hook == "upgrade-charm":
            self._queue_hook(unit, "config-changed", rank=scheduler.QUEUED)

    def _hook_failed(self, unit, hook, ctx, proc, new_log, again):
        """Juju's hook error: the unit reports ``hook failed: "<hook>"``, runs its actions but no
        other hook, and its retry timer runs ``again()`` once no action is pending
        (``resolver.go`` ``NextOp`` asks the actions resolver first, then ``nextOpHookError``,
        which starts the timer: the scheduler's job with ``retry_in``; the timer's length:
        ``faults.HookRetry``); with
        automatically-retry-hooks off it waits for ``resolved``. A hook that failed on its own
        MAX_HOOK_FAILURES times in a row is the charm's error, which a test must see: VcaError
        (Juju would go on retrying every 5 min)."""
        dispatch_path = "hooks/" + hook
        own = not ctx.killed and proc.returncode != 0
        with self._update() as state:
            self.retries[(unit, dispatch_path)] += 1
            runs = self.retries[(unit, dispatch_path)]
            failures = self._failures[(unit, hook)] = self._failures.get((unit, hook), 0) + own
            state["units"][unit]["hook-error"] = {"hook": hook, "message": 'hook failed: "{}"'.format(hook)}
            self.hook_errors.append(HookError(time.monotonic(), unit, hook, "agent restarted" if ctx.killed else
                                              "exit {}".format(proc.returncode) if own else "commit refused",
                                              "\n".join(new_log)[-4000:]))
        if failures >= MAX_HOOK_FAILURES or runs > MAX_RETRIES:
            # ops sends an uncaught exception's traceback to juju-log, not to stderr.
            raise VcaError("{} {} failed (exit {}, {} run(s)):\n{}{}".format(
                unit, dispatch_path, proc.returncode, runs, proc.stdout[-4000:], "\n".join(new_log)[-4000:]))
        if self.hook_retry.automatic:
            job = self.jobs.submit(unit, again, rank=scheduler.QUEUED, retry_in=self.hook_retry.delay(unit))
        else:
            job = self.jobs.submit(unit, again, rank=scheduler.QUEUED, not_before=scheduler.PARKED)
        self._in_error[unit] = job

    def resolved(self, unit, retry=True):
        """``juju resolved [--no-retry]``: the hook in error runs again at once, or (retry False)
        is skipped: committed without its writes, as Juju's skip operation does."""
        job = self._in_error.pop(unit, None)
        if job is None or job.done:
            raise VcaError("{} is not in error".format(unit))
        with self._update() as state:
            hook = state["units"][unit].get("hook-error", {}).get("hook", "")
        self.jobs.release(job, None if retry else lambda: self._hook_committed(unit, hook))
        self.settle()
