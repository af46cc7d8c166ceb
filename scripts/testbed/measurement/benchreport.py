"""What `make bench` prints and writes: tables, bench.json, summary.json, bench.png."""
import json
import os
import sys

from testbed.measurement import benchstats

PATH_LABELS = {"plain": "plain link (a)", "wg-bare": "bare wireguard-go pair (b)", "charm": "charms' tunnel (c)",
               "boringtun": "bare boringtun pair", "ovpn-aes": "OpenVPN AES-256-GCM",
               "ovpn-chacha": "OpenVPN CHACHA20-POLY1305"}
PATH_COLORS = {"plain": "tab:gray", "wg-bare": "tab:cyan", "charm": "tab:blue", "boringtun": "tab:purple",
               "ovpn-aes": "tab:orange", "ovpn-chacha": "tab:red"}


def _median(summary, key):
    return ((summary or {}).get(key) or {}).get("median")


def _spread(summary, key):
    s = (summary or {}).get(key) or {}
    return {"median": s.get("median"), "min": s.get("min"), "max": s.get("max"), "n": s.get("n", 0)}


# --------------------------------------------------------------------------- summary.json


def summary(result):
    """The machine-readable headline figures (medians; each also with its spread)."""
    dp = (result.get("dataplane") or {}).get("summary") or {}
    ifaces = (result.get("interfaces") or {}).get("per_interface") or {}
    c_over_b = {name: _spread(v["summary"], "charm_over_bare_tcp1") for name, v in ifaces.items()}
    pair = _spread(dp, "charm_over_bare_tcp1")
    # The figure: the lowest (c)/(b) over the EPS interfaces; the two-VNF pair stands in
    # only when no interface was measured (``--only dataplane``).
    lowest = min((v["median"] for v in (c_over_b or {"pair": pair}).values() if v["median"] is not None),
                 default=None)
    pooled = benchstats.summarize(_pooled_rounds(result, "charm_over_bare_tcp1"))
    ovpn_rtt = {n: _spread(dp, n + "_added_rtt_ms") for n in ("ovpn-aes", "ovpn-chacha")
                if n + "_added_rtt_ms" in dp}
    best_ovpn_rtt = min((v["median"] for v in ovpn_rtt.values() if v["median"] is not None), default=None)
    sizes = ((result.get("synthetic") or {}).get("sizes") or {})
    times = {int(k): [r["seconds_after_first_config"] for r in v["runs"]] for k, v in sizes.items()}
    cpu = {int(k): [r["cpu_seconds"] for r in v["runs"] if r.get("cpu_seconds") is not None]
           for k, v in sizes.items()}
    after_last = {int(k): [r["seconds_after_last_config"] for r in v["runs"] if "seconds_after_last_config" in r]
                  for k, v in sizes.items()}
    hub_sessions = {int(k): [r["hub_hook_classes"]["sessions"] / float(int(k)) for r in v["runs"]
                             if r.get("hub_hook_classes")] for k, v in sizes.items()}
    out = {
        "product_vs_bare_wireguard": lowest,
        "wireguard_vs_openvpn_throughput": _median(dp, "charm_over_best_openvpn_tcp1"),
        "wireguard_added_rtt_ms": _median(dp, "charm_added_rtt_ms"),
        "openvpn_added_rtt_ms": best_ovpn_rtt,
        "convergence_32_over_8": benchstats.growth(times, 8, 32),
        # The same growth in the CPU time the machine spent converging: on a machine whose cores
        # stay busy, convergence_32_over_8 is this figure, whatever the scheduling.
        "convergence_cpu_32_over_8": benchstats.growth(cpu, 8, 32),
        # Beside the headline (from the first config, which at 32 tunnels includes the spread of the
        # 33 VNFs' own config primitives through the VCA's shared slots): from the last config.
        "convergence_after_last_config_32_over_8": benchstats.growth(after_last, 8, 32),
        # The hub's reconcile sessions after the first config per spoke (its serial work: one per
        # spoke whose key it could not read in an earlier session; hookclass.py), by size.
        "hub_sessions_per_spoke": {str(k): benchstats.summarize(v)["median"] for k, v in sorted(hub_sessions.items())
                                   if v} or None,
        "eps_seconds_up_after_last_config": _median((result.get("eps") or {}).get("summary"),
                                                    "seconds_after_last_config"),
        # Spokes joining a converged hub while an existing spoke pings it (spokejoin.py): echoes lost.
        "spoke_join_packets_lost_on_existing": _join(result, "lost"),
        "spoke_join_packets_sent": _join(result, "sent"),
        # Each phase of the hub's relation hooks that opened a session, 32 tunnels over 8 (medians).
        "hub_hook_phase_32_over_8": _phase_growth(sizes),
        "spread": {
            "charm_over_bare_tcp1_per_interface": c_over_b,
            "charm_over_bare_tcp1_pair": pair,
            # Every paired round of the pair and the five interfaces together: the lowest of six
            # medians of a few noisy rounds each sits below their common value by chance alone.
            "charm_over_bare_tcp1_pooled": pooled,
            "charm_over_plain_tcp1": _spread(dp, "charm_over_plain_tcp1"),
            "wireguard_vs_openvpn_throughput": _spread(dp, "charm_over_best_openvpn_tcp1"),
            "wireguard_added_rtt_ms": _spread(dp, "charm_added_rtt_ms"),
            "bare_wireguard_added_rtt_ms": _spread(dp, "wg-bare_added_rtt_ms"),
            "boringtun_added_rtt_ms": _spread(dp, "boringtun_added_rtt_ms"),
            "openvpn_added_rtt_ms": ovpn_rtt,
            "tcp1_bps": {n: _spread(dp, n + "_tcp1_bps") for n in PATH_LABELS if n + "_tcp1_bps" in dp},
            # The headline is the ratio of the medians; these are the ratios within each round
            # (the sizes run interleaved, so run i of 8 and run i of 32 met the same hour).
            "convergence_32_over_8_per_round": _per_round_growth(times, 8, 32),
            "convergence_cpu_32_over_8_per_round": _per_round_growth(cpu, 8, 32),
        },
        # The post-quantum PSK's cost (pqcost.py): with/without medians, spreads and ratios.
        "pq_psk_cost": {k: v for k, v in (result.get("pq_psk_cost") or {}).items() if k != "without_runs"} or None,
        "implementations": (result.get("dataplane") or {}).get("labels", {}),
        "command": result.get("command"),
        "seconds_total": result.get("seconds_total"),
        "disturbed_samples": sum(len(r.get("disturbed", []))
                                 for r in (result.get("dataplane") or {}).get("rounds", [])),
    }
    # Hook runs per unit and relation, the worst over the EPS runs: every kind (Juju's
    # relation-created and -joined included), relation-changed (the target's count), and the
    # relation-changed runs the peers' writes caused (without the one Juju runs after joined).
    eps = (result.get("eps") or {}).get("summary")
    out.update({"eps_max_{}_per_unit_relation".format(k): _worst(eps, "max_{}_per_unit_relation".format(k))
                for k in ("hooks", "changed", "written")})
    return out


