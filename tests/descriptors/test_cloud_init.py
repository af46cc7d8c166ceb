"""Cloud-init files: present, cloud-config, no Jinja2 syntax OSM would choke on, no secrets."""

import os
import shutil

import pytest
import yaml
from descriptors_helpers import assert_problem, find, problems_of

from bundle import ROOT, descriptors

#: The cloud-init files the VNFDs name, without ".cfg".
NAMES = sorted({f[: -len(".cfg")] for d in descriptors.load_bundle().vnfs
                for f in descriptors.cloud_init_files(d.body)})


@pytest.fixture
def cloud_init_copy(tmp_path):
    dst = tmp_path / "cloud-init"
    shutil.copytree(os.path.join(ROOT, "cloud-init"), dst)
    return dst


@pytest.mark.parametrize("name", NAMES)
def test_cloud_config_content(name):
    with open(os.path.join(ROOT, "cloud-init", name + ".cfg")) as f:
        text = f.read()
    data = yaml.safe_load(text)
    assert text.startswith("#cloud-config")
    assert {"wireguard-tools", "iperf3"} <= set(data["packages"])
    assert data["ssh_pwauth"] is False
    assert "password" not in data and "chpasswd" not in data
    assert "/var/lib/vpnaas/cloud-init-done" in data["runcmd"][-1][-1]
    if name == "hss":
        assert "openjdk-8-jre-headless" in data["packages"]
        # Cassandra comes from the hss charm's oai-install (an option), not from a fixed 21x source.
        assert not any("cassandra" in " ".join(map(str, c)) for c in data["runcmd"])
        assert "yq w" not in text and "yq " not in text.replace("not with yq", "")


def test_literal_double_brace_is_refused(bundle, cloud_init_copy):
    path = cloud_init_copy / "mme.cfg"
    path.write_text(path.read_text() + '  - [sh, -c, "echo ${#x} {{ not_a_param }}"]\n')
    problems = problems_of(bundle, cloud_init_dir=str(cloud_init_copy))
    last = len(path.read_text().splitlines())
    assert_problem(problems, "cloud-init/mme.cfg", "line {}".format(last), "Jinja2 syntax")
    # and a variable reference must be supplied by the params of every member that uses it
    assert_problem(
        problems,
        "params/eps_wg.yaml",
        "additionalParamsForVnf[1].additionalParams",
        "member mme: parameter 'not_a_param' is not supplied (needed by cloud-init/mme.cfg)",
    )


def test_variable_reference_supplied_by_params_is_accepted(bundle, cloud_init_copy):
    path = cloud_init_copy / "spgwu.cfg"
    path.write_text(path.read_text() + '  - [echo, "{{ realm }}"]\n')
    assert problems_of(bundle, cloud_init_dir=str(cloud_init_copy)) == []


def test_missing_cloud_init_file_is_reported(bundle, cloud_init_copy):
    os.remove(cloud_init_copy / "enb.cfg")
    assert find(bundle, "vnfd", "oai-enb")
    assert_problem(
        problems_of(bundle, cloud_init_dir=str(cloud_init_copy)),
        "vnf/enb/enb_vnfd.yaml",
        "vnfd.vdu[0].cloud-init-file",
        "cloud-init file 'enb.cfg' not found",
    )
