"""What an operator or OSM's LCM does to the emulated Juju model: deploy, configure, relate,
remove relations, units and applications, upgrade charms -- each queueing the hooks Juju 2.9
queues for it (``vca.Model`` runs them).

A mixin of ``vca.Model``: these operations are its public API, kept apart from how hooks run.
"""
import errno
import os
import shutil

import yaml

from testbed.emulators import hookcontext, scheduler


class ModelOperations(object):
    # ------------------------------------------------------------------ deploy
    def deploy(self, app, charm_dir, units=1, wait=True):
        """install, leader-elected (first unit), config-changed, start -- as Juju 2.9 does: the
        first config-changed's commit queues start (``operation/runhook.go`` ``Commit``)."""
        with open(os.path.join(charm_dir, "config.yaml")) as f:
            options = (yaml.safe_load(f) or {}).get("options", {})
        defaults = {k: v["default"] for k, v in options.items() if "default" in v}
        names = []
        with self._update() as state:
            first = not any(u["app"] == app for u in state["units"].values())
            for i in range(units):
                unit = "{}/{}".format(app, self._next_unit_number(state, app))
                unit_dir = os.path.join(self.workdir, "units", unit.replace("/", "-"))
                shutil.rmtree(unit_dir, ignore_errors=True)
                copy_charm(charm_dir, os.path.join(unit_dir, "charm"))
                state["units"][unit] = {"app": app, "leader": first and i == 0, "config": dict(defaults),
                                        "started": False,
                                        "dir": unit_dir, "status": {"status": "unknown", "message": ""}, "log": [],
                                        "action": {"params": {}, "results": {}, "failed": None, "log": []}}
                self._views[unit] = hookcontext.UnitView()
                names.append(unit)
                # A unit of an application that is already related joins those relations.
                for rel in state["relations"].values():
                    if any(a == app for a, _ep in rel["endpoints"]) and not rel.get("broken"):
                        rel["units"] = sorted(rel["units"] + [unit])
                        rel["data"][unit] = {}
        for unit in names:
            self._queue_hook(unit, "install")
            if self.unit_state(unit)["leader"]:
                self._queue_hook(unit, "leader-elected")
            self._queue_hook(unit, "config-changed")
            for rid in self._relations_of(unit):
                self._queue_relation_hooks(rid, [unit])
        self._settle_if(wait)
        return names

    @staticmethod
    def _next_unit_number(state, app):
        """Juju never reuses a unit number of an application."""
        numbers = state.setdefault("unit_numbers", {})
        n = numbers.get(app, 0)
        numbers[app] = n + 1
        return n

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
        self._queue_relation_hooks(rid, units)
        self._settle_if(wait)
        return int(rid)

    def _queue_relation_hooks(self, rid, newcomers):
        """relation-created for each newcomer, then joined and changed between every newcomer
        and every unit of the other application (both ways). A newcomer whose other application's
        bag holds data also gets that application's relation-changed (no remote unit), before its
        joins: Juju 2.9.42 starts a new unit's relation state with no application recorded
        (worker/uniter/relation/state.go, NewState) and runs the remote application's
        relation-changed when its settings version is not zero (relation/resolver.go 242-262)."""
        with self._lock:
            rel = self._state["relations"][rid]
            units = list(rel["units"])
            apps = {a for a, _ep in rel["endpoints"]}
            app_data = {a: bool(rel["data"].get(a)) for a in apps}
        for unit in sorted(newcomers):
            self._queue_hook(unit, self._endpoint(rid, unit), suffix="relation-created", rid=rid)
            for other in sorted(a for a in apps if a != unit.split("/")[0] and app_data[a]):
                self._queue_hook(unit, self._endpoint(rid, unit), suffix="relation-changed", rid=rid, remote=None,
                                 key=changed_key(rid, None), cause=(other, "joined", []))
        for unit in sorted(units):
            for remote in sorted(u for u in units if u.split("/")[0] != unit.split("/")[0]):
                if unit not in newcomers and remote not in newcomers:
                    continue
                self._queue_hook(unit, self._endpoint(rid, unit), suffix="relation-joined", rid=rid, remote=remote)
                # The data the remote writes before this runs needs no second hook (Juju's
                # relation-changed after joined reports the remote's latest version).
                self._queue_hook(unit, self._endpoint(rid, unit), suffix="relation-changed", rid=rid, remote=remote,
                                 key=changed_key(rid, remote), cause=(remote, "joined", []))

    def _relations_of(self, unit):
        with self._lock:
            return sorted((rid for rid, rel in self._state["relations"].items() if unit in rel["units"]), key=int)

    def _endpoint(self, rid, unit):
        app = unit.split("/")[0]
        with self._lock:
            return next(ep for a, ep in self._state["relations"][str(rid)]["endpoints"] if a == app)

    def remove_relation(self, rid):
        """``juju remove-relation``: departed for every remote unit on each side, then broken."""
        rid = str(rid)
        with self._lock:
            units = list(self._state["relations"][rid]["units"])
        self._depart(rid, units, units)
        with self._update() as state:
            state["relations"][rid]["units"] = []
            state["relations"][rid]["broken"] = True      # Juju refuses relation-set from now on
        broken = [self._queue_hook(unit, self._endpoint(rid, unit), suffix="relation-broken", rid=rid)
                  for unit in units]
        for job in broken:
            self.jobs.wait(job)
        with self._update() as state:
            del state["relations"][rid]
        self.settle()

    def _depart(self, rid, units, leaving):
        """relation-departed on each unit of ``units`` for each remote unit in ``leaving``."""
        departed = []
        for unit in units:
            for remote in (u for u in leaving if u.split("/")[0] != unit.split("/")[0]):
                departed.append(self._queue_hook(unit, self._endpoint(rid, unit), suffix="relation-departed",
                                                 rid=rid, remote=remote, departing=remote))
        for job in departed:
            self.jobs.wait(job)

    def remove_unit(self, unit):
        """``juju remove-unit`` (and what destroying an application does to each unit): its
        relations depart on both sides and break on the unit, then stop and remove run."""
        for rid in self._relations_of(unit):
            with self._lock:
                others = [u for u in self._state["relations"][rid]["units"] if u != unit]
            self._depart(rid, others, [unit])
            self._depart(rid, [unit], others)
            with self._update() as state:
                rel = state["relations"][rid]
                rel["units"] = [u for u in rel["units"] if u != unit]
            self.jobs.wait(self._queue_hook(unit, self._endpoint(rid, unit), suffix="relation-broken", rid=rid))
        for hook in ("stop", "remove"):
            self.jobs.wait(self._queue_hook(unit, hook))
        with self._update() as state:
            del state["units"][unit]
            for rel in state["relations"].values():
                rel["data"].pop(unit, None)
        self._views.pop(unit, None)
        self.settle()

    def remove_application(self, app):
        """``juju remove-application``: its relations depart and break on both sides, then every
        unit runs stop and remove (an application deployed again under the same name is a new
        one: its units count from 0 again)."""
        with self._lock:
            rids = sorted((r for r, rel in self._state["relations"].items()
                           if any(a == app for a, _ep in rel["endpoints"])), key=int)
        for rid in rids:
            self.remove_relation(rid)
        for unit in self.units(app):
            for hook in ("stop", "remove"):
                self.jobs.wait(self._queue_hook(unit, hook))
            with self._update() as state:
                del state["units"][unit]
            self._views.pop(unit, None)
        with self._update() as state:
            state.setdefault("unit_numbers", {}).pop(app, None)
        self.settle()

    def set_relation_data(self, rid, owner, values):
        """Write into a databag from outside (tests: a hostile or silenced unit whose hook
        committed this) and wake the peers."""
        with self._update() as state:
            bag = state["relations"][str(rid)]["data"].setdefault(owner, {})
            for k, v in values.items():
                if v is None:
                    bag.pop(k, None)
                else:
                    bag[k] = v
        self._wake_remotes(str(rid), owner, (owner, "set_relation_data", sorted(values)))
        self.settle()

    def update_status(self, units=None):
        for unit in units or self.units():
            self._queue_hook(unit, "update-status")
        self.settle()

    def upgrade_charm(self, app, charm_dir, wait=True):
        """``juju upgrade-charm``: each unit replaces its charm when it runs nothing (after its
        pending actions: ``resolver.go`` ``nextOp``), then runs upgrade-charm, which the upgrade's
        commit queues, and config-changed, which upgrade-charm's commit queues: no action runs
        in between (``operation/runhook.go`` ``Commit``)."""
        for unit in self.units(app):
            self.jobs.submit(unit, lambda unit=unit: self._replace_charm(unit, charm_dir), rank=scheduler.LIFECYCLE)
        if wait:
            self.settle()

    def _replace_charm(self, unit, charm_dir):
        self._copy_charm(unit, charm_dir)
        self._queue_hook(unit, "upgrade-charm", rank=scheduler.QUEUED)

    def _copy_charm(self, unit, charm_dir):
        target = os.path.join(self._unit_dir(unit), "charm")
        db = os.path.join(target, ".unit-state.db")
        keep = open(db, "rb").read() if os.path.exists(db) else None
        shutil.rmtree(target)
        copy_charm(charm_dir, target)
        if keep is not None:
            with open(db, "wb") as f:
                f.write(keep)



def _link_or_copy(src, dst):
    """Hard-link a file of the built charm (nothing rewrites one in place: a charm upgrade
    replaces the whole copy); copy it where a link cannot be made (another filesystem)."""
    try:
        os.link(src, dst)
    except OSError as e:
        if e.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK):
            raise
        shutil.copy2(src, dst)


def copy_charm(charm_dir, target):
    """A unit's own charm directory: a venv per unit is ~25 MB, a link per file is instant."""
    shutil.copytree(charm_dir, target, symlinks=True, copy_function=_link_or_copy)


def changed_key(rid, remote):
    """The scheduler key of a relation-changed about ``remote``'s data on ``rid``: every queued
    one (after relation-joined, or on a data change) must use it, or none coalesces."""
    return ("changed", str(rid), remote)
