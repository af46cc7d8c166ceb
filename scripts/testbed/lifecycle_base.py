"""What every `make lifecycle` operation shares: whether the tunnels are up with the current keys,
what an operation left behind, the probes, the testbed under test and one operation's record.

Kept apart from ``lifecycle`` (which runs the operations in order) so that the modules holding
operations (``lifecycle_heal``, ``lifecycle_scale``, ``lifecycle_faults``) import this one and
``lifecycle`` imports them: no module imports back the one that imports it (``python -m
testbed.lifecycle`` runs that file as ``__main__``: a module importing ``testbed.lifecycle`` back
would load it a second time, half-way through the first).
"""
import time

from testbed.measurement import probe

CONVERGE_TIMEOUT = 60


class LifecycleError(Exception):
    pass


# ---------------------------------------------------------------------- tunnels and what is left
def device_key(vnf, device):
    return vnf.wg_show(device, "public-key").strip()


def tunnel_ok(tb, rp):
    """Both ends have the device, each with exactly the other end's current key as its peer,
    and a completed handshake."""
    ends = (tb.vnfs[rp.provider], tb.vnfs[rp.requirer])
    device = "wg-" + rp.name
    keys = [device_key(v, device) for v in ends]
    if not all(keys):
        return False
    for vnf, other in ((ends[0], keys[1]), (ends[1], keys[0])):
        lines = vnf.wg_show(device, "latest-handshakes").split()
        peers = dict(zip(lines[0::2], lines[1::2]))
        if list(peers) != [other] or peers[other] == "0":
            return False
    return True


def wait_converged(tb, rps, since=None, timeout=CONVERGE_TIMEOUT, extra=None):
    """Seconds from ``since`` (a time.monotonic(); default now) until every tunnel of ``rps`` is
    up with the current keys (and ``extra()`` holds), or None after ``timeout``."""
    since = time.monotonic() if since is None else since
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(tunnel_ok(tb, rp) for rp in rps) and (extra is None or extra()):
            return time.monotonic() - since
        time.sleep(0.05)
    return None


def temporary_devices(tb, apps):
    """The temporary devices (``wr-*``) a key rotation left on the VNFs of ``apps``."""
    return ["{} {}".format(app, d) for app in apps
            for d in tb.vnfs[app].exec(["wg", "show", "interfaces"]).stdout.split() if d.startswith("wr-")]


def strict_rp_filter(tb):
    """Strict reverse-path filtering on every VNF, the strictest setting a VNF may have (Ubuntu's
    default is loose): a rotation must lose nothing even then (tunnels.sh, vpnaas_rp_loose)."""
    for vnf in tb.vnfs.values():
        vnf.exec(["sysctl", "-q", "-w", "net.ipv4.conf.all.rp_filter=1", "net.ipv4.conf.default.rp_filter=1"])


def interface_indexes(tb, inst):
    """{(vnf, device): ifindex} of every tunnel device (a re-created device gets a new index)."""
    out = {}
    for rp in inst.refpoints:
        for app in (rp.provider, rp.requirer):
            line = tb.vnfs[app].exec(["ip", "-o", "link", "show", "dev", "wg-" + rp.name], check=False).stdout
            out[(app, "wg-" + rp.name)] = line.split(":", 1)[0].strip()
    return out


#: pq-psk's runtime traces on a VNF (tunnels/pqpsk.sh): its state, log and pid files in /run/wireguard,
#: and a daemon of this VNF still running (the testbed's VNFs share the pid space, not the mounts).
PQ_PSK_LEFT = ("ls -d /run/wireguard/vpnaas-pq-psk* 2>/dev/null; me=$(readlink /proc/self/ns/mnt);"
               " for p in /proc/[0-9]*; do [ \"$(readlink \"$p/ns/mnt\" 2>/dev/null)\" = \"$me\" ] || continue;"
               " tr '\\0' ' ' < \"$p/cmdline\" 2>/dev/null | grep -q '[v]pnaas/pq-psk run'"
               " && echo \"daemon:${p#/proc/}\"; done; true")


def leftovers(tb, model, apps):
    """What the charms left on the VNFs of ``apps`` and in the model: each entry one finding."""
    found = []
    for app in apps:
        vnf = tb.vnfs[app]
        found += ["{}: device {}".format(app, d) for d in vnf.exec(["wg", "show", "interfaces"]).stdout.split()]
        found += ["{}: route {}".format(app, r) for r in
                  vnf.exec(["ip", "-o", "route", "show", "proto", "148"]).stdout.splitlines()]
        if vnf.exec(["ip", "link", "show", "dev", "vpnaas0"], check=False).returncode == 0:
            found.append("{}: service device vpnaas0".format(app))
        found += ["{}: address {}".format(app, line.split()[3]) for line in
                  vnf.exec(["ip", "-o", "addr", "show", "label", "lo:vpnaas"]).stdout.splitlines()]
        files = vnf.exec(["sh", "-c", "ls -A /etc/wireguard"]).stdout.split()
        found += ["{}: file /etc/wireguard/{}".format(app, f) for f in files]
        found += ["{}: pq-psk {}".format(app, f) for f in vnf.exec(["sh", "-c", PQ_PSK_LEFT]).stdout.split()]
    with model._lock:
        state = model._state
        found += ["relation {} still holds data".format(rid) for rid, rel in state["relations"].items()
                  if any(rel["data"].values())]
        found += ["unit {} still deployed".format(u) for u in state["units"]]
    return found


