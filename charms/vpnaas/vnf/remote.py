"""The one remote step of a reconcile (``vnf/tunnels.sh``), and what the VNF reported back.

Everything the VNF must do for the tunnels happens in one SSH session: detect the init system
and the WireGuard implementation, create missing keys (the private key is generated and stays on
the VNF), write configs whole and atomically, bring devices up or apply peer changes with
``wg syncconf`` (existing sessions survive), sync the charm's own routes, remove devices that are
no longer wanted, and report public keys, peer state and the facts the route policy needs. Each
device is applied in isolation: one failing device never stops the others, the removal of stale
devices or the report.

The report never contains the private key: only peer lines of ``wg show dump`` are read. Its
lines and their grammar are specified in ``report.py``; ``parse_report`` reads the keywords it
lists as read by the charm (``report.READ``).
"""
import ipaddress
import re
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

from vpnaas.core import qos, rotation, validation, wgconfig
from vpnaas.core.facts import Facts
from vpnaas.core.model import Plan
from vpnaas.vnf import dataplane, metrics, vnfscript
from vpnaas.vnf import report as report_protocol

TUNNEL_FILES = ("tunnels.sh", "metrics.sh")


class RemoteError(Exception):
    pass


def tunnel_step(plan: Plan, facts_digest: str = "", rotate: Iterable[str] = (), restart: bool = False,
                component: Optional[Callable[[vnfscript.Step], None]] = None,
                fresh_next: Iterable[str] = (),
                programs: Optional[Dict[str, dataplane.Program]] = None) -> vnfscript.Step:
    """The tunnel step for ``plan``; ``rotate`` names devices that get a new key pair in place,
    ``fresh_next`` main devices whose temporary device gets a new one (a make-before-break
    rotation starts: rotation.py).

    ``facts_digest`` is the digest of the facts ``plan`` was made with (the VNF's own, from an
    earlier report; "" for none): the VNF first reports its facts and applies nothing unless
    they still have that digest (``Observation.facts_changed``), so no plan made with another
    VNF's or outdated facts is ever applied. The WireGuard configurations travel in the
    program's data section (their size grows with the number of peers; the command line's
    does not).

    Every device's route list is written before any device is applied, so that a prefix that
    moves between a main and a temporary device is moved (``ip route replace``), never deleted
    and added again. Temporary devices come first: a main device that takes its new key copies it
    from its temporary one.

    ``component(step)`` may add a component's own files and calls (e.g. start its service once
    its tunnels have a handshake); they run after the tunnels are applied, before the report, in
    the same session, and may report ``COMPONENT <key> <value>`` lines. Helpers they can use:
    out, fail, isolated, has_handshake <dev>...

    ``programs`` are the userspace WireGuard programs the charm ships (dataplane.py): the VNF
    checks the installed copy of each one a device needs and, when one is missing or differs,
    reports ``NEED <name>`` and applies nothing (``Observation.needs``)."""
    step = vnfscript.Step(TUNNEL_FILES)
    # The programs first: a VNF whose facts the charm does not know yet (its first contact) asks
    # for them in the same answer as its facts, and the next step applies (vnfsession.apply).
    step.call("programs_check", *dataplane.prepare_args(plan, programs or {}))
    step.call("facts_guard", facts_digest or "-", *plan.endpoint_names)
    step.call("tunnels_prepare")
    step.call("service_addresses", *plan.service_address_args())
    devices = plan.temp_devices + plan.devices
    # pq-psk runs only where the charm ships its program (the charm's plan says so already:
    # dataplane.without_pq_psk); a step without it leaves the pq part a no-op on the VNF.
    pq_shipped = "pq-psk" in (programs or {})
    staged = []
    for i, dev in enumerate(devices, 1):
        data = "DEVICE{}".format(i)
        step.text(data + "_BODY", wgconfig.render_body(dev))
        step.text(data + "_ROUTES", wgconfig.render_routes(dev))
        step.text(data + "_PQ", wgconfig.render_pq_psk(dev) if pq_shipped else "")
        staged += [dev.name, data]
    step.call("stage_routes", *staged)
    # pq-psk's files first too: a peer that leaves pq-psk is off the daemon's list before the sync
    # resets its key (the daemon puts a lost key back only for a listed peer); again after the
    # devices, for a device whose key this step made.
    step.call("pq_psk_apply", *staged)
    for i, dev in enumerate(devices, 1):
        mode, source = key_mode(plan, dev.name, rotate, fresh_next)
        step.call("apply_device", dev.name, mode, source, "1" if restart else "0", "DEVICE{}".format(i),
                  dev.implementation)
    names = [dev.name for dev in devices]
    step.call("remove_stale_devices", *names)
    step.call("qos_step", *qos_args(plan))
    step.call("pq_psk_apply", *staged)
    metrics.add_to_step(step, plan)
    if component is not None:
        component(step)
    step.call("report", *names)
    return step


