"""`make bench`: the VPNaaS core measured against its own limit, a peer VPN, and scale.

Parts (``--only``):
  dataplane   two VNFs with the generic charm; the charms' tunnel beside a bare wireguard-go
              pair, a bare boringtun pair, OpenVPN (AES-256-GCM, CHACHA20-POLY1305) and the
              plain link, interleaved rounds (dataplane.py, tunnels.py)
  interfaces  the EPS's five interfaces: charms' tunnel vs bare wireguard-go pair vs plain link;
              then the charms' tunnel again on every other implementation (``<rp>-implementation``
              set on both ends, the device re-created): added RTT and throughput per
              implementation per interface
  control     instantiations of the real EPS NS: convergence, hook runs, SSH sessions
  synthetic   hub-and-spoke topologies of 2, 8 and 32 tunnels: how convergence grows, each hub
              relation hook by phase (hookprofile.py), and on the first 8-tunnel star, 8 more
              spokes joining while an existing one pings the hub (spokejoin.py)
followed by a profile of a hook (hookprofile.py). Writes bench.json, summary.json and
bench.png into ``--out`` and prints the tables (benchreport.py). Everything is torn down, also
on Ctrl-C, SIGTERM or failure; only the work directory this run created is removed.
"""
import os
import shutil
import signal
import socket
import sys
import tempfile
import time

from bundle import BUILD_DIR, build_charms
from testbed import cli, convergence, dataplane, demo, hookclass, hookprofile, pair, pqcost, spokejoin, tunnels
from testbed.emulators import lcm, nsmodel, vca, vim
from testbed.measurement import benchreport, loadcheck, traffic
from vpnaas.core import hookclock

OUT_DIR = os.path.join(BUILD_DIR, "bench")
SIZES = (2, 8, 32)
PARTS = ("dataplane", "interfaces", "control", "synthetic")
PAIR_PATHS = ("plain", "wg-bare", "charm", "boringtun", "ovpn-aes", "ovpn-chacha")
SETTINGS = ("rounds", "seconds", "pings", "if_rounds", "if_seconds", "if_pings", "impl_rounds", "max_other_load",
            "retries", "parallel", "big", "big_runs", "implementation", "charm_implementations", "join")
#: The star size whose first run gets the spoke-join probe (the smallest one measured if absent).
JOIN_SIZE = 8
#: A file in the work directory naming this tool: only such a directory is ever removed.
WORK_MARKER = ".vpnaas-bench-work"


class BenchError(Exception):
    pass


#: Ids of the testbeds this process created (the teardown check looks at these only).
CREATED = []


# --------------------------------------------------------------------------- data plane


def _pair_paths(tb, extras, charm_pids):
    a, b = tb.vnfs["a"], tb.vnfs["b"]
    paths = {"plain": dataplane.Path("plain", "plain link", a, b, a.address(pair.LINK), b.address(pair.LINK),
                                     dataplane.ALL_TESTS),
             "charm": dataplane.Path("charm", "charms' tunnel", a, b, pair.A_SVC, pair.B_SVC, dataplane.ALL_TESTS,
                                     charm_pids)}
    for name, x in extras.items():
        tests = ("tcp1", "tcp4", "ping") if name == "wg-bare" else ("tcp1", "ping")
        paths[name] = dataplane.Path(name, x.label, a, b, x.addresses[0], x.addresses[1], tests, x.pids)
    return [paths[n] for n in PAIR_PATHS if n in paths]


