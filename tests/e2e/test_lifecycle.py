"""The testbed EPS through its life (``testbed.lifecycle``, what `sudo make lifecycle` runs):
a key rotation against peers of the previous revision, an upgrade from the previous revision's
charms, make-before-break key rotation, the same through a hook commit Juju drops and a unit
agent restarted mid-hook, two VNFs healed as LCM 19 heals them (with and without day-1), the
SPGW-U scaled out and back in (LCM 19's scaling emulated, the peering done by deploy/scale.py,
the code `python -m deploy scale` runs), the NS terminated; a continuous probe at 100 packets/s
across every tunnel an operation touches, on VNFs with strict reverse-path filtering. One run,
its report checked operation by operation."""
import pytest

from bundle import membership
from testbed import demo, lifecycle
from testbed.emulators import lcm_data

#: The EPS's tunnels (its reference points; pinned: tests/pins.yaml).
TUNNELS = len(membership.of_variant("eps_wg")[1])


def losses(op):
    """What a failed loss assertion prints: each probe that lost packets, in which part of the
    operation, with its runs of lost packets placed in time and, when it has them, both ends' state
    during a silence (the report itself may be gone by the time someone reads the failure)."""
    return [{k: p.get(k) for k in ("part", "label", "lost", "sent", "started_s", "gaps", "silences")}
            for p in op["probes"] if p["lost"]]


@pytest.fixture(scope="module")
def report(environment_ready, local_charms, tmp_path_factory):
    out = str(tmp_path_factory.mktemp("lifecycle"))
    rep = lifecycle.run(out, lifecycle.OPERATIONS, lambda _text: None)
    return {op["name"]: op for op in rep["operations"]}


def test_every_operation_ran_in_order(report):
    assert list(report) == list(lifecycle.OPERATIONS)


def test_upgrading_the_charms_loses_nothing_and_recreates_no_device(report):
    op = report["upgrade-charm"]
    assert op["devices_recreated"] == [] and op["tunnels_up_after"] == op["tunnels"] == TUNNELS
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
        assert op["packets_lost"] == 0, losses(op)


def test_a_key_rotation_loses_nothing_and_needs_no_update_status(report):
    op = report["rotate-keys"]
    assert op["rotation"].startswith("make-before-break") and op["temporary_devices_after"] == []
    assert op["seconds_to_converge"] is not None and op["tunnels_up_after"] == op["tunnels"] == 3
    assert op["packets_sent"] > 1000 and op["packets_lost"] == 0, losses(op)


@pytest.mark.parametrize("name, fault", [("commit-failure", "commit-failure"), ("agent-restart", "agent-restart")])
def test_a_publication_juju_dropped_is_published_again_without_update_status(report, name, fault):
    op = report[name]
    assert op["faults_injected"].get(fault) == 1 and op["hook_retries"] >= 1
    assert op["seconds_to_converge"] is not None and op["tunnels_up_after"] == op["tunnels"] == 2
    # The hook Juju runs again finds the VNF as the first run left it: the rotation goes on.
    assert op["rotation"].startswith("make-before-break") and op["temporary_devices_after"] == []
    assert op["packets_sent"] > 500 and op["packets_lost"] == 0, losses(op)


@pytest.mark.parametrize("name, healed", [("heal", "spgwc (VNF-level, count 0)"),
                                           ("heal-without-day1", "spgwu (VDU spgwu, count 0)")])
def test_a_healed_vnf_comes_back_without_update_status_and_its_peers_follow(report, name, healed):
    """LCM 19's heal keeps the unit and relates nothing; the charm pins the new VM's host key
    (announced by generate-ssh-key), makes new keys there and publishes them; the peers follow on
    relation-changed. No update-status runs; the other tunnels lose nothing."""
    op = report[name]
    assert op["healed"] == [healed] and op["relations_added"] == [] and op["update_status_runs"] == 0
    assert op["seconds_to_converge"] is not None, op
    assert op["tunnels_up_after"] == op["tunnels"] == TUNNELS
    assert op["packets_lost_on_other_tunnels"] == 0, losses(op)


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
    assert op["packets_sent"] > 500 and op["packets_lost"] == 0, losses(op)


def test_scaling_in_leaves_no_peer_route_or_unit_of_the_removed_instance(report):
    op = report["scale-in"]
    assert op["instance"] == 1 and op["leftovers"] == [] and op["seconds_to_converge"] is not None
    assert op["tunnels_up_after"] == op["tunnels"] == 2
    assert op["packets_sent"] > 200 and op["packets_lost"] == 0, losses(op)


