"""Rendering of wg-quick configuration files.

The charm renders every line except ``PrivateKey``: the private key exists only on the VNF, and
the remote side puts it in as it writes the file (see ``remote.py``). Routes are managed by the
bundle (``Table = off`` plus ``PostUp`` lines) so that each route can carry the service address
as preferred source, at boot exactly as at run time.
"""

MARKER = "# Managed by the VPNaaS charm; changes are overwritten on the next reconcile."
DUMMY_SCRIPT = "/etc/wireguard/vpnaas-service-addresses.sh"
DUMMY_DEVICE = "vpnaas0"


def route_command(prefix, src, device="%i"):
    words = ["ip", "route", "replace", prefix, "dev", device]
    if src:
        words += ["src", src]
    return " ".join(words)


def render_body(device):
    """Everything of ``<device>.conf`` after the ``PrivateKey`` line of ``[Interface]``."""
    lines = [
        MARKER,
        "Address = {}".format(device.address),
        "ListenPort = {}".format(device.listen_port),
        "MTU = {}".format(device.mtu),
        "Table = off",
        "PreUp = {}".format(DUMMY_SCRIPT),
    ]
    lines += ["PostUp = {}".format(route_command(prefix, src)) for prefix, src in device.routes()]
    for peer in device.peers:
        lines += ["", "[Peer]", "# {}".format(peer.source), "PublicKey = {}".format(peer.public_key)]
        if peer.endpoint:
            lines.append("Endpoint = {}".format(peer.endpoint))
        lines.append("AllowedIPs = {}".format(", ".join(str(p) for p in peer.allowed_ips)))
        if device.keepalive:
            lines.append("PersistentKeepalive = {}".format(device.keepalive))
    return "\n".join(lines) + "\n"


def render_dummy_script(addresses):
    """Idempotent script that puts exactly ``addresses`` on the service device (run as PreUp too).

    The service device is a dummy interface; where the kernel has no dummy module (as on the
    testbed's machines) the addresses go on ``lo``, IPv4 ones under the label ``lo:vpnaas`` so
    that only the bundle's own addresses are ever removed."""
    wanted = " ".join(str(a) for a in addresses)
    return "\n".join([
        "#!/bin/sh",
        MARKER,
        "set -e",
        "wanted='{}'".format(wanted),
        "if ip link show dev {d} >/dev/null 2>&1 || ip link add {d} type dummy 2>/dev/null; then".format(
            d=DUMMY_DEVICE),
        "  dev={d}; label=''; ip link set dev {d} up".format(d=DUMMY_DEVICE),
        "  current=$(ip -o addr show dev {d} scope global | awk '{{print $4}}')".format(d=DUMMY_DEVICE),
        "else",
        "  dev=lo; label=lo:vpnaas",
        "  current=$( { ip -o -4 addr show dev lo label lo:vpnaas; ip -o -6 addr show dev lo scope global; }"
        " | awk '{print $4}')",
        "fi",
        'for a in $wanted; do',
        '  case "$a" in',
        '    *:*) ip addr replace "$a" dev "$dev" ;;',
        '    *) if [ -n "$label" ]; then ip addr replace "$a" dev "$dev" label "$label";'
        ' else ip addr replace "$a" dev "$dev"; fi ;;',
        '  esac',
        'done',
        'for a in $current; do',
        '  case " $wanted " in *" $a "*) ;; *) ip addr del "$a" dev "$dev" ;; esac',
        "done",
        "",
    ])
