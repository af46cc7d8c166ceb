"""Adding a component to an NS is its folders, its registry entry and one membership line; a
reference point between existing components is a registry entry (docs/architecture.md, "Adding
..."; both with the pin file's lines for review). Proved in a temporary copy of the project: a
synthetic component ``probe`` (a VNF package whose id has no ``oai-`` prefix, a charm folder with
no code) joins the EPS, with a reference point ``x1`` it provides to the SPGW-U, and a reference
point ``x2`` joins the existing HSS and SPGW-C, exactly that way (``TOUCHED`` lists every file);
then the copy's own build, validator, package build, deploy tool, pin test and the new
component's own test run there, and their outputs carry the new facts everywhere the registry
feeds (the charms, the NS packages' members and relations, the package catalog, the deploy
tool's security group, the testbed's ends of each reference point)."""
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import zipfile
from xml.etree import ElementTree

import pytest
import yaml

from bundle import descriptors, membership, params
from vpnaas.core import registry

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
#: One worker runs this module: its module-scoped fixture is built once (tests/conftest.py).
pytestmark = pytest.mark.xdist_group("registry-extension")

REGISTRY_ADDITIONS = {
    "reference-points": {
        "x1": {"provider": "probe", "requirer": "spgwu", "listen-port": 51899, "tunnel-network": "10.250.99.0/30",
               "service-network": "172.31.99.0/24", "carries": "a synthetic test interface"},
        "x2": {"provider": "hss", "requirer": "spgwc", "listen-port": 51898, "tunnel-network": "10.250.98.0/30",
               "service-network": "172.31.98.0/24", "carries": "a synthetic interface between existing components"},
    },
    "components": {"probe": {"workload": "generic", "modules": [], "vnfd": "vnf/probe/probe_vnfd.yaml"}},
}

#: The membership line: the EPS's (ns/variants.yaml ``members``), with this component appended.
MEMBERS_LINE = re.compile(r"(?m)^(  eps: \[[^\]\n]*)\]$")
NEW_MEMBER = "probe"
#: Every file the additions touch (measured here; docs/architecture.md states these numbers): the
#: component's folders, its registry entry, its membership line, its own test, and the pin file.
TOUCHED = ["charms/probe/actions.yaml", "charms/probe/config.yaml", "charms/probe/metadata.yaml",
           "charms/vpnaas/core/registry.yaml", "docs/figures.md", "ns/variants.yaml", "tests/harness/test_probe.py",
           "tests/pins.yaml", "vnf/probe/README.md", "vnf/probe/probe_vnfd.yaml"]

PROBE_CHARM = {
    "charms/probe/metadata.yaml": """\
        name: probe
        display-name: Synthetic probe (registry extension test)
        summary: A component added by a registry entry and its own folder only.
        description: |
          Exists only in the temporary copy the registry extension test makes.
        """,
    "charms/probe/config.yaml": "options: {}\n",
    "charms/probe/actions.yaml": "{}\n",
}

PROBE_TEST = '''\
    """The probe's own test, written as a component's author would: its x1 tunnel under Harness."""
    from fake_vnf import keypair
    from harness_helpers import peer_data  # noqa: F401  (the fixtures)
    import pytest

    from charms_helpers import harness_for


    @pytest.fixture
    def probe(vnf, monkeypatch, tmp_path):
        import ops.testing

        from harness_helpers import Proxy
        from vpnaas.vnf import ssh

        monkeypatch.setattr(ops.testing, "SIMULATE_CAN_CONNECT", True)
        harness = harness_for("probe")
        harness.set_leader(True)
        harness.begin()
        harness.charm.keystore = ssh.KeyStore(str(tmp_path / "vpnaas"))
        unit = Proxy(harness, monkeypatch)
        assert unit.act("generate-ssh-key").results == {"generated": "true"}
        vnf.authorize(harness.charm.keystore.public_key())
        yield unit
        harness.cleanup()


    def test_x1_comes_up_with_the_registry_defaults(probe, vnf):
        probe.configure(**{"ssh-hostname": "10.0.0.5", "x1-service-addresses": "172.31.99.1/32"})
        _, key = keypair()
        rel = probe.relate("x1", "spgwu/0", peer_data(key, endpoint="192.168.30.2:51899",
                                                       tunnel="10.250.99.2/30", service="172.31.99.2/32"))
        assert probe.status.name == "active", probe.status.message
        published = probe.published(rel)
        assert published["endpoint"] == "10.0.0.5:51899"
        assert published["tunnel-address"] == "10.250.99.1/30"
        assert vnf.peer_keys("wg-x1") == [key]
        assert vnf.routes["172.31.99.2/32"][0] == "wg-x1"


    def test_a_peer_outside_x1s_service_network_is_refused(probe, vnf):
        probe.configure(**{"ssh-hostname": "10.0.0.5", "x1-service-addresses": "172.31.99.1/32"})
        probe.relate("x1", "spgwu/0", peer_data(tunnel="10.250.99.2/30", service="172.16.6.2/32"))
        assert "172.16.6.2/32" not in vnf.routes
    '''


