"""Which instance of a scaled VDU this unit serves, and the addresses that follow from it (pure).

OSM's LCM (19) deploys one execution environment per VDU instance when a VDU scales out, and
hands each one ``<OSM>``: a YAML flow mapping with its ``count_index`` (0 for the VDU's first
instance, then 1, 2, ... in the order of scaling). The VNFD's ``config`` primitive passes it as
the option ``osm-instance``. Every instance of the VDU gets the same other parameters
(additionalParams), so instance *k* derives its own addresses from them:

* its tunnel address: the same host in the *k*-th block after the configured tunnel network
  (``10.250.4.1/30`` -> ``10.250.4.5/30`` for k = 1), inside the /24 that holds the configured
  block (the hub keeps its address; it reaches every instance's /32 through that peer);
* its service addresses and its endpoint address (an IP): the configured address + k, as OSM
  gives a scaled VDU's fixed IPs (the base + count-index), inside the service network.

Instance 0, and a unit without ``osm-instance``, uses the configured addresses unchanged. An
address that would leave its range is refused (the unit is Blocked, nothing applied).

``osm-instance`` is an option set from OSM's parameters like any other: hostile until checked.
Its text never reaches a general YAML loader. LCM writes it with ``yaml.safe_dump(params,
default_flow_style=True, width=256)`` (``ns.py`` ``_map_primitive_params``) from the dictionary
``get_osm_params`` builds (``data_utils/vnfr.py``): nested flow mappings of plain or quoted
scalars, wrapped at 256 columns. ``read`` accepts exactly that shape and nothing else, in one
pass over text whose size and alphabet are checked first (printable ASCII and line breaks: LCM
escapes everything else): no anchors or aliases (an alias bomb of a few hundred bytes expands to
gigabytes in a loader, and a loader's error message that renders the expanded object costs as
much again), no tags, no block style, no comments or document markers, no merge (``<<``) or value
(``=``) keys, keys unique and on one line (PyYAML writes a key with a line break or of over 128
characters as an explicit ``? key``, which OSM's names never need), nesting at most MAX_DEPTH
deep (a loader recurses once per level and raises RecursionError, which is no YAMLError, at a
few thousand), and ``count_index`` a plain decimal of at most two digits (a loader turns any run
of digits into an int, and Python 3.11 and later raise ValueError beyond 4,300 digits). A
hand-written reader because no YAML library for Python 3.6 offers those bounds (PyYAML's loaders
resolve aliases and recurse without a limit) and a general loader is the wrong tool for one
integer. What it accepts, PyYAML reads the same way: tests/unit/test_osm_params.py holds the two
together on LCM's own output, on PyYAML's flow style of awkward mappings and on random text, and
``make lcm-conformance LCM_SRC=<LCM>`` runs LCM's own rendering against it.
"""
import ipaddress
import re
from typing import Any, Dict, List, Mapping, NamedTuple, NoReturn, Optional, Tuple, Union

from vpnaas.core import validation
from vpnaas.core.validation import Interface, InvalidValue, Network

OPTION = "osm-instance"
#: Highest count index accepted (the VNFD's max-number-of-instances is far below).
MAX_INDEX = 63
#: LCM's <OSM> lists every VDU instance of the VNF with its interfaces (about 470 bytes for one
#: with four): 64 instances of four such VDUs fit. Anything longer is refused before it is read.
MAX_TEXT = 128 * 1024
#: OSM's <OSM> nests five deep (the mapping, vdu, one VDU instance, its interfaces, one interface).
MAX_DEPTH = 8
#: What PyYAML reads as a key only on one line of at most 1,024 characters (its simple keys).
MAX_KEY = 1024
#: An OSM identifier as a metric label may carry it: NBI's ids (uuids, member indexes, VDU ids).
OSM_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
#: The range a scaled tunnel block stays in: the /24 around the configured block.
TUNNEL_POOL_PREFIX = 24

