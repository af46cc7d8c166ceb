"""The desired state of a VNF's tunnels, computed from charm config and relation data.

Pure functions: no ops, no SSH. ``build_plan`` is the only place that decides which devices
exist, which peers each has and which routes point into it; the remote side only makes the VNF
match the plan.
"""
import hashlib
import ipaddress
import json
from typing import Any, Dict, Iterable, List, Optional, Set, Tuple

from vpnaas import config as charm_config
from vpnaas import policy, refpoints, relation_data, validation
from vpnaas.facts import Facts
from vpnaas.validation import Interface, Network

#: {endpoint: [{remote unit: databag}]}, one dict per relation
Relations = Dict[str, List[Dict[str, Dict[str, str]]]]
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


class Peer(object):
    __slots__ = ("public_key", "endpoint", "allowed_ips", "source", "tunnel", "wants_peer_keys", "endpoint_hosts")

    def __init__(self, public_key: str, endpoint: str, allowed_ips: List[Network], source: str,
                 tunnel: Optional[Network] = None, wants_peer_keys: bool = False) -> None:
        self.public_key = public_key
        self.endpoint = endpoint        # "host:port" or "" (peer that only connects in)
        self.allowed_ips = allowed_ips  # list of networks
        self.source = source            # remote unit name, or "manual"
        self.tunnel = tunnel            # the peer's tunnel address as a host prefix (related units)
        # The peer's unit asked for peer-keys (relation data only; nothing on the VNF depends on it).
        self.wants_peer_keys = wants_peer_keys
        #: The host prefixes of its endpoint as this VNF reaches it (set by the policy).
        self.endpoint_hosts: List[Network] = []

    def as_dict(self) -> Dict[str, Any]:
        return {"public-key": self.public_key, "endpoint": self.endpoint,
                "allowed-ips": [str(p) for p in self.allowed_ips], "source": self.source}


class Device(object):
    """One WireGuard device as it must be on the VNF."""

    def __init__(self, endpoint: str, listen_port: int, address: Interface, mtu: int, keepalive: int,
                 service_addresses: List[Interface], publish_host: str, allowance: Iterable[Network] = (),
                 service_network: Optional[Network] = None) -> None:
        self.endpoint = endpoint
        self.name = refpoints.device_name(endpoint)
        self.listen_port = listen_port
        self.address = address                  # ipaddress interface
        self.mtu = mtu
        self.keepalive = keepalive
        self.service_addresses = service_addresses  # interfaces on the dummy device
        self.publish_host = publish_host        # underlay host the peer should send to
        self.allowance = list(allowance)        # <ep>-peer-prefixes: what related peers may announce
        self.service_network = service_network  # <ep>-service-network: the default allowance
        self.peers: List[Peer] = []
        self.waiting: List[str] = []  # why a peer is not there yet (shown in the status)
        self.problems: List[str] = []  # invalid or refused peer data

    def service_prefixes(self) -> List[Network]:
        return [ipaddress.ip_network("{}/{}".format(a.ip, a.ip.max_prefixlen)) for a in self.service_addresses]

    def routes(self) -> List[Tuple[str, str]]:
        """(prefix, preferred source) for every prefix behind every peer, tunnel /32s included.

        The source is this device's first service address of the same family, so that
        applications that do not bind explicitly still talk from their service address."""
        out = []
        for peer in self.peers:
            for net in peer.allowed_ips:
                src = next((str(a.ip) for a in self.service_addresses if a.ip.version == net.version), "")
                out.append((str(net), src))
        return sorted(set(out))

    def as_dict(self) -> Dict[str, Any]:
        return {"name": self.name, "endpoint": self.endpoint, "listen-port": self.listen_port,
                "address": str(self.address), "mtu": self.mtu, "keepalive": self.keepalive,
                "peers": [p.as_dict() for p in self.peers], "routes": self.routes()}


class Plan(object):
    def __init__(self) -> None:
        self.errors: List[str] = []  # configuration errors: nothing may be applied
        self.missing: List[str] = []  # options not given yet (OSM sets them later): wait
        self.devices: List[Device] = []  # in endpoint order
        self.ssh_host = ""
        self.ssh_port = 22
        self.ssh_connect_timeout = 10
        self.config: Optional[charm_config.CharmConfig] = None  # once the options parse
        #: Claims kept for related units that are not admitted now (policy: ownership survives).
        self.retained: List[str] = []
        #: Every endpoint name of the peers, admitted or not (the VNF resolves them first).
        self.endpoint_names: List[str] = []

    @property
    def service_addresses(self) -> List[Interface]:
        seen: List[Interface] = []
        for dev in self.devices:
            for addr in dev.service_addresses:
                if addr not in seen:
                    seen.append(addr)
        return seen

    def device(self, endpoint: str) -> Optional[Device]:
        return next((d for d in self.devices if d.endpoint == endpoint), None)

    def device_by_name(self, name: str) -> Device:
        return next(d for d in self.devices if d.name == name)

    def fingerprint(self) -> str:
        """Stable hash of everything that would be applied on the VNF, and of what was refused."""
        # Problems too: a peer that changes what it is refused must see the status change; and
        # what a device without peers waits for, which is all its status says.
        doc = {"devices": [d.as_dict() for d in self.devices],
               "problems": [d.problems for d in self.devices],
               "waiting": [d.waiting[:1] for d in self.devices if not d.peers],
               "service": [str(a) for a in self.service_addresses]}
        return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


