"""The complete metadata, config and actions of each charm, as Juju will see them.

A charm's own yaml files hold only what is specific to it; the fragments of its workload and its
reference-point endpoints (both from the registry, charms/vpnaas/core/registry.yaml) and the
per-tunnel options derived from its ``wireguard*`` relation endpoints are merged in here. The
charm build writes the result, and the descriptor validator checks descriptors against the same
result, so the two can never disagree.
"""
import copy
import ipaddress
import os
import sys

import yaml

from bundle import CHARMS_DIR

sys.path.insert(0, CHARMS_DIR)
from vpnaas.core import (
    refpoints,  # noqa: E402
    registry,
)

SECTIONS = ("metadata", "config", "actions")


class SpecError(Exception):
    pass


def _load(path):
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        data = yaml.safe_load(f)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise SpecError("{}: expected a mapping at the top level".format(path))
    return data


def charm_names():
    return sorted(registry.load().components)


def registry_endpoints(name):
    """The reference-point endpoints of charm ``name``, as metadata sections (from the registry)."""
    out = {}
    for rp in registry.load().endpoints_of(name):
        if rp.provider == name:
            out.setdefault("provides", {})[rp.name] = {"interface": "{}-{}".format(refpoints.INTERFACE_PREFIX,
                                                                                   rp.name)}
        if rp.requirer == name:
            out.setdefault("requires", {})[rp.name] = {"interface": "{}-{}".format(refpoints.INTERFACE_PREFIX,
                                                                                   rp.name), "limit": 1}
    return out


def tunnel_endpoints(metadata):
    """(endpoint, role, interface) for every WireGuard relation endpoint, in a stable order."""
    out = []
    for section, role in (("provides", "provider"), ("requires", "requirer")):
        for name, rel in sorted((metadata.get(section) or {}).items()):
            iface = rel.get("interface", "")
            if iface == refpoints.INTERFACE_PREFIX or iface.startswith(refpoints.INTERFACE_PREFIX + "-"):
                out.append((name, role, iface))
    return out


def tunnel_options(endpoint, role):
    net = refpoints.default_tunnel_network(endpoint)
    if net:
        hosts = list(ipaddress.ip_network(net).hosts())
        mine = hosts[0] if role == "provider" else hosts[1]
        addr_help = "empty: {}/{} (the {} host of {})".format(
            mine, ipaddress.ip_network(net).prefixlen, "first" if role == "provider" else "second", net)
    else:
        addr_help = "required for this endpoint"
    service_net = refpoints.default_service_network(endpoint)
    service_help = ("Empty: {} (the bundle's IP plan).".format(service_net) if service_net else
                    "Empty: none, so that a related peer gets only its tunnel address unless this or "
                    "{}-peer-prefixes is set.".format(endpoint))
    return {
        endpoint + "-tunnel-address": {
            "type": "string", "default": "",
            "description": "Address/prefix of wg-{} inside the tunnel; {}.".format(endpoint, addr_help)},
        endpoint + "-listen-port": {
            "type": "int", "default": refpoints.default_port(endpoint),
            "description": "UDP port wg-{} listens on.".format(endpoint)},
        endpoint + "-endpoint-address": {
            "type": "string", "default": "",
            "description": "Underlay address the peer sends {} tunnel packets to; empty uses ssh-hostname "
                           "(the management address, as in the multi-site NS).".format(endpoint)},
        endpoint + "-service-addresses": {
            "type": "string", "default": "",
            "description": "Comma-separated addresses (CIDR) of this VNF's {} service, put on the dummy "
                           "interface and routed by the peer into wg-{}.".format(endpoint, endpoint)},
        endpoint + "-service-network": {
            "type": "string", "default": "",
            "description": "The {} service network of the NS's IP plan (CIDR): both ends' service addresses lie "
                           "in it. {}".format(endpoint, service_help)},
        endpoint + "-implementation": {
            "type": "string", "default": "auto",
            "description": "Data plane of wg-{}: auto (the kernel module where the VNF has it, else wireguard-go), "
                           "kernel, wireguard-go or boringtun (both shipped in the charm and installed on the VNF "
                           "only when a device uses them). Changing it re-creates wg-{} (a break of about a "
                           "second on {}; the other tunnels are not touched).".format(endpoint, endpoint, endpoint)},
        endpoint + "-pq-psk": {
            "type": "boolean", "default": True,
            "description": "A post-quantum preshared key on wg-{}: derived on the two VNFs from ML-KEM-768 over the "
                           "tunnel itself and renewed every pq-psk-renewal-seconds by the pq-psk daemon the charm "
                           "ships (docs/security.md). A peer without it (an earlier release) stays classical only, "
                           "and the status says so; false: classical only, as before.".format(endpoint)},
        endpoint + "-peer-prefixes": {
            "type": "string", "default": "",
            "description": "Comma-separated prefixes (CIDR) inside which the related peer on {} may announce its "
                           "service prefixes; empty: single addresses (/32, /128) inside {}-service-network only. "
                           "A prefix that overlaps this VNF's own or connected addresses, its management path, "
                           "another peer's prefix or a special-purpose range (loopback, link-local, multicast...) "
                           "is refused whatever this says (docs/security.md).".format(endpoint, endpoint)},
    }


def _merge(dst, src, where):
    for key, value in src.items():
        if key in dst and isinstance(dst[key], dict) and isinstance(value, dict):
            _merge(dst[key], value, where + "." + key)
        elif key in dst and dst[key] != value:
            raise SpecError("{}: {} is defined twice with different values".format(where, key))
        else:
            dst[key] = copy.deepcopy(value)


def charm_spec(name):
    """Return {"metadata": ..., "config": ..., "actions": ...} for charm ``name``."""
    reg = registry.load()
    if name not in reg.components:
        raise SpecError("unknown charm {!r}; known: {}".format(name, ", ".join(sorted(reg.components))))
    spec = {s: {} for s in SECTIONS}
    for folder in list(reg.workloads[reg.components[name].workload].fragments) + [name]:
        for section in SECTIONS:
            path = os.path.join(CHARMS_DIR, folder, section + ".yaml")
            _merge(spec[section], _load(path), "{}/{}.yaml".format(folder, section))
    _merge(spec["metadata"], registry_endpoints(name), "registry.yaml reference points of " + name)
    spec["config"].setdefault("options", {})
    for endpoint, role, _iface in tunnel_endpoints(spec["metadata"]):
        _merge(spec["config"]["options"], tunnel_options(endpoint, role), name + " tunnel options")
    return spec