_ALPHABET = re.compile(r"[\x20-\x7e\n]*")
_DOCUMENT_MARKER = re.compile(r"(?m)^(?:---|\.\.\.)(?:[ \n]|\Z)")
#: A word of a plain scalar in a flow collection (PyYAML's scan_plain ends one at whitespace and
#: at any of ,?[]{}: there), and the first word (check_plain: no indicator first, '-' only before
#: a non-space).
_WORD = re.compile(r"[^\s,?\[\]{}:#][^\s,?\[\]{}:]*")
_FIRST_WORD = re.compile(r"(?:[^\s,?\[\]{}:#&*!|>'\"%@`-]|-(?=[^\s,?\[\]{}:]))[^\s,?\[\]{}:]*")
_SPACES = re.compile(r"[ \n]*")
_LINE_SPACES = re.compile(r" *")
_DOUBLE_QUOTED_RUN = re.compile(r'[^"\\]*')
_INDEX = re.compile(r"0|[1-9][0-9]?")
_ESCAPES = {"0": "\0", "a": "\a", "b": "\b", "t": "\t", "n": "\n", "v": "\v", "f": "\f", "r": "\r",
            "e": "\x1b", " ": " ", '"': '"', "/": "/", "\\": "\\", "N": "\x85", "_": "\xa0",
            "L": "\u2028", "P": "\u2029"}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}


class Scalar(NamedTuple):
    """A scalar of the mapping: its text (quotes and escapes resolved, line breaks folded) and
    whether it was plain (a plain scalar may be a number, a quoted one is always text)."""
    text: str
    plain: bool


Node = Union[Scalar, Dict[str, Any], List[Any]]


def mapping(config: Mapping[str, Any]) -> Optional[Dict[str, Any]]:
    """OSM's <OSM> mapping from ``osm-instance`` (``read``), None when the option is empty."""
    text = config.get(OPTION)
    if text is None or (isinstance(text, str) and not text.strip(" ")):
        return None
    if not isinstance(text, str):
        raise InvalidValue("{}: expected OSM's <OSM> mapping as text, got {}".format(OPTION, type(text).__name__))
    return read(text)


def index(config: Mapping[str, Any]) -> int:
    """The count index of this unit's VDU instance (0 when the option is empty)."""
    value = (mapping(config) or {}).get("count_index")
    if value is None:
        return 0     # a VNF-level execution environment's <OSM>: one instance
    if not isinstance(value, Scalar):
        raise InvalidValue("{}: count_index is a {}, not an integer".format(
            OPTION, "mapping" if isinstance(value, dict) else "sequence"))
    if not value.plain or not re.fullmatch(r"[0-9]+", value.text):
        raise InvalidValue("{}: count_index {} is not an integer".format(OPTION, validation.excerpt(value.text)))
    if not _INDEX.fullmatch(value.text) or int(value.text) > MAX_INDEX:
        raise InvalidValue("{}: count_index {} is outside 0-{}".format(
            OPTION, validation.excerpt(value.text), MAX_INDEX))
    return int(value.text)


def osm_labels(config: Mapping[str, Any]) -> Tuple[Tuple[str, str], ...]:
    """What OSM names this VNF instance by, as the labels its alarms select on (LCM 19, ns.py
    _gather_vnfr_alarm_alerts: ``ns_id``, ``vnf_member_index``, ``vdu_id``), from <OSM>'s
    ``ns_id``, ``member_vnf_index`` and ``vdu_id`` (a VNF-level execution environment's <OSM> has
    no ``vdu_id``: that of its one VDU in ``vdu``). Empty when a value is missing or not an
    identifier (``OSM_ID``, by its text): the metrics then carry no OSM labels; nothing else
    depends on them."""
    doc = mapping(config) or {}
    vdu = doc.get("vdu_id")
    vdus = doc.get("vdu")
    if vdu is None and isinstance(vdus, dict) and len(vdus) == 1:
        only = next(iter(vdus.values()))
        vdu = only.get("vdu_id") if isinstance(only, dict) else None
    out = (("ns_id", doc.get("ns_id")), ("vnf_member_index", doc.get("member_vnf_index")), ("vdu_id", vdu))
    texts = tuple((k, v.text) for k, v in out if isinstance(v, Scalar))
    if len(texts) == len(out) and all(OSM_ID.fullmatch(v) for _, v in texts):
        return texts
    return ()


def read(text: str) -> Dict[str, Any]:
    """OSM's <OSM> mapping: {key: Scalar, mapping or list}. Raises InvalidValue (naming the
    option, what is wrong and where) for anything else."""
    if len(text) > MAX_TEXT:
        raise InvalidValue("{}: value is {} characters long (at most {})".format(OPTION, len(text), MAX_TEXT))
    if not _ALPHABET.fullmatch(text):
        raise InvalidValue("{}: {} contains a control or non-ASCII character (OSM writes escapes)".format(
            OPTION, validation.excerpt(text)))
    marker = _DOCUMENT_MARKER.search(text)
    if marker:
        _Reader(text, marker.start()).fail("a YAML document marker")
    return _Reader(text).document()


