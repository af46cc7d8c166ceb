"""Scale-out and scale-in of a VDU whose execution environment OSM never relates (SPGW-U).

OSM's LCM (19) gives a new VDU instance its own VM and execution environment and runs its day-1,
but resolves the NS relations' ends to the count-index-0 records: the new application is never
related, so its hubs (the SPGW-C on SXab, the eNB on S1-U) never hear of it; on scale-in they
get no relation event either. What the tunnels need is done here, with the charms' own day-2
primitives on the instances OSM names by count index (``osm ns-action --vdu_count k``):

scale-out  ``vnf-scale --scale-out``; wait until the new instance k answers ``tunnel-status``
           (its day-1 ran); on k, ``add-peer`` each hub (its key, endpoint, tunnel and service
           addresses from the hub's ``tunnel-status``), which creates k's device; on each hub,
           ``add-peer`` k (from k's ``tunnel-status``); then wait for the handshakes.
scale-in   the highest instance (OSM removes the last one): ``remove-peer`` its peers on every
           hub (the peers with its addresses), then ``vnf-scale --scale-in``, then check that no
           hub holds them any more.
peer       the scale-out peering again for every instance above 0 (a repair; changes nothing
           where it is done).

Every step is idempotent (an add-peer the hub holds already changes nothing; a remove-peer of a
peer no hub holds is done already), so a run that stopped half-way is finished by running it
again. What an instance reports is not trusted (deploy.scale_trust): instance k's addresses are
derived from instance 0's, a key belongs to the one peer that held it first, and a hub's peer of
instance k is found by instance k's addresses, so an operation on one instance never changes
another instance's peer.

The code talks to a ``vnfm`` with three methods -- ``instances(member)`` (the count indexes of the
scaled VDU), ``scale(member, aspect, out)`` (returns when OSM's operation ended) and
``action(member, primitive, params, count_index)`` (the results, or raises) -- : ``OsmVnfm``
below drives the ``osm`` CLI, the testbed's emulated LCM implements the same three
(testbed/emulators/lcm_scale.py), so ``make lifecycle`` runs this very code.
"""

import ipaddress
import json
import time

from deploy import prereq
from deploy import scale_trust as trust
from deploy.catalog import vdu_members
from deploy.flows import instance_names
from deploy.osm import Osm
from vpnaas.core import registry


class ScaleError(Exception):
    pass


class ScaleSpec:
    """What scales: a member of the NS, its VDU and scaling aspect, and the hub of each of its
    tunnel endpoints ({endpoint: hub member}: the other end of the registry's reference point)."""

    def __init__(self, member, vdu, aspect, hubs):
        self.member, self.vdu, self.aspect, self.hubs = member, vdu, aspect, dict(hubs)

    @classmethod
    def for_component(cls, component, members, vdu=None, aspect=None):
        """The hubs of ``component`` among ``members`` (member ids of the NS; ours are the
        component names)."""
        hubs = {}
        for rp in registry.load().reference_points.values():
            other = rp.requirer if rp.provider == component else rp.provider if rp.requirer == component else None
            if other in members:
                hubs[rp.name] = other
        if not hubs:
            raise ScaleError("{} has no tunnel to another member of this NS: nothing to peer".format(component))
        return cls(component, vdu or component, aspect or component + "-scale", hubs)


def device_entry(results, endpoint, who):
    """The tunnel-status entry of ``wg-<endpoint>`` from an action's results."""
    try:
        tunnels = json.loads(results.get("tunnels") or "[]")
    except (TypeError, ValueError):
        raise ScaleError("tunnel-status of {} returned no tunnel list".format(who)) from None
    for dev in tunnels if isinstance(tunnels, list) else []:
        if isinstance(dev, dict) and dev.get("endpoint") == endpoint and not dev.get("temporary"):
            return dev
    return None


def _host_port(host, port):
    return "[{}]:{}".format(host, port) if ":" in host else "{}:{}".format(host, port)