def _probe_vnfd():
    """The probe's VNFD, made from the generic parts of the HSS's (one VDU, one proxy EE)."""
    with open(os.path.join(ROOT, "vnf", "hss", "hss_vnfd.yaml")) as f:
        doc = yaml.safe_load(f)
    text = yaml.safe_dump(doc).replace("hss", "probe").replace("HSS", "probe")
    vnfd = yaml.safe_load(text)
    body = vnfd["vnfd"]
    body["id"] = body["product-name"] = "probe-vnf"  # a generic component's id: no oai- prefix, not its VDU's
    body["ext-cpd"] = [c for c in body["ext-cpd"] if "mgmt" in c["id"]]
    body["vdu"][0]["int-cpd"] = [c for c in body["vdu"][0]["int-cpd"] if "mgmt" in c["id"]]
    body["vdu"][0].pop("cloud-init-file")
    config = body["df"][0]["lcm-operations-configuration"]["operate-vnf-op-config"]["day1-2"][0]
    config["id"] = body["id"]                        # its VNF-level execution environment
    config["initial-config-primitive"] = [{
        "seq": 1, "name": "config", "execution-environment-ref": "proxy-ee",
        "parameter": [{"name": "ssh-hostname", "value": "<rw_mgmt_ip>"},
                      {"name": "ssh-username", "value": "ubuntu"},
                      {"name": "osm-instance", "value": "<OSM>"}]}]   # OSM's identity for the metrics
    return vnfd


def _copy_project(dest):
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           stdout=subprocess.PIPE, check=True).stdout.decode().split("\0")
    for rel in filter(None, files):
        src = os.path.join(ROOT, rel)
        if not os.path.isfile(src):
            continue
        os.makedirs(os.path.dirname(os.path.join(dest, rel)), exist_ok=True)
        shutil.copy2(src, os.path.join(dest, rel))


def _touched(copy):
    """The files of the copy that differ from the project's or are new (before anything is built)."""
    out = []
    for folder, dirs, files in os.walk(copy):
        dirs[:] = [d for d in dirs if d not in ("__pycache__", "build")]
        for name in files:
            rel = os.path.relpath(os.path.join(folder, name), copy)
            mine = os.path.join(ROOT, rel)
            with open(os.path.join(copy, rel), "rb") as f:
                data = f.read()
            if not os.path.isfile(mine) or open(mine, "rb").read() != data:
                out.append(rel)
    return sorted(out)


def _pin(copy):
    """The pin file's lines for the additions (what a reviewer reads)."""
    path = os.path.join(copy, "tests", "pins.yaml")
    with open(path) as f:
        pins = yaml.safe_load(f)
    for name, rp in REGISTRY_ADDITIONS["reference-points"].items():
        pins["reference-points"][name] = [rp["provider"], rp["requirer"]]
    pins["vnf-packages"].append("probe")
    pins["charms"] = sorted(pins["charms"] + ["probe"])
    for variant, ns in pins["ns"].items():
        if variant.startswith(("epc", "eps")):
            ns["members"].append("probe")
            ns["tunnels"] += [rp for rp in ("x1", "x2") if ns["tunnels"]]
    with open(path, "w") as f:
        yaml.safe_dump(pins, f, sort_keys=False)


def _figures(copy):
    """docs/figures.md's counts of the build (checked against it): one charm and two VNF packages
    (the component's and its -osm10 form) more."""
    path = os.path.join(copy, "docs", "figures.md")
    with open(path) as f:
        text = f.read()
    for label, more in (("charms (`make charms`)", 1), ("VNF packages (`make packages`)", 2)):
        text = re.sub(r"(?m)^(\| {} \| )(\d+)( \|)".format(re.escape(label)),
                      lambda m, more=more: "{}{}{}".format(m.group(1), int(m.group(2)) + more, m.group(3)), text)
    with open(path, "w") as f:
        f.write(text)


