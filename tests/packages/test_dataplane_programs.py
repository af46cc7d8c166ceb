"""The userspace WireGuard programs the charms ship (issue 30): they run on the VNFs' Ubuntu 18.04
(no glibc symbol version above 2.27) and here, and every charm carries them byte for byte with a
manifest of their digests. They are built by `make wireguard-go boringtun` (prerequisites of
`make unit` and `make test`); without them these tests fail saying so, never skip."""
import hashlib
import json
import os
import shutil
import subprocess
import zipfile

import glibc_check
import pytest

from bundle import build_charms
from vpnaas.vnf import dataplane

GLIBC_18_04 = (2, 27)


@pytest.fixture(scope="module")
def programs():
    found = build_charms.shipped_programs()
    missing = sorted(set(dataplane.PROGRAMS) - set(found))
    assert not missing, "build/tools lacks {}: run `make {}`".format(", ".join(missing), " ".join(missing))
    return found


@pytest.mark.parametrize("impl", sorted(dataplane.PROGRAMS))
def test_each_program_needs_at_most_glibc_2_27_and_runs_here(programs, impl):
    path, _digest, version = programs[impl]
    newest = glibc_check.newest(path)
    assert newest is None or newest <= GLIBC_18_04, "{} needs GLIBC_{}".format(path, newest)
    out = subprocess.run([path, "--version"], stdout=subprocess.PIPE, universal_newlines=True, timeout=60).stdout
    assert version != "unknown" and version in out, out


def test_boringtun_is_the_pinned_release_built_for_glibc_2_17(programs):
    assert programs["boringtun"][2] == "0.7.1"
    with open(os.path.join(build_charms.TOOLS_DIR, "boringtun-cli.version")) as f:
        assert f.read().split() == ["0.7.1", "x86_64-unknown-linux-gnu.2.17"]
    assert glibc_check.newest(programs["boringtun"][0]) <= (2, 17)


def test_every_charm_carries_the_programs_and_their_manifest(shipped_charms, programs):
    for name, charm in shipped_charms.items():
        with zipfile.ZipFile(charm) as z:
            manifest = json.loads(z.read("dataplane/" + dataplane.MANIFEST))["programs"]
            assert sorted(manifest) == sorted(dataplane.PROGRAMS), name
            for impl, entry in manifest.items():
                data = z.read("dataplane/" + dataplane.PROGRAMS[impl])
                assert hashlib.sha256(data).hexdigest() == entry["sha256"] == programs[impl][1], (name, impl)
                info = z.getinfo("dataplane/" + dataplane.PROGRAMS[impl])
                assert (info.external_attr >> 16) & 0o111, (name, impl, "not executable")
        assert os.path.getsize(charm) < 40 * 1024 * 1024, (name, os.path.getsize(charm))


def test_a_program_that_needs_a_newer_glibc_fails_the_18_04_build(tmp_path):
    host = shutil.which("ls")
    newest = glibc_check.newest(host)
    assert newest is not None and newest > GLIBC_18_04, "this machine's ls is no example ({})".format(newest)
    fake = {"boringtun": (host, "0" * 64, "1")}
    with pytest.raises(build_charms.BuildError, match="above Ubuntu 18.04's 2.27: build it with make boringtun"):
        build_charms.check_programs(fake, "ubuntu@18.04")
    build_charms.check_programs(fake, "local")   # the testbed's charms run here


def test_a_charm_built_without_a_program_ships_a_manifest_without_it(tmp_path, programs):
    only = {"wireguard-go": programs["wireguard-go"]}
    target = tmp_path / "dataplane"
    build_charms.ship_programs(str(target), "ubuntu@18.04", only)
    assert sorted(os.listdir(str(target))) == ["manifest.json", "wireguard-go"]
    assert sorted(dataplane.shipped(str(target))) == ["wireguard-go"]
