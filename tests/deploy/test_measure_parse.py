"""scripts/measure_parse.py: thesis command lines and the parsers shared with the testbed."""

import json

import measure_parse as mp
import pytest

from bundle import membership
from vpnaas.core import refpoints

IPERF_TCP = {
    "start": {"test_start": {"protocol": "TCP", "duration": 600}},
    "intervals": [],
    "end": {
        "sum_sent": {"seconds": 600.0, "bytes": 68850000000, "bits_per_second": 918.0e6, "retransmits": 347},
        "sum_received": {"seconds": 600.04, "bytes": 68840000000, "bits_per_second": 917.5e6},
    },
}


def test_commands_are_the_thesis_appendix_f_lines():
    assert mp.iperf3_server_cmd("172.16.6.129", one_off=False) == ["iperf3", "-s", "-B", "172.16.6.129"]
    assert mp.iperf3_client_cmd("172.16.6.28", "172.16.6.129", mss=1362, json_output=False) == [
        "iperf3",
        "-B",
        "172.16.6.28",
        "-c",
        "172.16.6.129",
        "-M",
        "1362",
        "-t",
        "600",
        "-i",
        "60",
    ]
    assert mp.iperf3_client_cmd("a", "b", seconds=10, interval=1)[-1] == "--json"
    assert mp.ping_cmd("172.16.6.128", "wg-s6a") == [
        "ping",
        "-q",
        "-i",
        "0.2",
        "-c",
        "1000",
        "-I",
        "wg-s6a",
        "172.16.6.128",
    ]
    assert mp.iperf3_server_cmd("x", daemon=True)[-2:] == ["-1", "-D"]


def test_iperf3_json_uses_receiver_rate_and_sender_retransmits():
    got = mp.parse_iperf3_json(json.dumps(IPERF_TCP))
    assert got["throughput_bps"] == 917.5e6
    assert got["sent_bps"] == 918.0e6
    assert got["retransmits"] == 347
    assert got["protocol"] == "TCP"


def test_iperf3_json_after_noise_and_udp_sum():
    udp = {
        "start": {"test_start": {"protocol": "UDP"}},
        "end": {"sum": {"seconds": 10, "bytes": 1250000, "bits_per_second": 1.0e6}},
    }
    got = mp.parse_iperf3_json("Reading package lists... {not json}\n" + json.dumps(udp))
    assert got["throughput_bps"] == 1.0e6 and got["protocol"] == "UDP" and got["retransmits"] is None


def test_iperf3_error_is_reported():
    with pytest.raises(mp.ParseError, match="unable to connect"):
        mp.parse_iperf3_json(
            '{"start": {}, "end": {}, "error": "unable to connect to server: Connection refused"}'
        )
    with pytest.raises(mp.ParseError, match="no JSON"):
        mp.parse_iperf3_json("iperf3: command not found")


def test_ping_iputils_summary_thesis_f7():
    out = (
        "PING 192.168.247.12 (192.168.247.12) from 192.168.247.101 wg2: 56(84) bytes of data.\n\n"
        "--- 192.168.247.12 ping statistics ---\n"
        "1000 packets transmitted, 1000 received, 0% packet loss, time 202727ms\n"
        "rtt min/avg/max/mdev = 0.517/0.881/2.111/0.161 ms\n"
    )
    assert mp.parse_ping_summary(out) == {
        "transmitted": 1000,
        "received": 1000,
        "loss_percent": 0.0,
        "rtt_min_ms": 0.517,
        "rtt_avg_ms": 0.881,
        "rtt_max_ms": 2.111,
        "rtt_mdev_ms": 0.161,
    }


def test_ping_total_loss_and_busybox():
    lost = mp.parse_ping_summary(
        "10 packets transmitted, 0 received, +10 errors, 100% packet loss, time 9013ms\n"
    )
    assert lost["loss_percent"] == 100.0 and lost["rtt_avg_ms"] is None
    bb = mp.parse_ping_summary(
        "3 packets transmitted, 3 packets received, 0% packet loss\n"
        "round-trip min/avg/max = 0.101/0.202/0.303 ms\n"
    )
    assert bb["rtt_avg_ms"] == 0.202 and bb["rtt_mdev_ms"] is None
    with pytest.raises(mp.ParseError):
        mp.parse_ping_summary("ping: unknown host")
    with pytest.raises(mp.ParseError, match="no rtt"):
        mp.parse_ping_summary("5 packets transmitted, 5 received, 0% packet loss, time 4005ms\n")


def test_tunnel_is_up_needs_every_peer_fresh():
    fresh = {"peers": [{"latest-handshake-age": 12}, {"latest-handshake-age": 179.9}]}
    assert mp.tunnel_is_up(fresh)
    assert not mp.tunnel_is_up({"peers": [{"latest-handshake-age": 12}, {"latest-handshake-age": None}]})
    assert not mp.tunnel_is_up({"peers": [{"latest-handshake-age": 180}]})
    assert not mp.tunnel_is_up({"peers": []})


def test_report_has_every_reference_point_and_required_keys():
    entry = mp.interface_entry(
        handshake=True,
        wg_iperf={"throughput_bps": 1e9, "retransmits": 1},
        plain_iperf={"throughput_bps": 2e10},
        wg_ping={"rtt_avg_ms": 0.8},
    )
    report = mp.build_report({"s6a": entry}, seconds_to_all_tunnels_up=95.5, source="osm")
    # One source of the reference points and their order: the charms' refpoints module.
    # every reference point of the registry, in its order (tests/unit/test_registry.py pins the EPS's)
    assert list(report["reference_points"]) == list(refpoints.REFERENCE_POINTS)
    assert report["seconds_to_all_tunnels_up"] == 95.5 and report["source"] == "osm"
    s6a = report["reference_points"]["s6a"]
    assert s6a["throughput_ratio"] == pytest.approx(0.05)
    assert s6a["plain_rtt_avg_ms"] is None and s6a["plaintext_seen"] is None
    for rp, e in report["reference_points"].items():
        for key in (
            "handshake",
            "plaintext_seen",
            "wg_throughput_bps",
            "plain_throughput_bps",
            "wg_rtt_avg_ms",
            "plain_rtt_avg_ms",
        ):
            assert key in e, (rp, key)
    with pytest.raises(ValueError):
        mp.build_report({"s99": entry})


def test_a_report_lists_only_the_reference_points_of_the_ns_it_ran():
    """The demo passes its NS's reference points: a 5G NS lists N2, N3, N4, N11 and db (in the
    registry's order), one not measured with nulls, never the EPS's; an unknown one is refused."""
    entry = mp.interface_entry(handshake=True)
    sa, eps_rps = membership.of_variant("sa_wg")[1], membership.of_variant("eps_wg")[1]
    report = mp.build_report({"n3": entry}, refpoints=list(reversed(sa)))
    assert list(report["reference_points"]) == sa
    assert report["reference_points"]["n3"]["handshake"] is True
    assert report["reference_points"]["n2"]["handshake"] is None
    eps = mp.build_report({}, refpoints=eps_rps)
    assert list(eps["reference_points"]) == eps_rps
    with pytest.raises(ValueError):
        mp.build_report({}, refpoints=["s6a", "x9"])
