"""VCA emulation: built charms run through ``dispatch`` exactly as a Juju 2.9 unit agent would.

Each unit gets its own copy of the built charm directory (ops keeps ``.unit-state.db`` there),
its own config, status and relation databags in one JSON model state, and the hook tools of
``hooktool.py`` on PATH. After each hook, relation data the unit changed wakes the remote units
with relation-changed, until nothing changes any more (``settle``). That is how Juju propagates
data, minus the controller.

Scheduling is Juju's: the hooks (and actions) of one unit run one at a time, in order; with
``parallel`` > 1, the hooks of different units run at the same time, at most ``parallel`` at
once (see ``scheduler.py``). ``parallel=1`` (the default) runs everything one at a time in the
calling thread, which keeps the order of the end-to-end tests' hooks reproducible.
"""
import collections
import contextlib
import fcntl
import itertools
import json
import os
import shlex
import shutil
import subprocess
import sys
import threading
import time

import yaml

from testbed import scheduler

HOOK_TOOLS = ("config-get", "is-leader", "relation-ids", "relation-list", "relation-get", "relation-set",
              "status-set", "status-get", "action-get", "action-set", "action-fail", "action-log",
              "juju-log", "application-version-set", "goal-state")
JUJU_VERSION = "2.9.43"
MAX_HOOKS_PER_SETTLE = 500


class VcaError(Exception):
    pass


class ActionResult(object):
    def __init__(self, unit, name, status, results, message, log):
        self.unit, self.name, self.status = unit, name, status
        self.results, self.message, self.log = results, message, log

    def __repr__(self):
        return "ActionResult({} {} {} {!r})".format(self.unit, self.name, self.status, self.message)


#: One delivered hook or action: ``started``/``ended`` are time.monotonic() values, ``relation``
#: the relation id ("" for other hooks), ``log`` the juju-log messages the hook wrote.
HookRun = collections.namedtuple("HookRun", "started ended unit hook seconds relation log")


