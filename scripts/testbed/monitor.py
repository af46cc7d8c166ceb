"""The demo's monitoring part: Prometheus scraping every VNF's exporter, a health line per
interface from PromQL, and a stopped WireGuard daemon detected and cleared by the alert.

``stale_peer`` stops the WireGuard daemon of one peer (the requirer of the first tunnelled
reference point, e.g. the HSS's wg-s6a), waits until Prometheus fires WireGuardHandshakeStale
for that peer on the other end, then lets the charm repair it the way Juju would (the unit's
update-status hook: the charm checks its VNF and brings the device back) and waits until the
alert clears. Every wait is bounded and reports its progress.
"""
import os
import time

from testbed import tunnels
from testbed.measurement import dashboard, prometheus

ALERT = "WireGuardHandshakeStale"
POLL = 2.0
#: A session is usable until REJECT_AFTER_TIME (180 s) after its handshake: the health lines
#: count those, whatever threshold the demo's alert uses.
SESSION_SECONDS = 180
#: The handshake age: the rules file's recording rule over the exporter's timestamps.
AGE = "vpnaas:wireguard_peer_handshake_age_seconds"


def targets(tb, instances, port=9586):
    return {spec.name: "{}:{}".format(tb.vnfs[spec.name].mgmt_ip, port) for inst in instances for spec in inst.vnfs}


def _by(prom, expr, key="refpoint"):
    return {labels.get(key, ""): value for labels, value in prom.query(expr)}


def health(prom):
    """{refpoint: {...}}: what Prometheus says of each interface, every figure from a PromQL query."""
    parts = {
        "devices": "count by (refpoint) (vpnaas_wireguard_device_up)",
        "devices_up": "sum by (refpoint) (vpnaas_wireguard_device_up)",
        "peers": "sum by (refpoint) (vpnaas_wireguard_peer_configured)",
        "fresh": "count by (refpoint) ({} <= {})".format(AGE, SESSION_SECONDS),
        "max_age_s": "max by (refpoint) ({})".format(AGE),
        "rx_Bps": "sum by (refpoint) (rate(vpnaas_wireguard_peer_receive_bytes_total[30s]))",
        "tx_Bps": "sum by (refpoint) (rate(vpnaas_wireguard_peer_transmit_bytes_total[30s]))",
        "refused": "sum by (refpoint) (vpnaas_wireguard_peer_refused_prefixes)",
        "dropped": "sum by (refpoint) (vpnaas_wireguard_device_receive_dropped_total"
                   " + vpnaas_wireguard_device_transmit_dropped_total)",
    }
    out = {}
    for key, expr in parts.items():
        for rp, value in _by(prom, expr).items():
            out.setdefault(rp, {})[key] = value
    for labels, _v in prom.query("group by (refpoint, implementation, version) (vpnaas_wireguard_dataplane_info)"):
        impl = "{} {}".format(labels.get("implementation", "?"), labels.get("version", "")).strip()
        out.setdefault(labels.get("refpoint", ""), {}).setdefault("dataplane", set()).add(impl)
    for alert in prom.alerts():
        if alert["state"] == "firing":
            out.setdefault(alert["labels"].get("refpoint", ""), {}).setdefault("alerts", []).append(
                "{} {}".format(alert["labels"]["alertname"], alert["labels"].get("peer", "")).strip())
    return out


def health_lines(table):
    lines = []
    for rp in sorted(table):
        h = table[rp]
        lines.append(("{:5} devices {:.0f}/{:.0f} up, sessions usable (handshake <= {} s) {:.0f}/{:.0f}, "
                      "oldest handshake {}, rx {:,.0f} B/s, tx {:,.0f} B/s, dropped {:.0f}, refused prefixes {:.0f}, "
                      "{}, alerts: {}").format(
                         rp.upper(), h.get("devices_up", 0), h.get("devices", 0), SESSION_SECONDS, h.get("fresh", 0),
                         h.get("peers", 0), "{:.0f} s".format(h["max_age_s"]) if "max_age_s" in h else "-",
                         h.get("rx_Bps", 0), h.get("tx_Bps", 0), h.get("dropped", 0), h.get("refused", 0),
                         ", ".join(sorted(h.get("dataplane", ()))) or "no device",
                         ", ".join(h.get("alerts", [])) or "none"))
    return lines


def wait_scraped(prom, expected, progress, timeout=60):
    """Until every target is up and every device has a handshake-age series: (targets up, series)."""
    deadline = time.monotonic() + timeout
    while True:
        up = prom.targets_up()
        series = len(prom.query(AGE))
        peers = len(prom.query("vpnaas_wireguard_peer_configured"))
        if (up >= expected and series >= peers > 0) or time.monotonic() > deadline:
            progress("prometheus: {}/{} targets up, {} handshake-age series for {} configured peers".format(
                up, expected, series, peers))
            return up, series
        time.sleep(POLL)