def run_pair(runner, settings, want, progress):
    """The charms' pair and the hand-made tunnels beside it, measured in interleaved rounds."""
    tb = runner.testbed("tb-dataplane")
    try:
        model = runner.model(tb, "dataplane")
        lcm.instantiate(tb, model, {pair.LINK: pair.CIDR}, list(pair.specs(runner.charms_dir)), [pair.RELATION])
        a, b = tb.vnfs["a"], tb.vnfs["b"]
        handshakes = [(a, "wg-vpn", 1), (b, "wg-vpn-peer", 1)]
        convergence.wait_handshakes(handshakes)
        mtu = dataplane.device_mtu(a, "wg-vpn")
        with tunnels.Pki() as pki:
            extras = dataplane.extra_pairs(a, b, a.address(pair.LINK), b.address(pair.LINK), mtu, runner.userspace,
                                           pki, [n for n in want if n not in ("plain", "charm")])
        try:
            mine = {p for x in extras.values() for p in x.pids()}

            def charm_pids():
                return dataplane.daemon_pids(tb, ("wireguard", "boringtun"), exclude=mine)

            repairs = []

            def check():
                if not all(x.alive() for x in extras.values()):
                    raise BenchError("a hand-made tunnel's daemon died (killed from outside?)")
                if len(charm_pids()) < 2:
                    # Another test's `pkill -f wireguard` reaches every namespace (one PID namespace):
                    # the charms' own repair path (update-status) restarts the daemon.
                    repairs.append(time.time())
                    progress("a daemon of the charms' tunnel died: repairing with update-status")
                    model.update_status()
                    convergence.wait_handshakes(handshakes)

            setup = (dataplane.setup_differences((a, b), ("wg-vpn", "wg-vpn-peer"), extras["wg-bare"].device)
                     if "wg-bare" in extras else {})
            paths = _pair_paths(tb, extras, charm_pids)
            labels = {p.name: p.label for p in paths}
            labels["charm"] = "charms' tunnel: {}, MTU {}".format(dataplane.flag_implementation(runner.userspace), mtu)
            progress("data plane paths: " + ", ".join(p.name for p in paths))
            res = dataplane.measure_paths(paths, settings, dataplane.testbed_namespaces(tb), tb,
                                          tb.port(a, pair.LINK), progress, check)
        finally:
            for x in extras.values():
                x.down()
        res.update({"paths": [p.name for p in paths], "labels": labels, "tunnel_mtu": mtu, "underlay_mtu": 1500,
                    "charm_vs_bare_setup": setup,
                    "seconds": settings.seconds, "pings_per_direction": settings.pings, "repairs": repairs,
                    "fixed_rate": dataplane.FIXED_RATE, "fixed_payload_bytes": dataplane.FIXED_PAYLOAD,
                    "max_other_cores": settings.max_other, "retries": settings.retries,
                    "unit_status": {u: model.status(u) for u in model.units()}})
        return res
    finally:
        tb.teardown()


def measure_interfaces(runner, settings, progress, implementations, impl_settings):
    """``then`` of an EPS run: per interface, (a) plain, (b) bare wireguard-go, (c) charms' tunnel
    in ``settings``; then (c) on each of ``implementations`` in turn (the charms' option, both
    ends) in ``impl_settings``."""
    def then(tb, inst, model):
        out = {}
        for i, rp in enumerate(inst.refpoints):
            a, b = tb.vnfs[rp.provider], tb.vnfs[rp.requirer]
            ua, ub = rp.underlay[rp.provider] or a.mgmt_ip, rp.underlay[rp.requirer] or b.mgmt_ip
            device = "wg-" + rp.name
            mtu = dataplane.device_mtu(a, device)
            bare = tunnels.WireGuardPair(a, b, ua, ub, 10 + i, tunnels.impl_of(runner.userspace), runner.userspace,
                                         mtu=mtu).up()
            try:
                mine = set(bare.pids())
                paths = [dataplane.Path("plain", "plain", a, b, ua, ub, ("tcp1", "ping")),
                         dataplane.Path("wg-bare", bare.label, a, b, bare.addresses[0], bare.addresses[1],
                                        ("tcp1", "ping"), bare.pids),
                         dataplane.Path("charm", "charms' tunnel", a, b, rp.service[rp.provider],
                                        rp.service[rp.requirer], ("tcp1", "ping"),
                                        lambda a=a, b=b, mine=mine: [p for v in (a, b) for p in dataplane.daemon_pids(
                                            _one(tb, v), ("wireguard",), exclude=mine)])]
                progress("interface {} ({} -> {}, MTU {})".format(rp.name, rp.provider, rp.requirer, mtu))
                res = dataplane.measure_paths(paths, settings, dataplane.testbed_namespaces(tb), progress=progress)
            finally:
                bare.down()
            res["mtu"] = mtu
            res["implementations"] = {dataplane.device_implementation(a, device): _impl_figures(res)}
            out[rp.name] = res
        for impl in implementations:
            for rp in inst.refpoints:
                out[rp.name]["implementations"][impl] = measure_charm_on(tb, model, rp, impl, impl_settings,
                                                                         progress)
        return out
    return then


