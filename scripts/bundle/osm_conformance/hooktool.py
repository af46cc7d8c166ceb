"""The hook-tool command lines our own charm code runs (the hook gate, before ops) through Juju's
own hook-tool commands, and Juju's answers through the gate's own parsing.

    make hooktool-conformance JUJU_SRC="<juju tree> ..."
    python -m bundle.osm_conformance.hooktool --juju-src <tree> [--juju-src <tree> ...]

ops runs its hook tools itself; the gate (charms/vpnaas/charm/hookgate.py) runs ``relation-ids``,
``relation-list``, ``relation-get``, ``config-get`` and ``action-set`` by hand, and until this
check those lines were judged only by the emulated VCA. Nothing else under charms/ runs a hook
tool.

The corpus is captured, not written down: the gate's own functions run (``answered`` on a real
key file; ``_members``, ``_databag``, ``_ssh_hostname`` and the ``config-get --all`` call of a
config-changed) with ``subprocess.run`` replaced by a recorder answering from a fixture at the
largest values the gate's grammar accepts (63-character endpoint and application names, 9-digit
relation ids and unit numbers, ``relation_cache.MAX_MEMBERS`` related units, the longest public
key line ``hookgate._PUBLIC_KEY`` takes, every option of every charm's config.yaml with a large
value). Each recorded argv carries the hook context it ran in (relation hook, config-changed,
action).

Our driver, hooktool_parse.go beside this file, is built from inside each Juju tree and runs
per line what the unit agent runs for a tool call: ``jujuc.NewCommand``, gnuflag parse, the
command's ``Init`` and ``Run`` against a stub Context holding the same fixture. Then the gate's
functions run again with every tool call answered by Juju's own stdout for that line, and must
read back the fixture (the members, the data bags, the options, the key). Control lines that Juju
must refuse run first, so a driver that accepts everything cannot pass.
"""
import argparse
import glob
import hashlib
import json
import os
import string
import subprocess
import sys
import tempfile
from contextlib import contextmanager

DRIVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hooktool_parse.go")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
WORK_DIR = os.path.join("build", "osm-conformance")
#: Relation ids and unit numbers: the most digits hookgate's grammar takes.
LARGEST_ID = 999999999


def _longest(pattern, value):
    if not pattern.fullmatch(value) or pattern.fullmatch(value + "z"):
        raise AssertionError("{!r} is not the longest value {} accepts".format(value, pattern.pattern))
    return value


def largest_values():
    """(endpoint, unit, public key): the longest the gate's grammar accepts (the endpoint and
    application also valid Juju names: no all-digit segment, no trailing hyphen)."""
    import re

    from vpnaas.charm import hookgate
    name = "z" + "-a0b" * 15 + "-b"                                   # 63
    endpoint = _longest(re.compile(hookgate._HOOK.pattern.split("-relation-")[0].replace("hooks/", "")), name)
    unit = name + "/" + str(LARGEST_ID)
    if not hookgate._UNIT.fullmatch(unit) or hookgate._UNIT.fullmatch(unit + "0"):
        raise AssertionError("{!r} is not the longest unit name".format(unit))
    printable = "".join(chr(c) for c in range(0x21, 0x7f))
    comment = (printable * 3)[:200]
    blob = (string.ascii_letters + string.digits + "+/") * 15 + "A" * 40       # 1000
    key = "ssh-" + "z0-" * 13 + "e" + " " + blob + "== " + comment
    if not hookgate._PUBLIC_KEY.fullmatch(key):
        raise AssertionError("the largest key line is not one the gate takes")
    return endpoint, unit, key


def largest_config():
    """Every option of every charm's config.yaml, with a large value of its type (strings carry
    every kind of character JSON must escape)."""
    import yaml
    text = "".join(chr(c) for c in range(0x20, 0x7f)) + "\"\\\t\n\u00e9\u4e2d\U0001f510"
    out = {}
    for path in sorted(glob.glob(os.path.join(ROOT, "charms", "*", "config.yaml"))):
        with open(path) as f:
            options = (yaml.safe_load(f) or {}).get("options") or {}
        for name, spec in options.items():
            kind = (spec or {}).get("type", "string")
            out[name] = {"int": 2 ** 63 - 1, "float": 1.7976931348623157e308, "boolean": True}.get(kind, text * 40)
    out["ssh-hostname"] = "h" * 253
    return out


