"""The entry point of every built charm: its src/charm.py is ``main(<component>)`` and nothing
else (scripts/bundle/build_charms.py writes it). The charm class is composed from the component's
registry entry alone (the generic charm with the workload its entry names), so no component states
its description, workload or UE anywhere but in registry.yaml.
"""
from typing import Type

from vpnaas.charm import base as charm_base
from vpnaas.core import registry


def charm_class(component: str) -> Type[charm_base.VpnaasCharm]:
    """``component``'s charm class. Its name, and its workload's, are those of the hand-written
    charm.py files of earlier revisions (``HssCharm``, ``HssWorkload``): ops keys a unit's stored
    state by them, so an upgraded unit keeps its state."""
    workload = registry.load().workload_class(component)
    title = registry.load().components[component].title
    return type(title + "Charm", (charm_base.VpnaasCharm,), {"workload_type": workload, "__module__": __name__})


def main(component: str) -> None:
    """Run ``component``'s charm for this hook (charm_base.main)."""
    charm_base.main(charm_class(component))
