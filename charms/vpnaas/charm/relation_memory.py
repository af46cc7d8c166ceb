"""What a unit remembers of its tunnel relations across hooks, so that a relation hook's work is
proportional to what changed: each remote unit's data as the grammar read it, what this unit
published on each relation, and the route policy's last outcome (``admission``).

**Remote units.** Juju 2.9's unit agent keeps each related unit's settings across hooks and
refreshes only the hook's own remote unit: reading another member in a relation hook answers what
the agent read before, and a change of that member's data always comes with a relation-changed
hook of its own. So a relation hook re-reads only its own remote unit; the others are taken from
here, as the grammar read them (``relation_data.Reading``), each kept with the digests of the
databag it came from (one per field, so that the hook gate's digest over any subset of the fields
can be made from them). A databag read again whose digest is the kept one is not validated again.
Membership is never remembered: the plan takes the units ``relation-list`` names in this hook, and
forgets the readings of every other unit. Every other hook (config-changed, update-status, the
actions, upgrade-charm) reads every unit (``TunnelRelations``), once ``ssh-hostname`` is set (before
it no run reads any: ``VpnaasCharm.build_plan``).

**Own publication.** Juju flushes a hook's ``relation-set`` only when the hook succeeded and its
commit reached the controller. This unit keeps, per relation, the digest of the databag it wants
Juju to hold, and the relations the last charm run wrote (``written``): those are read back at the
next run (a retried hook after a dropped commit finds the old data and writes again); the others
are not read at all. update-status reads back every relation.

The memory is a file in the unit's state directory, written whole and atomically whenever it
changed. It is a cache of facts that are true whatever happens to a hook (what a unit published,
what this unit asked Juju to hold), never a decision: a file that is missing, unreadable, of
another format or made by another grammar (another charm revision) is no memory, and the next run
reads everything. Standard library only, besides the relation codec.
"""
import hashlib
import json
import os
from typing import Any, Dict, Iterable, List, Mapping, Optional

from vpnaas.charm.relation_cache import combine, field_digest
from vpnaas.core import relation_data, unitstate, validation

FORMAT = 1
FILE_NAME = "relation-memory.json"
#: The fields a remote unit's reading depends on (relation_data.decode reads nothing else).
FIELDS = relation_data.PUBLISHED


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
        self._saved = ""

    # ------------------------------------------------------------------ remote units
    def reading(self, slot: str, unit: str,
                digests: Optional[Mapping[str, str]] = None) -> Optional[relation_data.Reading]:
        """The kept reading of ``slot`` (None: none, or ``digests`` of the databag read now differ)."""
        entry = self.units.get(slot)
        if entry is None or (digests is not None and entry["fields"] != dict(digests)):
            return None
        try:
            return relation_data.Reading.from_dict(unit, entry["reading"])
        except (ValueError, KeyError, TypeError):
            del self.units[slot]
            return None

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

    # ------------------------------------------------------------------ own publication
    def forget_relations(self, live: Iterable[str]) -> None:
        keep = set(live)
        self.own = {rid: d for rid, d in self.own.items() if rid in keep}
        self.written = [rid for rid in self.written if rid in keep]

    # ------------------------------------------------------------------ file
    def as_dict(self) -> Dict[str, Any]:
        return {"format": FORMAT, "grammar": GRAMMAR, "units": self.units, "own": self.own,
                "written": sorted(set(self.written)), "admission": self.admission}

    def save(self, directory: str) -> None:
        """Write the memory when it changed since it was loaded or last saved."""
        text = json.dumps(self.as_dict(), sort_keys=True)
        if text != self._saved:
            unitstate.write_atomic(os.path.join(directory, FILE_NAME), text.encode(), 0o600)
            self._saved = text


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
            and isinstance(doc.get("admission"), dict)):
        return memory
    memory.units, memory.own, memory.written = doc["units"], doc["own"], list(doc["written"])
    memory.admission = doc["admission"]
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