def peer_params(dev, endpoint):
    """add-peer parameters that make ``dev`` (a tunnel-status entry) a peer on ``endpoint``: its
    key, endpoint, tunnel address and service addresses as host prefixes."""
    if not dev.get("public-key") or not dev.get("address"):
        raise ScaleError("wg-{} has no key or address yet".format(endpoint))
    if "endpoint-address" not in dev:
        # A charm of an earlier release reports neither its endpoint nor its service addresses:
        # a peer added without them would never handshake. Upgrade its charm first.
        raise ScaleError("wg-{}: tunnel-status names no endpoint-address (a charm older than this tool: "
                         "run upgrade-charm first)".format(endpoint))
    own = [ipaddress.ip_interface(dev["address"]).ip] + [
        ipaddress.ip_interface(a).ip for a in dev.get("service-addresses") or []]
    allowed = ",".join("{}/{}".format(ip, ip.max_prefixlen) for ip in own)
    host = dev.get("endpoint-address") or ""
    return {"device": endpoint, "public-key": dev["public-key"],
            "endpoint": _host_port(host, dev["listen-port"]) if host else "", "allowed-ips": allowed}


#: How many times in all an action of the peering runs while it fails (RunAgain).
STEP_ATTEMPTS = 3
#: A failure that is the charm's answer, which running the action again would only repeat.
FINAL_ANSWERS = ("no manual peer with that key",)


class RunAgain:
    """The ``vnfm`` with each action run again when it fails, STEP_ATTEMPTS times in all. An
    action can fail without anything being wrong: when its unit agent restarts while it runs, Juju
    fails it ("action terminated") and never runs it again, nor does OSM's LCM
    (``_ns_execute_primitive``, retries=0), whose message does not say why an action failed
    (docs/lifecycle.md). Every action of the peering is idempotent (tunnel-status reads, add-peer
    and remove-peer converge), so running it again is always safe."""

    def __init__(self, vnfm, progress, sleep, poll):
        self.vnfm, self.progress, self.sleep, self.poll = vnfm, progress, sleep, poll

    def __getattr__(self, name):
        return getattr(self.vnfm, name)      # instances, scale: as they are

    def action(self, member, primitive, params, count_index=None):
        for attempt in range(1, STEP_ATTEMPTS + 1):
            try:
                return self.vnfm.action(member, primitive, params, count_index=count_index)
            except Exception as exc:  # noqa: BLE001 - OSM's or the emulation's failure: run again, then raised
                if attempt == STEP_ATTEMPTS or any(answer in str(exc) for answer in FINAL_ANSWERS):
                    raise
                self.progress("{} on {}{} failed ({}); running it again".format(
                    primitive, member, "" if count_index is None else " instance {}".format(count_index), exc))
            self.sleep(self.poll)


