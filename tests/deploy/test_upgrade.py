"""`python -m deploy upgrade` on the REAL packages against the stand-in OSM (deploy.standin, which
follows LCM 19's ``update()`` for CHANGE_VNFPKG): osm ns-update where OSM reaches the charm,
`juju refresh` per execution environment where it cannot (issue 34 item 3)."""
import os
import tarfile

import pytest
import yaml

from bundle import membership
from deploy.standin import Clock, StandInClouds, project_root, run_env, run_tool

#: The EPS's members (one charm each; pinned: tests/pins.yaml).
EPS = membership.of_variant("eps_wg")[0]


@pytest.fixture
def bed(tmp_path, shipped_packages):
    out, _catalog = shipped_packages
    root = str(tmp_path / "root")
    bindir = project_root(root, out)

    def start(variant="eps_wg"):
        clouds = StandInClouds(root)

        def run(*argv, **extra):
            return run_tool(root, list(argv), run_env(root, bindir, UE="0", **extra), execute=clouds, clock=Clock())

        code, _out, err = run("deploy", "--ns", variant)
        assert code == 0, err
        return clouds, run
    return root, start


def updates(clouds):
    out = []
    for c in clouds.calls:
        if c[:2] == ["osm", "ns-update"]:
            config = yaml.safe_load(c[c.index("--config") + 1])
            out.append((c[2], c[c.index("--updatetype") + 1], config, int(c[c.index("--timeout") + 1])))
    return out


def test_osm_upgrades_the_vnf_level_charms_and_juju_every_spgwu_instance(bed):
    root, start = bed
    clouds, run = start()
    assert run("scale", "--ns", "eps_wg", "--scale-out")[0] == 0
    code, out, err = run("upgrade", "--ns", "eps_wg")
    assert code == 0, err
    (ns,) = clouds.osm.ns.values()
    done = updates(clouds)
    by_member = {}
    for name, kind, config, timeout in done:
        assert (name, kind) == ("vpnaas-eps_wg", "CHANGE_VNFPKG") and timeout >= 300   # NBI: at least 300 s
        (item,) = config["changeVnfPackageData"]          # the list osmclient's ns-update reads
        member = next(m for m, v in ns.vnfr.items() if v == item["vnfInstanceId"])
        assert item["vnfdId"] == clouds.osm.packages["nfpkg"][ns.members[member]]["_id"]
        by_member[member] = item
    assert sorted(by_member) == sorted(m for m in EPS if m != "spgwu")  # never the SPGW-U (LCM 19: TypeError)
    refreshes = [c for c in clouds.calls if c[:2] == ["juju", "refresh"]]
    apps = sorted(c[2] for c in refreshes)
    assert apps == [ns.app("spgwu", 0), ns.app("spgwu", 1)]             # each instance's own application
    assert all(c[c.index("-m") + 1] == ns.id for c in refreshes)
    path = refreshes[0][refreshes[0].index("--path") + 1]
    # Juju takes --path as a local charm only absolute or starting with "." (a relative
    # build/... was refused by Juju 2.9's and 3.6's own reader: make juju-conformance)
    assert os.path.isabs(path) and all(os.path.isabs(c[c.index("--path") + 1]) for c in refreshes)
    package = os.path.join(root, clouds.catalog.package_of("vnf", "oai-spgwu"))
    with tarfile.open(package) as tar, open(os.path.join(root, path), "rb") as f:
        assert f.read() == tar.extractfile("oai-spgwu_vnf/charms/spgwu.charm").read()
    # the packages were replaced first (a new revision), the VNF records follow theirs
    nfpkg_updates = [c for c in clouds.calls if c[:2] == ["osm", "nfpkg-update"]]
    assert clouds.calls.index(nfpkg_updates[-1]) < clouds.calls.index(refreshes[0])
    assert ns.revision["hss"] == clouds.osm.packages["nfpkg"]["oai-hss"]["_admin"]["revision"] == 2
    assert "upgrade done: eps_wg" in out


@pytest.mark.parametrize("variant, extra", [("eps_wg_osm10", {}), ("eps_wg", {"UPGRADE_VIA": "juju"})])
def test_osm10_and_upgrade_via_juju_refresh_every_charm(bed, variant, extra):
    _root, start = bed
    clouds, run = start(variant)
    code, out, err = run("upgrade", "--ns", variant, **extra)
    assert code == 0, err
    assert updates(clouds) == []
    assert len([c for c in clouds.calls if c[:2] == ["juju", "refresh"]]) == len(EPS)