def _changed_target(eps):
    """The hook-count target: relation-changed runs per unit and relation (the worst), with the
    total of every kind beside it in its text (Juju's relation-created and -joined, which no charm
    can prevent: docs/bench.md) and the part the remote units' writes caused."""
    t = benchstats.check_target("eps_max_changed_per_unit_relation", _worst(eps, "max_changed_per_unit_relation"))
    total, written = _worst(eps, "max_hooks_per_unit_relation"), _worst(eps, "max_written_per_unit_relation")
    t["text"] += " [every hook kind: {}; caused by the peers' writes: {}]".format(
        benchstats.fmt(total, 0), benchstats.fmt(written, 0))
    t["total_hooks_per_unit_relation"], t["written_per_unit_relation"] = total, written
    return t


def _worst(summary, key):
    return ((summary or {}).get(key) or {}).get("max")


def _join(result, key):
    """The spoke-join probes' ``key`` (lost, sent) summed over every run that had one (None: none)."""
    joins = [r["spoke_join"] for v in ((result.get("synthetic") or {}).get("sizes") or {}).values()
             for r in v["runs"] if r.get("spoke_join")]
    return sum(j["probe"][key] for j in joins) if joins else None


def _phase_growth(sizes, small="8", big="32"):
    """{phase, "hook_seconds", "tool_calls": median at 32 / median at 8} of the hub's session
    hooks (the runs' ``hub_phases``; {} when they were not profiled)."""
    def medians(k):
        runs = [r["hub_phases"] for r in (sizes.get(k) or {}).get("runs", []) if r.get("hub_phases")]
        keys = {p for r in runs for p in r["phases"]}
        out = {p: benchstats.summarize([r["phases"].get(p) for r in runs])["median"] for p in keys}
        for key in ("hook_seconds", "tool_calls"):
            out[key] = benchstats.summarize([r.get(key) for r in runs])["median"]
        return out
    a, b = medians(small), medians(big)
    return {p: benchstats.ratio(b[p], a[p]) for p in sorted(set(a) & set(b)) if a[p] and b[p] is not None}