def _extend(copy):
    variants = os.path.join(copy, "ns", "variants.yaml")
    with open(variants) as f:
        text = f.read()
    assert len(MEMBERS_LINE.findall(text)) == 1
    with open(variants, "w") as f:
        f.write(MEMBERS_LINE.sub(lambda m: "{}, {}]".format(m.group(1), NEW_MEMBER), text))
    path = os.path.join(copy, "charms", "vpnaas", "core", "registry.yaml")
    with open(path) as f:
        doc = yaml.safe_load(f)
    for section, entries in REGISTRY_ADDITIONS.items():
        doc[section].update(entries)
    with open(path, "w") as f:
        yaml.safe_dump(doc, f, sort_keys=False)
    for rel, text in PROBE_CHARM.items():
        os.makedirs(os.path.dirname(os.path.join(copy, rel)), exist_ok=True)
        with open(os.path.join(copy, rel), "w") as f:
            f.write(textwrap.dedent(text))
    os.makedirs(os.path.join(copy, "vnf", "probe"))
    with open(os.path.join(copy, "vnf", "probe", "probe_vnfd.yaml"), "w") as f:
        yaml.safe_dump(_probe_vnfd(), f, sort_keys=False)
    with open(os.path.join(copy, "vnf", "probe", "README.md"), "w") as f:
        f.write("# probe\n\nThe synthetic VNF of the registry extension test.\n")
    with open(os.path.join(copy, "tests", "harness", "test_probe.py"), "w") as f:
        f.write(textwrap.dedent(PROBE_TEST))


def _copy_env(copy, env=None):
    return dict(os.environ if env is None else dict(env, PATH=os.environ["PATH"]),
                PYTHONPATH=os.pathsep.join([os.path.join(copy, "scripts"), os.path.join(copy, "charms")]))


def _run(copy, *argv, rc=0, env=None):
    result = subprocess.run([sys.executable] + list(argv), cwd=copy, env=_copy_env(copy, env), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
    assert result.returncode == rc, "{}: exit {}:\n{}".format(" ".join(argv), result.returncode,
                                                               result.stdout.decode()[-4000:])
    return result.stdout.decode()


def _stand_in_charms(copy):
    """A small stand-in for each charm the copy built: the package build copies a charm's bytes
    whatever they are (tests/packages/test_packages.py checks that they are the built charm's), and
    the deflated charms would only make this build slow. Returns the folder."""
    folder = os.path.join(copy, "build", "charm-stand-ins")
    os.makedirs(folder, exist_ok=True)
    for name in os.listdir(os.path.join(copy, "build", "charms")):
        if name.endswith(".charm"):
            with zipfile.ZipFile(os.path.join(folder, name), "w") as z:
                z.writestr("metadata.yaml", "name: {}\n".format(name[:-len(".charm")]))
    return folder


@pytest.fixture(scope="module")
def extended(tmp_path_factory, charm_dependencies):
    """The extended copy, built; its dependency tree is the project's (``charm_dependencies``)."""
    copy = str(tmp_path_factory.mktemp("extended") / "project")
    _copy_project(copy)
    _extend(copy)
    _pin(copy)
    _figures(copy)
    with open(os.path.join(os.path.dirname(copy), "touched.json"), "w") as f:
        json.dump(_touched(copy), f)
    os.makedirs(os.path.join(copy, "build"))
    os.symlink(os.path.join(ROOT, "build", "venvs"), os.path.join(copy, "build", "venvs"))
    _run(copy, "-m", "bundle.build_charms")
    return copy


#: The copy's own tests that must pass there (one pytest run for all, ``copys_tests``): besides the
#: pin, figures and probe tests, those whose fixtures a reference point that ends at an OAI
#: component reaches (x1 at the SPGW-U, x2 at the HSS and the SPGW-C): every OAI component's
#: addresses from the test fixture (charms_helpers.config_for), the SPGW-U's hubs and the fake VNF
#: manager's devices when it scales, the VNFDs' generated service-address parameters and the
#: params' defaults for them, the OAI conformance's configuration of every component.
COPYS_TESTS = ("tests/unit/test_figures.py", "tests/unit/test_pins.py", "tests/harness/test_probe.py",
               "tests/charms/test_oai_addresses.py", "tests/deploy/test_scale.py",
               "tests/descriptors/test_service_address_params.py", "tests/charms/test_oai_conformance.py")


@pytest.fixture(scope="module")
def copys_tests(extended, tmp_path_factory):
    """{test file: (passed, failed)} of one pytest run in the copy over ``COPYS_TESTS`` (its own
    interpreter, its own code), read from the run's JUnit XML; "output": the run's last lines."""
    report = str(tmp_path_factory.mktemp("copys-tests") / "junit.xml")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n0", "--junitxml",
                           report] + list(COPYS_TESTS), cwd=extended, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=600, env=_copy_env(extended))
    out = {"output": proc.stdout.decode()[-4000:]}
    for case in ElementTree.parse(report).getroot().iter("testcase"):
        dotted = case.get("classname", "")      # the module's, or a test class's in it
        path = next((t for t in COPYS_TESTS if (dotted + ".").startswith(t[:-len(".py")].replace("/", ".") + ".")),
                    dotted)
        bad = any(child.tag in ("failure", "error", "skipped") for child in case)
        passed, failed = out.get(path, (0, 0))
        out[path] = (passed + (not bad), failed + bad)
    assert sorted(k for k in out if k != "output") == sorted(COPYS_TESTS), out
    return out


