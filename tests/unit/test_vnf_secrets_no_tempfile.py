"""The VNF step reads its secrets through pipes, never through a file bash makes: a here-string
(``<<<``) or here-document is a temporary file in ``$TMPDIR`` on bash before 5.1 (Ubuntu 18.04's
4.4, the VNFs' shell) and, on any bash, once the text is larger than a pipe's buffer. So the
functions that read the private key or the preshared keys (``wg_strip``: the wanted
configuration; ``report``: the device's ``wg show dump``) run here under strace with texts over
64 KiB, and no file may be created while they run."""
import os
import shutil
import subprocess

import pytest
from test_vnf_wg_strip import DEVICES, key, rendered

from vpnaas.vnf import vnfscript

PRIVATE = key("P")
PSK = key("S")


def created_files(tmp_path, script, *args, env=None):
    """The files opened with O_CREAT while bash runs ``script`` (strace -f; `2>/dev/null` aside),
    and bash's stdout."""
    assert shutil.which("strace"), "strace is missing: install it (apt-get install strace)"
    trace = tmp_path / "trace"
    run = subprocess.run(["strace", "-f", "-qq", "--seccomp-bpf", "-e", "trace=open,openat,creat", "-o", str(trace),
                          "bash", "-c", script, "step"] + list(args),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=120,
                         env=dict(os.environ, TMPDIR=str(tmp_path), **(env or {})))
    assert run.returncode == 0, run.stderr
    lines = trace.read_text().splitlines()
    made = [line for line in lines if ("O_CREAT" in line or "creat(" in line) and '"/dev/null"' not in line]
    return made, run.stdout


def test_wg_strip_reads_the_configuration_through_a_pipe(tmp_path):
    text = rendered(200, pq=True) + "# kept as it is\n" * 4096       # comments pass through wg_strip
    assert len(text) > 64 * 1024 and PRIVATE in text
    created, out = created_files(tmp_path, 'set -Eeuo pipefail; source "$1"; wg_strip "$2"; printf "%s" "$STRIPPED"',
                                 DEVICES, text)
    assert PRIVATE in out      # it did read the key line
    assert created == [], "a file was made while the private key was read: " + "; ".join(created[:3])


@pytest.fixture
def fake_wg(tmp_path):
    """A `wg` whose `show <dev> dump` prints a device's dump: the private key first, then 600 peers
    each with a preshared key (over 64 KiB)."""
    peers = "".join("{}\t{}\t192.0.2.{}:51820\t10.0.{}.0/24\t0\t0\t0\t25\n".format(key("ABCDEFGH"[i % 8]), PSK, i % 250,
                                                                                  i % 250) for i in range(600))
    dump = "{}\t{}\t51820\toff\n{}".format(PRIVATE, key("Q"), peers)
    assert len(dump) > 64 * 1024
    (tmp_path / "dump").write_text(dump)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    wg = bindir / "wg"
    wg.write_text('#!/bin/sh\nexec cat "{}"\n'.format(tmp_path / "dump"))
    wg.chmod(0o755)
    return bindir


def test_the_report_reads_the_dump_through_a_pipe(tmp_path, fake_wg):
    state = tmp_path / "pq-state"
    state.mkdir()
    # lib.sh's out, as the step has it; the report's functions as the step sources them
    script = ("out() { printf '%s\\n' \"$*\"; }\n" + vnfscript.load("tunnels.sh")
              + '\nPQ_PSK_STATE="$1"\nreport wg-vpn\n')
    created, out = created_files(tmp_path, script, str(state),
                                 env={"PATH": "{}:{}".format(fake_wg, os.environ["PATH"])})
    peers = [line for line in out.splitlines() if line.startswith("PEER wg-vpn ")]
    assert len(peers) == 600 and "UP wg-vpn" in out
    assert PRIVATE not in out and PSK not in out        # never reported (the report's own rule)
    assert created == [], "a file was made while the dump was read: " + "; ".join(created[:3])
