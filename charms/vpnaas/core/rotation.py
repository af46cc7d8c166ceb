"""Make-before-break key rotation: which devices a plan runs while a key changes, which path
each peer's routes take, and when the new key replaces the old one. Pure: no ops, no SSH.

Why two devices: a WireGuard device has one private key, and maps each allowed prefix to exactly
one peer key; it drops a packet whose source is not in the sending peer's allowed prefixes, and a
new private key drops its sessions. So no single device can accept a peer's prefixes from its old
and its new key at once. While a unit (the *owner*) rotates the key of ``wg-<ep>``, it and every
related unit that speaks the protocol (a *follower*) run a *temporary* device ``wr-<ep>`` on a
second port (the rotation port, ``PORT_OFFSET`` above the listen port), and each direction's
routes move between the two paths only when the receiver has said it accepts the sender there.

The pairs of keys that talk: the main devices with their main keys (``public-key``); the
temporary devices with their temporary keys: the owner's is its new key (``next-key``), a
follower's is its main key (copied: a follower has no new key of its own). The temporary device
carries the main device's tunnel address as a host address: the kernel's reverse-path check
drops what arrives on a device without an address, even in loose mode. The signals
(tunnel_relation.py):

* ``next-peer-keys`` (A1): the keys of yours my temporary device holds. An owner in stage
  "next" writes it as an *offer*, before it routes there (somebody has to move first); every
  other unit only while its own routes to you use its temporary device, so that it says so, and
  is withdrawn only once they have left it. Two owners in stage "next" (both ends rotating at
  once): the lower unit name offers, the other follows it;
* ``peer-keys`` (A2): the keys of yours my main device holds (written for owners too).

Each unit decides per peer, from its own state and the peer's last publication (the phases are
no events: every reconcile looks at the whole state, so a repeated or lost hook repeats or
resumes a phase, and several units rotating at once compose):

* *prefer* the temporary path while either side's rotation is in stage "next" (that side's main
  device is about to take a new key), the main path otherwise;
* the temporary path *works* when the peer advertises this unit's temporary key (A1); the main
  path works unless this unit's main key changed and the peer's main device does not hold it
  yet (A2);
* route through the preferred path when it works, else through the other if that works, else
  through the main path (a peer of an earlier release: in place, as before).

The owner's main device takes the new key (``switch``, stage "switched") once every partner
routes to it through the temporary path (A1 that is no offer) and it routes to them there: the
main device is idle. Its rotation ends (``done``) once every partner's main device holds the new
key (A2), its own routes are back on the main device, and no partner advertises the temporary
path any more. On the VNF each step is idempotent (tunnels.sh: a key is kept, generated or
copied; the routes of every device are staged before any device is applied, so a prefix moves
between two devices with one ``ip route replace``).

Nothing waits for ever: a related unit may delay its own tunnel, never another unit's
operations. The deadlines are checked whenever the unit plans (any hook; the charm never sleeps
or polls), with the times kept in the unit's own state:

* a unit's own rotation waits for its partners at most ``DEADLINE`` in each stage: in stage
  "next" the main device then takes the new key without the partners that do not route through
  the temporary path (they follow it in place, as a peer of an earlier release does); in stage
  "switched" (counted from the switch) the rotation ends;
* a unit follows another unit's rotation for at most ``FOLLOW_DEADLINE`` (longer than both of
  that unit's stages, so that an honest rotation is never given up on by both ends at once)
  from the hook that first saw it rotating. The count ends when that unit is seen idle with
  another public key than it had then (its rotation finished), or after it was idle for as long;
  a rotation dropped and started again, or one started in the same hook as the last one ended,
  continues it. Past it, that unit is no longer followed (its ``next-*`` fields are ignored, its
  routes stay on the main device, it no longer holds this unit's own rotation up).
"""
import ipaddress
import time
from typing import Any, Dict, Iterable, List, Optional

from vpnaas.core.model import MANUAL, Device, Peer, PeerRotation, Plan, Rotation

TEMP_PREFIX = "wr-"
#: The rotation port is the listen port plus this (minus, when that is no port): the security
#: group of `make deploy` opens both ranges.
PORT_OFFSET = 100
NEXT, SWITCHED = "next", "switched"
#: Seconds a unit's own rotation waits for its partners in each stage at most: long enough for a
#: partner whose hooks are delayed (a unit runs one hook or action at a time, and a long action
#: holds its hooks back), short enough that a stuck or hostile partner holds nothing up for long.
#: Checked at the next hook after it runs out (update-status: every 5 minutes).
DEADLINE = 900.0
#: Seconds a unit follows another unit's rotation at most: three times DEADLINE (that unit's two
#: stages, and as long again for hooks delayed on either side).
FOLLOW_DEADLINE = 3 * DEADLINE


