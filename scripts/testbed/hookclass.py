"""Why a unit's hooks ran: each hook of a converging star's hub (or of the EPS's units) by event,
remote unit, what queued it and what it did.

A relation-changed runs because the remote side committed a write that changed its databag
(Juju wakes the related units; writes made before the hook runs are one hook: the emulated VCA
records each write a hook covers, ``HookRun.causes``). So the hooks a spoke costs the hub follow
from how many of the spoke's hooks change what it publishes, and which of the hub's hooks can do
nothing (they end in the hook gate, before ops) follows from which fields changed. Counts, not
times: the machine's load does not change them.

    sudo PYTHONPATH=scripts:charms .venv/bin/python -m testbed.hookclass --sizes 8,32
"""
import collections
import json
import os
import shutil
import signal
import sys
import tempfile

from bundle import BUILD_DIR, build_charms
from testbed import cli, convergence
from testbed.emulators import vim

_KINDS = ("created", "joined", "changed", "departed", "broken")


def event_of(run):
    """"changed", "joined" ... for a relation hook, else the hook's own name."""
    m = convergence._RELATION_HOOK.match(run.hook)
    return m.group("kind") if m else run.hook.split("/", 1)[-1]


def cause_of(run):
    """What queued a relation-changed: the remote side's writes it covers, as "<writer's hook>:
    <changed keys>" joined by " + " ("joined": the hook Juju runs after relation-joined, which
    covers what the remote wrote before it)."""
    parts = []
    for _writer, hook, keys in run.causes:
        parts.append(hook.split("/", 1)[-1] + (":" + ",".join(keys) if keys else ""))
    return " + ".join(parts) or "-"


def classify(runs, unit, since=0.0):
    """The hooks of ``unit`` that started at or after ``since`` (time.monotonic()), by (event,
    outcome), by cause (relation-changed), per remote unit; and the writes of the remote units
    that changed what ``unit`` reads (each one a relation-changed unless coalesced)."""
    mine = [r for r in runs if r.unit == unit and r.started >= since]
    by_event = collections.Counter((event_of(r), convergence.hook_kind(r)) for r in mine)
    by_cause = collections.Counter((cause_of(r), convergence.hook_kind(r)) for r in mine if event_of(r) == "changed")
    per_remote = collections.Counter(r.remote for r in mine if r.remote)
    writes = collections.Counter(r.remote for r in mine for c in r.causes if c[1] != "joined")
    remotes = max(len(per_remote), 1)
    return {
        "hooks": len(mine),
        "sessions": sum(1 for r in mine if convergence.hook_kind(r) == "session"),
        "gate": sum(1 for r in mine if convergence.hook_kind(r) == "gate"),
        "remote_units": len(per_remote),
        "hooks_per_remote_unit": sum(per_remote.values()) / float(remotes),
        "remote_writes_per_remote_unit": sum(writes.values()) / float(remotes),
        "by_event": {"{} {}".format(e, k): n for (e, k), n in sorted(by_event.items())},
        "changed_by_cause": {"{} -> {}".format(c, k): n for (c, k), n in sorted(by_cause.items())},
    }


def spokes(runs, since, hub="hub/0"):
    """Every spoke's hooks that started at or after ``since``, by (event, outcome), per spoke."""
    mine = [r for r in runs if r.unit != hub and r.started >= since]
    count = max(len({r.unit for r in runs if r.unit != hub}), 1)
    by_event = collections.Counter((event_of(r), convergence.hook_kind(r)) for r in mine)
    return {"spokes": count, "hooks_per_spoke": len(mine) / float(count),
            "sessions_per_spoke": sum(1 for r in mine if convergence.hook_kind(r) == "session") / float(count),
            "by_event_per_spoke": {"{} {}".format(e, k): round(n / float(count), 3)
                                   for (e, k), n in sorted(by_event.items())}}


def star_record(model, hub="hub/0"):
    """What the bench keeps of a converged star (``model``, a convergence.BenchModel): why the
    hub's and the spokes' hooks ran after the first config, and the spread of the configs."""
    first = min(model.config_times)
    return {"hub_hook_classes": classify(model.hook_log, hub, first),
            "spoke_hook_classes": spokes(model.hook_log, first, hub),
            "seconds_config_spread": max(model.config_times) - first}


def sequence(runs, unit, since):
    """``unit``'s hooks in the order they ran: seconds from ``since`` (start, end), event, remote
    unit, outcome, cause."""
    return [[round(r.started - since, 2), round(r.ended - since, 2), event_of(r), r.remote, convergence.hook_kind(r),
             cause_of(r)] for r in runs if r.unit == unit]


def print_classes(label, c, stream=sys.stdout):
    stream.write("\n{}: {} hooks ({} sessions, {} ended in the gate); {} remote units, {:.2f} hooks and {:.2f} "
                 "remote writes per remote unit\n".format(label, c["hooks"], c["sessions"], c["gate"],
                                                          c["remote_units"], c["hooks_per_remote_unit"],
                                                          c["remote_writes_per_remote_unit"]))
    for name, n in c["by_event"].items():
        stream.write("  {:>5}  {}\n".format(n, name))
    stream.write("  relation-changed by cause (the remote's hook: keys it changed -> outcome):\n")
    for name, n in c["changed_by_cause"].items():
        stream.write("  {:>5}  {}\n".format(n, name))


