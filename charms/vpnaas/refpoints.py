"""The 3GPP reference points the bundle encrypts, and their defaults.

A relation endpoint named after a reference point gets a WireGuard device ``wg-<name>``, a fixed
listen port and a small point-to-point tunnel network. The provider side takes the first host
address of that network and the requirer the second, so a default deployment needs no tunnel
addressing in its parameters at all; every value can still be overridden in charm config.
"""

REFERENCE_POINTS = {
    # name: (listen port, tunnel network, what runs over it)
    "s6a": (51821, "10.250.1.0/30", "Diameter HSS-MME"),
    "s11": (51822, "10.250.2.0/30", "GTP-C MME-SPGW-C"),
    "s1c": (51823, "10.250.3.0/30", "S1AP MME-eNB"),
    "sxab": (51824, "10.250.4.0/30", "PFCP SPGW-C-SPGW-U"),
    "s1u": (51825, "10.250.5.0/30", "GTP-U SPGW-U-eNB"),
}

#: The service network of each reference point in the bundle's IP plan (docs/bundle.md): both
#: ends' service addresses lie in it, and an empty ``<ep>-peer-prefixes`` admits single
#: addresses inside it only (``<ep>-service-network`` overrides it for another plan).
SERVICE_NETWORKS = {
    "s6a": "172.16.6.0/24",
    "s11": "172.16.1.0/24",
    "s1c": "192.168.247.0/24",
    "sxab": "172.55.55.0/24",
    "s1u": "192.168.248.0/24",
}

#: Interface name prefix shared by every tunnel relation; the full interface is
#: ``wireguard-<reference point>`` so that Juju refuses to relate S6a to S11 by mistake.
INTERFACE_PREFIX = "wireguard"
GENERIC_PORT = 51820


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
