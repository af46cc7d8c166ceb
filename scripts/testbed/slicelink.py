"""The slices on one shared underlay link, with and without the slice policy (issue 40;
docs/slices.md).

`make demo NS=slices` (or sa_slices) brings up two NSIs, each on links of its own. This puts
the user-plane tunnels of both (S1-U, or N3) on ONE bottleneck: the infra namespace's ports
toward both NSIs' providers (SPGW-U, UPF) redirect what they send into one IFB device shaped to
RATE_MBIT, queued by DSCP the way a DSCP-aware switch queues (the plan of core/qos.py: strict
priority for EF/CS5, guaranteed rates, best effort never starved). The bottleneck is the link,
not the CPU: userspace WireGuard moves several hundred Mbit/s per core here, so 100 Mbit/s is
what one eMBB TCP flow can fill while two cores also run the rest of the demo.

Each NSI's 5QI is its NST's (``quality-of-service.id``), as the emulated LCM set it on every
VNF's ``slice-5qi`` from the NSI's params (docs/slices.md): URLLC 3 and eMBB 6 over the EPS,
URLLC 82 and eMBB 9 over 5G. Then, in interleaved rounds, the URLLC NSI's VNFs keep their NST's
5QI (with the policy: their tunnels' outer packets carry its DSCP) or get 0 (without: best effort
like eMBB), through the charms' own option, and the demo measures the URLLC ping (every sample)
idle and under an eMBB iperf3 that saturates the link, and the eMBB throughput. The eMBB NSI
keeps its NST's 5QI throughout.
"""
import math
import re
import statistics
import subprocess
import threading

from testbed.measurement import traffic
from vpnaas.core import qos, refpoints

RATE_MBIT = 100
IFB = "qos-shared"
PING_INTERVAL = 0.01
_TIME = re.compile(r" time=([0-9.]+) ms")


class SliceLinkError(Exception):
    pass


def percentile(samples, p):
    """Nearest-rank percentile of ``samples`` (p in 0-100)."""
    ordered = sorted(samples)
    if not ordered:
        raise SliceLinkError("no samples")
    return ordered[max(0, int(math.ceil(p / 100.0 * len(ordered))) - 1)]


def user_plane(inst):
    """The instance's user-plane reference point (S1-U, N3): where eMBB's load is."""
    for rp in inst.refpoints:
        if refpoints.plane(rp.name) == "user" and rp.link:
            return rp
    raise SliceLinkError("{} has no user-plane reference point on a link".format(inst.name))


def _infra(tb, *args):
    return subprocess.run(["ip", "netns", "exec", tb.infra] + list(args), check=True, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True)


