"""`make bench`'s post-quantum PSK cost (testbed/pqcost.py, bench.run_eps): the options detected
from the built charms, the "without" runs interleaved with the control part's, the medians and
ratios in summary.json, and a build without the options reported as such, not failed."""
import types

import pytest
import yaml

from testbed import bench, convergence, pqcost
from testbed.measurement import benchreport


def charm(tmp_path, name, options):
    d = tmp_path / name
    d.mkdir()
    (d / "config.yaml").write_text(yaml.safe_dump({"options": {o: {"type": "string"} for o in options}}))
    return str(d)


def instance(tmp_path, with_options):
    extra = ["s6a-pq-psk", "pq-psk-renewal-seconds"] if with_options else []
    specs = [types.SimpleNamespace(name="hss", charm_dir=charm(tmp_path, "hss", ["s6a-service-network"] + extra),
                                   config={"ssh-hostname": "<rw_mgmt_ip>"}),
             types.SimpleNamespace(name="mme", charm_dir=charm(tmp_path, "mme", ["s11-pq-psk", "s6a-pq-psk"] + extra),
                                   config={})]
    return types.SimpleNamespace(vnfs=specs, refpoints=[])


def test_options_are_detected_from_the_built_charms(tmp_path):
    (tmp_path / "old").mkdir()
    (tmp_path / "new").mkdir()
    assert pqcost.pq_options(instance(tmp_path / "old", False)) is None
    inst = instance(tmp_path / "new", True)
    options = pqcost.pq_options(inst)
    assert options == {"hss": ["s6a-pq-psk"], "mme": ["s11-pq-psk", "s6a-pq-psk"]}
    pqcost.without_pq(options)(inst)
    assert inst.vnfs[1].config == {"s11-pq-psk": False, "s6a-pq-psk": False}
    assert inst.vnfs[0].config["s6a-pq-psk"] is False and inst.vnfs[0].config["ssh-hostname"] == "<rw_mgmt_ip>"


class Vnf(object):
    def __init__(self, lines):
        self.lines = lines

    def wg_show(self, device, field):
        assert field == "preshared-keys"
        return self.lines


PEER_A, PEER_B = "A" * 43 + "=", "B" * 43 + "="


@pytest.mark.parametrize("a, b, agree", [
    (PEER_B + "\tPSK1\n", PEER_A + "\tPSK1\n", True),
    (PEER_B + "\t(none)\n", PEER_A + "\tPSK1\n", False),
    (PEER_B + "\tPSK1\n", PEER_A + "\tPSK2\n", False),
    ("", PEER_A + "\tPSK1\n", False),
])
def test_both_ends_must_hold_the_same_psk(a, b, agree):
    assert pqcost.psks_agree([(Vnf(a), Vnf(b), "wg-s6a")]) is agree


def test_cost_gives_medians_spread_and_ratios():
    with_runs = [{"seconds_after_last_config": s, "cpu_seconds": c, "seconds_to_pq_psk_after_last_config": p,
                  "cpu_seconds_to_pq_psk": c + 1} for s, c, p in ((2.0, 10.0, 3.0), (4.0, 12.0, 5.0), (3.0, 11.0, 4.0))]
    without = [{"seconds_after_last_config": s, "cpu_seconds": c} for s, c in ((1.0, 10.0), (2.0, 8.0), (2.0, 11.0))]
    out = pqcost.cost(with_runs, without)
    assert out["available"] and out["rounds"] == 3
    assert out["with"]["seconds_after_last_config"] == {"n": 3, "median": 3.0, "min": 2.0, "max": 4.0}
    assert out["without"]["cpu_seconds"]["median"] == 10.0
    assert out["ratio"]["seconds_after_last_config"]["of_medians"] == 1.5
    assert out["ratio"]["seconds_to_pq_psk_after_last_config"]["of_medians"] == 2.0
    assert out["ratio"]["cpu_seconds"]["per_round"] == {"n": 3, "median": 1.0, "min": 1.0, "max": 1.5}


