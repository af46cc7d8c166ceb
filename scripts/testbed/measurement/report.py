"""The testbed's report: a table on the terminal, report.json and a PNG plot."""
import json
import os

import measure_parse

from testbed.measurement import thesis

#: The alert the demo stops a peer for (testbed/monitor.py ALERT).
ALERT_NAME = "WireGuardHandshakeStale"


def _mbit(bps):
    return "-" if bps is None else "{:,.0f}".format(bps / 1e6)


def _ms(value):
    return "-" if value is None else "{:.3f}".format(value)


def _ratio(a, b):
    return "-" if a is None or not b else "{:.3f}".format(a / b)


def table(report):
    """Plain-text table: per reference point, measured and thesis values side by side."""
    head = ("ref.pt", "handshake", "plaintext", "only WG", "WG Mbit/s", "plain Mbit/s", "ratio",
            "thesis WG", "thesis plain", "WG RTT ms", "plain RTT ms", "added ms", "thesis RTT WG/plain")
    rows = [head]
    for rp, e in report["reference_points"].items():
        if e.get("handshake") is None and e.get("plain_throughput_bps") is None:
            continue
        t = thesis.values(rp)
        added = (e["wg_rtt_avg_ms"] - e["plain_rtt_avg_ms"]
                 if e.get("wg_rtt_avg_ms") is not None and e.get("plain_rtt_avg_ms") is not None else None)
        rows.append((
            rp, {True: "yes", False: "NO", None: "-"}[e.get("handshake")],
            {True: "SEEN", False: "absent", None: "-"}[e.get("plaintext_seen")],
            {True: "yes", False: "NO", None: "-"}[e.get("only_wireguard")],
            _spread(e, "wg_throughput_bps", _mbit), _spread(e, "plain_throughput_bps", _mbit),
            _spread(e, "throughput_ratio", lambda v: _ratio(v, 1)),
            _mbit(t["wg_throughput_bps"]), _mbit(t["plain_throughput_bps"]),
            _spread(e, "wg_rtt_avg_ms", _ms, _rtt(e.get("wg_ping"))),
            _spread(e, "plain_rtt_avg_ms", _ms, _rtt(e.get("plain_ping"))), _spread(e, "added_rtt_ms", _ms, _ms(added)),
            "{}/{}".format(_ms(t["wg_rtt_avg_ms"]), _ms(t["plain_rtt_avg_ms"])),
        ))
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(head))]
    lines = ["  ".join(str(c).rjust(w) if i else str(c).ljust(w) for i, (c, w) in enumerate(zip(r, widths)))
             for r in rows]
    lines.insert(1, "-" * len(lines[0]))
    return "\n".join(lines)


def _spread(entry, key, fmt, single=None):
    """median (min-max) over the demo's rounds; a single measurement as it was."""
    s = (entry.get("spread") or {}).get(key)
    if s and s.get("n", 0) > 1:
        return "{} ({}-{})".format(fmt(s["median"]), fmt(s["min"]), fmt(s["max"]))
    if single is not None:
        return single
    return fmt(s["median"]) if s else fmt(entry.get(key))


def _rtt(ping):
    if not ping or ping.get("rtt_avg_ms") is None:
        return "-"
    return "{:.3f} ({:.3f}-{:.3f})".format(ping["rtt_avg_ms"], ping["rtt_min_ms"], ping["rtt_max_ms"])


def write(report, out_dir):
    """report.json, and report.png (one report-<slice>.png per slice for an NSI run)."""
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "report.json")
    with open(path + ".tmp", "w") as f:
        json.dump(report, f, indent=1, sort_keys=True)
    os.replace(path + ".tmp", path)
    pngs = []
    monitoring = report.get("prometheus") or {}
    for name, single in (report["slices"].items() if "slices" in report else [("", report)]):
        pngs.append(os.path.join(out_dir, "report{}.png".format("-" + name if name else "")))
        plot(single, pngs[-1], monitoring)
    return path, pngs


