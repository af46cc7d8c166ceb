"""The testbed EPS through its life (``testbed.lifecycle``, what `sudo make lifecycle` runs):
a key rotation against peers of the previous revision, an upgrade from the previous revision's
charms, make-before-break key rotation, the same through a hook commit Juju drops and a unit
agent restarted mid-hook, a VNF healed, the SPGW-U scaled out and back in (LCM 19's scaling
emulated, the peering done by deploy/scale.py, the code `python -m deploy scale` runs), the NS
terminated; a continuous probe at 100 packets/s
across every tunnel an operation touches, on VNFs with strict reverse-path filtering. One run,
its report checked operation by operation."""
import pytest

from testbed import lifecycle


@pytest.fixture(scope="module")
def report(environment_ready, local_charms, tmp_path_factory):
    out = str(tmp_path_factory.mktemp("lifecycle"))
    rep = lifecycle.run(out, lifecycle.OPERATIONS, lambda _text: None)
    return {op["name"]: op for op in rep["operations"]}


def test_every_operation_ran_in_order(report):
    assert list(report) == list(lifecycle.OPERATIONS)


def test_upgrading_the_charms_loses_nothing_and_recreates_no_device(report):
    op = report["upgrade-charm"]
    assert op["devices_recreated"] == [] and op["tunnels_up_after"] == op["tunnels"] == 5
    assert op["packets_sent"] > 1000 and op["packets_lost"] == 0
    assert op["seconds_to_converge"] is not None


def test_peers_of_the_previous_revision_follow_a_rotation(report):
    """Against a revision before make-before-break rotation (no rotation-protocol), the key is
    rotated in place and the peers follow as they always did; against one that speaks it, the
    rotation loses nothing."""
    op = report["rotate-keys-previous-peers"]
    assert op["temporary_devices_after"] == []
    assert op["seconds_to_converge"] is not None and op["tunnels_up_after"] == op["tunnels"] == 3
    if op["rotation"].startswith("in place"):
        assert "no related unit speaks make-before-break rotation" in op["rotation"]
    else:
        assert op["packets_lost"] == 0, op["probes"]


def test_a_key_rotation_loses_nothing_and_needs_no_update_status(report):
    op = report["rotate-keys"]
    assert op["rotation"].startswith("make-before-break") and op["temporary_devices_after"] == []
    assert op["seconds_to_converge"] is not None and op["tunnels_up_after"] == op["tunnels"] == 3
    assert op["packets_sent"] > 1000 and op["packets_lost"] == 0, op["probes"]


@pytest.mark.parametrize("name, fault", [("commit-failure", "commit-failure"), ("agent-restart", "agent-restart")])
def test_a_publication_juju_dropped_is_published_again_without_update_status(report, name, fault):
    op = report[name]
    assert op["faults_injected"].get(fault) == 1 and op["hook_retries"] >= 1
    assert op["seconds_to_converge"] is not None and op["tunnels_up_after"] == op["tunnels"] == 2
    # The hook Juju runs again finds the VNF as the first run left it: the rotation goes on.
    assert op["rotation"].startswith("make-before-break") and op["temporary_devices_after"] == []
    assert op["packets_sent"] > 500 and op["packets_lost"] == 0, op["probes"]


def test_a_healed_vnf_is_followed_by_its_peers_and_nobody_else_notices(report):
    op = report["heal"]
    assert op["seconds_to_converge"] is not None and op["seconds_to_converge"] <= 10
    assert op["tunnels_up_after"] == op["tunnels"] == 5
    assert op["packets_lost_on_other_tunnels"] == 0


def test_a_scaled_out_spgwu_instance_is_peered_with_both_hubs_and_carries_traffic(report):
    """Instance 1 (never related by OSM) gets its own addresses, both hubs hold it, traffic goes
    both ways on its tunnels, and instance 0's tunnels lose nothing meanwhile."""
    op = report["scale-out"]
    assert op["instance"] == 1 and op["tunnels_up_after"] == op["tunnels"] == 4
    assert sorted(op["seconds_day1_to_each_new_tunnel_up"]) == ["s1u", "sxab"]
    # from the end of the new charm's day-1; generous here (a loaded CI), the figure is the report's
    assert op["seconds_to_converge"] is not None and op["seconds_to_converge"] <= 60
    assert op["new_tunnel_packets_received"] > 50
    assert op["packets_sent"] > 500 and op["packets_lost"] == 0, op["probes"]


def test_scaling_in_leaves_no_peer_route_or_unit_of_the_removed_instance(report):
    op = report["scale-in"]
    assert op["instance"] == 1 and op["leftovers"] == [] and op["seconds_to_converge"] is not None
    assert op["tunnels_up_after"] == op["tunnels"] == 2
    assert op["packets_sent"] > 200 and op["packets_lost"] == 0, op["probes"]


def test_terminate_leaves_nothing_on_any_vnf_or_in_relation_data(report):
    assert report["terminate"]["leftovers"] == []
