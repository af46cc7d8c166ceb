"""The pq-psk daemon's in-process device driver (pqpsk/wg.go: wgctrl, the UAPI socket of a
userspace device) against the real programs the charms ship, wireguard-go and boringtun, each in a
network namespace of its own, with upstream's `wg` reading back what it wrote: the Go tests of
pqpsk/realdevice_test.go (build tag `realdevice`: they need root and the two programs, so the
unit tier's `go test` does not build them), compiled by `make pq-psk-realdevice` (which `make test`
runs) into one test binary: this tier needs no Go toolchain and compiles nothing as root."""
import os
import re
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOLS = os.path.join(ROOT, "build", "tools")
TEST_BINARY = os.path.join(TOOLS, "pq-psk-realdevice.test")
TESTS = ("TestRealWireguardGo", "TestRealBoringtun")


def test_the_device_driver_on_wireguard_go_and_boringtun(environment_ready):
    assert os.access(TEST_BINARY, os.X_OK), "make pq-psk-realdevice: " + TEST_BINARY
    programs = {"VPNAAS_WIREGUARD_GO": os.path.join(TOOLS, "wireguard-go"),
                "VPNAAS_BORINGTUN": os.path.join(TOOLS, "boringtun-cli")}
    for path in programs.values():
        assert os.access(path, os.X_OK), "make wireguard-go boringtun: " + path
    run = subprocess.run([TEST_BINARY, "-test.count=1", "-test.v", "-test.run", "^({})$".format("|".join(TESTS))],
                         cwd=os.path.join(ROOT, "pqpsk"), env=dict(os.environ, **programs),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=600)
    assert run.returncode == 0, run.stdout[-4000:]
    # `go test -v`'s verdict line per test: "--- PASS: TestName (0.12s)" (a subtest's is indented)
    ends = dict((m.group(2), m.group(1)) for m in re.finditer(r"^--- (PASS|FAIL|SKIP): (\w+) ", run.stdout, re.M))
    assert ends == {name: "PASS" for name in TESTS}, run.stdout[-4000:]
