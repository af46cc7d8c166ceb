"""`make bench` on its smallest settings (one round of 1 s per iperf3 run: the charms' tunnel
beside the plain link, a bare wireguard-go pair and OpenVPN, brought up by a parallel VCA):
checks the JSON's structure, summary.json, and that the figures are sane. (The convergence
parts are exercised by tests/unit/test_vca_parallel.py and the end-to-end sequences.)"""
import json
import os

import pytest

from testbed import bench
from testbed.emulators import vim
from vpnaas.charm import relation_cache

pytestmark = pytest.mark.timeout(120)


def _positive(summary, key):
    s = summary[key]
    assert s["n"] == 1 and s["median"] is not None and s["median"] > 0, (key, s)


def test_bench_smallest_settings(environment_ready, local_charms, tmp_path):
    out = str(tmp_path / "bench")
    os.makedirs(os.path.join(out, "work"))
    keep = os.path.join(out, "work", "mine.txt")     # not the bench's: must survive the run
    open(keep, "w").close()
    rc = bench.main(["--rounds", "1", "--seconds", "1", "--pings", "20", "--retries", "0",
                     "--only", "dataplane", "--paths", "plain,charm,wg-bare,ovpn-chacha", "--parallel", "2",
                     "--out", out])
    assert rc == 0
    assert os.path.exists(keep)
    assert sorted(os.listdir(out)) == ["bench.json", "bench.png", "summary.json", "work"]
    with open(os.path.join(out, "bench.json")) as f:
        result = json.load(f)
    with open(os.path.join(out, "summary.json")) as f:
        summary = json.load(f)
    assert os.path.getsize(os.path.join(out, "bench.png")) > 1000
    assert result["left_behind"] == []
    assert not [ns for ns in vim.list_testbed_netns() if any(ns.startswith(i + "-") for i in bench.CREATED)]

    dp = result["dataplane"]
    assert dp["paths"] == ["plain", "wg-bare", "charm", "ovpn-chacha"]
    assert len(dp["rounds"]) == 1
    s = dp["summary"]
    for path in dp["paths"]:
        _positive(s, path + "_tcp1_bps")
        _positive(s, path + "_rtt_ms")
        assert s[path + "_tcp1_other_cores"]["median"] >= 0
    for key in ("tcp4_bps", "udp_bps", "fixed_underlay_bytes", "fixed_payload_bytes"):
        _positive(s, "charm_" + key)
        _positive(s, "plain_" + key)
    # Every underlay byte count covers at least the payload plus IP/UDP headers.
    assert s["plain_fixed_overhead_ratio"]["median"] > 1.0
    assert s["charm_fixed_overhead_ratio"]["median"] > s["plain_fixed_overhead_ratio"]["median"]
    assert 0 < s["charm_over_plain_tcp1"]["median"] < 1.5
    assert 0.2 < s["charm_over_bare_tcp1"]["median"] < 5
    assert s["charm_tcp1_daemon_cores"]["median"] > 0          # the charms' daemons carried the traffic

    assert summary["product_vs_bare_wireguard"] == pytest.approx(s["charm_over_bare_tcp1"]["median"])
    pooled = summary["spread"]["charm_over_bare_tcp1_pooled"]         # one round, no interfaces
    assert pooled["n"] == 1 and pooled["median"] == pytest.approx(summary["product_vs_bare_wireguard"])
    assert summary["wireguard_vs_openvpn_throughput"] > 0
    assert summary["wireguard_added_rtt_ms"] == pytest.approx(s["charm_added_rtt_ms"]["median"])
    assert summary["openvpn_added_rtt_ms"] == pytest.approx(s["ovpn-chacha_added_rtt_ms"]["median"])
    assert summary["convergence_32_over_8"] is None                   # not measured on this setting

    assert {t["name"] for t in result["targets"]} >= {"tcp1_ratio", "added_rtt_ms", "product_vs_bare"}
    assert dp["charm_vs_bare_setup"]["a"]["differences"] == {}, dp["charm_vs_bare_setup"]
    assert dp["charm_vs_bare_setup"]["a"]["charm"]["mtu"] == dp["tunnel_mtu"]


RELATION_EVENTS = ("created", "joined", "changed", "departed", "broken")


def test_bench_synthetic_smallest_settings(environment_ready, local_charms, tmp_path):
    """The control-plane path: two sizes interleaved, the CPU window, the hook profile."""
    out = str(tmp_path / "bench")
    rc = bench.main(["--only", "synthetic", "--sizes", "2,1", "--rounds", "1", "--parallel", "2", "--join", "1",
                     "--out", out])
    assert rc == 0
    with open(os.path.join(out, "bench.json")) as f:
        result = json.load(f)
    sizes = result["synthetic"]["sizes"]
    assert sorted(sizes) == ["1", "2"]
    for k, size in sizes.items():
        (run,) = size["runs"]
        assert run["tunnels"] == int(k) and run["vnfs"] == int(k) + 1
        assert run["seconds_after_first_config"] >= run["seconds_after_last_config"] > 0
        assert run["cpu_seconds"] > 0 and 0 < run["cpu_busy_fraction"] <= 1.05
        assert run["logins_per_session"] == 1.0
        assert run["sessions"] == run["reconcile_sessions"] + run["verify_sessions"]
        # The hub's relation hooks before its config (created, joined, changed per spoke) end in the
        # hook gate, before ops: one hook-tool call each (two for an unchanged relation-changed:
        # the remote's data and this unit's own, and one more per relation the last charm run
        # wrote, at most relation_cache.MAX_WRITTEN), whatever the number of relations.
        assert run["hub_gate_hooks"] >= 3 * int(k)
        assert run["hub_gate_hook_tool_calls"] <= 2 + relation_cache.MAX_WRITTEN
        # Juju's created and joined, before the config, never reach the charm.
        assert run["max_charm_hooks_per_unit_relation"] <= run["max_hooks_per_unit_relation"] - 2
        assert set(run["hook_kinds"]) <= {"gate", "charm", "session", "verify"} and "session" in run["hook_kinds"]
        # The profile covers exactly the hub's relation hooks that opened a session. How many do
        # depends on the order of the configs (a hub configured after its spokes published takes
        # them all in its config-changed: none at all then), so it is compared with the hook log.
        relation_sessions = sum(n for name, n in run["hub_hook_classes"]["by_event"].items()
                                if name.split()[0] in RELATION_EVENTS and name.endswith(" session"))
        assert run["hub_phases"]["n"] == relation_sessions, (run["hub_phases"], run["hub_hook_classes"])
        assert relation_sessions == 0 or run["hub_phases"]["phases"]["vnf"] > 0
    join = sizes["1"]["runs"][0]["spoke_join"]
    assert join["joined"] == 1 and join["probe"]["sent"] > 500 and join["lost"] == 0, join
    with open(os.path.join(out, "summary.json")) as f:
        summary = json.load(f)
    assert summary["spoke_join_packets_lost_on_existing"] == 0 and summary["spoke_join_packets_sent"] > 500
    assert result["profile"]["hook_tool_call_s"] > 0
    assert result["profile"]["hook_in_gate_s"]["n"] >= 3 * 3
    assert result["left_behind"] == []
