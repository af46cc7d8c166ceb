"""The pq-psk daemon (pqpsk/, Go): its own `go test` suite (both ends agree, the exact message
sizes, every hostile case: malformed, replayed, withheld, forged) and the shipped binary's shape
(static, as the charms ship it to an Ubuntu 18.04 VNF).

The suite's tests mostly wait (their daemons' time-outs and renewal intervals: about 24 s of wall
time, under 1 s of CPU), one after another in one `go test`. So it runs in parts, each a `go test`
of its own that pytest-xdist hands to any free worker: the longest tests by name (``PARTS``), and
every other test in one more part (``-skip`` of the named ones), so that a test added to the suite
runs without being listed. Go's test cache replays a part's result while its inputs are unchanged
(the test binary, i.e. the sources and the toolchain, and the files and environment variables
the tests read): the same check, not repeated for the same inputs."""
import json
import os
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.path.join(ROOT, "build", "tools", "pq-psk")
PACKAGE = "vpnaas.invalid/pqpsk"
#: The suite's longest tests (seconds of wall time each, measured with `go test -json`), in parts of
#: about the same length as the part of all the others.
PARTS = (
    ("TestAnIdleTunnelWithALongIntervalKeepsItsKey",),
    ("TestATunnelWithHandshakesRenewsAtItsInterval", "TestWithheldAnswerReportedFailing"),
    ("TestAKeyNoHandshakeCanUseIsGivenUpAfterASessionLifetime", "TestRunnersAgreeAndRenewDespiteHostileNeighbour"),
)
NAMED = sorted(name for part in PARTS for name in part)


def _pattern(names):
    return "^({})$".format("|".join(names))


@pytest.mark.parametrize("part", list(range(len(PARTS))) + ["others"])
def test_go_test_suite_passes(part):
    go = shutil.which("go")
    assert go, "the unit tier needs Go (scripts/check-unit-deps.sh says so before any test runs)"
    select = ["-skip", _pattern(NAMED)] if part == "others" else ["-run", _pattern(PARTS[part])]
    run = subprocess.run([go, "test", "-json"] + select + ["./..."], cwd=os.path.join(ROOT, "pqpsk"),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                         timeout=300)
    events = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    output = "".join(e.get("Output", "") for e in events)
    assert run.returncode == 0, (output or run.stdout)[-4000:]
    assert "ok  \t" + PACKAGE in output
    ends = {e["Test"]: e["Action"] for e in events
            if e.get("Test") and "/" not in e["Test"] and e["Action"] in ("pass", "fail", "skip")}
    if part == "others":
        assert ends and not set(ends) & set(NAMED), sorted(ends)
    else:
        assert sorted(ends) == sorted(PARTS[part]), "a named test is gone or renamed: update PARTS"
    assert set(ends.values()) == {"pass"}, ends


def test_binary_is_static_and_names_its_mechanism():
    assert os.access(BINARY, os.X_OK), "make pq-psk builds it before the unit tier"
    out = subprocess.run(["readelf", "--dyn-syms", "--version-info", BINARY], stdout=subprocess.PIPE,
                         universal_newlines=True, check=True).stdout
    assert "GLIBC_" not in out
    version = subprocess.run([BINARY, "--version"], stdout=subprocess.PIPE, universal_newlines=True,
                             check=True, timeout=10).stdout.split()
    assert version[0] == "pq-psk" and version[2] == "ML-KEM-768"