def temp_name(device: str) -> str:
    """``wg-<ep>`` -> ``wr-<ep>``: as short as the device's own name (Linux allows 15 bytes)."""
    return TEMP_PREFIX + device[3:]


def main_name(device: str) -> str:
    return "wg-" + device[len(TEMP_PREFIX):]


class Own(object):
    """This unit's side: its unit name (``unit``), the devices whose rotation it runs
    (``rotating``, kept by the charm) and the public keys of its devices as the VNF last reported
    them (``keys``); for the deadlines, the time of this hook (``now``, a time.time(); None: no
    deadline), when each of its own rotations started (``started``, by device) and how long it
    has followed each rotating unit (``followed``: device -> Rotation.followed)."""

    def __init__(self, rotating: Iterable[str] = (), keys: Optional[Dict[str, str]] = None, unit: str = "",
                 now: Optional[float] = None, started: Optional[Dict[str, float]] = None,
                 followed: Optional[Dict[str, Dict[str, List[Any]]]] = None, deadline: float = DEADLINE,
                 follow_deadline: float = FOLLOW_DEADLINE) -> None:
        self.rotating = set(rotating)
        self.keys = dict(keys or {})
        self.unit = unit
        self.now = now
        self.started = dict(started or {})
        self.followed = {dev: dict(records) for dev, records in (followed or {}).items()}
        self.deadline = deadline
        self.follow_deadline = follow_deadline

    def expired(self, device: str) -> bool:
        """This unit's own rotation of ``device`` has run longer than the deadline (a rotation
        without a recorded start, begun by an earlier release, counts from now)."""
        if self.now is None or device not in self.rotating:
            return False
        return self.now - self.started.get(device, self.now) > self.deadline

    def stage(self, device: str) -> str:
        """"" (no own rotation), "next" or "switched" (the main device has the temporary one's key)."""
        if device not in self.rotating:
            return ""
        new = self.keys.get(temp_name(device))
        return SWITCHED if new and new == self.keys.get(device) else NEXT


def rotation_ports(plan: Plan) -> Dict[str, int]:
    """{device: its rotation port}, for the devices whose rotation port is free (not another
    device's listen or rotation port); the others rotate in place."""
    used = {dev.listen_port for dev in plan.devices}
    out: Dict[str, int] = {}
    for dev in plan.devices:
        port = dev.listen_port + PORT_OFFSET
        if port > 65535:
            port = dev.listen_port - PORT_OFFSET
        if port not in used and port not in out.values():
            out[dev.name] = port
    return out


def apply(plan: Plan, own: Own) -> None:
    """Decide every device's rotation (``plan.rotation``, ``plan.temp_devices``, the peers'
    ``routed``), after the route policy admitted the peers."""
    ports = rotation_ports(plan)
    for dev in plan.devices:
        rot = plan.rotation[dev.name] = Rotation()
        if dev.name in ports:
            rot.available, rot.port = True, ports[dev.name]
            _limit_following(dev, rot, own)
            _plan_device(dev, rot, own)
        elif own.stage(dev.name):
            rot.done = True     # its rotation port is taken now: what is left is its main device
        if rot.temp is not None:
            plan.temp_devices.append(rot.temp)


def started(plan: Plan, own: Own) -> Dict[str, float]:
    """When each of this unit's own rotations began its stage, to keep in its state once ``plan``
    is applied: the deadline of stage "switched" counts from the switch, so that the partners that
    followed have their time to finish after a switch the deadline forced."""
    now = own.now if own.now is not None else 0.0
    return {dev: now if dev in plan.rotation and plan.rotation[dev].switch else own.started.get(dev, now)
            for dev in sorted(own.rotating)}


def followed(plan: Plan) -> Dict[str, Dict[str, List[Any]]]:
    """How long each device has followed each rotating unit, to keep in the unit's state."""
    return {name: dict(rot.followed) for name, rot in sorted(plan.rotation.items()) if rot.followed}


def expires(plan: Plan) -> Optional[float]:
    """The first moment one of the plan's rotation deadlines runs out (None: none runs)."""
    times = [rot.expires for rot in plan.rotation.values() if rot.expires is not None]
    return min(times) if times else None


