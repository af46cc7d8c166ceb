"""The demo's shared-link run (testbed/slicelink.py): its statistics, its switch queue and its
summary, without a testbed."""
import pytest

from testbed import slicelink
from vpnaas.core import qos


def test_percentile_is_nearest_rank():
    samples = list(range(1, 1001))
    assert slicelink.percentile(samples, 99) == 990
    assert slicelink.percentile(samples, 50) == 500
    assert slicelink.percentile([3.0], 99) == 3.0
    with pytest.raises(slicelink.SliceLinkError):
        slicelink.percentile([], 50)


def test_the_emulated_switch_queues_by_the_plan_of_the_core():
    cmds = slicelink.switch_queue_commands("ifb0", 100)
    text = [" ".join(c) for c in cmds]
    assert "tc class add dev ifb0 parent 1: classid 1:1 htb rate 100000kbit" in text
    for c in qos.QUEUE_CLASSES:
        assert any("classid 1:{} htb rate {}kbit ceil 100000kbit prio {}".format(
            c.minor, 1000 * c.share_percent, c.priority) in t for t in text), c
    ef = [t for t in text if "dsfield {} 0xfc".format(46 << 2) in t]
    assert ef and ef[0].endswith("flowid 1:10")
    assert all(isinstance(a, str) for c in cmds for a in c)


def _run(idle, loaded, bps):
    return {"idle": idle, "loaded": loaded, "embb_bps": bps}


def test_the_summary_gives_medians_spreads_and_the_targets():
    runs = {True: [_run([1.0] * 99 + [2.0], [1.0] * 99 + [2.5], 90e6), _run([1.0] * 100, [1.2] * 100, 94e6),
                   _run([1.0] * 100, [1.4] * 100, 92e6)],
            False: [_run([1.0] * 100, [20.0] * 100, 95e6)] * 3}
    out = slicelink.summary(runs, 100, 100, 82, 9)
    assert out["shared_link"] is True and out["rounds"] == 3
    # p99 of 100 samples is the 99th: the one 2.5 ms outlier of round 1 is the 100th
    assert out["urllc_rtt_p99_loaded_ms"] == 1.2 and out["urllc_rtt_p99_loaded_ms_spread"] == [1.0, 1.4]
    assert out["urllc_rtt_p99_idle_ms"] == 1.0
    assert out["urllc_rtt_p99_loaded_without_policy_ms"] == 20.0
    assert out["embb_bps_loaded"] == 92e6 and out["embb_bps_loaded_without_policy"] == 95e6
    assert out["target_urllc_p99_loaded_le_1_5x_idle"] is True and out["target_embb_keeps_0_8"] is True
    assert "MET" in slicelink.describe(out) and "MISSED" not in slicelink.describe(out)
    assert "NOT measured: x" in slicelink.describe({"error": "x"})


class _Inst(object):
    def __init__(self, name, refpoints, five_qis=(9, 9)):
        self.name, self.refpoints = name, refpoints
        self.vnfs = [_Spec({"slice-5qi": q}) for q in five_qis]


class _Spec(object):
    def __init__(self, config):
        self.config = config


class _Rp(object):
    def __init__(self, name, link="l"):
        self.name, self.link = name, link


def test_the_run_picks_the_user_plane_of_an_embb_and_a_urllc_instance():
    inst = {"embb": {"inst": _Inst("embb", [_Rp("s6a"), _Rp("s1u")], (6, 6))},
            "urllc": {"inst": _Inst("urllc", [_Rp("s1c"), _Rp("s1u")], (3, 3))}}
    picked = slicelink._pick(inst)
    assert picked["urllc"]["rp"].name == "s1u" and picked["embb"]["name"] == "embb"
    assert (picked["urllc"]["5qi"], picked["embb"]["5qi"]) == (3, 6)   # the NSTs', as the LCM set them
    with pytest.raises(slicelink.SliceLinkError):
        slicelink._pick({"embb": inst["embb"]})


@pytest.mark.parametrize("five_qis", [(3, 0), (3, 6), ()])
def test_an_nsi_whose_vnfs_lack_one_slice_5qi_is_refused(five_qis):
    with pytest.raises(slicelink.SliceLinkError, match="one slice 5QI"):
        slicelink.nst_5qi({"inst": _Inst("urllc", [], five_qis)})
