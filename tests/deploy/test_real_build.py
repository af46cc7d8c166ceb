"""The dry-run flows against the REAL packages, built by the bundle's own package build
(bundle.packages.build, what `make packages` runs) into a temporary folder once per session."""

import io
import os
import sys

import pytest
import yaml
from deploy_helpers import ROOT, Printed, base_env, no_subprocess

from bundle import membership
from deploy.catalog import Catalog
from deploy.cli import main
from vpnaas.core import registry


@pytest.fixture(scope="session")
def real_catalog(shipped_packages):
    # What `make packages` builds (after `make charms`), shared with tests/packages (tests/conftest.py).
    out, _catalog = shipped_packages
    return os.path.join(out, "catalog.json")


def _dry(catalog, *argv, env_dir, **extra):
    """The deploy tool's dry run over ``catalog``; its empty env file is made in ``env_dir``, never
    beside the packages (the tests' kept build, tests/kept_builds.py, which nothing may change)."""
    out, err = io.StringIO(), io.StringIO()
    old, sys.stderr = sys.stderr, err
    env = base_env(str(env_dir), DRY_RUN="1", **extra)
    env["DEPLOY_ROOT"] = ROOT
    try:
        code = main(["--catalog", catalog] + list(argv), environ=env, out=out, execute=no_subprocess)
    finally:
        sys.stderr = old
    return code, Printed(out.getvalue()), err.getvalue()


def _named_files(printed):
    named = []
    for argv in printed.runs("osm"):
        if argv[1] in ("nfpkg-create", "nspkg-create", "nst-create"):
            named.append(argv[2])
        if "--config_file" in argv:
            named.append(argv[argv.index("--config_file") + 1])
    return named


@pytest.mark.parametrize(
    "variant", ["eps_wg", "eps_wg_multisite", "eps_wg_2x_osm10", "epc", "slices", "embb", "sa_wg", "sa",
                "sa_wg_osm10", "sa_slices"]
)
def test_real_variant_dry_run(real_catalog, variant, tmp_path):
    code, printed, err = _dry(real_catalog, "deploy", "--ns", variant, env_dir=tmp_path)
    assert code == 0, err
    cat = Catalog.load(ROOT, real_catalog)
    v = cat.variant(variant)
    named = _named_files(printed)
    for path in named:
        full = path if os.path.isabs(path) else os.path.join(ROOT, path)
        assert os.path.isfile(full), path
    # every package of the variant is onboarded, VNFs first, then NSs, then NSTs
    onboarded = [a[2] for a in printed.runs("osm") if a[1] in ("nfpkg-create", "nspkg-create", "nst-create")]
    assert sorted(onboarded) == sorted(v.packages)
    kinds = [a[1] for a in printed.runs("osm") if a[1] in ("nfpkg-create", "nspkg-create", "nst-create")]
    assert kinds == sorted(kinds, key=["nfpkg-create", "nspkg-create", "nst-create"].index)
    # the instance is created from the catalog's descriptor id(s), with the rendered params
    create = printed.runs("osm", "ns-create" if v.kind == "ns" else "nsi-create")
    flag = "--nsd_name" if v.kind == "ns" else "--nst_name"
    assert [a[a.index(flag) + 1] for a in create] == v.descriptor_ids
    rendered = yaml.safe_load(open(os.path.join(ROOT, create[0][create[0].index("--config_file") + 1])))
    assert isinstance(rendered, dict)
    # the tunnel wait asks exactly the members the NSD relates (none for the plain variants)
    members = {
        a[a.index("--vnf_name") + 1]
        for a in printed.reads("osm", "ns-action")
        if a[a.index("--action_name") + 1] == "tunnel-status"
    }
    rps = registry.load().reference_points
    assert members == {end for rp in membership.of_variant(variant)[1] for end in (rps[rp].provider, rps[rp].requirer)}


def test_real_multisite_uses_second_vim(real_catalog, tmp_path):
    code, printed, err = _dry(real_catalog, "deploy", "--ns", "eps_wg_multisite", env_dir=tmp_path)
    assert code == 0, err
    assert [a[a.index("--name") + 1] for a in printed.runs("osm", "vim-create")] == [
        "microstack",
        "microstack-site2",
    ]
    rendered = yaml.safe_load(open(os.path.join(ROOT, "build/deploy/eps_wg_multisite.params.yaml")))
    hss = [v for v in rendered["vnf"] if v["member-vnf-index"] == "hss"][0]
    assert hss["vim_account"] == "microstack-site2"


def test_real_flavors_double_resources(real_catalog, tmp_path):
    code, printed, err = _dry(real_catalog, "deploy", "--ns", "eps_wg_2x", env_dir=tmp_path)
    assert code == 0, err
    hss = [a for a in printed.runs("openstack", "flavor", "create") if "hss" in a[-1]][0]
    # thesis Table 4.4: HSS 8 vCPU / 16 GB / 20 GB
    assert hss[hss.index("--vcpus") + 1] == "8" and hss[hss.index("--ram") + 1] == "16384"


def test_real_5g_standalone_dry_run_uploads_the_2204_image_and_runs_the_nrue(real_catalog, tmp_path):
    """NS=sa_wg: the 5G VNFDs' Ubuntu 22.04 image (only that one), the five VNFs onboarded, the
    secrets of its params never printed, and the UE steps with the gNB, the AMF and the UPF's N6."""
    from deploy_helpers import SECRET_DB, SECRET_NR_K, SECRET_NR_OP

    code, printed, err = _dry(real_catalog, "deploy", "--ns", "sa_wg", env_dir=tmp_path)
    assert code == 0, err
    created = [a[-1] for a in printed.runs("openstack", "image", "create")]
    assert created == ["ubuntu22.04"]
    assert "ubuntu-22.04-server-cloudimg-amd64.img" in printed.text
    for secret in (SECRET_NR_K, SECRET_NR_OP, SECRET_DB):
        assert secret not in printed.text and secret not in err
    ue = [a for a in printed.reads("osm", "ns-action") if a[a.index("--action_name") + 1] != "tunnel-status"]
    assert [(a[a.index("--vnf_name") + 1], a[a.index("--action_name") + 1]) for a in ue] == [
        ("upf", "run"), ("gnb", "ue-attach"), ("amf", "run"), ("gnb", "ue-iperf")]
    assert "iperf3 -s -B 10.254.2.203 -1 -D" in ue[0][ue[0].index("--params") + 1]
    rendered = yaml.safe_load(open(os.path.join(ROOT, "build/deploy/sa_wg.params.yaml")))
    mysql = [v for v in rendered["additionalParamsForVnf"] if v["member-vnf-index"] == "mysql"][0]
    assert mysql["additionalParams"]["db_password"] == SECRET_DB
