"""The reference points the bundle encrypts, and their defaults (from the registry).

A relation endpoint named after a reference point gets a WireGuard device ``wg-<name>``, a fixed
listen port and a small point-to-point tunnel network. The provider side takes the first host
address of that network and the requirer the second, so a default deployment needs no tunnel
addressing in its parameters at all; every value can still be overridden in charm config. The
values themselves are the registry's (registry.yaml); an endpoint that is no reference point
(the generic charm's ``vpn``) gets the generic port and no defaults.
"""
from typing import Dict, Tuple

from vpnaas.core import registry

#: Interface name prefix shared by every tunnel relation; the full interface is
#: ``wireguard-<reference point>`` so that Juju refuses to relate S6a to S11 by mistake.
INTERFACE_PREFIX = "wireguard"
GENERIC_PORT = 51820

#: name: (listen port, tunnel network, what runs over it), in the registry's order.
REFERENCE_POINTS: Dict[str, Tuple[int, str, str]] = {
    rp.name: (rp.listen_port, rp.tunnel_network, rp.carries) for rp in registry.load().reference_points.values()}
#: The service network of each reference point in the IP plan (docs/bundle.md): both ends'
#: service addresses lie in it, and an empty ``<ep>-peer-prefixes`` admits single addresses
#: inside it only (``<ep>-service-network`` overrides it for another plan).
SERVICE_NETWORKS: Dict[str, str] = {
    rp.name: rp.service_network for rp in registry.load().reference_points.values() if rp.service_network}


#: The address label suffix of each labelled reference point's service addresses (registry
#: ``labelled``): network functions that bind by interface name find their address by it.
LABELS: Dict[str, str] = {
    rp.name: rp.label for rp in registry.load().reference_points.values() if rp.labelled}


def address_label(endpoint: str) -> str:
    """The label suffix of ``endpoint``'s service addresses, "" for an unlabelled one."""
    return LABELS.get(endpoint, "")


#: The plane of each reference point (registry ``plane``): ``user`` or ``control``.
PLANES: Dict[str, str] = {rp.name: rp.plane for rp in registry.load().reference_points.values()}


def plane(endpoint: str) -> str:
    """``user`` or ``control`` for a reference point of the registry, "" for a generic endpoint."""
    return PLANES.get(endpoint, "")


def carries(endpoint: str) -> str:
    """What runs over the reference point (the registry's ``carries``), "" for a generic endpoint."""
    entry = REFERENCE_POINTS.get(endpoint)
    return entry[2] if entry else ""


def default_port(endpoint: str) -> int:
    entry = REFERENCE_POINTS.get(endpoint)
    return entry[0] if entry else GENERIC_PORT


def default_tunnel_network(endpoint: str) -> str:
    entry = REFERENCE_POINTS.get(endpoint)
    return entry[1] if entry else ""


def default_service_network(endpoint: str) -> str:
    return SERVICE_NETWORKS.get(endpoint, "")


def device_name(endpoint: str) -> str:
    """Linux interface names are at most 15 bytes; ``wg-`` leaves 12 for the endpoint."""
    return "wg-" + endpoint