def _pooled_rounds(result, metric):
    """``metric`` of every round of the two-VNF pair and of every EPS interface, in that order."""
    rounds = list((result.get("dataplane") or {}).get("rounds") or [])
    for v in ((result.get("interfaces") or {}).get("per_interface") or {}).values():
        rounds += v.get("rounds") or []
    return [r.get(metric) for r in rounds]


def _per_round_growth(by_size, small, big):
    """{"per_round": [run i of ``big`` / run i of ``small``], "median", "min", "max", "n"}."""
    pairs = benchstats.paired_ratios(by_size.get(big, []), by_size.get(small, []))
    return dict(benchstats.summarize(pairs), per_round=pairs)


def targets(result):
    out = []
    dp = (result.get("dataplane") or {}).get("summary") or {}
    if dp:
        out.append(benchstats.check_target("tcp1_ratio", _median(dp, "charm_over_plain_tcp1")))
        out.append(benchstats.check_target("added_rtt_ms", _median(dp, "charm_added_rtt_ms")))
    s = summary(result)
    if s["product_vs_bare_wireguard"] is not None:
        out.append(benchstats.check_target("product_vs_bare", s["product_vs_bare_wireguard"]))
    eps = (result.get("eps") or {}).get("summary") or {}
    if eps:
        out.append(benchstats.check_target("eps_seconds_after_last_config", eps["seconds_after_last_config"]["median"]))
        out.append(_changed_target(eps))
    sessions = [x["summary"]["logins_per_session"]["max"] for x in
                [result.get("eps") or {}] + list(((result.get("synthetic") or {}).get("sizes") or {}).values())
                if x.get("summary")]
    sessions = [x for x in sessions if x is not None]
    if sessions:
        out.append(benchstats.check_target("logins_per_session", max(sessions)))
    if s["convergence_32_over_8"] is not None:
        out.append(benchstats.check_target("synthetic_32_over_8", s["convergence_32_over_8"]))
    if s["convergence_cpu_32_over_8"] is not None:
        out.append(benchstats.check_target("synthetic_cpu_32_over_8", s["convergence_cpu_32_over_8"]))
    if s["spoke_join_packets_lost_on_existing"] is not None:
        out.append(benchstats.check_target("spoke_join_packets_lost", s["spoke_join_packets_lost_on_existing"]))
    if result.get("seconds_total") is not None:
        out.append(benchstats.check_target("bench_minutes", result["seconds_total"] / 60.0))
    return out


# --------------------------------------------------------------------------- tables


def _cell(s, scale=1.0, digits=3):
    if not s or s.get("median") is None:
        return "-"
    return "{} ({}-{})".format(*(benchstats.fmt(s[x] / scale, digits) for x in ("median", "min", "max")))