def _impl_figures(res):
    s = res["summary"]
    return {"added_rtt_ms": s.get("charm_added_rtt_ms"), "charm_tcp1_bps": s.get("charm_tcp1_bps"),
            "charm_over_plain_tcp1": s.get("charm_over_plain_tcp1"), "rounds": len(res["rounds"])}


def measure_charm_on(tb, model, rp, impl, settings, progress):
    """The charms' tunnel of ``rp`` with ``<rp>-implementation`` = ``impl`` on both ends, beside
    the plain link, in interleaved rounds: its added RTT and throughput."""
    a, b = tb.vnfs[rp.provider], tb.vnfs[rp.requirer]
    device = "wg-" + rp.name
    for member in (rp.provider, rp.requirer):
        model.set_config(member, {rp.name + "-implementation": impl})
    got = {dataplane.device_implementation(v, device) for v in (a, b)}
    if got != {impl}:
        raise BenchError("{}: asked for {}, the devices run on {}".format(rp.name, impl, ", ".join(sorted(got))))
    dataplane.wait_reachable(a, rp.service[rp.provider], rp.service[rp.requirer])
    ua, ub = rp.underlay[rp.provider] or a.mgmt_ip, rp.underlay[rp.requirer] or b.mgmt_ip
    paths = [dataplane.Path("plain", "plain", a, b, ua, ub, ("tcp1", "ping")),
             dataplane.Path("charm", "charms' tunnel on " + impl, a, b, rp.service[rp.provider],
                            rp.service[rp.requirer], ("tcp1", "ping"))]
    progress("interface {} on {}".format(rp.name, impl))
    res = dataplane.measure_paths(paths, settings, dataplane.testbed_namespaces(tb), progress=progress)
    return _impl_figures(res)


class _one(object):
    """A testbed view with only one VNF (daemon_pids looks at every VNF of what it gets)."""

    def __init__(self, tb, vnf):
        self.vnfs = {vnf.name: vnf}


# --------------------------------------------------------------------------- orchestration