def fake_eps(monkeypatch, tmp_path, with_options):
    calls = []

    def run_eps_once(runner, then=None, adjust=None, after_up=None):
        side = "without" if adjust else "with"
        calls.append((side, after_up is not None))
        return {"seconds_after_last_config": 1.0 + (side == "with"), "seconds_after_first_config": 2.0,
                "cpu_seconds": 5.0 if side == "with" else 4.0, "hooks_total": 1, "hooks_after_first_config": 1,
                "reconcile_sessions": 1, "verify_sessions": 1, "sshd_logins": 2, "sessions_settled": 2,
                "max_hooks_per_unit_relation": 1, "seconds_to_pq_psk_after_last_config": 3.0 if side == "with"
                else None}
    (tmp_path / "probe").mkdir()
    monkeypatch.setattr(convergence, "run_eps_once", run_eps_once)
    monkeypatch.setattr(convergence, "eps_instance", lambda _d: instance(tmp_path / "probe", with_options))
    return calls


def test_the_bench_interleaves_rounds_without_the_pq_psk(monkeypatch, tmp_path):
    calls = fake_eps(monkeypatch, tmp_path, True)
    args = bench.parse_args(["--only", "control", "--rounds", "3", "--out", str(tmp_path / "out")])
    result = {}
    records = bench.run_eps(types.SimpleNamespace(charms_dir="x"), args, lambda _t: None, result)
    assert calls == [("with", True), ("without", False), ("without", False), ("with", True), ("with", True),
                     ("without", False)]
    assert len(records) == 3 and len(result["pq_psk_cost"]["without_runs"]) == 3
    summary = benchreport.summary(result)["pq_psk_cost"]
    assert summary["available"] and "without_runs" not in summary
    assert summary["ratio"]["seconds_after_last_config"]["of_medians"] == 2.0
    assert summary["ratio"]["seconds_to_pq_psk_after_last_config"]["of_medians"] == 3.0
    assert summary["ratio"]["cpu_seconds"]["of_medians"] == 1.25
    lines = benchreport.pq_lines(summary)
    assert lines[0].startswith("post-quantum PSK, EPS with vs without (3 interleaved rounds)")
    assert "s to every PQ PSK (without: to every handshake): 3.00 (3.00-3.00) vs 1.00 (1.00-1.00), ratio 3.00" in \
        lines[3], lines


def test_a_build_without_the_option_is_reported_not_failed(monkeypatch, tmp_path):
    calls = fake_eps(monkeypatch, tmp_path, False)
    args = bench.parse_args(["--only", "control", "--rounds", "2", "--out", str(tmp_path / "out")])
    result, lines = {}, []
    bench.run_eps(types.SimpleNamespace(charms_dir="x"), args, lines.append, result)
    assert calls == [("with", False), ("with", False)]
    cost = benchreport.summary(result)["pq_psk_cost"]
    assert cost["available"] is False and cost["note"] == pqcost.NOT_AVAILABLE == "pq-psk not available in this build"
    assert cost["without"]["seconds_after_last_config"]["n"] == 2
    assert any(pqcost.NOT_AVAILABLE in line for line in lines)
    assert benchreport.pq_lines(cost) == ["post-quantum PSK: pq-psk not available in this build"]


def test_psk_record_times_the_psk_from_the_last_config(monkeypatch):
    from testbed.measurement import loadcheck
    now = [100.0]
    monkeypatch.setattr(pqcost.time, "monotonic", lambda: now[0])
    answers = iter([PEER_B + "\t(none)\n", PEER_A + "\tPSK1\n"] + [PEER_B + "\tPSK1\n", PEER_A + "\tPSK1\n"] * 2)

    class Polled(object):
        def wg_show(self, device, field):
            return next(answers)

    def sleep(seconds):
        now[0] += 0.5
    monkeypatch.setattr(pqcost.time, "sleep", sleep)
    model = types.SimpleNamespace(config_times=[90.0, 98.0], ticks_at_first_config=(0, 0))
    rec = pqcost.psk_record(model, [(Polled(), Polled(), "wg-s6a")], lambda: (3 * loadcheck.TICK, 0),
                            convergence.cpu_record)
    assert rec == {"seconds_to_pq_psk_after_last_config": 2.5, "cpu_seconds_to_pq_psk": 3.0}


def test_no_psk_within_the_timeout_fails(monkeypatch):
    now = [0.0]
    monkeypatch.setattr(pqcost.time, "monotonic", lambda: now[0])
    monkeypatch.setattr(pqcost.time, "sleep", lambda s: now.__setitem__(0, now[0] + 10))
    with pytest.raises(pqcost.PskError, match="no post-quantum PSK"):
        pqcost.wait_psks([(Vnf(PEER_B + "\t(none)\n"), Vnf(PEER_A + "\t(none)\n"), "wg-s6a")], timeout=30)
