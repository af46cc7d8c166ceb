"""OSM LCM emulation, charm upgrade: ``osm ns-update <ns> --updatetype CHANGE_VNFPKG`` as LCM 19 runs it.

Followed step by step (``seltonlucas/osm-capk@35936ae``, ``LCM/osm_lcm/ns.py`` ``NsLcm.update``,
``_ns_charm_upgrade``; ``n2vc/n2vc_juju_conn.py`` ``upgrade_charm``; ``n2vc/libjuju.py``
``upgrade_charm``, ``resolve_application``); each step a test in ``tests/unit/test_lcm_upgrade.py``:

1. Nothing happens unless the VNFR's package revision differs from the VNFD's latest.
2. For every VCA record of the member VNF (``_admin.deployed.VCA``, instance 0 first), the
   descriptor config is ``get_configuration(current_vnfd, record["vnfd_id"])`` -- the VNF-level
   day1-2 entry only, looked up with the VNFD's id. A VNF whose only entry is VDU-level (the
   SPGW-U) gets None, and ``"execution-environment-list" in None`` raises TypeError: the
   operation FAILS ("FAILED Getting descriptor config: ...") before anything is upgraded. Each
   juju EE adds a (current, target) charm artifact pair, the charm named by the *current* VNFD.
   The loop leaves ``ee_id`` and the VCA type of the **last** record.
3. A changed ``software-version`` is refused when the VNF has a charm (LcmException).
4. Otherwise, for every pair whose charm changed (a content hash of the two artifacts), the
   charm is upgraded -- each time on that last ``ee_id``: a VNF with several execution
   environments (a scaled SPGW-U) gets only its last one upgraded, as often as it has records.
5. The upgrade (libjuju ``upgrade_charm``): every unit of the application in error is marked
   resolved without retry (its failed hook is skipped), then ``application.refresh`` (Juju:
   upgrade-charm then config-changed on every unit), then an application left in error fails
   the operation.
"""
import hashlib
import os
import traceback

from testbed.emulators import lcm, lcm_data


class Package(object):
    """One revision of a VNF package as OSM holds it: the VNFD, its revision number and the
    artifact (a built charm directory here) of each charm file the VNFD names."""

    def __init__(self, vnfd, revision, charms):
        self.vnfd, self.revision, self.charms = vnfd, revision, dict(charms)


class UpgradeReport(lcm.Report):
    def __init__(self):
        super(UpgradeReport, self).__init__()
        self.state = None            # LCM's nslcmop operationState
        self.detail = ""
        self.upgraded = []           # (application, artifact) per upgrade call
        self.resolved = []           # units marked resolved (retry=False) first
        self.last_step = ""          # LCM's ``step`` variable: what a failure is reported under


def artifact_hash(path):
    """lcm_utils.py check_charm_hash_changed: a .charm file's hash, or a directory's
    (checksumdir.dirhash upstream: the files' content hashes, in path order)."""
    if not os.path.exists(path):
        raise lcm_data.LcmException("Charm artifact {} does not exist in the VNF Package".format(path))
    if os.path.isfile(path):
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    digests = []
    for root, dirs, files in os.walk(path):
        dirs.sort()
        for name in sorted(files):
            with open(os.path.join(root, name), "rb") as f:
                digests.append(hashlib.sha256(f.read()).hexdigest())
    return hashlib.sha256("".join(digests).encode()).hexdigest()


def change_vnfpkg(model, member, instances, current, latest, progress=None):
    """Upgrade the member VNF from package ``current`` to ``latest`` as LCM 19 does.
    ``instances``: {count index: the testbed application of that instance}. Returns an
    UpgradeReport whose ``state`` is COMPLETED or FAILED (``detail`` says why)."""
    report = UpgradeReport()
    step = "Checking if revision has changed in VNFD"
    try:
        if current.revision == latest.revision:
            report.step("LCM: {}: package revision {} unchanged, nothing to update".format(member, current.revision),
                        progress)
        else:
            _update(model, member, instances, current, latest, report, progress)
        report.state = report.state or "COMPLETED"
        report.detail = report.detail or "Done"
    except lcm_data.LcmException as e:
        report.state, report.detail = "FAILED", "FAILED {}: {}".format(report.last_step or step, e)
    except Exception:  # noqa: BLE001 - update() turns any exception into a FAILED operation, traceback and all
        last_line = traceback.format_exc().strip().splitlines()[-1]      # LCM writes the whole traceback
        report.state, report.detail = "FAILED", "FAILED {}: {}".format(report.last_step or step, last_line)
    report.step("LCM: ns-update CHANGE_VNFPKG of {}: {}".format(member, report.detail), progress)
    return report


def _update(model, member, instances, current, latest, report, progress):
    pairs, ee_id, vca_type = [], None, None
    for record in lcm_data.vca_records(current.vnfd, member, instances):
        vca_type, ee_id = record["type"], record["ee_id"]
        report.last_step = "Getting descriptor config"
        config = lcm_data.get_configuration(current.vnfd, record["vnfd_id"])
        # As LCM writes it: with no VNF-level entry ``config`` is None, and this raises TypeError.
        if "execution-environment-list" in config:
            ees = config.get("execution-environment-list", [])
        else:
            ees = []
        for ee in ees:
            if ee.get("juju"):
                charm = ee["juju"].get("charm")
                pairs.append((current.charms.get(charm), latest.charms.get(charm)))
    report.last_step = "Checking if software version has changed in VNFD"
    if lcm_data.find_software_version(current.vnfd) != lcm_data.find_software_version(latest.vnfd):
        if any(cur for cur, _target in pairs):
            raise lcm_data.LcmException("Software version change is not supported as VNF instance {} has "
                                        "charm.".format(member))
        raise lcm_data.LcmException("the testbed does not redeploy a VNF without a charm")
    report.last_step = "Checking if any charm package has changed or not"
    for cur, target in pairs:
        if cur and target and artifact_hash(cur) != artifact_hash(target):
            report.last_step = "Upgrading Charm"
            result, detail = charm_upgrade(model, ee_id, vca_type, target, report, progress)
            if result == "FAILED":
                report.state, report.detail = result, detail
    report.last_step = "Updating policies"


def charm_upgrade(model, app, vca_type, path, report, progress=None):
    """ns.py _ns_charm_upgrade -> N2VC upgrade_charm -> libjuju upgrade_charm; any failure of
    Juju's is a FAILED result, not an exception."""
    if not app:
        raise lcm_data.LcmException("the testbed did not deploy this execution environment (one per VM)")
    try:
        for unit in model.units(app):                       # resolve_application
            if model.status(unit)[0] == "error":
                model.resolved(unit, retry=False)
                report.resolved.append(unit)
        model.upgrade_charm(app, path)                      # application.refresh
        report.upgraded.append((app, path))
        report.step("VCA: {} ({}) upgraded to {}".format(app, vca_type, os.path.basename(path)), progress)
        failed = [u for u in model.units(app) if model.status(u)[0] == "error"]
        if failed:
            raise RuntimeError("Application {} failed update: {}".format(app, model.status(failed[0])[1]))
    except Exception as e:  # noqa: BLE001 - _ns_charm_upgrade returns every failure as FAILED
        return "FAILED", "Error upgrading charm {}: {}".format(path, e)
    return "COMPLETED", "Charm upgraded with application name {}".format(app)
