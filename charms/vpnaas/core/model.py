"""The tunnel data model: what a plan is made of. The bottom floor of the charm's code.

Types only, with the little behaviour that belongs to them (a device's routes, a plan's
fingerprint): ``config`` parses options into values, ``relation_data`` reads and writes
databags, ``policy`` decides what a peer may have, ``plan`` puts them together, ``wgconfig`` and
``remote`` carry a plan to the VNF. Each of them imports this module, never the other way round.
Pure: no ops, no SSH.
"""
import hashlib
import ipaddress
import json
from typing import Any, Dict, Iterable, List, Optional, Tuple

from vpnaas.core import refpoints, validation
from vpnaas.core.config import CharmConfig
from vpnaas.core.validation import Interface, Network

#: The source of a peer added by the operator (add-peer), not by a relation.
MANUAL = "manual"

#: {endpoint: [{remote unit: databag}]}, one dict per relation
#: (the databag, or what relation_data.read made of it)
Relations = Dict[str, List[Dict[str, Any]]]
ManualPeers = Dict[str, List[Dict[str, Any]]]


class TunnelEndpoint(object):
    """A relation endpoint of the charm that carries a WireGuard tunnel."""
    __slots__ = ("name", "role")

    def __init__(self, name: str, role: str) -> None:
        self.name = validation.endpoint_name(name, "relation endpoint")
        self.role = role  # "provider" | "requirer"

    @property
    def device(self) -> str:
        return refpoints.device_name(self.name)


class PeerRotation(object):
    """What a related unit published about make-before-break key rotation (rotation.py; the
    fields: tunnel_relation.py). All empty for a unit of an earlier release, or a manual peer:
    such a peer is followed in place, as before."""
    __slots__ = ("protocol", "next_key", "next_endpoint", "next_peer_keys", "peer_keys")

    def __init__(self, protocol: bool = False, next_key: str = "", next_endpoint: str = "",
                 next_peer_keys: Iterable[str] = (), peer_keys: Iterable[str] = ()) -> None:
        self.protocol = protocol                      # it speaks this release's rotation protocol
        self.next_key = next_key                      # the key of its temporary device, while it rotates
        self.next_endpoint = next_endpoint            # "host:port" of its temporary device, while it runs one
        self.next_peer_keys = frozenset(next_peer_keys)  # keys its temporary device accepts, and routes to
        self.peer_keys = frozenset(peer_keys)         # keys its main device holds

    def owner_stage(self, public_key: str) -> str:
        """The stage of the unit's own rotation: "" (none), "next" (its temporary device has the
        new key, its main device the old one) or "switched" (both have the new key)."""
        if not (self.protocol and self.next_key):
            return ""
        return "switched" if self.next_key == public_key else "next"


class Peer(object):
    __slots__ = ("public_key", "endpoint", "allowed_ips", "source", "tunnel", "wants_peer_keys", "endpoint_hosts",
                 "rotation", "routed", "pq_psk")

    def __init__(self, public_key: str, endpoint: str, allowed_ips: List[Network], source: str,
                 tunnel: Optional[Network] = None, wants_peer_keys: bool = False,
                 rotation: Optional[PeerRotation] = None, pq_psk: bool = False) -> None:
        self.public_key = public_key
        self.endpoint = endpoint        # "host:port" or "" (peer that only connects in)
        self.allowed_ips = allowed_ips  # list of networks
        self.source = source            # remote unit name, or "manual"
        self.tunnel = tunnel            # the peer's tunnel address as a host prefix (related units)
        # The peer's unit asked for peer-keys (relation data only; nothing on the VNF depends on it).
        self.wants_peer_keys = wants_peer_keys
        #: The host prefixes of its endpoint as this VNF reaches it (set by the policy).
        self.endpoint_hosts: List[Network] = []
        self.rotation = rotation or PeerRotation()
        #: Its prefixes are routed into this device (False: into the other device of the same
        #: endpoint, while a key rotation moves them; rotation.py).
        self.routed = True
        #: Its unit runs pq-psk on this reference point (relation data, ``pq-psk``).
        self.pq_psk = pq_psk

    def as_dict(self) -> Dict[str, Any]:
        return {"public-key": self.public_key, "endpoint": self.endpoint,
                "allowed-ips": [str(p) for p in self.allowed_ips], "source": self.source}


