"""Adding a component and a reference point is a registry entry, the component's own folders and
its tests (docs/architecture.md). Proved in a temporary copy of the project: a synthetic
component ``probe`` with a VNF package, and a reference point ``x1`` it provides to the SPGW-U,
are added exactly that way; then the copy's own build, validator, package build, deploy tool
and the new component's own test run there, and their outputs carry the new facts everywhere the
registry feeds (the charms, the package catalog, the deploy tool's security group, the testbed's
ends of each reference point)."""
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import zipfile

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
#: One worker runs this module: its module-scoped fixture is built once (tests/conftest.py).
pytestmark = pytest.mark.xdist_group("registry-extension")

REGISTRY_ADDITIONS = {
    "reference-points": {
        "x1": {"provider": "probe", "requirer": "spgwu", "listen-port": 51899, "tunnel-network": "10.250.99.0/30",
               "service-network": "172.31.99.0/24", "carries": "a synthetic test interface"},
    },
    "components": {"probe": {"workload": "generic", "modules": [], "vnfd": "vnf/probe/probe_vnfd.yaml"}},
}

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
        from vpnaas import ssh

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
    body["ext-cpd"] = [c for c in body["ext-cpd"] if "mgmt" in c["id"]]
    body["vdu"][0]["int-cpd"] = [c for c in body["vdu"][0]["int-cpd"] if "mgmt" in c["id"]]
    body["vdu"][0].pop("cloud-init-file")
    config = body["df"][0]["lcm-operations-configuration"]["operate-vnf-op-config"]["day1-2"][0]
    config["initial-config-primitive"] = [{
        "seq": 1, "name": "config", "execution-environment-ref": "proxy-ee",
        "parameter": [{"name": "ssh-hostname", "value": "<rw_mgmt_ip>"},
                      {"name": "ssh-username", "value": "ubuntu"},
                      {"name": "osm-instance", "value": "<OSM>"},   # OSM's identity for the metrics
                      {"name": "x1-service-addresses", "value": "<x1_service_addresses>"}]}]
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


def _extend(copy):
    path = os.path.join(copy, "charms", "vpnaas", "registry.yaml")
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


def _run(copy, *argv, rc=0, env=None):
    env = dict(os.environ if env is None else dict(env, PATH=os.environ["PATH"]),
               PYTHONPATH=os.pathsep.join([os.path.join(copy, "scripts"), os.path.join(copy, "charms")]))
    result = subprocess.run([sys.executable] + list(argv), cwd=copy, env=env, stdin=subprocess.DEVNULL,
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
    os.makedirs(os.path.join(copy, "build"))
    os.symlink(os.path.join(ROOT, "build", "venvs"), os.path.join(copy, "build", "venvs"))
    _run(copy, "-m", "bundle.build_charms")
    return copy


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


def test_the_extended_bundle_validates_and_packages_the_new_vnf(extended):
    readme = os.path.join(extended, "vnf", "probe", "README.md")
    os.rename(readme, readme + ".away")
    try:
        assert "vnf/probe/README.md is missing" in _run(extended, "-m", "bundle.validate", rc=1)
    finally:
        os.rename(readme + ".away", readme)
    assert "validate: OK" in _run(extended, "-m", "bundle.validate")
    out = os.path.join(extended, "build", "packages")
    _run(extended, "-m", "bundle.packages", "--out", out, "--charms", _stand_in_charms(extended))
    with open(os.path.join(out, "catalog.json")) as f:
        catalog = json.load(f)
    assert "oai-probe" in json.dumps(catalog["vnf"])
    assert os.path.isdir(os.path.join(out, "oai-probe_vnf")) or any(
        n.startswith("oai-probe_vnf") for n in os.listdir(out))


def test_the_new_components_own_test_passes_in_the_copy(extended):
    """The probe's own test, written as a component's author would, runs in the copy unchanged."""
    out = _run(extended, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n0", "tests/harness/test_probe.py")
    assert re.search(r"\b2 passed\b", out.strip().splitlines()[-1]), out[-3000:]


#: What each reader of the registry makes of it in the copy: the copy's own modules, run there.
READERS = """
import json
from bundle import charmspec, descriptors
from deploy import microstack, measure
from testbed import nsmodel
from vpnaas import refpoints, registry
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
    catalog = os.path.join(extended, "build", "packages", "catalog.json")
    if not os.path.exists(catalog):
        _run(extended, "-m", "bundle.packages", "--out", os.path.dirname(catalog), "--charms",
             _stand_in_charms(extended))
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
