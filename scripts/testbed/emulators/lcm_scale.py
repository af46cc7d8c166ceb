"""OSM LCM emulation, scaling: what LCM 19's ``scale()`` does to a VDU with cloud-init and a
VDU-level execution environment (docs/lifecycle.md, "Scale-out and scale-in"), and ``Vnfm``: the
three operations ``deploy.scale`` drives (``osm vnf-scale --wait``, ``osm ns-action
--vdu_count``, the instances of the VDU), so that ``make lifecycle`` runs the deploy tool's
own scaling code on this emulation.
"""
import copy
import ipaddress
import threading
import time

import yaml

from testbed.emulators.lcm import InstantiationFailed, Report, configure, remaining_primitives


class ScaleRefused(InstantiationFailed):
    pass


def scaled_spec(base, k):
    """The VnfSpec of instance k of ``base``'s VDU: its own VM with every fixed IP + k (LCM
    increment_ip_mac: the last octet, no carry), its own application, the same additionalParams."""
    spec = copy.copy(base)
    spec.name = "{}-z{}".format(base.member, k) if k else base.member
    spec.count_index = k
    spec.links = {}
    for link, addr in base.links.items():
        iface = ipaddress.ip_interface(addr)
        octets = str(iface.ip).split(".")
        octets[-1] = str(int(octets[-1]) + k)
        spec.links[link] = "{}/{}".format(".".join(octets), iface.network.prefixlen)
    spec.config = dict(base.config)
    spec.primitives = list(base.primitives)
    return spec


def related_ends(relations, spec):
    """The relations LCM would add for a new execution environment of ``spec``: LCM 19 resolves
    every end to the first VCA record that matches (vnf-profile, vdu-profile, EE ref: never the
    count index), i.e. instance 0's application, so each is one that exists already (libjuju
    swallows "already exists"): nothing to relate."""
    return [(p, r) for p, r in relations if spec.member in (p.split(":")[0], r.split(":")[0])]


def scale_out(testbed, model, spec, relations, progress=None, before_primitives=None, post_scale=None):
    """What LCM 19 does for one new instance of a VDU with cloud-init and a VDU-level EE: a new
    VM (fixed IPs + k); a new application with its own machine; no new relation (the ends
    resolve to instance 0, ``related_ends``); the post-scale-out primitive awaited while the new
    EE's day-1 runs as a task of its own (``post_scale(info)``, with ``VDU_SCALE_INFO`` as LCM 19
    has it: nothing about the new VM); the new EE's day-1 with ``<rw_mgmt_ip>`` = the new VM and
    ``<OSM>`` with its count_index. Returns the Report (``config_done_at``: day-1 ended)."""
    report = Report()
    machine = testbed.add_vnf(spec.name, spec.links, spec.env)
    report.step("VIM: VM of {} up (mgmt {}, fixed IPs + {})".format(spec.name, machine.mgmt_ip, spec.count_index),
                progress)
    if spec.scaling is not None and not spec.scaling.cloud_init:
        report.step("VCA: no execution environment for {}: its VDU has no cloud-init".format(spec.name), progress)
        return report
    model.deploy(spec.name, spec.charm_dir, wait=False)
    report.step("VCA: new application {} deployed".format(spec.name), progress)
    for provider, requirer in related_ends(relations, spec):
        report.step("VCA: relation {} -> {} resolves to instance 0: already exists".format(provider, requirer),
                    progress)
    model.settle()

    def day1():
        configure(testbed, model, spec, machine, report, progress)
        remaining_primitives(model, spec, machine, report, progress, before_primitives)
        report.config_done_at = time.monotonic()
    task = threading.Thread(target=_capture, args=(day1, report), name="day1-" + spec.name)
    task.start()
    if post_scale and spec.scaling:
        for trigger, primitive in spec.scaling.config_actions:
            if trigger == "post-scale-out":
                info = {"scaling_group_name": spec.scaling.name, "vdu": [], "kdu": [], "scaling_direction": "OUT"}
                post_scale(primitive, yaml.safe_dump(info, default_flow_style=True, width=256).strip())
                report.step("post-scale-out {} on {} (instance 0) while {}'s day-1 runs".format(
                    primitive, spec.member, spec.name), progress)
    task.join()
    if report.error is not None:
        raise report.error
    model.settle()
    return report


def scale_in(testbed, model, spec, progress=None):
    """What LCM 19 does to the highest instance: its EE's terminate primitives (our VNFDs have
    none; the charm's stop hook cleans the VNF), the application destroyed (no relation departs:
    it was never related), then the VM deleted."""
    report = Report()
    model.remove_application(spec.name)
    report.step("VCA: application {} destroyed".format(spec.name), progress)
    testbed.delete_vnf(spec.name)
    report.step("VIM: VM of {} deleted".format(spec.name), progress)
    return report


def _capture(task, report):
    try:
        task()
    except Exception as e:  # noqa: BLE001 - re-raised in the LCM's own thread
        report.error = e


class Vnfm(object):
    """The emulated LCM behind ``deploy.scale``'s three operations (``instances``, ``scale``,
    ``action``), as ``osm vnf-scale --wait`` and ``osm ns-action --vdu_count`` reach it."""

    def __init__(self, testbed, model, specs, relations, progress=None, before_primitives=None):
        self.testbed, self.model, self.relations = testbed, model, relations
        self.progress, self.before_primitives = progress, before_primitives
        self.base = {s.member: s for s in specs}
        self.live = {s.member: {0: s} for s in specs}
        self.reports = []

    def instances(self, member):
        return sorted(self.live[member])

    def scale(self, member, aspect, out):
        base = self.base[member]
        if base.scaling is None or base.scaling.name != aspect:
            raise ScaleRefused("{} has no scaling aspect {}".format(member, aspect))
        present = self.live[member]
        if out:
            if len(present) + base.scaling.delta > base.scaling.maximum:
                raise ScaleRefused("reached the limit of {} instances of {}".format(base.scaling.maximum, base.vdu))
            spec = scaled_spec(base, len(present))     # LCM: the index is the number of vdurs
            self.reports.append(scale_out(self.testbed, self.model, spec, self.relations, self.progress,
                                          self.before_primitives))
            present[spec.count_index] = spec
        else:
            k = max(present)
            if len(present) - base.scaling.delta < 1:
                raise ScaleRefused("{} would fall below its minimum of 1 instance".format(base.vdu))
            self.reports.append(scale_in(self.testbed, self.model, present[k], self.progress))
            del present[k]

    def action(self, member, primitive, params, count_index=None):
        spec = self.live[member][count_index or 0]
        t0 = time.monotonic()
        result = self.model.run_action(self.model.units(spec.name)[0], primitive, params or {}, wait=False)
        if self.progress:
            self.progress("VCA: action {} on {}: {} in {:.2f} s".format(primitive, spec.name, result.status,
                                                                     time.monotonic() - t0))
        if result.status != "completed":
            raise InstantiationFailed("{} on {} failed: {}".format(primitive, spec.name, result.message))
        return result.results
