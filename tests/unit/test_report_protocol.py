"""The VNF's report protocol (vpnaas/vnf/report.py) is the one description of it: the parser
reads exactly the keywords it lists as read, every line the VNF-side shell can print is in it,
and what it refuses the writer refuses. The real shell's lines are held to it end to end by
tests/e2e/test_vnf_idempotence.py; the fake VNF checks each report it writes."""
import ast
import os
import re

import pytest

from vpnaas.vnf import remote, report, vnfscript

KEY = "BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBA="


def _compared_keywords(function):
    """The string constants ``kind`` is compared with in ``function`` of remote.py."""
    with open(remote.__file__) as f:
        tree = ast.parse(f.read())
    fn = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == function)
    out = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Compare) and isinstance(node.left, ast.Name) and node.left.id == "kind":
            # ast.Constant's value; ast.Str's s on Python 3.6 (make unit36)
            out |= {getattr(c, "value", getattr(c, "s", None)) for c in node.comparators} - {None}
    return out


def test_the_parser_reads_exactly_what_the_protocol_says_the_charm_reads():
    assert _compared_keywords("_observation") == set(report.READ)


def test_every_keyword_the_shell_prints_is_in_the_protocol():
    printed = set()
    for folder, _dirs, files in os.walk(vnfscript.VNF_DIR):
        for name in files:
            if name.endswith(".sh"):
                with open(os.path.join(folder, name)) as f:
                    # the shell's out/echo, awk's print and printf's format (report: UP, PEER, NOW)
                    printed |= set(re.findall(r'\b(?:out|echo|print) "([A-Z][A-Z_]+)\b|\bprintf \'([A-Z][A-Z_]+) ',
                                              f.read()))
    printed = {word for pair in printed for word in pair if word}
    assert {"PUBKEY", "PEER", "UP", "DOWN", "NOW", "FACTS", "RESULT", "TORNDOWN"} <= printed
    assert printed - set(report.LINES) == set()


def test_the_bounds_are_the_protocols():
    assert (remote.MAX_REPORT, remote.MAX_FACTS, remote.MAX_ALLOWED_IPS) == \
        (report.MAX_REPORT, report.MAX_FACTS, report.MAX_ALLOWED_IPS)


def test_a_report_the_parser_reads_is_a_report_of_the_protocol():
    text = "\n".join([
        "FACT client 10.0.0.1", "FACTS " + "0" * 64, "INIT systemd",
        "IMPL userspace /usr/local/lib/vpnaas/wireguard-go v1",
        "DATAPLANE wg-s6a wireguard-go v0.0.20250522", "PUBKEY wg-s6a " + KEY, "APPLIED wg-s6a up",
        "REFUSED wg-s6a 10.1.0.0/24 ip route: File exists", "METRICS up 10.0.0.5:9586", "COMPONENT service running",
        "HOST hss-1", "NOW 1700000000", "UP wg-s6a",
        "PEER wg-s6a " + "\t".join([KEY, "(none)", "10.0.0.2:51821", "10.250.1.2/32", "1700000000", "1", "2", "25"]),
        "DONE"])
    assert report.problems(text) == []
    obs = remote.parse_report(text + "\n")
    assert obs.public_keys == {"wg-s6a": KEY} and obs.up == {"wg-s6a": True} and len(obs.peers["wg-s6a"]) == 1


@pytest.mark.parametrize("bad", ["PUBKEY wg-s6a not-a-key", "NOW soon", "FACTS maybe", "DONE now", "HELLO there",
                                 "UP " + "x" * 16, "PEER wg-s6a " + KEY, "TIMING f 1 x"])
def test_the_writer_refuses_a_line_outside_the_protocol(bad):
    assert report.problem(bad)
    keyword, _, rest = bad.partition(" ")
    with pytest.raises(report.ReportLineError):
        report.line(keyword, rest)