def run(args, progress, work, result):
    charms_dir = build_charms.output_dir("local")
    if not os.path.isdir(os.path.join(charms_dir, "wireguard-proxy")):
        raise BenchError("no built charms in {}: run `make charms-local`".format(charms_dir))
    userspace = tunnels.boringtun_path() if args.implementation == "boringtun" else vim.userspace_wireguard()
    if not userspace:
        raise BenchError("no {}: run `make {}`".format(args.implementation, args.implementation))
    runner = convergence.Runner(charms_dir, work, userspace, args.parallel, progress)
    runner.created = CREATED
    result.update({"schema": 2, "command": " ".join(["python -m testbed.bench"] + args.argv),
                   "machine": machine_info(), "wireguard": dataplane.flag_implementation(userspace),
                   "settings": {k: getattr(args, k) for k in SETTINGS}})
    dp_settings = dataplane.Settings(args.rounds, args.seconds, args.pings, max_other=args.max_other_load,
                                     retries=args.retries)
    if "dataplane" in args.parts:
        progress("data plane: {} round(s), {} s per iperf3 run".format(args.rounds, args.seconds))
        result["dataplane"] = run_pair(runner, dp_settings, args.paths, progress)
    records = []
    if "control" in args.parts or "interfaces" in args.parts:
        records += run_eps(runner, args, progress, result)
    if "synthetic" in args.parts:
        result["synthetic"] = {"topology": "hub-and-spoke, hub configured {}".format(
            "first" if args.hub_first else "last"), "parallel_hooks": args.parallel, "sizes": {}}
        runs = {k: args.rounds if k <= args.big else args.big_runs for k in args.sizes}
        join_size = JOIN_SIZE if JOIN_SIZE in args.sizes else min(args.sizes)

        def once(k, i):
            records = os.path.join(work, "hook-profile-{}-{}".format(k, i))
            os.makedirs(records)
            os.environ[hookclock.ENV] = records      # every charm run of this star records its phases

            def then(star, rec):
                rec["hub_phases"] = hookprofile.phase_summary(hookprofile.profiled_runs(
                    star.model.hook_log, hookprofile.load_records(records), "hub/0", ("session",)))
                rec.update(hookclass.star_record(star.model))     # why the hooks ran (counts)
                if args.join and k == join_size and i == 0:
                    rec["spoke_join"] = spokejoin.join(star, args.join, progress=progress)
                    progress("spoke join: {} of {} echoes of s1 lost while {} spokes joined ({:.1f} s)".format(
                        rec["spoke_join"]["lost"], rec["spoke_join"]["probe"]["sent"], args.join,
                        rec["spoke_join"]["seconds"]))
            try:
                rec = convergence.run_synthetic_once(runner, k, hub_last=not args.hub_first, then=then)
            finally:
                del os.environ[hookclock.ENV]
            progress(convergence.conv_line("synthetic {} tunnels run {}/{}".format(k, i + 1, runs[k]), rec))
            return rec

        recs = interleaved(args.sizes, runs, once)
        for k in args.sizes:
            result["synthetic"]["sizes"][str(k)] = {"runs": recs[k], "summary": convergence.conv_summary(recs[k])}
            records += recs[k]
    if records and not args.no_profile:
        progress("profiling a hook")
        result["profile"] = hookprofile.profile_hooks(runner, records)
    return result


def run_eps(runner, args, progress, result):
    """The control part's EPS instantiations (the charms' defaults: with the post-quantum PSK
    where the build has it), each round followed or preceded by one with every ``<ep>-pq-psk``
    false (pqcost.py); the interfaces part on the last one. Returns the control records."""
    eps, classical = [], []
    runs = args.rounds if "control" in args.parts else 1
    options = pqcost.pq_options(convergence.eps_instance(runner.charms_dir)) if "control" in args.parts else None
    if "control" in args.parts:
        progress("post-quantum PSK cost: {}".format(
            pqcost.NOT_AVAILABLE if options is None else "{} round(s) with and without".format(runs)))
    after_up = _psk_figures if options else None
    for i in range(runs):
        then = None
        if i == runs - 1 and "interfaces" in args.parts:
            if_settings = dataplane.Settings(args.if_rounds, args.if_seconds, args.if_pings,
                                             max_other=args.max_other_load, retries=args.retries)
            impl_settings = dataplane.Settings(args.impl_rounds, args.if_seconds, args.if_pings,
                                               max_other=args.max_other_load, retries=args.retries)
            then = measure_interfaces(runner, if_settings, progress, args.charm_implementations, impl_settings)
        if options and i % 2 == 1:         # interleaved: every other round starts without
            classical.append(_classical_run(runner, options, progress, i, runs))
        rec = convergence.run_eps_once(runner, then, after_up=after_up)
        if then:
            result["interfaces"] = {"per_interface": rec.pop("then"), "seconds": args.if_seconds}
        eps.append(rec)
        progress(convergence.conv_line("EPS run {}/{}".format(i + 1, runs), rec))
        if options and i % 2 == 0:
            classical.append(_classical_run(runner, options, progress, i, runs))
    if "control" not in args.parts:
        return []
    result["eps"] = {"runs": eps, "summary": convergence.conv_summary(eps)}
    result["pq_psk_cost"] = pqcost.cost(eps, classical, options is not None)
    if classical:
        result["pq_psk_cost"]["without_runs"] = classical
    return eps


def _psk_figures(tb, inst, model):
    return pqcost.psk_record(model, pqcost.tunnels_of(tb, inst), loadcheck.machine_ticks, convergence.cpu_record)


