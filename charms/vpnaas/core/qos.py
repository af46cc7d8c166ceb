"""Slice-aware marking and queuing: the slice's 5QI, its DSCP, and the egress queue plan (pure).

A VNF's tunnels belong to the network slice instance its NS was instantiated for; ``slice-5qi``
names that slice's 5QI. WireGuard copies only ECN from the inner header to the outer one, so a
transport cannot tell the slices' tunnels apart unless the VPN marks the outer packets: the
tunnel step sets the DSCP of every outer UDP packet whose source port is a tunnel device's
listen port (never from the inner header, which a peer controls), and, when the operator tells
the charm the rate of the VNF's underlay link, queues the VNF's underlay egress by that DSCP.

This module is the ONE place of the 5QI table, the default 5QI -> DSCP mapping and the queue
classes (docs/slices.md explains both and cites their sources). Pure: no ops, no I/O.
"""
from typing import Dict, List, NamedTuple, Tuple

from vpnaas.core import validation


class FiveQi(NamedTuple):
    """One row of 3GPP TS 23.501 table 5.7.4-1 (Release 17)."""
    resource_type: str       # "GBR", "non-GBR" or "DC-GBR" (delay-critical GBR)
    priority: int            # the default priority level (lower is served first)
    delay_budget_ms: int     # the packet delay budget
    example: str


#: 3GPP TS 23.501 (Release 17) table 5.7.4-1, "Standardized 5QI to QoS characteristics mapping".
FIVEQI: Dict[int, FiveQi] = {
    1: FiveQi("GBR", 20, 100, "conversational voice"),
    2: FiveQi("GBR", 40, 150, "conversational video (live streaming)"),
    3: FiveQi("GBR", 30, 50, "real-time gaming, V2X messages, process automation monitoring"),
    4: FiveQi("GBR", 50, 300, "non-conversational video (buffered streaming)"),
    65: FiveQi("GBR", 7, 75, "mission-critical push-to-talk voice"),
    66: FiveQi("GBR", 20, 100, "non-mission-critical push-to-talk voice"),
    67: FiveQi("GBR", 15, 100, "mission-critical video user plane"),
    71: FiveQi("GBR", 56, 150, "live uplink streaming"),
    72: FiveQi("GBR", 56, 300, "live uplink streaming"),
    73: FiveQi("GBR", 56, 300, "live uplink streaming"),
    74: FiveQi("GBR", 56, 500, "live uplink streaming"),
    76: FiveQi("GBR", 56, 500, "live uplink streaming"),
    5: FiveQi("non-GBR", 10, 100, "IMS signalling"),
    6: FiveQi("non-GBR", 60, 300, "video (buffered streaming), TCP-based services"),
    7: FiveQi("non-GBR", 70, 100, "voice, video (live streaming), interactive gaming"),
    8: FiveQi("non-GBR", 80, 300, "video (buffered streaming), TCP-based services"),
    9: FiveQi("non-GBR", 90, 300, "video (buffered streaming), TCP-based services (the default bearer)"),
    10: FiveQi("non-GBR", 90, 1100, "video (buffered streaming), TCP-based services over satellite access"),
    69: FiveQi("non-GBR", 5, 60, "mission-critical delay-sensitive signalling"),
    70: FiveQi("non-GBR", 55, 200, "mission-critical data"),
    79: FiveQi("non-GBR", 65, 50, "V2X messages"),
    80: FiveQi("non-GBR", 68, 10, "low-latency eMBB, augmented reality"),
    82: FiveQi("DC-GBR", 19, 10, "discrete automation (small packets)"),
    83: FiveQi("DC-GBR", 22, 10, "discrete automation (large packets), V2X platooning"),
    84: FiveQi("DC-GBR", 24, 30, "intelligent transport systems"),
    85: FiveQi("DC-GBR", 21, 5, "electricity distribution, high voltage; remote driving"),
    86: FiveQi("DC-GBR", 18, 5, "V2X collision avoidance, platooning (high level of automation)"),
    87: FiveQi("DC-GBR", 25, 5, "interactive service: motion tracking data"),
    88: FiveQi("DC-GBR", 25, 10, "interactive service: motion tracking data"),
    89: FiveQi("DC-GBR", 25, 15, "visual content for cloud/edge/split rendering"),
    90: FiveQi("DC-GBR", 25, 20, "visual content for cloud/edge/split rendering"),
}

#: DSCP code points by name (RFC 2474 class selectors, RFC 2597 AF, RFC 3246 EF).
EF, CS5, CS4, AF41, AF31, AF21, AF11, DEFAULT = 46, 40, 32, 34, 26, 18, 10, 0


def _default_dscp(qi: int, row: FiveQi) -> int:
    """The default DSCP of a 5QI, from its resource type and priority, after the service classes
    of RFC 4594 (section 3) and GSMA IR.34's QCI/DSCP guidance: delay-critical GBR and
    conversational voice -> EF; signalling (5, 69) -> CS5; real-time interactive (3, 80) -> CS4;
    conversational and mission-critical video (2, 67) -> AF41; streaming (4, 71-76, 79) -> AF31;
    low-latency data (7, 70) -> AF21; high-throughput data (6, 8) -> AF11; the default bearer 9 and its
    satellite twin 10 -> 0 (best effort)."""
    if row.resource_type == "DC-GBR" or qi in (1, 65, 66):
        return EF
    table = {5: CS5, 69: CS5, 3: CS4, 80: CS4, 2: AF41, 67: AF41, 7: AF21, 70: AF21, 6: AF11, 8: AF11,
             9: DEFAULT, 10: DEFAULT}
    return table.get(qi, AF31)