def switch_queue_commands(dev, rate_mbit):
    """The tc commands of a DSCP-aware switch port: the egress plan of core/qos.py."""
    kbit = rate_mbit * 1000
    cmds = [["tc", "qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", str(qos.DEFAULT_CLASS),
             "r2q", "100"],
            ["tc", "class", "add", "dev", dev, "parent", "1:", "classid", "1:1", "htb", "rate", "{}kbit".format(kbit)]]
    for c in qos.QUEUE_CLASSES:
        cmds.append(["tc", "class", "add", "dev", dev, "parent", "1:1", "classid", "1:{}".format(c.minor), "htb",
                     "rate", "{}kbit".format(kbit * c.share_percent // 100), "ceil", "{}kbit".format(kbit),
                     "prio", str(c.priority)])
        cmds.append(["tc", "qdisc", "add", "dev", dev, "parent", "1:{}".format(c.minor), "pfifo", "limit", "128"])
        for d in c.dscps:
            cmds.append(["tc", "filter", "add", "dev", dev, "parent", "1:", "protocol", "ip", "prio", "1", "u32",
                         "match", "ip", "dsfield", str(d << 2), "0xfc", "flowid", "1:{}".format(c.minor)])
    return cmds


def share(tb, ports, rate_mbit=RATE_MBIT):
    """Put ``ports`` (infra-side veths) behind one shaped, DSCP-queued IFB: one shared link."""
    _infra(tb, "ip", "link", "add", IFB, "type", "ifb")
    _infra(tb, "ip", "link", "set", IFB, "up")
    for cmd in switch_queue_commands(IFB, rate_mbit):
        _infra(tb, *cmd)
    for port in ports:
        _infra(tb, "tc", "qdisc", "add", "dev", port, "root", "handle", "1:", "htb", "default", "1")
        _infra(tb, "tc", "class", "add", "dev", port, "parent", "1:", "classid", "1:1", "htb", "rate", "10gbit")
        _infra(tb, "tc", "filter", "add", "dev", port, "parent", "1:", "protocol", "all", "prio", "1", "u32",
               "match", "u32", "0", "0", "flowid", "1:1", "action", "mirred", "egress", "redirect", "dev", IFB)


def ping_samples(vnf, source, destination, count):
    """Every RTT (ms) of ``count`` pings; a lost one counts as lost, not as a sample."""
    argv = ["ping", "-n", "-i", str(PING_INTERVAL), "-c", str(count), "-W", "1", "-I", source, destination]
    out = vnf.exec(argv, check=False, timeout=count * PING_INTERVAL + 60).stdout
    samples = [float(m.group(1)) for m in _TIME.finditer(out)]
    if len(samples) < count * 0.9:
        raise SliceLinkError("ping {} -> {}: {} of {} replies".format(source, destination, len(samples), count))
    return samples


def set_slice(entry, five_qi):
    """Every VNF of the instance gets ``slice-5qi`` (the charm's option; the model settles)."""
    for spec in entry["inst"].vnfs:
        entry["model"].set_config(spec.name, {"slice-5qi": five_qi})


def nst_5qi(entry):
    """The 5QI the NSI's VNFs were instantiated with (their NST's, through the NSI's params)."""
    values = {int(spec.config.get("slice-5qi") or 0) for spec in entry["inst"].vnfs}
    if len(values) != 1 or 0 in values:
        raise SliceLinkError("the NSI's VNFs were not instantiated with one slice 5QI: {}".format(sorted(values)))
    return values.pop()


def marked(tb, vnf_name, five_qi):
    out = tb.vnfs[vnf_name].exec(["iptables", "-w", "-t", "mangle", "-S", "VPNAAS-QOS"], check=False).stdout
    return "--set-dscp 0x{:02x}".format(qos.DEFAULT_DSCP[five_qi]) in out


def _loaded(tb, urllc, embb, pings, seconds):
    """URLLC pings while an eMBB iperf3 fills the link: (samples, eMBB bit/s)."""
    found = {}
    a, b = tb.vnfs[embb.provider], tb.vnfs[embb.requirer]

    def load():
        try:
            found["iperf"] = traffic.iperf(a, embb.service[embb.provider], b, embb.service[embb.requirer],
                                           seconds=seconds, port=traffic.IPERF_PORT + 7)
        except traffic.MeasureError as e:
            found["error"] = e
    t = threading.Thread(target=load)
    t.start()
    try:
        samples = ping_samples(tb.vnfs[urllc.requirer], urllc.service[urllc.requirer],
                               urllc.service[urllc.provider], pings)
    finally:
        t.join()
    if "error" in found:
        raise SliceLinkError(str(found["error"]))
    return samples, found["iperf"]["throughput_bps"]


def _round(tb, entries, pings, seconds, policy, progress):
    urllc, embb = entries["urllc"], entries["embb"]
    set_slice(urllc["entry"], urllc["5qi"] if policy else 0)
    if marked(tb, urllc["rp"].requirer, urllc["5qi"]) != policy:
        raise SliceLinkError("the URLLC tunnels' marking is not {} after the config change".format(
            "on" if policy else "off"))
    idle = ping_samples(tb.vnfs[urllc["rp"].requirer], urllc["rp"].service[urllc["rp"].requirer],
                        urllc["rp"].service[urllc["rp"].provider], pings)
    loaded, bps = _loaded(tb, urllc["rp"], embb["rp"], pings, seconds)
    progress("  {} policy: URLLC p99 idle {:.3f} ms, loaded {:.3f} ms; eMBB {:,.1f} Mbit/s".format(
        "with" if policy else "without", percentile(idle, 99), percentile(loaded, 99), bps / 1e6))
    return {"idle": idle, "loaded": loaded, "embb_bps": bps}


def _pick(instances):
    """{"urllc": ..., "embb": ...}: the instances whose names say which slice they are."""
    out = {}
    for name, entry in instances.items():
        kind = "urllc" if "urllc" in name else "embb" if "embb" in name else None
        if kind and kind not in out:
            out[kind] = {"name": name, "entry": entry, "rp": user_plane(entry["inst"]), "5qi": nst_5qi(entry)}
    if set(out) != {"urllc", "embb"}:
        raise SliceLinkError("the slice QoS run needs an eMBB and a URLLC instance, found: " + ", ".join(instances))
    return out


def measure(tb, instances, progress, rounds=3, pings=1000, rate_mbit=RATE_MBIT):
    """The shared-link run: report.json's ``slice_qos``, and the samples for the CDF plot."""
    entries = _pick(instances)
    set_slice(entries["urllc"]["entry"], 0)
    ports = [tb.port(tb.vnfs[e["rp"].provider], e["rp"].link) for e in entries.values()]
    share(tb, ports, rate_mbit)
    seconds = int(math.ceil(pings * PING_INTERVAL * 1.5)) + 2
    progress("slice QoS: {} and {} on one {} Mbit/s link (DSCP-aware), {} interleaved round(s) of {} pings".format(
        entries["urllc"]["rp"].name, entries["embb"]["rp"].name, rate_mbit, rounds, pings))
    runs = {True: [], False: []}
    for i in range(rounds):
        for policy in ((True, False) if i % 2 == 0 else (False, True)):
            runs[policy].append(_round(tb, entries, pings, seconds, policy, progress))
    set_slice(entries["urllc"]["entry"], entries["urllc"]["5qi"])
    return summary(runs, rate_mbit, pings, entries["urllc"]["5qi"], entries["embb"]["5qi"]), {
        "with policy, idle": [s for r in runs[True] for s in r["idle"]],
        "without policy, idle": [s for r in runs[False] for s in r["idle"]],
        "with policy, loaded": [s for r in runs[True] for s in r["loaded"]],
        "without policy, loaded": [s for r in runs[False] for s in r["loaded"]]}


def _median_spread(values, digits):
    return round(statistics.median(values), digits), [round(min(values), digits), round(max(values), digits)]


def summary(runs, rate_mbit, pings, urllc_5qi, embb_5qi):
    """report.json's ``slice_qos``: medians over the rounds, [min, max] beside each."""
    out = {"shared_link": True, "link_mbit": rate_mbit, "rounds": len(runs[True]), "pings_per_sample": pings,
           "urllc_5qi": urllc_5qi, "embb_5qi": embb_5qi}
    fields = {"urllc_rtt_p99_idle_ms": (True, "idle", 99), "urllc_rtt_p50_idle_ms": (True, "idle", 50),
              "urllc_rtt_p99_idle_without_policy_ms": (False, "idle", 99),
              "urllc_rtt_p50_idle_without_policy_ms": (False, "idle", 50),
              "urllc_rtt_p99_loaded_ms": (True, "loaded", 99), "urllc_rtt_p50_loaded_ms": (True, "loaded", 50),
              "urllc_rtt_p99_loaded_without_policy_ms": (False, "loaded", 99),
              "urllc_rtt_p50_loaded_without_policy_ms": (False, "loaded", 50)}
    for key, (policy, which, p) in fields.items():
        out[key], out[key + "_spread"] = _median_spread([percentile(r[which], p) for r in runs[policy]], 3)
    out["embb_bps_loaded"], out["embb_bps_loaded_spread"] = _median_spread([r["embb_bps"] for r in runs[True]], 0)
    out["embb_bps_loaded_without_policy"], out["embb_bps_loaded_without_policy_spread"] = _median_spread(
        [r["embb_bps"] for r in runs[False]], 0)
    out["target_urllc_p99_loaded_le_1_5x_idle"] = out["urllc_rtt_p99_loaded_ms"] <= 1.5 * out["urllc_rtt_p99_idle_ms"]
    out["target_embb_keeps_0_8"] = out["embb_bps_loaded"] >= 0.8 * out["embb_bps_loaded_without_policy"]
    return out


def plot_cdf(samples, png):
    """The URLLC RTT CDFs (with the policy idle and loaded, without it loaded)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4))
    for label, values in samples.items():
        ordered = sorted(values)
        ax.plot(ordered, [(i + 1) / len(ordered) for i in range(len(ordered))], label="{} (n={})".format(
            label, len(ordered)))
    ax.set_xscale("log")
    ax.set_xlabel("URLLC RTT through its tunnel, ms (log)")
    ax.set_ylabel("CDF")
    ax.set_title("URLLC on a link shared with saturating eMBB")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)


def describe(sq):
    """The demo's lines about the shared-link run."""
    if sq.get("error"):
        return "slice QoS on a shared link: NOT measured: " + sq["error"]
    return ("slice QoS on one shared {link_mbit} Mbit/s link (median of {rounds} interleaved rounds, "
            "{pings_per_sample} pings each):\n"
            "  URLLC RTT p99 with the policy: idle {urllc_rtt_p99_idle_ms:.3f} ms, under eMBB load "
            "{urllc_rtt_p99_loaded_ms:.3f} ms; without: idle {urllc_rtt_p99_idle_without_policy_ms:.3f} ms, "
            "loaded {urllc_rtt_p99_loaded_without_policy_ms:.3f} ms\n"
            "  eMBB: {embb_mbit:,.1f} Mbit/s with the policy, {embb_without_mbit:,.1f} without\n"
            "  targets: p99 loaded <= 1.5 x idle {t1}; eMBB keeps >= 0.8 {t2}; CDFs: {cdf}").format(
        embb_mbit=sq["embb_bps_loaded"] / 1e6, embb_without_mbit=sq["embb_bps_loaded_without_policy"] / 1e6,
        t1="MET" if sq["target_urllc_p99_loaded_le_1_5x_idle"] else "MISSED",
        t2="MET" if sq["target_embb_keeps_0_8"] else "MISSED", cdf=sq.get("cdf_png", "-"), **sq)