def fixture():
    """The unit's world: this unit, one relation of the endpoint with MAX_MEMBERS units (each with
    a data bag), one with none, and the config."""
    from vpnaas.charm import relation_cache
    endpoint, unit, _key = largest_values()
    app = unit.split("/")[0]
    me = "m" + app[1:] + "/" + str(LARGEST_ID)       # this unit: another application, as long
    units = ["{}/{}".format(app, LARGEST_ID - i) for i in range(relation_cache.MAX_MEMBERS)]
    bag = {"public-key": "k" * 44 + "=", "endpoint": "[fd00::1]:65535", "note": "\"\\\n\u00e9" * 64}
    # The remote application's bag (the mirror: relation_data) under its name, beside its units'.
    full = {"id": LARGEST_ID, "name": endpoint, "units": units,
            "settings": dict({u: dict(bag, unit=u) for u in units},
                             **{me: dict(bag, unit=me), app: dict(bag, app=app)})}
    empty = {"id": LARGEST_ID - 1, "name": endpoint, "units": [], "settings": {}}
    return {"unit": me, "relations": [full, empty], "config": largest_config()}


def _model_answer(fx, argv):
    """What the recorder answers (only so that the gate goes on and makes its next call; Juju's own
    answers are judged in the replay)."""
    tool, args = argv[0], [a for a in argv[1:] if a != "--format=json"]
    rels = {r["id"]: r for r in fx["relations"]}
    if tool == "relation-ids":
        return sorted("{}:{}".format(r["name"], r["id"]) for r in fx["relations"] if r["name"] == args[0])
    if tool == "relation-list":
        return rels[int(args[1].rsplit(":", 1)[-1])]["units"]
    if tool == "relation-get":
        args = [a for a in args if a != "--app"]      # an application's bag is kept under its name
        return rels[int(args[1])]["settings"].get(args[3], {})
    if tool == "config-get":
        return fx["config"] if args == ["--all"] else fx["config"].get(args[0])
    return None


@contextmanager
def _tools(answer):
    """subprocess.run in the gate answered by ``answer(argv) -> (returncode, stdout)``."""
    from vpnaas.charm import hookgate
    real = hookgate.subprocess.run

    def fake(argv, **_kw):
        code, out = answer(list(argv))
        return subprocess.CompletedProcess(argv, code, out, "")
    hookgate.subprocess.run = fake
    try:
        yield
    finally:
        hookgate.subprocess.run = real