def _limit_following(dev: Device, rot: Rotation, own: Own) -> None:
    """Follow each rotating unit for at most FOLLOW_DEADLINE (the module's docstring): update
    this device's records ([first seen rotating, first seen idle since or 0, its public key
    then]) and make a unit whose time is up a peer this device does not follow."""
    if own.now is None:
        return
    records = own.followed.get(dev.name, {})
    for p in dev.peers:
        if p.source == MANUAL or not p.rotation.protocol:
            continue
        record = records.get(p.source)
        if record is not None and record[1] > 0 and own.now - record[1] > own.follow_deadline:
            record = None                 # idle for longer than the deadline: forgotten
        if not p.rotation.owner_stage(p.public_key):
            # Idle: the record goes once its rotation finished (its key is another one now).
            if record is not None and record[2:3] == [p.public_key]:
                rot.followed[p.source] = [record[0], record[1] or own.now, p.public_key]
            continue
        record = [own.now, 0.0, p.public_key] if record is None else [record[0], 0.0] + record[2:3]
        rot.followed[p.source] = record
        if own.now - record[0] > own.follow_deadline:
            # Its time is up: its rotation fields are ignored; it is followed in place.
            p.rotation = PeerRotation()
            rot.abandoned.append(p.source)
        else:
            _expires_at(rot, record[0] + own.follow_deadline)


def utc(when: float) -> str:
    """A deadline as the status and the action results say it."""
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(when))


def _expires_at(rot: Rotation, when: float) -> None:
    rot.expires = when if rot.expires is None else min(rot.expires, when)


def finished(plan: Plan, own: Own) -> List[str]:
    """The devices of ``own.rotating`` whose rotation ends once ``plan`` is applied (or that are
    gone from the plan: nothing is left to rotate)."""
    return sorted(d for d in own.rotating if d not in plan.rotation or plan.rotation[d].done)


class _Path(object):
    """One partner's paths as this unit sees them."""
    __slots__ = ("peer", "held", "temp_ok", "main_ok", "prefer", "via_temp", "offer", "routes_temp")

    def __init__(self, peer: Peer, held: bool, temp_key: str, main_key: str, stage: str, unit: str) -> None:
        rot = peer.rotation
        theirs = rot.owner_stage(peer.public_key)
        self.peer, self.held = peer, held
        self.temp_ok = held and bool(temp_key) and temp_key in rot.next_peer_keys and bool(rot.next_endpoint)
        self.main_ok = stage != SWITCHED or main_key in rot.peer_keys
        self.prefer = stage == NEXT or theirs == NEXT
        self.via_temp = self.temp_ok if self.prefer else (self.temp_ok and not self.main_ok)
        # Who speaks first: an owner in stage "next" offers its temporary path before it routes
        # there (else nobody would move first); everybody else advertises a path only once its own
        # routes use it, so that the advertisement says they do. Between two owners in stage
        # "next" (two ends rotating at once) the lower unit name offers, the other follows it.
        leader_there = theirs == NEXT and (stage != NEXT or peer.source < unit)
        self.offer = stage == NEXT and not leader_there
        # The peer routes to this unit through the temporary path: it advertises it, and does
        # not merely offer it.
        self.routes_temp = self.temp_ok and not leader_there


