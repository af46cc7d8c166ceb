"""The second MicroStack site: the right client, TLS, the printed env prefix, the working folder."""

import os
import subprocess

from deploy_helpers import base_env

from deploy.config import Config
from deploy.microstack import host_settings
from deploy.runner import Runner

SITE2_URL = "https://10.30.30.1:5000/v3/"


def _site2(printed):
    return [argv for _, argv in printed.commands if argv and argv[0] == "env" and "OS_AUTH_URL=" + SITE2_URL in argv]


def _command(argv):
    """The command after a leading `env -u X A=b` prefix."""
    i = 1
    while argv[i] == "-u" or "=" in argv[i]:
        i += 2 if argv[i] == "-u" else 1
    return argv[i:]


def test_printed_site2_prefix_runs_under_gnu_env(dry_run):
    """The printed line is a working command: `-u` before the assignments, as GNU env wants."""
    code, printed, err = dry_run("deploy", "--ns", "eps_wg_multisite", OS_REGION_NAME="RegionOne")
    assert code == 0, err
    token = next(a for a in _site2(printed) if _command(a)[1:3] == ["image", "create"])
    assert token[1:3] == ["-u", "OS_REGION_NAME"], token  # site 1's region must not leak into site 2
    prefix = token[: len(token) - len(_command(token))]
    done = subprocess.run(
        prefix + ["printenv", "OS_AUTH_URL", "OS_REGION_NAME"],
        env=dict(os.environ, OS_AUTH_URL="https://10.20.20.1:5000/v3/", OS_REGION_NAME="RegionOne"),
        stdout=subprocess.PIPE,
        text=True,
    )
    assert done.stdout.splitlines() == [SITE2_URL]  # region unset (printenv exits 1 for it)
    assert done.returncode == 1


def _fake_wrapper(tmp_path):
    """A stand-in with the real wrapper's behaviour: it sources the local microstack.rc (site 1)."""
    rc = tmp_path / "microstack.rc"
    rc.write_text("export OS_AUTH_URL=https://10.20.20.1:5000/v3\n")
    wrapper = tmp_path / "microstack.openstack"
    wrapper.write_text('#!/bin/bash\nset -e\nsource {}\nexec printenv OS_AUTH_URL\n'.format(rc))
    wrapper.chmod(0o755)
    return wrapper


def test_site2_never_goes_through_microstack_wrapper(dry_run, tmp_path):
    wrapper = _fake_wrapper(tmp_path)
    # what the wrapper does with site 2's environment: it still talks to site 1
    done = subprocess.run([str(wrapper)], env={"OS_AUTH_URL": SITE2_URL}, stdout=subprocess.PIPE, text=True)
    assert done.stdout.strip() == "https://10.20.20.1:5000/v3"
    plain = tmp_path / "openstack"
    plain.write_text("#!/bin/sh\nexit 0\n")
    plain.chmod(0o755)
    code, printed, err = dry_run(
        "deploy", "--ns", "eps_wg_multisite", OPENSTACK_CLI=str(wrapper), SITE2_OPENSTACK_CLI=str(plain)
    )
    assert code == 0, err
    site2 = _site2(printed)
    assert site2 and all(_command(a)[0] == str(plain) for a in site2)
    site1 = [a for _, a in printed.commands if a and a[0] == str(wrapper)]
    assert any(a[1:3] == ["image", "create"] for a in site1)


def test_site2_without_a_plain_client_is_named(dry_run, tmp_path):
    wrapper = _fake_wrapper(tmp_path)
    code, printed, err = dry_run("deploy", "--ns", "eps_wg_multisite", OPENSTACK_CLI=str(wrapper))
    assert code == 0, err
    assert all(os.path.basename(_command(a)[0]) != "microstack.openstack" for a in _site2(printed))


def test_https_site2_needs_a_ca_or_explicit_insecure(dry_run):
    code, printed, err = dry_run("deploy", "--ns", "eps_wg_multisite", SITE2_OS_CACERT="")
    assert code == 0, err
    assert "neither SITE2_OS_CACERT nor SITE2_OS_INSECURE is set" in printed.text
    code, printed, err = dry_run("deploy", "--ns", "eps_wg_multisite", SITE2_OS_CACERT="", SITE2_OS_INSECURE="true")
    assert code == 0, err
    assert "SITE2_OS_CACERT" not in printed.text
    assert all("OS_INSECURE=true" in a for a in _site2(printed))


def test_commands_run_from_the_project_root(fake_root, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    seen = []

    def execute(argv, **kw):
        seen.append(kw.get("cwd"))
        return subprocess.CompletedProcess(argv, 0, "", "")

    runner = Runner(Config(environ=base_env(fake_root)), execute=execute)
    runner.read(["osm", "nfpkg-create", "build/packages/oai-hss_vnf.tar.gz"])
    assert seen == [fake_root]


def test_no_nat_rule_microstack_already_adds():
    text = "\n".join(host_settings(Config(environ={}), multi_site=True))
    assert "MASQUERADE" not in text and "masquerades" in text
