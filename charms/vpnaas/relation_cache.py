"""Skip a relation hook that can change nothing, before the plan reads every relation.

A hub related to k spokes gets about k relation-changed hooks per round of key exchange, and
each reconcile builds its plan from all k relations (O(k) hook-tool calls): O(k^2) in all.
Most of those hooks concern one relation whose tunnel data did not change (the spoke only
published its ``peer-keys`` notification to a unit that asked for it, or Juju ran a hook of
its own).
This module remembers, after every successful reconcile, a digest of each remote unit's tunnel
data per relation; a later relation-changed whose remote unit's data has the same digest, while
the VNF still holds what that reconcile applied, is skipped: it reads one databag instead of k.

Before the ``config`` primitive has set ``ssh-hostname`` no relation hook can do anything (no
key is published before this unit has a key on its VNF, and there is no VNF to reach): those
hooks are skipped too, so that a hub deployed and related to k spokes before its configuration
(OSM's order) runs O(k) cheap hooks instead of O(k) hooks that each read k relations.

The reconcile still decides on the whole state whenever it runs: a change in another relation
comes with that relation's own relation-changed hook, which is not skipped. ``peer-keys`` is
part of the digest for charms whose component waits for its tunnels
(``VpnaasCharm.waits_for_tunnels``), so their wake-up is never lost; ``wants-peer-keys`` always
is, as it decides what this unit publishes.

Hook-in (charm_base.VpnaasCharm): ``self.relation_cache = RelationCache(self)`` in __init__;
in the event handler, ``if self.relation_cache.nothing_to_do(event, applied): return`` before
reconciling and ``self.relation_cache.remember(event, applied)`` after a reconcile that did not
fail, ``applied`` being the fingerprint of the plan the VNF holds ("" when unknown).
"""
import hashlib
import json
from typing import Any, Dict, Sequence

from ops.charm import RelationBrokenEvent, RelationChangedEvent, RelationCreatedEvent, RelationJoinedEvent
from ops.framework import Object, StoredState

from vpnaas import relation_data


def digest(data: Any, fields: Sequence[str]) -> str:
    """A short digest of ``fields`` of one databag (missing keys count as empty)."""
    picked = dict((k, data.get(k, "")) for k in fields)
    return hashlib.sha256(json.dumps(picked, sort_keys=True).encode()).hexdigest()[:32]


def slot(relation_id: int, unit_name: str) -> str:
    return "{}/{}".format(relation_id, unit_name)


class RelationCache(Object):
    _stored: Any = StoredState()

    def __init__(self, charm: Any) -> None:
        super().__init__(charm, "relation-cache")
        self.charm = charm
        self._stored.set_default(digests="{}", applied="")
        # wants-peer-keys decides what this unit publishes to that unit: a change is never skipped.
        self.fields = tuple(relation_data.KEYS) + (relation_data.WANTS_PEER_KEYS,)
        if charm.waits_for_tunnels():
            self.fields += (relation_data.PEER_KEYS,)

    def nothing_to_do(self, event: Any, applied: str) -> bool:
        """True when ``event`` is a relation-created/joined/changed before this unit has a VNF to
        reach, or a relation-changed whose remote unit's tunnel data is what the last successful
        reconcile used while the VNF still holds that reconcile's plan."""
        arriving = (RelationCreatedEvent, RelationJoinedEvent, RelationChangedEvent)
        if isinstance(event, arriving) and not self.charm.config.get("ssh-hostname"):
            return True
        if not isinstance(event, RelationChangedEvent) or event.unit is None or not applied:
            return False
        if applied != self._stored.applied:
            return False
        known = json.loads(self._stored.digests).get(slot(event.relation.id, event.unit.name))
        return known is not None and known == digest(event.relation.data[event.unit], self.fields)

    def remember(self, event: Any, applied: str) -> None:
        """Digests of every related unit's tunnel data, as the reconcile just read them."""
        broken = event.relation.id if isinstance(event, RelationBrokenEvent) else None
        digests: Dict[str, str] = {}
        for endpoint in self.charm.endpoints:
            for rel in self.charm.model.relations[endpoint.name]:
                if rel.id == broken:
                    continue
                for unit in rel.units:
                    digests[slot(rel.id, unit.name)] = digest(rel.data[unit], self.fields)
        self._stored.digests = json.dumps(digests, sort_keys=True)
        self._stored.applied = applied or ""
