"""Bounded waiting: NS/NSI ready, every charm active, every tunnel with a recent handshake."""

import json

from measure_parse import HANDSHAKE_FRESH_SECONDS, tunnel_is_up

from deploy.osm import OsmError


class WaitError(Exception):
    pass


def poll(runner, progress, what, check, timeout, interval):
    """Call ``check()`` -> (done, summary) until done, printing the summary whenever it changes and
    at least every ``interval``; raise WaitError after ``timeout`` seconds. A dry run calls it once
    (which prints the reads it would repeat) and does not wait."""
    deadline = runner.clock() + timeout
    last = None
    while True:
        done, summary = check()
        if runner.dry_run:
            progress.note(
                "{}: dry run, not waiting (would poll every {:.0f} s for at most {:.0f} s)".format(
                    what, interval, timeout
                )
            )
            return summary
        if summary != last or done:
            progress.note("{}: {}".format(what, summary))
            last = summary
        if done:
            return summary
        if runner.clock() >= deadline:
            raise WaitError("{} not reached within {:.0f} s; last state: {}".format(what, timeout, summary))
        runner.sleep(min(interval, max(0.0, deadline - runner.clock())))


# -- NS record --------------------------------------------------------------------------------


def ns_state(record):
    """(done, failed, summary) of an NS record from `osm ns-show --literal`."""
    if record is None:
        return False, False, "no record yet"
    ns_state_ = str(record.get("nsState") or "").upper()
    oper = str(record.get("operational-status") or "").lower()
    config = str(record.get("config-status") or "").lower()
    failed = ns_state_ == "BROKEN" or oper == "failed" or config == "failed"
    ready = (oper == "running" and config in ("configured", "config_not_needed")) or (
        ns_state_ == "READY" and not oper
    )
    summary = "state {} / operational {} / config {}".format(ns_state_ or "-", oper or "-", config or "-")
    if failed:
        summary += ": " + str(record.get("detailed-status") or record.get("errorDetail") or "")[:500]
    return ready, failed, summary


def charm_states(record):
    """{name: status} of every execution environment: the Juju workload status from vcaStatus when
    OSM reports it, else OSM's own configurationStatus (READY once its primitives ran)."""
    states = {}
    for model in ((record or {}).get("vcaStatus") or {}).values():
        for app_name, app in ((model or {}).get("applications") or {}).items():
            status = (app or {}).get("status") or {}
            value = status.get("status") if isinstance(status, dict) else status
            units = (app or {}).get("units") or {}
            for unit in units.values():
                ws = unit.get("workload-status") or unit.get("workload_status") or {}
                if isinstance(ws, dict) and ws.get("status"):
                    value = ws["status"] if value in (None, "active") else value
            states[app_name] = str(value or "unknown")
    if states:
        return states
    for i, ee in enumerate((record or {}).get("configurationStatus") or []):
        name = ee.get("elementUnderConfiguration") or ee.get("member-vnf-index") or str(i)
        status = str(ee.get("status") or "unknown")
        states[name] = "active" if status.upper() == "READY" else status.lower()
    return states


def wait_ns_ready(runner, progress, osm, ns_names, cfg):
    def check():
        parts, all_done = [], True
        for name in ns_names:
            record = osm.show_literal("ns", name)
            ready, failed, summary = ns_state(record)
            if failed:
                raise WaitError("NS {} failed: {}".format(name, summary))
            charms = charm_states(record)
            active = sum(1 for s in charms.values() if s == "active")
            blocked = {n: s for n, s in charms.items() if s in ("blocked", "error")}
            if blocked and ready:
                raise WaitError("NS {}: charms not active: {}".format(name, blocked))
            done = ready and bool(charms) and active == len(charms)
            all_done = all_done and done
            parts.append("{}: {}, charms active {}/{}".format(name, summary, active, len(charms)))
        return all_done, "; ".join(parts)

    return poll(
        runner,
        progress,
        "NS ready and charms active",
        check,
        cfg.seconds("NS_READY_TIMEOUT"),
        cfg.seconds("POLL_INTERVAL"),
    )


# -- tunnels ----------------------------------------------------------------------------------


def parse_tunnels(results):
    """The charms' tunnel-status result: key ``tunnels`` holding JSON text (or already a list)."""
    if results is None:
        return []
    value = results.get("tunnels")
    if value is None:
        raise OsmError("tunnel-status returned no 'tunnels' result: {}".format(sorted(results)))
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise OsmError("tunnel-status 'tunnels' is not JSON: {}".format(exc)) from None
    if not isinstance(value, list):
        raise OsmError("tunnel-status 'tunnels' is not a list")
    return value


def tunnel_report(tunnels_by_member, nsd_tunnels, fresh=HANDSHAKE_FRESH_SECONDS):
    """{refpoint: {"up": bool, "ages": {member: [ages]}, ...}} for every NSD tunnel, both sides."""
    out = {}
    for t in nsd_tunnels:
        sides = ((t.provider, t.provider_endpoint), (t.requirer, t.requirer_endpoint))
        up, ages = True, {}
        for member, endpoint in sides:
            entry = next(
                (
                    d
                    for d in tunnels_by_member.get(member, [])
                    if d.get("endpoint") == endpoint or d.get("device") == "wg-" + str(endpoint)
                ),
                None,
            )
            if entry is None:
                up = False
                ages[member] = None
                continue
            ages[member] = [p.get("latest-handshake-age") for p in entry.get("peers") or []]
            up = up and tunnel_is_up(entry, fresh)
        out[t.refpoint] = {"up": up, "ages": ages, "provider": t.provider, "requirer": t.requirer}
    return out


def wait_tunnels(runner, progress, osm, ns_tunnels, cfg):
    """``ns_tunnels``: [(ns name or id, [Tunnel])]. Returns {ns: tunnel_report}."""
    latest = {}

    def check():
        all_up, parts = True, []
        for ns, tunnels in ns_tunnels:
            members = []
            for t in tunnels:
                for m in (t.provider, t.requirer):
                    if m not in members:
                        members.append(m)
            by_member = {}
            for member in members:
                try:
                    by_member[member] = parse_tunnels(osm.action(ns, member, "tunnel-status"))
                except OsmError as exc:
                    # A charm still busy (e.g. applying config) is retried on the next poll.
                    progress.note("tunnel-status on {} {}: {}".format(ns, member, exc))
                    by_member[member] = []
            report = tunnel_report(by_member, tunnels)
            latest[ns] = report
            up = sorted(rp for rp, r in report.items() if r["up"])
            all_up = all_up and len(up) == len(report)
            parts.append("{}: {}/{} up ({})".format(ns, len(up), len(report), ", ".join(up) or "none"))
        return all_up, "; ".join(parts)

    poll(
        runner,
        progress,
        "tunnels with a handshake younger than {} s".format(HANDSHAKE_FRESH_SECONDS),
        check,
        cfg.seconds("TUNNEL_TIMEOUT"),
        cfg.seconds("POLL_INTERVAL"),
    )
    # A dry run saw no results: report nothing rather than every tunnel "down".
    return {} if runner.dry_run else latest