def qos_args(plan: Plan) -> List[str]:
    """The slice's marking and queuing (core/qos.py; vnf/tunnels/qos.sh): ``<port>:<dscp>...
    -- <queue plan> -- <peer endpoint address>...``. The egress queued is the one toward the
    peers' endpoints (addresses only: a name is resolved by WireGuard, not here)."""
    cfg = plan.config.slice_qos if plan.config is not None else qos.QosConfig()
    devices = plan.temp_devices + plan.devices
    hosts = set()
    for dev in devices:
        for peer in dev.peers:
            host = peer.endpoint.rpartition(":")[0].strip("[]")
            try:
                hosts.add(str(ipaddress.ip_address(host)))
            except ValueError:
                continue
    queue = qos.queue_args(cfg)
    return (qos.marks(cfg, [d.listen_port for d in devices]) + ["--"] + queue + ["--"]
            + (sorted(hosts) if queue else []))


def key_mode(plan: Plan, name: str, rotate: Iterable[str], fresh_next: Iterable[str]) -> Tuple[str, str]:
    """How the device ``name`` gets its private key: ("keep", "-") its own (a new one if it has
    none), ("fresh", "-") a new one, ("copy", <device>) that device's (tunnels.sh)."""
    if name in plan.rotation:
        if name in rotate:
            return "fresh", "-"
        source = plan.rotation[name].main_key_from
    else:
        main = rotation.main_name(name)
        if main in fresh_next:
            return "fresh", "-"
        source = plan.rotation[main].temp_key_from if main in plan.rotation else ""
    return ("copy", source) if source else ("keep", "-")


def teardown_step(component: Optional[Callable[[vnfscript.Step], None]] = None) -> vnfscript.Step:
    """What removing the charm leaves on the VNF: nothing of its tunnels (devices, keys,
    configurations, routes, service addresses, the service device, its hook scripts). A
    component may first stop its own service (``component``)."""
    step = vnfscript.Step(TUNNEL_FILES)
    if component is not None:
        component(step)
    return step.call("teardown")


class Observation(object):
    """What the VNF reported."""

    def __init__(self) -> None:
        self.init = ""
        self.implementation = ""
        self.implementation_detail = ""
        self.public_keys: Dict[str, str] = {}
        self.up: Dict[str, bool] = {}
        self.peers: Dict[str, List[Dict[str, Any]]] = {}
        self.failed: Dict[str, str] = {}  # device -> why it could not be applied
        #: the slice's marking and queuing as applied: "mark <port> <dscp>", "queue <dev> <kbit>
        #: <leaf>", "off"; "failed: <why>" when the VNF could not apply them (core/qos.py)
        self.qos: List[str] = []
        self.refused: List[Tuple[str, str, str]] = []  # routes the VNF refused: dev, prefix, why
        self.facts = Facts()
        self.facts_changed = False   # the VNF stopped before applying: plan again with ``facts``
        self.now = 0
        self.hostname = ""
        self.component: Dict[str, str] = {}
        self.metrics = ""   # the exporter: "up <address>:<port>", "off", "failed: <why>" or "" (not reported)
        #: device -> (implementation, version) it runs on now: kernel, wireguard-go, boringtun
        self.dataplane: Dict[str, Tuple[str, str]] = {}
        #: shipped programs the VNF lacks: it applied nothing (dataplane.py)
        self.needs: List[str] = []
        #: the pq-psk daemon: "up", "off", "failed: <why>" or "" (not reported)
        self.pq_psk = ""
        #: (device, peer key) -> pq-psk's state of that peer: state, epoch, renewals, last, refusals
        self.pq_peers: Dict[Tuple[str, str], Dict[str, Any]] = {}
        #: seconds per function of the step, when it was profiled (TIMING lines; hookclock.py)
        self.timings: Dict[str, float] = {}

    def as_tunnels(self, plan: Plan) -> List[Dict[str, Any]]:
        """The tunnel-status document: one entry per planned device (a temporary one, while a key
        rotation runs it, too)."""
        out = []
        for dev in plan.devices + plan.temp_devices:
            out.append({"device": dev.name, "endpoint": dev.endpoint, "up": self.up.get(dev.name, False),
                        "public-key": self.public_keys.get(dev.name, ""), "listen-port": dev.listen_port,
                        "address": str(dev.address), "peers": self.peers.get(dev.name, []),
                        "temporary": dev not in plan.devices,
                        # What an operator's add-peer on the other end needs (deploy scale):
                        # the host peers send to, and the addresses behind this end.
                        "endpoint-address": dev.publish_host,
                        "service-addresses": [str(a) for a in dev.service_addresses],
                        # what the device runs on now ("" when it was not applied): dataplane.py
                        "implementation": " ".join(self.dataplane.get(dev.name, ("", ""))).strip()})
        return out