def _charm_yaml(copy, name, member):
    with zipfile.ZipFile(os.path.join(copy, "build", "charms", name + ".charm")) as z:
        return yaml.safe_load(z.read(member)), z.namelist()


def test_the_new_component_and_reference_point_reach_both_charms(extended):
    meta, names = _charm_yaml(extended, "probe", "metadata.yaml")
    assert meta["provides"] == {"x1": {"interface": "wireguard-x1"}}
    assert not any("oai" in n for n in names if n.startswith("lib/vpnaas/"))
    config, _ = _charm_yaml(extended, "probe", "config.yaml")
    assert config["options"]["x1-listen-port"]["default"] == 51899
    assert "empty: 10.250.99.1/30" in config["options"]["x1-tunnel-address"]["description"]
    assert "Empty: 172.31.99.0/24" in config["options"]["x1-service-network"]["description"]
    spgwu, _ = _charm_yaml(extended, "spgwu", "metadata.yaml")
    assert spgwu["requires"]["x1"] == {"interface": "wireguard-x1", "limit": 1}
    spgwu_config, _ = _charm_yaml(extended, "spgwu", "config.yaml")
    assert "empty: 10.250.99.2/30" in spgwu_config["options"]["x1-tunnel-address"]["description"]


def test_the_additions_touch_only_the_files_the_guide_names(extended, copys_tests):
    with open(os.path.join(os.path.dirname(extended), "touched.json")) as f:
        assert json.load(f) == TOUCHED
    assert "charms/probe/src/charm.py" not in TOUCHED       # a component has no code of its own
    assert len([t for t in TOUCHED if t.startswith(("charms/probe/", "vnf/probe/"))]) == 5
    passed, failed = copys_tests["tests/unit/test_figures.py"]
    assert passed and not failed, copys_tests["output"]


def test_the_reference_point_between_existing_components_reaches_their_charms(extended):
    hss, _ = _charm_yaml(extended, "hss", "metadata.yaml")
    assert hss["provides"]["x2"] == {"interface": "wireguard-x2"}
    spgwc, _ = _charm_yaml(extended, "spgwc", "metadata.yaml")
    assert spgwc["requires"]["x2"] == {"interface": "wireguard-x2", "limit": 1}
    config, _ = _charm_yaml(extended, "hss", "config.yaml")
    assert config["options"]["x2-listen-port"]["default"] == 51898
    with zipfile.ZipFile(os.path.join(extended, "build", "charms", "probe.charm")) as z:
        assert "main('probe')" in z.read("src/charm.py").decode()


def _packages(copy):
    out = os.path.join(copy, "build", "packages")
    if not os.path.exists(os.path.join(out, "catalog.json")):
        _run(copy, "-m", "bundle.packages", "--out", out, "--charms", _stand_in_charms(copy))
    return out


def _nsd(packages, nsd_id):
    with open(os.path.join(packages, nsd_id + "_ns", nsd_id + "_nsd.yaml")) as f:
        return yaml.safe_load(f)["nsd"]["nsd"][0]


