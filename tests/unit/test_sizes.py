"""The size limits of the code (docs/architecture.md): no module over 450 lines and no function
over 80 in charms/ and scripts/, so that each stays readable at one sitting."""
import ast
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MAX_MODULE_LINES = 450
MAX_FUNCTION_LINES = 80


def python_files():
    for top in ("charms", "scripts"):
        for folder, dirs, files in os.walk(os.path.join(ROOT, top)):
            dirs[:] = [d for d in dirs if d not in ("__pycache__", "venv")]
            for name in files:
                if name.endswith(".py"):
                    yield os.path.join(folder, name)


def test_the_limits_hold():
    files = list(python_files())
    assert len(files) > 50
    too_long = []
    for path in files:
        with open(path) as f:
            text = f.read()
        rel = os.path.relpath(path, ROOT)
        lines = text.count("\n")
        if lines > MAX_MODULE_LINES:
            too_long.append("{}: {} lines".format(rel, lines))
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    too_long.append("{}:{} {}(): {} lines".format(rel, node.lineno, node.name, length))
    assert too_long == []