class Scaler:
    def __init__(self, vnfm, spec, progress=print, timeout=900, clock=time.monotonic, sleep=time.sleep, poll=2.0):
        self.vnfm, self.spec, self.progress = RunAgain(vnfm, progress, sleep, poll), spec, progress
        self.timeout, self.clock, self.sleep, self.poll = timeout, clock, sleep, poll

    # -- the primitives on one instance ----------------------------------------------------------
    def status(self, member, k=None):
        return self.vnfm.action(member, "tunnel-status", {}, count_index=k)

    def _name(self, k):
        return "{} instance {}".format(self.spec.member, k)

    # -- scale-out -----------------------------------------------------------------------------
    def scale_out(self):
        before = set(self.vnfm.instances(self.spec.member))
        # What the new instance is peered with, read before: after its day-1 every second counts.
        hubs = self.hub_devices()
        base = self.base_entries(hubs)
        self.progress("scale-out: {} has instance(s) {}; osm vnf-scale --scale-out {}".format(
            self.spec.member, sorted(before), self.spec.aspect))
        self.vnfm.scale(self.spec.member, self.spec.aspect, True)
        new = sorted(set(self.vnfm.instances(self.spec.member)) - before)
        if len(new) != 1:
            raise ScaleError("scale-out of {} made instance(s) {}, expected exactly one".format(self.spec.member, new))
        k = new[0]
        self.progress("scale-out: {} exists; peering it with its hubs".format(self._name(k)))
        self.peer(k, hubs, base)
        return k

    def hub_devices(self):
        """{endpoint: (hub, its tunnel-status entry of wg-<endpoint>)}."""
        out = {}
        for endpoint, hub in sorted(self.spec.hubs.items()):
            dev = device_entry(self.status(hub), endpoint, hub)
            if dev is None:
                raise ScaleError("{} has no wg-{} (is its tunnel with instance 0 up?)".format(hub, endpoint))
            out[endpoint] = (hub, dev)
        return out

    def peer(self, k, hubs=None, base=None):
        """Instance k holds each hub as a peer, each hub holds instance k, then their handshakes
        are checked. The first add-peer on k is retried until its charm answers (its day-1 ran).
        What instance k reports is checked first (deploy.scale_trust): its addresses must be
        instance k's, derived from instance 0's, and its key nobody else's on the hub."""
        if k == 0:
            raise ScaleError("instance 0 is related by OSM; only scaled instances are peered here")
        hubs = hubs or self.hub_devices()
        base = base or self.base_entries(hubs)
        keys = {}
        for i, (endpoint, (hub, dev)) in enumerate(sorted(hubs.items())):
            params = peer_params(dev, endpoint)
            call = lambda p=params: self.vnfm.action(self.spec.member, "add-peer", p, count_index=k)  # noqa: E731
            # The first is retried until the charm answers (its day-1 ran).
            results = self.until_answered(k, call) if i == 0 else call()
            own = self.own_entry(results, endpoint, k)
            expected = trust.expected_entry(base[endpoint], k, endpoint, self.spec.member)
            try:
                stale = trust.check_claim(own, expected, dev, endpoint, self._name(k), hub)
            except trust.TrustError as e:
                raise ScaleError(str(e)) from None
            for peer in stale:    # instance k's own entry under a key it no longer has
                self.progress("peer: {} holds {}'s addresses under an older key: replacing it".format(
                    hub, self._name(k)))
                self.remove_from_hub(hub, endpoint, peer["public-key"], trust.allowed_text(expected))
            claimed = dict(expected, **{"public-key": own["public-key"]})
            self.vnfm.action(hub, "add-peer", peer_params(claimed, endpoint))
            keys[endpoint] = (dev["public-key"], own["public-key"])
            self.progress("peer: wg-{} {} <-> {}".format(endpoint, self._name(k), hub))
        self.wait_handshakes(k, keys)

    def base_entries(self, hubs):
        """{endpoint: instance 0's tunnel-status entry}, each checked against what its hub holds
        for instance 0 through the relation."""
        status = self.status(self.spec.member, 0)
        out = {}
        for endpoint, (hub, dev) in hubs.items():
            entry = device_entry(status, endpoint, self._name(0))
            if entry is None:
                raise ScaleError("{} has no wg-{}: instance 0 must be up to derive instance k's addresses".format(
                    self._name(0), endpoint))
            try:
                trust.check_base(entry, dev, endpoint, self.spec.member, hub)
            except trust.TrustError as e:
                raise ScaleError(str(e)) from None
            out[endpoint] = entry
        return out

    def own_entry(self, results, endpoint, k):
        """Instance k's wg-<endpoint> entry: add-peer's ``tunnel`` result (this release), else
        its tunnel-status (a charm of an earlier release)."""
        try:
            entry = json.loads(results.get("tunnel") or "null")
        except (TypeError, ValueError):
            entry = None
        if not isinstance(entry, dict) or entry.get("endpoint") != endpoint:
            entry = device_entry(self.status(self.spec.member, k), endpoint, self._name(k))
        if entry is None:
            raise ScaleError("{} made no wg-{} after add-peer".format(self._name(k), endpoint))
        return entry

    def until_answered(self, k, call):
        """``call()`` until it succeeds: instance k's charm is configured and reaches its VNF."""
        deadline = self.clock() + self.timeout
        while True:
            try:
                return call()
            except Exception as exc:  # noqa: BLE001 - OSM's or the emulation's failure: retried until the deadline
                if self.clock() >= deadline:
                    raise ScaleError("{} did not answer within {} s: {}".format(
                        self._name(k), self.timeout, exc)) from None
            self.sleep(self.poll)

    def wait_handshakes(self, k, keys):
        deadline = self.clock() + self.timeout
        while True:
            results = self.status(self.spec.member, k)
            waiting = []
            for endpoint, (hub_key, _own) in sorted(keys.items()):
                dev = device_entry(results, endpoint, self._name(k)) or {}
                peer = next((p for p in dev.get("peers") or [] if p.get("public-key") == hub_key), {})
                if peer.get("latest-handshake-age") is None:
                    waiting.append("wg-" + endpoint)
            if not waiting:
                self.progress("peer: {} has handshaken with its hubs on {}".format(
                    self._name(k), ", ".join("wg-" + e for e in sorted(keys))))
                return
            if self.clock() >= deadline:
                raise ScaleError("{}: no handshake on {} within {} s".format(self._name(k), ", ".join(waiting),
                                                                              self.timeout))
            self.sleep(self.poll)

    def peer_all(self):
        for k in sorted(self.vnfm.instances(self.spec.member)):
            if k:
                self.peer(k)

    # -- scale-in ------------------------------------------------------------------------------
    def scale_in(self):
        """Remove the highest instance's peers from its hubs, then the instance. The hub's peer of
        instance k is found by instance k's own addresses (derived from instance 0's): what
        instance k claims as its key now is not asked."""
        present = sorted(self.vnfm.instances(self.spec.member))
        if not present or present[-1] == 0:
            raise ScaleError("{} has no scaled instance to remove (instance 0 stays)".format(self.spec.member))
        k = present[-1]    # OSM removes the highest count index
        hubs = self.hub_devices()
        base = self.base_entries(hubs)
        for endpoint, (hub, dev) in sorted(hubs.items()):
            expected = trust.expected_entry(base[endpoint], k, endpoint, self.spec.member)
            mine = trust.peers_of_instance(dev, expected)
            if not mine:
                self.progress("scale-in: {} holds no peer of {} on wg-{} (removed before, or never peered)".format(
                    hub, self._name(k), endpoint))
            for peer in mine:
                self.remove_from_hub(hub, endpoint, peer["public-key"], trust.allowed_text(expected))
        self.progress("scale-in: osm vnf-scale --scale-in {} (removes {})".format(self.spec.aspect, self._name(k)))
        self.vnfm.scale(self.spec.member, self.spec.aspect, False)
        if k in self.vnfm.instances(self.spec.member):
            raise ScaleError("{} is still there after the scale-in".format(self._name(k)))
        return k

    def remove_from_hub(self, hub, endpoint, key, allowed):
        """remove-peer of the peer with ``key`` and exactly the allowed-ips ``allowed`` on ``hub``
        (the charm removes nothing else); a hub that does not hold it any more (a run that
        stopped half-way) is done already. Then the hub's own report is checked."""
        try:
            self.vnfm.action(hub, "remove-peer", {"device": endpoint, "public-key": key, "allowed-ips": allowed})
        except Exception as exc:  # noqa: BLE001 - OSM's or the emulation's failure, judged by its message
            if "no manual peer with that key" not in str(exc):
                raise
            self.progress("scale-in: {} holds no such peer on wg-{} (removed before)".format(hub, endpoint))
        dev = device_entry(self.status(hub), endpoint, hub) or {}
        if any(p.get("public-key") == key for p in dev.get("peers") or []):
            raise ScaleError("{} still holds the removed peer on wg-{}".format(hub, endpoint))
        self.progress("scale-in: {} dropped the peer on wg-{} (its routes went with it)".format(hub, endpoint))


