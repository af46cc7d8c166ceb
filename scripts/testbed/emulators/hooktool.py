"""The Juju hook tools the emulated VCA answers (config-get, relation-get, action-set ...).

Juju's unit agent answers a hook's tool calls itself: each tool on the hook's PATH is a small
client (jujuc) that passes its arguments over a socket to the agent, which works on the model
it holds in memory. The emulation is built the same way: ``hookclient.py`` is the client,
``vca.Model`` serves the socket and calls ``run`` here on its in-memory state. Argument and
output formats are the ones the ``ops`` library uses. Nothing on PyPI offers these tools outside
a controller, so they are written here, small and strict: an unknown option is an error,
exactly as a misuse would be on Juju.

The relation tools answer through the hook's context (``hookcontext.HookContext``): writes are
buffered until the hook's commit, reads of other units go through the unit's settings cache,
``relation-list`` lists the unit's members. Without a context (a tool called outside any hook,
as the hook profile does) they read and write the model directly.
"""
import json
import re

import yaml

_RESERVED_ACTION_KEYS = ("stdout", "stdout-encoding", "stderr", "stderr-encoding")
_ACTION_KEY_PART = re.compile(r"^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$")


class ToolError(Exception):
    """The tool fails: ``message`` goes to its stderr, ``code`` is its exit status."""

    def __init__(self, message, code=1):
        super().__init__(message)
        self.code = code


def _opts(tool, args, flags=(), valued=()):
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
                    if i == len(args):
                        raise ToolError("{}: option {} needs a value".format(tool, name), 2)
                    value = args[i]
                opts[name] = value
            else:
                raise ToolError("{}: unknown option {}".format(tool, a), 2)
        else:
            pos.append(a)
        i += 1
    return opts, pos


def _bad_action_key(key):
    """Juju's rules for action-set keys: dotted parts of lower-case letters, digits and '-',
    starting and ending with a letter or digit; a few top-level keys are reserved."""
    if key.split(".")[0] in _RESERVED_ACTION_KEYS:
        return "cannot set reserved action key \"{}\"".format(key.split(".")[0])
    for part in key.split("."):
        if not _ACTION_KEY_PART.match(part):
            return "key \"{}\" must start and end with lowercase alphanumeric, and contain only lowercase " \
                   "alphanumeric, hyphens and periods".format(key)
    return None


class Call(object):
    """One tool call: the model state, the calling hook's unit and environment, the arguments."""

    def __init__(self, state, tool, args, env, stdin="", ctx=None):
        self.state, self.tool, self.args, self.env, self.stdin = state, tool, list(args), env, stdin
        self.ctx = ctx
        self.unit = env.get("JUJU_UNIT_NAME", "")
        if self.unit not in state["units"]:
            raise ToolError("{}: unknown unit {!r}".format(tool, self.unit), 2)
        self.app = self.unit.split("/")[0]
        self.me = state["units"][self.unit]
        self.stdout = []

    def opts(self, flags=(), valued=()):
        return _opts(self.tool, self.args, flags, valued)

    def emit(self, value):
        self.stdout.append(json.dumps(value) + "\n")

    def relation(self, opts):
        rid = str(opts.get("-r", self.env.get("JUJU_RELATION_ID", ""))).split(":")[-1]
        if rid not in self.state["relations"]:
            raise ToolError("ERROR relation not found", 2)
        return rid, self.state["relations"][rid]


def config_get(call):
    _opts_, pos = call.opts(flags=("--format", "--all", "-a"))
    call.emit(call.me["config"][pos[0]] if pos else call.me["config"])


def is_leader(call):
    call.opts(flags=("--format",))
    call.emit(bool(call.me["leader"]))


def relation_ids(call):
    _opts_, pos = call.opts(flags=("--format",))
    rels = sorted(call.state["relations"].items(), key=lambda x: int(x[0]))
    call.emit(["{}:{}".format(pos[0], rid) for rid, r in rels if [call.app, pos[0]] in r["endpoints"]])


def relation_list(call):
    opts, _pos = call.opts(flags=("--format", "--app"), valued=("-r",))
    rid, rel = call.relation(opts)
    remote_app = next(a for a, _ep in rel["endpoints"] if a != call.app) if len(rel["endpoints"]) > 1 else call.app
    if opts.get("--app"):
        call.emit(remote_app)
    elif call.ctx is not None:
        call.emit([u for u in call.ctx.member_names(rid) if u != call.unit])
    else:
        call.emit([u for u in rel["units"] if u.split("/")[0] == remote_app and u != call.unit])


