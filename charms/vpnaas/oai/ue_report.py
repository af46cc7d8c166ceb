"""What a UE's actions (``ue-attach``, ``ue-iperf``) report, read in the strict grammar.

Pure module. The values come from the VNF (``RESULT`` lines of ``vnf/oai/ue.sh``) and are hostile
until read here: each is checked against its grammar and bound before it reaches the action's
results, and anything else fails the action with a clear message (never a traceback, never an
unbounded value in Juju's action store). iperf3's JSON is parsed with the standard library: its
size is bounded first, so the parse is linear and bounded in time and memory, and its nesting is
bounded by the decoder's recursion limit (RecursionError is caught).
"""

import base64
import binascii
import json
import math
import re
from typing import Any, Dict, Mapping, Optional

from vpnaas.core.validation import InvalidValue, excerpt
from vpnaas.oai import validation as oai_validation

#: iperf3 -J of the longest run ue-iperf allows (300 s) is ~280 KiB (~0.9 KiB per interval), ~370 KiB
#: in base64: twice that.
MAX_IPERF3_B64 = 768 * 1024
#: 10 Tbit/s: any larger figure is not a measurement.
MAX_BITS_PER_SECOND = 1e13
_RTT = re.compile(r"(?:0|[1-9][0-9]{0,5})(?:\.[0-9]{1,3})?")
_SECONDS_MAX = 86400


def _result(results: Mapping[str, str], key: str) -> str:
    if key not in results:
        raise InvalidValue("the VNF reported no {}".format(key))
    return results[key]


def attach_results(results: Mapping[str, str]) -> Dict[str, str]:
    """ue-attach's RESULT lines: imsi (6-15 digits), ip (IPv4), interface, seconds."""
    return {
        "imsi": oai_validation.digits(_result(results, "imsi"), "imsi", 6, 15),
        "ip": oai_validation.ipv4(_result(results, "ip"), "ip"),
        "interface": oai_validation.interface_name(_result(results, "interface"), "interface"),
        "seconds": str(oai_validation.integer(_result(results, "seconds"), "seconds", 0, _SECONDS_MAX)),
    }


def iperf_results(results: Mapping[str, str]) -> Dict[str, str]:
    """ue-iperf's RESULT lines: ip, rtt-ms ("none" when ping got no answer) and the throughput
    read from iperf3's JSON ("none" for a direction iperf3 did not report)."""
    rtt = _result(results, "rtt-ms")
    if rtt != "none" and not _RTT.fullmatch(rtt):
        raise InvalidValue("rtt-ms: {} is not a round-trip time in ms".format(excerpt(rtt)))
    figures = iperf_figures(_result(results, "iperf3"))
    return {"ip": oai_validation.ipv4(_result(results, "ip"), "ip"), "rtt-ms": rtt,
            "sent-mbps": _shown(figures["sent-mbps"]), "received-mbps": _shown(figures["received-mbps"])}


def _shown(mbps: Optional[float]) -> str:
    return "none" if mbps is None else str(mbps)


def iperf_figures(encoded: str) -> Dict[str, Optional[float]]:
    """Throughput (Mbit/s, sent and received) from iperf3's JSON (base64). iperf3's JSON as the
    VNF's iperf3 version wrote it: a missing figure is None; a malformed one is an error."""
    if len(encoded) > MAX_IPERF3_B64:
        raise InvalidValue("iperf3: its output is {} characters (at most {})".format(len(encoded), MAX_IPERF3_B64))
    try:
        doc = json.loads(base64.b64decode(encoded, validate=True).decode("utf-8"))
    except (binascii.Error, ValueError, RecursionError) as e:
        raise InvalidValue("iperf3: unreadable output ({})".format(excerpt(type(e).__name__ + ": " + str(e)))) from None
    end = _member(doc, "end", "iperf3's output")
    return {"sent-mbps": _mbps(_member(end, "sum_sent", "end"), "sum_sent"),
            "received-mbps": _mbps(_member(end, "sum_received", "end"), "sum_received")}


def _member(doc: Any, key: str, what: str) -> Dict[str, Any]:
    if not isinstance(doc, dict):
        raise InvalidValue("iperf3: {} is not an object".format(what))
    value = doc.get(key, {})
    if not isinstance(value, dict):
        raise InvalidValue("iperf3: {}.{} is not an object".format(what, key))
    return value


def _mbps(section: Dict[str, Any], what: str) -> Optional[float]:
    bps = section.get("bits_per_second")
    if bps is None:
        return None
    if isinstance(bps, bool) or not isinstance(bps, (int, float)) or not math.isfinite(bps) \
            or not 0 <= bps <= MAX_BITS_PER_SECOND:
        raise InvalidValue("iperf3: {}.bits_per_second is {}, not a throughput".format(what, excerpt(bps)))
    return round(bps / 1e6, 2) if bps else None
