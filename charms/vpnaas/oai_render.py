"""The file renderer that runs ON the VNF (python3 of Ubuntu 18.04, i.e. Python 3.6).

OAI ships its configuration as templates with ``@TOKEN@`` placeholders inside the source tree,
which only exists on the VNF, so the rendering happens there. The charm sends a JSON spec on
stdin (never on a command line: it may hold the OP key). For each file the renderer applies
regular-expression edits (each one must match exactly as often as declared, so a changed template
fails loudly instead of being left half-configured), replaces the tokens, refuses any token left
over, optionally sets YAML keys, and writes the file whole and atomically -- only when its content
changed, printing ``CHANGED <path>`` so that the caller knows whether a restart is needed.
Interface names are resolved here too ({"iface_of": "<ip>"}), because OAI binds by interface.
"""

SOURCE = r'''
import json
import os
import re
import subprocess
import sys

TOKEN = re.compile(r"@[A-Za-z][A-Za-z0-9_-]*@")


def fail(msg):
    sys.stdout.write("ERROR " + msg + "\n")
    sys.exit(3)


def addresses():
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


def resolve(value, addrs):
    if isinstance(value, dict) and "iface_of" in value:
        ip = value["iface_of"]
        labels = [label for label, a in addrs if a == ip]
        if not labels:
            fail("address {} is not configured on any interface of this VNF (service addresses are put "
                 "on the dummy device by the tunnel reconcile; check the unit status)".format(ip))
        return labels[0]
    return str(value)


def shared(ip, addrs):
    """True when the interface holding ip carries other IPv4 addresses too (OAI "read" is ambiguous)."""
    labels = [label for label, a in addrs if a == ip]
    return bool(labels) and sum(1 for label, _ in addrs if label == labels[0]) > 1


def write(path, data, mode):
    try:
        with open(path, "rb") as f:
            if f.read() == data:
                st = os.stat(path)
                if st.st_mode & 0o777 != mode:
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


def set_yaml(text, settings, path):
    import yaml
    data = yaml.safe_load(text) or {}
    for key, value in sorted(settings.items()):
        if key == "seeds":
            try:
                data["seed_provider"][0]["parameters"][0]["seeds"] = value
            except (KeyError, IndexError, TypeError):
                fail("{}: no seed_provider[0].parameters[0].seeds to set".format(path))
        else:
            data[key] = value
    return yaml.safe_dump(data, default_flow_style=False)


def render(entry, addrs):
    path = entry["dst"]
    if "content" in entry:
        text = entry["content"]
    else:
        try:
            with open(entry["src"]) as f:
                text = f.read()
        except (IOError, OSError) as e:
            fail("template {} missing ({}); is oai-install complete?".format(entry["src"], e.strerror))
    for edit in entry.get("edits", []):
        unless = edit.get("required_if_shared")
        text, n = re.subn(edit["pattern"], edit["repl"], text, count=edit.get("count", 0))
        required = edit.get("required", True) if unless is None else shared(unless, addrs)
        if n == 0 and required:
            fail("{}: cannot set {} (the template changed: no match for {!r})".format(
                path, edit["what"], edit["pattern"]))
    for token, value in sorted(entry.get("tokens", {}).items()):
        text = text.replace(token, resolve(value, addrs))
    left = sorted(set(TOKEN.findall(text)))
    if left and entry.get("check_tokens", True):
        fail("{}: placeholders without a value: {}".format(path, " ".join(left)))
    if entry.get("yaml"):
        text = set_yaml(text, entry["yaml"], path)
    return text


def main():
    spec = json.load(sys.stdin)
    addrs = addresses()
    for entry in spec.get("files", []):
        data = render(entry, addrs).encode()
        if write(entry["dst"], data, int(entry.get("mode", "644"), 8)):
            sys.stdout.write("CHANGED {}\n".format(entry["dst"]))


main()
'''
