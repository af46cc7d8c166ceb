"""The statistics and target checks of `make bench` (pure functions, no root needed)."""
import io
import os

import pytest

from testbed.measurement import benchstats as bs


def test_summarize_median_min_max_ignores_none():
    s = bs.summarize([3.0, None, 1.0, 2.0])
    assert s == {"n": 3, "median": 2.0, "min": 1.0, "max": 3.0}


def test_summarize_even_count_takes_mean_of_middle_pair():
    assert bs.summarize([1, 2, 3, 10])["median"] == 2.5


def test_summarize_empty_has_no_numbers():
    assert bs.summarize([]) == {"n": 0, "median": None, "min": None, "max": None}
    assert bs.summarize([None]) == {"n": 0, "median": None, "min": None, "max": None}


def test_ratio_guards_missing_and_zero():
    assert bs.ratio(1, 4) == 0.25
    assert bs.ratio(None, 4) is None
    assert bs.ratio(1, 0) is None
    assert bs.ratio(1, None) is None


def test_paired_ratios_pair_rounds():
    assert bs.paired_ratios([1, 2, None], [2, 4, 5]) == [0.5, 0.5, None]


def test_summarize_rounds_per_metric_with_gaps():
    out = bs.summarize_rounds([{"a": 1, "b": 10}, {"a": 3}, {"a": 2, "b": 30}])
    assert out["a"] == {"n": 3, "median": 2.0, "min": 1.0, "max": 3.0}
    assert out["b"]["n"] == 2 and out["b"]["median"] == 20.0


@pytest.mark.parametrize("name,value,met", [
    ("tcp1_ratio", 0.2, True), ("tcp1_ratio", 0.1, False), ("tcp1_ratio", 0.15, True),
    ("added_rtt_ms", 0.2, True), ("added_rtt_ms", 0.3, False),
    ("product_vs_bare", 0.96, True), ("product_vs_bare", 0.9, False),
    ("synthetic_32_over_8", 3.0, True), ("synthetic_32_over_8", 3.1, False),
    ("synthetic_cpu_32_over_8", 4.0, True), ("synthetic_cpu_32_over_8", 4.1, False),
    ("spoke_join_packets_lost", 0, True), ("spoke_join_packets_lost", 1, False),
    ("eps_seconds_after_last_config", 5.0, True), ("eps_seconds_after_last_config", 5.1, False),
    ("eps_max_changed_per_unit_relation", 3, True), ("eps_max_changed_per_unit_relation", 4, False),
])
def test_check_target_direction(name, value, met):
    t = bs.check_target(name, value)
    assert t["met"] is met and t["measured"] == value and t["target"] == bs.TARGETS[name][2]


def test_check_target_unmeasured_is_not_a_verdict():
    assert bs.check_target("tcp1_ratio", None)["met"] is None


def test_growth_uses_medians():
    times = {8: [10.0, 12.0, 11.0], 32: [40.0, 50.0, 44.0]}
    assert bs.growth(times, 8, 32) == pytest.approx(4.0)
    assert bs.growth({8: [10.0]}, 8, 32) is None


def test_table_aligns_columns():
    text = bs.table(("metric", "value"), [["a", "1.000"], ["longer", "22.0"]])
    lines = text.splitlines()
    assert lines[1] == "-" * len(lines[0])
    assert len({len(line) for line in lines}) == 1
    assert lines[2].startswith("a ") and lines[2].endswith("1.000")


def test_fmt():
    assert bs.fmt(None) == "-"
    assert bs.fmt(1234.5678, 1) == "1,234.6"
    assert bs.fmt(7) == "7"


def test_summary_rows_scale():
    rows = bs.summary_rows({"x_bps": bs.summarize([1e9, 2e9])}, scale=1e6, digits=0)
    assert rows == [["x_bps", "1,500", "1,000", "2,000", 2]]


# --------------------------------------------------------------------------- load check


class _FakeWindow(object):
    """loadcheck.Window with scripted other-load figures."""
    loads = []

    def __init__(self, namespaces):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.other_cores, self.steal_cores, self.seconds = _FakeWindow.loads.pop(0), 0.0, 1.0
        return False


def test_sampled_repeats_a_disturbed_sample_and_keeps_the_quiet_one(monkeypatch):
    from testbed.measurement import loadcheck
    monkeypatch.setattr(loadcheck, "Window", _FakeWindow)
    _FakeWindow.loads = [0.9, 0.1]
    results = iter(["noisy", "quiet"])
    assert loadcheck.sampled(lambda: next(results), [], 0.5, 2) == ("quiet", 0.1, 0.0, 2, False)


