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
import sys
from typing import TYPE_CHECKING, Any, FrozenSet, List, Optional, Sequence, Type

# Standard library only, like the gate: a hook the gate ends imports nothing else (``main``).
from vpnaas.charm import hookgate

if TYPE_CHECKING:
    from vpnaas.charm import base as charm_base
    from vpnaas.core import registry

#: What a machine charm's run imports only when it uses it. ops 1.5.4 (the last for Python 3.6, OSM's
#: proxy machine) imports ``ops.pebble``, its client for Kubernetes sidecar containers, in
#: ``ops.model`` on every hook, and with it ``http.client``, ``email``, ``ssl``, ``cgi`` and a
#: vendored websocket client: about a quarter of ops' import time (docs/figures.md, hook6), for a
#: module a machine charm never reaches (``ops.model`` uses it only inside ``Container``'s methods,
#: and a charm without ``containers`` in its metadata has none).
DEFERRED = ("ops.pebble",)


class _LazyFinder(object):
    """Finds ``names`` as the path finder does, with their loader wrapped in the standard library's
    ``importlib.util.LazyLoader`` (made for this): the module object exists at once and its code
    runs at the first attribute access, so only when the cost is paid changes, and a run that does
    reach the module gets all of it. (A meta path finder needs only ``find_spec``: importlib.abc's
    base class would import importlib.resources, pathlib and tempfile before the gate answers.)"""

    def __init__(self, names: Sequence[str]) -> None:
        self.names: FrozenSet[str] = frozenset(names)

    def find_spec(self, fullname: str, path: Optional[Sequence[str]], target: Any = None) -> Any:
        if fullname not in self.names:
            return None
        import importlib.machinery
        import importlib.util
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or not isinstance(spec.loader, importlib.machinery.SourceFileLoader):
            return None                 # not a source module: the ordinary import
        spec.loader = importlib.util.LazyLoader(spec.loader)
        return spec


def defer_imports(names: Sequence[str] = DEFERRED) -> None:
    """Import ``names`` lazily from now on in this process (idempotent; one already imported stays
    as it is): called before the class is composed, which imports ops (``base``) for the first
    time in a charm run. The Harness tests import ``ops.testing`` first, which uses pebble."""
    wanted = [n for n in names if n not in sys.modules]
    if wanted and not any(isinstance(f, _LazyFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _LazyFinder(wanted))


def resolve(dotted: str, modules: List[str], who: str) -> Any:
    """``module.attribute`` of the shared package (dotted below vpnaas), ``module`` one of
    ``modules`` (a charm ships only those of its own entry)."""
    from vpnaas.core import registry
    module, _, attribute = dotted.rpartition(".")
    if module not in modules:
        raise registry.RegistryError("{}: {} is not one of its modules".format(who, module))
    return getattr(importlib.import_module("vpnaas." + module), attribute)


def description(component: "registry.Component") -> Any:
    """The object the component's ``describe`` names (an oai.Component)."""
    from vpnaas.core import registry
    if not component.describe:
        raise registry.RegistryError("component {} has no description".format(component.name))
    return resolve(component.describe, component.modules, "component " + component.name)


def ue_description(component: "registry.Component") -> Any:
    """The object the component's ``ue`` names (an oai.Ue)."""
    return resolve(component.ue, component.modules, "component " + component.name)


def workload_class(component: str) -> Any:
    """The workload class of ``component``: its workload kind's class, made by its ``of`` from the
    entry and the objects the entry names."""
    from vpnaas.core import registry
    reg = registry.load()
    comp = reg.components[component]
    kind = reg.workloads[comp.workload]
    cls = resolve(kind.cls, kind.modules + ["charm.workload"], "workload " + kind.name)
    return cls.of(comp, description(comp) if comp.describe else None, ue_description(comp) if comp.ue else None)


def charm_class(component: str) -> Type["charm_base.VpnaasCharm"]:
    """``component``'s charm class. Its name, and its workload's, are those of the hand-written
    charm.py files of earlier revisions (``HssCharm``, ``HssWorkload``): ops keys a unit's stored
    state by them, so an upgraded unit keeps its state."""
    defer_imports()
    from vpnaas.charm import base as charm_base
    from vpnaas.core import registry
    workload = workload_class(component)
    title = registry.load().components[component].title
    return type(title + "Charm", (charm_base.VpnaasCharm,), {"workload_type": workload, "__module__": __name__})


def gate_ends_the_hook() -> bool:
    """The hook gate's answer, asked in this process before ops is imported (``dispatch`` runs
    src/charm.py, which calls ``main``): a hook that can change nothing ends here, and one that
    runs the charm pays one interpreter start, not two. Anything the gate raises means "run the
    charm", as its exit status did when it ran as a process of its own."""
    try:
        return hookgate.main() == 0
    except Exception:  # noqa: BLE001 (the charm then decides: the gate can only skip what it would)
        return False


def main(component: str) -> None:
    """Run ``component``'s charm for this hook (charm_base.main), unless the hook gate ends it."""
    if gate_ends_the_hook():
        return
    cls = charm_class(component)
    from vpnaas.charm import base as charm_base
    charm_base.main(cls)
