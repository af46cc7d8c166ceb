"""The import graph of charms/ and scripts/ (every import: at module level, in a function, under
TYPE_CHECKING): no circle anywhere, and the shared package's layers (docs/architecture.md)
import only downwards:

    oai (the OAI workloads: lte, cn5g)      may import everything below
    charm (the glue on ops)                  may import vnf and core
    vnf (what talks to the VNF's machine)    may import core; never ops
    core (pure)                              imports no other layer; never ops, paramiko,
                                             subprocess or socket

plus: the LTE and 5G workloads do not import each other; the model at the core's bottom floor
imports nothing that computes with it; what the charm's dispatch runs before ops (the hook gate
and what it imports) imports no third-party module; a package's ``__init__`` imports nothing; only
the composition point (charm/entry.py) imports by name, what the registry names, and those names
count as its imports.
"""
import ast
import functools
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
#: Where each top-level name is imported from (PYTHONPATH of the tests, the testbed and the build).
SOURCE_ROOTS = [os.path.join(ROOT, "charms"), os.path.join(ROOT, "scripts")]
LAYERS = ["core", "vnf", "charm", "oai"]
STANDARD = set(getattr(sys, "stdlib_module_names", ())) | {"typing", "os", "sys", "json", "hashlib"}


def _modules():
    """{dotted name: path} of every Python module under charms/ and scripts/ (a charm's
    src/charm.py is ``<charm>.src.charm``, as mypy names it)."""
    out = {}
    for root in SOURCE_ROOTS:
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d not in ("__pycache__", "venv") and "-" not in d)
            rel = os.path.relpath(folder, root)
            parts = [] if rel == "." else rel.split(os.sep)
            for name in files:
                if not name.endswith(".py") or "-" in name:
                    continue
                dotted = ".".join(parts + ([] if name == "__init__.py" else [name[:-3]]))
                if dotted:
                    out[dotted] = os.path.join(folder, name)
    return out


MODULES = _modules()


def _resolve(name):
    """The longest known module a dotted import name starts with (None: not ours)."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def imports_of(module):
    """(ours, foreign): the project's modules ``module`` imports, and the top-level names of the
    others."""
    path = MODULES[module]
    with open(path) as f:
        tree = ast.parse(f.read())
    package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
    ours, foreign = set(), set()
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            names = [base + "." + a.name for a in node.names] + [base]
        for name in names:
            found = _resolve(name)
            if found is not None:
                ours.add(found)
            elif name:
                foreign.add(name.split(".")[0])
    return ours - {module}, foreign


@functools.lru_cache(maxsize=None)
def _read(module):
    ours, foreign = imports_of(module)
    return (ours | RUNTIME if module == COMPOSITION else ours), foreign


class _Imports(dict):
    """{module: what it imports} (``part`` 0: ours, 1: the foreign top-level names), each module
    read when first asked: only the pytest-xdist worker that runs these tests reads the graph."""

    def __init__(self, part):
        super().__init__()
        self.part = part

    def __missing__(self, module):
        self[module] = _read(module)[self.part]
        return self[module]


GRAPH = _Imports(0)
FOREIGN = _Imports(1)
SHARED = sorted(m for m in MODULES if m.startswith("vpnaas."))

#: The composition point: the one module that imports code by the names the registry gives (a
#: workload's class, a component's description and UE; charm/entry.py). Those names are its
#: imports too (``RUNTIME``), so that the graph holds them: no circle through them, each one a
#: workload's module.
COMPOSITION = "vpnaas.charm.entry"


def _registry_names():
    from vpnaas.core import registry

    reg = registry.load()
    names = [w.cls for w in reg.workloads.values()]
    names += [n for c in reg.components.values() for n in (c.describe, c.ue) if n]
    return {"vpnaas." + n.rpartition(".")[0] for n in names}


RUNTIME = _registry_names()


def layer(module):
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "vpnaas" and parts[1] in LAYERS else None


def closure(module):
    seen, todo = set(), list(GRAPH[module])
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo += GRAPH[m]
    return seen


def test_the_graph_was_read():
    assert {"vpnaas.core.plan", "vpnaas.vnf.remote", "vpnaas.charm.base", "vpnaas.oai.lte.hss",
            "testbed.lifecycle", "bundle.build_charms", "vpnaas.charm.entry"} <= set(MODULES)
    assert {"vpnaas.core.plan", "vpnaas.core.policy"} <= closure("vpnaas.charm.base")
    assert "vpnaas.core.model" in GRAPH["vpnaas.core.plan"]
    assert "ops" in FOREIGN["vpnaas.charm.base"] and "paramiko" in FOREIGN["vpnaas.vnf.ssh"]
    assert {"testbed.lifecycle_base", "testbed.lifecycle_scale"} <= GRAPH["testbed.lifecycle"]


def circles():
    """Every strongly connected set of more than one module (Tarjan), each sorted."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(GRAPH[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(MODULES)))
    for v in sorted(MODULES):
        if v not in index:
            visit(v)
    return out