def test_sampled_keeps_the_least_disturbed_when_all_are_disturbed(monkeypatch):
    from testbed.measurement import loadcheck
    monkeypatch.setattr(loadcheck, "Window", _FakeWindow)
    _FakeWindow.loads = [0.9, 0.6, 1.2]
    results = iter(["a", "b", "c"])
    assert loadcheck.sampled(lambda: next(results), [], 0.5, 2) == ("b", 0.6, 0.0, 3, True)


def test_window_counts_its_own_busy_loop_as_its_own():
    """CPU this process spends inside the window is the bench's own work, never "other" load:
    the window's own seconds hold at least what the process itself used (less one clock tick of
    rounding on each side), however busy the rest of the machine is."""
    import time

    from testbed.measurement import loadcheck
    with loadcheck.Window([]) as w:
        cpu0 = time.process_time()
        while time.process_time() - cpu0 < 0.3:
            pass
        used = time.process_time() - cpu0
    assert w.own_seconds >= used - 2.0 / loadcheck.TICK
    assert 0 <= w.other_cores <= os.cpu_count()


def test_rotated_order_interleaves_paths():
    from testbed import dataplane
    names = ["plain", "wg-bare", "charm"]
    assert [dataplane.rotated(names, i)[0] for i in range(3)] == names


def test_derived_ratios_are_per_round():
    from testbed import dataplane
    sample = {"plain_tcp1_bps": 10e9, "wg-bare_tcp1_bps": 2e9, "charm_tcp1_bps": 1.9e9, "ovpn-aes_tcp1_bps": 0.5e9,
              "ovpn-chacha_tcp1_bps": 0.4e9, "plain_rtt_ms": 0.05, "charm_rtt_ms": 0.45}
    out = dataplane.derived(sample, ["plain", "wg-bare", "charm", "ovpn-aes", "ovpn-chacha"])
    assert out["charm_over_bare_tcp1"] == pytest.approx(0.95)
    assert out["charm_over_plain_tcp1"] == pytest.approx(0.19)
    assert out["charm_over_best_openvpn_tcp1"] == pytest.approx(3.8)
    assert out["charm_added_rtt_ms"] == pytest.approx(0.4)


def test_summary_json_headline_figures():
    from testbed.measurement import benchreport
    dp = bs.summarize_rounds([{"charm_over_bare_tcp1": 0.97, "charm_over_best_openvpn_tcp1": 4.0,
                               "charm_added_rtt_ms": 0.4, "ovpn-aes_added_rtt_ms": 0.3,
                               "ovpn-chacha_added_rtt_ms": 0.25}])
    ifaces = {"s6a": {"summary": bs.summarize_rounds([{"charm_over_bare_tcp1": 0.9}, {"charm_over_bare_tcp1": 0.96}])}}
    syn = {"8": {"runs": [{"seconds_after_first_config": 10.0, "cpu_seconds": 20.0, "seconds_after_last_config": 6.0,
                           "hub_hook_classes": {"sessions": 4}},
                          {"seconds_after_first_config": 14.0, "cpu_seconds": 20.0, "seconds_after_last_config": 8.0,
                           "hub_hook_classes": {"sessions": 6}}]},
           "32": {"runs": [{"seconds_after_first_config": 35.0, "cpu_seconds": 80.0, "seconds_after_last_config": 12.0},
                           {"seconds_after_first_config": 49.0, "cpu_seconds": 100.0,
                            "seconds_after_last_config": 16.0}]}}
    s = benchreport.summary({"dataplane": {"summary": dp, "rounds": []}, "interfaces": {"per_interface": ifaces},
                             "synthetic": {"sizes": syn}})
    assert s["product_vs_bare_wireguard"] == pytest.approx(0.93)      # the lowest EPS interface (s6a)
    assert s["spread"]["charm_over_bare_tcp1_pair"]["median"] == pytest.approx(0.97)
    only_pair = benchreport.summary({"dataplane": {"summary": dp, "rounds": []}})
    assert only_pair["product_vs_bare_wireguard"] == pytest.approx(0.97)   # no interface measured: the pair
    assert s["wireguard_vs_openvpn_throughput"] == 4.0
    assert s["wireguard_added_rtt_ms"] == 0.4 and s["openvpn_added_rtt_ms"] == 0.25
    assert s["convergence_32_over_8"] == pytest.approx(3.5)            # 42 / 12: the ratio of the medians
    assert s["convergence_cpu_32_over_8"] == pytest.approx(4.5)
    assert s["convergence_after_last_config_32_over_8"] == pytest.approx(2.0)   # 14 / 7
    assert s["hub_sessions_per_spoke"] == {"8": pytest.approx(0.625)}          # (4 + 6) / 2 / 8; 32: not recorded
    per_round = s["spread"]["convergence_32_over_8_per_round"]
    assert per_round["per_round"] == pytest.approx([3.5, 3.5]) and per_round["n"] == 2
    assert s["spread"]["convergence_cpu_32_over_8_per_round"]["per_round"] == pytest.approx([4.0, 5.0])