class Device(object):
    """One WireGuard device as it must be on the VNF."""

    def __init__(self, endpoint: str, listen_port: int, address: Interface, mtu: int, keepalive: int,
                 service_addresses: List[Interface], publish_host: str, allowance: Iterable[Network] = (),
                 service_network: Optional[Network] = None, name: str = "", implementation: str = "auto",
                 pq_psk: bool = False, pq_psk_renewal: int = 120) -> None:
        self.endpoint = endpoint
        self.name = name or refpoints.device_name(endpoint)  # a temporary device has its own
        self.listen_port = listen_port
        self.address = address                  # ipaddress interface
        self.mtu = mtu
        self.keepalive = keepalive
        self.service_addresses = service_addresses  # interfaces on the dummy device
        self.publish_host = publish_host        # underlay host the peer should send to
        self.allowance = list(allowance)        # <ep>-peer-prefixes: what related peers may announce
        self.service_network = service_network  # <ep>-service-network: the default allowance
        self.implementation = implementation    # <ep>-implementation: auto, kernel, wireguard-go, boringtun
        self.pq_psk = pq_psk                    # <ep>-pq-psk
        self.pq_psk_renewal = pq_psk_renewal    # pq-psk-renewal-seconds
        self.pq_psk_unshipped = False           # <ep>-pq-psk is on, but the charm was built without pq-psk
        #: the VNF reported the pq-psk daemon running at the last session ("PQPSK up"): only then is
        #: the capability published (a peer that configured its end for a daemon that is not there
        #: would wait for exchanges nobody answers)
        self.pq_psk_daemon = False
        self.peers: List[Peer] = []
        self.waiting: List[str] = []  # why a peer is not there yet (shown in the status)
        #: {a ``waiting`` reason: the related unit whose data it awaits}, for a unit read without its
        #: key or left unread (Plan.fingerprint takes the unit, not the wording)
        self.awaited: Dict[str, str] = {}
        self.problems: List[str] = []  # invalid or refused peer data
        #: (peer source, prefix) of every prefix the policy refused (the metrics count them)
        self.refused_prefixes: List[Tuple[str, str]] = []

    def service_prefixes(self) -> List[Network]:
        return [ipaddress.ip_network("{}/{}".format(a.ip, a.ip.max_prefixlen)) for a in self.service_addresses]

    def routes(self) -> List[Tuple[str, str]]:
        """(prefix, preferred source) for every prefix behind every peer, tunnel /32s included.

        The source is this device's first service address of the same family, so that
        applications that do not bind explicitly still talk from their service address."""
        out = []
        for peer in self.peers:
            if not peer.routed:
                continue
            for net in peer.allowed_ips:
                src = next((str(a.ip) for a in self.service_addresses if a.ip.version == net.version), "")
                out.append((str(net), src))
        return sorted(set(out))

    def as_dict(self) -> Dict[str, Any]:
        out = {"name": self.name, "endpoint": self.endpoint, "listen-port": self.listen_port,
               "address": str(self.address), "mtu": self.mtu, "keepalive": self.keepalive,
               "peers": [p.as_dict() for p in self.peers], "routes": self.routes()}
        if self.implementation != "auto":
            # Only then: a plan of the default keeps the fingerprint of the release before.
            out["implementation"] = self.implementation
        if self.pq_psk_runs():
            out["pq-psk"] = {"renewal": self.pq_psk_renewal,
                             "peers": sorted(p.public_key for p in self.pq_psk_peers())}
        return out

    def pq_psk_runs(self) -> bool:
        """pq-psk runs on this device: the option is on and its data plane can take a new PSK in
        place (boringtun 0.7.1 cannot change an existing peer at all: tests/e2e/test_pq_psk.py)."""
        return self.pq_psk and self.implementation != "boringtun"

    def pq_psk_peers(self) -> List["Peer"]:
        """The peers whose preshared key pq-psk manages: related units that publish the capability."""
        if not self.pq_psk_runs():
            return []
        return [p for p in self.peers if p.pq_psk and p.tunnel is not None]

    def pq_psk_classical(self) -> List[str]:
        """Why a related peer's tunnel is classical only while this device wants pq-psk (status)."""
        if self.pq_psk_unshipped:
            return ["{}: tunnels are classical only: pq-psk is not shipped with this charm".format(
                self.endpoint)] if self.peers else []
        if not self.pq_psk:
            return []
        if self.implementation == "boringtun":
            return ["{}: tunnels are classical only: boringtun cannot change a preshared key in place".format(
                self.endpoint)] if self.peers else []
        return ["{}: tunnel to {} is classical only: the peer has no pq-psk (an earlier release, "
                "its option off, or its daemon not running yet)".format(self.endpoint, p.source)
                for p in self.peers if p.source != MANUAL and not p.pq_psk]


