"""The tunnel relations ``wireguard[-<reference point>]`` as a unit reads and writes them on ops'
model: which relations and remote units there are, each remote unit's databag through the
interface's codec, and this unit's own databag written back. The interface itself (its version,
fields, schema and codec) is one module of the pure core: ``vpnaas.core.relation_data``.

A relation in its own relation-broken hook is left out of reading and publishing: ops 1.5.4 still
lists it, and Juju refuses writes to it.

In a relation hook the other relations' remote units are the memory's (relation_memory: Juju 2.9
changes a relation's members only with a hook of that relation), so that the hook's hook-tool calls
do not grow with the number of relations: ``relation-ids`` per endpoint, the hook's own relation
(``relation-list``, through ops' event), and reads only of what changed.
"""
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Set, Tuple

from vpnaas.charm import relation_cache, relation_lookup, relation_memory
from vpnaas.core import model, refpoints, relation_data, rotation
from vpnaas.core.hookclock import CLOCK

#: ``TunnelRelations.fresh`` when every remote unit is read (every hook but a relation hook).
EVERY_UNIT = "every unit"
#: What a device waits for while a remote unit is left unread (``TunnelRelations.defer_unread``).
DEFERRED = "{} (read when its data next changes)"
#: The fields of this unit's application bag it digests (the generation follows the others).
_APP_OWN = (relation_data.MIRROR_REQUEST, relation_data.MIRROR_OF) + relation_data.PUBLISHED
#: Before the digest of what a unit that does not lead its application would have written.
_NOT_LEADER = "not leader: "


def tunnel_endpoints(meta: Any) -> List[model.TunnelEndpoint]:
    """The charm's relation endpoints whose interface is ``wireguard`` or ``wireguard-*``."""
    out = []
    for name, rel in sorted(meta.relations.items()):
        iface = rel.interface_name or ""
        if iface != refpoints.INTERFACE_PREFIX and not iface.startswith(refpoints.INTERFACE_PREFIX + "-"):
            continue
        out.append(model.TunnelEndpoint(name, "provider" if rel.role.name == "provides" else "requirer"))
    return out


class Remembered(object):
    """A relation whose remote units this run takes from the memory (relation_memory), as ops'
    ``Relation`` offers them (``id``, ``name``, ``units``) with no hook-tool call; its databags
    (``data``) through ops' relation, built alone (one ``relation-list``) the first time they are
    needed (this unit's own data read back or written)."""

    def __init__(self, model: Any, name: str, relation_id: int, units: List[str]) -> None:
        self.name, self.id = name, relation_id
        self.units = {model.get_unit(u) for u in units}     # ops' own Unit objects (its cache)
        self._mapping = model.relations

    @property
    def data(self) -> Any:
        return self._mapping.built(self.name, self.id).data