def test_no_circle_in_charms_and_scripts():
    # A package's __init__ is imported with its modules; an import of the package itself by one
    # of its modules is no circle of ours unless __init__ imports back (checked below: it imports
    # nothing in the shared package).
    assert circles() == []


def test_each_layer_imports_only_downwards():
    wrong = []
    for m in SHARED:
        own = layer(m)
        if own is None:
            continue
        for d in sorted(GRAPH[m] - (RUNTIME if m == COMPOSITION else set())):
            theirs = layer(d)
            if theirs is not None and LAYERS.index(theirs) > LAYERS.index(own):
                wrong.append("{} ({}) imports {} ({})".format(m, own, d, theirs))
    assert wrong == []


def test_only_the_composition_point_imports_by_name_and_only_workloads():
    """The registry names code (a workload's class, a component's description and UE); one module
    imports it, charm/entry.py, and what it names is a workload's: the glue's generic workload or
    an OAI module (the pure core only holds the names)."""
    assert {"vpnaas.oai.workload", "vpnaas.charm.workload", "vpnaas.oai.lte.hss", "vpnaas.oai.cn5g.nrue"} <= RUNTIME
    assert RUNTIME <= set(SHARED)
    assert [m for m in sorted(RUNTIME) if layer(m) != "oai" and m != "vpnaas.charm.workload"] == []
    by_name = []
    for m in SHARED:
        with open(MODULES[m]) as f:
            text = f.read()
        if "importlib" in FOREIGN[m] or "__import__" in text:
            by_name.append(m)
    assert by_name == [COMPOSITION]


def test_core_and_vnf_side_never_import_ops():
    wrong = ["{} imports {}".format(m, sorted(FOREIGN[m] & {"ops", "paramiko", "subprocess", "socket"}))
             for m in SHARED if layer(m) == "core" and FOREIGN[m] & {"ops", "paramiko", "subprocess", "socket"}]
    wrong += ["{} imports ops".format(m) for m in SHARED if layer(m) == "vnf" and "ops" in FOREIGN[m]]
    assert wrong == []


def test_every_shared_module_is_in_a_layer():
    assert [m for m in SHARED if layer(m) is None and m != "vpnaas"] == []


def test_lte_and_5g_workloads_do_not_import_each_other():
    wrong = []
    for m in SHARED:
        for a, b in (("vpnaas.oai.lte.", "vpnaas.oai.cn5g"), ("vpnaas.oai.cn5g.", "vpnaas.oai.lte")):
            if m.startswith(a):
                wrong += ["{} imports {}".format(m, d) for d in GRAPH[m] if d.startswith(b)]
    assert wrong == []


def test_the_charms_entry_points_import_the_glue_only():
    """Every charm's src/charm.py is written by the build (bundle.build_charms.entry_point)."""
    from bundle import build_charms
    from vpnaas.core import registry

    names = sorted(registry.load().components)
    assert len(names) >= 10
    for name in names:
        tree = ast.parse(build_charms.entry_point(name))
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        assert imported == {"vpnaas.charm.entry"}, (name, imported)


def test_the_model_imports_nothing_that_computes_with_it():
    # qos: the slice options' values (config.py parses them; core/qos.py computes nothing with a plan)
    allowed = {"vpnaas.core." + n
               for n in ("config", "instance", "qos", "refpoints", "registry", "validation", "facts")}
    assert closure("vpnaas.core.model") - {"vpnaas", "vpnaas.core"} <= allowed


def test_what_dispatch_runs_before_ops_is_standard_library():
    gate = {"vpnaas.charm.hookgate"} | closure("vpnaas.charm.hookgate")
    assert "vpnaas.charm.relation_cache" in gate
    foreign = set().union(*(FOREIGN[m] for m in gate))
    assert foreign <= STANDARD, sorted(foreign - STANDARD)


def test_package_faces_import_nothing():
    faces = [m for m in SHARED + ["vpnaas"] if MODULES[m].endswith("__init__.py")]
    assert len(faces) >= 7
    assert {m: sorted(GRAPH[m] | FOREIGN[m]) for m in faces if GRAPH[m] | FOREIGN[m]} == {}


def test_the_testbeds_emulators_and_measurement_import_nothing_above_them():
    """scripts/testbed: the emulators (VCA, LCM, VIM) import only each other; what measures
    imports the emulators and itself; the commands and the testbed at the top use both."""
    def group(m):
        parts = m.split(".")
        return parts[1] if len(parts) > 1 and parts[0] == "testbed" and parts[1] in ("emulators", "measurement") \
            else "top"
    testbed = [m for m in MODULES if m.startswith("testbed.") and group(m) in ("emulators", "measurement")]
    assert len([m for m in testbed if group(m) == "emulators"]) >= 15
    allowed = {"emulators": {"emulators"}, "measurement": {"emulators", "measurement"}}
    wrong = ["{} imports {}".format(m, d) for m in sorted(testbed) for d in sorted(GRAPH[m])
             if d.startswith("testbed.") and group(d) not in allowed[group(m)]]
    assert wrong == []
