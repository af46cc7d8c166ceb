"""Why a unit's hooks ran: each hook of a converging star's hub (or of the EPS's units) by event,
remote unit, what queued it and what it did.

A relation-changed runs because the remote side committed a write that changed its databag
(Juju wakes the related units; writes made before the hook runs are one hook: the emulated VCA
records each write a hook covers, ``HookRun.causes``). So the hooks a spoke costs the hub follow
from how many of the spoke's hooks change what it publishes, and which of the hub's hooks can do
nothing (they end in the hook gate, before ops) follows from which fields changed. Counts, not
times: the machine's load does not change them.

    sudo PYTHONPATH=scripts:charms .venv/bin/python -m testbed.hookclass --sizes 8,32

With ``--eps`` it also gives the EPS's chain per unit from the last config primitive (``timeline``):
each hook and action with its outcome, and when each tunnel device first listed its peer, had a
handshake and a preshared key (read from the devices' UAPI sockets every 50 ms). ``--parallel 1``
is the demo's VCA (one VNF configured after another), the default the bench's (all at once).
"""
import collections
import json
import os
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time

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


#: The UAPI's answer for a preshared key that is not set (wireguard-go, boringtun: 32 zero bytes).
NO_PSK = "0" * 64


def uapi_state(text):
    """What a device's UAPI ``get=1`` answer says of the first peer's state: a peer listed, a
    handshake done, a preshared key set."""
    state = {"peer": False, "handshake": False, "psk": False}
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key == "public_key":
            state["peer"] = True
        elif key == "last_handshake_time_sec" and value not in ("", "0"):
            state["handshake"] = True
        elif key == "preshared_key" and value and value != NO_PSK:
            state["psk"] = True
    return state


def uapi_get(vnf, device, timeout=1.0):
    """The UAPI ``get=1`` answer of ``device`` on ``vnf`` ("" while its daemon does not listen).
    Read through the VNF's own root (its private /run/wireguard), with no process started, so
    that polling every 50 ms does not load the machine as `wg show` would; never a socket that
    does not listen yet (``Vnf.wg_show`` says why) and never deleted."""
    if not vnf.uapi_listening(device):
        return ""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect("/proc/{}/root/run/wireguard/{}.sock".format(vnf.ns_pid, device))
        sock.sendall(b"get=1\n\n")
        data = b""
        while not data.endswith(b"\n\n"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
        return data.decode(errors="replace")
    except OSError:
        return ""
    finally:
        sock.close()


class DeviceWatch(object):
    """Polls the tunnel devices of a testbed (every ``period`` s, in a thread of its own) and
    keeps, per (application, device), when it first listed a peer, had a handshake and had a
    preshared key (time.monotonic())."""

    def __init__(self, tb, devices, period=0.05):
        self.tb, self.devices, self.period = tb, list(devices), period
        self.events = {d: {} for d in self.devices}
        self.errors = collections.Counter()     # what a poll raised (a VNF going away), by type
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="device-watch", daemon=True)

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self):
        while not self._stop.wait(self.period):
            for app, dev in self.devices:
                seen = self.events[(app, dev)]
                vnf = self.tb.vnfs.get(app)
                if vnf is None or len(seen) == 3:
                    continue
                try:
                    state = uapi_state(uapi_get(vnf, dev))
                except Exception as e:      # noqa: BLE001 (a watch never stops the run it watches)
                    self.errors[type(e).__name__] += 1
                    continue
                now = time.monotonic()
                for what, on in state.items():
                    if on:
                        seen.setdefault(what, now)


def timeline(model, events, last=None):
    """Every unit's chain from the last config primitive (``last``: its time; default the model's
    last): its config, each hook and action with its outcome, and its devices' first peer,
    handshake and preshared key, in seconds from ``last`` (negative: before it)."""
    last = max(model.config_times) if last is None else last
    out = {}
    for app, t in model.config_apps:
        out[app + "/0"] = {"config": round(t - last, 3), "runs": [], "devices": {}}
    for r in model.hook_log:
        if r.unit in out and r.ended >= min(model.config_times):
            out[r.unit]["runs"].append([round(r.started - last, 3), round(r.ended - last, 3),
                                        r.hook.split("/", 1)[-1], r.remote, convergence.hook_kind(r)])
    for (app, dev), seen in events.items():
        if app + "/0" in out:
            out[app + "/0"]["devices"][dev] = {k: round(v - last, 3) for k, v in sorted(seen.items())}
    return out


def print_timeline(chain, stream=sys.stdout):
    stream.write("\nthe EPS's chain, seconds from the last config primitive (start-end kind):\n")
    for unit, c in sorted(chain.items(), key=lambda kv: kv[1]["config"]):
        stream.write("{} config {:+.2f}\n".format(unit, c["config"]))
        for start, end, hook, remote, kind in c["runs"]:
            stream.write("  {:+7.2f} {:+7.2f} {:<8} {}{}\n".format(start, end, kind, hook,
                                                                 " (" + remote + ")" if remote else ""))
        for dev, seen in sorted(c["devices"].items()):
            stream.write("  {} {}\n".format(dev, " ".join("{} {:+.2f}".format(k, v) for k, v in seen.items())))


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
            watch = []

            def on_testbed(tb, inst):
                devices = [(app, "wg-" + rp.name) for rp in inst.refpoints for app in (rp.provider, rp.requirer)]
                watch.append(DeviceWatch(tb, devices).start())

            def then(_tb, _inst, model):
                model.settle()
                watch[0].stop()
                first = min(model.config_times)
                units = sorted({r.unit for r in model.hook_log})
                return {"classes": {u: classify(model.hook_log, u, first) for u in units},
                        "sequences": {u: sequence(model.hook_log, u, first) for u in units},
                        "config_times": [round(t - first, 2) for t in model.config_times],
                        "timeline": timeline(model, watch[0].events)}
            try:
                rec = convergence.run_eps_once(runner, then=then, on_testbed=on_testbed)
            finally:
                for w in watch:
                    w.stop()
            then_ = rec.pop("then")
            result["eps"] = {"units": then_["classes"], "sequences": then_["sequences"],
                             "config_times": then_["config_times"], "timeline": then_["timeline"],
                             "seconds_after_last_config": rec["seconds_after_last_config"],
                             "hooks_after_first_config": rec["hooks_after_first_config"],
                             "sessions": rec["sessions"], "reconcile_sessions": rec["reconcile_sessions"],
                             "verify_sessions": rec["verify_sessions"]}
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
    if "eps" in result:
        print_timeline(result["eps"]["timeline"])
        print("EPS up {:.2f} s after the last config; {} reconcile + {} verify sessions by then".format(
            result["eps"]["seconds_after_last_config"], result["eps"]["reconcile_sessions"],
            result["eps"]["verify_sessions"]))
    path = os.path.join(args.out, "hookclass.json")
    with open(path, "w") as f:
        json.dump(result, f, indent=1, sort_keys=True)
    print("\nresults: {}".format(path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
