"""scripts/build-pq-psk.sh rebuilds the daemon exactly when what the build reads changed: the
contents of pqpsk/'s sources (a file deleted counts, which modification times miss), the Go
toolchain, or the script; not after a touch. Run on a copy of the script and of pqpsk/, with a
stand-in `go` that counts its builds and "builds" by copying the real static binary (the script's
checks of the result then run as they do on a real build)."""
import os
import shutil
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.path.join(ROOT, "build", "tools", "pq-psk")
FAKE_GO = """#!/bin/bash
case "$1" in
  version) echo "go version ${FAKE_GO_VERSION} linux/amd64" ;;
  build) echo build >> "$BUILDS"; while [ "$1" != -o ]; do shift; done; cp "$REAL" "$2" ;;
  *) exit 2 ;;
esac
"""


def tree(tmp_path):
    top = tmp_path / "repo"
    (top / "scripts").mkdir(parents=True)
    for name in ("build-pq-psk.sh", "glibc_check.py"):
        shutil.copy(os.path.join(ROOT, "scripts", name), str(top / "scripts" / name))
    shutil.copytree(os.path.join(ROOT, "pqpsk"), str(top / "pqpsk"))
    gobin = tmp_path / "gobin"
    gobin.mkdir()
    (gobin / "go").write_text(FAKE_GO)
    (gobin / "go").chmod(0o755)
    return top


def build(tmp_path, version="go1.24.4"):
    top = tmp_path / "repo"
    env = dict(os.environ, PATH="{}:{}".format(tmp_path / "gobin", os.environ["PATH"]), FAKE_GO_VERSION=version,
               BUILDS=str(tmp_path / "builds"), REAL=BINARY)
    run = subprocess.run(["bash", str(top / "scripts" / "build-pq-psk.sh")], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, universal_newlines=True, timeout=60)
    assert run.returncode == 0, run.stdout
    builds = tmp_path / "builds"
    return len(builds.read_text().splitlines()) if builds.exists() else 0


def test_rebuilt_exactly_when_its_inputs_change(tmp_path):
    assert os.access(BINARY, os.X_OK), "make pq-psk builds it before the unit tier"
    top = tree(tmp_path)
    assert build(tmp_path) == 1
    assert build(tmp_path) == 1, "unchanged: no rebuild"
    sources = sorted(n for n in os.listdir(str(top / "pqpsk")) if n.endswith(".go") and not n.endswith("_test.go"))
    os.utime(str(top / "pqpsk" / sources[0]))
    assert build(tmp_path) == 1, "a touch changes nothing that is built"
    os.remove(str(top / "pqpsk" / sources[-1]))        # e.g. a branch switch that removes a file
    assert build(tmp_path) == 2, "a deleted source was missed"
    assert build(tmp_path, version="go1.25.0") == 3, "a new Go toolchain was missed"
    assert build(tmp_path, version="go1.25.0") == 3
    with open(str(top / "pqpsk" / sources[0]), "a") as f:
        f.write("\n// changed\n")
    assert build(tmp_path, version="go1.25.0") == 4
    (top / "pqpsk" / "x_test.go").write_text("package main\n")
    assert build(tmp_path, version="go1.25.0") == 4, "a test file is not built into the program"
