"""DRY_RUN=1 of every flow: the exact osm/openstack commands, in order, with files that exist."""

import os
import stat

import pytest
import yaml
from deploy_helpers import SECRET_K, SECRET_OP, VNFS

from vpnaas.core import refpoints, rotation


def _assert_files_exist(root, printed):
    """Every package file and params file a printed command names exists in the build."""
    named = []
    for argv in printed.runs("osm"):
        if argv[1] in ("nfpkg-create", "nspkg-create", "nst-create"):
            named.append(argv[2])
        if argv[1] in ("nfpkg-update", "nspkg-update", "nst-update"):
            named.append(argv[argv.index("--content") + 1])
        if "--config_file" in argv:
            named.append(argv[argv.index("--config_file") + 1])
    assert named
    for rel in named:
        assert not os.path.isabs(rel)
        assert os.path.isfile(os.path.join(root, rel)), rel
    return named


def _no_secrets(printed, err=""):
    for secret in (SECRET_K, SECRET_OP, "s3cret-keystone", "s3cret-site2"):
        assert secret not in printed.text and secret not in err


def test_single_site(dry_run, fake_root):
    code, printed, err = dry_run("deploy", "--ns", "eps_wg")
    assert code == 0, err
    _no_secrets(printed, err)
    # MicroStack: the image from IMAGE, one flavor per VNF from the VNFD, network, rules
    assert printed.runs("openstack", "image", "create") == [
        [
            "openstack",
            "image",
            "create",
            "--file",
            "/images/bionic-server-cloudimg-amd64.img",
            "--disk-format",
            "qcow2",
            "--container-format",
            "bare",
            "--public",
            "ubuntu18.04",
        ]
    ]
    flavors = {
        a[-1]: a[a.index("--vcpus") + 1 : a.index("--vcpus") + 6 : 2]
        for a in printed.runs("openstack", "flavor")
    }
    assert flavors == {"vpnaas." + i: [str(c), str(r * 1024), str(d)] for _, i, c, r, d in VNFS}
    assert ["openstack", "network", "create", "test"] in printed.runs("openstack", "network")
    rules = printed.runs("openstack", "security", "group", "rule", "create")
    ports = {
        (a[a.index("--protocol") + 1], a[a.index("--dst-port") + 1] if "--dst-port" in a else None)
        for a in rules
    }
    wireguard = "{}:{}".format(refpoints.GENERIC_PORT, max(p for p, _, _ in refpoints.REFERENCE_POINTS.values()))
    assert ("udp", wireguard) in ports and ("tcp", "22:22") in ports
    # rotate-keys runs a temporary device on the rotation port (rotation.py) while the key changes.
    second = "{}:{}".format(*(int(p) + rotation.PORT_OFFSET for p in wireguard.split(":")))
    assert ("udp", second) in ports
    # every create is preceded by its existence read
    assert printed.reads("openstack", "flavor", "show", "vpnaas.oai-hss", "-f", "json")
    assert printed.reads("osm", "vim-show", "microstack")
    vim = printed.runs("osm", "vim-create")
    assert len(vim) == 1
    v = vim[0]
    assert v[v.index("--name") + 1] == "microstack" and v[v.index("--account_type") + 1] == "openstack"
    assert v[v.index("--password") + 1] == "******"
    assert yaml.safe_load(v[v.index("--config") + 1]) == {"use_floating_ip": True, "insecure": True}
    # onboarding: VNFs before the NS; then instantiation with the rendered params
    osm_runs = [a[1] for a in printed.runs("osm")]
    assert osm_runs == ["vim-create"] + ["nfpkg-create"] * 5 + ["nspkg-create", "ns-create"]
    create = printed.runs("osm", "ns-create")[0]
    assert create == [
        "osm",
        "ns-create",
        "--ns_name",
        "vpnaas-eps_wg",
        "--nsd_name",
        "oai-eps-wg",
        "--vim_account",
        "microstack",
        "--config_file",
        "build/deploy/eps_wg.params.yaml",
    ]
    named = _assert_files_exist(fake_root, printed)
    assert "build/packages/oai-eps-wg_ns.tar.gz" in named
    params = os.path.join(fake_root, "build/deploy/eps_wg.params.yaml")
    assert stat.S_IMODE(os.stat(params).st_mode) == 0o600
    rendered = yaml.safe_load(open(params))
    assert rendered["additionalParamsForVnf"][0]["additionalParams"]["lte_k"] == SECRET_K
    assert rendered["vld"][0]["vim-network-name"] == "test"
    # waiting: ns-show polled, tunnel-status on every member that has a tunnel, read back by ns-op-show
    assert printed.reads("osm", "ns-show", "vpnaas-eps_wg", "--literal")
    actions = printed.reads("osm", "ns-action")
    assert all(a[-1] == "--wait" for a in actions)
    status = [a for a in actions if a[a.index("--action_name") + 1] == "tunnel-status"]
    assert sorted(a[a.index("--vnf_name") + 1] for a in status) == sorted(m for m, *_ in VNFS)
    assert len(printed.reads("osm", "ns-op-show")) == len(actions)
    # then the UE (deploy/ue.py), which ends the deploy
    assert "step 10/10" in printed.text


