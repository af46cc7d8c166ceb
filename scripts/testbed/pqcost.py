"""`make bench`'s cost of the post-quantum preshared key (issue 41): the EPS instantiated with
every ``<ep>-pq-psk`` true (the charms' default) and with every one false, in interleaved rounds.

The contract it measures against: each charm has an option ``<ep>-pq-psk`` per reference point
(boolean, default true; false: the tunnel stays classical) and one ``pq-psk-renewal-seconds``.
"With" runs are the control part's EPS instantiations themselves (the charms' defaults); each
records, besides the time to every handshake, the time until every device has a preshared key
for each of its peers and both ends of each tunnel hold the same one (read with `wg show`,
compared here and never kept). "Without" runs set every ``<ep>-pq-psk`` of the NS false in the
config primitive's parameters, so the charms apply a classical tunnel from the start. A charm
build without the options (before the mechanism lands) is detected from the built charms'
config.yaml: the report then says "pq-psk not available in this build" and no extra run is made.
"""
import hashlib
import os
import time

import yaml

from testbed.measurement import benchstats

RENEWAL_OPTION = "pq-psk-renewal-seconds"
SUFFIX = "-pq-psk"
NOT_AVAILABLE = "pq-psk not available in this build"
PSK_TIMEOUT = 120
#: What each side reports per run (convergence.convergence_record and ``psk_record``).
METRICS = ("seconds_after_last_config", "cpu_seconds", "seconds_to_pq_psk_after_last_config", "cpu_seconds_to_pq_psk")


class PskError(Exception):
    pass


def charm_options(charm_dir):
    """The option names of a built charm (its config.yaml); none when it has no config.yaml."""
    path = os.path.join(charm_dir, "config.yaml")
    if not os.path.isfile(path):
        return set()
    with open(path) as f:
        return set(((yaml.safe_load(f) or {}).get("options") or {}))


def pq_options(inst):
    """{application: [its ``<ep>-pq-psk`` options]} of the instance's tunnelled members, or None
    when one of them lacks the options (a build from before the mechanism)."""
    out = {}
    for spec in inst.vnfs:
        options = charm_options(spec.charm_dir)
        wanted = sorted(o for o in options if o.endswith(SUFFIX))
        if not wanted or RENEWAL_OPTION not in options:
            return None
        out[spec.name] = wanted
    return out


def without_pq(options):
    """An ``adjust`` for convergence.run_eps_once: every ``<ep>-pq-psk`` false in the config
    primitive's parameters (the charms then never derive a PSK)."""
    def adjust(inst):
        for spec in inst.vnfs:
            for option in options.get(spec.name, ()):
                spec.config[option] = False
    return adjust


def psk_fingerprints(vnf, device):
    """{peer public key: digest of its PSK or None for "(none)"} of one device (the PSK itself
    is hashed at once and never kept)."""
    out = {}
    for line in vnf.wg_show(device, "preshared-keys").splitlines():
        fields = line.split()
        if len(fields) == 2:
            out[fields[0]] = None if fields[1] == "(none)" else hashlib.sha256(fields[1].encode()).hexdigest()
    return out


def psks_agree(tunnels):
    """``tunnels``: [(vnf a, vnf b, device)]. True when, on every tunnel, each end has a PSK for
    each of its peers and both ends hold the same one."""
    for a, b, device in tunnels:
        fa, fb = psk_fingerprints(a, device), psk_fingerprints(b, device)
        if not fa or not fb or None in fa.values() or None in fb.values():
            return False
        if set(fa.values()).isdisjoint(fb.values()):
            return False
    return True


def wait_psks(tunnels, timeout=PSK_TIMEOUT):
    """Poll until ``psks_agree``; the monotonic time it did."""
    deadline = time.monotonic() + timeout
    while not psks_agree(tunnels):
        if time.monotonic() > deadline:
            raise PskError("no post-quantum PSK on every tunnel {} s after the handshakes".format(timeout))
        time.sleep(0.05)
    return time.monotonic()


def psk_record(model, tunnels, ticks, cpu_record, timeout=PSK_TIMEOUT):
    """The "with" side's extra figures: seconds from the last config primitive until every tunnel
    has its PQ PSK, and the machine's CPU time from the first one until then (``ticks``: a
    function reading the machine's counters; ``cpu_record``: convergence.cpu_record)."""
    t_psk = wait_psks(tunnels, timeout)
    first, last = min(model.config_times), max(model.config_times)
    cpu = cpu_record(model.ticks_at_first_config, ticks(), t_psk - first)
    return {"seconds_to_pq_psk_after_last_config": t_psk - last, "cpu_seconds_to_pq_psk": cpu["cpu_seconds"]}


def tunnels_of(tb, inst):
    """[(provider VNF, requirer VNF, device)] of every reference point of the instance."""
    return [(tb.vnfs[rp.provider], tb.vnfs[rp.requirer], "wg-" + rp.name) for rp in inst.refpoints]


def cost(with_runs, without_runs, available=True):
    """``pq_psk_cost`` of summary.json: per side the median (min-max, n) of each metric, and the
    with/without ratio of the medians and of each round's pair (the rounds are interleaved)."""
    if not available:
        return {"available": False, "note": NOT_AVAILABLE,
                "without": benchstats.summarize_rounds([_pick(r) for r in with_runs])}
    out = {"available": True, "rounds": min(len(with_runs), len(without_runs)),
           "with": benchstats.summarize_rounds([_pick(r) for r in with_runs]),
           "without": benchstats.summarize_rounds([_pick(r) for r in without_runs]), "ratio": {}}
    for key, base in (("seconds_after_last_config", "seconds_after_last_config"), ("cpu_seconds", "cpu_seconds"),
                      ("seconds_to_pq_psk_after_last_config", "seconds_after_last_config"),
                      ("cpu_seconds_to_pq_psk", "cpu_seconds")):
        w = [r.get(key) for r in with_runs]
        wo = [r.get(base) for r in without_runs]
        out["ratio"][key] = {"of_medians": benchstats.ratio(benchstats.summarize(w)["median"],
                                                            benchstats.summarize(wo)["median"]),
                             "per_round": benchstats.summarize(benchstats.paired_ratios(w, wo))}
    return out


def _pick(record):
    return {k: record[k] for k in METRICS if record.get(k) is not None}
