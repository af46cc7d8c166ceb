"""`make lifecycle`'s scale-out and scale-in of the SPGW-U (lifecycle.py runs them in order).

LCM 19's scaling is emulated by ``lcm_scale``; the peering with the hubs is ``deploy.scale``'s
``Scaler`` -- the code `python -m deploy scale` runs against OSM -- driving that emulation.
"""
import os
import threading
import time

from bundle import build_charms
from deploy import scale
from testbed import demo
from testbed import lifecycle_base as lc
from testbed.emulators import lcm_scale
from testbed.measurement import probe
from vpnaas.core import config as charm_config

SCALED = "spgwu"
#: How long the new tunnels are probed once up at least, and the replies each must have had
#: (traffic reaches the new instance) before the probes stop, or lc.CONVERGE_TIMEOUT s: a probe's
#: ping gets little CPU on a loaded machine, so its count in a fixed window is not the condition.
NEW_TUNNEL_PROBE, NEW_TUNNEL_REPLIES = 2.0, 30


def pair_up(tb, a, b, device):
    """``a`` and ``b`` each hold the other's current key on ``device`` with a completed handshake
    (a hub may hold other peers too)."""
    keys = {app: lc.device_key(tb.vnfs[app], device) for app in (a, b)}
    if not all(keys.values()):
        return False
    for app, other in ((a, b), (b, a)):
        lines = tb.vnfs[app].wg_show(device, "latest-handshakes").split()
        if dict(zip(lines[0::2], lines[1::2])).get(keys[other], "0") == "0":
            return False
    return True


def scaler(ctx):
    """deploy.scale's Scaler -- the code `python -m deploy scale` runs against OSM -- on the
    emulated LCM (lcm_scale.Vnfm), one for the whole run."""
    if getattr(ctx, "_scaler", None) is None:
        vnfm = lcm_scale.Vnfm(ctx.tb, ctx.model, ctx.inst.vnfs, ctx.inst.relations, ctx.progress,
                        before_primitives=demo.prepare_standin)
        spec = scale.ScaleSpec.for_component(SCALED, [s.member for s in ctx.inst.vnfs],
                                             vdu=ctx.spec(SCALED).vdu, aspect=ctx.spec(SCALED).scaling.name)
        ctx._scaler = scale.Scaler(vnfm, spec, progress=ctx.progress, timeout=lc.CONVERGE_TIMEOUT, poll=0.1)
    return ctx._scaler


def current_charms(ctx, apps):
    """The SPGW-U and its hubs on this checkout's charms (deploy scale needs this release's
    tunnel-status; a run with the previous revision's charms and no upgrade-charm has older ones)."""
    current = build_charms.output_dir("local")
    moved = []
    for app in apps:
        spec = ctx.spec(app)
        wanted = os.path.join(current, os.path.basename(spec.charm_dir))
        if spec.charm_dir != wanted:
            spec.charm_dir = wanted
            ctx.model.upgrade_charm(app, wanted)
            moved.append(app)
    if moved:
        ctx.model.settle()
        ctx.progress("scale-out: {} upgraded to this checkout's charms first".format(", ".join(moved)))
        if lc.wait_converged(ctx.tb, ctx.refpoints(*moved)) is None:
            raise lc.LifecycleError("the tunnels of {} did not come back after the upgrade".format(", ".join(moved)))


def instance_tunnels(ctx, k):
    """[(hub, endpoint, instance k's app, its service address, the hub's)] of instance k."""
    sc = scaler(ctx)
    app = sc.vnfm.live[SCALED][k].name
    config = dict(ctx.spec(SCALED).config, **{"osm-instance": "{{count_index: {}}}".format(k)})
    out = []
    for endpoint, hub in sorted(sc.spec.hubs.items()):
        rp = next(r for r in ctx.inst.refpoints if r.name == endpoint)
        own = str(charm_config.own_service_addresses(config, endpoint)[0].ip)
        out.append((hub, endpoint, app, own, rp.service[hub]))
    return out


