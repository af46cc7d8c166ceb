"""The strict reading of what a UE's actions report (charms/vpnaas/oai/ue_report.py): every value
comes from the VNF and is hostile until read; the bounded cost of each reader at 1 MiB is
tests/unit/grammar_cost.py's ("ue-attach result ...", "ue-iperf result ...")."""
import base64
import json

import pytest

from vpnaas.core.validation import InvalidValue
from vpnaas.oai import ue_report

ATTACH = {"imsi": "208950000000001", "ip": "12.1.1.2", "interface": "oaitun_ue1", "seconds": "12"}


def b64(doc) -> str:
    return base64.b64encode(json.dumps(doc).encode()).decode()


def iperf(doc, **other):
    return dict({"ip": "12.1.1.2", "rtt-ms": "21.4", "iperf3": b64(doc)}, **other)


def test_an_attach_report_is_read_whole():
    assert ue_report.attach_results(ATTACH) == ATTACH


@pytest.mark.parametrize("key,value", [
    ("imsi", "20895000000000123"), ("imsi", "2089a0000000001"), ("imsi", ""), ("ip", "12.1.1.256"),
    ("ip", "12.1.1.2; reboot"), ("ip", "::1"), ("interface", "tun0 x"), ("interface", "a" * 16),
    ("seconds", "-1"), ("seconds", "86401"), ("seconds", "1e3"), ("seconds", "x" * 100000),
])
def test_an_attach_report_with_a_value_out_of_its_grammar_is_refused(key, value):
    with pytest.raises(InvalidValue):
        ue_report.attach_results(dict(ATTACH, **{key: value}))


@pytest.mark.parametrize("key", sorted(ATTACH))
def test_an_attach_report_without_a_value_is_refused(key):
    with pytest.raises(InvalidValue, match="reported no " + key):
        ue_report.attach_results({k: v for k, v in ATTACH.items() if k != key})


def test_an_iperf_report_gives_both_directions_in_mbit_per_s():
    doc = {"end": {"sum_sent": {"bits_per_second": 9_800_000}, "sum_received": {"bits_per_second": 8.4e6}}}
    assert ue_report.iperf_results(iperf(doc)) == {
        "ip": "12.1.1.2", "rtt-ms": "21.4", "sent-mbps": "9.8", "received-mbps": "8.4"}


def test_a_direction_iperf3_did_not_report_is_none_and_so_is_an_unanswered_ping():
    assert ue_report.iperf_results(iperf({"end": {}}, **{"rtt-ms": "none"})) == {
        "ip": "12.1.1.2", "rtt-ms": "none", "sent-mbps": "none", "received-mbps": "none"}
    assert ue_report.iperf_figures(b64({})) == {"sent-mbps": None, "received-mbps": None}


@pytest.mark.parametrize("doc", [
    [], "end", 5, None, {"end": []}, {"end": "x"}, {"end": {"sum_sent": [1]}},
    {"end": {"sum_sent": {"bits_per_second": "9800000"}}}, {"end": {"sum_sent": {"bits_per_second": True}}},
    {"end": {"sum_sent": {"bits_per_second": -1}}}, {"end": {"sum_sent": {"bits_per_second": 1e14}}},
    {"end": {"sum_sent": {"bits_per_second": [1]}}},
])
def test_iperf3_output_of_another_shape_is_refused_with_a_message(doc):
    with pytest.raises(InvalidValue, match="^iperf3: "):
        ue_report.iperf_figures(b64(doc))


@pytest.mark.parametrize("encoded", [
    "not base64!", base64.b64encode(b"\xff\xfe").decode(), base64.b64encode(b"{").decode(),
    base64.b64encode(b'{"end": {"sum_sent": {"bits_per_second": NaN}}}').decode(),
    base64.b64encode(b'{"end": {"sum_sent": {"bits_per_second": 1e999}}}').decode(),
    base64.b64encode(b"[" * 200000 + b"]" * 200000).decode(),
])
def test_unreadable_iperf3_output_is_refused_not_raised(encoded):
    with pytest.raises(InvalidValue, match="^iperf3: "):
        ue_report.iperf_figures(encoded)


def test_iperf3_output_over_the_bound_is_refused_before_it_is_decoded():
    with pytest.raises(InvalidValue, match="at most"):
        ue_report.iperf_figures("A" * (ue_report.MAX_IPERF3_B64 + 4))


@pytest.mark.parametrize("rtt", ["21.4;", "1e3", "-1", "0.1234", "1234567", "", " 21.4"])
def test_an_rtt_out_of_its_grammar_is_refused(rtt):
    with pytest.raises(InvalidValue):
        ue_report.iperf_results(iperf({"end": {}}, **{"rtt-ms": rtt}))