def _classical_run(runner, options, progress, i, runs):
    rec = convergence.run_eps_once(runner, adjust=pqcost.without_pq(options))
    progress(convergence.conv_line("EPS run {}/{} without the PQ PSK".format(i + 1, runs), rec))
    return rec


def interleaved(sizes, runs, once):
    """``once(size, i)`` for run i of every size, in rounds (2, 8, 32, 2, 8, 32 ...), so that a
    slower hour of the machine does not land on one size only; {size: [records in run order]}."""
    out = {k: [] for k in sizes}
    for i in range(max(runs.values(), default=0)):
        for k in sizes:
            if i < runs[k]:
                out[k].append(once(k, i))
    return out


def machine_info():
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "")
    except OSError:
        pass
    return {"cpus": os.cpu_count(), "cpu_model": model, "kernel": os.uname().release,
            "python": sys.version.split()[0]}


def left_behind(progress):
    """Namespaces of this process's testbeds still present (each testbed removes its own)."""
    mine = [ns for ns in vim.list_testbed_netns() if any(ns.startswith(tb_id + "-") for tb_id in CREATED)]
    progress("teardown: {}".format("nothing left behind" if not mine else "LEFT: " + ", ".join(mine)))
    return mine


# --------------------------------------------------------------------------- work directory


def make_work_dir(out):
    """A new directory under ``out`` for the per-run charm copies, with the marker file."""
    work = tempfile.mkdtemp(prefix="work-", dir=out)
    with open(os.path.join(work, WORK_MARKER), "w") as f:
        f.write("created by testbed.bench (pid {}); removed at its end\n".format(os.getpid()))
    return work


def remove_work_dir(work):
    """Remove ``work`` only when it carries the marker this tool wrote."""
    if work and os.path.isfile(os.path.join(work, WORK_MARKER)):
        shutil.rmtree(work, ignore_errors=True)


# --------------------------------------------------------------------------- arguments


