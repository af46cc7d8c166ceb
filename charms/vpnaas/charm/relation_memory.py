"""What a unit remembers of its tunnel relations across hooks, so that a relation hook's work is
proportional to what changed: which remote units each relation has (``relations``), each remote
unit's data as the grammar read it, what this unit published on each relation, and the route
policy's last outcome (``admission``).

**Membership.** In Juju 2.9 the remote units a hook sees on a relation (``relation-list -r``) are
what the unit agent recorded for that relation, and that record changes only when a
relation-joined or relation-departed hook *of that relation* commits: each hook's context takes
every relation's members from the agent's state (worker/uniter/runner/context/contextfactory.go
``getContextRelations``: ``RelationCache.Prune`` to ``RelationInfo.MemberNames``, which
worker/uniter/relation/relationer.go ``ContextInfo`` reads from the relation's ``State.Members``);
only the hook's own relation is adjusted for the hook (``HookContext``: ``RemoveMember`` in its
relation-departed, ``InvalidateMember`` otherwise, context/cache.go); ``relation-list`` answers
``ContextRelation.UnitNames`` = ``RelationCache.MemberNames`` (context/relation.go,
runner/jujuc/relation-list.go); and ``State.Members`` is written only by ``UpdateStateForHook``
when a hook of that relation commits (relation/state.go, via relationer.go ``CommitHook``), started
empty when the agent joins the relation (relationer.go ``Join``) and dropped with its
relation-broken (``die``). So a relation hook reads its own relation (``relation-list``, and its
remote unit's data) and takes the others' members from here, as the last hook about each left
them; the set of relations is ``relation-ids``' (one call per endpoint). A relation the memory
has no entry for (created since, or never read) is read whole. Every other hook (config-changed,
update-status, the actions, upgrade-charm, leader-elected) reads every relation and replaces
the record; so does a relation hook when there is none (``relations`` None).

A relation-joined that the hook gate ends (relation_cache: Juju runs that unit's relation-changed
next on the relation) reaches the memory with that relation-changed: until then this unit plans
without the new member, exactly as it would had that hook not run yet. A hook killed after the
memory was saved, or whose commit Juju did not make, is in error: Juju runs it again before any
other hook about an existing relation (worker/uniter/resolver.go ``NextOp``), and it reads its own
relation afresh; a hook skipped with ``juju resolved --no-retry`` after it stepped the VNF (the
``vnf-unconfirmed`` mark) makes the next hook read every relation (``VpnaasCharm._handle``), and
one skipped before its step is repaired by the next non-relation hook (update-status).

**Remote units.** Juju 2.9's unit agent keeps each related unit's settings across hooks and
refreshes only the hook's own remote unit: reading another member in a relation hook answers what
the agent read before, and a change of that member's data always comes with a relation-changed
hook of its own. So a relation hook re-reads only its own remote unit; the others are taken from
here, as the grammar read them (``relation_data.Reading``), each kept with the digests of the
databag it came from (one per field, so that the hook gate's digest over any subset of the fields
can be made from them). A databag read again whose digest is the kept one is not validated again.
A member of another relation with no reading kept here makes that relation read afresh. The
readings of units that are no member any more are forgotten. Every other hook reads every unit
(``TunnelRelations``), once ``ssh-hostname`` is set (before it no run reads any:
``VpnaasCharm.build_plan``).

**Own publication.** Juju flushes a hook's ``relation-set`` only when the hook succeeded and its
commit reached the controller. This unit keeps, per relation, the digest of the databag it wants
Juju to hold, and the relations the last charm run wrote (``written``): those are read back at the
next run (a retried hook after a dropped commit finds the old data and writes again); the others
are not read at all. update-status reads back every relation.

The memory is a file in the unit's state directory, written whole and atomically whenever it
changed, when ops commits the run (a run that fails leaves the memory of the run before). It is a
cache of facts that are true whatever happens to a hook (what a unit published, who Juju lists,
what this unit asked Juju to hold), never a decision: a file that is missing, unreadable, of
another format or made by another grammar (another charm revision) is no memory, and the next run
reads everything. Standard library only, besides the relation codec.
"""
import hashlib
import json
import os
import re
from typing import Any, Dict, Iterable, List, Mapping, Optional