def path_rows(dp, names):
    rows = []
    for n in names:
        rows.append([PATH_LABELS.get(n, n), _cell(dp.get(n + "_tcp1_bps"), 1e6, 0),
                     _cell(dp.get(n + "_tcp4_bps"), 1e6, 0),
                     _cell(dp.get(n + "_rtt_ms")), _cell(dp.get(n + "_added_rtt_ms")),
                     _cell(dp.get(n + "_over_plain_tcp1")), _cell(dp.get(n + "_tcp1_daemon_cores"), 1, 2)])
    return rows


PATH_HEAD = ("path", "TCP 1 Mbit/s", "TCP 4 Mbit/s", "RTT ms", "added RTT ms", "TCP1 / plain", "daemon cores")


def print_tables(result, stream=sys.stdout):
    w = stream.write
    dpr = result.get("dataplane") or {}
    dp = dpr.get("summary")
    if dp:
        w("\nData plane, two VNFs on one link: median (min-max) over {} interleaved rounds\n".format(
            len(dpr["rounds"])))
        w(benchstats.table(PATH_HEAD, path_rows(dp, dpr["paths"])) + "\n")
        for n, label in sorted(dpr.get("labels", {}).items()):
            w("  {}: {}\n".format(n, label))
        w("  charms' tunnel / bare pair, TCP 1: {}   TCP 4: {}   charms' tunnel / best OpenVPN, TCP 1: {}\n".format(
            _cell(dp.get("charm_over_bare_tcp1")), _cell(dp.get("charm_over_bare_tcp4")),
            _cell(dp.get("charm_over_best_openvpn_tcp1"))))
        w("  overhead on the underlay (bytes per payload byte, fixed rate): charm {}  plain {}\n".format(
            _cell(dp.get("charm_fixed_overhead_ratio")), _cell(dp.get("plain_fixed_overhead_ratio"))))
    ifr = result.get("interfaces")
    if ifr:
        w("\nEPS interfaces: (c) charms' tunnel vs (b) bare wireguard-go pair vs (a) plain, median (min-max)\n")
        rows = []
        for name, v in ifr["per_interface"].items():
            s = v["summary"]
            rows.append([name, _cell(s.get("plain_tcp1_bps"), 1e6, 0), _cell(s.get("wg-bare_tcp1_bps"), 1e6, 0),
                         _cell(s.get("charm_tcp1_bps"), 1e6, 0), _cell(s.get("charm_over_bare_tcp1")),
                         _cell(s.get("charm_over_plain_tcp1")), _cell(s.get("charm_added_rtt_ms")),
                         _cell(s.get("wg-bare_added_rtt_ms"))])
        w(benchstats.table(("interface", "(a) Mbit/s", "(b) Mbit/s", "(c) Mbit/s", "(c)/(b)", "(c)/(a)",
                            "(c) +RTT ms", "(b) +RTT ms"), rows) + "\n")
        impl_rows = []
        for name, v in ifr["per_interface"].items():
            for impl, f in sorted((v.get("implementations") or {}).items()):
                impl_rows.append([name, impl or "?", _cell(f.get("charm_tcp1_bps"), 1e6, 0),
                                  _cell(f.get("charm_over_plain_tcp1")), _cell(f.get("added_rtt_ms"))])
        if impl_rows:
            w("\nEPS interfaces per implementation of the charms' tunnel (<rp>-implementation on both ends; "
              "each beside the plain link in the same rounds), median (min-max)\n")
            w(benchstats.table(("interface", "implementation", "Mbit/s", "/ plain", "+RTT ms"), impl_rows) + "\n")
        pooled = summary(result)["spread"]["charm_over_bare_tcp1_pooled"]
        w("  (c)/(b), TCP 1, every round of the pair and the interfaces together: {} n={}\n".format(
            _cell(pooled), pooled["n"]))
    _conv_table(result, w)
    prof = result.get("profile")
    if prof:
        w("\nProfile of a hook (seconds)\n")
        for key, v in prof.items():
            v = _cell(v) + " n={}".format(v["n"]) if isinstance(v, dict) else benchstats.fmt(v)
            w("  {:28} {}\n".format(key, v))
    if result.get("targets"):
        w("\nTargets\n")
        rows = [[t["text"], "{} {}".format(t["op"], t["target"]), benchstats.fmt(t["measured"]),
                 {True: "met", False: "MISSED", None: "-"}[t["met"]]] for t in result["targets"]]
        w(benchstats.table(("target", "wanted", "measured", "verdict"), rows) + "\n")


