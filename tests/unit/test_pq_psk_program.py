"""The pq-psk daemon (pqpsk/, Go): its own `go test` suite (both ends agree, the exact message
sizes, every hostile case: malformed, replayed, withheld, forged) and the shipped binary's shape
(static, as the charms ship it to an Ubuntu 18.04 VNF)."""
import os
import shutil
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.path.join(ROOT, "build", "tools", "pq-psk")


def test_go_test_suite_passes():
    go = shutil.which("go")
    assert go, "the unit tier needs Go (scripts/check-unit-deps.sh says so before any test runs)"
    run = subprocess.run([go, "test", "-count=1", "./..."], cwd=os.path.join(ROOT, "pqpsk"),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                         timeout=300)
    assert run.returncode == 0, run.stdout[-4000:]
    assert "ok  \tvpnaas.invalid/pqpsk" in run.stdout


def test_binary_is_static_and_names_its_mechanism():
    assert os.access(BINARY, os.X_OK), "make pq-psk builds it before the unit tier"
    out = subprocess.run(["readelf", "--dyn-syms", "--version-info", BINARY], stdout=subprocess.PIPE,
                         universal_newlines=True, check=True).stdout
    assert "GLIBC_" not in out
    version = subprocess.run([BINARY, "--version"], stdout=subprocess.PIPE, universal_newlines=True,
                             check=True, timeout=10).stdout.split()
    assert version[0] == "pq-psk" and version[2] == "ML-KEM-768"
