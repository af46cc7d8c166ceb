"""The emulated LCM's charm upgrade (testbed/emulators/lcm_upgrade.py), step by step against LCM 19's
``NsLcm.update`` with CHANGE_VNFPKG and ``_ns_charm_upgrade`` (seltonlucas/osm-capk@35936ae,
LCM/osm_lcm/ns.py), N2VC's ``upgrade_charm`` and libjuju's ``upgrade_charm``/``resolve_application``
(LCM/osm_lcm/n2vc/), on the bundle's real VNFDs: what happens to each VNF of every variant with
today's descriptors, decided by reading the VNFD as LCM does."""
import copy

import pytest
from lcm_fakes import Vca, spec, specs

from testbed.emulators import lcm_data, lcm_upgrade
from vpnaas.core import registry


@pytest.fixture
def charms(tmp_path):
    """Two builds of every charm: revision 1 and a changed revision 2 (and an unchanged copy)."""
    out = {}
    for rev, text in (("1", "old"), ("2", "new"), ("same", "old")):
        for name in (c.name for c in registry.load().with_vnfd()):
            d = tmp_path / rev / name
            (d / "src").mkdir(parents=True)
            (d / "src" / "charm.py").write_text(text)
            out[(rev, name)] = str(d)
    return out


def packages(vnf, charms, latest="2", vnfd=None):
    entries = vnf.vnfd["df"][0]["lcm-operations-configuration"]["operate-vnf-op-config"]["day1-2"]
    charm = next(ee["juju"]["charm"] for e in entries for ee in lcm_data.ee_list(e))
    name = charm[:-len(".charm")]
    return (lcm_upgrade.Package(vnf.vnfd, 1, {charm: charms[("1", name)]}),
            lcm_upgrade.Package(vnfd or vnf.vnfd, 2, {charm: charms[(latest, name)]}))


def upgrade(vnf, charms, instances=None, **kw):
    calls = []
    instances = instances or {0: vnf.name}
    vca = Vca(calls, instances.values())
    current, latest = packages(vnf, charms, **kw)
    return lcm_upgrade.change_vnfpkg(vca, vnf.member, instances, current, latest), vca, calls


@pytest.mark.parametrize("variant, member", [(v, m) for v in ("eps_wg", "sa_wg") for m in specs(v)])
def test_every_vnf_of_the_bundle_as_lcm_19_upgrades_it_today(variant, member, charms):
    """ns.py update(): a VNF-level entry (every VNF but the SPGW-U) gets its application
    upgraded; the SPGW-U's VDU-level entry makes get_configuration(current_vnfd, vnfd_id) None
    and the operation fails with a TypeError before anything is upgraded."""
    vnf = copy.deepcopy(specs(variant)[member])
    report, _vca, calls = upgrade(vnf, charms)
    if lcm_data.get_configuration(vnf.vnfd, vnf.vnfd["id"]) is None:
        assert member == "spgwu"
        assert report.state == "FAILED" and calls == []
        assert report.detail == ("FAILED Getting descriptor config: TypeError: argument of type 'NoneType' is not "
                                 "iterable")
    else:
        assert report.state == "COMPLETED", report.detail
        assert calls == [("upgrade-charm", vnf.name, charms[("2", vnf.name)])]


def test_nothing_happens_without_a_new_package_revision(charms):
    """update(): the whole CHANGE_VNFPKG block runs only when the VNFR's revision differs."""
    vnf = spec("mme")
    current, latest = packages(vnf, charms)
    latest.revision = current.revision
    calls = []
    report = lcm_upgrade.change_vnfpkg(Vca(calls, ["mme"]), "mme", {0: "mme"}, current, latest)
    assert report.state == "COMPLETED" and calls == []


def test_an_unchanged_charm_is_not_upgraded(charms):
    """update(): check_charm_hash_changed -- the same artifact content, no upgrade call."""
    report, _vca, calls = upgrade(spec("mme"), charms, latest="same")
    assert report.state == "COMPLETED" and calls == []


