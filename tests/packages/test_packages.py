"""make packages: every package builds as OSM expects, reproducibly, with a complete catalog."""

import gzip
import hashlib
import io
import json
import os
import tarfile
import zipfile

import pytest

from bundle import ROOT, descriptors, packages


@pytest.fixture(scope="session")
def charms_dir(shipped_charms):
    return os.path.dirname(next(iter(shipped_charms.values())))


@pytest.fixture(scope="session")
def built(shipped_packages):
    return shipped_packages


def _sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _tars(out):
    return sorted(f for f in os.listdir(out) if f.endswith(".tar.gz"))


def test_every_package_is_built(built):
    out, catalog = built
    bundle = descriptors.load_bundle()
    assert _tars(out) == sorted(d.package + ".tar.gz" for d in bundle.vnfs + bundle.nss)
    assert sorted(f for f in os.listdir(out) if f.endswith("_nst.yaml")) == sorted(
        d.package for d in bundle.nsts
    )


def test_package_layout(built, charms_dir):
    out, _ = built
    for name in _tars(out):
        folder = name[: -len(".tar.gz")]
        with tarfile.open(fileobj=_gunzipped(os.path.join(out, name)), mode="r:") as tar:
            members = tar.getmembers()
            names = [m.name for m in members]
            assert {n.split("/")[0] for n in names} == {folder}, name
            assert not any(n.startswith("/") or ".." in n.split("/") for n in names)
            top_level = [n for n in names if n.count("/") == 1 and n.endswith((".yaml", ".yml", ".json"))]
            assert len(top_level) == 1, (name, top_level)
            assert top_level[0].endswith("_vnfd.yaml" if folder.endswith("_vnf") else "_nsd.yaml")
            assert all(m.mtime == packages.MTIME and m.uid == 0 and m.gid == 0 for m in members)
            if folder.endswith("_vnf"):
                vnfd = descriptors.load_yaml_text(tar.extractfile(top_level[0]).read().decode())["vnfd"]
                charm = descriptors.charm_of(vnfd)
                assert folder + "/charms/" + charm in names
                packed = hashlib.sha256(tar.extractfile(folder + "/charms/" + charm).read()).hexdigest()
                assert packed == _sha(os.path.join(charms_dir, charm)), (name, "not the built charm")
                for cif in descriptors.cloud_init_files(vnfd):
                    assert folder + "/cloud_init/" + cif in names
                # OSM 14+ reads the scrape job from <package>/exporter-endpoint/ (docs/metrics.md).
                job = folder + "/exporter-endpoint/prometheus.j2"
                assert (job in names) == ("exporters-endpoints" in vnfd["df"][0]), name
            _check_checksums(tar, folder, names)


def _gunzipped(path):
    """The tar inside a .tar.gz, decompressed once: tarfile reading a gzip stream decompresses
    it again from its start for every member read out of order (a 9 MB charm several times)."""
    with open(path, "rb") as f:
        return io.BytesIO(gzip.decompress(f.read()))


def _check_checksums(tar, folder, names):
    text = tar.extractfile(folder + "/checksums.txt").read().decode()
    listed = {}
    for line in text.splitlines():
        digest, path = line.split("\t")
        listed[path] = digest
    files = [n for n in names if tar.getmember(n).isfile() and n != folder + "/checksums.txt"]
    assert sorted(listed) == sorted(files)
    for path, digest in listed.items():
        assert hashlib.md5(tar.extractfile(path).read()).hexdigest() == digest, path  # noqa: S324


def _stand_in_charms(folder, charms_dir, when):
    """A small stand-in for each built charm (the same bytes each time), written now with the
    mtime ``when``: the package build copies a charm's bytes whatever they are (test_package_layout
    checks that they are the built charm's), and 9 MB of deflated charm per VNF package would only
    make this second build slow, not prove more."""
    os.makedirs(folder)
    for name in sorted(os.listdir(charms_dir)):
        if name.endswith(".charm"):
            path = os.path.join(folder, name)
            with zipfile.ZipFile(path, "w") as z:
                z.writestr(zipfile.ZipInfo("metadata.yaml", (1980, 1, 1, 0, 0, 0)),
                           "name: {}\n".format(name[:-len(".charm")]))
            os.utime(path, (when, when))
    return folder


