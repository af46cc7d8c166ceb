"""The testbed EPS through its life (``testbed.lifecycle``, what `sudo make lifecycle` runs):
a key rotation against peers of the previous revision, an upgrade from the previous revision's
charms, make-before-break key rotation, the same through a hook commit Juju drops and a unit
agent restarted mid-hook, two VNFs healed as LCM 19 heals them (with and without day-1), the
SPGW-U scaled out and back in (LCM 19's scaling emulated, the peering done by deploy/scale.py,
the code `python -m deploy scale` runs), the NS terminated; a continuous probe at 100 packets/s
across every tunnel an operation touches, on VNFs with strict reverse-path filtering. One run,
its report checked operation by operation."""
import pytest

from testbed import demo, lcm_data, lifecycle


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


def test_lcm_19_upgrades_the_charms_of_vnf_level_entries_and_fails_on_the_spgwu(report):
    """Decided by the VNFD the testbed deploys, as LCM 19's update() decides: a VNF without a
    VNF-level day1-2 entry fails with a TypeError, and `juju upgrade-charm` does it instead; the
    MME (upgraded alone by rotate-keys-previous-peers) has nothing left to upgrade."""
    op = report["upgrade-charm"]
    for spec in demo.load_instances("eps_wg")[0].vnfs:
        if lcm_data.get_configuration(spec.vnfd, spec.vnfd["id"]) is None:
            assert op["lcm19"][spec.name] == ("FAILED Getting descriptor config: TypeError: argument of type "
                                              "'NoneType' is not iterable")
            assert op["upgraded_by"][spec.name].startswith("juju upgrade-charm")
        else:
            assert op["lcm19"][spec.name] == "COMPLETED"
            assert op["upgraded_by"][spec.name] == ("nothing to upgrade (LCM 19: the charm is this revision already)"
                                                    if spec.name == "mme" else "osm ns-update (LCM 19)")


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


@pytest.mark.parametrize("name, healed", [("heal", "spgwc (VNF-level, count 0)"),
                                           ("heal-without-day1", "spgwu (VDU spgwu, count 0)")])
def test_a_healed_vnf_comes_back_without_update_status_and_its_peers_follow(report, name, healed):
    """LCM 19's heal keeps the unit and relates nothing; the charm pins the new VM's host key
    (announced by generate-ssh-key), makes new keys there and publishes them; the peers follow on
    relation-changed. No update-status runs; the other tunnels lose nothing."""
    op = report[name]
    assert op["healed"] == [healed] and op["relations_added"] == [] and op["update_status_runs"] == 0
    assert op["seconds_to_converge"] is not None, op
    assert op["tunnels_up_after"] == op["tunnels"] == 5
    assert op["packets_lost_on_other_tunnels"] == 0, op["probes"]


def heal_maps_day1(member):
    """Whether LCM 19's heal_N2VC can map this VNF's initial primitives (it passes only vdu-id,
    count-index, run-day1 and rw_mgmt_ip): read from the VNFD the testbed deploys."""
    doc = next(s for s in demo.load_instances("eps_wg")[0].vnfs if s.name == member).vnfd
    entry = lcm_data.get_configuration(doc, doc["id"])
    params = {"vdu-id": doc["vdu"][0]["name"], "count-index": 0, "run-day1": True, "rw_mgmt_ip": "192.0.2.1"}
    try:
        for prim in entry["initial-config-primitive"]:
            lcm_data.map_primitive_params(prim, {}, params)
    except lcm_data.LcmException:
        return False
    return True


def test_heal_with_run_day1_runs_day1_where_lcm_19_can_and_the_operators_step_where_it_cannot(report):
    op = report["heal"]
    if heal_maps_day1("spgwc"):
        assert op["lcm_state"] == "COMPLETED" and "spgwc config" in op["day1_run"] and op["operator_step"] is None
    else:       # the bundle's descriptors today: config names additionalParams
        assert op["lcm_state"] == "FAILED" and op["day1_run"] == []
        assert "needed to execute primitive config not provided" in op["lcm_detail"]
        assert op["operator_step"] == {"action": "tunnel-status", "unit": "spgwc/0", "status": "completed"}


def test_heal_without_day1_completes_and_needs_the_operators_one_step(report):
    op = report["heal-without-day1"]
    assert op["lcm_state"] == "COMPLETED" and op["day1_run"] == []
    assert op["operator_step"] == {"action": "tunnel-status", "unit": "spgwu/0", "status": "completed"}


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
