"""The offline charm build: what OSM deploys on its Ubuntu 18.04 / Python 3.6 proxy machine."""
import hashlib
import os
import re
import zipfile

import pytest
import yaml

from bundle import build_charms, charmspec


@pytest.fixture(scope="module")
def built(shipped_charms):
    return shipped_charms


def test_every_charm_is_built_with_all_juju_needs(built):
    assert sorted(built) == charmspec.charm_names()
    for name, path in built.items():
        with zipfile.ZipFile(path) as z:
            names = set(z.namelist())
            for required in ("metadata.yaml", "config.yaml", "actions.yaml", "manifest.yaml", "dispatch",
                             "src/charm.py", "lib/vpnaas/charm_base.py", "venv/ops/main.py", "venv/paramiko/client.py"):
                assert required in names, (name, required)
            meta = yaml.safe_load(z.read("metadata.yaml"))
            # only the series whose Python the wheels are built for; no key-sharing peer relation
            assert meta["name"] == name and meta["series"] == ["bionic"] and "peers" not in meta
            manifest = yaml.safe_load(z.read("manifest.yaml"))
            assert manifest["bases"][0]["channel"] == "18.04"
            assert (z.getinfo("dispatch").external_attr >> 16) & 0o111, "dispatch not executable"
            assert not any(n.startswith(("build/", "/")) or ".." in n for n in names)


def test_binary_wheels_are_for_python_3_6_only(built):
    with zipfile.ZipFile(built["hss"]) as z:
        shared = [n for n in z.namelist() if n.endswith(".so")]
    assert shared, "no compiled modules found at all"
    for name in shared:
        assert re.search(r"(cpython-36m|abi3)", name), name


def _sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def test_build_is_byte_for_byte_reproducible(built, tmp_path):
    # Two charms are enough to prove the packing deterministic (every charm shares the same code
    # path), built alone: a charm's bytes do not depend on which others the same build makes.
    names = ["wireguard-proxy", "hss"]
    again = build_charms.build_all("ubuntu@18.04", names, out_dir=str(tmp_path))
    assert {n: _sha(p) for n, p in again.items()} == {n: _sha(built[n]) for n in names}


def test_every_file_of_the_charm_directory_is_in_its_zip_and_nothing_else(built):
    for name, path in built.items():
        folder = path[:-len(".charm")]
        files = sorted(os.path.relpath(os.path.join(root, f), folder).replace(os.sep, "/")
                       for root, _dirs, names in os.walk(folder) for f in names
                       if not f.endswith(".pyc") and not set(root.split(os.sep)) & build_charms.EXCLUDE)
        with zipfile.ZipFile(path) as z:
            assert z.testzip() is None, name
            assert sorted(z.namelist()) == files, name
            for member in ("metadata.yaml", "venv/ops/main.py", "dataplane/manifest.json"):
                with open(os.path.join(folder, member), "rb") as f:
                    assert z.read(member) == f.read(), (name, member)


def test_a_charm_packed_alone_is_the_charm_packed_with_the_shared_trees_of_its_build(built, tmp_path):
    # build_all deflates the trees every charm shares once (build_charms.SHARED_TREES); the bytes
    # are those of a charm packed on its own.
    folder = built["hss"][:-len(".charm")]
    alone = str(tmp_path / "hss.charm")
    build_charms.pack(folder, alone)
    assert _sha(alone) == _sha(built["hss"])


def test_unknown_base_is_refused():
    with pytest.raises(build_charms.BuildError, match="unknown base"):
        build_charms.build_all("ubuntu@12.04")


def test_a_shipped_module_that_imports_a_module_the_charm_does_not_carry_fails_the_build(tmp_path):
    src, target = tmp_path / "src", tmp_path / "target"
    src.mkdir()
    target.mkdir()
    (src / "core.py").write_text("from vpnaas import SCHEMA_VERSION, own\nimport vpnaas.other\n")
    (src / "own.py").write_text("")
    (src / "other.py").write_text("")
    (src / "foreign.py").write_text("")
    (target / "core.py").write_text((src / "core.py").read_text())
    (target / "own.py").write_text("from vpnaas.foreign import X\n")
    assert build_charms.missing_imports(str(src), str(target)) == [
        "core imports other, which it does not ship", "own imports foreign, which it does not ship"]

