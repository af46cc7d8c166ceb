"""The offline charm build: what OSM deploys on its Ubuntu 18.04 / Python 3.6 proxy machine."""
import hashlib
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


def test_build_is_byte_for_byte_reproducible(built):
    # Two charms are enough to prove the packing deterministic (all six share the same code path).
    names = ["wireguard-proxy", "hss"]
    first = {n: hashlib.sha256(open(built[n], "rb").read()).hexdigest() for n in names}
    again = build_charms.build_all("ubuntu@18.04", names)
    assert {n: hashlib.sha256(open(p, "rb").read()).hexdigest() for n, p in again.items()} == first


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