def _conv_table(result, w):
    conv = []
    if result.get("eps"):
        conv.append(("EPS (5 tunnels)", result["eps"]["summary"]))
    for k, v in sorted(((result.get("synthetic") or {}).get("sizes") or {}).items(), key=lambda x: int(x[0])):
        conv.append(("hub {} tunnels".format(k), v["summary"]))
    if not conv:
        return
    metrics = ("seconds_after_last_config", "seconds_after_first_config", "hooks_after_first_config",
               "hooks_per_tunnel", "charm_hooks_per_tunnel", "max_hooks_per_unit_relation",
               "max_changed_per_unit_relation", "max_charm_hooks_per_unit_relation", "reconcile_sessions",
               "verify_sessions", "sessions_per_tunnel", "logins_per_session", "hub_gate_hook_seconds",
               "hub_gate_hook_tool_calls", "hub_charm_hook_tool_calls", "cpu_seconds", "cpu_busy_fraction")
    head = ("topology", "s after last cfg", "s after first cfg", "hooks after 1st cfg", "hooks/tunnel",
            "charm hooks/tunnel", "max/unit+rel", "changed max/unit+rel", "charm max/unit+rel", "reconciles",
            "verifications",
            "sessions/tunnel", "logins/session", "hub gate-hook s", "hub gate-hook tools", "hub charm-hook tools",
            "CPU s after 1st cfg", "cores busy", "n")
    rows = []
    for label, s in conv:
        rows.append([label] + [_cell(s.get(m), 1, _digits(m)) for m in metrics] + [s["seconds_after_last_config"]["n"]])
    w("\nControl plane: convergence, median (min-max)\n")
    w(benchstats.table(head, rows) + "\n")
    s = summary(result)
    if s["convergence_32_over_8"] is not None:
        per_round = s["spread"]["convergence_32_over_8_per_round"]["per_round"]
        w("  32 / 8 tunnels, time from the first config: {} (ratio of the medians); per interleaved round: {}\n".format(
            benchstats.fmt(s["convergence_32_over_8"], 2), ", ".join(benchstats.fmt(x, 2) for x in per_round)))
    if s["convergence_cpu_32_over_8"] is not None:
        w("  32 / 8 tunnels, CPU work from the first config: {}\n".format(
            benchstats.fmt(s["convergence_cpu_32_over_8"], 2)))
    if s["hub_hook_phase_32_over_8"]:
        w("  the hub's session hooks, 32 / 8 per phase: {}\n".format(", ".join(
            "{} {}".format(p, benchstats.fmt(r, 2)) for p, r in s["hub_hook_phase_32_over_8"].items())))
    if s["spoke_join_packets_lost_on_existing"] is not None:
        w("  spokes joining a converged hub: {} of {} echoes of an existing spoke lost\n".format(
            s["spoke_join_packets_lost_on_existing"], s["spoke_join_packets_sent"]))
    for line in pq_lines(s["pq_psk_cost"]):
        w("  " + line + "\n")


