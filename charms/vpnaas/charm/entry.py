"""The entry point of every built charm: its src/charm.py is ``main(<component>)`` and nothing
else (scripts/bundle/build_charms.py writes it). The charm class is composed from the component's
registry entry alone (the generic charm with the workload its entry names), so no component states
its description, workload or UE anywhere but in registry.yaml.

This is the composition point: the one module of the shared package that imports code by the
names the registry gives (a workload's ``class``, a component's ``describe`` and ``ue``), so the
pure core only holds those names. tests/unit/test_import_graph.py counts each name as an import
of this module (no circle, and each reaches a workload's module only).
"""
import importlib
from typing import Any, List, Type

from vpnaas.charm import base as charm_base
from vpnaas.core import registry


def resolve(dotted: str, modules: List[str], who: str) -> Any:
    """``module.attribute`` of the shared package (dotted below vpnaas), ``module`` one of
    ``modules`` (a charm ships only those of its own entry)."""
    module, _, attribute = dotted.rpartition(".")
    if module not in modules:
        raise registry.RegistryError("{}: {} is not one of its modules".format(who, module))
    return getattr(importlib.import_module("vpnaas." + module), attribute)


def description(component: registry.Component) -> Any:
    """The object the component's ``describe`` names (an oai.Component)."""
    if not component.describe:
        raise registry.RegistryError("component {} has no description".format(component.name))
    return resolve(component.describe, component.modules, "component " + component.name)


def ue_description(component: registry.Component) -> Any:
    """The object the component's ``ue`` names (an oai.Ue)."""
    return resolve(component.ue, component.modules, "component " + component.name)


def workload_class(component: str) -> Any:
    """The workload class of ``component``: its workload kind's class, made by its ``of`` from the
    entry and the objects the entry names."""
    reg = registry.load()
    comp = reg.components[component]
    kind = reg.workloads[comp.workload]
    cls = resolve(kind.cls, kind.modules + ["charm.workload"], "workload " + kind.name)
    return cls.of(comp, description(comp) if comp.describe else None, ue_description(comp) if comp.ue else None)


def charm_class(component: str) -> Type[charm_base.VpnaasCharm]:
    """``component``'s charm class. Its name, and its workload's, are those of the hand-written
    charm.py files of earlier revisions (``HssCharm``, ``HssWorkload``): ops keys a unit's stored
    state by them, so an upgraded unit keeps its state."""
    workload = workload_class(component)
    title = registry.load().components[component].title
    return type(title + "Charm", (charm_base.VpnaasCharm,), {"workload_type": workload, "__module__": __name__})


def main(component: str) -> None:
    """Run ``component``'s charm for this hook (charm_base.main)."""
    charm_base.main(charm_class(component))