def run(args, progress):
    work = tempfile.mkdtemp(prefix="work-", dir=args.out)
    runner = convergence.Runner(args.charms or build_charms.output_dir("local"), work, vim.userspace_wireguard(),
                                args.parallel, progress)
    result = {"command": "python -m testbed.hookclass " + " ".join(args.argv), "sizes": {}}
    try:
        for k in args.sizes:
            star = convergence.Star(runner, k)
            try:
                rec = star.up()
                star.model.settle()
                first = min(star.model.config_times)
                result["sizes"][str(k)] = {
                    "until_up": {m: rec[m] for m in ("hub_hooks", "hooks_after_first_config", "sessions",
                                                     "reconcile_sessions", "seconds_after_first_config")},
                    "hub_after_first_config": classify(star.model.hook_log, "hub/0", first),
                    "hub_all": classify(star.model.hook_log, "hub/0"),
                    "spoke_all": classify(star.model.hook_log, "s1/0"),
                    "spokes_after_first_config": spokes(star.model.hook_log, first),
                    "hub_sequence": sequence(star.model.hook_log, "hub/0", first),
                    "config_times": [round(t - first, 2) for t in star.model.config_times],
                }
            finally:
                star.down()
        if args.eps:
            def then(_tb, _inst, model):
                model.settle()
                first = min(model.config_times)
                units = sorted({r.unit for r in model.hook_log})
                return {"classes": {u: classify(model.hook_log, u, first) for u in units},
                        "sequences": {u: sequence(model.hook_log, u, first) for u in units},
                        "config_times": [round(t - first, 2) for t in model.config_times]}
            rec = convergence.run_eps_once(runner, then=then)
            then_ = rec.pop("then")
            result["eps"] = {"units": then_["classes"], "sequences": then_["sequences"],
                             "config_times": then_["config_times"],
                             "seconds_after_last_config": rec["seconds_after_last_config"],
                             "hooks_after_first_config": rec["hooks_after_first_config"],
                             "sessions": rec["sessions"]}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return result


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    p = cli.OneLineParser(prog="testbed.hookclass", description="Why the hub's hooks ran, by cause (root).")
    p.add_argument("--sizes", default="8", help="star sizes (tunnels, 1-250; default 8; empty: none)")
    p.add_argument("--eps", action="store_true", help="also the EPS (eps_wg), every unit after the first config")
    p.add_argument("--parallel", type=cli.hook_slots, default=0,
                   help="units whose hooks the emulated VCA runs at the same time (default 0: no bound, as "
                   "Juju under OSM: a machine and a machine lock per proxy charm unit; 1: one at a time)")
    p.add_argument("--out", default=os.path.join(BUILD_DIR, "hookclass"), help="output directory")
    p.add_argument("--charms", default="", help="built charms to run (default: build/charms-local; another "
                                                "checkout's, for an A/B of the charms with this emulation)")
    args = p.parse_args(argv)
    args.sizes = cli.parse_list(p, "--sizes", args.sizes, convert=cli.positive_int) if args.sizes else []
    if any(k > 250 for k in args.sizes):
        p.error("--sizes: at most 250 tunnels (one /24 link)")
    cli.check_out_dir(p, args.out)
    args.out, args.argv = os.path.abspath(args.out), list(argv)
    args.charms = os.path.abspath(args.charms) if args.charms else ""
    if os.geteuid() != 0:
        print("testbed.hookclass needs root (network namespaces)", file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    from testbed import demo
    signal.signal(signal.SIGTERM, cli.terminate)
    try:
        result = run(args, demo.Progress())
    except KeyboardInterrupt:
        print("interrupted; everything was torn down", file=sys.stderr)
        return 130
    for k, entry in result["sizes"].items():
        print_classes("hub, star of {}, after the first config".format(k), entry["hub_after_first_config"])
        print_classes("hub, star of {}, all".format(k), entry["hub_all"])
        print_classes("spoke s1/0, star of {}, all".format(k), entry["spoke_all"])
        sp = entry["spokes_after_first_config"]
        print("\nevery spoke of the star of {} after the first config: {:.2f} hooks, {:.2f} sessions per spoke".format(
            k, sp["hooks_per_spoke"], sp["sessions_per_spoke"]))
        for name, n in sp["by_event_per_spoke"].items():
            print("  {:>6.3f}  {}".format(n, name))
    for unit, c in sorted(result.get("eps", {}).get("units", {}).items()):
        print_classes("EPS {} after the first config".format(unit), c)
    path = os.path.join(args.out, "hookclass.json")
    with open(path, "w") as f:
        json.dump(result, f, indent=1, sort_keys=True)
    print("\nresults: {}".format(path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
