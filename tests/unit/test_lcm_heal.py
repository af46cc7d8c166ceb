"""The emulated LCM's heal (testbed/emulators/lcm_heal.py), step by step against LCM 19's ``heal()``,
``heal_RO``, ``_heal_n2vc`` and ``heal_N2VC`` (seltonlucas/osm-capk@35936ae, LCM/osm_lcm/ns.py),
on the bundle's real VNFDs; the VIM and the VCA record what they are asked. The e2e lifecycle
test runs the same function on the namespace testbed with real charms."""
import copy

import pytest
from lcm_fakes import Vca, Vim, spec, specs

from testbed.emulators import lcm_data, lcm_heal, lcm_scale


def setup(*members, variant="eps_wg"):
    calls = []
    chosen = [spec(m, variant) for m in members]
    return chosen, Vim(calls, [s.name for s in chosen]), Vca(calls, [s.name for s in chosen]), calls


def day1_that_maps(vnf):
    """The VNF's day1-2 entry with a config primitive heal can map: <rw_mgmt_ip> and literals."""
    doc = copy.deepcopy(vnf.vnfd)
    entry = (lcm_data.get_configuration(doc, doc["id"]) or lcm_data.get_configuration(doc, vnf.vdu))
    config = next(p for p in entry["initial-config-primitive"] if p["name"] == "config")
    config["parameter"] = [p for p in config["parameter"] if p["name"] in ("ssh-hostname", "ssh-username")]
    vnf.vnfd = doc
    return vnf


def test_ro_recreates_the_vm_before_any_vca_work_and_the_key_goes_into_the_new_vm():
    """heal(): heal_RO is awaited first; heal_N2VC then runs generate-ssh-key and
    get-ssh-public-key on the kept unit and injects the key into the re-created VM
    (wait_vm_up_insert_key_ro)."""
    (spgwc,), vim, vca, calls = setup("spgwc")
    report = lcm_heal.heal(vim, vca, [spgwc])
    assert calls == [("rebuild", "spgwc"), ("action", "spgwc/0", "generate-ssh-key"),
                     ("action", "spgwc/0", "get-ssh-public-key"),
                     ("inject", "spgwc", 1, "ssh-ed25519 AAAAspgwc/0")]
    assert report.state == "COMPLETED" and report.healed == [("spgwc", None, 0)]
    assert report.injected_at is not None and report.day1 == []


def test_the_execution_environment_is_kept_and_nothing_is_related_or_configured():
    """heal_N2VC for a proxy charm: no EE created, nothing installed, _add_vca_relations commented
    out; without run-day1 (the default) no primitive, not even config."""
    (spgwc,), vim, vca, calls = setup("spgwc")
    lcm_heal.heal(vim, vca, [spgwc], run_day1=False)
    assert not [c for c in calls if c[0] in ("deploy", "remove-application", "relate", "config", "upgrade-charm")]


@pytest.mark.parametrize("variant, member", [(v, m) for v in ("eps_wg", "sa_wg") for m in specs(v)])
def test_run_day1_fails_at_config_for_every_vnf_of_the_bundle(variant, member):
    """heal_N2VC maps the initial primitives with the heal's own parameters (vdu-id,
    count-index, run-day1, rw_mgmt_ip): the bundle's config primitives name additionalParams,
    so the task raises LcmException before any primitive runs; the key was injected before."""
    (vnf,), vim, vca, calls = setup(member, variant=variant)
    report = lcm_heal.heal(vim, vca, [vnf], run_day1=True)
    assert report.state == "FAILED"
    assert report.errors[0].startswith("execute initial config primitive Parameter <")
    assert report.errors[0].endswith("> needed to execute primitive config not provided")
    assert [c[2] for c in calls if c[0] == "action"] == ["generate-ssh-key", "get-ssh-public-key"]
    assert ("inject", vnf.name, 1, "ssh-ed25519 AAAA{}/0".format(vnf.name)) in calls
    assert not [c for c in calls if c[0] == "config"]


def test_run_day1_with_a_day1_heal_can_map_runs_config_verify_and_the_primitives():
    """With primitives that map, heal_N2VC runs them in seq order: config is `juju config` plus
    verify-ssh-credentials (N2VC exec_primitive), the others actions; what needs the internet is
    skipped here; the VNF's login is the testbed's."""
    (spgwc,), vim, vca, calls = setup("spgwc")
    prepared = []
    report = lcm_heal.heal(vim, vca, [day1_that_maps(spgwc)], run_day1=True,
                           before_primitives=lambda s, m: prepared.append((s.name, m.generation)))
    assert report.state == "COMPLETED", report.errors
    actions = [c[2] for c in calls if c[0] == "action"]
    assert actions == ["generate-ssh-key", "get-ssh-public-key", "verify-ssh-credentials", "oai-start"]
    assert calls.index(("config", "spgwc")) > calls.index(("inject", "spgwc", 1, "ssh-ed25519 AAAAspgwc/0"))
    assert vca.config["spgwc"] == {"ssh-hostname": vim.vnfs["spgwc"].mgmt_ip, "ssh-username": "root"}
    assert [s[1] for s in report.skipped] == ["oai-install", "oai-configure"]
    assert report.day1 == [("spgwc", "config"), ("spgwc", "oai-start")] and prepared == [("spgwc", 1)]


def test_verify_ssh_credentials_is_asked_again_while_it_fails():
    (spgwc,), vim, vca, calls = setup("spgwc")
    vca.fail["verify-ssh-credentials"] = "not verified"
    report = lcm_heal.heal(vim, vca, [day1_that_maps(spgwc)], run_day1=True, verify_tries=3)
    assert [c[2] for c in calls if c[0] == "action"].count("verify-ssh-credentials") == 3
    assert report.state == "COMPLETED"      # N2VC only logs it; the next primitive runs