def test_the_membership_line_puts_the_component_into_every_eps_ns(extended):
    """The EPS's NS packages carry the probe (its profile on the management network) and relate
    x1 and x2 from the registry; the 5G NS knows neither; the plain EPS has the member, no relation."""
    out = _packages(extended)
    eps_wg = _nsd(out, "oai-eps-wg")
    shipped = descriptors.load_bundle().nsd("oai-eps-wg").body        # the project's, without the additions
    assert eps_wg["vnfd-id"] == shipped["vnfd-id"] + ["probe-vnf"]
    probe = next(p for p in eps_wg["df"][0]["vnf-profile"] if p["id"] == "probe")
    assert probe["virtual-link-connectivity"] == [{"virtual-link-profile-id": "mgmtnet", "constituent-cpd-id": [
        {"constituent-base-element-id": "probe", "constituent-cpd-id": "probe-mgmt-ext"}]}]
    relations = {r["name"]: r for r in eps_wg["ns-configuration"]["relation"]}
    assert list(relations) == membership.of_variant("eps_wg")[1] + ["x1", "x2"]
    assert relations["x1"]["provider"]["vnf-profile-id"] == "probe"
    assert relations["x1"]["requirer"] == {"vnf-profile-id": "spgwu", "endpoint": "x1", "vdu-profile-id": "spgwu"}
    assert (relations["x2"]["provider"]["vnf-profile-id"], relations["x2"]["requirer"]["vnf-profile-id"]) == (
        "hss", "spgwc")
    osm10 = _nsd(out, "oai-eps-wg-osm10")
    assert [e["id"] for r in osm10["ns-configuration"]["relation"] if r["name"] == "x1" for e in r["entities"]] == [
        "probe", "spgwu"]
    assert "probe-vnf" in _nsd(out, "oai-eps")["vnfd-id"] and "ns-configuration" not in _nsd(out, "oai-eps")
    sa_wg = _nsd(out, "oai-sa-wg")
    assert "probe-vnf" not in sa_wg["vnfd-id"] and {"x1", "x2"}.isdisjoint(
        r["name"] for r in sa_wg["ns-configuration"]["relation"])


