"""The size of the code, as docs/architecture.md ("Where code goes") asks: a function over 80
lines fails (it is two steps that want names of their own); a module over 450 lines only warns
(a hint to look for a second concept in it: modules split by concept, never by length)."""
import ast
import os
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
#: Above this a module gets a warning, never a failure.
MODULE_LINES_HINT = 450
MAX_FUNCTION_LINES = 80


def python_files():
    for top in ("charms", "scripts"):
        for folder, dirs, files in os.walk(os.path.join(ROOT, top)):
            dirs[:] = [d for d in dirs if d not in ("__pycache__", "venv")]
            for name in files:
                if name.endswith(".py"):
                    yield os.path.join(folder, name)


def sizes(paths):
    """(long modules, long functions) of ``paths``, each a list of "path: N lines"."""
    modules, functions = [], []
    for path in paths:
        with open(path) as f:
            text = f.read()
        rel = os.path.relpath(path, ROOT)
        lines = text.count("\n")
        if lines > MODULE_LINES_HINT:
            modules.append("{}: {} lines".format(rel, lines))
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    functions.append("{}:{} {}(): {} lines".format(rel, node.lineno, node.name, length))
    return modules, functions


def test_no_function_is_over_the_limit_and_long_modules_are_named():
    files = list(python_files())
    assert len(files) > 50
    long_modules, long_functions = sizes(files)
    for entry in long_modules:
        warnings.warn("size hint: {} (over {}: does it hold a second concept? docs/architecture.md)".format(
            entry, MODULE_LINES_HINT), stacklevel=1)
    assert long_functions == []


def test_a_long_module_is_a_hint_and_a_long_function_a_failure(tmp_path):
    body = "".join("    x{} = {}\n".format(i, i) for i in range(MAX_FUNCTION_LINES))
    long_function = tmp_path / "long_function.py"
    long_function.write_text("def f():\n" + body)
    long_module = tmp_path / "long_module.py"
    long_module.write_text("".join("x{} = {}\n".format(i, i) for i in range(MODULE_LINES_HINT + 1)))
    modules, functions = sizes([str(long_function), str(long_module)])
    assert [m.rsplit("/", 1)[-1] for m in modules] == ["long_module.py: 451 lines"]
    assert [f.rsplit("/", 1)[-1] for f in functions] == ["long_function.py:1 f(): 81 lines"]
