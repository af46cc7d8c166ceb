"""The shared package's import graph (TYPE_CHECKING imports included): no circle, and the data
model at the bottom floor, importing nothing that computes with it."""
import ast
import os

PACKAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                       "charms", "vpnaas")
MODULES = sorted(n[:-3] for n in os.listdir(PACKAGE) if n.endswith(".py") and n != "__init__.py")


def imports_of(module):
    with open(os.path.join(PACKAGE, module + ".py")) as f:
        tree = ast.parse(f.read())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "vpnaas":
            out |= {a.name for a in node.names if a.name in MODULES}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("vpnaas."):
            out.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            out |= {a.name.split(".")[1] for a in node.names if a.name.startswith("vpnaas.")}
    return out - {module}


GRAPH = {m: imports_of(m) for m in MODULES}


def test_the_graph_was_read():
    assert {"plan", "policy"} <= GRAPH["charm_base"] and "model" in GRAPH["plan"]


def test_no_module_reaches_itself():
    circles = []
    for start in MODULES:
        seen, todo = set(), list(GRAPH[start])
        while todo:
            m = todo.pop()
            if m == start:
                circles.append(start)
                break
            if m not in seen:
                seen.add(m)
                todo += GRAPH.get(m, ())
    assert circles == []


def test_the_model_imports_nothing_that_computes_with_it():
    def closure(m, acc):
        for d in GRAPH[m]:
            if d not in acc:
                acc.add(d)
                closure(d, acc)
        return acc
    assert closure("model", set()) <= {"config", "instance", "refpoints", "registry", "validation", "facts"}
