"""Measurement command lines and output parsing shared by `make measure-remote` and the testbed.

Pure functions only (no I/O, no subprocess): the deploy tooling runs the commands through the
charms' `run` action on OSM-deployed VNFs, the local testbed runs them in network namespaces, and
both turn the output into the same report with the functions below.

The command lines follow the thesis (Sondre Sørensen Kielland, "Secure communication with
WireGuard — VPN-as-a-Service in beyond 5G", master's thesis, NTNU, February 2022, Appendix F):
    server:  iperf3 -s -B <server-ip>
    client:  iperf3 -B <client-ip> -c <server-ip> [-M 1362] -t 600 -i 60
    latency: ping -q -i 0.2 -c 1000 -I <interface> <peer-ip>
with `--json` added on the client so that the numbers are read from iperf3's own summary rather
than from its human-readable table.
"""

import json
import re

from vpnaas.core import refpoints

#: The reference points in the order every report lists them: the charms' own list
#: (charms/vpnaas/core/refpoints.py), the one source of the reference points.
REFERENCE_POINTS = tuple(refpoints.REFERENCE_POINTS)

#: Thesis defaults: 10 minutes, 60 s reports; 1000 echoes at 200 ms spacing.
IPERF3_SECONDS = 600
IPERF3_INTERVAL = 60
PING_COUNT = 1000
PING_INTERVAL = 0.2
#: The thesis passed -M 1362 (it sets the TCP MSS) on S6a and on some S1-U runs.
THESIS_MSS = 1362

REPORT_SCHEMA_VERSION = 1


class ParseError(ValueError):
    """The output is not what the measurement tool prints; the message says what was found."""


# --------------------------------------------------------------------------- command lines


def iperf3_server_cmd(bind, one_off=True, daemon=False):
    """iperf3 server bound to ``bind``. ``one_off`` (-1) exits after one test, so no server is
    left behind on the VNF; ``daemon`` (-D) returns at once, which a remote action needs."""
    argv = ["iperf3", "-s", "-B", str(bind)]
    if one_off:
        argv.append("-1")
    if daemon:
        argv.append("-D")
    return argv


def iperf3_client_cmd(
    bind, server, seconds=IPERF3_SECONDS, interval=IPERF3_INTERVAL, mss=None, json_output=True
):
    argv = ["iperf3", "-B", str(bind), "-c", str(server)]
    if mss:
        argv += ["-M", str(int(mss))]
    argv += ["-t", str(int(seconds)), "-i", str(int(interval))]
    if json_output:
        argv.append("--json")
    return argv


def ping_cmd(peer, interface, count=PING_COUNT, interval=PING_INTERVAL):
    """``interface`` is a device name (wg-s6a) or a source address; ping -I accepts both."""
    return [
        "ping",
        "-q",
        "-i",
        _fmt_interval(interval),
        "-c",
        str(int(count)),
        "-I",
        str(interface),
        str(peer),
    ]


def _fmt_interval(value):
    text = "{:.3f}".format(float(value)).rstrip("0").rstrip(".")
    return text or "0"


# --------------------------------------------------------------------------- iperf3


def _first_json_object(text):
    """The first JSON object in ``text``: remote output may carry banner or apt lines first."""
    decoder = json.JSONDecoder()
    pos = text.find("{")
    while pos != -1:
        try:
            obj, _ = decoder.raw_decode(text, pos)
        except ValueError:
            pos = text.find("{", pos + 1)
            continue
        if isinstance(obj, dict):
            return obj
        pos = text.find("{", pos + 1)
    raise ParseError("no JSON object in iperf3 output: {!r}".format(text[:200]))


def parse_iperf3_json(output):
    """Summarise ``iperf3 --json`` output (text or the decoded dict).

    Returns {"throughput_bps": receiver rate (what arrived, as the thesis quotes),
    "sent_bps", "retransmits", "seconds", "bytes", "protocol"}. A run that iperf3 reports as failed
    raises ParseError with iperf3's own error message.
    """
    data = output if isinstance(output, dict) else _first_json_object(str(output))
    error = data.get("error")
    end = data.get("end") or {}
    if error and not end.get("sum_received") and not end.get("sum"):
        raise ParseError("iperf3 failed: {}".format(error))
    proto = ((data.get("start") or {}).get("test_start") or {}).get("protocol", "TCP")
    if "sum_received" in end and "sum_sent" in end:
        sent, received = end["sum_sent"], end["sum_received"]
    elif "sum" in end:  # UDP reports a single sum
        sent = received = end["sum"]
    else:
        raise ParseError("iperf3 output has no end.sum_received/sum_sent or end.sum")
    try:
        result = {
            "throughput_bps": float(received["bits_per_second"]),
            "sent_bps": float(sent["bits_per_second"]),
            "seconds": float(received.get("seconds", sent.get("seconds", 0.0))),
            "bytes": int(received.get("bytes", 0)),
            "retransmits": sent.get("retransmits"),
            "protocol": proto,
        }
    except (KeyError, TypeError, ValueError) as exc:
        raise ParseError("iperf3 summary is incomplete: {}".format(exc)) from None
    if result["retransmits"] is not None:
        result["retransmits"] = int(result["retransmits"])
    return result


