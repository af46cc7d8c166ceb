"""The pq-psk daemon's in-process device driver (pqpsk/wg.go: wgctrl, the UAPI socket of a
userspace device) against the real programs the charms ship, wireguard-go and boringtun, each in a
network namespace of its own, with upstream's `wg` reading back what it wrote: the Go tests of
pqpsk/realdevice_test.go (build tag `realdevice`: they need root and the two programs, so the
unit tier's `go test` does not build them)."""
import json
import os
import shutil
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOLS = os.path.join(ROOT, "build", "tools")
TESTS = ("TestRealWireguardGo", "TestRealBoringtun")


def test_the_device_driver_on_wireguard_go_and_boringtun(environment_ready):
    go = shutil.which("go")
    assert go, "the pq-psk tests need Go"
    programs = {"VPNAAS_WIREGUARD_GO": os.path.join(TOOLS, "wireguard-go"),
                "VPNAAS_BORINGTUN": os.path.join(TOOLS, "boringtun-cli")}
    for path in programs.values():
        assert os.access(path, os.X_OK), "make wireguard-go boringtun: " + path
    run = subprocess.run([go, "test", "-count=1", "-json", "-tags", "realdevice", "-run",
                          "^({})$".format("|".join(TESTS)), "./..."], cwd=os.path.join(ROOT, "pqpsk"),
                         env=dict(os.environ, **programs), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         universal_newlines=True, timeout=600)
    events = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    output = "".join(e.get("Output", "") for e in events)
    assert run.returncode == 0, (output or run.stdout)[-4000:]
    ends = {e["Test"]: e["Action"] for e in events
            if e.get("Test") and "/" not in e["Test"] and e["Action"] in ("pass", "fail", "skip")}
    assert ends == {name: "pass" for name in TESTS}, ends
