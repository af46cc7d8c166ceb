"""The on-VNF renderer, executed on temp files with a fake `ip`: tokens, strict edits, atomic writes."""

import json
import os
import subprocess
import sys

import pytest

from vpnaas.vnf import vnfscript

FAKE_IP = """#!/bin/sh
cat <<'EOF'
1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever preferred_lft forever
2: ens3    inet 10.0.0.5/24 brd 10.0.0.255 scope global ens3\\       valid_lft forever preferred_lft forever
5: vpnaas0    inet 172.16.1.104/32 scope global vpnaas0\\       valid_lft forever preferred_lft forever
5: vpnaas0    inet 172.55.55.101/32 scope global vpnaas0\\       valid_lft forever preferred_lft forever
6: ens4    inet 192.168.9.57/24 brd 192.168.9.255 scope global ens4:s1u\\ valid_lft forever
EOF
"""


@pytest.fixture
def render(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "ip").write_text(FAKE_IP)
    os.chmod(str(bindir / "ip"), 0o755)
    script = tmp_path / "render.py"
    script.write_text(vnfscript.load("oai/render.py"))
    env = dict(os.environ, PATH="{}:{}".format(bindir, os.environ["PATH"]))

    def run(spec, *argv):
        result = subprocess.run(
            [sys.executable, str(script)] + list(argv),
            input=json.dumps(spec).encode(),
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            timeout=30,
        )
        return result.returncode, result.stdout.decode()

    return run


def test_tokens_interfaces_and_change_detection(render, tmp_path):
    src = tmp_path / "t.conf"
    src.write_text('REALM = "@REALM@";\nIF = "@IF@";\nIF2 = "@IF2@";\n')
    dst = tmp_path / "out" / "t.conf"
    spec = {
        "files": [
            {
                "src": str(src),
                "dst": str(dst),
                "mode": "600",
                "tokens": {
                    "@REALM@": "ntnu.no",
                    "@IF@": {"iface_of": "172.16.1.104"},
                    "@IF2@": {"iface_of": "192.168.9.57"},
                },
            }
        ]
    }
    rc, out = render(spec)
    assert rc == 0, out
    assert out == "CHANGED {}\n".format(dst)
    assert dst.read_text() == 'REALM = "ntnu.no";\nIF = "vpnaas0";\nIF2 = "ens4:s1u";\n'
    assert oct(os.stat(str(dst)).st_mode & 0o777) == "0o600"
    rc, out = render(spec)  # same input: nothing rewritten, nothing to restart
    assert rc == 0 and out == ""


def test_leftover_placeholder_fails_and_writes_nothing(render, tmp_path):
    src = tmp_path / "t.conf"
    src.write_text("A = @A@; B = @B_NEW@;\n")
    dst = tmp_path / "t.out"
    rc, out = render({"files": [{"src": str(src), "dst": str(dst), "tokens": {"@A@": "1"}}]})
    assert rc == 3
    assert out.startswith("ERROR ") and "@B_NEW@" in out
    assert not dst.exists()


def test_required_edit_without_match_fails_loudly(render, tmp_path):
    src = tmp_path / "enb.conf"
    src.write_text("tracking_area_code  =  1;\n")
    dst = tmp_path / "enb.out"
    edit = {
        "pattern": r"\btracking_area_code(\s*)=\s*[^;\n]*;",
        "repl": r"tracking_area_code\g<1>= 600;",
        "count": 1,
        "what": "tracking_area_code",
    }
    rc, out = render({"files": [{"src": str(src), "dst": str(dst), "edits": [edit]}]})
    assert rc == 0, out
    assert dst.read_text() == "tracking_area_code  = 600;\n"
    src.write_text("tac = 1;\n")  # the template changed
    rc, out = render({"files": [{"src": str(src), "dst": str(dst), "edits": [edit]}]})
    assert rc == 3 and "cannot set tracking_area_code" in out