class _Reader(object):
    """One pass over the text (see the module's docstring for what it accepts)."""

    def __init__(self, text: str, pos: int = 0) -> None:
        self.text = text
        self.pos = pos

    def fail(self, what: str) -> NoReturn:
        raise InvalidValue("{}: not OSM's <OSM> mapping: {} at character {} ({})".format(
            OPTION, what, self.pos, validation.excerpt(self.text[self.pos:self.pos + 20], 20)))

    def peek(self) -> str:
        return self.text[self.pos:self.pos + 1]

    def spaces(self) -> str:
        match = _SPACES.match(self.text, self.pos)
        assert match is not None
        self.pos = match.end()
        return match.group()

    def document(self) -> Dict[str, Any]:
        self.spaces()
        if self.peek() != "{":
            self.fail("not a mapping")
        doc = self.mapping(1)
        self.spaces()
        if self.pos != len(self.text):
            self.fail("text after the mapping")
        return doc

    def node(self, depth: int) -> Node:
        ch = self.peek()
        if ch in ("{", "[") and depth > MAX_DEPTH:
            self.fail("nesting deeper than {}".format(MAX_DEPTH))
        if ch == "{":
            return self.mapping(depth)
        if ch == "[":
            return self.sequence(depth)
        return self.scalar()

    def mapping(self, depth: int) -> Dict[str, Any]:
        self.pos += 1                       # {
        out: Dict[str, Any] = {}
        self.spaces()
        if self.peek() == "}":
            self.pos += 1
            return out
        while True:
            start = self.pos
            if self.peek() in ("{", "[", ""):
                self.fail("a key that is not a scalar" if self.peek() else "an unclosed mapping")
            key = self.scalar()
            if "\n" in self.text[start:self.pos] or self.pos - start > MAX_KEY:
                self.pos = start
                self.fail("a key longer than one line")
            if key.text in out:
                self.pos = start
                self.fail("a repeated key")
            if self.peek() != ":":
                self.fail("a key without ': '")
            self.pos += 1
            if not self.spaces():
                self.fail("a key without ': '")
            out[key.text] = self.node(depth + 1)
            if self.end_of_item("}"):
                return out

    def sequence(self, depth: int) -> List[Any]:
        self.pos += 1                       # [
        out: List[Any] = []
        self.spaces()
        if self.peek() == "]":
            self.pos += 1
            return out
        while True:
            out.append(self.node(depth + 1))
            if self.end_of_item("]"):
                return out

    def end_of_item(self, closing: str) -> bool:
        """After an item: the end of the collection (True) or ',' before the next item (False)."""
        self.spaces()
        ch = self.peek()
        self.pos += 1
        if ch == closing:
            return True
        if ch == ",":
            self.spaces()
            if self.peek() in (closing, ","):
                self.fail("an empty item")
            return False
        self.pos -= 1
        self.fail("a missing ',' or '{}'".format(closing) if ch else "an unclosed collection")

    def scalar(self) -> Scalar:
        ch = self.peek()
        if ch == "'":
            return Scalar(self.single_quoted(), False)
        if ch == '"':
            return Scalar(self.double_quoted(), False)
        return Scalar(self.plain(), True)

    def plain(self) -> str:
        ch, start = self.peek(), self.pos
        word = _FIRST_WORD.match(self.text, self.pos)
        if word is None:
            self.fail({"&": "an anchor", "*": "an alias", "!": "a tag", "#": "a comment", "": "a missing value"}.get(
                ch, "a value that is missing or starts with an indicator"))
        parts = [word.group()]
        self.pos = word.end()
        while True:
            gap = _SPACES.match(self.text, self.pos)
            assert gap is not None
            word = _WORD.match(self.text, gap.end())
            if not gap.group() or word is None:
                if parts == ["<<"] or parts == ["="]:
                    # YAML 1.1's merge key and value key: a loader merges or fails; OSM writes neither.
                    self.pos = start
                    self.fail("a merge key (<<) or a value key (=)")
                return "".join(parts)
            parts += [_fold(gap.group()), word.group()]
            self.pos = word.end()

    def single_quoted(self) -> str:
        text, out = self.text, []
        self.pos += 1
        while True:
            end = text.find("'", self.pos)
            if end < 0:
                self.fail("an unclosed quote")
            out.append(_fold_breaks(text[self.pos:end]))
            if text[end + 1:end + 2] == "'":
                out.append("'")
                self.pos = end + 2
                continue
            self.pos = end + 1
            return "".join(out)

    def double_quoted(self) -> str:
        text, out = self.text, []
        self.pos += 1
        while True:
            match = _DOUBLE_QUOTED_RUN.match(text, self.pos)
            assert match is not None
            out.append(_fold_breaks(match.group()))
            self.pos = match.end()
            ch = self.peek()
            if ch == '"':
                self.pos += 1
                return "".join(out)
            if not ch:
                self.fail("an unclosed quote")
            code = text[self.pos + 1:self.pos + 2]
            if code == "\n":
                # An escaped line break goes with the next line's indentation; a blank line after
                # it is a newline.
                self.pos += 2
                while True:
                    self.pos = _LINE_SPACES.match(text, self.pos).end()  # type: ignore[union-attr]
                    if self.peek() != "\n":
                        break
                    out.append("\n")
                    self.pos += 1
            elif code in _ESCAPES:
                out.append(_ESCAPES[code])
                self.pos += 2
            elif code in _HEX_ESCAPES:
                digits = text[self.pos + 2:self.pos + 2 + _HEX_ESCAPES[code]]
                if not re.fullmatch(r"[0-9A-Fa-f]{%d}" % _HEX_ESCAPES[code], digits) or int(digits, 16) > 0x10FFFF:
                    self.fail("a bad escape")
                out.append(chr(int(digits, 16)))
                self.pos += 2 + len(digits)
            else:
                self.fail("a bad escape")


