"""OSM LCM emulation: the order in which OSM instantiates proxy-charm VNFs.

For every VNF: the charm is deployed; relations are added as soon as both sides exist (BEFORE
any configuration); ``generate-ssh-key`` and ``get-ssh-public-key`` run and the key is injected
into the VM; the ``config`` primitive sets charm config (placeholders such as ``<rw_mgmt_ip>``
filled in); ``verify-ssh-credentials`` is retried while it fails; then the remaining
initial-config-primitives run as actions in ``seq`` order, and a failed one fails the
instantiation. Primitives that need the internet are reported SKIPPED by name, never done.

OSM's LCM runs one task per VNF (``instantiate_N2VC``, launched with ``asyncio.ensure_future``
for every VNF at once). With a parallel VCA the emulation does the same: the key, config and
primitive steps of different VNFs run at the same time, each VNF's in order. One difference,
kept for the bench's clock: every VNF's ``config`` is done before any VNF's remaining
primitives start (``after_config`` runs in between). With a serial VCA (``parallel=1``, the
end-to-end tests) the VNFs go one after another, in the descriptor's order.
"""
import concurrent.futures
import time

import yaml

from vpnaas.charm.base import RECONCILE_SESSION


class InstantiationFailed(Exception):
    pass


class VnfSpec(object):
    def __init__(self, name, charm_dir, links, config, primitives=(), skip=(), env=None, vdu=None, member=None,
                 count_index=0, scaling=None, vnfd=None):
        self.name = name              # member name = Juju application name (instance k > 0: "<member>-z<k>")
        self.charm_dir = charm_dir
        self.links = links            # {link name: "address/prefix"}
        self.config = config          # config primitive params; "<rw_mgmt_ip>" and "<OSM>" are substituted
        self.primitives = list(primitives)   # [(name, params)] after config, in seq order
        self.skip = set(skip)         # primitive names that cannot run here (need the internet)
        self.env = env or {}          # environment of login sessions on the emulated VM
        self.vdu = vdu                # the VDU whose day1-2 entry holds the EE (None: VNF-level)
        self.member = member or name  # the member-vnf-index
        self.count_index = count_index
        self.scaling = scaling        # ScalingAspect of the VNFD, or None
        self.vnfd = vnfd              # the VNFD (its body): what heal and upgrade read, as LCM does


class ScalingAspect(object):
    """A VNFD df scaling-aspect that LCM can run: one VDU, ``delta`` instances per step, at most
    ``maximum`` (vdu-profile max-number-of-instances; LCM's default 10)."""

    def __init__(self, name, vdu, delta=1, maximum=10, config_actions=(), cloud_init=True):
        self.name, self.vdu, self.delta, self.maximum = name, vdu, delta, maximum
        #: LCM 19 deploys an EE for a new instance only when the VDU has cloud-init (ns.py scale())
        self.cloud_init = cloud_init
        #: [(trigger, primitive)] scaling-config-action: pre/post-scale-in/out on the VNF-level EE
        self.config_actions = list(config_actions)


def osm_params(spec, machine, ns_id="testbed-ns"):
    """LCM 19's ``<OSM>`` (data_utils/vnfr.py get_osm_params): for a VDU-level EE its count_index
    and vdu_id; mapped into a primitive as a YAML flow string (ns.py _map_primitive_params:
    ``yaml.safe_dump(v, default_flow_style=True, width=256)``)."""
    doc = {"ip_address": machine.mgmt_ip, "member_vnf_index": spec.member, "ns_id": ns_id,
           "vim_account_id": "testbed", "vnf_id": "{}-vnfr".format(spec.member), "vnfd_id": spec.member,
           "vnfd_ref": spec.member}
    if spec.vdu:
        doc.update(count_index=spec.count_index, vdu_id=spec.vdu)
        doc["vdu"] = {"{}-{}".format(spec.vdu, spec.count_index): {
            "count_index": spec.count_index, "vdu_id": spec.vdu,
            "interfaces": {link: {"name": link, "ip_address": addr.split("/")[0]}
                           for link, addr in sorted(spec.links.items())}}}
    return yaml.safe_dump(doc, default_flow_style=True, width=256).strip()


def fill_placeholders(spec, machine):
    """The config primitive's params as LCM maps them: ``<rw_mgmt_ip>`` the instance's VM,
    ``<OSM>`` its get_osm_params."""
    builtin = {"<rw_mgmt_ip>": machine.mgmt_ip, "<OSM>": osm_params(spec, machine)}
    return {k: builtin.get(v, v) if isinstance(v, str) else v for k, v in spec.config.items()}


class Report(object):
    def __init__(self):
        self.steps = []               # (seconds since start, text)
        self.skipped = []             # (vnf, primitive, reason)
        self.t0 = time.monotonic()
        self.config_done_at = None
        self.last_config_at = None
        self.hooks_at_config = None
        self.sessions_at_config = None
        self.error = None

    def step(self, text, progress=None):
        self.steps.append((round(time.monotonic() - self.t0, 2), text))
        if progress:
            progress(text)