def parse_args(argv):
    p = cli.OneLineParser(prog="testbed.bench", description="Data-plane and control-plane measurements (root).")
    p.add_argument("--rounds", "--runs", type=cli.positive_int, default=3,
                   help="interleaved rounds / instantiations per measurement (default 3)")
    p.add_argument("--seconds", type=cli.positive_int, default=2,
                   help="seconds per iperf3 run, two-VNF pair (default 2)")
    p.add_argument("--pings", type=cli.positive_int, default=150, help="echoes per direction at 10 ms (default 150)")
    # Many short runs: two identical bare pairs measured alternately differ by about 4-5 % per run
    # whether a run lasts 1 s or 2 s (the spread comes from each run's start, not its length),
    # so eight 1 s rounds pin a median down better than four 2 s ones, in about the same time.
    p.add_argument("--if-rounds", type=cli.positive_int, default=8,
                   help="interleaved rounds per EPS interface (default 8)")
    p.add_argument("--if-seconds", type=cli.positive_int, default=1,
                   help="seconds per iperf3 run per EPS interface (default 1)")
    p.add_argument("--if-pings", type=cli.positive_int, default=30,
                   help="echoes per direction per EPS interface and round (default 30)")
    # The other implementations are a comparison with the plain link only (two paths, not three):
    # four rounds each keep the whole bench inside its 15 minutes.
    p.add_argument("--impl-rounds", type=cli.positive_int, default=4,
                   help="interleaved rounds per EPS interface on each of --charm-implementations (default 4)")
    p.add_argument("--max-other-load", type=cli.non_negative_float, default=0.5,
                   help="cores other work may use during a sample before it is measured again (default 0.5)")
    p.add_argument("--retries", type=int, default=1, choices=range(0, 10), metavar="N",
                   help="times a disturbed sample is measured again (default 1)")
    p.add_argument("--only", default=",".join(PARTS), help="comma-separated parts: " + ", ".join(PARTS))
    p.add_argument("--paths", default=",".join(PAIR_PATHS), help="data-plane paths: " + ", ".join(PAIR_PATHS))
    p.add_argument("--sizes", default=",".join(map(str, SIZES)), help="synthetic topology sizes (tunnels, 1-250)")
    p.add_argument("--big", type=int, default=2, help="sizes above this get --big-runs runs (default 2)")
    p.add_argument("--big-runs", type=cli.positive_int, default=2, help="runs of the sizes above --big (default 2)")
    p.add_argument("--parallel", type=cli.hook_slots, default=0,
                   help="units whose hooks the emulated VCA runs at the same time (default 0: no bound, as "
                   "Juju under OSM: a machine and a machine lock per proxy charm unit; 1: one at a time)")
    p.add_argument("--implementation", choices=("wireguard-go", "boringtun"), default="wireguard-go",
                   help="userspace WireGuard of the bare pairs (b), and the VNFs' own wireguard-go (the charms' "
                   "tunnels run on what their option says: --charm-implementations)")
    p.add_argument("--charm-implementations", default="boringtun",
                   help="interfaces part: implementations the charms' tunnels are measured on besides their default "
                   "(comma-separated: wireguard-go, boringtun, kernel; empty: none)")
    p.add_argument("--hub-first", action="store_true", help="configure the hub before the spokes")
    p.add_argument("--join", type=int, default=8, choices=range(0, 201), metavar="N",
                   help="spokes that join the first 8-tunnel star once it converged, while an existing spoke pings "
                   "the hub (default 8; 0: none)")
    p.add_argument("--no-profile", action="store_true", help="skip the hook profile")
    p.add_argument("--out", default=OUT_DIR, help="output directory (default build/bench)")
    args = p.parse_args(argv)
    args.parts = set(cli.parse_list(p, "--only", args.only, PARTS))
    args.paths = cli.parse_list(p, "--paths", args.paths, PAIR_PATHS)
    for required in ("plain", "charm"):
        if required not in args.paths:
            args.paths.insert(0, required)
    args.charm_implementations = (cli.parse_list(p, "--charm-implementations", args.charm_implementations,
                                                 ("wireguard-go", "boringtun", "kernel"))
                                  if args.charm_implementations else [])
    args.sizes = cli.parse_list(p, "--sizes", args.sizes, convert=cli.positive_int)
    if any(k > 250 for k in args.sizes):
        p.error("--sizes: at most 250 tunnels (one /24 link)")
    cli.check_out_dir(p, args.out)
    args.out = os.path.abspath(args.out)    # the VNFs' processes run in other directories
    args.argv = list(argv)
    return args


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if os.geteuid() != 0:
        print("make bench needs root (network namespaces): run `sudo make bench`", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, cli.terminate)
    progress = demo.Progress()
    removed = vim.cleanup_stale()
    if removed:
        progress("removed namespaces left by an interrupted run: " + ", ".join(removed))
    t0 = time.monotonic()
    os.makedirs(args.out, exist_ok=True)
    work = make_work_dir(args.out)
    result = {}
    try:
        run(args, progress, work, result)
        result["left_behind"] = left_behind(progress)
    except KeyboardInterrupt:
        print("interrupted; everything was torn down", file=sys.stderr)
        return 130
    except (BenchError, lcm.InstantiationFailed, traffic.MeasureError, vim.VimError, vca.VcaError,
            nsmodel.NsModelError, convergence.ConvergenceError, dataplane.DataplaneError, tunnels.TunnelError,
            pqcost.PskError) as e:
        print("bench failed: {}".format(e), file=sys.stderr)
        if result.get("dataplane") or result.get("eps") or result.get("synthetic"):
            result["error"] = str(e)
            print("what was measured before: {}".format(benchreport.write(result, args.out)[0]), file=sys.stderr)
        return 1
    finally:
        remove_work_dir(work)     # per-run charm copies (a venv per unit): large, worthless afterwards
    result["seconds_total"] = time.monotonic() - t0
    result["targets"] = benchreport.targets(result)
    benchreport.print_tables(result)
    path, summary, png = benchreport.write(result, args.out)
    print("\nresults: {}\nsummary: {}\nplot:    {}\ntotal {:.0f} s".format(path, summary, png, result["seconds_total"]))
    return 0


if __name__ == "__main__":
    socket.setdefaulttimeout(30)
    sys.exit(main())
