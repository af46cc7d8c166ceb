"""VCA emulation: built charms run through ``dispatch`` exactly as a Juju 2.9 unit agent would.

Each unit gets its own copy of the built charm directory (hard links: ops keeps
``.unit-state.db`` there), its own config, status and relation databags in the model state, and
the hook tools on PATH. The model holds its state in memory and answers the tools over a Unix
socket, as Juju's unit agent answers jujuc (``hookclient.py`` is the client, ``hooktool.py`` the
tools): a tool call costs an interpreter start and a round trip, not a read and a rewrite of
the whole model.

Every hook and action runs in a context with Juju 2.9's semantics (``hookcontext.py``): its
relation writes are buffered and committed only when it succeeded and the commit reached the
controller; reads of other units go through the unit's settings cache; ``relation-list`` lists
the units whose joined hook has run. A commit that changed a databag wakes the remote units with
relation-changed, until nothing changes any more (``settle``). A hook that failed (by itself, or
killed, or whose commit was refused) puts its unit in error: the unit runs its actions but no
other hook until Juju's retry timer runs the hook again (5, 10, 20 s ... at most 5 min by
default; ``faults.HookRetry``). Faults Juju lives with can be injected (``faults.py``): a refused
commit, a unit agent restarted mid-hook or mid-action, a hook that fails, the controller
unreachable for a while.

Scheduling is Juju's (``scheduler.py``): the hooks and actions of one unit run one at a time: a
hook the previous hook's commit queued first (start after the first config-changed,
config-changed after upgrade-charm), then install, relation-created, leadership, actions,
lifecycle hooks, relation hooks (a relation in no fixed order; within it departed, broken,
joined, changed by remote unit), update-status;
with ``parallel`` > 1, the hooks of different units run at the same time, at most ``parallel``
at once. ``parallel=1`` (the default) runs everything one at a time in the calling thread, which
keeps the order of the end-to-end tests' hooks reproducible.
"""
import collections
import contextlib
import copy
import itertools
import json
import os
import sys
import tempfile
import threading
import time
import weakref

from testbed.emulators import faults, hookcontext, hooktool, scheduler, toolserver, uniter, vcaops
from testbed.emulators.uniter import (  # noqa: F401 - their home is uniter
    MAX_HOOK_FAILURES,
    MAX_RETRIES,
    HookError,
    VcaError,
)

JUJU_VERSION = "2.9.43"
MAX_HOOKS_PER_SETTLE = 500
#: The message of an action whose unit agent restarted while it ran (juju/juju
#: worker/uniter/operation/failaction.go, ``failAction.Execute``).
INTERRUPTED = "action terminated"


class ActionResult(object):
    def __init__(self, unit, name, status, results, message, log):
        self.unit, self.name, self.status = unit, name, status
        self.results, self.message, self.log = results, message, log

    def __repr__(self):
        return "ActionResult({} {} {} {!r})".format(self.unit, self.name, self.status, self.message)


#: One delivered hook or action: ``started``/``ended`` are time.monotonic() values, ``relation``
#: the relation id ("" for other hooks), ``log`` the juju-log messages the hook wrote,
#: ``tool_calls`` the hook-tool calls it made, ``tools`` them by tool ({tool: calls}), ``context`` its
#: JUJU_CONTEXT_ID (what a profiled charm run names in its record: hookclock.py), ``remote`` its
#: JUJU_REMOTE_UNIT ("" for none), ``causes`` why it was queued (for a relation-changed: each
#: committed write of the remote side it covers, as (writer, writer's hook, [changed keys]); the
#: writes between two runs are one hook, as on Juju: scheduler.py); ``pid`` the process id of its
#: ``dispatch`` (what testbed.cpuattr roots the hook's process tree at; None where unknown).
HookRun = collections.namedtuple("HookRun", "started ended unit hook seconds relation log tool_calls tools context "
                                            "remote causes pid")
HookRun.__new__.__defaults__ = ("", (), None)