class Plan(object):
    def __init__(self) -> None:
        self.errors: List[str] = []  # configuration errors: nothing may be applied
        self.missing: List[str] = []  # options not given yet (OSM sets them later): wait
        self.devices: List[Device] = []  # in endpoint order
        self.ssh_host = ""
        self.ssh_port = 22
        self.ssh_connect_timeout = 10
        self.config: Optional[CharmConfig] = None  # once the options parse
        #: Claims kept for related units that are not admitted now (policy: ownership survives).
        self.retained: List[str] = []
        #: Every endpoint name of the peers, admitted or not (the VNF resolves them first).
        self.endpoint_names: List[str] = []
        #: The key rotation of each device, by device name, and the temporary devices it runs
        #: (rotation.py; ``devices`` holds only the main devices).
        self.rotation: Dict[str, "Rotation"] = {}
        self.temp_devices: List[Device] = []

    @property
    def service_addresses(self) -> List[Interface]:
        seen: List[Interface] = []
        for dev in self.devices:
            for addr in dev.service_addresses:
                if addr not in seen:
                    seen.append(addr)
        return seen

    def service_address_args(self) -> List[str]:
        """The service addresses as ``service_addresses`` in vnf/tunnels.sh takes them: the address,
        with ``=<label>`` for an IPv4 address of a labelled reference point (refpoints.LABELS); an
        address two endpoints share keeps its first endpoint's label."""
        out: List[str] = []
        seen: List[Interface] = []
        for dev in self.devices:
            label = refpoints.address_label(dev.endpoint)
            for addr in dev.service_addresses:
                if addr not in seen:
                    seen.append(addr)
                    out.append("{}={}".format(addr, label) if label and addr.version == 4 else str(addr))
        return out

    def device(self, endpoint: str) -> Optional[Device]:
        return next((d for d in self.devices if d.endpoint == endpoint), None)

    def device_by_name(self, name: str) -> Device:
        return next(d for d in self.devices if d.name == name)

    def fingerprint(self) -> str:
        """Stable hash of everything that would be applied on the VNF, and of what was refused."""
        # Problems too: a peer that changes what it is refused must see the status change; and
        # what a device without peers waits for, which is all its status says: which related unit,
        # when it waits for a unit's data. A unit left unread in a first session and read without
        # its key in the next run (OSM's verify-ssh-credentials right after it, when every VNF is
        # configured at once) is still the unit it waits for: no step for a reworded status (the
        # status keeps the first wording until a session, which that unit's key brings).
        doc = {"devices": [d.as_dict() for d in self.devices],
               "problems": [d.problems for d in self.devices],
               "waiting": [[d.awaited.get(w, w) for w in d.waiting[:1]] for d in self.devices if not d.peers],
               "service": [str(a) for a in self.service_addresses]}
        if self.config is not None and any(self.config.slice_qos):
            doc["qos"] = list(self.config.slice_qos)   # only then, as the rotation below
        if self.temp_devices or any(r.stage for r in self.rotation.values()):
            # Only then: a plan without a rotation keeps the fingerprint of the release before.
            doc["temporary"] = [d.as_dict() for d in self.temp_devices]
            doc["rotation"] = {name: r.stage for name, r in sorted(self.rotation.items()) if r.stage}
        return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


class Rotation(object):
    """The key rotation of one main device in a plan, as rotation.py decides it."""

    def __init__(self) -> None:
        self.available = False        # it may rotate make-before-break (a rotation port is free)
        self.port = 0                 # that port: its temporary device listens there
        self.partners: List[str] = []   # the related units that speak the protocol
        self.stage = ""               # this unit's own rotation: "", "next" or "switched"
        self.switch = False           # the main device takes the new key in this plan
        self.done = False             # this unit's own rotation ends with this plan
        self.temp: Optional[Device] = None   # the temporary device, while there is one
        self.main_key_from = ""       # the device whose key the main device takes ("": its own)
        self.temp_key_from = ""       # the device whose key the temporary one takes ("": its own)
        self.following: List[str] = []  # units whose rotation this device follows
        self.waiting: List[str] = []  # units this unit's own rotation waits for
        #: unit -> the key of its temporary device that this unit's temporary device accepts and
        #: may route to (published as ``next-peer-keys``).
        self.advertised: Dict[str, str] = {}
        #: Units whose rotation this device no longer follows, or that its own rotation no longer
        #: waits for: their time (rotation.DEADLINE) is up, they are followed in place.
        self.abandoned: List[str] = []
        #: unit -> [first seen rotating, first seen idle since or 0 (the time.time() of this unit's
        #: hooks), its public key then]: how long this device has followed it (rotation.py, kept
        #: in the unit's state).
        self.followed: Dict[str, List[Any]] = {}
        #: When the first deadline of this device's rotations runs out (None: none runs).
        self.expires: Optional[float] = None

    @property
    def busy(self) -> bool:
        return bool(self.stage or self.following)
