"""OSM LCM emulation, heal: what LCM 19's ``osm ns-heal`` does to a VNF with a proxy charm.

Followed step by step (``seltonlucas/osm-capk@35936ae``, ``LCM/osm_lcm/ns.py``; each step is a
test in ``tests/unit/test_lcm_heal.py``):

1. ``heal()`` -> ``heal_RO``: RO re-creates the VMs first (same ports and addresses, a new disk
   and SSH host key) and LCM waits for it (``_wait_ng_ro``) before any VCA work.
2. ``heal()``: the VDUs to heal are the request's ``additionalParams.vdu`` or, without one, every
   vdur of the VNFR, named by its ``vdu-name`` (LCM uses the name as the VDU id: its "TODO: Get
   vdu_id from vdud"); ``run-day1`` of the VNF applies to each VDU that does not say otherwise.
   Per VDU: the VNF-level day1-2 entry is healed only when the VDU is the VNF's management VDU
   (its ip-address is the VNFR's); the VDU-level entry (``get_configuration(vnfd, vdu_name)``)
   always.
3. ``_heal_n2vc``: the existing VCA record of (member, vdu_id, count index, EE id) is reused --
   the same execution environment, the same Juju application and unit, its config and
   relations untouched. A record it cannot find is added with no ``ee_id``.
4. ``heal_N2VC`` for a proxy charm: no new EE, nothing installed, **no relation added** (the
   ``_add_vca_relations`` call is commented out); with ``config-access.ssh-access.required``
   ``generate-ssh-key`` (its failure ignored) and ``get-ssh-public-key`` run on the unit
   (``N2VCJujuConnector.get_ee_ssh_public__key``) and, once RO has finished, the key is injected
   into the new VM (``wait_vm_up_insert_key_ro``).
5. Only with ``run-day1`` (default false; ``osm ns-heal --run-day1``) the EE's
   initial-config-primitives run again, mapped by ``_map_primitive_params`` with the heal's own
   parameters only: ``vdu-id``, ``count-index``, ``run-day1`` and ``rw_mgmt_ip`` -- not the
   VNF's additionalParams and not ``<OSM>``, so a primitive naming one fails the heal. ``config``
   is ``juju config`` plus ``verify-ssh-credentials`` until it passes (N2VC ``exec_primitive``).
6. The operation is FAILED when any EE's task failed (``_wait_for_tasks``), else COMPLETED.

The testbed differs where it must: its VMs' login is root (``nsmodel.TESTBED_LOGIN``), the
primitives that need the internet are SKIPPED by name, and verify-ssh-credentials is retried
without LCM's 15 s pause.
"""
import time

from testbed.emulators import lcm, lcm_data, nsmodel


class HealReport(lcm.Report):
    def __init__(self):
        super(HealReport, self).__init__()
        self.state = "COMPLETED"        # LCM's nslcmop operationState
        self.errors = []                # the failed EE tasks' exception texts
        self.healed = []                # (application or None, vdu_id or None, count index)
        self.injected_at = None         # time.monotonic() when the last key was injected
        self.day1 = []                  # (application, primitive) run again

    @property
    def detail(self):
        return "; ".join(self.errors) if self.errors else "Done"


def targets(specs, run_day1, vdus=None):
    """heal(): the request's VDU list, or every vdur of the VNFR (vdu-name, count-index), each
    with the VNF's run-day1 unless it says otherwise."""
    vnfd = specs[0].vnfd
    if vdus:
        out = [dict(v) for v in vdus]
    else:
        out = [{"vdu-id": lcm_data.vdu_name(vnfd, vdu_of(spec)), "count-index": spec.count_index, "run-day1": run_day1}
               for spec in specs]
    for target in out:
        if not target.get("run-day1") and run_day1:
            target["run-day1"] = run_day1
    return out


def vdu_of(spec):
    """The VDU of a testbed VM: the VDU-level EE's, else the VNFD's (single) VDU."""
    return spec.vdu or spec.vnfd["vdu"][0]["id"]


def heal(testbed, model, specs, run_day1=False, vdus=None, progress=None, before_primitives=None, verify_tries=20):
    """Heal the member VNF whose live instances are ``specs`` (instance 0 first; each has the
    VNFD as ``vnfd``) as LCM 19 does. Returns a HealReport; ``config_done_at`` is when LCM ended."""
    report = HealReport()
    vnfd, member = specs[0].vnfd, specs[0].member
    by_index = {s.count_index: s for s in specs}
    records = lcm_data.vca_records(vnfd, member, {k: s.name for k, s in by_index.items()})
    wanted = targets(specs, run_day1, vdus)
    machines = {}
    for target in wanted:                                       # 1. heal_RO, awaited
        spec = by_index[target.get("count-index", 0)]
        machines[spec.count_index] = testbed.rebuild_vnf(spec.name)
        report.step("RO: VM of {} re-created (same addresses, new disk and host key)".format(spec.name), progress)
    vnfr_ip = testbed.vnfs[by_index[0].name].mgmt_ip if 0 in by_index else None
    for target in wanted:                                       # 2. the EEs of each VDU
        index = target.get("count-index", 0)
        spec = by_index[index]
        params = dict(target)
        vnf_level = lcm_data.get_configuration(vnfd, vnfd["id"])
        if vnf_level and vnfr_ip == machines[index].mgmt_ip:
            _heal_entry(testbed, model, report, records, vnf_level, None, 0, spec, machines[index], params,
                        progress, before_primitives, verify_tries)
        vdu_level = lcm_data.get_configuration(vnfd, target["vdu-id"])
        if vdu_level:
            _heal_entry(testbed, model, report, records, vdu_level, target["vdu-id"], index, spec, machines[index],
                        params, progress, before_primitives, verify_tries)
    if report.errors:
        report.state = "FAILED"
    report.step("LCM: heal of {} {}: {}".format(member, report.state, report.detail), progress)
    report.config_done_at = time.monotonic()
    model.settle()
    return report