def test_the_pin_file_is_the_one_place_that_names_the_additions(extended, copys_tests):
    """The copy's pin test passes with the pin file's lines, and fails without them, naming the NS."""
    test = "tests/unit/test_pins.py"
    assert copys_tests[test] == (4, 0), copys_tests["output"]
    pins = os.path.join(extended, "tests", "pins.yaml")
    os.rename(pins, pins + ".reviewed")
    try:
        shutil.copyfile(os.path.join(ROOT, "tests", "pins.yaml"), pins)
        out = _run(extended, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n0", test, rc=1)
    finally:
        os.replace(pins + ".reviewed", pins)
    assert "x1" in out and "probe" in out and "2 failed" in out, out[-3000:]


def test_the_extended_bundle_validates_and_packages_the_new_vnf(extended):
    readme = os.path.join(extended, "vnf", "probe", "README.md")
    os.rename(readme, readme + ".away")
    try:
        assert "vnf/probe/README.md is missing" in _run(extended, "-m", "bundle.validate", rc=1)
    finally:
        os.rename(readme + ".away", readme)
    assert "validate: OK" in _run(extended, "-m", "bundle.validate")
    out = _packages(extended)
    with open(os.path.join(out, "catalog.json")) as f:
        catalog = json.load(f)
    assert [v["package"] for v in catalog["vnf"] if v["id"] == "probe-vnf"] == ["probe-vnf_vnf.tar.gz"]
    assert os.path.isdir(os.path.join(out, "probe-vnf_vnf"))


#: The copy's tests that a reference point ending at an OAI component reaches (``COPYS_TESTS``).
OAI_END_TESTS = COPYS_TESTS[3:]


def test_a_reference_point_that_ends_at_oai_components_is_its_registry_entry(extended, copys_tests):
    """x1 ends at the SPGW-U and x2 at the HSS and the SPGW-C, all OAI components: with no VNFD,
    params file or test fixture edited (``TOUCHED``), their VNF packages carry each end's
    service-address parameter, every EPS params file gives each end its address (the registry's
    default), and the copy's fixture-driven tests of those components pass there."""
    for test in OAI_END_TESTS:
        passed, failed = copys_tests[test]
        assert passed and not failed, (test, copys_tests["output"])
    out = _packages(extended)
    shipped = registry.load()               # the project's, without the additions
    for component, vnfd_id, added in (("spgwu", "oai-spgwu", ["x1"]), ("hss", "oai-hss", ["x2"]),
                                      ("spgwc", "oai-spgwc", ["x2"]), ("probe", "probe-vnf", ["x1"])):
        with open(os.path.join(out, vnfd_id + "_vnf", vnfd_id + "_vnfd.yaml")) as f:
            entry = descriptors.day12(yaml.safe_load(f)["vnfd"])
        config = next(p for p in entry["initial-config-primitive"] if p["name"] == "config")
        assert [p["name"][:-len("-service-addresses")] for p in config["parameter"]
                if p["name"].endswith("-service-addresses")] == [
                    rp.name for rp in shipped.endpoints_of(component)] + added, vnfd_id
    rendered = yaml.safe_load(_run(extended, "-m", "bundle.params", "params/eps_wg.yaml",
                                   env={"MGMT_NETWORK": "mgmt", "LTE_K": "0" * 32, "LTE_OP": "1" * 32}))
    given = {i["member-vnf-index"]: i["additionalParams"] for i in rendered["additionalParamsForVnf"]}
    assert (given["spgwu"]["x1_service_addresses"], given["hss"]["x2_service_addresses"],
            given["spgwc"]["x2_service_addresses"]) == ("172.31.99.129/32", "172.31.98.1/32", "172.31.98.129/32")
    plan = {i["member-vnf-index"]: i["additionalParams"]
            for i in params.load(os.path.join(ROOT, "params", "eps_wg.yaml"))["additionalParamsForVnf"]}
    assert given["spgwu"]["s1u_service_addresses"] == plan["spgwu"]["s1u_service_addresses"]   # the file's plan


def test_the_new_components_own_test_passes_in_the_copy(copys_tests):
    """The probe's own test, written as a component's author would, runs in the copy unchanged."""
    assert copys_tests["tests/harness/test_probe.py"] == (2, 0), copys_tests["output"]


#: What each reader of the registry makes of it in the copy: the copy's own modules, run there.
READERS = """
import json
from bundle import charmspec, descriptors
from deploy import microstack, measure
from testbed.emulators import nsmodel
from vpnaas.core import refpoints
from vpnaas.core import registry
reg = registry.load()
print(json.dumps({
    "components": sorted(reg.components), "shipped modules": sorted(reg.shipped_modules("probe")),
    "charms": charmspec.charm_names(), "vnfs": list(descriptors.VNF_NAMES),
    "x1": list(refpoints.REFERENCE_POINTS["x1"]), "x1 device": refpoints.device_name("x1"),
    "testbed ends": list(nsmodel.PROVIDERS["x1"]),
}))
"""


def test_every_reader_of_the_registry_takes_the_new_entries_up(extended):
    """The registry's readers (the charm build, the descriptors, the deploy tool, the testbed),
    with no change of theirs, give the new component and reference point their place; the deploy
    tool's dry run over the extended packages opens x1's port in the security group."""
    seen = json.loads(_run(extended, "-c", READERS).strip().splitlines()[-1])
    assert "probe" in seen["components"] and "probe" in seen["charms"] and "probe" in seen["vnfs"]
    assert not any(m.startswith("oai") for m in seen["shipped modules"])
    assert seen["x1"][0] == 51899 and seen["x1 device"] == "wg-x1"
    assert seen["testbed ends"] == ["probe", "spgwu"]
    catalog = os.path.join(_packages(extended), "catalog.json")
    env_file = os.path.join(extended, "none.env")
    open(env_file, "w").close()
    env = {"DEPLOY_ROOT": extended, "DEPLOY_ENV": env_file, "DRY_RUN": "1", "OSM_HOSTNAME": "10.0.0.5",
           "OS_AUTH_URL": "https://10.20.20.1:5000/v3/", "OS_USERNAME": "admin", "OS_PASSWORD": "s3cret-keystone",
           "OS_PROJECT_NAME": "admin", "IMAGE": "/images/bionic-server-cloudimg-amd64.img",
           "LTE_K": "8baf473f2f8fd09487cccbd7097c6862", "LTE_OP": "11111111111111111111111111111111",
           "OSM_CLI": "osm", "OPENSTACK_CLI": "openstack"}
    out = _run(extended, "-m", "deploy", "--catalog", catalog, "deploy", "--ns", "eps_wg", env=env)
    rules = [line for line in out.splitlines() if "rule create" in line and "udp" in line]
    # The shipped bundle's listen ports end at 51830: the WireGuard rule now reaches x1's.
    assert [line for line in rules if "51820:51899" in line], rules
