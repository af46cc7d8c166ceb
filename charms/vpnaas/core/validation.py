"""The one strict grammar for every value that reaches a VNF: keys, addresses, prefixes, ports, hosts.

Every value that ends up in a WireGuard config, a route or a remote command passes through here
first, so that a malformed or hostile value stops in the charm with a clear message and nothing
is applied on the VNF.

Why a grammar of our own instead of the standard library's parser alone: ``ipaddress`` differs
between the Python versions the charms run on (Python 3.9 and later accept an IPv6 scope id such
as ``fe80::1%<anything>``, newlines included, and 3.6 accepts IPv4 octets with leading zeros), so
its acceptance is not a security boundary. Here every value must first match an ASCII-only
regular expression that admits exactly the textual forms WireGuard and iproute2 expect (no scope
ids, no control characters, no spaces inside a value); ``ipaddress`` then only checks structure,
and what is rendered is always its canonical text, never the input. The result is identical on
Python 3.6 to 3.13.
"""
import base64
import ipaddress
import re
from typing import Any, List, Optional, Tuple, Union

Address = Union[ipaddress.IPv4Address, ipaddress.IPv6Address]
Interface = Union[ipaddress.IPv4Interface, ipaddress.IPv6Interface]
Network = Union[ipaddress.IPv4Network, ipaddress.IPv6Network]

MAX_VALUE_LEN = 1024
MAX_PREFIXES = 64
EXCERPT_LEN = 40

_PRINTABLE = re.compile(r"[\x20-\x7e]*")
_IPV4 = re.compile(r"(?:(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])\.){3}"
                   r"(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])")
_IPV6_CHARS = re.compile(r"[0-9A-Fa-f:.]{2,45}")
_PREFIX_LEN = re.compile(r"0|[1-9][0-9]?|1[01][0-9]|12[0-8]")
_PORT = re.compile(r"[0-9]{1,5}")
_HOSTNAME = re.compile(r"(?=.{1,253}\Z)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
                       r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*")
_ENDPOINT_NAME = re.compile(r"[a-z][a-z0-9-]{0,11}")
_WG_KEY = re.compile(r"[A-Za-z0-9+/]{43}=")
#: Juju's unit names (juju/names): an application name -- lower-case words of letters and digits
#: joined by single '-', none of them all digits -- then '/' and the unit number.
_UNIT_NAME = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]*[a-z][a-z0-9]*)*/(?:0|[1-9][0-9]{0,8})")


class InvalidValue(ValueError):
    """A value that must not reach the VNF; the message names the value's role."""


def excerpt(value: Any, limit: int = EXCERPT_LEN) -> str:
    """A short, printable rendering of a value for messages: remote text never lands whole (or
    with control characters) in a status or a log. Its cost is bounded whatever the value: a
    container is named by its type, never rendered (its repr may be gigabytes: an expanded YAML
    alias bomb), and an integer beyond 128 bits by its size (converting it is quadratic, and
    Python 3.11 refuses beyond 4,300 digits)."""
    if isinstance(value, str):
        text = value
    elif isinstance(value, int) and not isinstance(value, bool):
        text = shown_number(value)
    elif value is None or isinstance(value, (bool, float)):
        text = repr(value)
    else:
        text = "<{}>".format(type(value).__name__)
    shown = "".join(ch if " " <= ch <= "~" else "?" for ch in text[:limit])
    return "'{}'{}".format(shown, "..." if len(text) > limit else "")


def shown_number(number: int) -> str:
    """An integer for a message: its digits up to 128 bits, else its size."""
    if number.bit_length() > 128:
        return "a number of {} bits".format(number.bit_length())
    return str(number)


def _text(value: Any, what: str, limit: int = MAX_VALUE_LEN) -> str:
    """The value as printable ASCII text without surrounding spaces; anything else is refused."""
    if not isinstance(value, str):
        raise InvalidValue("{}: expected text, got {}".format(what, type(value).__name__))
    if len(value) > limit:
        raise InvalidValue("{}: value is {} characters long (at most {})".format(what, len(value), limit))
    if not _PRINTABLE.fullmatch(value):
        raise InvalidValue("{}: {} contains a control or non-ASCII character".format(what, excerpt(value)))
    return value.strip(" ")


def word(value: Any, what: str) -> str:
    """Printable text that is one word (no spaces inside)."""
    value = _text(value, what)
    if " " in value:
        raise InvalidValue("{}: {} contains a space".format(what, excerpt(value)))
    return value


def boolean(value: Any, what: str) -> bool:
    """A boolean option: Juju hands a bool; the text "true" or "false" is accepted too, nothing else."""
    if isinstance(value, bool):
        return value
    if value in ("true", "false"):
        return value == "true"
    shown = type(value).__name__ if not isinstance(value, str) else excerpt(value)
    raise InvalidValue("{}: expected true or false, got {}".format(what, shown))