def test_a_changed_software_version_is_refused_for_a_vnf_with_a_charm(charms):
    """update(): "Software version change is not supported as VNF instance ... has charm"."""
    vnf = spec("hss")
    newer = copy.deepcopy(vnf.vnfd)
    newer["software-version"] = "2.0"
    report, _vca, calls = upgrade(vnf, charms, vnfd=newer)
    assert report.state == "FAILED" and calls == []
    assert report.detail == ("FAILED Checking if software version has changed in VNFD: Software version change is "
                             "not supported as VNF instance hss has charm.")


def test_errored_units_are_resolved_without_retry_before_the_upgrade(charms):
    """libjuju.resolve_application: unit.resolved(retry=False) for each unit in error, then
    application.refresh."""
    calls = []
    vnf = spec("mme")
    vca = Vca(calls, ["mme"])
    vca.errored.add("mme/0")
    current, latest = packages(vnf, charms)
    report = lcm_upgrade.change_vnfpkg(vca, "mme", {0: "mme"}, current, latest)
    assert calls == [("resolved", "mme/0", False), ("upgrade-charm", "mme", charms[("2", "mme")])]
    assert report.resolved == ["mme/0"] and report.state == "COMPLETED"


def test_an_application_left_in_error_fails_the_operation(charms):
    """libjuju.upgrade_charm: status error after the refresh -> JujuError; _ns_charm_upgrade
    returns FAILED "Error upgrading charm ..."."""
    calls = []
    vnf = spec("mme")
    vca = Vca(calls, ["mme"])
    current, latest = packages(vnf, charms)
    vca.upgrade_charm = lambda app, path: (calls.append(("upgrade-charm", app, path)), vca.errored.add("mme/0"))
    report = lcm_upgrade.change_vnfpkg(vca, "mme", {0: "mme"}, current, latest)
    assert report.state == "FAILED"
    assert report.detail.startswith("Error upgrading charm {}: Application mme failed update".format(
        charms[("2", "mme")]))


def test_only_the_last_execution_environment_of_the_loop_is_upgraded(charms):
    """update(): ee_id is the loop's last; one upgrade call per (current, target) pair -- with
    a VNF-level entry and two instances, instance 1 is upgraded twice and instance 0 never."""
    vnf = spec("spgwc")
    report, _vca, calls = upgrade(vnf, charms, instances={0: "spgwc", 1: "spgwc-z1"})
    assert report.state == "COMPLETED"
    assert calls == [("upgrade-charm", "spgwc-z1", charms[("2", "spgwc")])] * 2


def spgwu_with_a_vnf_level_entry(with_ee):
    vnf = spec("spgwu")
    vnf.vnfd = copy.deepcopy(vnf.vnfd)
    entries = vnf.vnfd["df"][0]["lcm-operations-configuration"]["operate-vnf-op-config"]["day1-2"]
    entry = {"id": "oai-spgwu", "config-access": entries[0]["config-access"]}
    if with_ee:
        entry = dict(copy.deepcopy(entries[0]), id="oai-spgwu")
    entries.insert(0, entry)
    return vnf


def test_a_vnf_level_entry_without_an_ee_completes_and_upgrades_nothing(charms):
    """The emulation reads the VNFD: a VNF-level entry with no execution environment makes
    get_configuration find something, its EE list is empty, and LCM 19 reports COMPLETED with
    the SPGW-U's charm untouched."""
    report, _vca, calls = upgrade(spgwu_with_a_vnf_level_entry(False), charms)
    assert report.state == "COMPLETED" and calls == []


def test_a_vnf_level_entry_with_the_ee_targets_the_last_record(charms):
    """With a VNF-level EE too, LCM 19 holds two records per instance (instantiate() deploys
    both) and upgrades the last one, the VDU-level EE; the testbed runs one EE per VM (the
    VNF-level one) and says it cannot follow."""
    report, _vca, calls = upgrade(spgwu_with_a_vnf_level_entry(True), charms)
    assert report.state == "FAILED" and calls == []
    assert "the testbed did not deploy this execution environment" in report.detail


def test_a_missing_charm_artifact_fails(charms):
    vnf = spec("mme")
    current, latest = packages(vnf, charms)
    latest.charms = {"mme.charm": "/nonexistent/mme"}
    report = lcm_upgrade.change_vnfpkg(Vca([], ["mme"]), "mme", {0: "mme"}, current, latest)
    assert report.state == "FAILED" and "Charm artifact /nonexistent/mme does not exist" in report.detail