scrub = vnfscript.scrub
#: The protocol's bounds (report.py, the one place of the report's grammar).
MAX_REPORT = report_protocol.MAX_REPORT
MAX_REPORT_LINES = report_protocol.MAX_REPORT_LINES
MAX_FACTS = report_protocol.MAX_FACTS
MAX_ALLOWED_IPS = report_protocol.MAX_ALLOWED_IPS
MAX_TIMINGS = report_protocol.MAX_TIMINGS
_COUNTER = re.compile(r"[0-9]{1,20}")
_TIMING = re.compile(r"([a-z_][a-z0-9_]{0,63}) ([0-9]{1,12}(?:\.[0-9]{1,9})?) ([0-9]{1,12}(?:\.[0-9]{1,9})?)")


def short(text: str, limit: int) -> str:
    """Remote text as a report field: scrubbed (vnfscript.scrub) and cut to ``limit`` characters;
    only the part that is kept is scrubbed, so that the cost is bounded whatever the VNF sent (a
    key that crosses the cut still lies inside what is scrubbed)."""
    return scrub(text[:limit + 64])[:limit]


def parse_report(text: str, rc: int = 0, stderr: str = "") -> Observation:
    """Parse the tunnel step's report. ``rc`` and ``stderr`` only make a failure's message precise.

    The VNF's report is remote text like any other: every field is checked, scrubbed or cut to a
    bounded length here, and a report too long or with too many facts is refused (RemoteError)."""
    if len(text) > MAX_REPORT:
        raise RemoteError("the VNF's report is {} characters long (at most {})".format(len(text), MAX_REPORT))
    if text.count("\n") > MAX_REPORT_LINES:
        raise RemoteError("the VNF's report has more than {} lines".format(MAX_REPORT_LINES))
    try:
        report = vnfscript.parse(text, rc, stderr)
        return _observation(report)
    except vnfscript.StepError as e:
        raise RemoteError(str(e)) from None
    except (ValueError, IndexError) as e:
        raise RemoteError("unexpected report from the VNF: {}".format(scrub(str(e))[:200])) from None


def _observation(report: vnfscript.Report) -> Observation:
    obs = Observation()
    facts: List[str] = []
    digest = ""
    for kind, rest in report.lines:
        if kind == "INIT":
            obs.init = short(rest, 20)
        elif kind == "IMPL":
            impl, _, detail = rest.partition(" ")
            obs.implementation = short(impl, 40)
            obs.implementation_detail = short(detail, 200)
        elif kind == "DATAPLANE":
            dev, impl, version = (rest.split(" ", 2) + ["", ""])[:3]
            obs.dataplane[short(dev, 20)] = (validation.implementation(impl, "data plane of " + short(dev, 20)),
                                             short(version, 40) or "unknown")
        elif kind == "NEED":
            obs.needs.append(short(rest, 40))
        elif kind == "PUBKEY":
            dev, _, key = rest.partition(" ")
            try:
                obs.public_keys[short(dev, 20)] = validation.public_key(key, "public key of " + short(dev, 20))
            except validation.InvalidValue as e:
                raise RemoteError("the VNF reported a malformed key: {}".format(scrub(str(e)))) from None
        elif kind == "FAILED":
            dev, _, reason = rest.partition(" ")
            if dev == "metrics":
                obs.metrics = "failed: " + short(reason, 200)
            elif dev == "qos":
                obs.qos.append("failed: " + short(reason, 200))
            elif dev == "pq-psk":
                obs.pq_psk = "failed: " + short(reason, 200)
            else:
                obs.failed[short(dev, 20)] = short(reason, 200)
        elif kind == "METRICS":
            obs.metrics = short(rest, 200)
        elif kind == "QOS":
            if rest.startswith(("mark ", "queue ", "off")) and not rest.startswith(("queue applied", "queue removed")):
                obs.qos.append(short(rest, 200))
        elif kind == "PQPSK":
            obs.pq_psk = short(rest, 10)
        elif kind == "PQPEER":
            # The grammar (report.py) already held it: device, key, state and four counters.
            dev, key, state, epoch, renewals, last, refusals = rest.split(" ")
            obs.pq_peers[(dev, key)] = {"state": state, "epoch": int(epoch), "renewals": int(renewals),
                                        "last": int(last), "refusals": int(refusals)}
        elif kind == "REFUSED":
            dev, _, more = rest.partition(" ")
            prefix, _, reason = more.partition(" ")
            obs.refused.append((short(dev, 20), short(prefix, 50), short(reason, 120)))
        elif kind == "FACT":
            if len(facts) == MAX_FACTS:
                raise RemoteError("the VNF reported more than {} facts about itself".format(MAX_FACTS))
            facts.append(rest)
        elif kind == "FACTS":
            if rest == "changed":
                obs.facts_changed = True
            else:
                digest = rest[:64]
        elif kind == "UP":
            obs.up[short(rest, 20)] = True
        elif kind == "DOWN":
            obs.up[short(rest, 20)] = False
        elif kind == "COMPONENT":
            key, _, value = rest.partition(" ")
            obs.component[short(key, 40)] = short(value, 400)
        elif kind == "HOST":
            obs.hostname = short(rest, 255)
        elif kind == "NOW":
            obs.now = _counter(rest, "time")
        elif kind == "TIMING":
            _timing(obs, rest)
        elif kind == "PEER":
            dev, _, dump = rest.partition(" ")
            dev = short(dev, 20)
            impl = obs.dataplane.get(dev, ("", ""))[0]
            obs.peers.setdefault(dev, []).append(_peer_from_dump(dump, obs.now, impl))
    obs.facts = Facts.from_lines(facts, digest)
    return obs