def test_multi_site_prepares_both_sites_and_maps_vims(dry_run, fake_root):
    code, printed, err = dry_run("deploy", "--ns", "eps_wg_multisite")
    assert code == 0, err
    _no_secrets(printed, err)
    images = printed.runs("openstack", "image", "create")
    assert len(images) == 2
    site2 = [a for a in images if a[0] == "env"]
    assert len(site2) == 1 and "OS_AUTH_URL=https://10.30.30.1:5000/v3/" in site2[0]
    assert "OS_PASSWORD=******" in site2[0]
    vims = printed.runs("osm", "vim-create")
    assert [v[v.index("--name") + 1] for v in vims] == ["microstack", "microstack-site2"]
    assert vims[1][vims[1].index("--auth_url") + 1] == "https://10.30.30.1:5000/v3/"
    create = printed.runs("osm", "ns-create")[0]
    assert create[create.index("--vim_account") + 1] == "microstack"
    assert create[create.index("--nsd_name") + 1] == "oai-eps-wg-multisite"
    _assert_files_exist(fake_root, printed)
    rendered = yaml.safe_load(open(os.path.join(fake_root, "build/deploy/eps_wg_multisite.params.yaml")))
    placement = {v["member-vnf-index"]: v["vim_account"] for v in rendered["vnf"]}
    assert placement == {
        "hss": "microstack-site2",
        "mme": "microstack",
        "spgwc": "microstack",
        "spgwu": "microstack",
        "enb": "microstack",
    }
    assert "Multi-site" in printed.text


def test_custom_site2_name_flows_into_params_and_vims(dry_run, fake_root):
    code, printed, err = dry_run("deploy", "--ns", "eps_wg_multisite", VIM_ACCOUNT_SITE2="a2ntnu_microstack")
    assert code == 0, err
    assert [v[v.index("--name") + 1] for v in printed.runs("osm", "vim-create")] == [
        "microstack",
        "a2ntnu_microstack",
    ]


def test_nsi_two_slices(dry_run, fake_root):
    code, printed, err = dry_run("deploy", "--ns", "slices")
    assert code == 0, err
    order = [(a[1], a[2]) for a in printed.runs("osm") if a[1].endswith("-create") and a[1] != "vim-create"]
    kinds = [k for k, _ in order]
    assert kinds == ["nfpkg-create"] * 5 + [
        "nspkg-create",
        "nst-create",
        "nst-create",
        "nsi-create",
        "nsi-create",
    ]
    assert order[6][1] == "build/packages/embb_nst.yaml" and order[7][1] == "build/packages/urllc_nst.yaml"
    nsis = printed.runs("osm", "nsi-create")
    assert nsis[0] == [
        "osm",
        "nsi-create",
        "--nsi_name",
        "vpnaas-slices-embb",
        "--nst_name",
        "embb",
        "--vim_account",
        "microstack",
        "--config_file",
        "build/deploy/slices.0.params.yaml",
    ]
    assert nsis[1][nsis[1].index("--nst_name") + 1] == "urllc"
    # each NSI's config carries its own NST's 5QI (bundle.params.with_slice_5qi)
    for nsi, five_qi in zip(nsis, (6, 3)):
        with open(os.path.join(str(fake_root), nsi[nsi.index("--config_file") + 1])) as f:
            config = yaml.safe_load(f)
        values = {a["additionalParams"]["slice_5qi"] for s in config["netslice-subnet"]
                  for a in s["additionalParamsForVnf"]}
        assert values == {five_qi}
    _assert_files_exist(fake_root, printed)
    assert printed.reads("osm", "nsi-show", "vpnaas-slices-embb", "--literal")
    # tunnel-status on the NS of each slice (named <nsi>.<subnet id> in a dry run, as NBI names them)
    targets = {a[2] for a in printed.reads("osm", "ns-action")}
    assert targets == {"vpnaas-slices-embb.eps", "vpnaas-slices-urllc.eps"}
    ue_attach = [a[2] for a in printed.reads("osm", "ns-action") if "ue-attach" in a]
    assert ue_attach == ["vpnaas-slices-embb.eps", "vpnaas-slices-urllc.eps"]