#: The default mapping, 5QI -> DSCP: every standardized 5QI has one.
DEFAULT_DSCP: Dict[int, int] = {qi: _default_dscp(qi, row) for qi, row in FIVEQI.items()}


class QueueClass(NamedTuple):
    """One HTB class of the egress plan."""
    name: str
    minor: int               # the class id 1:<minor>
    priority: int            # HTB prio: 0 is served first when classes compete for spare rate
    share_percent: int       # the rate guaranteed to the class, in percent of the planned link rate
    dscps: Tuple[int, ...]   # the DSCP values classified into it (the rest: best effort)


#: The egress queue plan: strict priority for the delay-critical classes, each with a guaranteed
#: rate, and every class may borrow up to the whole link (``ceil``). The guarantees add up to
#: 100 %, so best effort (eMBB's default bearer) always keeps its 50 % however much real-time
#: traffic arrives: HTB serves every class up to its own rate before it lends spare rate by prio.
QUEUE_CLASSES: Tuple[QueueClass, ...] = (
    QueueClass("realtime", 10, 0, 30, (EF, CS5, 44)),            # EF, signalling, VOICE-ADMIT (RFC 5865)
    QueueClass("interactive", 20, 1, 20, (CS4, AF41, 36, 38, AF31, 28, 30, AF21, 20, 22)),
    QueueClass("besteffort", 30, 2, 50, ()),
)
DEFAULT_CLASS = 30


class QosConfig(NamedTuple):
    """The slice options, validated."""
    five_qi: int = 0                       # slice-5qi; 0: not marked
    dscp: int = 0                          # the DSCP its tunnels' outer packets get (0: none)
    egress_mbit: int = 0                   # slice-egress-mbit: the planned underlay rate; 0: no queuing


def parse_dscp_map(text: str, key: str = "slice-dscp-map") -> Dict[int, int]:
    """``<5qi>=<dscp>`` pairs separated by commas or spaces (e.g. "82=46, 9=0"): overrides of the
    default mapping for standardized 5QIs. Anything else is refused whole."""
    out: Dict[int, int] = {}
    if len(text) > validation.MAX_VALUE_LEN:
        raise validation.InvalidValue("{}: longer than {} characters".format(key, validation.MAX_VALUE_LEN))
    for item in text.replace(",", " ").split(" "):
        if not item:
            continue
        qi_text, sep, dscp_text = item.partition("=")
        if not sep:
            raise validation.InvalidValue("{}: {!r} is not <5qi>=<dscp>".format(key, item[:40]))
        qi = _five_qi(qi_text, key)
        if qi in out:
            raise validation.InvalidValue("{}: 5QI {} is given twice".format(key, qi))
        out[qi] = validation.integer(dscp_text, key + " DSCP of 5QI {}".format(qi), 0, 63)
    return out


def _five_qi(value: object, key: str) -> int:
    qi = validation.integer(value, key, 0, 255)
    if qi and qi not in FIVEQI:
        raise validation.InvalidValue("{}: {} is not a standardized 5QI of 3GPP TS 23.501 table 5.7.4-1 "
                                      "(one of {})".format(key, qi, ", ".join(str(q) for q in sorted(FIVEQI))))
    return qi


def parse(config: Dict[str, object]) -> QosConfig:
    """The slice options of the charm's config: ``slice-5qi`` (0 or a standardized 5QI),
    ``slice-dscp-map`` (overrides of the default mapping) and ``slice-egress-mbit`` (0, or the
    planned rate of the VNF's underlay link in Mbit/s, 1 to 400,000)."""
    qi = _five_qi(config.get("slice-5qi") if config.get("slice-5qi") is not None else 0, "slice-5qi")
    raw_map = config.get("slice-dscp-map")
    if raw_map is not None and not isinstance(raw_map, str):
        raise validation.InvalidValue("slice-dscp-map: expected text, got {}".format(type(raw_map).__name__))
    mapping = dict(DEFAULT_DSCP)
    mapping.update(parse_dscp_map(raw_map or ""))
    rate = config.get("slice-egress-mbit")
    mbit = validation.integer(rate if rate is not None else 0, "slice-egress-mbit", 0, 400000)
    return QosConfig(five_qi=qi, dscp=mapping[qi] if qi else 0, egress_mbit=mbit)


def marks(qos: QosConfig, listen_ports: List[int]) -> List[str]:
    """The tunnel step's marking arguments, ``<udp source port>:<dscp>`` (none when not marked)."""
    if not qos.five_qi or not qos.dscp:
        return []
    return ["{}:{}".format(p, qos.dscp) for p in sorted(set(listen_ports))]


def queue_args(qos: QosConfig) -> List[str]:
    """The tunnel step's queue plan: the link rate in kbit/s, then one ``<minor>:<prio>:<rate
    kbit>:<dscp>/<dscp>...`` per class ('-' for none: the default class); nothing when off."""
    if not qos.egress_mbit:
        return []
    kbit = qos.egress_mbit * 1000
    out = [str(kbit)]
    for c in QUEUE_CLASSES:
        out.append("{}:{}:{}:{}".format(c.minor, c.priority, max(8, kbit * c.share_percent // 100),
                                        "/".join(str(d) for d in c.dscps) or "-"))
    return out


def class_of(dscp: int) -> str:
    """The name of the queue class a DSCP value is queued in."""
    for c in QUEUE_CLASSES:
        if dscp in c.dscps:
            return c.name
    return next(c.name for c in QUEUE_CLASSES if c.minor == DEFAULT_CLASS)
