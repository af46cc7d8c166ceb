"""Statistics, targets and the terminal table of `make bench` (pure functions: no I/O).

Kept apart from bench.py so that the arithmetic is unit-tested without root or namespaces.
"""
import statistics

#: The issues' targets (measured on the 2-core development machine; the convergence ones: issue 37).
TARGETS = {
    "tcp1_ratio": ("TCP 1 stream, charms' tunnel / plain link (same run)", ">=", 0.15),
    "product_vs_bare": ("TCP 1 stream, charms' tunnel / bare WireGuard pair (worst EPS interface, else the pair)",
                        ">=", 0.95),
    "added_rtt_ms": ("added average RTT through the charms' tunnel (ms)", "<=", 0.2),
    "eps_seconds_after_last_config": ("all 5 EPS tunnels up after the last config primitive (s)", "<=", 5.0),
    # Juju runs relation-created and relation-joined once per relation and remote unit whatever any
    # charm does, and relation-changed right after joined (docs/bench.md, "Hook runs per unit and
    # relation"): the target counts the relation-changed runs; the total of every kind is reported
    # beside it (benchreport.targets).
    "eps_max_changed_per_unit_relation": ("relation-changed runs per unit and relation (EPS, worst)", "<=", 3),
    "logins_per_session": ("SSH logins per session the charms opened (sshd logins / reconciles + checks)",
                           "<=", 1.0),
    "synthetic_32_over_8": ("32-tunnel / 8-tunnel convergence time", "<=", 3.0),
    "synthetic_cpu_32_over_8": ("32-tunnel / 8-tunnel convergence CPU work", "<=", 4.0),
    "spoke_join_packets_lost": ("echoes an existing spoke lost while spokes joined its hub", "<=", 0),
    "bench_minutes": ("make bench duration (minutes)", "<=", 15.0),
}


def summarize(values):
    """{"n", "median", "min", "max"} of the numbers in ``values`` (None entries are ignored)."""
    nums = [float(v) for v in values if v is not None]
    if not nums:
        return {"n": 0, "median": None, "min": None, "max": None}
    return {"n": len(nums), "median": statistics.median(nums), "min": min(nums), "max": max(nums)}


def ratio(numerator, denominator):
    if numerator is None or not denominator:
        return None
    return float(numerator) / float(denominator)


def paired_ratios(numerators, denominators):
    """Per-round ratios (the tunnel and the plain link measured in the same round: outside load
    hits both alike, so the ratio spreads less than either figure)."""
    return [ratio(n, d) for n, d in zip(numerators, denominators)]


def summarize_rounds(rounds):
    """``rounds``: [{metric: number}] -> {metric: summary}; metrics missing in a round count as None."""
    keys = sorted({k for r in rounds for k in r})
    return {k: summarize([r.get(k) for r in rounds]) for k in keys}


def check_target(name, measured):
    """{"name", "text", "op", "target", "measured", "met"}; met is None when nothing was measured."""
    text, op, target = TARGETS[name]
    met = None
    if measured is not None:
        met = measured >= target if op == ">=" else measured <= target
    return {"name": name, "text": text, "op": op, "target": target, "measured": measured, "met": met}


def growth(times_by_size, small, big):
    """Convergence growth between two topology sizes: median(big) / median(small)."""
    s = summarize(times_by_size.get(small, []))["median"]
    b = summarize(times_by_size.get(big, []))["median"]
    return ratio(b, s)


def fmt(value, digits=3):
    if value is None:
        return "-"
    if isinstance(value, float):
        return "{:,.{}f}".format(value, digits)
    return str(value)


def table(head, rows):
    """Left-aligned first column, right-aligned others; a rule under the head."""
    cells = [list(map(str, head))] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(head))]
    lines = ["  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))) for r in cells]
    lines.insert(1, "-" * len(lines[0]))
    return "\n".join(lines)


def summary_rows(summaries, scale=1.0, digits=3, label=None):
    """Rows (metric, median, min, max, n) of a {metric: summary} dict, values divided by ``scale``."""
    rows = []
    for key, s in summaries.items():
        vals = [None if s[k] is None else s[k] / scale for k in ("median", "min", "max")]
        rows.append([label(key) if label else key] + [fmt(v, digits) for v in vals] + [s["n"]])
    return rows