def test_nsi_packages_are_onboarded_in_dependency_order(dry_run):
    code, printed, err = dry_run("deploy", "--ns", "embb")
    assert code == 0, err
    kinds = [a[1] for a in printed.runs("osm") if a[1].endswith("pkg-create") or a[1] == "nst-create"]
    assert kinds == ["nfpkg-create"] * 5 + ["nspkg-create", "nst-create"]


def test_osm10_variant_reads_entities_relations(dry_run):
    code, printed, err = dry_run("deploy", "--ns", "eps_wg_osm10", UE="0")
    assert code == 0, err
    assert len(printed.reads("osm", "ns-action")) == 5


def test_plain_variant_waits_for_no_tunnels(dry_run):
    code, printed, err = dry_run("deploy", "--ns", "eps", UE="0")
    assert code == 0, err
    assert printed.reads("osm", "ns-action") == []
    assert "no WireGuard tunnels" in printed.text


def test_onboard_all_packages(dry_run, fake_root):
    code, printed, err = dry_run("onboard")
    assert code == 0, err
    creates = printed.runs("osm")
    assert [a[1] for a in creates] == ["nfpkg-create"] * 10 + ["nspkg-create"] * 4 + ["nst-create"] * 2
    assert len(printed.reads("osm")) == 16
    _assert_files_exist(fake_root, printed)


def test_prepare_all_flavors_normal_and_double(dry_run):
    code, printed, err = dry_run("prepare")
    assert code == 0, err
    names = [a[-1] for a in printed.runs("openstack", "flavor", "create")]
    assert "vpnaas.oai-hss" in names and "vpnaas.oai-hss-2x" in names
    hss2x = [a for a in printed.runs("openstack", "flavor", "create") if a[-1] == "vpnaas.oai-hss-2x"][0]
    assert hss2x[hss2x.index("--vcpus") + 1] == "8" and hss2x[hss2x.index("--ram") + 1] == "16384"


def test_undeploy_deletes_instance_packages_vims_flavors(dry_run):
    code, printed, err = dry_run("undeploy", "--ns", "eps_wg")
    assert code == 0, err
    runs = [a for a in printed.runs("osm")]
    assert runs[0] == ["osm", "ns-delete", "vpnaas-eps_wg", "--wait"]
    deletes = [a[1] for a in runs[1:]]
    assert deletes == ["nspkg-delete"] + ["nfpkg-delete"] * 5 + ["vim-delete"]
    assert len(printed.runs("openstack", "flavor", "delete")) == 5
    # never deletes what it did not create (images, network of MicroStack)
    assert not printed.runs("openstack", "network", "delete")
    assert not printed.runs("openstack", "image", "delete")


def test_undeploy_keep_flags(dry_run):
    code, printed, err = dry_run(
        "undeploy", "--ns", "slices", "--keep-packages", "--keep-vims", "--keep-vim-resources"
    )
    assert code == 0, err
    assert [a[1] for a in printed.runs("osm")] == ["nsi-delete", "nsi-delete"]
    assert not printed.runs("openstack")