# -- OSM -------------------------------------------------------------------------------------------
class OsmVnfm:
    """The three operations through the ``osm`` CLI (deploy.osm.Osm) for one NS."""

    def __init__(self, osm, ns, member, vdu, timeout):
        self.osm, self.ns, self.member, self.vdu, self.timeout = osm, ns, member, vdu, timeout

    def instances(self, member):
        ns = self.osm.show_literal("ns", self.ns)
        if ns is None:
            raise ScaleError("no NS {}".format(self.ns))
        for vnfr_id in ns.get("constituent-vnfr-ref") or []:
            vnfr = self.osm.show_literal("vnf", vnfr_id) or {}
            if str(vnfr.get("member-vnf-index-ref")) == member:
                return sorted(int(v.get("count-index", 0)) for v in vnfr.get("vdur") or []
                              if v.get("vdu-id-ref") == self.vdu and v.get("status") != "DELETING")
        raise ScaleError("NS {} has no member {}".format(self.ns, member))

    def scale(self, member, aspect, out):
        # osmclient's --timeout is a click INT: "5400.0" (a float setting as text) is refused.
        self.osm.run("vnf-scale", self.ns, member, "--scaling-group", aspect,
                     "--scale-out" if out else "--scale-in", "--wait", "--timeout", str(int(self.timeout)),
                     timeout=self.timeout + 60)

    def action(self, member, primitive, params, count_index=None):
        """On the scaled member, the VDU instance (``--vdu_id --vdu_count``: its EE is
        VDU-level, one per instance); on a hub, its VNF-level EE."""
        if member == self.member:
            return self.osm.action(self.ns, member, primitive, params or None, vdu_id=self.vdu,
                                   count_index=count_index or 0)
        return self.osm.action(self.ns, member, primitive, params or None)