def test_summary_pools_every_paired_round_of_the_pair_and_the_interfaces():
    from testbed.measurement import benchreport
    pair = [{"charm_over_bare_tcp1": x} for x in (0.90, 1.00, None)]
    s6a = [{"charm_over_bare_tcp1": x} for x in (0.94, 1.02)]
    s1u = [{"charm_over_bare_tcp1": x} for x in (0.97, 1.05, 1.01)]
    result = {"dataplane": {"summary": bs.summarize_rounds(pair), "rounds": pair},
              "interfaces": {"per_interface": {n: {"summary": bs.summarize_rounds(r), "rounds": r}
                                               for n, r in (("s6a", s6a), ("s1u", s1u))}}}
    s = benchreport.summary(result)
    # The headline is the lowest interface median (s6a's 0.98; the pair's 0.95 is reported apart);
    # the pooled figure takes all 7 rounds.
    assert s["product_vs_bare_wireguard"] == pytest.approx(0.98)
    assert s["spread"]["charm_over_bare_tcp1_pair"]["median"] == pytest.approx(0.95)
    assert s["spread"]["charm_over_bare_tcp1_pooled"] == pytest.approx(
        {"n": 7, "median": 1.00, "min": 0.90, "max": 1.05})
    assert benchreport.summary({})["spread"]["charm_over_bare_tcp1_pooled"]["n"] == 0


def test_cpu_record_is_the_busy_time_between_two_readings():
    from testbed import convergence
    from testbed.measurement import loadcheck
    tick = float(loadcheck.TICK)
    rec = convergence.cpu_record((100, 7), (100 + int(3 * tick), 7 + int(tick)), 2.0)
    assert rec["cpu_seconds"] == pytest.approx(3.0) and rec["cpu_steal_seconds"] == pytest.approx(1.0)
    assert rec["cpu_busy_fraction"] == pytest.approx(3.0 / (2.0 * (os.cpu_count() or 1)))
    assert convergence.cpu_record((0, 0), (0, 0), 0.0)["cpu_busy_fraction"] is None


def test_synthetic_sizes_run_interleaved():
    from testbed import bench
    calls = []
    out = bench.interleaved([2, 8, 32], {2: 3, 8: 1, 32: 2}, lambda k, i: calls.append((k, i)) or "{}-{}".format(k, i))
    assert calls == [(2, 0), (8, 0), (32, 0), (2, 1), (32, 1), (2, 2)]
    assert out == {2: ["2-0", "2-1", "2-2"], 8: ["8-0"], 32: ["32-0", "32-1"]}


def test_report_prints_the_growth_with_each_interleaved_rounds_ratio():
    import io

    from testbed import convergence
    from testbed.measurement import benchreport
    sizes = {}
    for k, times in (("8", (10.0, 14.0)), ("32", (30.0, 56.0))):
        runs = [{"seconds_after_first_config": t, "seconds_after_last_config": t / 2} for t in times]
        sizes[k] = {"runs": runs, "summary": convergence.conv_summary(runs)}
    out = io.StringIO()
    benchreport.print_tables({"synthetic": {"sizes": sizes}}, out)
    assert ("32 / 8 tunnels, time from the first config: 3.58 (ratio of the medians); "
            "per interleaved round: 3.00, 4.00") in out.getvalue()


def test_summary_json_has_the_join_probe_the_eps_figure_and_each_phases_growth():
    from testbed import convergence
    from testbed.measurement import benchreport
    eps = [{"seconds_after_last_config": x, "max_hooks_per_unit_relation": 3, "logins_per_session": 1.0}
           for x in (4.0, 6.0, 5.0)]

    def run(t, phases, join=None):
        rec = {"seconds_after_first_config": t, "cpu_seconds": 2 * t,
               "hub_phases": {"phases": phases, "hook_seconds": sum(phases.values()), "tool_calls": 40}}
        if join is not None:
            rec["spoke_join"] = {"lost": join, "probe": {"lost": join, "sent": 12000}}
        return rec
    syn = {"8": {"runs": [run(10.0, {"reads": 0.01, "vnf": 0.3}, join=0), run(12.0, {"reads": 0.01, "vnf": 0.3})]},
           "32": {"runs": [run(30.0, {"reads": 0.02, "vnf": 0.33}), run(30.0, {"reads": 0.02, "vnf": 0.33})]}}
    for v in syn.values():
        v["summary"] = convergence.conv_summary([])
    result = {"eps": {"summary": convergence.conv_summary(eps)}, "synthetic": {"sizes": syn}}
    s = benchreport.summary(result)
    assert s["eps_seconds_up_after_last_config"] == 5.0
    assert s["spoke_join_packets_lost_on_existing"] == 0 and s["spoke_join_packets_sent"] == 12000
    growth = s["hub_hook_phase_32_over_8"]
    assert growth["reads"] == pytest.approx(2.0) and growth["vnf"] == pytest.approx(1.1)
    assert growth["tool_calls"] == pytest.approx(1.0)
    names = {t["name"]: t["met"] for t in benchreport.targets(result)}
    assert names["spoke_join_packets_lost"] is True and names["synthetic_cpu_32_over_8"] is True
    assert names["synthetic_32_over_8"] is True        # 30 / 11
    assert benchreport.summary({})["spoke_join_packets_lost_on_existing"] is None