def test_measure_dry_run_prints_thesis_commands(dry_run):
    code, printed, err = dry_run("measure", "--ns", "eps_wg", MEASURE_SECONDS="600", PING_COUNT="1000")
    assert code == 0, err
    runs = [a for a in printed.reads("osm", "ns-action") if a[a.index("--action_name") + 1] == "run"]
    commands = [yaml.safe_load(a[a.index("--params") + 1])["command"] for a in runs]
    # S6a through the tunnel: MME service address -> HSS service address, -M 1362 as in the thesis
    assert "iperf3 -B 172.16.0.2 -c 172.16.0.3 -M 1362 -t 600 -i 60 --json" in commands
    assert "iperf3 -s -B 172.16.0.3 -1 -D" in commands
    assert "ping -q -i 0.2 -c 1000 -I 172.16.0.2 172.16.0.3" in commands
    # S6a plain: the underlay addresses of the s6a link from the params
    assert "iperf3 -B 192.168.20.2 -c 192.168.20.3 -M 1362 -t 600 -i 60 --json" in commands
    # S1-U: eNB (requirer) is the client, no -M
    assert "iperf3 -B 172.16.4.3 -c 172.16.4.2 -t 600 -i 60 --json" in commands
    assert "report would be written to build/deploy/eps_wg/report.json" in printed.text


def test_unknown_variant_and_missing_catalog(dry_run, tmp_path):
    code, printed, err = dry_run("deploy", "--ns", "nope")
    assert code == 1 and "unknown NS variant 'nope'" in err and "eps_wg" in err
    empty = tmp_path / "empty"
    empty.mkdir()
    code, printed, err = dry_run("deploy", "--ns", "eps_wg", root=str(empty))
    assert code == 1 and "make packages" in err


def test_missing_secret_fails_for_real_but_not_in_dry_run(dry_run, fake_root):
    code, printed, err = dry_run("deploy", "--ns", "eps_wg", LTE_K="")
    assert code == 0 and "LTE_K unset" in printed.text
    import io
    import sys

    from deploy_helpers import base_env, no_subprocess

    from deploy.cli import main

    old, sys.stderr = sys.stderr, io.StringIO()
    try:
        code = main(
            ["deploy", "--ns", "eps_wg"],
            environ=base_env(fake_root, LTE_K=""),
            out=io.StringIO(),
            execute=no_subprocess,
        )
        err = sys.stderr.getvalue()
    finally:
        sys.stderr = old
    assert code == 1 and "LTE_K" in err


def test_config_without_env_file_uses_the_project_root(tmp_path):
    """No DEPLOY_ENV and no deploy.env: defaults apply (the plain `make deploy` case)."""
    from deploy.config import Config
    cfg = Config(environ={"DEPLOY_ROOT": str(tmp_path)})
    assert cfg.root == str(tmp_path)


def test_deploy_dry_run_prints_the_ue_commands(dry_run):
    from deploy_helpers import UE_IMSI, UE_SERVER

    code, printed, err = dry_run("deploy", "--ns", "eps_wg", UE_IPERF_SECONDS="30")
    assert code == 0, err
    _no_secrets(printed, err)
    ue = [a for a in printed.reads("osm", "ns-action") if a[a.index("--action_name") + 1] != "tunnel-status"]
    assert [(a[a.index("--vnf_name") + 1], a[a.index("--action_name") + 1]) for a in ue] == [
        ("spgwu", "run"), ("enb", "ue-attach"), ("mme", "run"), ("enb", "ue-iperf")]
    params = [yaml.safe_load(a[a.index("--params") + 1]) if "--params" in a else None for a in ue]
    assert params[0] == {"command": "iperf3 -s -B {} -1 -D".format(UE_SERVER)}
    assert params[1] is None
    assert params[2]["command"].startswith("sh -c ") and params[2]["command"].endswith(" mme-view " + UE_IMSI)
    assert params[3] == {"seconds": 30, "server": UE_SERVER}
    assert "UE: dry run, IMSI {} to iperf3 server {}".format(UE_IMSI, UE_SERVER) in printed.text


def test_ue_is_skipped_without_an_imsi_and_refuses_a_hostile_one():
    from deploy import ue

    data = {"vld": [{"name": "sgi", "vnfd-connection-point-ref": [
        {"member-vnf-index-ref": "spgwu", "ip-address": "10.254.1.203"}]}],
        "additionalParamsForVnf": [{"member-vnf-index": "enb", "additionalParams": {"ue_imsi": ""}}]}
    assert ue.plan(data) == (None, "the eNB's ue_imsi is empty in the params: no UE")
    data["additionalParamsForVnf"][0]["additionalParams"]["ue_imsi"] = "2089512345; reboot"
    import pytest

    with pytest.raises(ue.UeError, match="not an IMSI"):
        ue.plan(data)
    data["additionalParamsForVnf"][0]["additionalParams"]["ue_imsi"] = "208951234500001"
    assert ue.plan(data) == ("208951234500001", "10.254.1.203")
    assert ue.plan({"additionalParamsForVnf": []}) == (None, "no eNB or gNB in this NS")


