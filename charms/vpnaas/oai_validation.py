"""Validation of the OAI component options (realm, PLMN, subscriber keys, sources, addresses).

Like ``validation``, every value that reaches an OAI script passes through here first, so that a
malformed or hostile value stops in the charm with a clear message and nothing is changed on the
VNF. Secrets (LTE K/OP) are checked without ever putting the value into a message.
"""

import ipaddress
import re

from vpnaas.validation import InvalidValue

_REALM = re.compile(
    r"^(?=.{3,200}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+$"
)
_REPO = re.compile(r"^(?:https://|http://|git://|ssh://)[A-Za-z0-9._~:/@%+-]{3,300}$")
_REF = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,127}$")
_HEX32 = re.compile(r"^[0-9A-Fa-f]{32}$")
_IFNAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,14}$")


def _text(value, what):
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InvalidValue("{}: expected text, got {}".format(what, type(value).__name__))
    return value.strip()


def realm(value, what="realm"):
    value = _text(value, what)
    if not _REALM.match(value):
        raise InvalidValue("{}: {!r} is not a lower-case DNS domain such as ntnu.no".format(what, value[:80]))
    return value


def digits(value, what, low_len, high_len):
    value = _text(str(value) if isinstance(value, int) and not isinstance(value, bool) else value, what)
    if not re.match(r"^[0-9]{%d,%d}$" % (low_len, high_len), value):
        raise InvalidValue(
            "{}: {!r} must be {} digits".format(
                what, value[:40], low_len if low_len == high_len else "{}-{}".format(low_len, high_len)
            )
        )
    return value


def integer(value, what, low, high):
    if isinstance(value, bool):
        raise InvalidValue("{}: expected a number".format(what))
    try:
        number = int(str(value).strip())
    except ValueError:
        raise InvalidValue("{}: {!r} is not a number".format(what, str(value)[:40])) from None
    if not low <= number <= high:
        raise InvalidValue("{}: {} is outside {}-{}".format(what, number, low, high))
    return number


def secret_hex32(value, what):
    """An LTE key (K or OP): 32 hex digits. The value never appears in the message."""
    value = _text(value, what)
    if not value:
        raise InvalidValue("{}: not set (32 hex digits are needed)".format(what))
    if not _HEX32.match(value):
        raise InvalidValue(
            "{}: must be 32 hex digits (got {} characters{})".format(
                what, len(value), "" if len(value) != 32 else " with a non-hex digit"
            )
        )
    return value.lower()


def repository(value, what="oai-repository"):
    value = _text(value, what)
    if not _REPO.match(value) or ".." in value:
        raise InvalidValue(
            "{}: {!r} is not a plain git URL (https://, git:// or ssh://, no spaces or quotes)".format(
                what, value[:120]
            )
        )
    return value


def apt_series(value, what):
    """A release series of an apt repository such as Cassandra's 311x."""
    value = _text(value, what)
    if not re.match(r"^[0-9]{2,3}x$", value):
        raise InvalidValue("{}: {!r} is not a release series such as 311x or 40x".format(what, value[:40]))
    return value


def https_url(value, what):
    value = _text(value, what)
    if not re.match(r"^https://[A-Za-z0-9._~:/@%+-]{3,300}$", value) or ".." in value:
        raise InvalidValue("{}: {!r} is not a plain https:// URL".format(what, value[:120]))
    return value


def git_ref(value, what="oai-ref"):
    value = _text(value, what)
    if not _REF.match(value) or ".." in value or value.endswith((".lock", "/", ".")) or "//" in value:
        raise InvalidValue("{}: {!r} is not a git commit, tag or branch name".format(what, value[:80]))
    return value


def ipv4(value, what):
    value = _text(value, what)
    try:
        return str(ipaddress.IPv4Address(value))
    except ValueError:
        raise InvalidValue("{}: {!r} is not an IPv4 address".format(what, value[:80])) from None


def ipv4_pool(value, what):
    value = _text(value, what)
    try:
        net = ipaddress.IPv4Network(value, strict=True)
    except ValueError:
        raise InvalidValue(
            "{}: {!r} is not an IPv4 prefix such as 12.1.1.0/24".format(what, value[:80])
        ) from None
    if net.prefixlen > 29:
        raise InvalidValue("{}: {} is too small for a UE pool (at most /29)".format(what, net))
    return net


def interface_name(value, what):
    value = _text(value, what)
    if value and not _IFNAME.match(value):
        raise InvalidValue("{}: {!r} is not a network interface name".format(what, value[:40]))
    return value
