"""`make bench` on its smallest settings: one data-plane round of 1 s per iperf3 run and one
synthetic topology of 1 tunnel; checks the JSON's structure and that the figures are sane."""
import json
import os

import pytest

from testbed import bench, vim

pytestmark = pytest.mark.timeout(240)


def _positive(summary, key):
    s = summary[key]
    assert s["n"] == 1 and s["median"] is not None and s["median"] > 0, (key, s)


def test_bench_smallest_settings(environment_ready, local_charms, tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "PINGS", 50)   # keeps the test short; the bench itself uses 200
    out = str(tmp_path / "bench")
    rc = bench.main(["--runs", "1", "--seconds", "1", "--only", "dataplane,synthetic", "--sizes", "1",
                     "--no-profile", "--out", out])
    assert rc == 0
    with open(os.path.join(out, "bench.json")) as f:
        result = json.load(f)
    assert os.path.getsize(os.path.join(out, "bench.png")) > 1000
    assert result["left_behind"] == []
    assert not [ns for ns in vim.list_testbed_netns() if any(ns.startswith(i + "-") for i in bench.CREATED)]

    assert "wireguard" in result["wireguard"] or "kernel" in result["wireguard"]
    dp = result["dataplane"]
    assert len(dp["rounds"]) == 1
    summary = dp["summary"]
    for path in ("wg", "plain"):
        for key in ("tcp1_bps", "tcp4_bps", "udp_bps", "rtt_ms", "fixed_underlay_bytes", "fixed_payload_bytes"):
            _positive(summary, "{}_{}".format(path, key))
    for test in ("tcp1", "tcp4", "udp"):
        ratio = summary["ratio_" + test]["median"]
        assert 0 < ratio < 1.5, (test, ratio)
    # Every underlay byte count covers at least the payload plus IP/UDP headers.
    assert summary["plain_fixed_overhead_ratio"]["median"] > 1.0
    assert summary["wg_fixed_overhead_ratio"]["median"] > summary["plain_fixed_overhead_ratio"]["median"]

    syn = result["synthetic"]["sizes"]["1"]
    rec = syn["runs"][0]
    assert rec["tunnels"] == 1 and rec["vnfs"] == 2
    assert rec["seconds_after_last_config"] > 0
    assert rec["seconds_after_first_config"] >= rec["seconds_after_last_config"]
    assert rec["reconcile_sessions"] > 0
    assert rec["sessions_per_reconcile"] == 1.0      # every sshd login is one reconcile's session
    assert len(rec["hook_seconds"]) == rec["hooks_total"] == len(rec["hook_opened_session"])
    for key in bench.CONV_METRICS:
        assert syn["summary"][key]["n"] == 1, key
    assert {t["name"] for t in result["targets"]} >= {"tcp1_ratio", "added_rtt_ms", "sessions_per_reconcile"}
