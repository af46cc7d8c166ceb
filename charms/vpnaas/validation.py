"""Validation of every value that reaches a VNF: keys, prefixes, ports, hosts.

Every value that ends up in a WireGuard config, a route or a remote command passes through here
first, so that a malformed or hostile value stops in the charm with a clear message and nothing
is applied on the VNF. The checks are strict on purpose: they refuse anything that is not in the
exact form WireGuard and iproute2 expect.
"""
import base64
import ipaddress
import re

MAX_VALUE_LEN = 1024
MAX_PREFIXES = 64
_HOSTNAME = re.compile(r"^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
                       r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$")
_ENDPOINT_NAME = re.compile(r"^[a-z][a-z0-9-]{0,11}$")


class InvalidValue(ValueError):
    """A value that must not reach the VNF; the message names the value's role."""


def _text(what, value):
    if not isinstance(value, str):
        raise InvalidValue("{}: expected text, got {}".format(what, type(value).__name__))
    if len(value) > MAX_VALUE_LEN:
        raise InvalidValue("{}: value is {} characters long (at most {})".format(
            what, len(value), MAX_VALUE_LEN))
    return value.strip()


def public_key(value, what="public key"):
    """A WireGuard key: 32 bytes in standard base64, i.e. 44 characters ending in '='."""
    value = _text(what, value)
    if len(value) != 44 or not value.endswith("="):
        raise InvalidValue("{}: a WireGuard key is 44 base64 characters ending in '=' (got {} characters)"
                           .format(what, len(value)))
    try:
        raw = base64.b64decode(value.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError):
        raise InvalidValue("{}: not valid base64".format(what)) from None
    if len(raw) != 32:
        raise InvalidValue("{}: decodes to {} bytes, not 32".format(what, len(raw)))
    if base64.b64encode(raw).decode("ascii") != value:
        # wg refuses keys whose unused trailing bits are set; catch that here, not on the VNF.
        raise InvalidValue("{}: not canonical base64 (unused trailing bits are set)".format(what))
    return value


def port(value, what="port"):
    if isinstance(value, bool):
        raise InvalidValue("{}: expected a number".format(what))
    try:
        number = int(str(value).strip())
    except ValueError:
        raise InvalidValue("{}: {!r} is not a number".format(what, value)) from None
    if not 1 <= number <= 65535:
        raise InvalidValue("{}: {} is outside 1-65535".format(what, number))
    return number


def interface_address(value, what="tunnel address"):
    """An address with its prefix length, e.g. 10.250.1.1/30 (host bits set on purpose)."""
    value = _text(what, value)
    if "/" not in value:
        raise InvalidValue("{}: {!r} needs a prefix length, e.g. 10.250.1.1/30".format(what, value))
    try:
        return ipaddress.ip_interface(value)
    except ValueError:
        raise InvalidValue("{}: {!r} is not an address/prefix".format(what, value)) from None


def prefix(value, what="prefix"):
    """A network prefix in canonical form; a bare address becomes a host prefix (/32, /128)."""
    value = _text(what, value)
    try:
        return ipaddress.ip_network(value, strict=True)
    except ValueError:
        raise InvalidValue("{}: {!r} is not a network prefix (host bits must be zero, e.g. 172.16.6.0/24)"
                           .format(what, value)) from None


def prefix_list(value, what="prefixes"):
    """Comma-separated prefixes; empty text is an empty list. Duplicates are refused."""
    value = _text(what, value)
    if not value:
        return []
    items = [v.strip() for v in value.split(",")]
    if len(items) > MAX_PREFIXES:
        raise InvalidValue("{}: {} prefixes given (at most {})".format(what, len(items), MAX_PREFIXES))
    out = []
    for item in items:
        net = prefix(item, what)
        if net in out:
            raise InvalidValue("{}: {} is listed twice".format(what, net))
        out.append(net)
    return out


def service_address_list(value, what="service addresses"):
    """Comma-separated host addresses with prefix (e.g. 172.16.6.2/32) put on the dummy interface."""
    value = _text(what, value)
    if not value:
        return []
    out = []
    for item in (v.strip() for v in value.split(",")):
        iface = interface_address(item, what) if "/" in item else interface_address(
            item + ("/128" if ":" in item else "/32"), what)
        if iface in out:
            raise InvalidValue("{}: {} is listed twice".format(what, iface))
        out.append(iface)
    if len(out) > MAX_PREFIXES:
        raise InvalidValue("{}: too many addresses".format(what))
    return out


def host(value, what="host"):
    """An IP address or a DNS name; nothing else (no spaces, quotes or shell syntax)."""
    value = _text(what, value)
    if not value:
        raise InvalidValue("{}: empty".format(what))
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        pass
    if not _HOSTNAME.match(value):
        raise InvalidValue("{}: {!r} is neither an IP address nor a host name".format(what, value))
    return value


def endpoint(value, what="endpoint"):
    """host:port, or [v6]:port. Returns (host, port)."""
    value = _text(what, value)
    if value.startswith("["):
        host_part, sep, port_part = value[1:].partition("]:")
        try:
            ipaddress.IPv6Address(host_part)
        except ValueError:
            raise InvalidValue("{}: {!r} is not [IPv6 address]:port".format(what, value)) from None
        return host_part, port(port_part, what)
    host_part, sep, port_part = value.rpartition(":")
    if not sep or not host_part:
        raise InvalidValue("{}: {!r} is not host:port".format(what, value))
    return host(host_part, what), port(port_part, what)


def format_endpoint(host_value, port_value):
    return "[{}]:{}".format(host_value, port_value) if ":" in host_value else "{}:{}".format(host_value, port_value)


def endpoint_name(value, what="device"):
    """A relation endpoint name that can become a device name wg-<name> (at most 15 bytes)."""
    value = _text(what, value)
    if not _ENDPOINT_NAME.match(value):
        raise InvalidValue("{}: {!r} must be 1-12 lower-case letters, digits or '-', starting with a letter"
                           .format(what, value))
    return value


def ssh_hostname(value):
    """OSM's "floating;fixed" form uses the part before ';'."""
    value = _text("ssh-hostname", value)
    return host(value.split(";", 1)[0].strip(), "ssh-hostname") if value else ""
