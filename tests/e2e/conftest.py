"""End-to-end fixtures: real network namespaces, sshd, WireGuard; built charms via dispatch.

These tests need root (network namespaces), OpenSSH's sshd, wireguard-tools and WireGuard (the
kernel module or wireguard-go). ``.ci/run`` installs them; without them the tests fail with a
message saying what is missing -- they are never skipped.
"""
import os
import shutil

import pytest

from testbed.emulators import vca, vim

#: The modules (or tests, ``module::test``) that measure what another testbed on the same two cores
#: would disturb (the bench's throughput against a bare pair, the seconds and hook runs from config
#: to handshake that docs/figures.md reports): marked ``alone``. `make test` runs the other modules on two workers,
#: one module per worker (each testbed in namespaces of its own, with a random id), then these one
#: at a time. test_lifecycle.py is not among them: its probe counts only packets that never came
#: back (a late reply is a reply: testbed/measurement/probe.py), so a busy machine cannot fail it, and it is
#: the longest module.
ALONE = {"test_bench_smoke.py", "test_core_sequences.py::test_figures_from_both_configured_to_handshake"}
#: The order the workers take the modules in (``--no-loadscope-reorder``): the longest first, so
#: that the last one to start ends about when the others do. The rest follow in file order.
FIRST = ("test_lifecycle.py", "test_hostile_peer.py", "test_eps_testbed.py", "test_sa_testbed.py",
         "test_metrics_prometheus.py")

REQUIRED_TOOLS = ("ip", "sshd", "wg", "wg-quick", "tcpdump", "nsenter", "unshare", "iperf3", "ping",
                  "prometheus", "promtool")


def pytest_collection_modifyitems(items):
    for item in items:
        if item.path.name in ALONE or "{}::{}".format(item.path.name, item.name) in ALONE:
            item.add_marker(pytest.mark.alone)
    rank = {name: i for i, name in enumerate(FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(FIRST)))     # stable: file order otherwise


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
