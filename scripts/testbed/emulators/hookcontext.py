"""What one hook run reads and writes, with the semantics of Juju 2.9's unit agent.

Juju's uniter builds a context for every hook (``worker/uniter/runner/context``); the emulated
VCA does the same, because that is exactly where a charm's correctness depends on Juju and a
simpler emulation hides faults:

* **Writes** (``relation-set``) are buffered in the context and flushed when the hook ends, only
  if it succeeded and its commit reached the controller (``HookContext.Flush``). Other units never
  see a write before that, and a hook that fails, is killed, or whose commit is refused leaves
  nothing behind; Juju runs it again.
* **Reads of another unit's settings** go through a cache the unit agent keeps per relation
  across hooks (``RelationCache``): a member's settings, once read, are what later hooks see
  until a hook about that very unit runs (``InvalidateMember``); settings of units that are not
  members, and every remote application's settings, are read afresh in every hook and then kept
  for the rest of it (``RelationCache.Prune`` empties ``others`` and ``applications`` when the
  context is made; ``Settings`` and ``ApplicationSettings`` keep what they read: ``cache.go``).
  A unit's own settings are the controller's plus this hook's writes.
* **Membership** (``relation-list``): a remote unit is a member once this unit's relation-joined
  hook for it has run, and no longer one once its relation-departed hook has; during that
  joined hook it is already listed, during relation-created nobody is.

``UnitView`` is what one unit's agent keeps across hooks; ``HookContext`` is one hook's. The model
(``vca.Model``) holds the committed relation data and applies a context's writes with
``commit``. Written here because no library emulates a unit agent outside Juju.
"""
import copy
import threading


class UnitView(object):
    """What a unit agent keeps across hooks: relation membership and cached member settings."""

    def __init__(self):
        self.members = {}     # relation id -> set of remote units (joined hook committed)
        self.cache = {}       # relation id -> {unit: settings read by an earlier hook}

    def forget(self, rid):
        self.members.pop(rid, None)
        self.cache.pop(rid, None)

    def restart(self):
        """The unit agent restarted: the settings it cached in memory are gone; the membership it
        keeps in its state is not."""
        self.cache = {}


class HookContext(object):
    """One hook or action run of ``unit``: its view of membership, its reads and its buffered writes.

    ``kind`` is the hook's relation kind (``joined``, ``changed``, ``departed``, ``broken``,
    ``created``) or "" for any other hook or an action; ``rid``/``remote`` name the relation and
    the remote unit of a relation hook."""

    def __init__(self, unit, view, kind="", rid=None, remote=None, action=False, hook=""):
        self.unit, self.app = unit, unit.split("/")[0]
        self.view, self.kind, self.rid, self.remote = view, kind, rid, remote
        self.action = action
        self.hook = hook          # its dispatch path: hooks/<name> or actions/<name>
        self.pid = None           # the hook's process (faults.py kills it to restart the agent)
        # Set once ``pid`` is: the hook's first tool call can reach the tool server before the
        # thread that started the hook has recorded its pid (a loaded machine).
        self.started = threading.Event()
        self.killed = False
        self.failed_tool = ""     # the tool whose call faults.py made fail (the hook then fails)
        self.members = {r: set(units) for r, units in view.members.items()}
        self.writes = {}      # (relation id, owner) -> {key: value, or None to delete}
        self.others = {}      # (relation id, unit or application) -> settings, this hook only
        if rid is not None and remote:
            cache = view.cache.setdefault(rid, {})
            cache.pop(remote, None)                      # InvalidateMember / RemoveMember
            members = self.members.setdefault(rid, set())
            if kind == "departed":
                members.discard(remote)
            elif kind in ("joined", "changed"):
                members.add(remote)

    # ------------------------------------------------------------------ reads
    def member_names(self, rid):
        return sorted(self.members.get(rid, ()))

    def settings(self, relations, rid, who):
        """A remote unit's (or application's) settings as this hook sees them."""
        committed = relations[rid]["data"].get(who, {})
        if who in self.members.get(rid, ()):
            cache = self.view.cache.setdefault(rid, {})
            if who not in cache:
                cache[who] = copy.deepcopy(committed)
            return dict(cache[who])
        if (rid, who) not in self.others:
            self.others[(rid, who)] = copy.deepcopy(committed)
        return dict(self.others[(rid, who)])

    def own(self, relations, rid, owner):
        """This unit's (or, for the leader, its application's) settings: committed plus this
        hook's writes."""
        bag = dict(relations[rid]["data"].get(owner, {}))
        for key, value in self.writes.get((rid, owner), {}).items():
            if value is None:
                bag.pop(key, None)
            else:
                bag[key] = value
        return bag

    # ------------------------------------------------------------------ writes
    def write(self, rid, owner, updates):
        """Buffer ``updates`` ({key: value}; "" or None deletes, Juju's rule) until the flush."""
        pending = self.writes.setdefault((rid, owner), {})
        for key, value in updates.items():
            pending[key] = None if value in ("", None) else str(value)

    def commit(self, relations):
        """The hook succeeded and its commit reached the controller: apply its writes to the
        committed data and its membership changes to the unit's view. Returns the (relation id,
        owner) whose bags changed (the units that must hear of it); ``changed_keys`` keeps the keys
        that changed in each (instrumentation: why the remote units' relation-changed ran)."""
        changed = []
        self.changed_keys = {}
        for (rid, owner), pending in sorted(self.writes.items()):
            rel = relations.get(rid)
            if rel is None:
                continue
            bag = rel["data"].setdefault(owner, {})
            before = dict(bag)
            for key, value in pending.items():
                if value is None:
                    bag.pop(key, None)
                else:
                    bag[key] = value
            if bag != before:
                changed.append((rid, owner))
                self.changed_keys[(rid, owner)] = sorted(k for k in set(bag) | set(before)
                                                         if bag.get(k) != before.get(k))
        if self.rid is not None and self.remote:
            members = self.view.members.setdefault(self.rid, set())
            if self.kind == "departed":
                members.discard(self.remote)
            elif self.kind in ("joined", "changed"):
                members.add(self.remote)
        if self.kind == "broken" and self.rid is not None:
            self.view.forget(self.rid)
        return changed
