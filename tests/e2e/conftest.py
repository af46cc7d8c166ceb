"""End-to-end fixtures: real network namespaces, sshd, WireGuard; built charms via dispatch.

These tests need root (network namespaces), OpenSSH's sshd, wireguard-tools and WireGuard (the
kernel module or wireguard-go). ``.ci/run`` installs them; without them the tests fail with a
message saying what is missing -- they are never skipped.
"""
import os
import shutil

import pytest

from testbed import vca, vim

#: The modules whose tests measure what another testbed on the same two cores would disturb
#: (packets lost by a probe at 100 packets/s, throughput against a bare pair, the seconds and hook
#: runs to a handshake): marked ``alone``. `make test` runs the others on two workers, one file per
#: worker (each testbed has namespaces of its own: a random id), then these one at a time.
ALONE = {"test_lifecycle.py", "test_bench_smoke.py", "test_core_sequences.py"}

REQUIRED_TOOLS = ("ip", "sshd", "wg", "wg-quick", "tcpdump", "nsenter", "unshare", "iperf3", "ping",
                  "prometheus", "promtool")


def pytest_collection_modifyitems(items):
    for item in items:
        if item.path.name in ALONE:
            item.add_marker(pytest.mark.alone)


@pytest.fixture(scope="session")
def environment_ready():
    problems = []
    if os.geteuid() != 0:
        problems.append("not root (network namespaces need root: run `sudo make test`)")
    for tool in REQUIRED_TOOLS:
        if not shutil.which(tool) and not os.path.exists(os.path.join("/usr/sbin", tool)):
            problems.append("{} not installed (run `sudo make deps`)".format(tool))
    if not vim.userspace_wireguard():
        problems.append("neither kernel WireGuard tooling nor wireguard-go found (run `sudo make deps`)")
    if problems:
        pytest.fail("end-to-end environment incomplete: " + "; ".join(problems))
    vim.cleanup_stale()


@pytest.fixture(scope="session")
def local_charms(environment_ready, local_charms_dir):
    """build/charms-local, built once per test run however many workers run the e2e tests."""
    return local_charms_dir


@pytest.fixture
def testbed(environment_ready, tmp_path):
    tb = vim.Testbed(str(tmp_path / "tb"), tb_id=None,
                     userspace_wireguard=vim.userspace_wireguard())
    tb.create()
    yield tb
    tb.teardown()
    assert not [ns for ns in vim.list_testbed_netns() if ns.startswith(tb.id)], "namespaces left behind"


@pytest.fixture
def model(testbed, tmp_path):
    with vca.Model(str(tmp_path / "vca"), runner=testbed.runner()) as m:
        yield m