# ---------------------------------------------------------------------- probes
def start_probes(tb, rps):
    return [probe.Probe(tb.vnfs[rp.provider], rp.service[rp.provider], rp.service[rp.requirer], rp.name,
                        ends=(tb.vnfs[rp.provider], tb.vnfs[rp.requirer])).start()
            for rp in rps]


def stop_probes(probes, settle=1.0):
    """Let the probes run ``settle`` seconds more (the converged state), then count."""
    time.sleep(settle)
    return [p.stop() for p in probes]


# ---------------------------------------------------------------------- the operations
class Context(object):
    """The testbed EPS under test."""

    def __init__(self, tb, results, out_dir, progress, previous_charms=None):
        self.tb, self.out_dir, self.progress = tb, out_dir, progress
        self.inst, self.model, self.lcm = results["inst"], results["model"], results["lcm"]
        self.previous_charms = previous_charms

    def refpoints(self, *apps):
        return [rp for rp in self.inst.refpoints if not apps or rp.provider in apps or rp.requirer in apps]

    def spec(self, app):
        return next(s for s in self.inst.vnfs if s.name == app)


def record(name, started, converged, results, tb, rps, **more):
    """One operation's record; each probe's start is given in seconds from ``started`` (its gaps
    count from its own start: probe.py)."""
    for r in results:
        if "started" in r:
            r["started_s"] = round(r.pop("started") - started, 2)
    rec = {"name": name, "seconds_to_converge": round(converged, 3) if converged is not None else None,
           "packets_lost": sum(r["lost"] for r in results), "packets_sent": sum(r["sent"] for r in results),
           "tunnels_up_after": sum(1 for rp in rps if tunnel_ok(tb, rp)), "tunnels": len(rps),
           "probes": results, "leftovers": more.pop("leftovers", []),
           "seconds_total": round(time.monotonic() - started, 3)}
    rec.update(more)
    return rec


def rotate(ctx, name, app, fault=None, published=None):
    """rotate-keys on ``app`` (the rotating operations of lifecycle and lifecycle_faults);
    ``fault(model)`` arms a fault first. Converged when every tunnel of ``app`` is up with the new
    keys, no temporary device is left, and ``published()`` (what the peers had to publish)
    holds."""
    rps = ctx.refpoints(app)
    apps = sorted({app} | {rp.provider for rp in rps} | {rp.requirer for rp in rps})
    old = {rp.name: device_key(ctx.tb.vnfs[app], "wg-" + rp.name) for rp in rps}
    injected, retries = dict(ctx.model.faults.injected), sum(ctx.model.retries.values())
    hooks = len(ctx.model.hook_log)
    if fault:
        fault(ctx.model)
    probes = start_probes(ctx.tb, rps)
    started = time.monotonic()
    result = ctx.model.run_action(app + "/0", "rotate-keys", {}, wait=False)
    if result.status != "completed":
        raise LifecycleError("rotate-keys on {} failed: {}".format(app, result.message))
    ctx.model.settle()      # no update-status: only the hooks Juju runs for the change

    def rotated():
        return (all(device_key(ctx.tb.vnfs[app], "wg-" + rp.name) != old[rp.name] for rp in rps)
                and not temporary_devices(ctx.tb, apps) and (published is None or published(ctx)))
    converged = wait_converged(ctx.tb, rps, since=started, extra=rotated)
    results = stop_probes(probes)
    now = ctx.model.faults.injected
    return record(name, started, converged, results, ctx.tb, rps, rotation=result.results.get(
                      "rotation-wg-" + rps[0].name, ""), temporary_devices_after=temporary_devices(ctx.tb, apps),
                  faults_injected={k: now[k] - injected.get(k, 0) for k in now if now[k] != injected.get(k, 0)},
                  hook_retries=sum(ctx.model.retries.values()) - retries,
                  hooks_run=len(ctx.model.hook_log) - hooks)


def peer_keys_published(ctx, publisher, subject, refpoint):
    """True when ``publisher``'s relation data on ``refpoint`` lists ``subject``'s current key in
    ``peer-keys`` (what a unit whose component waits for its tunnels is woken by)."""
    rid = next(r for r, rel in ctx.model._state["relations"].items()
               if {a for a, _ep in rel["endpoints"]} == {publisher, subject}
               and any(ep == refpoint for _a, ep in rel["endpoints"]))
    key = device_key(ctx.tb.vnfs[subject], "wg-" + refpoint)
    bag = ctx.model.relation_data(rid).get(publisher + "/0", {})
    return key in bag.get("peer-keys", "").split(",")
