"""Where a hook's time goes: interpreter start, ``import ops``, paramiko, an SSH connection; and
a hub's relation hook by phase.

From the hook log of the convergence runs (hooks that opened an SSH session and hooks that
did not) and from timing each piece alone. With ``VPNAAS_HOOK_PROFILE`` set, every charm run
records its phases (``vpnaas.core.hookclock``) and the VNF-side step its functions' times; the
functions below join those records to the emulated VCA's hook log (duration, hook-tool calls by
tool) by the hook's context id.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from bundle import BUILD_DIR, build_charms
from testbed import cli, convergence
from testbed.emulators import toolserver, vca, vim
from testbed.measurement import benchstats
from vpnaas.core import hookclock


def _timed(argv, cwd=None, env=None, repeat=3):
    """Median wall time of running argv ``repeat`` times."""
    times = []
    for _ in range(repeat):
        t0 = time.monotonic()
        subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.monotonic() - t0)
    return benchstats.summarize(times)["median"]


def _tool_call_seconds(workdir):
    """One hook tool call as a hook makes it: the client's start and the round trip to the
    model (a model without units answers "unknown unit": the same path, the same cost)."""
    with vca.Model(os.path.join(workdir, "vca-profile")) as model:
        env = dict(os.environ, VPNAAS_VCA_SOCKET=model.socket_path, JUJU_UNIT_NAME="profile/0")
        return _timed([os.path.join(model.bin, "is-leader")], env=env, repeat=10)


SSH_PROBE = r"""
import sys, time
t0 = time.monotonic()
import paramiko
t1 = time.monotonic()
c = paramiko.SSHClient(); c.set_missing_host_key_policy(paramiko.AutoAddPolicy())
c.connect(sys.argv[1], username="root", key_filename=sys.argv[2], timeout=10, allow_agent=False, look_for_keys=False)
t2 = time.monotonic()
_, out, _ = c.exec_command("true"); out.channel.recv_exit_status()
t3 = time.monotonic(); tr = c.get_transport(); c.close(); tr.join(5)   # as ssh.Session closes
print(t1 - t0, t2 - t1, t3 - t2)
"""


def profile_hooks(runner, records):
    """Where a hook's time goes: interpreter start, ops import, paramiko import, SSH connect and
    the remote script (the remainder), from the hook log and from timing each piece alone."""
    charm = os.path.join(runner.charms_dir, "wireguard-proxy")
    env = dict(toolserver.hook_base_env(os.environ), PYTHONPATH="lib:venv")   # as the hooks ran
    out = {"python_start_s": _timed([sys.executable, "-c", "pass"]),
           "python_import_ops_s": _timed([sys.executable, "-c", "import ops.main"], cwd=charm, env=env),
           "python_import_ops_charm_s": _timed([sys.executable, "-c", "import ops.main, vpnaas.charm.base"],
                                               cwd=charm, env=env),
           "python_import_paramiko_s": _timed([sys.executable, "-c", "import paramiko"], cwd=charm, env=env),
           "hook_tool_call_s": _tool_call_seconds(runner.workdir)}
    by_kind = {"gate": [], "charm": [], "session": [], "verify": []}
    for rec in records:
        for took, kind in zip(rec["hook_seconds"], rec["hook_kinds"]):
            by_kind[kind].append(took)
    out["hook_in_gate_s"] = benchstats.summarize(by_kind["gate"])
    out["hook_without_ssh_s"] = benchstats.summarize(by_kind["charm"])
    out["hook_verify_login_s"] = benchstats.summarize(by_kind["verify"])
    out["hook_with_ssh_s"] = benchstats.summarize(by_kind["session"])
    out.update(_ssh_timing(charm, runner))
    wo, w = out["hook_without_ssh_s"]["median"], out["hook_with_ssh_s"]["median"]
    if wo is not None and w is not None and out.get("ssh_connect_s") is not None:
        out["remote_script_and_rest_s"] = w - wo - out["ssh_connect_s"] - out["python_import_paramiko_s"]
    return out


def _ssh_timing(charm, runner):
    """paramiko connect + auth and one command to a fresh VNF (same path the charm takes)."""
    tb = runner.testbed("tb-profile")
    try:
        vnf = tb.add_vnf("p")
        key = os.path.join(runner.workdir, "profile_key")
        for path in (key, key + ".pub"):
            if os.path.exists(path):
                os.remove(path)
        vim.sh(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key])
        tb.authorize(vnf, open(key + ".pub").read())
        samples = []
        for _ in range(3):
            proc = vim.sh(tb.runner() + [sys.executable, "-c", SSH_PROBE, vnf.mgmt_ip, key], cwd=charm,
                          env=dict(toolserver.hook_base_env(os.environ), PYTHONPATH="lib:venv"), timeout=60)
            samples.append([float(x) for x in proc.stdout.split()])
        med = [benchstats.summarize([s[i] for s in samples])["median"] for i in range(3)]
        return {"ssh_connect_s": med[1], "ssh_exec_true_s": med[2]}
    finally:
        tb.teardown()


# --------------------------------------------------------------------------- a hub hook by phase

#: The phases a profiled charm run reports (hookclock.py), in the order a hook goes through them:
#: "startup" is the hook's time before the charm's clock started (the interpreter, importing ops),
#: "imports" the charm's own modules, "ops" what ops does around the handler (restoring the event:
#: a relation-list per relation of the endpoint; committing), "charm" the handler's own code outside
#: the other phases, "charm other" what the clock saw outside every phase.
PHASES = ("startup", "imports", "ops", "charm", "reads", "plan", "policy", "rotation", "render", "ssh_login",
          "ssh_step", "vnf", "report_parse", "publish", "relation_cache", "charm_other")


def load_records(directory):
    """{JUJU_CONTEXT_ID: record} of every profiled charm run in ``directory`` (hookclock.dump)."""
    out = {}
    for name in sorted(os.listdir(directory)) if os.path.isdir(directory) else []:
        if not name.endswith(".jsonl"):
            continue
        with open(os.path.join(directory, name)) as f:
            for line in f:
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if isinstance(rec, dict) and rec.get("context"):
                    out[rec["context"]] = rec
    return out


def hook_phases(run, record):
    """One hook run's seconds per phase: the charm's record, the VNF-side time taken out of the SSH
    step (``vnf``), and the time before the charm started (the hook's duration minus the record's)."""
    phases = dict.fromkeys(PHASES, 0.0)
    phases["startup"] = max(0.0, run.seconds - record["total"])
    for name, seconds in record["phases"].items():
        key = name if name in phases else "charm_other"
        phases[key] += seconds
    vnf = sum(record.get("vnf", {}).values())
    phases["vnf"] = min(vnf, phases["ssh_step"])
    phases["ssh_step"] -= phases["vnf"]
    phases["charm_other"] += max(0.0, record["total"] - sum(record["phases"].values()))
    return phases


def profiled_runs(hook_log, records, unit, kinds=("session", "charm")):
    """(run, record) of ``unit``'s relation hooks that ran the charm and were profiled."""
    return [(r, records[r.context]) for r in hook_log
            if r.unit == unit and r.relation != "" and r.context in records and convergence.hook_kind(r) in kinds]