def _scenarios(fx, scratch):
    """[(context, call, expected)]: each gate function as a hook runs it, and what it must read.
    Context: {"hook_relation": id or None, "remote_unit": name or ""}. The unit's charm and state
    directories are made under ``scratch``."""
    from vpnaas.charm import hookgate, relation_cache
    endpoint, unit, key = largest_values()
    full = fx["relations"][0]
    remote = full["units"][0]
    rel_hook = {"hook_relation": full["id"], "remote_unit": remote}
    none = {"hook_relation": None, "remote_unit": ""}
    in_order = sorted(fx["relations"], key=lambda r: "{}:{}".format(r["name"], r["id"]))   # relation-ids sorts
    members = [relation_cache.slot(r["id"], u) for r in in_order for u in r["units"]]
    charm_dir = os.path.join(scratch, "unit", "charm")
    os.makedirs(charm_dir)
    from vpnaas.core import unitstate
    state = unitstate.unit_state_dir(charm_dir)
    os.makedirs(state, exist_ok=True)
    for name, text in ((unitstate.KEY_FILE, "private"), (unitstate.KEY_FILE + ".pub", key + "\n")):
        with open(os.path.join(state, name), "w") as f:
            f.write(text)
    action_env = {"JUJU_DISPATCH_PATH": "actions/get-ssh-public-key", "JUJU_CHARM_DIR": charm_dir}
    # The cache a charm run that ended normally leaves for this world (every member's data, this
    # unit's own on the relation, the config and key digest): the whole gate then ends both hooks.
    fields = sorted(full["settings"][remote])
    remote_app = remote.split("/")[0]
    app_fields = sorted(full["settings"][remote_app])
    salt = "5a17"
    relation_cache.save(state, relation_cache.make(
        [endpoint], fields, "fp-1", {relation_cache.slot(full["id"], u): full["settings"][u] for u in full["units"]},
        fields, {full["id"]: full["settings"][fx["unit"]]}, written=[full["id"]],
        config=relation_cache.config_digest(salt, fx["config"], key), salt=salt, members=members,
        apps={str(full["id"]): relation_cache.digest(full["settings"][remote_app], app_fields)}, app_fields=app_fields))
    relation_cache.promote(state)
    hook_env = {"JUJU_CHARM_DIR": charm_dir, "JUJU_UNIT_NAME": fx["unit"]}
    changed_env = dict(hook_env, JUJU_DISPATCH_PATH="hooks/{}-relation-changed".format(endpoint),
                       JUJU_RELATION=endpoint, JUJU_RELATION_ID="{}:{}".format(endpoint, full["id"]),
                       JUJU_REMOTE_UNIT=remote)
    # An application-data relation-changed: JUJU_REMOTE_APP, no JUJU_REMOTE_UNIT.
    app_env = dict(changed_env, JUJU_REMOTE_APP=remote_app)
    del app_env["JUJU_REMOTE_UNIT"]
    app_hook = {"hook_relation": full["id"], "remote_unit": ""}
    config_env = dict(hook_env, JUJU_DISPATCH_PATH="hooks/config-changed")
    return [
        ("relation-changed: the whole gate ends the hook", rel_hook, lambda: hookgate.nothing_to_do(changed_env), True),
        ("config-changed: the whole gate ends the hook", none, lambda: hookgate.nothing_to_do(config_env), True),
        ("application relation-changed: the whole gate ends the hook", app_hook,
         lambda: hookgate.nothing_to_do(app_env), True),
        ("application relation-changed: the remote application's data", app_hook,
         lambda: hookgate._app_databag(full["id"], remote_app), full["settings"][remote_app]),
        ("action get-ssh-public-key", none, lambda: hookgate.answered(action_env), True),
        ("relation hook: remote unit's data", rel_hook, lambda: hookgate._databag(full["id"], remote),
         full["settings"][remote]),
        ("relation hook: own data", rel_hook, lambda: hookgate._databag(full["id"], fx["unit"]),
         full["settings"][fx["unit"]]),
        ("relation hook: ssh-hostname", rel_hook, hookgate._ssh_hostname, fx["config"]["ssh-hostname"]),
        ("config-changed: members", none, lambda: hookgate._members([endpoint]), members),
        ("config-changed: own data", none, lambda: hookgate._databag(full["id"], fx["unit"]),
         full["settings"][fx["unit"]]),
        # The line _config_nothing_to_do's config() runs, and what it hands config_digest.
        ("config-changed: every option", none, lambda: hookgate._tool("config-get", "--all"), fx["config"]),
    ]


def unset_fixture():
    """The same world with every option unset (no value, no default): `config-get --all` then
    answers null for each, and `config-get ssh-hostname` null."""
    fx = fixture()
    fx["config"] = {k: None for k in fx["config"]}
    return fx


def build_corpus(fx=None):
    """{"fixture", "lines": [{"argv", "hook_relation", "remote_unit", "scenario"}]}: every
    hook-tool line the gate's functions ran in ``fx`` (default: the largest values; in order,
    duplicates kept once per context)."""
    fx = fixture() if fx is None else fx
    lines, seen = [], set()
    with tempfile.TemporaryDirectory(prefix="hooktool-") as scratch:
        _record_all(fx, scratch, lines, seen)
    return {"fixture": fx, "lines": lines}


def _record_all(fx, scratch, lines, seen):
    for name, context, call, _expected in _scenarios(fx, scratch):
        def record(argv, context=context, name=name):
            tag = json.dumps([argv, context], sort_keys=True)
            if tag not in seen:
                seen.add(tag)
                lines.append(dict(context, argv=argv, scenario=name))
            return 0, json.dumps(_model_answer(fx, argv))
        with _tools(record):
            call()


