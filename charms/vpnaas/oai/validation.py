"""Validation of the OAI component options (realm, PLMN, subscriber keys, sources, addresses).

Like ``validation``, every value that reaches an OAI script passes through here first, so that a
malformed or hostile value stops in the charm with a clear message and nothing is changed on the
VNF. Secrets (LTE K/OP) are checked without ever putting the value into a message.
"""

import ipaddress
import re
from typing import Any

from vpnaas.core import validation
from vpnaas.core.validation import InvalidValue, excerpt

_REALM = re.compile(
    r"(?=.{3,200}\Z)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+"
)
_REPO = re.compile(r"(?:https://|http://|git://|ssh://)[A-Za-z0-9._~:/@%+-]{3,300}")
_REF = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,127}")
_HEX32 = re.compile(r"[0-9A-Fa-f]{32}")
_IFNAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,14}")


def _text(value: Any, what: str) -> str:
    """Printable ASCII without surrounding spaces (``validation``'s rule); None is empty."""
    return "" if value is None else validation.word(value, what)


def realm(value: Any, what: str = "realm") -> str:
    value = _text(value, what)
    if not _REALM.fullmatch(value):
        raise InvalidValue("{}: {} is not a lower-case DNS domain such as ntnu.no".format(what, excerpt(value)))
    return value


def digits(value: Any, what: str, low_len: int, high_len: int) -> str:
    value = _text(validation.decimal(value, what) if isinstance(value, int) and not isinstance(value, bool)
                  else value, what)
    if not re.fullmatch(r"[0-9]{%d,%d}" % (low_len, high_len), value):
        count = low_len if low_len == high_len else "{}-{}".format(low_len, high_len)
        raise InvalidValue("{}: {} must be {} digits".format(what, excerpt(value), count))
    return value


integer = validation.integer


def secret_hex32(value: Any, what: str) -> str:
    """An LTE key (K or OP): 32 hex digits. The value never appears in a message, not even in part."""
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise InvalidValue("{}: expected text, got {}".format(what, type(value).__name__))
    value = value.strip(" ")
    if not value:
        raise InvalidValue("{}: not set (32 hex digits are needed)".format(what))
    if not _HEX32.fullmatch(value):
        raise InvalidValue(
            "{}: must be 32 hex digits (got {} characters{})".format(
                what, len(value), "" if len(value) != 32 else " with a non-hex digit"
            )
        )
    return value.lower()


def repository(value: Any, what: str = "oai-repository") -> str:
    value = _text(value, what)
    if not _REPO.fullmatch(value) or ".." in value:
        raise InvalidValue("{}: {} is not a plain git URL (https://, git:// or ssh://, no spaces or quotes)"
                           .format(what, excerpt(value)))
    return value


def apt_series(value: Any, what: str) -> str:
    """A release series of an apt repository such as Cassandra's 311x."""
    value = _text(value, what)
    if not re.fullmatch(r"[0-9]{2,3}x", value):
        raise InvalidValue("{}: {} is not a release series such as 311x or 40x".format(what, excerpt(value)))
    return value


def https_url(value: Any, what: str) -> str:
    value = _text(value, what)
    if not re.fullmatch(r"https://[A-Za-z0-9._~:/@%+-]{3,300}", value) or ".." in value:
        raise InvalidValue("{}: {} is not a plain https:// URL".format(what, excerpt(value)))
    return value


def git_ref(value: Any, what: str = "oai-ref") -> str:
    value = _text(value, what)
    if not _REF.fullmatch(value) or ".." in value or value.endswith((".lock", "/", ".")) or "//" in value:
        raise InvalidValue("{}: {} is not a git commit, tag or branch name".format(what, excerpt(value)))
    return value


def ipv4(value: Any, what: str) -> str:
    """An IPv4 address in the strict grammar (no leading zeros, whatever the Python version)."""
    address = validation.ip_address(_text(value, what), what)
    if address.version != 4:
        raise InvalidValue("{}: {} is not an IPv4 address".format(what, excerpt(str(address))))
    return str(address)


