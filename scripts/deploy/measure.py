"""`make measure-remote`: iperf3 and ping over every interface of a deployed NS, through the
WireGuard tunnel and on the plain underlay, run on the VNFs with the charms' `run` action.

Addresses come from the rendered params file (the NS's static IP plan):
* through the tunnel: the VNFs' service addresses (``<rp>_service_addresses``), which the charms
  route into wg-<rp>; without them, the tunnel addresses (refpoints defaults);
* plain: the underlay addresses on the reference point's own virtual link (``vld`` named after it),
  or, where the NS has no such link (multi-site S6a), the management addresses OSM reports.
The client side follows the thesis (S6a: MME -> HSS; S1-C/S1-U: eNB -> MME/SPGW-U); S11 and SXab,
which the thesis did not measure, run requirer -> provider.
"""

import ipaddress
import json
import os

import measure_parse as mp

from deploy import prereq
from deploy.flows import instance_names, ns_tunnels_for, render_all
from deploy.osm import Osm, OsmError
from deploy.runner import Progress, quote_argv
from deploy.wait import parse_tunnels, tunnel_report
from vpnaas.core import refpoints, registry


def _first_address(value):
    if not value:
        return None
    first = str(value).split(",")[0].strip()
    return str(ipaddress.ip_interface(first).ip) if first else None


def member_params(rendered, member):
    for item in rendered.get("additionalParamsForVnf") or []:
        if str(item.get("member-vnf-index")) == member:
            return item.get("additionalParams") or {}
    return {}


def underlay_address(rendered, refpoint, member):
    for vld in rendered.get("vld") or []:
        if vld.get("name") != refpoint:
            continue
        for ref in vld.get("vnfd-connection-point-ref") or []:
            if str(ref.get("member-vnf-index-ref")) == member and ref.get("ip-address"):
                return str(ref["ip-address"])
    return _first_address(member_params(rendered, member).get("{}_endpoint_address".format(refpoint)))


def service_address(rendered, refpoint, member):
    return _first_address(member_params(rendered, member).get("{}_service_addresses".format(refpoint)))


def tunnel_address(refpoint, provider_side):
    net = refpoints.default_tunnel_network(refpoint)
    if not net:
        return None
    hosts = list(ipaddress.ip_network(net).hosts())
    return str(hosts[0] if provider_side else hosts[1])


def plan(tunnel, rendered, mgmt, wireguard):
    """The client/server members and the address pairs for one reference point."""
    rp = tunnel.refpoint
    client_is_provider = registry.load().reference_points[rp].client == "provider"
    client = tunnel.provider if client_is_provider else tunnel.requirer
    server = tunnel.requirer if client_is_provider else tunnel.provider
    out = {"refpoint": rp, "client": client, "server": server, "wg": None, "plain": None}
    if wireguard:
        c, s = service_address(rendered, rp, client), service_address(rendered, rp, server)
        if c and s:
            out["wg"] = {"client": c, "server": s, "ping_from": c}
        else:
            out["wg"] = {
                "client": tunnel_address(rp, client_is_provider),
                "server": tunnel_address(rp, not client_is_provider),
                "ping_from": "wg-" + rp,
            }
    c, s = underlay_address(rendered, rp, client), underlay_address(rendered, rp, server)
    if not (c and s):
        c, s = mgmt.get(client), mgmt.get(server)
    if c and s:
        out["plain"] = {"client": c, "server": s, "ping_from": c}
    return out


def remote(osm, ns, member, argv, timeout):
    """Run ``argv`` on the VNF through the charm's `run` action; return its output text."""
    results = osm.action(ns, member, "run", {"command": quote_argv(argv)}, timeout=timeout)
    if results is None:  # dry run
        return None
    return str(results.get("output", results.get("stdout", "")))


def measure_pair(cfg, osm, ns, pair, client, server, refpoint, errors, label):
    seconds = int(cfg.seconds("MEASURE_SECONDS"))
    count = int(cfg.seconds("PING_COUNT"))
    interval = cfg.seconds("PING_INTERVAL")
    mss = cfg.get("MEASURE_MSS_S6A") if refpoint == "s6a" else None
    iperf = ping = None
    try:
        remote(osm, ns, server, mp.iperf3_server_cmd(pair["server"], one_off=True, daemon=True), 120)
        out = remote(
            osm,
            ns,
            client,
            mp.iperf3_client_cmd(
                pair["client"],
                pair["server"],
                seconds=seconds,
                interval=int(cfg.seconds("MEASURE_INTERVAL")),
                mss=mss,
            ),
            seconds + 180,
        )
        iperf = None if out is None else mp.parse_iperf3_json(out)
    except (OsmError, mp.ParseError) as exc:
        errors.append("{} iperf3: {}".format(label, exc))
    try:
        out = remote(
            osm,
            ns,
            client,
            mp.ping_cmd(pair["server"], pair["ping_from"], count=count, interval=interval),
            int(count * interval) + 120,
        )
        ping = None if out is None else mp.parse_ping_summary(out)
    except (OsmError, mp.ParseError) as exc:
        errors.append("{} ping: {}".format(label, exc))
    return iperf, ping


def mgmt_addresses(osm, ns):
    """{member-vnf-index: management ip} from the NS's VNF records (vnf-show --literal)."""
    out = {}
    record = osm.show_literal("ns", ns) or {}
    for vnfr_id in record.get("constituent-vnfr-ref") or []:
        vnfr = osm.show_literal("vnf", vnfr_id) or {}
        if vnfr.get("member-vnf-index-ref") and vnfr.get("ip-address"):
            out[str(vnfr["member-vnf-index-ref"])] = vnfr["ip-address"]
    return out