def hook_tool_calls(root=ROOT):
    """{(path, line): tool}: every call under charms/ (ops excepted) of ``_tool`` or a
    ``subprocess`` function whose command is a literal naming a hook tool of the emulated VCA's
    list (what the corpus must cover; a new direct call shows up here)."""
    import ast

    from testbed.emulators.toolserver import HOOK_TOOLS
    out = {}
    for path in sorted(glob.glob(os.path.join(root, "charms", "**", "*.py"), recursive=True)):
        rel = os.path.relpath(path, root)
        if "/lib/" in rel or "/ops/" in rel:
            continue
        with open(path) as f:
            tree = ast.parse(f.read())
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            first = node.args[0]
            if isinstance(first, (ast.List, ast.Tuple)) and first.elts:
                first = first.elts[0]
            value = getattr(first, "value", getattr(first, "s", None))
            if isinstance(value, str) and value in HOOK_TOOLS:
                out[(rel, node.lineno)] = value
    return out


def controls(fx):
    """Lines Juju must refuse in the fixture's world."""
    me = fx["unit"]
    return [
        {"argv": ["relation-get", "-r", "123", "-", me], "hook_relation": None, "remote_unit": ""},   # no such relation
        {"argv": ["relation-get", "-r", "x", "-", me], "hook_relation": None, "remote_unit": ""},     # invalid id
        {"argv": ["relation-get", "-", me], "hook_relation": None, "remote_unit": ""},                # no relation id
        {"argv": ["relation-list", "--bogus"], "hook_relation": None, "remote_unit": ""},             # undefined flag
        {"argv": ["relation-ids"], "hook_relation": None, "remote_unit": ""},                         # no name
        {"argv": ["config-get", "--all", "ssh-hostname"], "hook_relation": None, "remote_unit": ""},  # --all and key
        {"argv": ["action-set", "stdout=x"], "hook_relation": None, "remote_unit": ""},               # reserved key
        {"argv": ["action-set", "PubKey=x"], "hook_relation": None, "remote_unit": ""},               # invalid key
        {"argv": ["no-such-tool"], "hook_relation": None, "remote_unit": ""},
    ]


def replay(corpus, results):
    """[(scenario, ok, detail)]: the gate's functions with every tool call answered by Juju's own
    stdout for that line (a line Juju refused, or one not in the corpus, fails the call)."""
    fx = corpus["fixture"]
    by_line = {}
    for line, r in zip(corpus["lines"], results):
        by_line[json.dumps([line["argv"], {"hook_relation": line["hook_relation"], "remote_unit": line["remote_unit"]}],
                           sort_keys=True)] = r
    with tempfile.TemporaryDirectory(prefix="hooktool-") as scratch:
        return _replay_all(fx, scratch, by_line)


def _replay_all(fx, scratch, by_line):
    out = []
    for name, context, call, expected in _scenarios(fx, scratch):
        missing = []

        def answer(argv, context=context, missing=missing):
            r = by_line.get(json.dumps([argv, context], sort_keys=True))
            if r is None:
                missing.append(argv)
                return 1, ""
            return (0, r["stdout"]) if r["ok"] else (1, "")
        with _tools(answer):
            got = call()
        if missing:
            out.append((name, False, "the gate ran a line not in the corpus: {}".format(_short(missing[0]))))
        elif got != expected:
            out.append((name, False, "the gate read {} from Juju's answer".format(_short(got))))
        else:
            out.append((name, True, "read back"))
    return out


def _short(value, limit=160):
    text = value if isinstance(value, str) else json.dumps(value, default=lambda _o: "<a failed tool call>")
    return text if len(text) <= limit else text[:limit] + "...({} chars)".format(len(text))


def check_tree(juju_src):
    with open(os.path.join(juju_src, "go.mod")) as f:
        if f.readline().split() != ["module", "github.com/juju/juju"]:
            raise ValueError("{}: go.mod is not github.com/juju/juju's".format(juju_src))
    if not os.path.isfile(os.path.join(juju_src, "worker", "uniter", "runner", "jujuc", "server.go")):
        raise ValueError("{}: no worker/uniter/runner/jujuc/server.go".format(juju_src))


def build_driver(juju_src, work_dir):
    check_tree(juju_src)
    with open(DRIVER, "rb") as f:
        key = hashlib.sha256(os.path.realpath(juju_src).encode() + b"\0" + f.read()).hexdigest()[:16]
    binary = os.path.join(os.path.abspath(work_dir), "hooktool-parse-" + key)
    if not os.path.isfile(binary):
        print("hooktool-conformance: building hooktool_parse.go against {} (go build, once)".format(juju_src),
              flush=True)
        env = dict(os.environ, GOFLAGS="-mod=readonly")
        subprocess.run(["nice", "-n", "10", "go", "build", "-o", binary + ".tmp", DRIVER], cwd=juju_src, env=env,
                       check=True, stdin=subprocess.DEVNULL)
        os.replace(binary + ".tmp", binary)
    return binary


