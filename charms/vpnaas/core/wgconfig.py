"""Rendering of wg-quick configuration files and of the per-device route lists.

The charm renders every line except ``PrivateKey``: the private key exists only on the VNF, and
the tunnel step (``vnf/tunnels.sh``) puts it in as it writes the file. Routes are managed by the
bundle (``Table = off``): the PostUp hook installs exactly the routes of ``<dev>.routes``, marked
with the charm's own route protocol and with the service address as preferred source, at boot
exactly as at run time, and refuses a prefix that already has a route the charm did not create.

Every rendered value comes from ``validation`` (canonical text of parsed objects) and is checked
once more here to be one printable word, so that no value can add a line or a word to a file.
"""
from vpnaas.core import validation
from vpnaas.core.model import Device

MARKER = "# Managed by the VPNaaS charm; changes are overwritten on the next reconcile."
ROUTES_HOOK = "/etc/wireguard/vpnaas-routes.sh"
SERVICE_HOOK = "/etc/wireguard/vpnaas-service-addresses.sh"
SERVICE_DEVICE = "vpnaas0"
#: iproute2 route protocol number that marks the routes this charm created (see tunnels.sh).
ROUTE_PROTOCOL = 148


class RenderError(ValueError):
    """A value that is not one printable word reached the renderer (a bug upstream of it)."""


def word(value: object) -> str:
    text = str(value)
    if not validation.is_safe_word(text):
        raise RenderError("refusing to render {} into a WireGuard file".format(validation.excerpt(text)))
    return text


def render_body(device: Device) -> str:
    """Everything of ``<device>.conf`` after the ``PrivateKey`` line of ``[Interface]``."""
    lines = [
        MARKER,
        "Address = {}".format(word(device.address)),
        "ListenPort = {}".format(word(device.listen_port)),
        "MTU = {}".format(word(device.mtu)),
        "Table = off",
        "PreUp = {}".format(SERVICE_HOOK),
        "PostUp = {} %i".format(ROUTES_HOOK),
    ]
    managed = {p.public_key for p in device.pq_psk_peers()}
    for peer in device.peers:
        lines += ["", "[Peer]", "# {}".format(word(peer.source)), "PublicKey = {}".format(word(peer.public_key))]
        if peer.public_key in managed:
            # The VNF's sync never sets or resets this peer's preshared key (tunnels/devices.sh).
            lines.append(PQ_PSK_MARK)
        if peer.endpoint:
            lines.append("Endpoint = {}".format(word(peer.endpoint)))
        lines.append("AllowedIPs = {}".format(", ".join(word(p) for p in peer.allowed_ips)))
        if device.keepalive:
            lines.append("PersistentKeepalive = {}".format(word(device.keepalive)))
    return "\n".join(lines) + "\n"


def render_routes(device: Device) -> str:
    """``<device>.routes``: one ``prefix source`` line per route (``-``: no preferred source)."""
    return "".join("{} {}\n".format(word(prefix), word(src or "-")) for prefix, src in device.routes())


#: The line that marks a peer whose preshared key the pq-psk daemon manages (tunnels/devices.sh).
PQ_PSK_MARK = "# PresharedKey managed by pq-psk"
#: The TCP port the pq-psk daemon listens on, on each device's tunnel address (inside the tunnel).
PQ_PSK_PORT = 51899


def render_pq_psk(device: Device) -> str:
    """The pq-psk daemon's file for ``device`` without its ``public`` line (the VNF adds it: the
    key is made there); "" when pq-psk does not run on it. Exchanges go to each peer's tunnel
    address, so WireGuard's cryptokey routing authenticates their source."""
    if not device.pq_psk_runs():
        return ""
    lines = [MARKER, "device {}".format(word(device.name)),
             "listen {}:{}".format(word(device.address.ip), PQ_PSK_PORT) if device.address.version == 4 else
             "listen [{}]:{}".format(word(device.address.ip), PQ_PSK_PORT),
             "interval {}".format(word(device.pq_psk_renewal))]
    for peer in device.pq_psk_peers():
        address = peer.tunnel.network_address if peer.tunnel is not None else ""
        lines.append("peer {} {}".format(word(peer.public_key), word(address)))
    return "\n".join(lines) + "\n"
