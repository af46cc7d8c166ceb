"""The slice's 5QI, its DSCP and the egress queue plan (core/qos.py), and how the tunnel step
carries them (remote.qos_args). Runs on Python 3.6 too (make unit36)."""
import ipaddress

import pytest

from vpnaas.core import config as charm_config
from vpnaas.core import qos, validation
from vpnaas.core.model import Device, Peer, Plan
from vpnaas.vnf import remote, report


def test_every_standardized_5qi_has_a_dscp_and_the_classes_follow_the_resource_type():
    assert set(qos.DEFAULT_DSCP) == set(qos.FIVEQI)
    for qi, row in qos.FIVEQI.items():
        assert 0 <= qos.DEFAULT_DSCP[qi] <= 63
        if row.resource_type == "DC-GBR":
            assert qos.DEFAULT_DSCP[qi] == qos.EF, qi
            assert qos.class_of(qos.DEFAULT_DSCP[qi]) == "realtime"
    assert qos.DEFAULT_DSCP[9] == 0 and qos.class_of(0) == "besteffort"
    assert qos.DEFAULT_DSCP[1] == qos.EF and qos.DEFAULT_DSCP[5] == qos.CS5 and qos.DEFAULT_DSCP[69] == qos.CS5
    assert qos.DEFAULT_DSCP[2] == qos.AF41 and qos.DEFAULT_DSCP[80] == qos.CS4


def test_the_guarantees_add_up_to_the_link_so_best_effort_is_never_starved():
    assert sum(c.share_percent for c in qos.QUEUE_CLASSES) == 100
    best = [c for c in qos.QUEUE_CLASSES if c.minor == qos.DEFAULT_CLASS]
    assert len(best) == 1 and best[0].share_percent >= 50 and best[0].priority == max(
        c.priority for c in qos.QUEUE_CLASSES)
    seen = [d for c in qos.QUEUE_CLASSES for d in c.dscps]
    assert len(seen) == len(set(seen)), "a DSCP in two classes"


def test_parse_defaults_to_unmarked_best_effort_without_queuing():
    assert qos.parse({}) == qos.QosConfig(0, 0, 0)
    assert qos.parse({"slice-5qi": 0, "slice-dscp-map": "", "slice-egress-mbit": 0}) == qos.QosConfig()


@pytest.mark.parametrize("qi,dscp", [(82, 46), ("85", 46), (9, 0), (5, 40), (80, 32)])
def test_parse_gives_the_slice_its_dscp(qi, dscp):
    assert qos.parse({"slice-5qi": qi}).dscp == dscp


def test_the_map_overrides_the_default_for_standardized_5qis_only():
    cfg = qos.parse({"slice-5qi": 80, "slice-dscp-map": "80=34, 9=8"})
    assert cfg.dscp == 34
    assert qos.parse_dscp_map(" 82=46,83=40 ") == {82: 46, 83: 40}


@pytest.mark.parametrize("options,needle", [
    ({"slice-5qi": 11}, "not a standardized 5QI"),
    ({"slice-5qi": 256}, "outside"),
    ({"slice-5qi": -1}, "outside"),
    ({"slice-5qi": "8 2"}, "slice-5qi"),
    ({"slice-5qi": True}, "expected a number"),
    ({"slice-5qi": 1.5}, "expected a number"),
    ({"slice-dscp-map": "82=64"}, "outside 0-63"),
    ({"slice-dscp-map": "82"}, "not <5qi>=<dscp>"),
    ({"slice-dscp-map": "11=8"}, "not a standardized 5QI"),
    ({"slice-dscp-map": "82=46,82=40"}, "given twice"),
    ({"slice-dscp-map": "82=46;rm -rf /"}, "slice-dscp-map"),
    ({"slice-dscp-map": "82=4" + "6" * 2000}, "longer than"),
    ({"slice-dscp-map": 5}, "expected text"),
    ({"slice-egress-mbit": 400001}, "outside"),
    ({"slice-egress-mbit": "100mbit"}, "not a number"),
])
def test_bad_values_are_refused_with_the_option_named(options, needle):
    with pytest.raises(validation.InvalidValue) as e:
        qos.parse(options)
    assert needle in str(e.value)


def test_the_charm_config_refuses_a_bad_slice_option_whole():
    good = {"tunnel-mtu": 1420, "persistent-keepalive": 25}
    assert charm_config.parse(dict(good, **{"slice-5qi": 82})).slice_qos.dscp == 46
    with pytest.raises(validation.InvalidValue):
        charm_config.parse(dict(good, **{"slice-5qi": 11}))


def test_marks_select_every_device_by_its_listen_port_and_nothing_when_unmarked():
    assert qos.marks(qos.parse({"slice-5qi": 82}), [51822, 51820, 51822]) == ["51820:46", "51822:46"]
    assert qos.marks(qos.parse({"slice-5qi": 9}), [51820]) == []   # DSCP 0: nothing to set
    assert qos.marks(qos.QosConfig(), [51820]) == []


def test_the_queue_plan_is_under_the_planned_rate():
    args = qos.queue_args(qos.parse({"slice-egress-mbit": 100}))
    assert args[0] == "100000"
    rates = [int(a.split(":")[2]) for a in args[1:]]
    assert sum(rates) == 100000
    assert args[1] == "10:0:30000:46/40/44" and args[-1] == "30:2:50000:-"
    assert qos.queue_args(qos.QosConfig()) == []


def _plan(options):
    cfg = charm_config.parse(dict({"tunnel-mtu": 1420, "persistent-keepalive": 25}, **options))
    plan = Plan()
    plan.config = cfg
    dev = Device("vpn", 51820, ipaddress.ip_interface("10.0.0.1/30"), 1420, 25, [], "192.0.2.1")
    dev.peers.append(Peer("k" * 43 + "=", "192.0.2.2:51821", [], "b/0"))
    dev.peers.append(Peer("j" * 43 + "=", "peer.example:51821", [], "c/0"))
    plan.devices.append(dev)
    return plan


def test_the_step_gets_marks_queue_and_only_address_endpoints():
    args = remote.qos_args(_plan({"slice-5qi": 82, "slice-egress-mbit": 50}))
    first, second = args.index("--"), args.index("--", args.index("--") + 1)
    assert args[:first] == ["51820:46"]
    assert args[first + 1] == "50000" and len(args[first + 2:second]) == len(qos.QUEUE_CLASSES)
    assert args[second + 1:] == ["192.0.2.2"]
    assert remote.qos_args(_plan({})) == ["--", "--"]


def test_the_fingerprint_changes_with_the_slice_and_stays_without_it():
    assert _plan({}).fingerprint() == _plan({"slice-5qi": 0}).fingerprint()
    assert _plan({}).fingerprint() != _plan({"slice-5qi": 82}).fingerprint()


def test_the_report_lines_are_in_the_protocol_and_read():
    for text in ("QOS mark 51820 46", "QOS queue eth0 100000 fq_codel", "QOS off", "QOS queue applied eth0",
                 "QOS marking removed ip6tables"):
        assert report.problem(text) == "", text
    assert report.problem("QOS mark 51820 rm") != ""
    obs = remote.parse_report("QOS mark 51820 46\nQOS queue applied eth0\nQOS queue eth0 100000 pfifo\n"
                              "FAILED qos iptables is missing\nDONE\n")
    assert obs.qos == ["mark 51820 46", "queue eth0 100000 pfifo", "failed: iptables is missing"]
    assert not obs.failed