def phase_summary(pairs):
    """Medians over hook runs ((run, record) pairs; record None: a run that ended in the hook gate,
    all of it "startup"): seconds per phase, per VNF-side function, hook-tool calls by tool and in
    all, the charm's counters, and the hook's duration."""
    def med(values):
        return benchstats.summarize(values)["median"]
    pairs = [(run, rec or {"total": 0.0, "phases": {}}) for run, rec in pairs]
    phases = [hook_phases(run, rec) for run, rec in pairs]
    tools = sorted({t for run, _ in pairs for t in run.tools})
    funcs = sorted({f for _, rec in pairs for f in rec.get("vnf", {})})
    counts = sorted({c for _, rec in pairs for c in rec.get("counts", {})})
    return {"n": len(pairs), "hook_seconds": med([run.seconds for run, _ in pairs]),
            "phases": {p: med([ph[p] for ph in phases]) for p in PHASES},
            "vnf_functions": {f: med([rec.get("vnf", {}).get(f, 0.0) for _, rec in pairs]) for f in funcs},
            "tool_calls": med([run.tool_calls for run, _ in pairs]),
            "tools": {t: med([run.tools.get(t, 0) for run, _ in pairs]) for t in tools},
            "counts": {c: med([rec.get("counts", {}).get(c, 0) for _, rec in pairs]) for c in counts}}


def growth_table(by_size, small, big, stream=sys.stdout):
    """Print each phase's median at two sizes and its growth."""
    a, b = by_size.get(small), by_size.get(big)
    if not a or not b or not a["n"] or not b["n"]:
        return
    rows = []
    sections = [("phases", PHASES)] + [(s, sorted(set(a[s]) | set(b[s]))) for s in ("vnf_functions", "tools")]
    for section, keys in sections:
        for k in keys:
            x, y = a[section].get(k), b[section].get(k)
            digits = 0 if section == "tools" else 3
            rows.append(["{} {}".format(section.replace("_", " "), k), benchstats.fmt(x, digits),
                         benchstats.fmt(y, digits), benchstats.fmt(benchstats.ratio(y, x), 2)])
    for key in ("hook_seconds", "tool_calls"):
        rows.append([key.replace("_", " "), benchstats.fmt(a[key]), benchstats.fmt(b[key]),
                     benchstats.fmt(benchstats.ratio(b[key], a[key]), 2)])
    stream.write(benchstats.table(("median", str(small), str(big), "{}/{}".format(big, small)), rows) + "\n")


# --------------------------------------------------------------------------- the profiler mode

#: What is done to a converged star, and which of the hub's hooks it profiles: a spoke's data
#: changes (its relation-changed on the hub opens a session), a relation-changed whose data did
#: not change, and update-status (the full check).
OPERATIONS = ("changed", "unchanged", "update-status")
_SPOKE_ADDRESSES = ("172.17.1.1/32", "172.17.1.1/32,172.17.2.1/32")


