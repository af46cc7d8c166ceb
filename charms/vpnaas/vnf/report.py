"""The VNF's report: what a step prints back to the charm, written once.

A report is lines of ``KEYWORD rest``; the VNF-side shell writes them (``out`` in ``lib.sh``,
the steps of ``tunnels.sh``, ``metrics.sh`` and each workload's folder), the charm reads them
(``vnfscript.parse`` the frame, ``remote.parse_report`` the tunnel step's vocabulary), and the
Harness tests' fake VNF (tests/harness/fake_vnf.py) writes them through ``line`` below. Every
line a step may print is in ``LINES``, with the grammar of its rest; a conformance test runs the
real shell and holds each line it printed to this grammar (tests/e2e/test_vnf_idempotence.py),
and another holds the parser's vocabulary to it (tests/unit/test_report_protocol.py).

The grammar here states the shape; the parser still reads each field as hostile text (scrubbed,
cut, checked by the strict grammar of ``validation``) and never trusts a line for matching it.
Standard library only.
"""
import re
from typing import Dict, List, NamedTuple

#: The longest report read (a hub of 400 spokes reports about 100 kB); a longer one is refused.
MAX_REPORT = 4 * 1024 * 1024
#: The most lines a report may have (a hub of 400 spokes reports about 1,000).
MAX_REPORT_LINES = 65536
#: The most FACT lines read: a VNF's addresses, gateways and the addresses its peers' endpoint
#: names resolve to are a few hundred. More are refused, never cut: a fact dropped would make the
#: route policy less strict.
MAX_FACTS = 4096
#: The most allowed IPs of one peer read from ``wg show dump``.
MAX_ALLOWED_IPS = 1024
#: The most TIMING lines read (one per call of a profiled step).
MAX_TIMINGS = 512

_DEV = r"[A-Za-z0-9_.:-]{1,15}"
_KEY = r"[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]="
_NUMBER = r"[0-9]{1,12}(?:\.[0-9]{1,9})?"
_TEXT = r"[^\n]*"
#: One peer line of ``wg show <dev> dump``: public key, preshared key, endpoint, allowed IPs,
#: latest handshake, received, sent, keepalive (tab-separated).
_DUMP = r"{key}\t[^\t\n]*\t[^\t\n]*\t[^\t\n]*\t[0-9]{{1,20}}\t[0-9]{{1,20}}\t[0-9]{{1,20}}\t[^\t\n]*".format(key=_KEY)


class Line(NamedTuple):
    """A kind of report line: its keyword, the grammar of what follows it ('' : nothing), what
    it says, and whether the charm reads it (else it is for the operator's log)."""
    keyword: str
    rest: str
    meaning: str
    read: bool = True


