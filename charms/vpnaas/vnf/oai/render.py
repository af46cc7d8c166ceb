"""Renders OAI's configuration templates on the VNF (python3 of Ubuntu 18.04, i.e. Python 3.6).

OAI ships its configuration as templates with ``@TOKEN@`` placeholders inside the source tree,
which only exists on the VNF, so the rendering happens there. The charm sends a JSON spec on stdin
(never on a command line: it may hold the OP key); ``NAME=value`` arguments are values only known
on the VNF (the SGi interface), used where the spec says ``{"var": "NAME"}``.

For each file: regular-expression edits, each of which must match exactly as often as declared
(a changed template fails loudly instead of being left half-configured); then the tokens, each of
which must exist in the template (a substitution for a placeholder that is not there would be
silently ignored); then no placeholder may be left over; optional YAML settings; the file is
written whole and atomically, only when its content changed, and ``CHANGED <path>`` is printed so
that the caller knows whether a restart is needed. Interface names are resolved here too
(``{"iface_of": "<ip>"}``), because OAI binds by interface name.

Also imported by the conformance check (scripts/oai_conformance), which renders the real
templates with ``render_text`` and a fixed address table.
"""
import json
import os
import re
import subprocess
import sys
from typing import Any, Dict, List, Tuple

TOKEN = re.compile(r"@[A-Za-z][A-Za-z0-9_-]*@")
#: (interface label, IPv4 address) of every address on the VNF.
Addresses = List[Tuple[str, str]]
#: One object of the spec (a file entry, an edit): JSON from the charm, so its values are whatever
#: the charm sent (the module docstring describes the fields).
Entry = Dict[str, Any]


class RenderError(Exception):
    pass


def addresses() -> Addresses:
    """[(label, ip)] of every IPv4 address; the label is the name getifaddrs() reports."""
    text = subprocess.check_output(["ip", "-o", "-4", "addr", "show"]).decode()
    out = []
    for line in text.splitlines():
        words = line.replace("\\", " ").split()
        if len(words) < 4 or words[2] != "inet":
            continue
        dev = words[1].split("@")[0]
        label = next((w for w in words[4:] if w == dev or w.startswith(dev + ":")), dev)
        out.append((label, words[3].split("/")[0]))
    return out


def resolve(value: Any, addrs: Addresses, variables: Dict[str, str]) -> str:
    if isinstance(value, dict) and "iface_of" in value:
        ip = value["iface_of"]
        labels = [label for label, a in addrs if a == ip]
        if not labels:
            raise RenderError(
                "address {} is not configured on any interface of this VNF (service addresses are put "
                "on the dummy device by the tunnel reconcile; check the unit status)".format(ip))
        return labels[0]
    if isinstance(value, dict) and "var" in value:
        if value["var"] not in variables:
            raise RenderError("no value for {} on the command line".format(value["var"]))
        return variables[value["var"]]
    return str(value)


def shared(ip: str, addrs: Addresses) -> bool:
    """True when the interface holding ip carries other IPv4 addresses too (OAI "read" is ambiguous)."""
    labels = [label for label, a in addrs if a == ip]
    return bool(labels) and sum(1 for label, _ in addrs if label == labels[0]) > 1


def set_yaml(text: str, settings: Dict[str, Any], path: str) -> str:
    import yaml
    data = yaml.safe_load(text) or {}
    for key, value in sorted(settings.items()):
        if key == "seeds":
            try:
                data["seed_provider"][0]["parameters"][0]["seeds"] = value
            except (KeyError, IndexError, TypeError):
                raise RenderError("{}: no seed_provider[0].parameters[0].seeds to set".format(path)) from None
        else:
            data[key] = value
    return yaml.safe_dump(data, default_flow_style=False)


def edit_flags(edit: Entry) -> int:
    """``"flags": "s"``: ``.`` also matches a line break (an edit confined to one block)."""
    return re.S if "s" in edit.get("flags", "") else 0


def render_text(entry: Entry, text: str, addrs: Addresses, variables: Dict[str, str]) -> str:
    """The rendered text of one spec entry from its template ``text``; raises RenderError."""
    path = entry["dst"]
    for edit in entry.get("edits", []):
        unless = edit.get("required_if_shared")
        text, n = re.subn(edit["pattern"], edit["repl"], text, count=edit.get("count", 0), flags=edit_flags(edit))
        required = edit.get("required", True) if unless is None else shared(unless, addrs)
        if n == 0 and required:
            raise RenderError("{}: cannot set {} (the template changed: no match for {!r})".format(
                path, edit["what"], edit["pattern"]))
    tokens = entry.get("tokens", {})
    absent = sorted(t for t in tokens if t not in text)
    if absent:
        raise RenderError("{}: the template has no placeholder {} (the template changed; nothing was "
                          "written)".format(path, " ".join(absent)))
    for token, value in sorted(tokens.items()):
        text = text.replace(token, resolve(value, addrs, variables))
    left = sorted(set(TOKEN.findall(text)))
    if left and entry.get("check_tokens", True):
        raise RenderError("{}: placeholders without a value: {}".format(path, " ".join(left)))
    if entry.get("yaml"):
        text = set_yaml(text, entry["yaml"], path)
    return text


def read_template(entry: Entry) -> str:
    if "content" in entry:
        return entry["content"]
    try:
        with open(entry["src"]) as f:
            return f.read()
    except (IOError, OSError) as e:
        raise RenderError("template {} missing ({}); is oai-install complete?".format(
            entry["src"], e.strerror)) from None


def write(path: str, data: bytes, mode: int) -> bool:
    try:
        with open(path, "rb") as f:
            if f.read() == data:
                if os.stat(path).st_mode & 0o777 != mode:
                    os.chmod(path, mode)
                return False
    except (IOError, OSError):
        pass
    d = os.path.dirname(path)
    if not os.path.isdir(d):
        os.makedirs(d, 0o755)
    tmp = path + ".vpnaas-tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(tmp, mode)
    os.rename(tmp, path)
    return True


def main(argv: List[str]) -> int:
    variables = dict(a.split("=", 1) for a in argv if "=" in a)
    spec = json.load(sys.stdin)
    addrs = addresses()
    try:
        # Everything is rendered before anything is written: one bad template changes nothing.
        rendered = [(e, render_text(e, read_template(e), addrs, variables)) for e in spec.get("files", [])]
    except RenderError as e:
        sys.stdout.write("ERROR {}\n".format(e))
        return 3
    for entry, text in rendered:
        if write(entry["dst"], text.encode(), int(entry.get("mode", "644"), 8)):
            sys.stdout.write("CHANGED {}\n".format(entry["dst"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