class Model(object):
    """An emulated Juju model. ``runner`` wraps each hook command (e.g. to enter a netns);
    ``parallel`` bounds how many units run a hook at the same time."""

    def __init__(self, workdir, name="vpnaas", runner=None, hook_timeout=300, parallel=1, interpreter=None):
        self.workdir = os.path.abspath(workdir)
        self.name = name
        self.runner = runner or []
        self.hook_timeout = hook_timeout
        self.state_path = os.path.join(self.workdir, "model.json")
        self.bin = os.path.join(self.workdir, "bin")
        os.makedirs(self.bin, exist_ok=True)
        tool = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hooktool.py")
        # The emulated machine's python3 is this interpreter (a version manager's shim on PATH
        # would add a third of a second to every hook).
        py = os.path.join(self.bin, "python3")
        if not os.path.lexists(py):
            os.symlink(interpreter or sys.executable, py)
        # Hook tools run without site (-S): half the start-up time of a tool call, which a hook
        # pays several times; the one tool that needs PyYAML (relation-set --file) is told where
        # this interpreter's PyYAML is.
        yaml_dir = os.path.dirname(os.path.dirname(os.path.abspath(yaml.__file__)))
        for name_ in HOOK_TOOLS:
            # One small wrapper per tool name; hooktool.py learns which tool it is from its first argument.
            with open(os.path.join(self.bin, name_), "w") as f:
                f.write("#!/bin/sh\nVPNAAS_YAML_DIR={} exec {} -S {} {} \"$@\"\n".format(
                    shlex.quote(yaml_dir), sys.executable, tool, name_))
            os.chmod(os.path.join(self.bin, name_), 0o755)
        self._lock = threading.RLock()      # this process's writers; the hook tools use the flock
        self._write({"units": {}, "relations": {}, "next_relation_id": 0})
        self.hook_runs = collections.Counter()        # unit -> hooks run
        self.hook_log = []                            # [HookRun], in the order they ended
        self.jobs = scheduler.UnitScheduler(parallel)
        self._context_ids = itertools.count()
        self._wakes = 0                               # relation-changed hooks since the last settle
        #: units whose charm no longer runs: a test plays a hostile unit by writing their data
        self.silenced = set()

    # ------------------------------------------------------------------ state
    def _read(self):
        # Writers replace the file atomically: a reader never sees half of it.
        with open(self.state_path) as f:
            return json.load(f)

    def _write(self, state):
        with self._transaction():
            self._replace(state)

    def _replace(self, state):
        tmp = self.state_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(state, f, indent=1, sort_keys=True)
        os.replace(tmp, self.state_path)

    @contextlib.contextmanager
    def _transaction(self):
        """Hold the model lock the hook tools take (hooks of other units may be writing)."""
        with self._lock:
            fd = os.open(self.state_path + ".lock", os.O_CREAT | os.O_RDWR, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                yield
            finally:
                os.close(fd)

    @contextlib.contextmanager
    def _update(self):
        """Read-modify-write of the model state under the lock."""
        with self._transaction():
            state = self._read()
            yield state
            self._replace(state)

    def unit_state(self, unit):
        return self._read()["units"][unit]

    def status(self, unit):
        st = self.unit_state(unit).get("status", {})
        return st.get("status", "unknown"), st.get("message", "")

    def logs(self, unit):
        return self.unit_state(unit).get("log", [])

    def relation_data(self, rid):
        return self._read()["relations"][str(rid)]["data"]

    def units(self, app=None):
        return sorted(u for u in self._read()["units"] if app is None or u.split("/")[0] == app)

    # ------------------------------------------------------------------ deploy
    def deploy(self, app, charm_dir, units=1, wait=True):
        """install, leader-elected (first unit), config-changed, start -- as Juju 2.9 does."""
        with open(os.path.join(charm_dir, "config.yaml")) as f:
            options = (yaml.safe_load(f) or {}).get("options", {})
        defaults = {k: v["default"] for k, v in options.items() if "default" in v}
        names = []
        with self._update() as state:
            for i in range(units):
                unit = "{}/{}".format(app, i)
                unit_dir = os.path.join(self.workdir, "units", unit.replace("/", "-"))
                shutil.rmtree(unit_dir, ignore_errors=True)
                shutil.copytree(charm_dir, os.path.join(unit_dir, "charm"), symlinks=True)
                state["units"][unit] = {"app": app, "leader": i == 0, "config": dict(defaults), "dir": unit_dir,
                                        "status": {"status": "unknown", "message": ""}, "log": [],
                                        "action": {"params": {}, "results": {}, "failed": None, "log": []}}
                names.append(unit)
        for i, unit in enumerate(names):
            for hook in ("install", "leader-elected", "config-changed", "start"):
                if hook != "leader-elected" or i == 0:
                    self._queue_hook(unit, hook)
        self._settle_if(wait)
        return names

    def set_config(self, app, values, wait=True):
        """``juju config``: config-changed on every unit whose config changed. With wait=False
        it returns at once, as the Juju CLI (and OSM's config primitive) does."""
        changed = []
        with self._update() as state:
            for unit, u in state["units"].items():
                if u["app"] != app:
                    continue
                new = dict(u["config"], **values)
                if new != u["config"]:
                    u["config"] = new
                    changed.append(unit)
        for unit in sorted(changed):
            self._queue_hook(unit, "config-changed")
        self._settle_if(wait)

    # ------------------------------------------------------------------ relations
    def relate(self, provider, requirer, wait=True):
        """``provider``/``requirer`` are "app:endpoint". Runs created, joined, changed on both sides."""
        (app1, ep1), (app2, ep2) = provider.split(":"), requirer.split(":")
        with self._update() as state:
            rid = str(state["next_relation_id"])
            state["next_relation_id"] += 1
            units = [u for u in state["units"] if state["units"][u]["app"] in (app1, app2)]
            state["relations"][rid] = {"endpoints": [[app1, ep1], [app2, ep2]], "units": sorted(units),
                                       "data": {u: {} for u in units}}
            state["relations"][rid]["data"].update({app1: {}, app2: {}})
        for unit in sorted(units):
            self._queue_hook(unit, ep1 if unit.startswith(app1 + "/") else ep2, suffix="relation-created", rid=rid)
        for unit in sorted(units):
            for remote in sorted(u for u in units if u.split("/")[0] != unit.split("/")[0]):
                self._queue_hook(unit, self._endpoint(rid, unit), suffix="relation-joined", rid=rid, remote=remote)
                self._queue_hook(unit, self._endpoint(rid, unit), suffix="relation-changed", rid=rid, remote=remote)
        self._settle_if(wait)
        return int(rid)

    def _endpoint(self, rid, unit):
        rel = self._read()["relations"][str(rid)]
        app = unit.split("/")[0]
        return next(ep for a, ep in rel["endpoints"] if a == app)

    def remove_relation(self, rid):
        rid = str(rid)
        rel = self._read()["relations"][rid]
        units = list(rel["units"])
        departed = []
        for unit in units:
            for remote in (u for u in units if u.split("/")[0] != unit.split("/")[0]):
                departed.append(self._queue_hook(unit, self._endpoint(rid, unit), suffix="relation-departed",
                                                 rid=rid, remote=remote, departing=remote))
        endpoints = {unit: self._endpoint(rid, unit) for unit in units}
        for job in departed:
            self.jobs.wait(job)
        with self._update() as state:
            state["relations"][rid]["units"] = []
            state["relations"][rid]["broken"] = True      # Juju refuses relation-set from now on
        broken = [self._queue_hook(unit, endpoints[unit], suffix="relation-broken", rid=rid) for unit in units]
        for job in broken:
            self.jobs.wait(job)
        with self._update() as state:
            del state["relations"][rid]
        self.settle()

    def set_relation_data(self, rid, owner, values):
        """Write into a databag from outside (tests: data arriving in pieces) and wake the peers."""
        with self._update() as state:
            bag = state["relations"][str(rid)]["data"].setdefault(owner, {})
            for k, v in values.items():
                if v is None:
                    bag.pop(k, None)
                else:
                    bag[k] = v
        self._wake_remotes(str(rid), owner)
        self.settle()

    # ------------------------------------------------------------------ hooks
    def _env(self, unit, dispatch_path, extra):
        u = self._read()["units"][unit]
        env = dict(os.environ)
        for k in list(env):
            if k.startswith("JUJU_"):
                del env[k]
        env.update({
            "PATH": self.bin + os.pathsep + env.get("PATH", "/usr/bin:/bin"),
            "VPNAAS_VCA_STATE": self.state_path,
            "JUJU_UNIT_NAME": unit,
            "JUJU_CHARM_DIR": os.path.join(u["dir"], "charm"),
            "JUJU_MODEL_NAME": self.name,
            "JUJU_VERSION": JUJU_VERSION,
            "JUJU_DISPATCH_PATH": dispatch_path,
            "JUJU_CONTEXT_ID": "{}-{}".format(unit, next(self._context_ids)),
        })
        env.update(extra)
        return env

    def _dispatch(self, unit, dispatch_path, extra):
        u = self._read()["units"][unit]
        charm_dir = os.path.join(u["dir"], "charm")
        logged = len(u.get("log", []))
        started = time.monotonic()
        proc = subprocess.run(self.runner + ["./dispatch"], cwd=charm_dir, env=self._env(unit, dispatch_path, extra),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                              timeout=self.hook_timeout)
        ended = time.monotonic()
        new_log = [msg for _level, msg in self.logs(unit)[logged:]]
        with self._lock:
            self.hook_runs[unit] += 1
            self.hook_log.append(HookRun(started, ended, unit, dispatch_path, ended - started,
                                         extra.get("JUJU_RELATION_ID", ""), new_log))
        if proc.returncode != 0:
            # ops sends an uncaught exception's traceback to juju-log, not to stderr.
            logged_text = "\n".join(new_log)
            raise VcaError("{} {} failed (exit {}):\n{}{}".format(unit, dispatch_path, proc.returncode,
                                                                   proc.stdout[-4000:], logged_text[-4000:]))
        return proc

    def run_hook(self, unit, name, suffix=None, rid=None, remote=None, departing=None):
        """Deliver one hook as soon as the unit is free; the relation-changed hooks it causes are
        queued (``settle`` delivers them)."""
        self.jobs.run_now(unit, lambda: self._deliver(unit, name, suffix, rid, remote, departing))

    def _queue_hook(self, unit, name, suffix=None, rid=None, remote=None, departing=None, key=None):
        return self.jobs.submit(unit, lambda: self._deliver(unit, name, suffix, rid, remote, departing), key=key)

    def _deliver(self, unit, name, suffix=None, rid=None, remote=None, departing=None):
        hook = "{}-{}".format(name, suffix) if suffix else name
        extra = {}
        if rid is not None:
            extra["JUJU_RELATION"] = name
            extra["JUJU_RELATION_ID"] = "{}:{}".format(name, rid)
            rel = self._read()["relations"][str(rid)]
            remote_app = next((a for a, _ in rel["endpoints"] if a != unit.split("/")[0]), "")
            extra["JUJU_REMOTE_APP"] = remote_app
            if remote:
                extra["JUJU_REMOTE_UNIT"] = remote
            if departing:
                extra["JUJU_DEPARTING_UNIT"] = departing
        before = self._bags_of(unit)
        self._dispatch(unit, "hooks/" + hook, extra)
        self._after(unit, before)

    def _bags_of(self, unit):
        app = unit.split("/")[0]
        out = {}
        for rid, rel in self._read()["relations"].items():
            out[rid] = (json.dumps(rel["data"].get(unit, {}), sort_keys=True),
                        json.dumps(rel["data"].get(app, {}), sort_keys=True))
        return out

    def _after(self, unit, before):
        after = self._bags_of(unit)
        # A relation added while the hook ran (a parallel VCA relates during other units' hooks)
        # starts with empty bags: only what the hook wrote into it is a change.
        empty = (json.dumps({}), json.dumps({}))
        for rid, bags in after.items():
            if before.get(rid, empty) != bags:
                self._wake_remotes(rid, unit)

    def _wake_remotes(self, rid, writer):
        rel = self._read()["relations"].get(rid)
        if not rel:
            return
        writer_app = writer.split("/")[0]
        remote = writer if "/" in writer else None
        for unit in rel["units"]:
            if unit.split("/")[0] == writer_app or unit in self.silenced:
                continue
            self.jobs.submit(unit, lambda unit=unit: self._wake(unit, rid, remote), key=("changed", rid, remote))

    def _wake(self, unit, rid, remote):
        """relation-changed for data ``remote`` wrote, unless the relation is gone meanwhile."""
        if rid not in self._read()["relations"]:
            return
        with self._lock:
            self._wakes += 1
            if self._wakes > MAX_HOOKS_PER_SETTLE:
                raise VcaError("the model did not settle after {} relation-changed hooks".format(self._wakes))
        self._deliver(unit, self._endpoint(rid, unit), suffix="relation-changed", rid=rid, remote=remote)

    def settle(self):
        """Deliver queued hooks (relation-changed above all) until no databag changes any more."""
        try:
            self.jobs.settle()
        finally:
            with self._lock:
                self._wakes = 0

    def _settle_if(self, wait):
        if wait or self.jobs.parallel == 1:
            self.settle()

    def update_status(self, units=None):
        for unit in units or self.units():
            self._queue_hook(unit, "update-status")
        self.settle()

    def upgrade_charm(self, app, charm_dir):
        for unit in self.units(app):
            self.jobs.submit(unit, lambda unit=unit: self._replace_charm(unit, charm_dir))
            self._queue_hook(unit, "upgrade-charm")
            self._queue_hook(unit, "config-changed")
        self.settle()

    def _replace_charm(self, unit, charm_dir):
        target = os.path.join(self.unit_state(unit)["dir"], "charm")
        db = os.path.join(target, ".unit-state.db")
        keep = open(db, "rb").read() if os.path.exists(db) else None
        shutil.rmtree(target)
        shutil.copytree(charm_dir, target, symlinks=True)
        if keep is not None:
            with open(db, "wb") as f:
                f.write(keep)

    # ------------------------------------------------------------------ actions
    def run_action(self, unit, name, params=None, wait=True):
        """Run an action once the unit's earlier hooks ran. With wait=False only the action is
        waited for, not the hooks it causes in other units (as OSM waits for a primitive)."""
        job = self.jobs.submit(unit, lambda: self._action(unit, name, params))
        result = self.jobs.wait(job)
        self._settle_if(wait)
        return result

    def _action(self, unit, name, params):
        with self._update() as state:
            state["units"][unit]["action"] = {"params": dict(params or {}), "results": {}, "failed": None, "log": []}
        before = self._bags_of(unit)
        self._dispatch(unit, "actions/" + name, {"JUJU_ACTION_NAME": name,
                                                  "JUJU_ACTION_UUID": str(next(self._context_ids))})
        self._after(unit, before)
        act = self._read()["units"][unit]["action"]
        return ActionResult(unit, name, "failed" if act["failed"] else "completed", act["results"],
                            act["failed"] or "", act["log"])