LINES = {ln.keyword: ln for ln in (
    # the frame of every step (vnfscript)
    Line("ERROR", _TEXT, "the step failed; it ends the step"),
    Line("DONE", "", "the step's last line: it ran to its end"),
    Line("TIMING", r"[a-z_][a-z0-9_]{{0,63}} {n} {n}".format(n=_NUMBER),
         "a profiled call: function, start, end (hookclock)"),
    # the tunnel step (tunnels.sh, metrics.sh; remote.py)
    Line("FACT", r"[a-z][a-z0-9-]{0,31}(?: [^\n]*)?", "one fact about the VNF (facts.py reads its grammar)"),
    Line("FACTS", r"[0-9a-f]{64}|changed", "the facts' digest, or: they changed and nothing was applied"),
    Line("INIT", r"[a-z0-9-]{1,20}", "the VNF's init system"),
    Line("NEED", r"[A-Za-z0-9_.-]{1,40}", "a shipped program the VNF lacks: nothing applied (dataplane.py)"),
    Line("IMPL", r"kernel|none|[a-z]{1,20}(?: [^\n]*)?", "the VNF's WireGuard (kernel, userspace <path> <version>)"),
    Line("DATAPLANE", r"{} (?:kernel|wireguard-go|boringtun) [^\n]*".format(_DEV),
         "what a device runs on, and its version"),
    Line("PUBKEY", r"{} {}".format(_DEV, _KEY), "a device's public key (never the private one)"),
    Line("APPLIED", r"{} [a-z-]{{1,20}}".format(_DEV), "how a device was applied (for the log)", read=False),
    Line("FAILED", r"\S{1,64} [^\n]*", "a device (or 'metrics') that could not be applied, and why"),
    Line("REFUSED", r"{} \S{{1,64}} [^\n]*".format(_DEV), "a route the VNF refused: device, prefix, why"),
    Line("METRICS", r"up \S{1,64}|off|[^\n]{1,200}", "the exporter's state"),
    Line("QOS", r"mark [0-9]{1,5} [0-9]{1,2}|queue \S{1,15} [0-9]{1,9} [a-z_]{1,20}|queue (?:applied|removed) \S{1,15}"
         r"|marking (?:applied|removed) ip6?tables|off",
         "the slice's marking (udp source port, DSCP) and egress queue (device, kbit/s, leaf qdisc), and changes"),
    Line("COMPONENT", r"[a-z][a-z0-9_-]{0,39}(?: [^\n]*)?", "a component's own state: key value"),
    Line("HOST", r"\S{0,255}", "the VNF's host name"),
    Line("NOW", r"[0-9]{1,20}", "the VNF's clock (seconds since the epoch)"),
    Line("UP", _DEV, "a device is up"),
    Line("DOWN", _DEV, "a device is down or missing"),
    Line("PEER", r"{} {}".format(_DEV, _DUMP), "one peer of an up device, as wg show dump prints it"),
    Line("PQPSK", r"up|off", "the pq-psk daemon runs (a device has pq-psk peers) or not"),
    Line("PQPEER", r"{} {} (?:waiting|ok|failing){}".format(_DEV, _KEY, " [0-9]{1,20}" * 4),
         "pq-psk's state of one peer: device, key, state, epoch, renewals, last renewal, refusals"),
    Line("REMOVED", _DEV, "a device no longer wanted was removed (for the log)", read=False),
    Line("TORNDOWN", "", "the teardown step ran to its end (for the log)", read=False),
    # the workloads' steps (vnf/oai; oai/component.py reads them)
    Line("RESULT", r"[a-z][a-z0-9_-]{0,39} [^\n]*", "a result of an OAI step: key value"),
    Line("NOTE", r"[^\n]{1,4000}", "a remark for the operator, shown in the action's output"),
    Line("PROGRESS", r"[^\n]{1,4000}", "a long step's progress"),
    # the program upload (dataplane.install_command)
    Line("INSTALLED", r"[A-Za-z0-9_.-]{1,40} [0-9a-f]{64}", "a program installed with this digest"),
)}
_COMPILED = {k: re.compile(ln.rest) for k, ln in LINES.items()}
#: The keywords the charm reads from the tunnel step's report (remote.parse_report).
READ = frozenset(k for k, ln in LINES.items()
                 if ln.read and k not in ("ERROR", "DONE", "INSTALLED", "RESULT", "NOTE", "PROGRESS"))


class ReportLineError(ValueError):
    """A line that is not in the protocol (``line`` refuses to write it)."""


def problem(text: str) -> str:
    """Why ``text`` (one line, without its newline) is not a line of the protocol ('' : it is)."""
    keyword, space, rest = text.partition(" ")
    spec = LINES.get(keyword)
    if spec is None:
        return "unknown keyword: {!r}".format(text[:80])
    if not spec.rest:
        return "" if not space else "{} takes nothing after it: {!r}".format(keyword, text[:80])
    if not _COMPILED[keyword].fullmatch(rest):
        return "{} does not match its grammar: {!r}".format(keyword, text[:200])
    return ""


def problems(report: str) -> List[str]:
    """Every line of ``report`` that is not a line of the protocol, with why."""
    return [p for p in (problem(t) for t in report.splitlines()) if p]


def line(keyword: str, *fields: str) -> str:
    """The report line ``keyword fields...``; ReportLineError when it is not in the protocol."""
    text = " ".join((keyword,) + fields)
    why = problem(text)
    if why:
        raise ReportLineError(why)
    return text


def table() -> Dict[str, str]:
    """{keyword: meaning} (docs and error messages)."""
    return {k: ln.meaning for k, ln in LINES.items()}