class Model(vcaops.ModelOperations, uniter.Uniter):
    """An emulated Juju model. ``runner`` wraps each hook command (e.g. to enter a netns);
    ``parallel`` bounds how many units run a hook at the same time."""

    def __init__(self, workdir, name="vpnaas", runner=None, hook_timeout=300, parallel=1, interpreter=None,
                 client=None, seed=None, hook_retry_min=None, retry_hooks=True):
        self.workdir = os.path.abspath(workdir)
        self.name = name
        self.runner = runner or []
        self.hook_timeout = hook_timeout
        self.bin = os.path.join(self.workdir, "bin")
        os.makedirs(self.bin, exist_ok=True)
        # The emulated machine's python3 is this interpreter (a version manager's shim on PATH
        # would add a third of a second to every hook).
        py = os.path.join(self.bin, "python3")
        if not os.path.lexists(py):
            os.symlink(interpreter or sys.executable, py)
        self.client = client or ("compiled" if os.access(toolserver.COMPILED_CLIENT, os.X_OK) else "python")
        toolserver.install_tools(self.bin, self.client)
        self._lock = threading.RLock()      # the model state: this process's threads and the tool server
        self._state = {"units": {}, "relations": {}, "next_relation_id": 0}
        # A short folder of its own: a socket path has at most 107 bytes, test folders are long.
        self._socket_dir = tempfile.mkdtemp(prefix="vpnaas-vca-")
        self.socket_path = os.path.join(self._socket_dir, "tools.sock")
        self._server = toolserver.ToolServer(self.socket_path, self._tool_call)
        threading.Thread(target=self._server.serve_forever, name="vca-tools", daemon=True).start()
        self._closer = weakref.finalize(self, toolserver.stop_server, self._server, self._socket_dir, False)
        self.hook_runs = collections.Counter()        # unit -> hooks run
        self.tool_calls = collections.Counter()       # (unit, tool) -> hook tool calls answered
        self._context_calls = collections.Counter()   # JUJU_CONTEXT_ID -> hook tool calls answered
        self._context_tools = collections.Counter()   # (JUJU_CONTEXT_ID, tool) -> calls answered
        self.hook_log = []                            # [HookRun], in the order they ended
        #: The order among a unit's relations (Go's map order on Juju) is drawn with this seed.
        self.seed = int(os.environ.get("VPNAAS_VCA_SEED", "0")) if seed is None else seed
        self.jobs = scheduler.UnitScheduler(parallel, seed=self.seed)
        self._context_ids = itertools.count()
        self._views = {}                              # unit -> hookcontext.UnitView (its agent's memory)
        self._contexts = {}                           # JUJU_CONTEXT_ID -> hookcontext.HookContext
        self.faults = faults.Faults()
        #: Juju's hook retry timer per unit (``hook_retry_min``: the testbed knob, default Juju's
        #: 5 s or $VPNAAS_VCA_HOOK_RETRY_MIN; ``retry_hooks``: automatically-retry-hooks).
        self.hook_retry = faults.HookRetry(hook_retry_min, retry_hooks, seed=self.seed)
        self.retries = collections.Counter()          # (unit, hook) -> runs Juju had to repeat
        self.hook_errors = []                         # [HookError], in the order they happened
        self._failures = {}                           # (unit, hook) -> its own failures in a row
        self._in_error = {}                           # unit -> the job that retries its hook in error
        self._triggers = []                           # (unit, hook name part, failed, fn): ``when``
        self._wakes = 0                               # relation-changed hooks since the last settle
        #: units whose charm no longer runs: a test plays a hostile unit by writing their data
        self.silenced = set()
        #: every action's result, in the order they ended (Juju's controller keeps them: `juju
        #: show-operation`); the secret audit searches them (measurement/secretaudit.py)
        self.action_results = []

    def close(self):
        """Stop answering hook tools (a hook still running then fails its tool calls)."""
        self._closer.detach()
        toolserver.stop_server(self._server, self._socket_dir, True)

    def __enter__(self):
        return self

    def __exit__(self, *_exc):
        self.close()

    # ------------------------------------------------------------------ state
    def _tool_call(self, tool, args, env, stdin):
        context = env.get("JUJU_CONTEXT_ID", "")
        with self._lock:
            self.tool_calls[(env.get("JUJU_UNIT_NAME", ""), tool)] += 1
            self._context_calls[context] += 1
            self._context_tools[(context, tool)] += 1
            ctx = self._contexts.get(context)
        if ctx is not None and self.faults.kill_at(ctx, tool):
            return 1, "", "ERROR the unit agent is restarting\n"
        if ctx is not None and self.faults.tool_fails(ctx, tool):
            return 1, "", "ERROR connection is shut down (injected)\n"
        with self._lock:
            return hooktool.run(self._state, tool, args, env, stdin, ctx)

    def _read(self):
        """A copy of the whole model state."""
        with self._lock:
            return copy.deepcopy(self._state)

    @contextlib.contextmanager
    def _update(self):
        """Change the model state under the lock (hooks of other units may be calling tools)."""
        with self._lock:
            yield self._state

    def dump(self):
        """The whole model as JSON text: relation data, statuses, action results, every juju-log line."""
        with self._lock:
            return json.dumps(self._state, indent=1, sort_keys=True)

    def unit_state(self, unit):
        with self._lock:
            return copy.deepcopy(self._state["units"][unit])

    def status(self, unit):
        """The unit's status as `juju status` shows it: ("error", 'hook failed: "<hook>"') while a
        hook is in error, else what the charm set."""
        with self._lock:
            u = self._state["units"][unit]
            st = u.get("hook-error") and dict(u["hook-error"], status="error") or u.get("status", {})
            return st.get("status", "unknown"), st.get("message", "")

    def logs(self, unit, start=0):
        """[level, message] of every juju-log line of ``unit`` from the ``start``-th on."""
        with self._lock:
            return [list(entry) for entry in self._state["units"][unit].get("log", [])[start:]]

    def relation_data(self, rid):
        with self._lock:
            return copy.deepcopy(self._state["relations"][str(rid)]["data"])

    def units(self, app=None):
        with self._lock:
            return sorted(u for u in self._state["units"] if app is None or u.split("/")[0] == app)

    def _unit_dir(self, unit):
        with self._lock:
            return self._state["units"][unit]["dir"]

    # ------------------------------------------------------------------ hooks
    def _env(self, unit, dispatch_path, extra, context):
        env = toolserver.hook_base_env(os.environ)
        env.update({
            "PATH": self.bin + os.pathsep + env.get("PATH", "/usr/bin:/bin"),
            "VPNAAS_VCA_SOCKET": self.socket_path,
            "JUJU_UNIT_NAME": unit,
            "JUJU_CHARM_DIR": os.path.join(self._unit_dir(unit), "charm"),
            "JUJU_MODEL_NAME": self.name,
            "JUJU_VERSION": JUJU_VERSION,
            "JUJU_DISPATCH_PATH": dispatch_path,
            "JUJU_CONTEXT_ID": context,
        })
        env.update(extra)
        return env

    def _run(self, unit, dispatch_path, extra, ctx):
        """Run the unit's ``dispatch`` once for one hook or action in ``ctx``; returns the
        process and the juju-log lines it wrote."""
        charm_dir = os.path.join(self._unit_dir(unit), "charm")
        with self._lock:
            logged = len(self._state["units"][unit].get("log", []))
        # Unique across models too (Juju's carry the unit and a random number): the profiler joins a
        # charm run's record to its hook by it, and may run two models at once.
        context = "{}-{}-{}".format(self.name, unit, next(self._context_ids))
        with self._lock:
            self._contexts[context] = ctx
        started = time.monotonic()
        try:
            proc = self.faults.run_hook(ctx, self.runner + ["./dispatch"], cwd=charm_dir,
                                        env=self._env(unit, dispatch_path, extra, context), timeout=self.hook_timeout)
        finally:
            with self._lock:
                self._contexts.pop(context, None)
        ended = time.monotonic()
        new_log = [msg for _level, msg in self.logs(unit, logged)]
        with self._lock:
            self.hook_runs[unit] += 1
            tools = {tool: self._context_tools.pop((ctx_, tool)) for ctx_, tool in list(self._context_tools)
                     if ctx_ == context}
            self.hook_log.append(HookRun(started, ended, unit, dispatch_path, ended - started,
                                         extra.get("JUJU_RELATION_ID", ""), new_log,
                                         self._context_calls.pop(context, 0), tools, context,
                                         extra.get("JUJU_REMOTE_UNIT", ""), tuple(scheduler.current_causes()),
                                         getattr(ctx, "pid", None)))
        if ctx.killed:
            self._views[unit].restart()
            self.hook_retry.reset(unit)     # a new uniter: its retry timer starts again
        return proc, new_log

    def _hook(self, unit, name, suffix=None, rid=None, remote=None, departing=None):
        """One run of a hook, as Juju's uniter runs it. It succeeded when it exited 0 and its
        commit reached the controller: its writes are committed (``hookcontext``), the hooks they
        cause are queued, and so is the hook its commit queues (``runhook.go`` ``Commit``).
        Otherwise nothing it wrote is kept and the hook is in error (``_hook_failed``)."""
        with self._lock:
            if unit not in self._state["units"]:
                return                  # removed while its retry waited
        hook = _hook_name(name, suffix)
        dispatch_path = "hooks/" + hook
        extra, kind = self._relation_env(unit, name, suffix, rid, remote, departing)
        rid = str(rid) if rid is not None else None
        self.faults.wait_for_controller()
        ctx = hookcontext.HookContext(unit, self._views[unit], kind, rid, remote, hook=dispatch_path)
        proc, new_log = self._run(unit, dispatch_path, extra, ctx)
        if ctx.killed or proc.returncode != 0 or not self.faults.commit_reaches_controller(unit, dispatch_path):
            self._hook_failed(unit, hook, ctx, proc, new_log,
                              lambda: self._hook(unit, name, suffix, rid, remote, departing))
            self._triggered(unit, hook, True)
            return
        with self._lock:
            changed = ctx.commit(self._state["relations"])
        if kind == "joined" and remote:
            self.jobs.changed_pending(unit, rid, remote)
        for changed_rid, owner in changed:
            self._wake_remotes(changed_rid, owner, (unit, hook, ctx.changed_keys[(changed_rid, owner)]))
        self._hook_committed(unit, hook)
        self._triggered(unit, hook, False)

    def _relation_env(self, unit, name, suffix, rid, remote, departing):
        extra, kind = {}, ""
        if rid is not None:
            kind = suffix.split("-", 1)[1]
            extra["JUJU_RELATION"] = name
            extra["JUJU_RELATION_ID"] = "{}:{}".format(name, rid)
            with self._lock:
                endpoints = list(self._state["relations"][str(rid)]["endpoints"])
            extra["JUJU_REMOTE_APP"] = next((a for a, _ in endpoints if a != unit.split("/")[0]), "")
            if remote:
                extra["JUJU_REMOTE_UNIT"] = remote
            if departing:
                extra["JUJU_DEPARTING_UNIT"] = departing
        return extra, kind

    def run_hook(self, unit, name, suffix=None, rid=None, remote=None, departing=None):
        """Deliver one hook as soon as the unit is free; the relation-changed hooks it causes are
        queued (``settle`` delivers them)."""
        self.jobs.run_now(unit, lambda: self._hook(unit, name, suffix, rid, remote, departing))

    def _queue_hook(self, unit, name, suffix=None, rid=None, remote=None, departing=None, key=None, rank=None,
                    cause=None):
        hook = _hook_name(name, suffix)
        relation = None
        if rid is not None:
            kind = suffix.split("-", 1)[1]
            rank = scheduler.CREATED if kind == "created" else scheduler.RELATION
            relation = (str(rid), kind, remote)
        elif rank is None:
            rank = _RANKS.get(hook, scheduler.LIFECYCLE)
        if hook == "config-changed":
            key = "config-changed"      # Juju runs one for every config change made meanwhile
        return self.jobs.submit(unit, lambda: self._hook(unit, name, suffix, rid, remote, departing), key=key,
                                rank=rank, relation=relation, cause=cause)

    def _wake_remotes(self, rid, writer, cause=None):
        with self._lock:
            rel = self._state["relations"].get(rid)
            units = list(rel["units"]) if rel else []
        writer_app = writer.split("/")[0]
        remote = writer if "/" in writer else None
        for unit in units:
            if unit.split("/")[0] == writer_app or unit in self.silenced:
                continue
            self.jobs.submit(unit, lambda unit=unit: self._wake(unit, rid, remote), key=vcaops.changed_key(rid, remote),
                             rank=scheduler.RELATION, relation=(rid, "changed", remote), cause=cause)

    def _wake(self, unit, rid, remote):
        """relation-changed for data ``remote`` wrote, unless the relation is gone meanwhile."""
        with self._lock:
            if rid not in self._state["relations"] or unit not in self._state["relations"][rid]["units"]:
                return
        with self._lock:
            self._wakes += 1
            if self._wakes > MAX_HOOKS_PER_SETTLE:
                raise VcaError("the model did not settle after {} relation-changed hooks".format(self._wakes))
        self._hook(unit, self._endpoint(rid, unit), suffix="relation-changed", rid=rid, remote=remote)

    def settle(self):
        """Deliver queued hooks (relation-changed above all) until no databag changes any more."""
        try:
            self.jobs.settle()
        except scheduler.Stuck as e:        # automatically-retry-hooks off: waiting for resolved
            raise VcaError(str(e)) from None
        finally:
            with self._lock:
                self._wakes = 0

    def _settle_if(self, wait):
        if wait or self.jobs.parallel == 1:
            self.settle()

    # ------------------------------------------------------------------ actions
    def run_action(self, unit, name, params=None, wait=True):
        """Run an action as soon as the unit runs nothing, ahead of its pending hooks (Juju's
        uniter does actions first). With wait=False only the action is waited for, not the hooks
        it causes in other units (as OSM waits for a primitive)."""
        result = self.jobs.wait(self.queue_action(unit, name, params))
        self._settle_if(wait)
        return result

    def queue_action(self, unit, name, params=None):
        """Queue an action and return its job (its ``result``, an ActionResult, once ``done``)."""
        return self.jobs.submit(unit, lambda: self._action(unit, name, params), rank=scheduler.ACTION)

    def _action(self, unit, name, params):
        """One action run. Its writes are committed when it ends, whether it succeeded or failed
        (an action's failure is its result, not an error of the unit). An action whose unit
        agent restarted while it ran is failed with Juju's "action terminated" and never run
        again (``actions/resolver.go`` ``NextOp``, ``operation/failaction.go`` ``Execute``):
        nothing it wrote or set is kept."""
        with self._update() as state:
            state["units"][unit]["action"] = {"params": dict(params or {}), "results": {}, "failed": None, "log": []}
        ctx = hookcontext.HookContext(unit, self._views[unit], action=True, hook="actions/" + name)
        proc, new_log = self._run(unit, "actions/" + name, {"JUJU_ACTION_NAME": name,
                                                             "JUJU_ACTION_UUID": str(next(self._context_ids))}, ctx)
        if ctx.killed:
            return ActionResult(unit, name, "failed", {}, INTERRUPTED, [])
        if proc.returncode != 0:
            # The charm crashed (ops sends the traceback to juju-log): a test must see it.
            raise VcaError("{} actions/{} failed (exit {}):\n{}{}".format(
                unit, name, proc.returncode, proc.stdout[-4000:], "\n".join(new_log)[-4000:]))
        with self._lock:
            changed = ctx.commit(self._state["relations"])
            act = copy.deepcopy(self._state["units"][unit]["action"])
        for rid, owner in changed:
            self._wake_remotes(rid, owner, (unit, "actions/" + name, ctx.changed_keys[(rid, owner)]))
        result = ActionResult(unit, name, "failed" if act["failed"] else "completed", act["results"],
                              act["failed"] or "", act["log"])
        with self._lock:
            self.action_results.append(result)
        return result


#: Ranks of the hooks that are not relation hooks (see scheduler.py).
_RANKS = {"install": scheduler.INSTALL, "leader-elected": scheduler.LEADER,
          "leader-settings-changed": scheduler.LEADER, "update-status": scheduler.IDLE}


def _hook_name(name, suffix):
    """"vpn", "relation-changed" -> "vpn-relation-changed"; "install", None -> "install"."""
    return "{}-{}".format(name, suffix) if suffix else name