from vpnaas.charm.relation_cache import combine, field_digest
from vpnaas.core import relation_data, unitstate, validation

FORMAT = 3
FILE_NAME = "relation-memory.json"
#: A unit's name as Juju gives it (<application>/<number>): the only names the membership keeps.
_UNIT = re.compile(r"[a-z][a-z0-9-]{0,62}/[0-9]{1,9}")
_RELATION_ID = re.compile(r"[0-9]{1,9}")
#: The fields a remote unit's reading depends on (relation_data.decode reads nothing else).
FIELDS = relation_data.READ


def field_digests(bag: Mapping[str, Any], fields: Iterable[str] = FIELDS) -> Dict[str, str]:
    """{field: its digest} of ``bag`` (a missing field counts as empty)."""
    return {k: field_digest(bag.get(k, "")) for k in fields}


def _grammar() -> str:
    """The digest of the code that decides what a reading is: a memory made by other code (another
    charm revision) is dropped, never trusted."""
    h = hashlib.sha256()
    for path in (validation.__file__, relation_data.__file__, os.path.abspath(__file__)):
        with open(path, "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:32]


GRAMMAR = _grammar()


class Memory(object):
    """The unit's relation memory (see the module's docstring). ``slot`` names a remote unit of
    one relation (relation_cache.slot)."""

    def __init__(self) -> None:
        self.units: Dict[str, Dict[str, Any]] = {}   # slot -> {"fields": {field: digest}, "reading": doc}
        self.own: Dict[str, str] = {}                 # relation id -> digest of what this unit wants Juju to hold
        self.written: List[str] = []                  # relation ids the last charm run wrote
        self.admission: Dict[str, Any] = {}           # the route policy's memo (admission.py)
        #: relation id -> {"endpoint": its endpoint, "units": its remote units' names}, as Juju listed
        #: them in the last hook about that relation (None: not known; every relation is read)
        self.relations: Optional[Dict[str, Dict[str, Any]]] = None
        #: The application-data mirror (relation_data, "Mirror"): relation id -> digest of the remote
        #: application's bag as last read (``relation_data.APP_FIELDS``; the hook gate's), the
        #: relations whose remote application asked for a mirror, and relation id -> digest of what
        #: this unit, as its application's leader, wrote in its application's bag there.
        self.apps: Dict[str, str] = {}
        self.requested: List[str] = []
        self.app_own: Dict[str, str] = {}
        self._saved = ""

    # ------------------------------------------------------------------ remote units
    def reading(self, slot: str, unit: str,
                digests: Optional[Mapping[str, str]] = None) -> Optional[relation_data.Reading]:
        """The kept reading of ``slot`` (None: none, or ``digests`` of the databag read now differ)."""
        return kept_reading(self.units, slot, unit, digests)

    def keep(self, slot: str, digests: Mapping[str, str], reading: relation_data.Reading) -> None:
        self.units[slot] = {"fields": dict(digests), "reading": reading.as_dict()}

    def retain_only(self, slots: Iterable[str]) -> None:
        """Forget every remote unit that is not in ``slots`` (departed units, broken relations)."""
        keep = set(slots)
        for slot in [s for s in self.units if s not in keep]:
            del self.units[slot]

    def gate_digests(self, fields: List[str]) -> Dict[str, str]:
        """{slot: digest of ``fields``} for relation_cache, from the kept field digests."""
        out = {}
        for slot, entry in self.units.items():
            d = combine(entry["fields"], fields)
            if d is not None:
                out[slot] = d
        return out

    def has_reading(self, slot: str) -> bool:
        return slot in self.units

    # ------------------------------------------------------------------ membership
    def members(self, relation_id: int, endpoint: str) -> Optional[List[str]]:
        """The remote units of ``relation_id`` (on ``endpoint``) as Juju listed them in the last hook
        about it; None when that is not known here."""
        entry = (self.relations or {}).get(str(relation_id))
        if entry is None or entry["endpoint"] != endpoint:
            return None
        return list(entry["units"])

    def record(self, relations: Mapping[int, Any]) -> None:
        """The membership of every relation is ``relations`` ({relation id: (endpoint, unit names)})."""
        self.relations = {str(rid): {"endpoint": ep, "units": sorted(set(units))}
                          for rid, (ep, units) in relations.items()}

    # ------------------------------------------------------------------ own publication
    def forget_relations(self, live: Iterable[str]) -> None:
        keep = set(live)
        self.own = {rid: d for rid, d in self.own.items() if rid in keep}
        self.written = [rid for rid in self.written if rid in keep]
        self.apps = {rid: d for rid, d in self.apps.items() if rid in keep}
        self.requested = [rid for rid in self.requested if rid in keep]
        self.app_own = {rid: d for rid, d in self.app_own.items() if rid in keep}

    # ------------------------------------------------------------------ file
    def as_dict(self) -> Dict[str, Any]:
        return {"format": FORMAT, "grammar": GRAMMAR, "units": self.units, "own": self.own,
                "written": sorted(set(self.written)), "admission": self.admission, "relations": self.relations,
                "apps": self.apps, "requested": sorted(set(self.requested)), "app_own": self.app_own}

    def save(self, directory: str) -> None:
        """Write the memory when it changed since it was loaded or last saved."""
        text = json.dumps(self.as_dict(), sort_keys=True)
        if text != self._saved:
            unitstate.write_atomic(os.path.join(directory, FILE_NAME), text.encode(), 0o600)
            self._saved = text


def kept_reading(entries: Dict[str, Dict[str, Any]], slot: str, unit: str,
                 digests: Optional[Mapping[str, str]] = None) -> Optional[relation_data.Reading]:
    """The reading kept for ``slot`` in ``entries`` ({slot: {"fields": digests, "reading": doc}}:
    the memory's, or the newest planned with: TunnelRelations.newest); None when there is none, its
    ``digests`` differ, or it is not one that ``Reading.as_dict`` wrote (then it is dropped)."""
    entry = entries.get(slot)
    if entry is None or (digests is not None and entry["fields"] != dict(digests)):
        return None
    try:
        return relation_data.Reading.from_dict(unit, entry["reading"])
    except (ValueError, KeyError, TypeError):
        del entries[slot]
        return None


def load(directory: str) -> Memory:
    """The memory kept in ``directory``; an empty one when there is none this code can use."""
    memory = Memory()
    try:
        with open(os.path.join(directory, FILE_NAME)) as f:
            text = f.read()
        doc = json.loads(text)
    except (OSError, ValueError):
        return memory
    if not (isinstance(doc, dict) and doc.get("format") == FORMAT and doc.get("grammar") == GRAMMAR
            and _units(doc.get("units")) and _strings_map(doc.get("own"))
            and isinstance(doc.get("written"), list) and all(isinstance(r, str) for r in doc["written"])
            and isinstance(doc.get("admission"), dict) and "relations" in doc and _relations(doc["relations"])
            and _strings_map(doc.get("apps")) and _strings_map(doc.get("app_own"))
            and isinstance(doc.get("requested"), list) and all(isinstance(r, str) for r in doc["requested"])):
        return memory
    memory.units, memory.own, memory.written = doc["units"], doc["own"], list(doc["written"])
    memory.apps, memory.requested, memory.app_own = doc["apps"], list(doc["requested"]), doc["app_own"]
    memory.admission, memory.relations = doc["admission"], doc["relations"]
    memory._saved = json.dumps(memory.as_dict(), sort_keys=True)
    return memory


def forget(directory: str) -> None:
    try:
        os.remove(os.path.join(directory, FILE_NAME))
    except FileNotFoundError:
        pass


def _strings_map(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())


def _units(value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(v, dict) and _strings_map(v.get("fields")) and "reading" in v
        for k, v in value.items())


def _relations(value: Any) -> bool:
    """None, or {relation id: {"endpoint": name, "units": [unit names]}} of the right shapes."""
    if value is None:
        return True
    if not isinstance(value, dict):
        return False
    for rid, entry in value.items():
        if not (isinstance(rid, str) and _RELATION_ID.fullmatch(rid) and isinstance(entry, dict)
                and set(entry) == {"endpoint", "units"} and isinstance(entry["endpoint"], str)
                and isinstance(entry["units"], list)):
            return False
        if not all(isinstance(u, str) and _UNIT.fullmatch(u) for u in entry["units"]):
            return False
    return True