def test_terminate_leaves_nothing_on_any_vnf_or_in_relation_data(report):
    assert report["terminate"]["leftovers"] == []


# ---------------------------------------------------------------------- lifecycle_faults.py
def test_a_hook_that_fails_twice_is_retried_with_jujus_backoff_while_actions_still_run(report):
    """Juju 2.9: the failed hook runs again after the retry timer's 5 s, then 10 s (the testbed's
    base, VPNAAS_VCA_HOOK_RETRY_MIN, is Juju's unless set); the unit runs an action meanwhile but
    no other hook; the rotation goes on from there without update-status. The action, asked the
    moment the hook failed, runs before the retry however long other units' hooks keep the serial
    VCA busy past the timer: Juju's resolver asks for actions before the hook in error
    (``uniterResolver.NextOp``; tests/unit/test_vca_hook_queue.py)."""
    op = report["hook-error-retry"]
    base = op["retry_minimum"]
    assert op["hook_errors"] == ["s1u-relation-changed exit 1"] * 2 and op["faults_injected"].get("hook-error") == 2
    # The timers the emulation started are Juju's backoff: the minimum, then twice it +-3 %.
    first, second = op["retry_timers"]
    assert first == base and 2 * base * 0.97 - 0.001 <= second <= 2 * base * 1.03 + 0.001, op["retry_timers"]
    # Each retry waited at least its timer, and started once its timer had fired and the hook slot
    # was free: the e2e's serial VCA runs it after another unit's hook, which took 8 s more than
    # the timer on a loaded machine, so the wait itself has no upper bound of its own; a retry
    # waiting for anything else (a poll, update-status) would start seconds after the slot freed.
    for delay, timer, late in zip(op["retry_delays"], op["retry_timers"], op["retry_late_after_slot_free"]):
        assert delay >= timer - 0.01 and 0 <= late + 0.01 and late < 5, op
    assert op["action_during_error"] == "completed" and op["ran_while_in_error"] == ["actions/get-ssh-public-key"]
    assert op["seconds_to_converge"] is not None and op["seconds_to_converge"] >= 3 * base
    assert op["tunnels_up_after"] == op["tunnels"] == 2 and op["temporary_devices_after"] == []
    assert op["packets_sent"] > 500 and op["packets_lost"] == 0, losses(op)


def test_a_peer_downgraded_to_the_previous_revision_mid_rotation_follows_it_to_the_end(report):
    """The supported version skew (docs/lifecycle.md): the HSS, downgraded right after it followed
    the MME's rotation, finishes following it on the previous revision's charm; nothing is lost
    and no temporary device is left (the previous revision removes its own)."""
    op = report["downgrade-mid-rotation"]
    assert op["downgraded"] and op["hss_hooks_after_downgrade"][:2] == ["hooks/upgrade-charm", "hooks/config-changed"]
    assert "hooks/s6a-relation-changed" in op["hss_hooks_before_downgrade"]
    assert op["rotation"].startswith("make-before-break") and op["temporary_devices_after"] == []
    assert op["seconds_to_converge"] is not None and op["tunnels_up_after"] == op["tunnels"] == 3
    assert op["packets_sent"] > 1000 and op["packets_lost"] == 0, losses(op)
    assert op["upgraded_back"]


def test_interrupted_actions_fail_and_their_next_run_repairs_what_they_left(report):
    """An agent restart during rotate-keys, a measurement (run), add-peer, tunnel-status and
    remove-peer: each fails ("action terminated"), none is run again by Juju; the operator's
    second rotate-keys and run, and deploy scale by itself, finish the job."""
    op = report["action-interrupted"]
    assert op["actions_interrupted"] == 6
    assert op["left_by_the_interrupted_action"], "the killed rotate-keys had run its step on the VNF"
    assert op["rotate_keys_run_again"] == "completed" and op["rotation"].startswith("make-before-break")
    assert op["seconds_to_converge"] is not None and op["temporary_devices_after"] == []
    assert op["measurement_run_again"] == "completed" and op["measurement_return_code"] == "0"
    assert op["scale_out"]["tunnels_up_after"] == op["scale_out"]["tunnels"] == 4
    assert op["scale_out"]["seconds_to_converge"] is not None and op["scale_in"]["leftovers"] == []
    assert op["update_status_runs"] == 0
    assert op["packets_sent"] > 1000 and op["packets_lost"] == 0, losses(op)


# The whole run is the module fixture's setup, inside the first test's time: about ten minutes on
# a loaded 2-core machine with the operations of lifecycle_faults.py (the suite's limit is 600 s).
pytestmark = pytest.mark.timeout(1800)