def op_scale_out(ctx):
    """A new SPGW-U instance: LCM's scale-out (new VM, new application, its day-1), then the
    deploy tool's peering with the hubs (SPGW-C on SXab, eNB on S1-U). Converged when both new
    tunnels have handshaken, measured from the end of the new charm's day-1; the tunnels of
    instance 0 are probed throughout, the new ones once up for NEW_TUNNEL_PROBE s and until each
    had NEW_TUNNEL_REPLIES replies."""
    rps = ctx.refpoints(SCALED)
    sc = scaler(ctx)
    current_charms(ctx, [SCALED] + sorted(set(sc.spec.hubs.values())))
    probes = lc.start_probes(ctx.tb, rps)
    started = time.monotonic()
    # Each new tunnel's moment of coming up, watched while the deploy tool peers it.
    up_at, watching = {}, threading.Event()

    def watch():
        while not watching.is_set():
            live = sc.vnfm.live[SCALED]
            if len(live) > 1:
                for hub, ep, app, _own, _hub_addr in instance_tunnels(ctx, max(live)):
                    if ep not in up_at and app in ctx.tb.vnfs and pair_up(ctx.tb, app, hub, "wg-" + ep):
                        up_at[ep] = time.monotonic()
            time.sleep(0.05)
    watcher = threading.Thread(target=watch, name="scale-out-watch", daemon=True)
    watcher.start()
    try:
        k = sc.scale_out()
        new = instance_tunnels(ctx, k)
        lc.wait_converged(ctx.tb, [], extra=lambda: len(up_at) == len(new))
    finally:
        watching.set()
        watcher.join()
    day1_end = sc.vnfm.reports[-1].config_done_at
    per_tunnel = {ep: round(t - day1_end, 3) for ep, t in sorted(up_at.items())}
    converged = max(per_tunnel.values()) if len(per_tunnel) == len(new) else None
    fresh = [probe.Probe(ctx.tb.vnfs[app], own, hub_addr, "{}-{}".format(ep, app)).start()
             for hub, ep, app, own, hub_addr in new]
    time.sleep(NEW_TUNNEL_PROBE)
    deadline = time.monotonic() + lc.CONVERGE_TIMEOUT
    while any(p.received() < NEW_TUNNEL_REPLIES for p in fresh) and time.monotonic() < deadline:
        time.sleep(0.05)
    results = lc.stop_probes(probes, settle=0) + lc.stop_probes(fresh, settle=0)
    up = sum(1 for rp in rps if pair_up(ctx.tb, rp.provider, rp.requirer, "wg-" + rp.name)) + sum(
        1 for hub, ep, app, _o, _h in new if pair_up(ctx.tb, app, hub, "wg-" + ep))
    rec = lc.record("scale-out", started, converged, results, ctx.tb, rps, instance=k,
                  new_tunnels=["wg-{} {}<->{}".format(ep, app, hub) for hub, ep, app, _o, _h in new],
                  seconds_day1_to_each_new_tunnel_up=per_tunnel,
                  new_tunnel_packets_received=sum(r["received"] for r in results[len(rps):]),
                  note="seconds_to_converge: from the end of the new charm's day-1 to both new tunnels up")
    rec.update(tunnels_up_after=up, tunnels=len(rps) + len(new))
    return rec


def op_scale_in(ctx):
    """The highest SPGW-U instance removed: the deploy tool's remove-peer on the hubs, then LCM's
    scale-in (application destroyed, VM deleted). Converged when no hub holds its keys, routes
    or addresses and nothing of it is left in the model; instance 0's tunnels are probed."""
    rps = ctx.refpoints(SCALED)
    sc = scaler(ctx)
    k = max(sc.vnfm.instances(SCALED))
    tunnels = instance_tunnels(ctx, k)
    app = tunnels[0][2]
    vnf = ctx.tb.vnfs[app]
    keys = {ep: lc.device_key(vnf, "wg-" + ep) for _h, ep, _a, _o, _x in tunnels}
    gone = [own for _h, _e, _a, own, _x in tunnels] + [
        vnf.exec(["ip", "-o", "-4", "addr", "show", "dev", "wg-" + ep]).stdout.split()[3].split("/")[0]
        for _h, ep, _a, _o, _x in tunnels]
    probes = lc.start_probes(ctx.tb, rps)
    started = time.monotonic()
    sc.scale_in()

    def left():
        found = []
        for hub, ep, _a, _o, _x in tunnels:
            peers = ctx.tb.vnfs[hub].wg_show("wg-" + ep, "peers").split()
            found += ["{}: peer {} on wg-{}".format(hub, keys[ep][:8], ep) for key in peers if key == keys[ep]]
            routes = ctx.tb.vnfs[hub].exec(["ip", "-o", "route", "show"]).stdout
            found += ["{}: route to {}".format(hub, a) for a in gone if a + " " in routes or a + "/" in routes]
        found += ["unit {} still deployed".format(u) for u in ctx.model.units(app)]
        found += ["VM {} still exists".format(app)] if app in ctx.tb.vnfs else []
        return found
    converged = lc.wait_converged(ctx.tb, [], since=started, extra=lambda: not left())
    results = lc.stop_probes(probes)
    up = sum(1 for rp in rps if pair_up(ctx.tb, rp.provider, rp.requirer, "wg-" + rp.name))
    rec = lc.record("scale-in", started, converged, results, ctx.tb, rps, instance=k, leftovers=left(),
                  removed=sorted(gone))
    rec.update(tunnels_up_after=up)
    return rec