def run_driver(binary, fx, lines, work_dir, tag):
    corpus_path = os.path.join(work_dir, "corpus-hooktool-{}.json".format(tag))
    result_path = os.path.join(work_dir, "hooktool-{}.json".format(tag))
    with open(corpus_path, "w") as f:
        json.dump({"fixture": fx, "lines": [{k: line[k] for k in ("argv", "hook_relation", "remote_unit")}
                                            for line in lines]}, f)
    subprocess.run([binary, "--corpus", corpus_path, "--out", result_path], check=True, stdin=subprocess.DEVNULL)
    with open(result_path) as f:
        return json.load(f)


def report(version, source, corpus, doc, control_doc, label="largest values"):
    """(text, ok) of one tree's run over one fixture."""
    lines = ["Juju {} ({}), {}: {} hook-tool lines of the hook gate".format(version, source, label,
                                                                          len(corpus["lines"]))]
    ok = True
    per_tool = {}
    for line, r in zip(corpus["lines"], doc["results"]):
        tool = line["argv"][0]
        per_tool.setdefault(tool, [0, 0])[0 if r["ok"] else 1] += 1
        verdict = "accepted" if r["ok"] else "REFUSED at {}: {}".format(r["stage"], r["message"])
        ok = ok and r["ok"]
        lines.append("  [{}] {}: {}".format(line["scenario"], _short(" ".join(line["argv"]), 120), verdict))
    lines.append("per tool: " + ", ".join("{} {} accepted, {} refused".format(t, a, b)
                                          for t, (a, b) in sorted(per_tool.items())))
    refused = [r for r in control_doc["results"] if not r["ok"]]
    lines.append("controls: {} of {} refused by Juju".format(len(refused), len(control_doc["results"])))
    for line, r in zip(controls(corpus["fixture"]), control_doc["results"]):
        verdict = "refused: " + r["message"] if not r["ok"] else "ACCEPTED"
        lines.append("  control {}: {}".format(" ".join(line["argv"]), verdict))
    ok = ok and len(refused) == len(control_doc["results"])
    _endpoint, _unit, key = largest_values()
    for line, r in zip(corpus["lines"], doc["results"]):
        if line["argv"][0] == "action-set" and r["ok"]:
            good = r.get("action_results") == {"pubkey": [key]}
            ok = ok and good
            lines.append("  action results Juju recorded: {}".format(
                "the public key under pubkey" if good else "FAILED: " + _short(r.get("action_results"))))
    for name, good, detail in replay(corpus, doc["results"]):
        ok = ok and good
        lines.append("  gate on Juju's answer, {}: {}".format(name, detail if good else "FAILED: " + detail))
    return "\n".join(lines), ok


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--juju-src", action="append", default=[], help="a github.com/juju/juju source tree (repeatable)")
    args = ap.parse_args(argv)
    if not args.juju_src:
        print("not run: no Juju source tree (give JUJU_SRC=<dir>; see docs/bundle.md)")
        return 2
    os.makedirs(WORK_DIR, exist_ok=True)
    corpora = (("largest values", build_corpus()), ("every option unset", build_corpus(unset_fixture())))
    texts, ok = [], True
    for juju_src in args.juju_src:
        binary = build_driver(juju_src, WORK_DIR)
        tag = hashlib.sha256(binary.encode()).hexdigest()[:8]
        for n, (label, corpus) in enumerate(corpora):
            fx = corpus["fixture"]
            control_doc = run_driver(binary, fx, controls(fx), WORK_DIR, "{}-{}-controls".format(tag, n))
            doc = run_driver(binary, fx, corpus["lines"], WORK_DIR, "{}-{}".format(tag, n))
            text, good = report(doc["versions"]["juju"], os.path.basename(os.path.normpath(juju_src)), corpus, doc,
                                control_doc, label)
            texts.append(text)
            ok = ok and good
    text = "\n\n".join(texts)
    print(text)
    with open(os.path.join(WORK_DIR, "hooktool-report.txt"), "w") as f:
        f.write(text + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