def _fold(gap: str) -> str:
    """YAML's line folding of the white space between two words: one line break is a space, n
    breaks are n-1 newlines; spaces on one line stay."""
    breaks = gap.count("\n")
    if not breaks:
        return gap
    return " " if breaks == 1 else "\n" * (breaks - 1)


def _fold_breaks(text: str) -> str:
    """Line folding inside a quoted scalar: the spaces around each run of breaks go with it (by
    lines, not by a pattern: a pattern over runs of spaces can take quadratic time)."""
    if "\n" not in text:
        return text
    lines = text.split("\n")
    out = [lines[0].rstrip(" ")]
    breaks = 1
    for line in lines[1:-1]:
        line = line.strip(" ")
        if line:
            out += [_fold("\n" * breaks), line]
            breaks = 1
        else:
            breaks += 1
    out += [_fold("\n" * breaks), lines[-1].lstrip(" ")]
    return "".join(out)


def tunnel_address(address: Interface, k: int, what: str) -> Interface:
    """The same host in the k-th block of the same size after ``address``'s network."""
    if k == 0:
        return address
    net = address.network
    size = net.num_addresses
    pool_len = min(TUNNEL_POOL_PREFIX, net.prefixlen) if address.version == 4 else min(120, net.prefixlen)
    pool = net.supernet(new_prefix=pool_len)
    offset = int(address.ip) - int(net.network_address)
    fit = (int(pool.broadcast_address) - int(net.network_address) + 1) // size
    if k >= fit:
        raise InvalidValue("{}: instance {} would need the tunnel network {} block(s) after {}, outside {}: "
                           "{} instance(s) fit; scale in or widen the plan".format(what, k, k, net, pool, fit))
    shifted = type(address.ip)(int(net.network_address) + k * size + offset)
    return ipaddress.ip_interface("{}/{}".format(shifted, net.prefixlen))


def service_addresses(addresses: List[Interface], k: int, network: Optional[Network], what: str) -> List[Interface]:
    """Each address + k, inside ``network`` (else inside the address's own /24 or /120), never its
    network or broadcast address."""
    if k == 0:
        return addresses
    out = []
    for addr in addresses:
        within = network if network is not None and network.version == addr.version else _around(addr.ip)
        shifted = _plus(addr.ip, k, within, what)
        out.append(ipaddress.ip_interface("{}/{}".format(shifted, addr.network.prefixlen)))
    return out


def endpoint_host(host: str, k: int, what: str) -> str:
    """An endpoint address + k (OSM's fixed IPs of a scaled VDU); a DNS name is left as it is."""
    if k == 0:
        return host
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return host
    return str(_plus(ip, k, _around(ip), what))


def _around(ip: Any) -> Network:
    """The /24 (IPv6: /120) that holds ``ip``: OSM's +k never carries past the last octet."""
    return ipaddress.ip_network("{}/{}".format(ip, 24 if ip.version == 4 else 120), strict=False)


def _plus(ip: Any, k: int, within: Network, what: str) -> Any:
    shifted = type(ip)(int(ip) + k) if int(ip) + k <= int(within.broadcast_address) else None
    if shifted is None or shifted not in within or (within.num_addresses > 2 and shifted == within.broadcast_address):
        raise InvalidValue("{}: instance {} would get {} + {}, outside {}; scale in or widen the plan".format(
            what, k, ip, k, within))
    return shifted