def pq_lines(cost):
    """The post-quantum PSK's cost as the terminal shows it (pqcost.py; summary.json pq_psk_cost)."""
    if not cost:
        return []
    if not cost.get("available"):
        return ["post-quantum PSK: {}".format(cost.get("note"))]
    out = ["post-quantum PSK, EPS with vs without ({} interleaved rounds), median (min-max):".format(cost["rounds"])]
    for key, base, label in (
            ("seconds_after_last_config", "seconds_after_last_config", "s to every handshake"),
            ("cpu_seconds", "cpu_seconds", "CPU s to them"),
            ("seconds_to_pq_psk_after_last_config", "seconds_after_last_config",
             "s to every PQ PSK (without: to every handshake)"),
            ("cpu_seconds_to_pq_psk", "cpu_seconds", "CPU s to every PQ PSK (without: to every handshake)")):
        ratio = cost["ratio"].get(key) or {}
        out.append("  {}: {} vs {}, ratio {}".format(
            label, _cell(cost["with"].get(key), 1, 2), _cell(cost["without"].get(base), 1, 2),
            benchstats.fmt(ratio.get("of_medians"), 2)))
    return out


def _digits(metric):
    return 2 if "hook_seconds" in metric or "per_" in metric or "fraction" in metric \
        else 1 if "seconds" in metric else 0


# --------------------------------------------------------------------------- plot


def plot(result, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 3, figsize=(17, 5))
    dpr = result.get("dataplane") or {}
    dp = dpr.get("summary")
    if dp:
        names = dpr["paths"]
        _path_bars(axes[0], dp, names, "tcp1_bps", 1e6, "Mbit/s", "TCP 1 stream (median, min-max)", log=True)
        _path_bars(axes[1], dp, names, "rtt_ms", 1, "ms", "average ping RTT (median, min-max)")
    ax = axes[2]
    sizes = ((result.get("synthetic") or {}).get("sizes") or {})
    for metric, style in (("seconds_after_first_config", "o-"), ("seconds_after_last_config", "s--")):
        pts = sorted((int(k), v["summary"][metric]) for k, v in sizes.items())
        if pts:
            ax.errorbar([p[0] for p in pts], [p[1]["median"] for p in pts],
                        yerr=[[p[1]["median"] - p[1]["min"] for p in pts], [p[1]["max"] - p[1]["median"] for p in pts]],
                        fmt=style, capsize=4, label="hub-and-spoke, " + metric.replace("_", " "))
        if result.get("eps"):
            ax.plot([5], [result["eps"]["summary"][metric]["median"]], "r" + style[0],
                    label="EPS, " + metric.replace("_", " "))
    ax.set_xscale("log", base=2)
    ax.set_xlabel("tunnels")
    ax.set_ylabel("seconds")
    ax.set_title("control-plane convergence")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7)
    fig.suptitle("make bench: {}".format(result.get("wireguard", "")), fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _path_bars(ax, dp, names, metric, scale, unit, title, log=False):
    names = [n for n in names if dp.get("{}_{}".format(n, metric))]
    ss = [dp["{}_{}".format(n, metric)] for n in names]
    med = [s["median"] / scale for s in ss]
    err = [[(s["median"] - s["min"]) / scale for s in ss], [(s["max"] - s["median"]) / scale for s in ss]]
    ax.bar(range(len(names)), med, 0.7, yerr=err, capsize=4, color=[PATH_COLORS.get(n, "k") for n in names])
    ax.set_xticks(list(range(len(names))))
    ax.set_xticklabels([PATH_LABELS.get(n, n).replace(" (", "\n(") for n in names], fontsize=7, rotation=20)
    if log:
        ax.set_yscale("log")
    ax.set_ylabel(unit)
    ax.set_title(title)


# --------------------------------------------------------------------------- files


def _dump(obj, path):
    with open(path + ".tmp", "w") as f:
        json.dump(obj, f, indent=1, sort_keys=True)
    os.replace(path + ".tmp", path)


def write(result, out_dir):
    """bench.json (everything), summary.json (headline figures), bench.png."""
    path = os.path.join(out_dir, "bench.json")
    _dump(result, path)
    _dump(summary(result), os.path.join(out_dir, "summary.json"))
    png = os.path.join(out_dir, "bench.png")
    plot(result, png)
    return path, os.path.join(out_dir, "summary.json"), png