def test_two_builds_are_identical(tmp_path, charms_dir):
    """Every package and the catalog, built twice from the same sources (charms written at other
    times, under another umask): the same bytes."""
    first, again = str(tmp_path / "first"), str(tmp_path / "again")
    packages.build(first, _stand_in_charms(str(tmp_path / "c1"), charms_dir, 1e9))
    old = os.umask(0o077)
    try:
        packages.build(again, _stand_in_charms(str(tmp_path / "c2"), charms_dir, 2e9))
    finally:
        os.umask(old)
    assert _tars(again) == _tars(first) and len(_tars(first)) > 20
    for name in _tars(first) + ["catalog.json"]:
        assert _sha(os.path.join(first, name)) == _sha(os.path.join(again, name)), name


def test_catalog_is_complete_and_every_path_exists(built):
    out, catalog = built
    with open(os.path.join(out, "catalog.json")) as f:
        assert json.load(f) == catalog
    base = ["epc", "eps", "eps_wg", "eps_wg_multisite", "eps_wg_2x", "sa", "sa_wg"]
    slices = ["embb", "urllc", "slices", "sa_embb", "sa_urllc", "sa_slices"]
    assert set(catalog["variants"]) == set(base + slices + [b + "_osm10" for b in base + slices])
    ids = {e["id"]: e for e in catalog["vnf"] + catalog["ns"] + catalog["nst"]}
    for entry in catalog["vnf"] + catalog["ns"]:
        assert os.path.isfile(os.path.join(out, entry["package"]))
        assert os.path.isfile(os.path.join(ROOT, entry["source"]))
    for entry in catalog["nst"]:
        assert os.path.isfile(os.path.join(out, entry["file"]))
        assert all(ref in ids for ref in entry["nsd_refs"])
    for entry in catalog["ns"]:
        assert all(v in ids for v in entry["vnfd_ids"])
    for key, v in catalog["variants"].items():
        assert v["kind"] == ("nsi" if key.split("_osm10")[0] in slices else "ns")
        assert v["descriptor_id"] in ids and os.path.isfile(os.path.join(ROOT, v["params"]))
        for path in v["packages"]:
            assert os.path.isfile(os.path.join(out, path)), (key, path)
        kinds = [
            ("vnf" if p.endswith("_vnf.tar.gz") else "ns" if p.endswith("_ns.tar.gz") else "nst")
            for p in v["packages"]
        ]
        assert kinds == sorted(kinds, key=["vnf", "ns", "nst"].index), key  # onboarding order
    assert catalog["variants"]["slices"]["descriptor_ids"] == ["oai-eps-wg-embb", "oai-eps-wg-urllc"]
    assert catalog["variants"]["eps_wg_2x"]["packages"][0] == "oai-hss-2x_vnf.tar.gz"


def test_missing_charm_says_run_make_charms_and_changes_nothing(built, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("old")
    with pytest.raises(
        packages.PackageError, match=r"build/charms-none/hss.charm not found: run make charms"
    ):
        packages.build(str(out), os.path.join(ROOT, "build", "charms-none"))
    assert os.listdir(out) == ["keep.txt"]


def test_invalid_descriptor_builds_nothing(tmp_path, charms_dir):
    bundle = descriptors.load_bundle()
    bundle.vnfd("oai-mme").body["mgmt-cp"] = "nope"
    out = tmp_path / "out"
    with pytest.raises(packages.PackageError, match=r"vnf/mme/mme_vnfd.yaml: vnfd.mgmt-cp: mgmt-cp='nope'"):
        packages.build(str(out), charms_dir, bundle=bundle)
    assert not out.exists()