def integer(value: Any, what: str, low: int, high: int) -> int:
    """An integer option in [low, high]; numbers given as text are accepted in plain ASCII digits
    (at most 10: an int is never made of longer text)."""
    if isinstance(value, bool) or value is None:
        raise InvalidValue("{}: expected a number".format(what))
    if isinstance(value, int):
        number = value
    elif isinstance(value, str):
        text = word(value, what)
        if not re.fullmatch(r"-?[0-9]{1,10}", text):
            raise InvalidValue("{}: {} is not a number".format(what, excerpt(text)))
        number = int(text)
    else:
        raise InvalidValue("{}: expected a number, got {}".format(what, type(value).__name__))
    if not low <= number <= high:
        raise InvalidValue("{}: {} is outside {}-{}".format(what, shown_number(number), low, high))
    return number


def decimal(value: int, what: str) -> str:
    """An int as decimal text, for a grammar of digits; beyond 64 bits it is refused unconverted
    (see ``shown_number``)."""
    if value.bit_length() > 64:
        raise InvalidValue("{}: {} is not a plausible value".format(what, shown_number(value)))
    return str(value)


def port(value: Any, what: str = "port") -> int:
    if isinstance(value, str) and not _PORT.fullmatch(value.strip(" ")):
        raise InvalidValue("{}: {} is not a port number".format(what, excerpt(value)))
    return integer(value, what, 1, 65535)


def public_key(value: Any, what: str = "public key") -> str:
    """A WireGuard key: 32 bytes in canonical standard base64, i.e. 44 characters ending in '='."""
    value = word(value, what)
    if not _WG_KEY.fullmatch(value):
        raise InvalidValue("{}: a WireGuard key is 44 base64 characters ending in '=' (got {})"
                           .format(what, excerpt(value)))
    raw = base64.b64decode(value.encode("ascii"), validate=True)
    if len(raw) != 32 or base64.b64encode(raw).decode("ascii") != value:
        # wg refuses keys whose unused trailing bits are set; catch that here, not on the VNF.
        raise InvalidValue("{}: not canonical base64 (unused trailing bits are set)".format(what))
    return value


def public_key_list(value: Any, what: str = "public keys") -> List[str]:
    """Comma-separated WireGuard keys (at most MAX_PREFIXES: the units of one application); empty
    text is an empty list."""
    return [public_key(item, what) for item in _items(value, what, MAX_PREFIXES * 45)]


def protocol_version(value: Any, what: str = "protocol version") -> int:
    """A protocol version: a plain decimal number from 1 to 9999 (0 for empty text)."""
    value = word(value, what)
    if not value:
        return 0
    if not re.fullmatch(r"[1-9][0-9]{0,3}", value):
        raise InvalidValue("{}: {} is not a protocol version (a number)".format(what, excerpt(value)))
    return int(value)


def ip_address(value: Any, what: str = "address") -> Address:
    """An IPv4 address in dotted decimal (no leading zeros) or an IPv6 address (no scope id)."""
    value = word(value, what)
    if _IPV4.fullmatch(value):
        return ipaddress.IPv4Address(value)
    if _IPV6_CHARS.fullmatch(value) and ":" in value:
        tail = value.rsplit(":", 1)[1]
        if "." in tail and not _IPV4.fullmatch(tail):
            raise InvalidValue("{}: {} is not an IP address".format(what, excerpt(value)))
        if "." in value[:len(value) - len(tail)]:
            raise InvalidValue("{}: {} is not an IP address".format(what, excerpt(value)))
        try:
            return ipaddress.IPv6Address(value)
        except ValueError:
            pass
    raise InvalidValue("{}: {} is not an IP address".format(what, excerpt(value)))


def _split_prefix(value: Any, what: str) -> Tuple[Address, Optional[int]]:
    value = word(value, what)
    address, sep, length = value.partition("/")
    if not sep:
        return ip_address(address, what), None
    addr = ip_address(address, what)
    if not _PREFIX_LEN.fullmatch(length) or int(length) > addr.max_prefixlen:
        raise InvalidValue("{}: {} has no valid prefix length".format(what, excerpt(value)))
    return addr, int(length)


def interface_address(value: Any, what: str = "tunnel address") -> Interface:
    """An address with its prefix length, e.g. 10.250.1.1/30 (host bits set on purpose)."""
    addr, length = _split_prefix(value, what)
    if length is None:
        raise InvalidValue("{}: {} needs a prefix length, e.g. 10.250.1.1/30".format(what, excerpt(value)))
    return ipaddress.ip_interface("{}/{}".format(addr, length))


def prefix(value: Any, what: str = "prefix") -> Network:
    """A network prefix in canonical form; a bare address becomes a host prefix (/32, /128)."""
    addr, length = _split_prefix(value, what)
    if length is None:
        length = addr.max_prefixlen
    try:
        return ipaddress.ip_network("{}/{}".format(addr, length), strict=True)
    except ValueError:
        raise InvalidValue("{}: {} is not a network prefix (host bits must be zero, e.g. 172.16.6.0/24)"
                           .format(what, excerpt(value))) from None


