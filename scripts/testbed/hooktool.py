#!/usr/bin/env python3
"""The Juju hook tools the emulated VCA offers (config-get, relation-get, action-set ...).

One program, installed under each tool's name; it acts on the model state file named by
VPNAAS_VCA_STATE for the unit in JUJU_UNIT_NAME, with the argument and output formats the
``ops`` library uses. Juju itself implements these in its unit agent; nothing on PyPI offers
them outside a controller, so they are written here, small and strict: an unknown option is
an error, exactly as a misuse would be on Juju.
"""
import fcntl
import json
import os
import sys


def _load():
    path = os.environ["VPNAAS_VCA_STATE"]
    fd = os.open(path + ".lock", os.O_CREAT | os.O_RDWR, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    with open(path) as f:
        return json.load(f), path, fd


def _save(state, path):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(state, f, indent=1, sort_keys=True)
    os.replace(tmp, path)


def _opts(args, flags=(), valued=()):
    """Split args into {option: value} and positionals; refuse unknown options."""
    opts, pos = {}, []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            pos.extend(args[i + 1:])
            break
        if a.startswith("-") and a != "-":
            name, eq, value = a.partition("=")
            if name in flags:
                opts[name] = value if eq else True
            elif name in valued:
                if not eq:
                    i += 1
                    value = args[i]
                opts[name] = value
            else:
                raise SystemExit("{}: unknown option {}".format(sys.argv[1], a))
        else:
            pos.append(a)
        i += 1
    return opts, pos


def _rel(state, rid):
    rid = str(rid).split(":")[-1]
    if rid not in state["relations"]:
        sys.stderr.write("ERROR relation not found\n")
        raise SystemExit(2)
    return rid, state["relations"][rid]


_RESERVED_ACTION_KEYS = ("stdout", "stdout-encoding", "stderr", "stderr-encoding")


def _bad_action_key(key):
    """Juju's rules for action-set keys: dotted parts of lower-case letters, digits and '-',
    starting and ending with a letter or digit; a few top-level keys are reserved."""
    import re
    if key.split(".")[0] in _RESERVED_ACTION_KEYS:
        return "cannot set reserved action key \"{}\"".format(key.split(".")[0])
    for part in key.split("."):
        if not re.match(r"^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$", part):
            return "key \"{}\" must start and end with lowercase alphanumeric, and contain only lowercase " \
                   "alphanumeric, hyphens and periods".format(key)
    return None


def _out(value):
    sys.stdout.write(json.dumps(value) + "\n")


def main():
    tool = sys.argv[1]
    args = sys.argv[2:]
    unit = os.environ["JUJU_UNIT_NAME"]
    app = unit.split("/")[0]
    state, path, _lock = _load()
    me = state["units"][unit]
    changed = False
    if tool == "config-get":
        opts, pos = _opts(args, flags=("--format", "--all", "-a"))
        _out(me["config"][pos[0]] if pos else me["config"])
    elif tool == "is-leader":
        _opts(args, flags=("--format",))
        _out(bool(me["leader"]))
    elif tool == "relation-ids":
        opts, pos = _opts(args, flags=("--format",))
        _out(["{}:{}".format(pos[0], rid) for rid, r in sorted(state["relations"].items(), key=lambda x: int(x[0]))
              if [app, pos[0]] in r["endpoints"]])
    elif tool == "relation-list":
        opts, pos = _opts(args, flags=("--format", "--app"), valued=("-r",))
        rid, rel = _rel(state, opts.get("-r", os.environ.get("JUJU_RELATION_ID", "")))
        remote_app = next(a for a, _ep in rel["endpoints"] if a != app) if len(rel["endpoints"]) > 1 else app
        if opts.get("--app"):
            _out(remote_app)
        else:
            _out([u for u in rel["units"] if u.split("/")[0] == remote_app and u != unit])
    elif tool == "relation-get":
        opts, pos = _opts(args, flags=("--format", "--app"), valued=("-r",))
        rid, rel = _rel(state, opts.get("-r", os.environ.get("JUJU_RELATION_ID", "")))
        key = pos[0] if pos else "-"
        who = pos[1] if len(pos) > 1 else os.environ.get("JUJU_REMOTE_UNIT", "")
        if opts.get("--app"):
            who = who.split("/")[0]
        bag = rel["data"].get(who, {})
        _out(bag if key == "-" else bag.get(key))
    elif tool == "relation-set":
        opts, pos = _opts(args, flags=("--app", "--format"), valued=("-r", "--file"))
        rid, rel = _rel(state, opts.get("-r", os.environ.get("JUJU_RELATION_ID", "")))
        owner = app if opts.get("--app") else unit
        if rel.get("broken"):
            sys.stderr.write("ERROR cannot write relation settings: relation {} is being removed\n".format(rid))
            raise SystemExit(1)
        if opts.get("--app") and not me["leader"]:
            sys.stderr.write("ERROR cannot write relation settings: unit is not leader\n")
            raise SystemExit(1)
        updates = {}
        if "--file" in opts:
            import yaml  # only here: it is the slowest import and most tools do not need it
            src = sys.stdin.read() if opts["--file"] == "-" else open(opts["--file"]).read()
            updates.update(yaml.safe_load(src) or {})
        for item in pos:
            k, _, v = item.partition("=")
            updates[k] = v
        bag = rel["data"].setdefault(owner, {})
        for k, v in updates.items():
            if v == "" or v is None:
                bag.pop(k, None)  # Juju: an empty value deletes the key
            else:
                bag[k] = str(v)
        changed = True
    elif tool == "status-set":
        opts, pos = _opts(args, flags=("--application",))
        target = "app_status" if opts.get("--application") in ("True", "true", True) else "status"
        me[target] = {"status": pos[0], "message": pos[1] if len(pos) > 1 else ""}
        me.setdefault("status_history", []).append([pos[0], pos[1] if len(pos) > 1 else ""])
        changed = True
    elif tool == "status-get":
        opts, pos = _opts(args, flags=("--format", "--include-data", "--application"))
        st = me.get("status", {"status": "unknown", "message": ""})
        if opts.get("--application") in ("True", "true", True):
            _out({"application-status": dict(st, **{"status-data": {}, "units": {}})})
        else:
            _out(dict(st, **{"status-data": {}}))
    elif tool == "action-get":
        _opts(args, flags=("--format",))
        _out(me["action"]["params"])
    elif tool == "action-set":
        for item in args:
            k, _, v = item.partition("=")
            bad = _bad_action_key(k)
            if bad:
                sys.stderr.write("ERROR {}\n".format(bad))
                raise SystemExit(2)
            me["action"]["results"][k] = v
        changed = True
    elif tool == "action-fail":
        me["action"]["failed"] = args[0] if args else "action failed"
        changed = True
    elif tool == "action-log":
        me["action"]["log"].append(" ".join(args))
        changed = True
    elif tool == "juju-log":
        opts, pos = _opts(args, flags=("--debug",), valued=("--log-level", "-l"))
        level = opts.get("--log-level", opts.get("-l", "INFO"))
        me.setdefault("log", []).append([level, " ".join(pos)])
        changed = True
    elif tool == "application-version-set":
        me["workload_version"] = args[-1] if args else ""
        changed = True
    elif tool == "goal-state":
        _out({"units": {}, "relations": {}})
    else:
        sys.stderr.write("{}: not offered by the emulated VCA\n".format(tool))
        raise SystemExit(1)
    if changed:
        _save(state, path)


if __name__ == "__main__":
    main()