def test_mme_view_reads_the_imsi_and_the_statistics():
    from deploy import ue

    text = ("Attached UEs   |          0      |              0              |             0               |\n"
            "x IMSI 208951234500001 y\nAttached UEs   |  1 | 1 | 0 |\n")
    assert ue.mme_view(text, "208951234500001") == (
        "IMSI 208951234500001 in the MME's log (1 lines), last: x IMSI 208951234500001 y; "
        "Attached UEs 1 (+1 -0 since the last statistics)")
    assert ue.mme_view("", "208951234500001") == "IMSI 208951234500001 not in the MME's log"


def test_mme_view_command_runs_in_a_real_shell(tmp_path):
    """The `run` action hands the command line to the VNF's login shell: run it in one, with a
    journalctl stand-in on PATH (sudo -n refused, as for a user without sudo rights)."""
    import subprocess

    from deploy import ue
    from deploy.runner import quote_argv

    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "sudo").write_text("#!/bin/sh\nexit 1\n")
    (bindir / "journalctl").write_text(
        "#!/bin/sh\necho 'noise'\necho 'NAS attach of IMSI 208951234500001 accepted'\n"
        "echo 'Attached UEs   |   1 |   1 |   0 |'\necho 'IMSI 208951234500002 other'\n")
    for f in bindir.iterdir():
        f.chmod(0o755)
    line = quote_argv(["sh", "-c", ue.MME_VIEW_SCRIPT, "mme-view", "208951234500001"])
    out = subprocess.run(["/bin/sh", "-c", line], env={"PATH": "{}:/usr/bin:/bin".format(bindir)},
                         stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout
    assert out.splitlines() == ["NAS attach of IMSI 208951234500001 accepted", "Attached UEs   |   1 |   1 |   0 |"]


def metrics_rules(printed):
    return [(a[a.index("--ethertype") + 1], a[a.index("--remote-ip") + 1])
            for a in printed.runs("openstack", "security", "group", "rule", "create")
            if a[a.index("--protocol") + 1] == "tcp" and a[a.index("--dst-port") + 1] == "9586:9586"]


def test_the_metrics_exporter_is_opened_from_the_management_network_only(dry_run):
    """TCP 9586 (OSM's Prometheus scrapes the exporter, docs/metrics.md) from the management
    subnet and OSM's address, never from anywhere: the group covers the data-network ports too."""
    code, printed, err = dry_run("prepare", "--ns", "eps_wg")
    assert code == 0, err
    assert metrics_rules(printed) == [("IPv4", "192.168.222.0/24"), ("IPv4", "10.0.0.5/32")]
    others = [a for a in printed.runs("openstack", "security", "group", "rule", "create")
              if "9586:9586" not in a]
    assert len(others) == 5 and all(a[a.index("--remote-ip") + 1] == "0.0.0.0/0" for a in others)
    code, printed, err = dry_run("prepare", "--ns", "eps_wg", METRICS_SCRAPE_FROM="10.20.20.1, fd00:1::/64")
    assert code == 0, err
    assert metrics_rules(printed) == [("IPv4", "10.20.20.1/32"), ("IPv6", "fd00:1::/64")]
    code, printed, err = dry_run("prepare", "--ns", "eps_wg", METRICS_SCRAPE_FROM="none")
    assert code == 0 and metrics_rules(printed) == []
    code, printed, err = dry_run("prepare", "--ns", "eps_wg", OSM_HOSTNAME="osm.example.org:9999")
    assert code == 0 and metrics_rules(printed) == [("IPv4", "192.168.222.0/24")]


@pytest.mark.parametrize("value", ["0.0.0.0/0", "::/0", "10.0.0.0/8,not-a-prefix"])
def test_a_metrics_source_that_is_not_a_narrow_prefix_is_refused(dry_run, value):
    code, printed, err = dry_run("prepare", "--ns", "eps_wg", METRICS_SCRAPE_FROM=value)
    assert code == 1 and "METRICS_SCRAPE_FROM" in err
    assert printed.runs("openstack", "security", "group", "rule", "create") == []