# -- python -m deploy scale ---------------------------------------------------------------
def command(ctx, variant_name, direction, component="spgwu"):
    """Scale ``component``'s VDU of the variant's NS out or in (or only peer its scaled instances
    again: ``direction`` "peer") and keep its tunnels with its hubs right."""
    cfg, runner = ctx.cfg, ctx.runner
    variant = ctx.catalog.variant(variant_name)
    if variant.kind != "ns":
        raise ScaleError("scale works on one NS; {} is an NSI variant".format(variant_name))
    nsd = ctx.catalog.nsd(variant.descriptor_ids[0])
    vdu = vdu_members(nsd).get(component)
    if not vdu:
        raise ScaleError("{}: {} has no VDU-level execution environment in NSD {}, so OSM does not scale it "
                          "with a charm per instance (the -osm10 variants do not scale: docs/lifecycle.md)".format(
                              variant_name, component, variant.descriptor_ids[0]))
    osm_cmd, _ = prereq.check(cfg, runner, need_openstack=False, sites=())
    osm = Osm(runner, cfg, osm_cmd, ctx.state)
    osm.vdu_members.update(vdu_members(nsd))
    members = [str(p["id"]) for p in nsd["df"][0]["vnf-profile"]]
    spec = ScaleSpec.for_component(component, members, vdu=vdu)
    ns = instance_names(cfg, variant)[0]
    vnfm = OsmVnfm(osm, ns, component, vdu, cfg.seconds("NS_READY_TIMEOUT"))
    scaler = Scaler(vnfm, spec, progress=runner.say, timeout=cfg.seconds("TUNNEL_TIMEOUT"))
    if runner.dry_run:
        runner.say("DRY RUN: {}: osm vnf-scale {} {} --scaling-group {}{}, then tunnel-status/add-peer/remove-peer "
                   "on the instance (--vdu_id {} --vdu_count k) and on {}".format(
                       direction, ns, component, spec.aspect,
                       {"out": " --scale-out", "in": " --scale-in"}.get(direction, " (not run: peer only)"),
                       vdu, ", ".join(sorted(set(spec.hubs.values())))))
        return None
    if direction == "out":
        k = scaler.scale_out()
        runner.say("scale-out done: {} instance {} is up and peered with {}".format(
            component, k, ", ".join(sorted(set(spec.hubs.values())))))
    elif direction == "in":
        k = scaler.scale_in()
        runner.say("scale-in done: {} instance {} and its peers on the hubs are gone".format(component, k))
    else:
        scaler.peer_all()
        runner.say("peer done: every scaled instance of {} is peered".format(component))
    return None
