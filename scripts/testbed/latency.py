"""Where a userspace WireGuard's added round-trip time goes: a probe (root).

Two VNFs on one link (no charms), bare WireGuard pairs in variants that each change one thing:
the Go runtime's threads (GOMAXPROCS), where the daemons run (taskset), boringtun's threads,
and the spacing of the echoes (a daemon that sleeps between packets pays a wake-up on each).
Interleaved rounds, median (min-max) of the average RTT of each variant and of the plain link.

    PYTHONPATH=scripts:charms python -m testbed.latency [--rounds 5] [--pings 200]
"""
import os
import shutil
import sys
import tempfile

from testbed import cli, tunnels
from testbed.emulators import vim
from testbed.measurement import benchstats, traffic

A_UNDERLAY, B_UNDERLAY = "192.168.9.2", "192.168.9.3"


def variants(wggo, bt):
    """(name, impl, path, wrappers, env, options)."""
    out = [("wireguard-go", "wireguard-go", wggo, ((), ()), {}, []),
           ("wireguard-go GOMAXPROCS=1", "wireguard-go", wggo, ((), ()), {"GOMAXPROCS": "1"}, []),
           ("wireguard-go both on CPU 0", "wireguard-go", wggo, (["taskset", "-c", "0"],) * 2, {}, []),
           ("wireguard-go a on CPU 0, b on CPU 1", "wireguard-go", wggo,
            (["taskset", "-c", "0"], ["taskset", "-c", "1"]), {}, [])]
    if bt:
        out += [("boringtun", "boringtun", bt, ((), ()), {}, []),
                ("boringtun 1 thread", "boringtun", bt, ((), ()), {}, ["--threads", "1"]),
                ("boringtun both on CPU 0", "boringtun", bt, (["taskset", "-c", "0"],) * 2, {}, [])]
    return out


def main(argv=None):
    p = cli.OneLineParser(prog="testbed.latency", description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=cli.positive_int, default=5)
    p.add_argument("--pings", type=cli.positive_int, default=200, help="echoes per variant, round and interval")
    p.add_argument("--intervals", default="0.01,0.001", help="echo spacings in seconds (comma-separated)")
    args = p.parse_args(argv)
    intervals = cli.parse_list(p, "--intervals", args.intervals, convert=float)
    if os.geteuid() != 0:
        print("needs root (network namespaces)", file=sys.stderr)
        return 2
    wggo, bt = vim.userspace_wireguard(), tunnels.boringtun_path()
    workdir = tempfile.mkdtemp(prefix="vpnaas-latency-")
    tb = vim.Testbed(workdir, userspace_wireguard=wggo)
    tb.create()
    pairs = []
    try:
        tb.add_link("link", "192.168.9.0/24")
        a = tb.add_vnf("a", {"link": A_UNDERLAY + "/24"})
        b = tb.add_vnf("b", {"link": B_UNDERLAY + "/24"})
        for i, (name, impl, path, wrappers, env, options) in enumerate(variants(wggo, bt), 1):
            pairs.append((name, tunnels.WireGuardPair(a, b, A_UNDERLAY, B_UNDERLAY, i, impl, path, wrappers=wrappers,
                                                      env=env, options=options).up()))
        paths = [("plain", A_UNDERLAY, B_UNDERLAY)] + [(n, x.addresses[0], x.addresses[1]) for n, x in pairs]
        rtts = {(n, iv): [] for n, _s, _d in paths for iv in intervals}
        for r in range(args.rounds):
            k = r % len(paths)
            for name, src, dst in paths[k:] + paths[:k]:
                for iv in intervals:
                    rtts[(name, iv)].append(traffic.ping(a, src, dst, count=args.pings, interval=iv)["rtt_avg_ms"])
        rows = []
        for name, _s, _d in paths:
            row = [name]
            for iv in intervals:
                s = benchstats.summarize(rtts[(name, iv)])
                plain = benchstats.summarize(rtts[("plain", iv)])["median"]
                row.append("{} ({}-{}) +{}".format(benchstats.fmt(s["median"]), benchstats.fmt(s["min"]),
                                                   benchstats.fmt(s["max"]), benchstats.fmt(s["median"] - plain)))
            rows.append(row)
        print(benchstats.table(["variant"] + ["RTT ms, echo every {} s (added)".format(iv) for iv in intervals], rows))
    finally:
        for _n, x in pairs:
            x.down()
        tb.teardown()
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