def test_a_changed_software_version_is_refused_before_anything_changes(bed, tmp_path):
    root, start = bed
    clouds, run = start()
    clouds.osm.packages["nfpkg"]["oai-mme"]["software-version"] = "0.9"     # what OSM has onboarded
    before = len(clouds.calls)
    code, out, err = run("upgrade", "--ns", "eps_wg")
    assert code == 1 and "the software-version changed for oai-mme (0.9 onboarded, 1.0 in" in err
    changes = [c for c in clouds.calls[before:] if c[1].endswith(("-update", "-create")) or c[0] == "juju"]
    assert changes == []


def test_the_stand_in_lcm_refuses_what_lcm_19_refuses(bed):
    """The choice above rests on LCM 19: ns-update of the SPGW-U (VDU-level day1-2 only) fails;
    and osmclient's ns-update wants changeVnfPackageData as a list."""
    _root, start = bed
    clouds, _run = start()
    (ns,) = clouds.osm.ns.values()
    vnfd_id = clouds.osm.packages["nfpkg"]["oai-spgwu"]["_id"]
    config = "{changeVnfPackageData: [{vnfInstanceId: %s, vnfdId: %s}]}" % (ns.vnfr["spgwu"], vnfd_id)
    rc, text = clouds.osm(["ns-update", ns.name, "--updatetype", "CHANGE_VNFPKG", "--config", config])
    assert rc == 0 and "TypeError" in yaml.safe_load(text)["detailed-status"]
    rc, text = clouds.osm(["ns-update", ns.name, "--updatetype", "CHANGE_VNFPKG", "--config",
                           config.replace("[", "").replace("]", "")])
    assert rc == 1 and "must be a list" in text


def test_the_dry_run_shows_both_ways(bed):
    root, _start = bed
    bindir = os.path.join(root, "bin")
    code, out, err = run_tool(root, ["upgrade", "--ns", "eps_wg"], run_env(root, bindir, DRY_RUN="1"))
    assert code == 0, err
    lines = [line for line in out.splitlines() if line.startswith("+ ")]
    assert sum(" ns-update vpnaas-eps_wg --updatetype CHANGE_VNFPKG " in line for line in lines) == len(EPS) - 1
    refresh = [line for line in lines if " refresh " in line]
    charm = os.path.join(root, "build/deploy/upgrade/oai-spgwu/spgwu.charm")
    assert len(refresh) == 1 and "--path {} ".format(charm) in refresh[0]
    assert os.path.isfile(charm)


def test_every_vnfd_keeps_the_software_version_a_charm_upgrade_needs(shipped_packages):
    """LCM 19 refuses CHANGE_VNFPKG for a VNF with a charm whose VNFD's software-version changed
    (ns.py update(): "Software version change is not supported ... has charm"): the bundle's VNFDs
    keep one software-version, the one docs/deploy.md names, through charm upgrades."""
    from deploy.catalog import Catalog

    out, _catalog = shipped_packages
    catalog = Catalog.load(os.path.dirname(out), os.path.join(out, "catalog.json"))
    versions = {item["id"]: catalog.vnfd(item["id"]).get("software-version") for item in catalog.vnf}
    assert versions and set(versions.values()) == {"1.0"}, versions


@pytest.mark.parametrize("ee_id", ["m.app.0", "ns-1.app-vnf-z0.3",
                                   "8ba3221f-ee34-4299-8821-c25e180615e0.proxy-ee-z0.1"])
def test_the_model_and_application_of_an_execution_environment_pass_our_grammar(ee_id):
    from deploy.upgrade import _model_app
    assert _model_app({"ee_id": ee_id}) == tuple(ee_id.split(".")[:2])


@pytest.mark.parametrize("ee_id", ["M.app.0", "m.App.0", "m.app-1.0", "m.1app.0", "m.app;rm -rf.0", "-m.app.0",
                                   "m.--path.0", "m." + "a" * 64 + ".0", "m" * 64 + ".app.0", "m.<app>.0"])
def test_a_hostile_execution_environment_is_refused_before_juju_runs(ee_id):
    """Names Juju's own parser refuses (`invalid application name`, a flag as the application) or
    no Juju model can have never reach `juju refresh`."""
    from deploy.upgrade import UpgradeError, _model_app
    with pytest.raises(UpgradeError, match="not a Juju model and application name"):
        _model_app({"member-vnf-index": "1", "ee_id": ee_id})


def test_juju_target_names_the_controller_only_when_given_and_valid():
    from deploy.upgrade import UpgradeError, juju_target
    assert juju_target("", "m1") == "m1" and juju_target("osm-vca.lxd_1", "m1") == "osm-vca.lxd_1:m1"
    for bad in ("a:b", "-x", "a b", "x" * 64):
        with pytest.raises(UpgradeError, match="JUJU_CONTROLLER"):
            juju_target(bad, "m1")