def _items(value: Any, what: str, limit: int = MAX_VALUE_LEN) -> List[str]:
    value = _text(value, what, limit)
    if not value:
        return []
    items = [v.strip(" ") for v in value.split(",")]
    if len(items) > MAX_PREFIXES:
        raise InvalidValue("{}: {} items given (at most {})".format(what, len(items), MAX_PREFIXES))
    return items


def prefix_list(value: Any, what: str = "prefixes") -> List[Network]:
    """Comma-separated prefixes; empty text is an empty list. Duplicates are refused."""
    out = []
    for item in _items(value, what):
        net = prefix(item, what)
        if net in out:
            raise InvalidValue("{}: {} is listed twice".format(what, net))
        out.append(net)
    return out


def service_address_list(value: Any, what: str = "service addresses") -> List[Interface]:
    """Comma-separated host addresses with prefix (e.g. 172.16.6.2/32) put on the service device."""
    out = []
    for item in _items(value, what):
        addr, length = _split_prefix(item, what)
        iface = ipaddress.ip_interface("{}/{}".format(addr, addr.max_prefixlen if length is None else length))
        if iface in out:
            raise InvalidValue("{}: {} is listed twice".format(what, iface))
        out.append(iface)
    return out


def host(value: Any, what: str = "host") -> str:
    """An IP address or a DNS name; nothing else (no spaces, quotes, scope ids or shell syntax)."""
    value = word(value, what)
    if not value:
        raise InvalidValue("{}: empty".format(what))
    if ":" in value or _IPV4.fullmatch(value):
        return str(ip_address(value, what))
    if re.fullmatch(r"[0-9.]+", value) or not _HOSTNAME.fullmatch(value):
        raise InvalidValue("{}: {} is neither an IP address nor a host name".format(what, excerpt(value)))
    return value


def endpoint(value: Any, what: str = "endpoint") -> Tuple[str, int]:
    """host:port, or [v6]:port. Returns (host, port) in canonical form."""
    value = word(value, what)
    if value.startswith("["):
        host_part, sep, port_part = value[1:].partition("]:")
        if not sep:
            raise InvalidValue("{}: {} is not [IPv6 address]:port".format(what, excerpt(value)))
        addr = ip_address(host_part, what)
        if addr.version != 6:
            raise InvalidValue("{}: {} is not [IPv6 address]:port".format(what, excerpt(value)))
        return str(addr), port(port_part, what)
    host_part, sep, port_part = value.rpartition(":")
    if not sep or not host_part or ":" in host_part:
        raise InvalidValue("{}: {} is not host:port".format(what, excerpt(value)))
    return host(host_part, what), port(port_part, what)


def format_endpoint(host_value: str, port_value: int) -> str:
    return "[{}]:{}".format(host_value, port_value) if ":" in host_value else "{}:{}".format(host_value, port_value)


def endpoint_name(value: Any, what: str = "device") -> str:
    """A relation endpoint name that can become a device name wg-<name> (at most 15 bytes)."""
    value = word(value, what)
    if not _ENDPOINT_NAME.fullmatch(value):
        raise InvalidValue("{}: {} must be 1-12 lower-case letters, digits or '-', starting with a letter"
                           .format(what, excerpt(value)))
    return value


def unit_name(value: Any, what: str = "unit name") -> str:
    """A Juju unit name (``app/0``). Unit names reach the VNF only as metric labels, but they come
    with the relation like its data, so they pass the grammar like every other value."""
    value = word(value, what)
    if len(value) > 64 or not _UNIT_NAME.fullmatch(value):
        raise InvalidValue("{}: {} is not a Juju unit name".format(what, excerpt(value)))
    return value


#: The data-plane choices of a tunnel endpoint (``<ep>-implementation``; vpnaas/vnf/dataplane.py).
IMPLEMENTATIONS = ("auto", "kernel", "wireguard-go", "boringtun")


def implementation(value: Any, what: str = "implementation") -> str:
    """One of IMPLEMENTATIONS, exactly (lower case, no spaces around it: an option that is not
    exactly a name is a mistake, not a spelling to guess); empty or unset is ``auto``."""
    if value is None or value == "":
        return "auto"
    if not isinstance(value, str) or value not in IMPLEMENTATIONS:
        raise InvalidValue("{}: {} is not one of {}".format(what, excerpt(value), ", ".join(IMPLEMENTATIONS)))
    return value


def ssh_hostname(value: Any) -> str:
    """OSM's "floating;fixed" form uses the part before ';'."""
    value = _text(value, "ssh-hostname")
    return host(value.split(";", 1)[0].strip(" "), "ssh-hostname") if value else ""


def login_name(value: Any, what: str = "user name") -> str:
    """A POSIX login name (what useradd accepts by default)."""
    value = word(value, what)
    if not re.fullmatch(r"[a-z_][a-z0-9_-]{0,31}", value):
        raise InvalidValue("{}: {} is not a login name".format(what, excerpt(value)))
    return value


def is_safe_word(text: str) -> bool:
    """True for text that a rendered file or command may carry as one word (printable, no space)."""
    return bool(text) and bool(re.fullmatch(r"[\x21-\x7e]+", text))
