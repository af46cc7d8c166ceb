"""Adding a component and a reference point is a registry entry, the component's own folders and
its tests (docs/architecture.md). Proved in a temporary copy of the project: a synthetic
component ``probe`` with a VNF package, and a reference point ``x1`` it provides to the SPGW-U,
are added exactly that way; then the copy's own build, validator, package build and the new
component's tests run, and the results carry the new facts everywhere the registry feeds."""
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
    "charms/probe/src/charm.py": """\
        #!/usr/bin/env python3
        from vpnaas.charm_base import VpnaasCharm, main


        class ProbeCharm(VpnaasCharm):
            pass


        if __name__ == "__main__":
            main(ProbeCharm)
        """,
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


def _run(copy, *argv, rc=0):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(copy, "scripts"), os.path.join(copy, "charms")]))
    result = subprocess.run([sys.executable] + list(argv), cwd=copy, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
    assert result.returncode == rc, "{}: exit {}:\n{}".format(" ".join(argv), result.returncode,
                                                               result.stdout.decode()[-4000:])
    return result.stdout.decode()


@pytest.fixture(scope="module")
def extended(tmp_path_factory, shipped_charms):
    """The extended copy, built; its dependency tree is the project's (``shipped_charms`` made it)."""
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
    _run(extended, "-m", "bundle.packages", "--out", out)
    with open(os.path.join(out, "catalog.json")) as f:
        catalog = json.load(f)
    assert "oai-probe" in json.dumps(catalog["vnf"])
    assert os.path.isdir(os.path.join(out, "oai-probe_vnf")) or any(
        n.startswith("oai-probe_vnf") for n in os.listdir(out))


#: The one test that pins the shipped bundle's own registry content (it must differ in the copy).
PINS_THE_EPS = "tests/unit/test_registry.py::test_the_bundle_registry_holds_the_eps_and_the_5g_standalone_network"


def test_the_new_components_tests_and_every_registry_reader_pass_in_the_copy(extended):
    """The probe's own test, and the existing tests of everything that reads the registry
    (descriptors, deploy, registry), unchanged: adding a component edits no other test."""
    out = _run(extended, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n0", "--deselect", PINS_THE_EPS,
               "tests/harness/test_probe.py", "tests/unit/test_registry.py", "tests/descriptors", "tests/deploy")
    summary = out.strip().splitlines()[-1]
    passed = re.search(r"(\d+) passed", summary)
    assert passed and "failed" not in summary and "error" not in summary, out[-3000:]
    assert int(passed.group(1)) > 100, summary  # the readers' tests ran, not only the probe's
