"""The tunnel relations ``wireguard[-<reference point>]`` as a unit reads and writes them on ops'
model: which relations and remote units there are, each remote unit's databag through the
interface's codec, and this unit's own databag written back. The interface itself (its version,
fields, schema and codec) is one module of the pure core: ``vpnaas.core.relation_data``.

A relation in its own relation-broken hook is left out of reading and publishing: ops 1.5.4 still
lists it, and Juju refuses writes to it.
"""
from typing import Any, Dict, Iterator, List, Optional, Set, Tuple

from vpnaas.charm import relation_cache, relation_memory
from vpnaas.core import model, refpoints, relation_data, rotation
from vpnaas.core.hookclock import CLOCK

#: ``TunnelRelations.fresh`` when every remote unit is read (every hook but a relation hook).
EVERY_UNIT = "every unit"
#: What a device waits for while a remote unit is left unread (``TunnelRelations.defer_unread``).
DEFERRED = "{} (read when its data next changes)"


def tunnel_endpoints(meta: Any) -> List[model.TunnelEndpoint]:
    """The charm's relation endpoints whose interface is ``wireguard`` or ``wireguard-*``."""
    out = []
    for name, rel in sorted(meta.relations.items()):
        iface = rel.interface_name or ""
        if iface != refpoints.INTERFACE_PREFIX and not iface.startswith(refpoints.INTERFACE_PREFIX + "-"):
            continue
        out.append(model.TunnelEndpoint(name, "provider" if rel.role.name == "provides" else "requirer"))
    return out