def _timing(obs: Observation, text: str) -> None:
    """``function start end`` of a profiled step: summed per function; anything else is ignored
    (a profile is no input to any decision)."""
    m = _TIMING.fullmatch(text)
    if m is None or (len(obs.timings) >= MAX_TIMINGS and m.group(1) not in obs.timings):
        return
    seconds = max(0.0, float(m.group(3)) - float(m.group(2)))
    obs.timings[m.group(1)] = obs.timings.get(m.group(1), 0.0) + seconds


def _counter(text: str, what: str) -> int:
    """A time or counter of the report: decimal, at most 20 digits (a 64-bit value)."""
    if not _COUNTER.fullmatch(text):
        raise RemoteError("unexpected report from the VNF: {} {} is not a number".format(
            what, validation.excerpt(text)))
    return int(text)


#: A "latest handshake" below this (2001-09-09) is no time since the epoch: see handshake_age.
_EPOCH_FLOOR = 10 ** 9


def handshake_age(handshake: int, now: int, implementation: str = "") -> Optional[int]:
    """Seconds since the latest handshake (None: none yet). boringtun 0.7.1 answers the UAPI's
    ``last_handshake_time_sec`` with the time *since* the handshake, where the kernel and
    wireguard-go give the time of it (seconds since the epoch), so `wg show` prints a small
    number for it; such a value is the age itself."""
    if not handshake:
        return None
    if implementation == "boringtun" and 0 < handshake < _EPOCH_FLOOR:
        return handshake
    return max(0, now - handshake)


def _peer_from_dump(dump: str, now: int, implementation: str = "") -> Dict[str, Any]:
    # public-key preshared-key endpoint allowed-ips latest-handshake rx tx keepalive
    fields = dump.split("\t", 8)
    if len(fields) < 8:
        raise RemoteError("unexpected wg dump line with {} fields".format(len(fields)))
    try:
        key = validation.public_key(fields[0], "peer key")
        ips = [] if fields[3] == "(none)" else fields[3].split(",", MAX_ALLOWED_IPS)
        if len(ips) > MAX_ALLOWED_IPS:
            raise validation.InvalidValue("more than {} allowed IPs".format(MAX_ALLOWED_IPS))
        allowed = [str(validation.prefix(p, "allowed IP")) for p in ips]
    except validation.InvalidValue as e:
        raise RemoteError("unexpected wg dump line: {}".format(scrub(str(e)))) from None
    handshake = _counter(fields[4], "handshake time")
    return {
        "public-key": key,
        "endpoint": "" if fields[2] == "(none)" else short(fields[2], 64),
        "allowed-ips": allowed,
        "latest-handshake-age": handshake_age(handshake, now, implementation),
        "rx-bytes": _counter(fields[5], "byte counter"),
        "tx-bytes": _counter(fields[6], "byte counter"),
    }