def ssh_sessions(model, unit):
    """Reconcile sessions ``unit`` opened so far (its log lines)."""
    return sum(1 for _level, msg in model.logs(unit) if msg.startswith(RECONCILE_SESSION))


def instantiate(testbed, model, links, vnfs, relations, progress=None, verify_tries=20, after_config=None,
                before_primitives=None, detail=True):
    """Bring up ``vnfs`` on ``testbed`` (VIM) through ``model`` (VCA). Returns a Report.

    ``after_config(report)`` runs right after the last config primitive (e.g. to time the tunnels);
    ``before_primitives(spec, vnf)`` prepares a VM before its remaining primitives run.
    ``progress`` gets every step, or with ``detail=False`` only the phases."""
    report = Report()
    phase = progress
    if not detail:
        progress = None
    for name, cidr in sorted(links.items()):
        testbed.add_link(name, cidr)
    report.step("VIM: {} link(s) created; creating {} VNF(s)".format(len(links), len(vnfs)), phase)
    machines = {}
    for spec in vnfs:
        machines[spec.name] = testbed.add_vnf(spec.name, spec.links, spec.env)
        report.step("VIM: VNF {} up (mgmt {})".format(spec.name, machines[spec.name].mgmt_ip), progress)
    for spec in vnfs:
        model.deploy(spec.name, spec.charm_dir, wait=False)
        report.step("VCA: charm of {} deployed".format(spec.name), progress)
    for provider, requirer in relations:
        model.relate(provider, requirer, wait=False)
        report.step("VCA: relation {} -> {} added".format(provider, requirer), progress)
    model.settle()      # a parallel VCA delivers the deployment's hooks meanwhile
    report.step("VCA: {} charm(s) installed, {} relation(s) added; configuring".format(len(vnfs), len(relations)),
                phase)
    each_vnf = _serially if model.jobs.parallel == 1 else _concurrently
    each_vnf(lambda spec: configure(testbed, model, spec, machines[spec.name], report, progress, verify_tries), vnfs)
    report.config_done_at = time.monotonic()
    report.step("config primitives done on {} VNF(s)".format(len(vnfs)), phase)
    if after_config:
        after_config(report)
    each_vnf(lambda spec: remaining_primitives(model, spec, machines[spec.name], report, progress,
                                               before_primitives), vnfs)
    model.settle()
    return report


def configure(testbed, model, spec, machine, report, progress=None, verify_tries=20):
    """What OSM's LCM does for a new execution environment once the VM is up: the charm's SSH
    key injected into the VM, the ``config`` primitive, then verify-ssh-credentials until it
    passes (OSM only logs a failure)."""
    unit = model.units(spec.name)[0]
    _action(model, unit, "generate-ssh-key", {}, tolerate=True)
    key = _action(model, unit, "get-ssh-public-key", {}).results["pubkey"]
    testbed.authorize(machine, key)
    report.step("RO: SSH key of {}'s charm injected".format(spec.name), progress)
    config = fill_placeholders(spec, machine)
    report.last_config_at = time.monotonic()
    # OSM's config primitive and actions return when Juju has done them, not when every hook
    # they cause in other units has run (with a serial VCA that is the same thing).
    model.set_config(spec.name, config, wait=False)
    report.step("config primitive on {}".format(spec.name), progress)
    for _attempt in range(verify_tries):
        result = model.run_action(unit, "verify-ssh-credentials", {}, wait=False)
        if result.status == "completed":
            break
    else:
        report.step("verify-ssh-credentials on {} still failing after {} tries (OSM only logs this)".format(
            spec.name, verify_tries), progress)


def remaining_primitives(model, spec, machine, report, progress=None, before_primitives=None):
    """The VNFD's initial-config-primitives after ``config``, in seq order (those that need the
    internet are SKIPPED by name)."""
    if before_primitives:
        before_primitives(spec, machine)
    for name, params in spec.primitives:
        if name in spec.skip:
            report.skipped.append((spec.name, name, "needs the internet (OAI sources)"))
            report.step("SKIPPED {} on {}: needs the internet".format(name, spec.name), progress)
            continue
        _action(model, model.units(spec.name)[0], name, params)
        report.step("{} on {}".format(name, spec.name), progress)


def _serially(task, vnfs):
    for spec in vnfs:
        task(spec)


def _concurrently(task, vnfs):
    """``task`` for every VNF at once, as OSM's LCM runs its per-VNF tasks; the first failure
    (in the descriptor's order) is raised once all are done."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(vnfs) or 1) as pool:
        futures = [pool.submit(task, spec) for spec in vnfs]
    for future in futures:
        future.result()


def _action(model, unit, name, params, tolerate=False):
    # Like OSM's N2VC, wait for the action itself, not for the hooks it causes in other units.
    result = model.run_action(unit, name, params, wait=False)
    if result.status != "completed" and not tolerate:
        raise InstantiationFailed("{} on {} failed: {}".format(name, unit, result.message))
    return result