def test_explicit_address_required_only_when_the_interface_is_shared(render, tmp_path):
    src = tmp_path / "spgw.conf"
    src.write_text('INTERFACE_NAME = "@X@";\nIPV4_ADDRESS = "127.0.0.1/8";\n')
    dst = tmp_path / "spgw.out"
    edit = {
        "pattern": r'(INTERFACE_NAME\s*=\s*"@X@"\s*;[^\n]*\n\s*IPV4_ADDRESS\s*=\s*")read(")',
        "repl": r"\g<1>1.2.3.4/32\g<2>",
        "count": 1,
        "what": "the address of X",
    }
    shared = dict(edit, required_if_shared="172.16.1.104")  # vpnaas0 carries two addresses
    rc, out = render(
        {
            "files": [
                {
                    "src": str(src),
                    "dst": str(dst),
                    "edits": [shared],
                    "tokens": {"@X@": {"iface_of": "172.16.1.104"}},
                }
            ]
        }
    )
    assert rc == 3 and "the address of X" in out
    alone = dict(edit, required_if_shared="10.0.0.5")  # ens3 has one address: "read" is unambiguous
    rc, out = render(
        {
            "files": [
                {
                    "src": str(src),
                    "dst": str(dst),
                    "edits": [alone],
                    "tokens": {"@X@": {"iface_of": "10.0.0.5"}},
                }
            ]
        }
    )
    assert rc == 0, out


def test_unknown_address_is_reported(render, tmp_path):
    dst = tmp_path / "x"
    rc, out = render(
        {"files": [{"content": "@I@", "dst": str(dst), "tokens": {"@I@": {"iface_of": "9.9.9.9"}}}]}
    )
    assert rc == 3 and "9.9.9.9 is not configured on any interface" in out


def test_cassandra_yaml_settings(render, tmp_path):
    path = tmp_path / "cassandra.yaml"
    path.write_text(
        "cluster_name: 'Test Cluster'\nseed_provider:\n- class_name: x\n  parameters:\n"
        "  - seeds: 127.0.0.1\nlisten_address: localhost\n"
    )
    rc, out = render(
        {
            "files": [
                {
                    "src": str(path),
                    "dst": str(path),
                    "check_tokens": False,
                    "yaml": {
                        "cluster_name": "HSS Cluster",
                        "seeds": "172.16.6.129",
                        "listen_address": "172.16.6.129",
                    },
                }
            ]
        }
    )
    assert rc == 0, out
    import yaml

    data = yaml.safe_load(path.read_text())
    assert data["cluster_name"] == "HSS Cluster"
    assert data["seed_provider"][0]["parameters"][0]["seeds"] == "172.16.6.129"
    assert data["listen_address"] == "172.16.6.129"


def test_substitution_for_an_absent_placeholder_is_an_error(render, tmp_path):
    """At the pinned SPGW-C there is no @UE_IP_ADDRESS_POOL@: a value for it must not vanish."""
    src = tmp_path / "spgw_c.conf"
    src.write_text('RANGE = "12.1.1.2 - 12.1.1.128"; DNS = "@DNS@";\n')
    dst = tmp_path / "spgw_c.out"
    spec = {"files": [{"src": str(src), "dst": str(dst),
                       "tokens": {"@DNS@": "10.1.1.1", "@UE_IP_ADDRESS_POOL@": "12.1.2.2 - 12.1.2.254"}}]}
    rc, out = render(spec)
    assert rc == 3
    assert out.startswith("ERROR ") and "no placeholder @UE_IP_ADDRESS_POOL@" in out
    assert not dst.exists()


def test_one_bad_file_writes_none_of_the_files(render, tmp_path):
    good, bad = tmp_path / "good.conf", tmp_path / "bad.conf"
    good.write_text("A = @A@;\n")
    bad.write_text("B = @B@; C = @C@;\n")
    spec = {"files": [{"src": str(good), "dst": str(tmp_path / "good.out"), "tokens": {"@A@": "1"}},
                      {"src": str(bad), "dst": str(tmp_path / "bad.out"), "tokens": {"@B@": "2"}}]}
    rc, out = render(spec)
    assert rc == 3 and "@C@" in out
    assert not (tmp_path / "good.out").exists()


def test_values_known_only_on_the_vnf_come_as_arguments(render, tmp_path):
    src = tmp_path / "spgw_u.conf"
    src.write_text('INTERFACE_NAME = "@SGI@";\n')
    dst = tmp_path / "spgw_u.out"
    spec = {"files": [{"src": str(src), "dst": str(dst), "tokens": {"@SGI@": {"var": "SGI"}}}]}
    rc, out = render(spec, "SGI=ens3")
    assert rc == 0, out
    assert dst.read_text() == 'INTERFACE_NAME = "ens3";\n'
    rc, out = render(spec)
    assert rc == 3 and "no value for SGI" in out
