"""The desired state of a VNF's tunnels, computed from charm config and relation data.

Pure functions: no ops, no SSH. ``build_plan`` is the only place that decides which devices
exist, which peers each has and which routes point into it; the remote side only makes the VNF
match the plan.
"""
from typing import Any, Dict, Iterable, List, Optional, Set, Tuple

from vpnaas.core import admission, policy, relation_data, rotation, validation
from vpnaas.core import config as charm_config
from vpnaas.core.facts import Facts
from vpnaas.core.hookclock import CLOCK
from vpnaas.core.model import MANUAL, Device, ManualPeers, Peer, Plan, Relations, TunnelEndpoint


def build_plan(config: Dict[str, Any], endpoints: List[TunnelEndpoint], relations: Relations,
               manual_peers: ManualPeers, facts: Optional[Facts] = None, incumbents: Iterable[str] = (),
               own_keys: Iterable[str] = (), own: Optional[rotation.Own] = None,
               memo: Optional[Dict[str, Any]] = None) -> Plan:
    """Compute the plan.

    config        -- charm config (dict)
    endpoints     -- TunnelEndpoint list
    relations     -- {endpoint name: [{remote unit name: databag dict or relation_data.Reading}, ...]}
                     one dict per relation
    manual_peers  -- {endpoint name: [{"public-key", "endpoint", "allowed-ips"}]} from add-peer
    facts         -- facts.Facts the VNF reported (None: not known yet)
    incumbents    -- policy.claims() kept from the plan applied before
    own_keys      -- this VNF's own public keys
    own           -- this unit's key rotations and its devices' keys (rotation.Own)
    memo          -- the route policy's memo of the last plan (admission.py: the same policy,
                     computed incrementally; updated in place); None: the policy computed whole
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
                     epc.allowance, epc.service_network, implementation=epc.implementation,
                     pq_psk=epc.pq_psk, pq_psk_renewal=cfg.pq_psk_renewal)
        related[dev.name] = [unit for units in rels for unit in units]
        _add_related_peers(dev, rels)
        for entry in manual:
            try:
                dev.peers.append(_manual_peer(entry))
            except (validation.InvalidValue, KeyError, TypeError) as e:
                dev.problems.append("stored manual peer ignored: {}".format(e))
        names.update(policy.endpoint_host(p.endpoint) for p in dev.peers)
        plan.devices.append(dev)
    plan.endpoint_names = sorted(n for n in names if n and not policy.is_ip(n))
    with CLOCK.phase("policy"):
        if memo is None:
            policy.admit(plan, facts, incumbents, own_keys, related)
        else:
            admission.admit(plan, facts, incumbents, own_keys, related, memo)
    with CLOCK.phase("rotation"):
        rotation.apply(plan, own or rotation.Own())
    return plan


def _add_related_peers(dev: Device, rels: List[Dict[str, Any]]) -> None:
    """The peers the related units published on ``dev``'s endpoint (one dict per relation), or
    why they are not peers yet (waiting) or cannot be (problems)."""
    for units in rels:
        for unit in sorted(units):
            reading = _reading(unit, units[unit])
            if reading.incomplete:
                dev.waiting.append(reading.incomplete)
                dev.awaited[reading.incomplete] = unit
                continue
            if reading.info is None:
                dev.problems.append("invalid data from {}: {}".format(unit, reading.invalid))
                continue
            info = reading.info
            allowed = info.allowed_ips()
            dev.peers.append(Peer(info.public_key, validation.format_endpoint(*info.endpoint),
                                  allowed, unit, tunnel=allowed[0], wants_peer_keys=info.wants_peer_keys,
                                  rotation=info.rotation, pq_psk=info.pq_psk))
        if not units:
            dev.waiting.append("waiting for the remote unit to join")


def _reading(unit: str, value: Any) -> relation_data.Reading:
    """A remote unit's data as the plan takes it: already read (the unit's relation memory), or a
    databag to decode now."""
    if isinstance(value, relation_data.Reading):
        return value
    CLOCK.count("peers_validated")
    return relation_data.read(unit, value)


def _manual_peer(entry: Dict[str, Any]) -> Peer:
    """A stored add-peer entry, validated again (it is state on the proxy machine, not trusted)."""
    endpoint = entry.get("endpoint") or ""
    if endpoint:
        endpoint = validation.format_endpoint(*validation.endpoint(endpoint, "manual peer endpoint"))
    return Peer(validation.public_key(entry["public-key"], "manual peer key"), endpoint,
                [validation.prefix(p, "manual peer allowed-ips") for p in entry["allowed-ips"]], MANUAL)


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