def test_hook_counts_separate_jujus_hooks_from_those_the_peers_writes_caused():
    """Per unit and relation: every kind (Juju's relation-created and -joined included), the
    relation-changed runs (the target's count), and of them those a write of the remote caused:
    not the one Juju runs right after relation-joined, even when it covers a write."""
    from testbed import convergence
    from testbed.emulators.vca import HookRun

    def run(t, hook, causes=()):
        return HookRun(t, t + 1, "mme/0", hook, 1.0, "3", ["ops started"], 0, {}, "c{}".format(t), "hss/0",
                       tuple(causes))
    key = ("hss/0", "hooks/config-changed", ["public-key"])
    runs = [run(0, "hooks/s6a-relation-created"), run(1, "hooks/s6a-relation-joined"),
            run(2, "hooks/s6a-relation-changed", [("hss/0", "joined", []), key]),
            run(3, "hooks/s6a-relation-changed", [("hss/0", "hooks/verify-ssh-credentials", ["peer-keys"])]),
            run(4, "hooks/s6a-relation-changed", [key, ("hss/0", "hooks/s6a-relation-changed", ["peer-keys"])])]
    counts = convergence.hook_counts(runs)
    assert counts["per_unit_relation"] == {"mme/0 3": 5}
    assert counts["changed_per_unit_relation"] == {"mme/0 3": 3}
    assert counts["written_per_unit_relation"] == {"mme/0 3": 2}


def test_the_hook_target_counts_relation_changed_and_shows_the_total_beside_it():
    from testbed import convergence
    from testbed.measurement import benchreport
    eps = [{"seconds_after_last_config": 4.0, "max_hooks_per_unit_relation": 5, "max_changed_per_unit_relation": 3,
            "max_written_per_unit_relation": 2, "logins_per_session": 1.0}]
    result = {"eps": {"summary": convergence.conv_summary(eps)}}
    (t,) = [t for t in benchreport.targets(result) if t["name"] == "eps_max_changed_per_unit_relation"]
    assert t["measured"] == 3 and t["met"] is True
    assert t["total_hooks_per_unit_relation"] == 5 and "every hook kind: 5" in t["text"]
    assert t["written_per_unit_relation"] == 2
    s = benchreport.summary(result)
    assert (s["eps_max_hooks_per_unit_relation"], s["eps_max_changed_per_unit_relation"],
            s["eps_max_written_per_unit_relation"]) == (5, 3, 2)


def test_a_kernel_thread_that_exits_in_the_window_takes_none_of_its_earlier_cpu_out_of_ours(monkeypatch):
    """A kworker the kernel retires during the window (under load it does, often) had its CPU in
    the first reading and none in the second: the bench's own seconds may not drop by it (they
    came out 4 ticks under this process's own busy loop at load average 33), nor the other load
    rise by it."""
    import builtins

    from testbed.measurement import loadcheck
    real_open, real_listdir = builtins.open, os.listdir
    kworker = {"alive": True}
    stat = "99999 (kworker/u8:9-events) I 2 0 0 0 -1 69238880 0 0 0 0 40 10 0 0 20 0 1 0 123 0 0"

    def fake_listdir(path):
        names = real_listdir(path)
        return names + ["99999"] if path == "/proc" and kworker["alive"] else names

    def fake_open(path, *a, **kw):
        if path == "/proc/99999/stat":
            if not kworker["alive"]:
                raise FileNotFoundError(path)
            return io.StringIO(stat)
        return real_open(path, *a, **kw)

    monkeypatch.setattr(os, "listdir", fake_listdir)
    monkeypatch.setattr(builtins, "open", fake_open)
    with loadcheck.Window([]) as w:
        kworker["alive"] = False
    assert w.own_seconds >= 0, w.own_seconds