def _heal_entry(testbed, model, report, records, config, vdu_id, index, spec, machine, params, progress,
                before_primitives, verify_tries):
    """_heal_n2vc: one heal_N2VC task per EE of the entry, on the EE's existing record."""
    for ee in lcm_data.ee_list(config):
        if lcm_data.vca_type(ee) is None:
            continue
        record = next((r for r in records if r["vdu_id"] == vdu_id and r["vdu_count_index"] == index
                       and r["ee_descriptor_id"] == ee.get("id")), None)
        if record is None:      # _heal_n2vc adds one, without an execution environment
            record = {"member-vnf-index": spec.member, "vdu_id": vdu_id, "vdu_count_index": index,
                      "ee_descriptor_id": ee.get("id"), "type": lcm_data.vca_type(ee), "ee_id": None}
        report.healed.append((record["ee_id"], vdu_id, index))
        try:
            heal_ee(testbed, model, report, record, config, spec, machine, params, progress, before_primitives,
                    verify_tries)
        except lcm_data.LcmException as e:
            report.errors.append(str(e))
            report.step("LCM: heal of {}'s EE failed: {}".format(spec.name, e), progress)


def heal_ee(testbed, model, report, record, config, spec, machine, params, progress=None, before_primitives=None,
            verify_tries=20):
    """heal_N2VC for a proxy charm's EE (raises LcmException as LCM's task does)."""
    app = record["ee_id"]
    if record["type"] != "lxc_proxy_charm":
        raise lcm_data.LcmException("the testbed heals proxy charms only, not {}".format(record["type"]))
    step = "Waiting to VM being up and getting IP address"
    if lcm_data.deep_get(config, ("config-access", "ssh-access", "required")):
        step = "Install configuration Software, getting public ssh key"
        if not app:
            raise lcm_data.LcmException("{} ee_id is mandatory".format(step))
        unit = model.units(app)[0]
        model.run_action(unit, "generate-ssh-key", {}, wait=False)          # its failure is ignored
        key = model.run_action(unit, "get-ssh-public-key", {}, wait=False)
        if key.status != "completed":     # LCM would inject the output without a key; RO then fails
            raise lcm_data.LcmException("{} Cannot execute action get-ssh-public-key: {}".format(step, key.message))
        report.step("VCA: {} kept; generate-ssh-key, get-ssh-public-key run on {}".format(app, unit), progress)
        testbed.authorize(machine, key.results["pubkey"])
        report.injected_at = time.monotonic()
        report.step("RO: SSH key of {}'s charm injected into the new VM".format(app), progress)
    params["rw_mgmt_ip"] = machine.mgmt_ip
    if not params.get("run-day1"):
        report.step("LCM: {}: no day-1 (run-day1 false)".format(app), progress)
        return
    step = "execute initial config primitive"
    prepared = False
    for prim in lcm_data.sorted_initial_primitives(config.get("initial-config-primitive"), record,
                                                  record["ee_descriptor_id"]):
        try:
            values = lcm_data.map_primitive_params(prim, {}, params)
        except lcm_data.LcmException as e:
            raise lcm_data.LcmException("{} {}".format(step, e)) from None
        step = "execute primitive '{}'".format(prim["name"])
        if not app:
            raise lcm_data.LcmException("{} ee_id is mandatory".format(step))
        if prim["name"] == "config":
            _config(model, app, values, verify_tries)
        elif prim["name"] in spec.skip:
            report.skipped.append((app, prim["name"], "needs the internet (OAI sources)"))
            report.step("SKIPPED {} on {}: needs the internet".format(prim["name"], app), progress)
            continue
        else:
            if before_primitives and not prepared:
                before_primitives(spec, machine)
                prepared = True
            result = model.run_action(model.units(app)[0], prim["name"], values, wait=False)
            if result.status != "completed":
                raise lcm_data.LcmException("{} failed: {}".format(step, result.message))
        report.day1.append((app, prim["name"]))
        report.step("day-1 {} on {}".format(prim["name"], app), progress)


def _config(model, app, values, verify_tries):
    """N2VC exec_primitive's ``config``: ``juju config`` (Juju runs config-changed only for a
    value that changed), then verify-ssh-credentials until it passes (LCM only logs a failure)."""
    if "ssh-username" in values:
        values = dict(values, **{"ssh-username": nsmodel.TESTBED_LOGIN})
    model.set_config(app, values, wait=False)
    unit = model.units(app)[0]
    for _attempt in range(verify_tries):
        if model.run_action(unit, "verify-ssh-credentials", {}, wait=False).status == "completed":
            break