def report(prom, tunnelled, progress):
    """The demo's report["prometheus"]: targets, series, a health line per interface, every
    dashboard query's answer, the stale-peer alert firing and clearing (the first of the
    ``tunnelled`` instances: demo.py's per-instance results) and the timeline of the picture."""
    up, series = wait_scraped(prom, len(prom.targets), progress)
    table = health(prom)
    panels = dashboard.check(prom)
    progress("dashboard {}: {} queries over {} reference points, {} empty{}".format(
        dashboard.DASHBOARD, panels["queries"], len(panels["refpoints"]), len(panels["empty"]),
        "".join("\n  EMPTY " + e for e in panels["empty"])))
    out = {"targets_up": up, "targets": len(prom.targets), "handshake_age_series": series,
           "rules_file": prometheus.RULES_FILE, "threshold_seconds": prom.threshold, "alert_for": prom.for_,
           "health": {rp: {k: sorted(v) if isinstance(v, set) else v for k, v in h.items()} for rp, h in table.items()},
           "health_lines": health_lines(table), "alert_fired_on_stopped_peer": False,
           "dashboard": panels}
    if tunnelled:
        out.update(stale_peer(prom.tb, prom, tunnelled[0]["inst"], tunnelled[0]["model"], progress, prom.threshold))
        time.sleep(2 * POLL)   # the cleared state into the picture
    out["timeline"] = timeline(prom, prom.started_at, time.time())
    return out


def _alert_state(prom, detector, device, peer):
    for alert in prom.alerts(ALERT):
        labels = alert["labels"]
        if (labels.get("vnf"), labels.get("device"), labels.get("peer")) == (detector, device, peer):
            return alert["state"]
    return None


#: The process name of each userspace implementation as the charms install it (vpnaas/vnf/dataplane.py).
DAEMONS = {"wireguard-go": "wireguard-go", "boringtun": "boringtun"}


def _stop_daemon(tb, vnf, device):
    """Stop the WireGuard data plane of ``device`` on ``vnf``: the userspace daemon the charm
    brought it up with (its record on the VNF), or the kernel device."""
    impl = vnf.exec(["cat", "/etc/wireguard/{}.impl".format(device)], check=False).stdout.strip()
    if impl in DAEMONS:
        comm = DAEMONS[impl]
        return "killed {} ({})".format(comm, ", ".join(vnf.kill(comm)) or "none running")
    if not impl and tb.userspace_wireguard:   # a device of a release before the record
        comm = os.path.basename(tunnels.boringtun_path() if "boringtun" in tb.userspace_wireguard
                                else tb.userspace_wireguard)[:15]
        return "killed {} ({})".format(comm, ", ".join(vnf.kill(comm)) or "none running")
    vnf.exec(["ip", "link", "del", device], check=False)
    return "deleted the kernel device"


def stale_peer(tb, prom, inst, model, progress, threshold, fire_timeout=None, clear_timeout=120):
    """Stop one peer's WireGuard, see the alert fire on the other end, repair, see it clear."""
    rp = next(r for r in inst.refpoints)
    device, victim, detector = "wg-" + rp.name, rp.requirer, rp.provider
    unit = next(u for u in model.units() if u.split("/")[0] == victim)
    stopped_at = time.time()
    how = _stop_daemon(tb, tb.vnfs[victim], device)
    progress("stopped {}'s WireGuard for {}: {}; waiting for {} on {} (threshold {} s, no traffic for 1 min)".format(
        victim, device, how, ALERT, detector, threshold))
    fired, t0 = _wait_state(prom, detector, device, unit, ("firing",), fire_timeout or threshold + 150, progress)
    fire_s = time.monotonic() - t0
    progress("alert {} for {} on {}: {} after {:.0f} s".format(
        ALERT, unit, detector, "FIRING" if fired else "not fired", fire_s))
    progress("restoring: update-status on {} (the charm checks its VNF and brings {} back)".format(unit, device))
    repaired_at = time.time()
    model.update_status([unit])
    cleared, t1 = _wait_state(prom, detector, device, unit, (None,), clear_timeout, progress)
    clear_s = time.monotonic() - t1
    progress("alert {} for {}: {} {:.0f} s after the repair".format(
        ALERT, unit, "cleared" if cleared else "STILL ACTIVE", clear_s))
    return {"stopped": {"vnf": victim, "unit": unit, "device": device, "how": how, "at": round(stopped_at, 1),
                        "repaired_at": round(repaired_at, 1)}, "detector": detector,
            "alert_fired_on_stopped_peer": fired, "seconds_to_fire": round(fire_s, 1),
            "alert_cleared_after_repair": cleared, "seconds_to_clear": round(clear_s, 1)}


def timeline(prom, start, end, step=2):
    """What the demo's picture shows under its bars: every peer's handshake age and the stale
    alert's pending/firing spans, from Prometheus (range queries), times relative to ``start``.
    {"step", "ages": {"<vnf> <device> <peer>": [[s, age], ...]}, "alerts": {"<vnf> <peer> <state>":
    [[s, 1], ...]}}."""
    def series(expr, key):
        out = {}
        for labels, values in prom.query_range(expr, start, end, step):
            out[key(labels)] = [[round(t - start, 1), round(v, 1)] for t, v in values]
        return out
    return {"step": step, "start": round(start, 1), "seconds": round(end - start, 1),
            "ages": series(AGE, lambda m: "{} {} {}".format(m.get("vnf", ""), m.get("device", ""), m.get("peer", ""))),
            "alerts": series('ALERTS{{alertname="{}"}}'.format(ALERT), lambda m: "{} {} {}".format(
                m.get("vnf", ""), m.get("peer", ""), m.get("alertstate", "")))}


def _wait_state(prom, detector, device, unit, wanted, timeout, progress):
    t0 = time.monotonic()
    last = t0
    while True:
        state = _alert_state(prom, detector, device, unit)
        if state in wanted:
            return True, t0
        now = time.monotonic()
        if now - t0 > timeout:
            return False, t0
        if now - last >= 15:
            progress("  ... {:.0f} s, alert state: {}".format(now - t0, state or "inactive"))
            last = now
        time.sleep(POLL)