# --------------------------------------------------------------------------- ping

_PACKETS = re.compile(
    r"(?P<tx>\d+) packets transmitted, (?P<rx>\d+) (?:packets )?received"
    r"(?:, \+(?P<errors>\d+) errors)?(?:, \+\d+ duplicates)?, (?P<loss>[\d.]+)% packet loss"
)
# iputils: "rtt min/avg/max/mdev = a/b/c/d ms"; BusyBox/BSD: "round-trip min/avg/max[/stddev] = ..."
_RTT = re.compile(
    r"(?:rtt|round-trip) min/avg/max(?:/(?:mdev|stddev))? = "
    r"(?P<min>[\d.]+)/(?P<avg>[\d.]+)/(?P<max>[\d.]+)(?:/(?P<mdev>[\d.]+))? ?ms"
)


def parse_ping_summary(output):
    """Summarise the last lines of ``ping -q``.

    Returns {"transmitted", "received", "loss_percent", "rtt_min_ms", "rtt_avg_ms", "rtt_max_ms",
    "rtt_mdev_ms"}; the rtt values are None when no echo came back (ping prints no rtt line then).
    """
    text = str(output)
    packets = list(_PACKETS.finditer(text))
    if not packets:
        raise ParseError("no 'packets transmitted' line in ping output: {!r}".format(text[-200:]))
    last = packets[-1]
    result = {
        "transmitted": int(last.group("tx")),
        "received": int(last.group("rx")),
        "loss_percent": float(last.group("loss")),
        "rtt_min_ms": None,
        "rtt_avg_ms": None,
        "rtt_max_ms": None,
        "rtt_mdev_ms": None,
    }
    rtts = list(_RTT.finditer(text))
    if rtts:
        rtt = rtts[-1]
        for key in ("min", "avg", "max", "mdev"):
            if rtt.group(key) is not None:
                result["rtt_{}_ms".format(key)] = float(rtt.group(key))
    elif result["received"]:
        raise ParseError("ping received {} replies but printed no rtt line".format(result["received"]))
    return result


# --------------------------------------------------------------------------- tunnel status

#: A handshake older than this is not "recent": WireGuard re-handshakes every 120 s while traffic
#: flows and gives up on a session after 180 s (REJECT_AFTER_TIME).
HANDSHAKE_FRESH_SECONDS = 180


def tunnel_is_up(tunnel, fresh=HANDSHAKE_FRESH_SECONDS):
    """One entry of the charms' tunnel-status result: up when it has peers and every peer has
    a handshake younger than ``fresh`` seconds."""
    peers = tunnel.get("peers") or []
    if not peers:
        return False
    for peer in peers:
        age = peer.get("latest-handshake-age")
        if age is None:
            return False
        try:
            if float(age) >= fresh:
                return False
        except (TypeError, ValueError):
            return False
    return True


# --------------------------------------------------------------------------- report


def interface_entry(
    handshake=None,
    plaintext_seen=None,
    wg_iperf=None,
    plain_iperf=None,
    wg_ping=None,
    plain_ping=None,
    **extra,
):
    """One report entry. The *_iperf and *_ping arguments are the dicts returned by the parsers
    (or None when not measured); ``extra`` carries context such as the addresses used."""

    def get(source, key):
        return None if source is None else source.get(key)

    entry = {
        "handshake": handshake,
        "plaintext_seen": plaintext_seen,
        "wg_throughput_bps": get(wg_iperf, "throughput_bps"),
        "plain_throughput_bps": get(plain_iperf, "throughput_bps"),
        "wg_retransmits": get(wg_iperf, "retransmits"),
        "plain_retransmits": get(plain_iperf, "retransmits"),
        "wg_rtt_avg_ms": get(wg_ping, "rtt_avg_ms"),
        "plain_rtt_avg_ms": get(plain_ping, "rtt_avg_ms"),
        "wg_ping": wg_ping,
        "plain_ping": plain_ping,
    }
    wg, plain = entry["wg_throughput_bps"], entry["plain_throughput_bps"]
    entry["throughput_ratio"] = (wg / plain) if wg is not None and plain else None
    entry.update(extra)
    return entry


def build_report(entries, seconds_to_all_tunnels_up=None, refpoints=None, **meta):
    """The report written to build/<dir>/report.json: one entry per reference point, in
    REFERENCE_POINTS order: those of ``refpoints`` (the NS's own; one not measured gets an entry
    of nulls), or, without it, every reference point of the registry."""
    unknown = sorted((set(entries) | set(refpoints or ())) - set(REFERENCE_POINTS))
    if unknown:
        raise ValueError("unknown reference points: {}".format(", ".join(unknown)))
    listed = [rp for rp in REFERENCE_POINTS if refpoints is None or rp in refpoints]
    report = {"schema": REPORT_SCHEMA_VERSION}
    report.update(meta)
    report["seconds_to_all_tunnels_up"] = seconds_to_all_tunnels_up
    report["reference_points"] = {rp: entries.get(rp) or interface_entry() for rp in listed}
    return report