def operate(model, op, i):
    """Do ``op`` (round ``i``) on a converged star; returns the hub's hook runs it caused."""
    start = len(model.hook_log)
    if op == "changed":
        model.set_config("s1", {"vpn-peer-service-addresses": _SPOKE_ADDRESSES[(i + 1) % 2]})
    elif op == "unchanged":
        rid = model._relations_of("s1/0")[0]
        model.run_hook("hub/0", "vpn", "relation-changed", rid=rid, remote="s1/0")
        model.settle()
    else:
        model.update_status(["hub/0"])
    return [r for r in model.hook_log[start:] if r.unit == "hub/0"]


def run_profile(args, progress):
    records_dir = os.path.join(args.out, "records")
    os.makedirs(records_dir, exist_ok=True)
    for name in os.listdir(records_dir):
        os.remove(os.path.join(records_dir, name))
    os.environ[hookclock.ENV] = records_dir     # every hook of the testbeds below is profiled
    work = tempfile.mkdtemp(prefix="work-", dir=args.out)
    runner = convergence.Runner(build_charms.output_dir("local"), work, vim.userspace_wireguard(), args.parallel,
                                progress)
    stars, result = {}, {"command": "python -m testbed.hookprofile " + " ".join(args.argv), "sizes": {}}
    try:
        for k in args.sizes:
            stars[k] = convergence.Star(runner, k)
            rec = stars[k].up()
            progress(convergence.conv_line("star of {} tunnels".format(k), rec))
            result["sizes"][str(k)] = {"instantiation": {m: rec[m] for m in convergence.CONV_METRICS if m in rec},
                                       "runs": {op: [] for op in OPERATIONS}}
        for i in range(args.rounds):
            for k in args.sizes:
                for op in OPERATIONS:
                    result["sizes"][str(k)]["runs"][op] += [r.context for r in operate(stars[k].model, op, i)]
            progress("round {}/{} done".format(i + 1, args.rounds))
        records = load_records(records_dir)
        for k in args.sizes:
            log = stars[k].model.hook_log
            by_context = {r.context: r for r in log}
            entry = result["sizes"][str(k)]
            # The hub's relation hooks that opened a session while the star came up (its real workload).
            entry["instantiation_hooks"] = phase_summary(profiled_runs(log, records, "hub/0", ("session",)))
            entry["operations"] = {op: phase_summary([(by_context[c], records.get(c)) for c in entry["runs"][op]
                                                      if c in by_context])
                                   for op in OPERATIONS}
    finally:
        for star in stars.values():
            star.down()
        shutil.rmtree(work, ignore_errors=True)
    return result


def print_profile(result, sizes, stream=sys.stdout):
    if len(sizes) < 2:
        return
    small, big = sizes[0], sizes[-1]
    per = result["sizes"]
    stream.write("\nThe hub's relation hooks that opened a session while the star came up\n")
    growth_table({k: per[str(k)]["instantiation_hooks"] for k in sizes}, small, big, stream)
    for op in OPERATIONS:
        stream.write("\nThe hub's hooks for: {}\n".format(op))
        growth_table({k: per[str(k)]["operations"][op] for k in sizes}, small, big, stream)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    p = cli.OneLineParser(prog="testbed.hookprofile",
                          description="A hub's relation hooks by phase at two or more star sizes (root).")
    p.add_argument("--sizes", default="8,32", help="star sizes (tunnels, 1-250; default 8,32)")
    p.add_argument("--rounds", type=cli.positive_int, default=5, help="rounds of each operation (default 5)")
    p.add_argument("--parallel", type=cli.hook_slots, default=0,
                   help="units whose hooks the emulated VCA runs at the same time (default 0: no bound, as "
                   "Juju under OSM: a machine and a machine lock per proxy charm unit; 1: one at a time)")
    p.add_argument("--out", default=os.path.join(BUILD_DIR, "hookprofile"), help="output directory")
    args = p.parse_args(argv)
    args.sizes = cli.parse_list(p, "--sizes", args.sizes, convert=cli.positive_int)
    if any(k > 250 for k in args.sizes):
        p.error("--sizes: at most 250 tunnels (one /24 link)")
    cli.check_out_dir(p, args.out)
    args.out, args.argv = os.path.abspath(args.out), list(argv)
    if os.geteuid() != 0:
        print("testbed.hookprofile needs root (network namespaces)", file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    from testbed import demo
    signal.signal(signal.SIGTERM, cli.terminate)     # torn down like the bench, also on SIGTERM
    try:
        result = run_profile(args, demo.Progress())
    except KeyboardInterrupt:
        print("interrupted; everything was torn down", file=sys.stderr)
        return 130
    result["load_average"] = os.getloadavg()
    path = os.path.join(args.out, "hookprofile.json")
    with open(path, "w") as f:
        json.dump(result, f, indent=1, sort_keys=True)
    print_profile(result, args.sizes)
    print("\nresults: {}".format(path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
