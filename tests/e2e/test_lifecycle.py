"""The testbed EPS through its life (``testbed.lifecycle``, what `sudo make lifecycle` runs):
an upgrade from the previous revision's charms, key rotation, a hook commit Juju drops, a unit
agent restarted mid-hook, a VNF healed, the NS terminated; a continuous probe across every
tunnel an operation touches. One run, its report checked operation by operation."""
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


def test_rotated_keys_reach_every_peer_without_update_status(report):
    op = report["rotate-keys"]
    assert op["seconds_to_converge"] is not None and op["tunnels_up_after"] == op["tunnels"] == 3


@pytest.mark.parametrize("name, fault", [("commit-failure", "commit-failure"), ("agent-restart", "agent-restart")])
def test_a_publication_juju_dropped_is_published_again_without_update_status(report, name, fault):
    op = report[name]
    assert op["faults_injected"].get(fault) == 1 and op["hook_retries"] >= 1
    assert op["seconds_to_converge"] is not None and op["tunnels_up_after"] == op["tunnels"] == 2


def test_a_healed_vnf_is_followed_by_its_peers_and_nobody_else_notices(report):
    op = report["heal"]
    assert op["seconds_to_converge"] is not None and op["seconds_to_converge"] <= 10
    assert op["tunnels_up_after"] == op["tunnels"] == 5
    assert op["packets_lost_on_other_tunnels"] == 0


def test_terminate_leaves_nothing_on_any_vnf_or_in_relation_data(report):
    assert report["terminate"]["leftovers"] == []
