"""ops' relations looked up by id without building every relation of the endpoint, so that a
relation hook's hook-tool calls do not grow with the unit's other relations.

ops 1.5.4 (the last for Python 3.6, OSM's proxy machine) restores a relation event with
``Model.get_relation(endpoint, id)``, which builds every relation of the endpoint first
(``RelationMapping._get_unique`` iterates ``RelationMapping.__getitem__``: one ``relation-ids``,
then one ``relation-list`` per relation) and picks the one with that id; a relation it does not
find there it builds alone, with the same constructor. A hub with k spokes on one endpoint so
paid k ``relation-list`` calls in every relation hook before the charm ran.

``RelationsById`` is ops' ``RelationMapping`` with that one lookup changed: a relation asked for
by id is built alone, as ops builds a relation it does not find (its own ``relation-list``), and
kept, so that ops' restores and the charm share one object (and its data cache). An endpoint's
list is built as before, only when asked for (``model.relations[endpoint]``), and takes the
relations already built. ``ids`` answers ``relation-ids`` for an endpoint without building any
relation. ``install`` makes ops' ``Model`` use it: ops offers no way to choose the mapping
(``Model.__init__`` names the class ``RelationMapping`` of ``ops.model``), so the class is
replaced there, in the charm's own process (``charm_base.main``), before ops builds its model.
"""
from typing import Any, Dict, List, Mapping, Optional, Tuple

import ops.model
from ops.model import ModelError, Relation, RelationMapping

#: ops' own class, kept for ``uninstall`` (the tests) and for a subclass check.
OPS_MAPPING = RelationMapping


class RelationsById(RelationMapping):
    """ops' mapping of endpoints to relations, looking a relation up by id alone (see the module)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._by_id: Dict[Tuple[str, int], Relation] = {}
        self._ids: Dict[str, List[int]] = {}

    def __getitem__(self, relation_name: str) -> List[Relation]:
        if not isinstance(self._data[relation_name], list):
            # The endpoint's list as ops builds it (its relation-ids, one relation each), holding the
            # relations already built by id.
            self._data[relation_name] = [self.built(relation_name, rid) for rid in self.ids(relation_name)]
        return super().__getitem__(relation_name)

    def _invalidate(self, relation_name: str) -> None:
        """ops' test harness changed the relations of ``relation_name``: forget them all."""
        super()._invalidate(relation_name)
        self._ids.pop(relation_name, None)
        for key in [k for k in self._by_id if k[0] == relation_name]:
            del self._by_id[key]

    def _get_unique(self, relation_name: str, relation_id: Optional[int] = None) -> Optional[Relation]:
        if (not isinstance(relation_id, int) or isinstance(relation_id, bool)
                or isinstance(self._data[relation_name], list)):
            return super()._get_unique(relation_name, relation_id)   # ops' own answer, or its error
        key = (relation_name, relation_id)
        if key not in self._by_id:
            self._by_id[key] = Relation(relation_name, relation_id, relation_name in self._peers,
                                        self._our_unit, self._backend, self._cache)
        return self._by_id[key]

    def ids(self, relation_name: str) -> List[int]:
        """The ids ``relation-ids`` lists for ``relation_name`` (once per run), no relation built."""
        if relation_name not in self._ids:
            if relation_name not in self._data:
                raise KeyError(relation_name)
            self._ids[relation_name] = list(self._backend.relation_ids(relation_name))
        return list(self._ids[relation_name])

    def built(self, relation_name: str, relation_id: int) -> Relation:
        """The relation ``relation_id`` of ``relation_name``, built alone unless it already is."""
        relation = self._get_unique(relation_name, relation_id)
        assert relation is not None     # never None when an id is given (ops builds a dead one)
        return relation


def app_bag(model: Any, relation_id: int, app: str) -> Optional[Dict[str, Any]]:
    """An application's bag on ``relation_id`` as Juju hands it to this run (``relation-get --app``:
    one call, no relation built; None: the call failed or answered no mapping)."""
    try:
        bag = model._backend.relation_get(relation_id, app, True)
    except ModelError:
        return None
    return dict(bag) if isinstance(bag, Mapping) else None


def set_app_bag(model: Any, relation_id: int, wanted: Mapping[str, str]) -> int:
    """This unit's application's bag on ``relation_id`` gets ``wanted`` (only the keys that differ;
    an empty value removes a key, Juju's rule). The caller leads its application. Returns how many
    keys were written."""
    held = app_bag(model, relation_id, model.app.name) or {}
    written = 0
    for key, value in sorted(wanted.items()):
        if held.get(key, "") != value:
            model._backend.relation_set(relation_id, key, value, True)
            written += 1
    return written


def install() -> None:
    """From now on, every ops ``Model`` of this process looks relations up by id (idempotent)."""
    ops.model.RelationMapping = RelationsById    # type: ignore[misc]


def uninstall() -> None:
    ops.model.RelationMapping = OPS_MAPPING      # type: ignore[misc]
