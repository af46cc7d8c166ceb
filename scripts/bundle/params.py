"""Instantiation-parameter templates (params/*.yaml) and their rendering.

The files in params/ are ns-create / nsi-create config files in which secrets and site-specific
names are ``${VAR}`` references, so that LTE keys never enter the repository. ``render`` fills
them from an environment. Substitution happens on the parsed YAML, not on the text, so a value
cannot inject YAML structure.
"""

import os
import re

from bundle import ROOT
from bundle.yamlfile import load_mapping

VAR_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class ParamsError(Exception):
    pass


def load(path):
    """Parse a params template without substituting anything."""
    return load_mapping(path if os.path.isabs(path) else os.path.join(ROOT, path), path, ParamsError)


def variables(data):
    """Every ${VAR} name used anywhere in ``data`` (keys included), sorted."""
    found = set()

    def walk(node):
        if isinstance(node, dict):
            for k, v in node.items():
                walk(k)
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)
        elif isinstance(node, str):
            found.update(VAR_RE.findall(node))

    walk(data)
    return sorted(found)


def substitute(data, env, where="params"):
    """Return a copy of ``data`` with every ${VAR} replaced from ``env``."""
    missing = [v for v in variables(data) if v not in env]
    if missing:
        raise ParamsError("{}: environment variable(s) not set: {}".format(where, ", ".join(missing)))

    def sub(text):
        return VAR_RE.sub(lambda m: str(env[m.group(1)]), text)

    def walk(node):
        if isinstance(node, dict):
            return {walk(k): walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        if isinstance(node, str):
            return sub(node)
        return node

    return walk(data)


def render(path, env=None):
    """Load params template ``path`` and substitute ${VAR} from ``env`` (default os.environ).

    Raises ParamsError naming the file and every missing variable; nothing is written.
    """
    if env is None:
        env = os.environ
    return substitute(load(path), env, where=path)


def dummy_env(data):
    """Plausible values for every variable, for validating templates without real secrets."""
    env = {}
    for name in variables(data):
        if name in ("LTE_K", "LTE_OP"):
            env[name] = "0" * 32
        else:
            env[name] = "dummy-" + name.lower().replace("_", "-")
    return env