class TunnelRelations(object):
    """All tunnel relations of a unit: what the remote units published, and what it publishes.

    What it read and wrote in earlier hooks is in ``memory`` (relation_memory): a relation hook
    reads only its own relation's members and remote unit (``fresh``: (relation id, unit name)) and
    takes the other relations' members and data from the memory; every other hook reads every
    relation and unit (``EVERY_UNIT``). Of this unit's own databags only those the last charm run
    wrote are read back (``check_own="written"``), or all (``"all"``: update-status and the other
    checks of the VNF). ``begin_run`` sets what the run is about."""

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
        #: {endpoint: relations} of this run (``_relations``)
        self._view: Optional[Dict[str, List[Any]]] = None
        #: The generation of this unit's last publication (relation_data.next_generation), and per
        #: remote unit (slot) the newest publication this unit planned with: {"fields": digests,
        #: "reading": relation_data.Reading.as_dict()}. Both are the charm's stored state (a memory
        #: that can be dropped must not decide what is newest).
        self.last_generation = 0
        self.newest: Dict[str, Dict[str, Any]] = {}
        #: The remote application of an application-data relation-changed (JUJU_REMOTE_APP, no
        #: remote unit); whether this unit leads its application (asked only before a write).
        self.remote_app: Optional[str] = None
        self.is_leader: Callable[[], bool] = lambda: False
        #: Read every remote application's bag in this run (``begin_run``'s ``refresh_apps``).
        self.refresh_apps = False
        #: The remote applications' bags read in this run, by relation id (Juju's agent keeps an
        #: application's settings for the rest of a hook: read once per run, however many plans).
        self._apps_read: Dict[int, Optional[Dict[str, Any]]] = {}

    def begin_run(self, fresh: Any = EVERY_UNIT, breaking: Optional[int] = None, check_own: str = "written",
                  remote_app: Optional[str] = None, refresh_apps: bool = False) -> None:
        """A new run of the charm (a hook or an action), about ``fresh`` ((relation id, remote unit or
        None) in a relation hook, else ``EVERY_UNIT``; ``remote_app`` the remote application of an
        application-data relation-changed), with ``breaking`` in its relation-broken: the
        relations are listed again, and the last run's writes are to be read back once more (a
        process runs once; ops' test harness runs many events on one charm). ``refresh_apps``:
        read every remote application's bag and write this unit's application bags again where
        they differ (the checks of the VNF, and a new leader: ``sync_apps``)."""
        self.fresh, self.breaking, self.check_own = fresh, breaking, check_own
        self.remote_app, self.refresh_apps = remote_app, refresh_apps
        if refresh_apps:
            self.memory.app_own = {}
        self._apps_read = {}
        self._checked = None
        self._view = None

    def live(self, endpoint: str) -> List[Any]:
        return [rel for rel in self._relations()[endpoint] if rel.id != self.breaking]

    def _relations(self) -> Dict[str, List[Any]]:
        """{endpoint: its relations} for this run, listed once: in a relation hook with the memory's
        membership (relation_memory), ``relation-ids`` and the hook's own relation as Juju lists
        them now and the others as remembered (``Remembered``); else every relation as Juju lists
        it. The memory's membership becomes this view's."""
        if self._view is None:
            mapping = self.model.relations
            hook = self.fresh[0] if isinstance(self.fresh, tuple) else None
            if hook is None or self.memory.relations is None or not isinstance(mapping, relation_lookup.RelationsById):
                self._view = {ep.name: list(mapping[ep.name]) for ep in self.endpoints}
            else:
                self._view = {ep.name: [self._relation(mapping, ep.name, rid, hook) for rid in mapping.ids(ep.name)]
                              for ep in self.endpoints}
            self._record()
        return self._view

    def _relation(self, mapping: relation_lookup.RelationsById, endpoint: str, rid: int, hook: int) -> Any:
        units = self.memory.members(rid, endpoint) if rid != hook else None
        if units is None:
            CLOCK.count("memberships_read")
            return mapping.built(endpoint, rid)
        return Remembered(self.model, endpoint, rid, units)

    def _record(self) -> None:
        assert self._view is not None
        self.memory.record({rel.id: (ep, [u.name for u in rel.units])
                            for ep, rels in self._view.items() for rel in rels if rel.id != self.breaking})

    def _readable(self, endpoint: str) -> List[Any]:
        """``live(endpoint)``, where a remembered relation with a member whose reading the memory
        does not keep (and that this run would read) is read afresh instead, members and all."""
        rels = self._relations()[endpoint]
        for i, rel in enumerate(rels):
            if isinstance(rel, Remembered) and not self.defer_unread and not all(
                    self.memory.has_reading(relation_cache.slot(rel.id, u.name)) for u in rel.units):
                CLOCK.count("memberships_read")
                rels[i] = self.model.relations.built(endpoint, rel.id)
                self._record()
        return [rel for rel in rels if rel.id != self.breaking]

    def snapshot(self) -> model.Relations:
        """{endpoint: [{remote unit: relation_data.Reading}]}, one dict per live relation (the
        plan's input): its members as Juju lists them (or, for another relation than a relation
        hook's, as the memory keeps them), each read now or taken from the memory (see the class)."""
        out: model.Relations = {}
        slots = []
        with CLOCK.phase("reads"):
            for ep in self.endpoints:
                out[ep.name] = []
                for rel in self._readable(ep.name):
                    units = {}
                    for unit in rel.units:
                        slot = relation_cache.slot(rel.id, unit.name)
                        slots.append(slot)
                        units[unit.name] = self._reading(rel, unit, slot)
                    self._take_newest(ep.name, rel, units)
                    out[ep.name].append(units)
            self.memory.retain_only(slots)
            self.newest = {s: e for s, e in self.newest.items() if s in set(slots)}
        return out

    # ------------------------------------------------------------------ the application-data mirror
    def requests_mirrors(self, endpoint: str) -> bool:
        """Whether this unit asks the remote applications on ``endpoint`` to mirror their units'
        publications (relation_data, "Mirror"): it has several relations there (a hub)."""
        return len(self.live(endpoint)) >= 2

    def _remote_app_name(self, rel: Any) -> Optional[str]:
        if self.fresh == (rel.id, None) and self.remote_app:
            return self.remote_app
        return next((u.name.split("/")[0] for u in sorted(rel.units, key=lambda u: u.name)), None)

    def _remote_app_bag(self, rel: Any) -> Optional[Dict[str, Any]]:
        """The remote application's bag on ``rel`` as Juju hands it to this hook (read afresh in
        every hook: cache.go ``Prune``), its digest and request recorded; None: not known."""
        if rel.id in self._apps_read:
            return self._apps_read[rel.id]
        app = self._remote_app_name(rel)
        if app is None:
            return None
        bag = relation_lookup.app_bag(self.model, rel.id, app)
        self._apps_read[rel.id] = bag
        if bag is None:
            return None
        CLOCK.count("app_databags_read")
        rid = str(rel.id)
        self.memory.apps[rid] = relation_cache.digest(bag, relation_data.APP_FIELDS)
        requested = set(self.memory.requested)
        if relation_data.requests_mirror(bag):
            requested.add(rid)
        else:
            requested.discard(rid)
        self.memory.requested = sorted(requested)
        return bag

    def _take_newest(self, endpoint: str, rel: Any, units: Dict[str, relation_data.Reading]) -> None:
        """Each remote unit of ``rel`` planned with its newest publication (relation_data.newest):
        its unit data as read, the newest planned with before, or its application's mirror. The
        mirror is read only where this unit asked for it and a remote unit's tunnel is still
        pending (or the hook is about that application's data), and only a current member's."""
        pending = any(r.info is None and not r.invalid for r in units.values())
        bag = None
        if self.fresh == (rel.id, None) or self.refresh_apps or (pending and self.requests_mirrors(endpoint)):
            bag = self._remote_app_bag(rel)
        mirror = relation_data.read_mirror(set(units), bag) if bag and self.requests_mirrors(endpoint) else None
        for name, reading in list(units.items()):
            slot = relation_cache.slot(rel.id, name)
            if self.fresh == (rel.id, name):
                # A hook about that unit: Juju's agent hands its data afresh (contextfactory.go,
                # InvalidateMember), so it is the unit's current publication whatever its
                # generation: planned with as read, and the newest kept starts again from it (a
                # generation above the unit's real one, kept or mirrored, never pins the plan).
                self.newest.pop(slot, None)
                if reading.info is not None and reading.generation > 0:
                    entry = self.memory.units.get(slot)
                    if entry is not None:
                        self.newest[slot] = {"fields": dict(entry["fields"]), "reading": reading.as_dict()}
                continue
            kept = relation_memory.kept_reading(self.newest, slot, name)
            offered = mirror if mirror is not None and mirror.unit == name else None
            best = relation_data.newest(reading, kept, offered)
            if best is not reading:
                units[name] = best
                CLOCK.count("mirrors_taken" if best is offered else "newer_kept")
                fields = relation_memory.field_digests(bag or {}) if best is offered else self.newest[slot]["fields"]
                self.memory.keep(slot, fields, best)
            if best.info is not None and best.generation > 0:
                entry = self.memory.units.get(slot)
                if entry is not None:
                    self.newest[slot] = {"fields": dict(entry["fields"]), "reading": best.as_dict()}

    def sync_apps(self, plan: Optional[model.Plan] = None) -> None:
        """This unit's application bags, where it leads its application: the mirror request on
        every relation of an endpoint with several relations, and, on a relation whose remote
        application asked for it, the mirror of this unit's publication there as Juju holds it
        (its own unit bag, generation included: never this run's plan, which Juju may not hold).
        With no ``plan`` (the VNF was not reached) only the request is written: a mirror stays as
        it is. Written only where they differ from what this unit recorded; a unit that does not
        lead writes nothing (its leader does; a new one in leader-elected)."""
        leader: Optional[bool] = None
        for ep in self.endpoints:
            request = self.requests_mirrors(ep.name)
            for rel in self.live(ep.name):
                rid = str(rel.id)
                # Whether the remote application asks for a mirror is read where it matters: when this
                # unit's publication there changed in this run (a request written before this unit
                # was configured came in a hook the gate ended), and in the checks (refresh_apps).
                if (self.refresh_apps or rid in self.memory.written) and rel.id not in self._apps_read:
                    self._remote_app_bag(rel)
                held: Dict[str, str] = {}
                if plan is not None and rid in self.memory.requested:
                    mine = rel.data[self.model.unit]
                    held = {k: mine.get(k, "") for k in relation_data.READ}
                mirrored = bool(held.get("public-key"))
                if not request and not mirrored and rid not in self.memory.app_own:
                    continue     # nothing of this unit's is there (no tool call: the EPS's case)
                wanted = {relation_data.MIRROR_REQUEST: relation_data.MIRROR_PROTOCOL if request else ""}
                if mirrored:
                    wanted.update(relation_data.mirror(self.model.unit.name, held))
                elif plan is not None and (request or rid in self.memory.app_own):
                    wanted.update({k: "" for k in (relation_data.MIRROR_OF,) + relation_data.READ})
                recorded = relation_cache.digest(wanted, _APP_OWN)
                if self.memory.app_own.get(rid) in (recorded, _NOT_LEADER + recorded):
                    continue
                if leader is None:
                    leader = self.is_leader()
                if not leader:
                    self.memory.app_own[rid] = _NOT_LEADER + recorded
                    continue
                written = relation_lookup.set_app_bag(self.model, rel.id, wanted)
                CLOCK.count("app_databags_written", written)
                self.memory.app_own[rid] = recorded
                if written:
                    self.memory.written.append(rid)   # read back at the next run (_check_own)

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
        try:
            bag = dict(rel.data[unit])
        except KeyError:
            # A remembered member Juju does not list on that relation any more (a memory whose last
            # hook Juju did not commit: it runs that hook again): nothing of it is used.
            return relation_data.Reading(unit.name, incomplete="{} (not related now)".format(unit.name))
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
        changed = [key for key, value in bag.items() if mine.get(key, "") != value]
        if changed:
            # A new generation with every change: a reader never plans with an older one
            # (relation_data.newest).
            self.last_generation = relation_data.next_generation(self.last_generation, time.time())
            changed.append(relation_data.GENERATION)
            bag = dict(bag, **{relation_data.GENERATION: str(self.last_generation)})
        for key in changed:
            mine[key] = bag[key]
        CLOCK.count("relations_written", bool(changed))
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

    def own_data(self, relation_id: int) -> Optional[Any]:
        """This unit's databag on ``relation_id`` as Juju holds it (None: no such live relation)."""
        rel = next((r for ep in self.endpoints for r in self.live(ep.name) if r.id == relation_id), None)
        return rel.data[self.model.unit] if rel is not None else None

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
            if recorded is not None:
                CLOCK.count("own_databags_read")
                if relation_cache.digest(live[rid].data[self.model.unit], relation_data.PUBLISHED) != recorded:
                    del self.memory.own[rid]
                    # Juju commits a hook's unit and application writes together: both were lost.
                    self.memory.app_own.pop(rid, None)
                    continue
            app_recorded = self.memory.app_own.get(rid, _NOT_LEADER)
            if rid in self.memory.written and not app_recorded.startswith(_NOT_LEADER):
                # The application bag this unit wrote there (possibly alone: a mirror's request
                # or a mirror whose unit data had not changed) is read back as well.
                CLOCK.count("own_databags_read")
                held = relation_lookup.app_bag(self.model, live[rid].id, self.model.app.name) or {}
                if relation_cache.digest(held, _APP_OWN) != app_recorded:
                    del self.memory.app_own[rid]
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