def build_plan(config: Dict[str, Any], endpoints: List[TunnelEndpoint], relations: Relations,
               manual_peers: ManualPeers, facts: Optional[Facts] = None, incumbents: Iterable[str] = (),
               own_keys: Iterable[str] = ()) -> Plan:
    """Compute the plan.

    config        -- charm config (dict)
    endpoints     -- TunnelEndpoint list
    relations     -- {endpoint name: [{remote unit name: databag dict}, ...]} one dict per relation
    manual_peers  -- {endpoint name: [{"public-key", "endpoint", "allowed-ips"}]} from add-peer
    facts         -- facts.Facts the VNF reported (None: not known yet)
    incumbents    -- policy.claims() kept from the plan applied before
    own_keys      -- this VNF's own public keys
    """
    plan = Plan()
    facts = facts or Facts()
    try:
        cfg = charm_config.parse(config)
    except validation.InvalidValue as e:
        plan.errors.append(str(e))
        return plan
    plan.config = cfg
    plan.ssh_host, plan.ssh_port, plan.ssh_connect_timeout = cfg.ssh_host, cfg.ssh_port, cfg.connect_timeout
    used_ports: Dict[int, str] = {}
    related: Dict[str, List[str]] = {}
    names: Set[str] = set()
    for ep in endpoints:
        rels = relations.get(ep.name) or []
        manual = manual_peers.get(ep.name) or []
        if not rels and not manual:
            continue
        try:
            epc = charm_config.parse_endpoint(config, ep.name, ep.role, plan.ssh_host)
            charm_config.check_against_vnf(epc, ep.name, facts)
        except validation.InvalidValue as e:
            plan.errors.append(str(e))
            continue
        except charm_config.MissingOption as e:
            plan.missing.append(str(e))
            continue
        port = epc.listen_port
        if port in used_ports:
            plan.errors.append("{}-listen-port: {} is already used by {}".format(ep.name, port, used_ports[port]))
            continue
        used_ports[port] = ep.name
        dev = Device(ep.name, port, epc.address, cfg.mtu, cfg.keepalive, epc.service_addresses, epc.publish_host,
                     epc.allowance, epc.service_network)
        related[dev.name] = [unit for units in rels for unit in units]
        for units in rels:
            for unit in sorted(units):
                try:
                    info = relation_data.decode(unit, units[unit])
                except relation_data.Incomplete as e:
                    dev.waiting.append(str(e))
                    continue
                except validation.InvalidValue as e:
                    dev.problems.append("invalid data from {}: {}".format(unit, e))
                    continue
                allowed = info.allowed_ips()
                dev.peers.append(Peer(info.public_key, validation.format_endpoint(*info.endpoint),
                                      allowed, unit, tunnel=allowed[0], wants_peer_keys=info.wants_peer_keys))
            if not units:
                dev.waiting.append("waiting for the remote unit to join")
        for entry in manual:
            try:
                dev.peers.append(_manual_peer(entry))
            except (validation.InvalidValue, KeyError, TypeError) as e:
                dev.problems.append("stored manual peer ignored: {}".format(e))
        names.update(policy.endpoint_host(p.endpoint) for p in dev.peers)
        plan.devices.append(dev)
    plan.endpoint_names = sorted(n for n in names if n and not policy.is_ip(n))
    policy.admit(plan, facts, incumbents, own_keys, related)
    return plan


def _manual_peer(entry: Dict[str, Any]) -> Peer:
    """A stored add-peer entry, validated again (it is state on the proxy machine, not trusted)."""
    endpoint = entry.get("endpoint") or ""
    if endpoint:
        endpoint = validation.format_endpoint(*validation.endpoint(endpoint, "manual peer endpoint"))
    return Peer(validation.public_key(entry["public-key"], "manual peer key"), endpoint,
                [validation.prefix(p, "manual peer allowed-ips") for p in entry["allowed-ips"]], relation_data.MANUAL)


def validate_manual_peer(params: Dict[str, Any], endpoints: List[TunnelEndpoint]) -> Tuple[str, Dict[str, Any]]:
    """Check add-peer parameters; returns (endpoint name, entry dict)."""
    names = [ep.name for ep in endpoints]
    device = validation.endpoint_name(params.get("device", ""), "device")
    if device.startswith("wg-"):
        device = device[3:]
    if device not in names:
        raise validation.InvalidValue("device: {} is not one of this charm's tunnel endpoints ({})"
                                      .format(device, ", ".join(names)))
    key = validation.public_key(params.get("public-key", ""), "public-key")
    endpoint = params.get("endpoint") or ""
    if endpoint:
        endpoint = validation.format_endpoint(*validation.endpoint(endpoint, "endpoint"))
    allowed = validation.prefix_list(params.get("allowed-ips", ""), "allowed-ips")
    if not allowed:
        raise validation.InvalidValue("allowed-ips: at least one prefix is needed")
    return device, {"public-key": key, "endpoint": endpoint, "allowed-ips": [str(p) for p in allowed]}