def ipv4_pool(value: Any, what: str) -> ipaddress.IPv4Network:
    net = validation.prefix(_text(value, what), what)
    if not isinstance(net, ipaddress.IPv4Network) or "/" not in _text(value, what):
        raise InvalidValue("{}: {} is not an IPv4 prefix such as 12.1.1.0/24".format(what, excerpt(str(value))))
    if net.prefixlen > 29:
        raise InvalidValue("{}: {} is too small for a UE pool (at most /29)".format(what, net))
    return net


def interface_name(value: Any, what: str) -> str:
    value = _text(value, what)
    if value and not _IFNAME.fullmatch(value):
        raise InvalidValue("{}: {} is not a network interface name".format(what, excerpt(value)))
    return value


_PASSWORD = re.compile(r"[A-Za-z0-9._~+=%^-]{12,64}")


def secret_password(value: Any, what: str) -> str:
    """A database password: 12-64 characters of letters, digits and ``._~+=%^-`` (nothing a SQL or
    YAML quote, a shell or a line break could take apart). Never part of a message."""
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise InvalidValue("{}: expected text, got {}".format(what, type(value).__name__))
    if not value:
        raise InvalidValue("{}: not set (12-64 characters are needed)".format(what))
    if not _PASSWORD.fullmatch(value):
        raise InvalidValue("{}: must be 12-64 characters of letters, digits and ._~+=%^- (got {} characters)"
                           .format(what, len(value)))
    return value


def hex_digits(value: Any, what: str, count: int) -> str:
    """Exactly ``count`` hex digits (an AMF region, set or pointer, a slice differentiator), lower case."""
    value = _text(validation.decimal(value, what) if isinstance(value, int) and not isinstance(value, bool)
                  else value, what)
    if not re.fullmatch(r"[0-9A-Fa-f]{%d}" % count, value):
        raise InvalidValue("{}: {} must be {} hex digits (no 0x)".format(what, excerpt(value), count))
    return value.lower()


def hex_bits(value: Any, what: str, count: int, bits: int) -> str:
    """``count`` hex digits (``hex_digits``) of a field of ``bits`` bits: an AMF set id is 10 bits
    (000-3ff), an AMF pointer 6 (00-3f) (3GPP TS 23.003 §2.10.1; OAI's AMF refuses more)."""
    text = hex_digits(value, what, count)
    if int(text, 16) >= 1 << bits:
        raise InvalidValue("{}: {} is more than {} bits (at most {:0{}x})".format(what, text, bits, (1 << bits) - 1,
                                                                                  count))
    return text


def db_name(value: Any, what: str) -> str:
    """A MySQL user or database name: a letter, then letters, digits or _, at most 32."""
    value = _text(value, what)
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]{0,31}", value):
        raise InvalidValue("{}: {} is not a plain name (a letter, then letters, digits or _)".format(
            what, excerpt(value)))
    return value


def nrue_mnc(mnc: str) -> str:
    """The MNC the nrUE of openairinterface5g v2.1.0 can use: 2 digits only.

    Its SIM parameters (openair3/UICC/usim_interface.c, ``UICC_PARAMS_DESC``) lack a comma after
    ``"nmc_size"``, so C joins the name with its help text and no configuration can set the MNC
    length: it stays 2, and with a 3-digit MNC the UE would build its SUCI and serving network
    name (openair3/NAS/NR_UE/nr_nas_msg_sim.c) with the wrong PLMN and never register."""
    if len(mnc) != 2:
        raise InvalidValue("mnc: {} has 3 digits, which the nrUE (openairinterface5g v2.1.0) cannot use: its SIM's "
                           "MNC length (nmc_size) cannot be configured and stays 2; use a 2-digit MNC for ue-attach"
                           .format(excerpt(mnc)))
    return mnc