def relation_get(call):
    opts, pos = call.opts(flags=("--format", "--app"), valued=("-r",))
    rid, rel = call.relation(opts)
    key = pos[0] if pos else "-"
    who = pos[1] if len(pos) > 1 else call.env.get("JUJU_REMOTE_UNIT", "")
    if opts.get("--app"):
        who = who.split("/")[0]
    if call.ctx is None:
        bag = rel["data"].get(who, {})
    elif who in (call.unit, call.app):
        bag = call.ctx.own(call.state["relations"], rid, who)
    else:
        bag = call.ctx.settings(call.state["relations"], rid, who)
    call.emit(bag if key == "-" else bag.get(key))


def relation_set(call):
    opts, pos = call.opts(flags=("--app", "--format"), valued=("-r", "--file"))
    rid, rel = call.relation(opts)
    if rel.get("broken"):
        raise ToolError("ERROR cannot write relation settings: relation {} is being removed".format(rid))
    if opts.get("--app") and not call.me["leader"]:
        raise ToolError("ERROR cannot write relation settings: unit is not leader")
    updates = {}
    if "--file" in opts:
        if opts["--file"] == "-":
            src = call.stdin
        else:
            with open(opts["--file"]) as f:
                src = f.read()
        updates.update(yaml.safe_load(src) or {})
    for item in pos:
        k, _, v = item.partition("=")
        updates[k] = v
    owner = call.app if opts.get("--app") else call.unit
    if call.ctx is not None:
        call.ctx.write(rid, owner, updates)     # flushed when the hook commits
        return
    bag = rel["data"].setdefault(owner, {})
    for k, v in updates.items():
        if v == "" or v is None:
            bag.pop(k, None)  # Juju: an empty value deletes the key
        else:
            bag[k] = str(v)


def status_set(call):
    opts, pos = call.opts(flags=("--application",))
    if not pos:
        raise ToolError("ERROR invalid status, expected one of maintenance, blocked, waiting, active", 2)
    target = "app_status" if opts.get("--application") in ("True", "true", True) else "status"
    message = pos[1] if len(pos) > 1 else ""
    call.me[target] = {"status": pos[0], "message": message}
    call.me.setdefault("status_history", []).append([pos[0], message])


def status_get(call):
    opts, _pos = call.opts(flags=("--format", "--include-data", "--application"))
    st = call.me.get("status", {"status": "unknown", "message": ""})
    if opts.get("--application") in ("True", "true", True):
        call.emit({"application-status": dict(st, **{"status-data": {}, "units": {}})})
    else:
        call.emit(dict(st, **{"status-data": {}}))


def action_get(call):
    call.opts(flags=("--format",))
    call.emit(call.me["action"]["params"])


def action_set(call):
    for item in call.args:
        k, _, v = item.partition("=")
        bad = _bad_action_key(k)
        if bad:
            raise ToolError("ERROR {}".format(bad), 2)
        call.me["action"]["results"][k] = v


def action_fail(call):
    call.me["action"]["failed"] = call.args[0] if call.args else "action failed"


def action_log(call):
    call.me["action"]["log"].append(" ".join(call.args))


def juju_log(call):
    opts, pos = call.opts(flags=("--debug",), valued=("--log-level", "-l"))
    level = opts.get("--log-level", opts.get("-l", "INFO"))
    call.me.setdefault("log", []).append([level, " ".join(pos)])


def application_version_set(call):
    call.me["workload_version"] = call.args[-1] if call.args else ""


def goal_state(call):
    call.emit({"units": {}, "relations": {}})


TOOLS = {
    "config-get": config_get, "is-leader": is_leader, "relation-ids": relation_ids, "relation-list": relation_list,
    "relation-get": relation_get, "relation-set": relation_set, "status-set": status_set, "status-get": status_get,
    "action-get": action_get, "action-set": action_set, "action-fail": action_fail, "action-log": action_log,
    "juju-log": juju_log, "application-version-set": application_version_set, "goal-state": goal_state,
}


def run(state, tool, args, env, stdin="", ctx=None):
    """Carry out one tool call on ``state`` in the hook context ``ctx`` (the caller holds the
    model's lock); returns (exit status, stdout, stderr) for the client to reproduce."""
    if tool not in TOOLS:
        return 1, "", "{}: not offered by the emulated VCA\n".format(tool)
    try:
        call = Call(state, tool, args, env, stdin, ctx)
        TOOLS[tool](call)
    except ToolError as e:
        return e.code, "", str(e) + "\n"
    except (LookupError, ValueError, TypeError, yaml.YAMLError, OSError) as e:
        # What Juju answers for a malformed call: an error on stderr, a non-zero status.
        return 1, "", "ERROR {}: {}\n".format(tool, e)
    return 0, "".join(call.stdout), ""