def measure(ctx, variant_name):
    cfg, runner = ctx.cfg, ctx.runner
    variant = ctx.catalog.variant(variant_name)
    progress = Progress(runner, 4)
    progress.step("variant {} and its params".format(variant_name))
    rendered = render_all(ctx, variant)
    names = instance_names(cfg, variant)
    progress.step("prerequisites")
    osm_cmd, _ = prereq.check(cfg, runner, need_openstack=False)
    osm = Osm(runner, cfg, osm_cmd, ctx.state)
    progress.step(
        "measuring (iperf3 {} s, ping {} x {} s per path)".format(
            cfg.get("MEASURE_SECONDS"), cfg.get("PING_COUNT"), cfg.get("PING_INTERVAL")
        )
    )
    entry = ctx.state.instance(variant.name) or {}
    written = []
    for index, (ns, tunnels, nsd_id) in enumerate(ns_tunnels_for(ctx, osm, variant, names)):
        data = rendered[index][1] if len(rendered) > 1 else rendered[0][1]
        wireguard = bool(tunnels)
        if not tunnels:
            # No WireGuard: the same reference points exist as plain links; take them from the
            # NSD of a WireGuard sibling is not possible here, so use the params' links.
            tunnels = _plain_links(ctx, nsd_id)
        mgmt = mgmt_addresses(osm, ns)
        by_member = {}
        if wireguard:
            for member in sorted({m for t in tunnels for m in (t.provider, t.requirer)}):
                by_member[member] = parse_tunnels(osm.action(ns, member, "tunnel-status"))
        handshakes = tunnel_report(by_member, tunnels) if wireguard and not runner.dry_run else {}
        entries = measure_tunnels(cfg, osm, ns, tunnels, data, mgmt, wireguard, handshakes, progress)
        report = mp.build_report(
            entries,
            seconds_to_all_tunnels_up=entry.get("seconds_to_all_tunnels_up"),
            source="osm",
            variant=variant.name,
            ns=ns,
            nsd=nsd_id,
            iperf3_seconds=int(cfg.seconds("MEASURE_SECONDS")),
            ping_count=int(cfg.seconds("PING_COUNT")),
        )
        rel = (
            os.path.join("build", "deploy", variant.name, "report.json")
            if len(names) == 1 and variant.kind == "ns"
            else os.path.join("build", "deploy", variant.name, ns, "report.json")
        )
        if runner.dry_run:
            progress.note("dry run: the report would be written to {}".format(rel))
            continue
        path = os.path.join(cfg.root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            json.dump(report, f, indent=2)
        written.append(rel)
    progress.step("done")
    for rel in written:
        runner.say("report: {}".format(rel))
    return written


def measure_tunnels(cfg, osm, ns, tunnels, data, mgmt, wireguard, handshakes, progress):
    """{reference point: interface entry}: each path measured through WireGuard and on the plain
    underlay (or management) addresses, with its errors."""
    entries = {}
    for tunnel in tunnels:
        if tunnel.refpoint not in mp.REFERENCE_POINTS:
            continue
        p = plan(tunnel, data, mgmt, wireguard)
        errors = []
        progress.note("{} {}: {} -> {}".format(ns, tunnel.refpoint, p["client"], p["server"]))
        wg_iperf = wg_ping = plain_iperf = plain_ping = None
        if p["wg"]:
            wg_iperf, wg_ping = measure_pair(cfg, osm, ns, p["wg"], p["client"], p["server"], tunnel.refpoint,
                                             errors, "wireguard")
        if p["plain"]:
            plain_iperf, plain_ping = measure_pair(cfg, osm, ns, p["plain"], p["client"], p["server"],
                                                   tunnel.refpoint, errors, "plain")
        else:
            errors.append("plain: no underlay or management addresses for {}".format(tunnel.refpoint))
        hs = handshakes.get(tunnel.refpoint)
        entries[tunnel.refpoint] = mp.interface_entry(
            handshake=(hs["up"] if hs else None), plaintext_seen=None, wg_iperf=wg_iperf,
            plain_iperf=plain_iperf, wg_ping=wg_ping, plain_ping=plain_ping, client=p["client"],
            server=p["server"], wg_addresses=p["wg"], plain_addresses=p["plain"], errors=errors)
    return entries


def _plain_links(ctx, nsd_id):
    """Reference-point pairs of an NS without relations: the links named after reference points,
    with the two members connected to each (provider = the one the WireGuard NS names provider:
    MME for s6a/s11/s1c, SPGW-U for sxab/s1u)."""
    from deploy.catalog import Tunnel

    nsd = ctx.catalog.nsd(nsd_id)
    providers = {rp.name: rp.provider for rp in registry.load().reference_points.values()}
    out = []
    for df in (nsd.get("df") or [])[:1]:
        links = {}
        for profile in df.get("vnf-profile") or []:
            for conn in profile.get("virtual-link-connectivity") or []:
                links.setdefault(conn.get("virtual-link-profile-id"), []).append(str(profile["id"]))
        for rp in mp.REFERENCE_POINTS:
            ends = links.get(rp) or []
            if len(ends) == 2:
                prov = next((m for m in ends if providers.get(rp, "\0") in m), ends[0])
                req = next(m for m in ends if m != prov)
                out.append(Tunnel(rp, prov, rp, req, rp))
    return out