def plot(report, png, monitoring=None):
    """Throughput and RTT per reference point, with and without WireGuard, thesis values as marks;
    below them, when the demo's Prometheus recorded it, every peer's handshake age and the stale
    alert's pending and firing spans over the run (``monitoring``: report.json "prometheus")."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    timeline = (monitoring or {}).get("timeline")
    if timeline and timeline.get("ages"):
        fig = plt.figure(figsize=(11, 7.6))
        grid = fig.add_gridspec(2, 2, height_ratios=(1, 0.9))
        ax1, ax2 = fig.add_subplot(grid[0, 0]), fig.add_subplot(grid[0, 1])
        _timeline(fig.add_subplot(grid[1, :]), timeline, monitoring)
    else:
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    _bars(report, fig, ax1, ax2)
    fig.savefig(png, dpi=110)
    plt.close(fig)


def _timeline(ax, timeline, monitoring):
    """Handshake age per peer (lines), the stale alert's spans (bands), the kill and the repair."""
    from matplotlib.patches import Patch

    for key, points in sorted(timeline["ages"].items()):
        ax.plot([p[0] for p in points], [p[1] for p in points], linewidth=1, label=key)
    colors = {"pending": "#f6e05e", "firing": "#e53e3e"}
    for key, points in sorted(timeline.get("alerts", {}).items()):
        state = key.rsplit(" ", 1)[-1]
        for t, _v in points:
            ax.axvspan(t - timeline["step"] / 2, t + timeline["step"] / 2, color=colors.get(state, "#a0aec0"),
                       alpha=0.35, linewidth=0)
    handles, _labels = ax.get_legend_handles_labels()
    handles += [Patch(color=color, alpha=0.35, label="{} {}".format(ALERT_NAME, state))
                for state, color in colors.items()]
    stopped = monitoring.get("stopped") or {}
    for what, at in (("stopped " + stopped.get("unit", ""), stopped.get("at")),
                     ("update-status", stopped.get("repaired_at"))):
        if at:
            ax.axvline(at - timeline["start"], color="#2d3748", linestyle="--", linewidth=1)
            ax.annotate(what, (at - timeline["start"], ax.get_ylim()[1]), fontsize=7, rotation=90, va="top",
                        ha="right")
    ax.axhline(monitoring.get("threshold_seconds") or 180, color="#c53030", linewidth=0.8, linestyle=":")
    ax.set_xlabel("seconds since Prometheus started")
    ax.set_ylabel("handshake age, s")
    ax.set_title("handshake age per peer (Prometheus) and {} (threshold {} s, for {})".format(
        ALERT_NAME, monitoring.get("threshold_seconds"), monitoring.get("alert_for")), fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(handles=handles, fontsize=6, ncol=4, loc="upper left")


def _bars(report, fig, ax1, ax2):
    rps = [rp for rp in measure_parse.REFERENCE_POINTS if rp in report["reference_points"]
           and (report["reference_points"][rp].get("plain_throughput_bps") is not None
                or report["reference_points"][rp].get("wg_throughput_bps") is not None)]
    x = list(range(len(rps)))
    w = 0.38
    for ax, key, unit, scale in ((ax1, "throughput_bps", "Gbit/s", 1e9), (ax2, "rtt_avg_ms", "ms", 1.0)):
        wg = [(report["reference_points"][rp].get("wg_" + key) or 0) / scale for rp in rps]
        plain = [(report["reference_points"][rp].get("plain_" + key) or 0) / scale for rp in rps]
        ax.bar([i - w / 2 for i in x], wg, w, label="with WireGuard (this run)", color="#2b6cb0")
        ax.bar([i + w / 2 for i in x], plain, w, label="without (this run)", color="#a0aec0")
        for i, rp in enumerate(rps):
            t = thesis.values(rp)
            for dx, tv, marker in ((-w / 2, t["wg_" + key], "v"), (w / 2, t["plain_" + key], "^")):
                if tv is not None:
                    ax.plot(i + dx, tv / scale, marker, color="#c53030", markersize=8)
        ax.plot([], [], "v", color="#c53030", label="thesis (with / without)")
        ax.set_xticks(x)
        ax.set_xticklabels([rp.upper() for rp in rps])
        ax.set_ylabel(unit)
        ax.set_title("TCP throughput" if key == "throughput_bps" else "average ping RTT")
        ax.grid(axis="y", alpha=0.3)
    ax1.set_yscale("log")
    handles, labels = ax1.get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=8, loc="lower center", ncol=3, frameon=False)
    impl = report.get("wireguard", {}).get("implementation", "")
    fig.suptitle("VPNaaS testbed, NS {} ({})".format(report.get("ns", "?"), impl), fontsize=10)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
