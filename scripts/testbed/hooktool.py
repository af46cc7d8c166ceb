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


class Context(object):
    """What every tool works on: the model state, this unit and its application."""

    def __init__(self, state, unit):
        self.state, self.unit = state, unit
        self.app = unit.split("/")[0]
        self.me = state["units"][unit]

    def relation(self, opts):
        return _rel(self.state, opts.get("-r", os.environ.get("JUJU_RELATION_ID", "")))


# Each tool: (ctx, args) -> True when it changed the state (then it is saved).


def config_get(ctx, args):
    _opts_, pos = _opts(args, flags=("--format", "--all", "-a"))
    _out(ctx.me["config"][pos[0]] if pos else ctx.me["config"])


def is_leader(ctx, args):
    _opts(args, flags=("--format",))
    _out(bool(ctx.me["leader"]))


def relation_ids(ctx, args):
    _opts_, pos = _opts(args, flags=("--format",))
    rels = sorted(ctx.state["relations"].items(), key=lambda x: int(x[0]))
    _out(["{}:{}".format(pos[0], rid) for rid, r in rels if [ctx.app, pos[0]] in r["endpoints"]])


def relation_list(ctx, args):
    opts, _pos = _opts(args, flags=("--format", "--app"), valued=("-r",))
    _rid, rel = ctx.relation(opts)
    remote_app = next(a for a, _ep in rel["endpoints"] if a != ctx.app) if len(rel["endpoints"]) > 1 else ctx.app
    if opts.get("--app"):
        _out(remote_app)
    else:
        _out([u for u in rel["units"] if u.split("/")[0] == remote_app and u != ctx.unit])


def relation_get(ctx, args):
    opts, pos = _opts(args, flags=("--format", "--app"), valued=("-r",))
    _rid, rel = ctx.relation(opts)
    key = pos[0] if pos else "-"
    who = pos[1] if len(pos) > 1 else os.environ.get("JUJU_REMOTE_UNIT", "")
    if opts.get("--app"):
        who = who.split("/")[0]
    bag = rel["data"].get(who, {})
    _out(bag if key == "-" else bag.get(key))


def relation_set(ctx, args):
    opts, pos = _opts(args, flags=("--app", "--format"), valued=("-r", "--file"))
    rid, rel = ctx.relation(opts)
    if rel.get("broken"):
        sys.stderr.write("ERROR cannot write relation settings: relation {} is being removed\n".format(rid))
        raise SystemExit(1)
    if opts.get("--app") and not ctx.me["leader"]:
        sys.stderr.write("ERROR cannot write relation settings: unit is not leader\n")
        raise SystemExit(1)
    updates = {}
    if "--file" in opts:
        # Only here: it is the slowest import and most tools do not need it (they run without site).
        sys.path.insert(0, os.environ.get("VPNAAS_YAML_DIR", ""))
        import yaml
        src = sys.stdin.read() if opts["--file"] == "-" else open(opts["--file"]).read()
        updates.update(yaml.safe_load(src) or {})
    for item in pos:
        k, _, v = item.partition("=")
        updates[k] = v
    bag = rel["data"].setdefault(ctx.app if opts.get("--app") else ctx.unit, {})
    for k, v in updates.items():
        if v == "" or v is None:
            bag.pop(k, None)  # Juju: an empty value deletes the key
        else:
            bag[k] = str(v)
    return True


def status_set(ctx, args):
    opts, pos = _opts(args, flags=("--application",))
    target = "app_status" if opts.get("--application") in ("True", "true", True) else "status"
    message = pos[1] if len(pos) > 1 else ""
    ctx.me[target] = {"status": pos[0], "message": message}
    ctx.me.setdefault("status_history", []).append([pos[0], message])
    return True


def status_get(ctx, args):
    opts, _pos = _opts(args, flags=("--format", "--include-data", "--application"))
    st = ctx.me.get("status", {"status": "unknown", "message": ""})
    if opts.get("--application") in ("True", "true", True):
        _out({"application-status": dict(st, **{"status-data": {}, "units": {}})})
    else:
        _out(dict(st, **{"status-data": {}}))


def action_get(ctx, args):
    _opts(args, flags=("--format",))
    _out(ctx.me["action"]["params"])


def action_set(ctx, args):
    for item in args:
        k, _, v = item.partition("=")
        bad = _bad_action_key(k)
        if bad:
            sys.stderr.write("ERROR {}\n".format(bad))
            raise SystemExit(2)
        ctx.me["action"]["results"][k] = v
    return True


def action_fail(ctx, args):
    ctx.me["action"]["failed"] = args[0] if args else "action failed"
    return True


def action_log(ctx, args):
    ctx.me["action"]["log"].append(" ".join(args))
    return True


def juju_log(ctx, args):
    opts, pos = _opts(args, flags=("--debug",), valued=("--log-level", "-l"))
    level = opts.get("--log-level", opts.get("-l", "INFO"))
    ctx.me.setdefault("log", []).append([level, " ".join(pos)])
    return True


def application_version_set(ctx, args):
    ctx.me["workload_version"] = args[-1] if args else ""
    return True


def goal_state(ctx, args):
    _out({"units": {}, "relations": {}})


TOOLS = {
    "config-get": config_get, "is-leader": is_leader, "relation-ids": relation_ids, "relation-list": relation_list,
    "relation-get": relation_get, "relation-set": relation_set, "status-set": status_set, "status-get": status_get,
    "action-get": action_get, "action-set": action_set, "action-fail": action_fail, "action-log": action_log,
    "juju-log": juju_log, "application-version-set": application_version_set, "goal-state": goal_state,
}


def main():
    tool, args = sys.argv[1], sys.argv[2:]
    if tool not in TOOLS:
        sys.stderr.write("{}: not offered by the emulated VCA\n".format(tool))
        raise SystemExit(1)
    state, path, _lock = _load()
    if TOOLS[tool](Context(state, os.environ["JUJU_UNIT_NAME"]), args):
        _save(state, path)


if __name__ == "__main__":
    main()