def test_a_failing_day1_primitive_fails_the_heal():
    (spgwc,), vim, vca, _calls = setup("spgwc")
    vca.fail["oai-start"] = "boom"
    report = lcm_heal.heal(vim, vca, [day1_that_maps(spgwc)], run_day1=True)
    assert report.state == "FAILED" and report.errors == ["execute primitive 'oai-start' failed: boom"]


def test_a_vdu_level_ee_is_healed_through_its_vdu_entry():
    """heal(): get_configuration(vnfd, vnfd_ref) is None for the SPGW-U (its entry is VDU-level);
    get_configuration(vnfd, vdu_name) finds it and _heal_n2vc reuses the (spgwu, count 0) record."""
    (spgwu,), vim, vca, calls = setup("spgwu")
    report = lcm_heal.heal(vim, vca, [spgwu])
    assert report.healed == [("spgwu", "spgwu", 0)] and report.state == "COMPLETED"
    assert ("inject", "spgwu", 1, "ssh-ed25519 AAAAspgwu/0") in calls


def test_without_a_vdu_list_every_instance_is_healed_with_one_its_own_count_index():
    """heal(): no additionalParams.vdu: every vdur of the VNFR (count-index each), re-created by RO."""
    (spgwu,), vim, vca, calls = setup("spgwu")
    second = lcm_scale.scaled_spec(spgwu, 1)
    vim.vnfs[second.name] = type(vim.vnfs["spgwu"])(second.name, "198.18.0.40")
    vca.apps.add(second.name)
    report = lcm_heal.heal(vim, vca, [spgwu, second])
    assert [c for c in calls if c[0] == "rebuild"] == [("rebuild", "spgwu"), ("rebuild", "spgwu-z1")]
    assert report.healed == [("spgwu", "spgwu", 0), ("spgwu-z1", "spgwu", 1)]
    calls.clear()
    report = lcm_heal.heal(vim, vca, [spgwu, second], vdus=[{"vdu-id": "spgwu", "count-index": 1}])
    assert [c for c in calls if c[0] == "rebuild"] == [("rebuild", "spgwu-z1")]
    assert report.healed == [("spgwu-z1", "spgwu", 1)]


def test_a_vnf_level_ee_is_healed_only_with_the_management_vdu():
    """heal(): the VNF-level entry only when the healed VDU's ip-address is the VNFR's (instance 0)."""
    (spgwc,), vim, vca, calls = setup("spgwc")
    second = lcm_scale.scaled_spec(spgwc, 1)
    vim.vnfs[second.name] = type(vim.vnfs["spgwc"])(second.name, "198.18.0.41")
    report = lcm_heal.heal(vim, vca, [spgwc, second], vdus=[{"vdu-id": "spgwc", "count-index": 1}])
    assert calls == [("rebuild", "spgwc-z1")] and report.healed == [] and report.state == "COMPLETED"


def test_a_vdu_whose_name_is_not_its_id_gets_no_ee_healed():
    """heal() looks the VDU-level entry up by the vdur's vdu-name (its "TODO: Get vdu_id from
    vdud"): a VDU named otherwise than its id has its VM re-created and no key injected."""
    (spgwu,), vim, vca, calls = setup("spgwu")
    spgwu.vnfd = copy.deepcopy(spgwu.vnfd)
    spgwu.vnfd["vdu"][0]["name"] = "spgwu-vm"
    report = lcm_heal.heal(vim, vca, [spgwu])
    assert calls == [("rebuild", "spgwu")] and report.healed == [] and report.state == "COMPLETED"


def test_without_ssh_access_no_key_is_asked_for_or_injected():
    """heal_N2VC: the key block only with config-access.ssh-access.required."""
    (spgwc,), vim, vca, calls = setup("spgwc")
    spgwc.vnfd = copy.deepcopy(spgwc.vnfd)
    del lcm_data.get_configuration(spgwc.vnfd, "oai-spgwc")["config-access"]
    assert lcm_heal.heal(vim, vca, [spgwc]).state == "COMPLETED"
    assert calls == [("rebuild", "spgwc")]


def test_an_ee_without_a_record_fails():
    """_heal_n2vc adds a record without ee_id for an EE it does not find; heal_N2VC then fails
    getting its key (N2VC: "ee_id is mandatory")."""
    (spgwc,), vim, vca, _calls = setup("spgwc")
    spgwc.vnfd = copy.deepcopy(spgwc.vnfd)
    ees = lcm_data.get_configuration(spgwc.vnfd, "oai-spgwc")["execution-environment-list"]
    ees.insert(0, dict(copy.deepcopy(ees[0]), id="another-ee"))
    report = lcm_heal.heal(vim, vca, [spgwc])
    assert report.state == "FAILED" and report.errors == [
        "Install configuration Software, getting public ssh key ee_id is mandatory"]
    assert report.healed[0] == ("spgwc", None, 0) and report.healed[1] == (None, None, 0)


def test_the_vnf_level_run_day1_applies_to_vdus_that_do_not_say():
    """heal(): a vdu entry without run-day1 takes the VNF's."""
    assert lcm_heal.targets([spec("spgwu")], True, [{"vdu-id": "spgwu"}]) == [{"vdu-id": "spgwu", "run-day1": True}]
    assert lcm_heal.targets([spec("spgwu")], False) == [{"vdu-id": "spgwu", "count-index": 0, "run-day1": False}]