class TunnelRelations(object):
    """All tunnel relations of a unit: what the remote units published, and what it publishes.

    What it read and wrote in earlier hooks is in ``memory`` (relation_memory): a relation hook
    reads only its own remote unit (``fresh``: (relation id, unit name)), every other hook reads
    every unit (``EVERY_UNIT``); membership is ``relation-list``'s, in every hook. Of this unit's
    own databags only those the last charm run wrote are read back (``check_own="written"``), or
    all (``"all"``: update-status and the other checks of the VNF)."""

    def __init__(self, model: Any, endpoints: List[model.TunnelEndpoint], wants_peer_keys: bool = False,
                 memory: Optional[relation_memory.Memory] = None) -> None:
        self.model = model
        self.endpoints = endpoints
        self.wants_peer_keys = wants_peer_keys   # this unit's own wants-peer-keys flag
        self.breaking: Optional[int] = None      # id of the relation in its relation-broken hook, if any
        self.memory = memory or relation_memory.Memory()
        self.fresh: Any = EVERY_UNIT
        #: Leave unread, in this run, a remote unit never read before (unless the hook is about it):
        #: see ``VpnaasCharm.defers_unread``.
        self.defer_unread = False
        self.check_own = "written"
        #: the relations whose own data was read back in this run (the last run's writes are
        #: checked once: memory.written becomes this run's writes)
        self._checked: Optional[Set[str]] = None

    def begin_run(self) -> None:
        """A new run of the charm (a hook or an action): the last run's writes are to be read back
        once more (a process runs once; ops' test harness runs many events on one charm)."""
        self._checked = None

    def live(self, endpoint: str) -> List[Any]:
        return [rel for rel in self.model.relations[endpoint] if rel.id != self.breaking]

    def snapshot(self) -> model.Relations:
        """{endpoint: [{remote unit: relation_data.Reading}]}, one dict per live relation (the
        plan's input): the members ``relation-list`` names now, each read now or taken from the
        memory (see the class)."""
        out: model.Relations = {}
        slots = []
        with CLOCK.phase("reads"):
            for ep in self.endpoints:
                out[ep.name] = []
                for rel in self.live(ep.name):
                    units = {}
                    for unit in rel.units:
                        slot = relation_cache.slot(rel.id, unit.name)
                        slots.append(slot)
                        units[unit.name] = self._reading(rel, unit, slot)
                    out[ep.name].append(units)
            self.memory.retain_only(slots)
        return out

    def _reading(self, rel: Any, unit: Any, slot: str) -> relation_data.Reading:
        if self.fresh != (rel.id, unit.name) and (self.fresh != EVERY_UNIT or self.defer_unread):
            kept = self.memory.reading(slot, unit.name)
            if kept is None and self.defer_unread:
                # Not read (Juju's agent would keep what it read now until this unit's next hook):
                # no reading is kept, so that hook reaches the charm.
                CLOCK.count("peers_deferred")
                return relation_data.Reading(unit.name, incomplete=DEFERRED.format(unit.name))
            if kept is not None and self.fresh != EVERY_UNIT:
                return kept
        bag = dict(rel.data[unit])
        CLOCK.count("databags_read")
        digests = relation_memory.field_digests(bag)
        reading = self.memory.reading(slot, unit.name, digests)
        if reading is None:
            CLOCK.count("peers_validated")
            reading = relation_data.read(unit.name, bag)
            self.memory.keep(slot, digests, reading)
        return reading

    def publish(self, plan: model.Plan, public_keys: Dict[str, str]) -> None:
        """Write this unit's data for every device whose key is known, on the relations where Juju
        does not hold it yet."""
        self._check_own()
        for _dev, rel, bag in self._bags(plan, public_keys):
            if self.memory.own.get(str(rel.id)) != relation_cache.digest(bag, relation_data.PUBLISHED):
                self.write(rel, bag)

    def write(self, rel: Any, bag: Dict[str, str]) -> None:
        """This unit's data on ``rel`` becomes ``bag``: only changed fields are written (an empty
        value removes the key, so an absent key already is empty), and the memory records what
        Juju is asked to hold there (read back at the next run: relation_memory)."""
        rid = str(rel.id)
        mine = rel.data[self.model.unit]
        changed = 0
        for key, value in bag.items():
            if mine.get(key, "") != value:
                mine[key] = value
                changed += 1
        CLOCK.count("relations_written", changed > 0)
        self.memory.own[rid] = relation_cache.digest(bag, relation_data.PUBLISHED)
        if changed:
            self.memory.written.append(rid)

    def published(self, plan: model.Plan, public_keys: Dict[str, str]) -> bool:
        """True when every device has a key and Juju holds its data on every relation."""
        if any(not public_keys.get(dev.name) for dev in plan.devices):
            return False
        self._check_own()
        return all(self.memory.own.get(str(rel.id)) == relation_cache.digest(bag, relation_data.PUBLISHED)
                   for _dev, rel, bag in self._bags(plan, public_keys))

    def own_digests(self) -> Dict[str, str]:
        """{relation id: digest of what Juju holds of this unit's data there}, for the hook gate:
        what this unit wrote, or, on a relation it never wrote (no key yet), what it read there."""
        for ep in self.endpoints:
            for rel in self.live(ep.name):
                if str(rel.id) not in self.memory.own:
                    CLOCK.count("own_databags_read")
                    self.memory.own[str(rel.id)] = relation_cache.digest(rel.data[self.model.unit],
                                                                         relation_data.PUBLISHED)
        return dict(self.memory.own)

    def _check_own(self) -> None:
        """Once per run: read back what the last charm run wrote (a dropped commit lost it) and
        this hook's own relation, or every relation's own data (``check_own="all"``); a relation
        whose data is not what this unit wanted there loses its record, so that ``publish``
        writes it again."""
        if self._checked is not None:
            return
        live = {str(rel.id): rel for ep in self.endpoints for rel in self.live(ep.name)}
        self.memory.forget_relations(live)
        if self.check_own == "all":
            rids = sorted(live)
        else:
            hook = [str(self.fresh[0])] if isinstance(self.fresh, tuple) else []
            rids = sorted((set(self.memory.written) | set(hook)) & set(live))
        for rid in rids:
            recorded = self.memory.own.get(rid)
            if recorded is None:
                continue
            CLOCK.count("own_databags_read")
            if relation_cache.digest(live[rid].data[self.model.unit], relation_data.PUBLISHED) != recorded:
                del self.memory.own[rid]
        self._checked = set(rids)
        self.memory.written = []

    def _bags(self, plan: model.Plan,
              public_keys: Dict[str, str]) -> Iterator[Tuple[model.Device, Any, Dict[str, str]]]:
        for dev in plan.devices:
            key = public_keys.get(dev.name)
            if not key:
                continue
            rot = plan.rotation.get(dev.name)
            temp_key = public_keys.get(rotation.temp_name(dev.name), "")
            for rel in self.live(dev.endpoint):
                yield dev, rel, relation_data.publication(dev, key, {u.name for u in rel.units}, self.wants_peer_keys,
                                                          rot, temp_key)