def _plan_device(dev: Device, rot: Rotation, own: Own) -> None:
    partners = [p for p in dev.peers if p.source != MANUAL and p.rotation.protocol]
    rot.partners = sorted(p.source for p in partners)
    owners = [p for p in partners if p.rotation.owner_stage(p.public_key)]
    rot.following = sorted(p.source for p in owners)
    stage = own.stage(dev.name)
    main_key = own.keys.get(dev.name, "")
    expired = own.expired(dev.name)
    if stage and own.now is not None:
        _expires_at(rot, own.started.get(dev.name, own.now) + own.deadline)
    if stage == SWITCHED:
        paths = _paths(partners, partners, main_key, main_key, stage, own.unit)
        late = [x.peer.source for x in paths if x.via_temp or main_key in x.peer.rotation.next_peer_keys]
        if not late or expired:
            rot.done, stage = True, ""      # every partner is back on its main device, with the new key
            rot.abandoned += late           # ... or its time is up: the laggards follow in place
    if not stage and not owners:
        return
    temp_key = own.keys.get(temp_name(dev.name), "") if stage == NEXT else main_key
    held = partners if stage else owners
    paths = _paths(partners, held, temp_key, main_key, stage, own.unit)
    if stage == NEXT and expired and any(not x.routes_temp for x in paths):
        # Its time is up: the main device takes the new key without the partners that do not route
        # through the temporary path; they follow in place.
        laggards = {x.peer.source for x in paths if not x.routes_temp}
        rot.abandoned += sorted(laggards)
        for p in partners:
            if p.source in laggards:
                p.rotation = PeerRotation()
        partners = [p for p in partners if p.source not in laggards]
        rot.partners = sorted(p.source for p in partners)
        rot.following = sorted(set(rot.following) - laggards)
        held = partners
        paths = _paths(partners, held, temp_key, main_key, stage, own.unit)
    rot.temp = _temp_device(dev, rot.port, held)
    temp_peers = {p.source: p for p in rot.temp.peers}
    for x in paths:
        x.peer.routed = not x.via_temp
        if x.held:
            temp_peers[x.peer.source].routed = x.via_temp
            if x.offer or x.via_temp:
                rot.advertised[x.peer.source] = temp_peers[x.peer.source].public_key
    rot.stage = stage
    if stage == NEXT:
        rot.waiting = sorted(x.peer.source for x in paths if not x.routes_temp)
        rot.switch = bool(temp_key) and not rot.waiting
        if rot.switch:
            # Every partner routes to this unit through the temporary path, and this unit to
            # them: the main device is idle, and takes the new key from the temporary one.
            rot.stage, rot.main_key_from = SWITCHED, rot.temp.name
            rot.waiting = sorted(x.peer.source for x in paths if temp_key not in x.peer.rotation.peer_keys)
    elif stage == SWITCHED:
        rot.waiting = sorted(x.peer.source for x in paths if not x.main_ok or x.via_temp)
    if stage != NEXT:
        rot.temp_key_from = dev.name        # a follower's temporary key is its main key


def _paths(partners: List[Peer], held: List[Peer], temp_key: str, main_key: str, stage: str,
           unit: str) -> List[_Path]:
    held_units = {p.source for p in held}
    return [_Path(p, p.source in held_units, temp_key, main_key, stage, unit) for p in partners]


def _temp_device(dev: Device, port: int, held: List[Peer]) -> Device:
    """The temporary device: the main device's tunnel address as a host address (a device without
    an address fails the kernel's reverse-path check even in loose mode), the rotation port, and
    the held partners with their temporary keys and endpoints, their prefixes as on the main device."""
    ip = dev.address.ip
    temp = Device(dev.endpoint, port, ipaddress.ip_interface("{}/{}".format(ip, ip.max_prefixlen)), dev.mtu,
                  dev.keepalive, dev.service_addresses, dev.publish_host, name=temp_name(dev.name),
                  implementation=dev.implementation)   # the same data plane as the device it stands in for
    for p in held:
        peer = Peer(p.rotation.next_key or p.public_key, p.rotation.next_endpoint, list(p.allowed_ips), p.source,
                    tunnel=p.tunnel)
        peer.endpoint_hosts = list(p.endpoint_hosts)
        temp.peers.append(peer)
    return temp


def describe(rot: Rotation) -> str:
    """What the status says about a device's rotation ("" for none)."""
    notes = []
    if rot.stage == NEXT:
        notes.append("rotating keys, waiting for {} to follow".format(", ".join(rot.waiting)) if rot.waiting
                     else "rotating keys")
    elif rot.stage == SWITCHED:
        notes.append("new key in place, waiting for {}".format(", ".join(rot.waiting)) if rot.waiting
                     else "new key in place")
    elif rot.following:
        notes.append("following the key rotation of {}".format(", ".join(rot.following)))
    if rot.abandoned:
        notes.append("rotation deadline passed for {}: in place".format(", ".join(sorted(set(rot.abandoned)))))
    return "; ".join(notes)


def can_start(rot: Rotation) -> bool:
    """A rotate-keys may run make-before-break: a rotation port, at least one partner, and no
    rotation under way on the device (its own or one it follows)."""
    return rot.available and bool(rot.partners) and not rot.busy


def why_in_place(rot: Rotation) -> str:
    """Why a rotate-keys replaces the key in place (``can_start`` is false and nothing is under way)."""
    if not rot.available:
        return "the rotation port is another device's port"
    return "no related unit speaks make-before-break rotation"
