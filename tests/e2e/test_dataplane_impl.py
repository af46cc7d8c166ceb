"""The data-plane choice per endpoint end to end (issue 30): two VNFs (real sshd, real WireGuard
programs), the built generic charm run through dispatch. VNF a's endpoint ``vpn`` runs on
boringtun, b's on ``auto`` (this kernel has no WireGuard module: wireguard-go), each program
shipped in the charm and installed by it. The tests share the pair and run in file order.

Needs build/tools/boringtun-cli (``make boringtun``): without it the charm ships without
boringtun and these tests fail saying so (never skipped)."""
import base64
import os
import time

import e2e_pairs as pairs
import pytest

from bundle import build_charms
from testbed.emulators import lcm, vca, vim

DIR = vim.DATAPLANE_DIR
#: a's second endpoint, with an operator's peer only: a device on the same VNF that must not move.
SECOND = {"vpn-peer-tunnel-address": "10.99.0.1/30", "vpn-peer-listen-port": 51899}


@pytest.fixture(scope="module")
def shared(environment_ready, local_charms, tmp_path_factory):
    tools = build_charms.shipped_programs()
    assert "boringtun" in tools, "build/tools/boringtun-cli is missing: run `make boringtun` first"
    base = tmp_path_factory.mktemp("dataplane")
    tb = vim.Testbed(str(base / "tb"), tb_id=None, userspace_wireguard=vim.userspace_wireguard())
    tb.create()
    try:
        model = vca.Model(str(base / "vca"), runner=tb.runner())
        a, b = pairs.specs(local_charms)
        a.config["vpn-implementation"] = "boringtun"
        a.config.update(SECOND)
        report = lcm.instantiate(tb, model, {pairs.LINK: pairs.CIDR}, [a, b], [("a:vpn", "b:vpn-peer")])
        yield tb, model, report, tools
    finally:
        tb.teardown()


@pytest.fixture
def ab(shared):
    tb, model, _report, tools = shared
    return tb.vnfs["a"], tb.vnfs["b"], model, tools


def ifindex(vnf, device):
    """The kernel's index of the device: a device that is deleted and made again gets a new one."""
    out = vnf.exec(["cat", "/sys/class/net/{}/ifindex".format(device)], check=False).stdout.strip()
    return int(out) if out else None


def scrape(vnf):
    """One exposition of the VNF's exporter (the program the charm installed, run once)."""
    return vnf.exec(["python3", "/etc/wireguard/vpnaas-metrics-exporter.py", "--once"]).stdout


def wait_for(check, what, deadline=60):
    end = time.monotonic() + deadline
    while not check():
        assert time.monotonic() < end, what
        time.sleep(0.5)


def test_a_device_on_boringtun_passes_traffic_to_one_on_wireguard_go(ab):
    a, b, model, tools = ab
    assert a.pids("boringtun"), "no boringtun process on a"
    assert not b.pids("boringtun"), "b has no endpoint on boringtun"
    assert pairs.ping(a, pairs.A_SVC, pairs.B_SVC).returncode == 0
    assert pairs.ping(b, pairs.B_SVC, pairs.A_SVC).returncode == 0
    # boringtun's "latest handshake" is the time since it (0 just after one): its received bytes say it.
    assert all(pairs.handshakes(b, "wg-vpn-peer"))
    assert all(int(rx) > 0 for rx in a.wg_show("wg-vpn", "transfer").split()[1::3])
    # Installed byte for byte as shipped, and only where a device needs it.
    listing = a.exec(["sha256sum", DIR + "/boringtun"]).stdout.split()[0]
    assert listing == tools["boringtun"][1]
    assert b.exec(["test", "-e", DIR + "/boringtun"], check=False).returncode == 1
    assert b.exec(["sha256sum", DIR + "/wireguard-go"]).stdout.split()[0] == tools["wireguard-go"][1]
    assert a.exec(["cat", "/etc/wireguard/wg-vpn.impl"]).stdout.strip() == "boringtun"
    status, message = model.status("a/0")
    assert status == "active" and "boringtun {}: vpn".format(tools["boringtun"][2]) in message, message
    status, message = model.status("b/0")
    assert status == "active" and "wireguard-go" in message and "boringtun" not in message, message
    sample = 'vpnaas_wireguard_dataplane_info{refpoint="vpn",device="wg-vpn",implementation="boringtun",' \
             'version="%s"} 1' % tools["boringtun"][2]
    assert sample in scrape(a).splitlines()


def test_switching_one_endpoint_recreates_that_device_only(ab):
    a, b, model, tools = ab
    peer = base64.b64encode(os.urandom(32)).decode()
    ok = model.run_action("a/0", "add-peer", {"device": "vpn-peer", "public-key": peer, "allowed-ips": "10.99.0.2/32"})
    assert ok.status == "completed", ok.message
    assert a.exec(["cat", "/etc/wireguard/wg-vpn-peer.impl"]).stdout.strip() == "wireguard-go"
    before = {"vpn": ifindex(a, "wg-vpn"), "vpn-peer": ifindex(a, "wg-vpn-peer"), "b": ifindex(b, "wg-vpn-peer")}
    model.set_config("a", {"vpn-implementation": "wireguard-go"})
    after = {"vpn": ifindex(a, "wg-vpn"), "vpn-peer": ifindex(a, "wg-vpn-peer"), "b": ifindex(b, "wg-vpn-peer")}
    assert after["vpn"] not in (None, before["vpn"]), "wg-vpn was not re-created on its new implementation"
    assert after["vpn-peer"] == before["vpn-peer"] and after["b"] == before["b"], (before, after)
    assert a.exec(["cat", "/etc/wireguard/wg-vpn.impl"]).stdout.strip() == "wireguard-go"
    wait_for(lambda: not a.pids("boringtun"), "boringtun still runs after its device moved to wireguard-go")
    # The peer accepts the new device's handshake only once the wall clock passes the last one it
    # took from boringtun, which stamps its handshakes 27 s ahead (TAI64 base +37 s, wireguard-go
    # and the kernel +10 s): WireGuard refuses an initiation older than the latest it accepted.
    assert pairs.ping(a, pairs.A_SVC, pairs.B_SVC, deadline=60).returncode == 0
    status, message = model.status("a/0")
    assert status == "active" and "wireguard-go" in message and "boringtun" not in message, message
    assert '",device="wg-vpn",implementation="wireguard-go"' in scrape(a)


def test_an_unchanged_choice_recreates_nothing(ab):
    a, b, model, _tools = ab
    before = (ifindex(a, "wg-vpn"), ifindex(a, "wg-vpn-peer"), ifindex(b, "wg-vpn-peer"))
    for unit in ("a/0", "b/0"):
        for hook in ("config-changed", "update-status", "upgrade-charm"):
            model.run_hook(unit, hook)
        model.settle()
    model.set_config("a", {"vpn-implementation": "wireguard-go"})   # the same value again
    assert (ifindex(a, "wg-vpn"), ifindex(a, "wg-vpn-peer"), ifindex(b, "wg-vpn-peer")) == before


def test_kernel_without_the_module_and_a_hostile_value_apply_nothing(ab):
    a, _b, model, _tools = ab
    before = (ifindex(a, "wg-vpn"), ifindex(a, "wg-vpn-peer"))
    model.set_config("a", {"vpn-implementation": "boringtun\nwireguard-go"})
    status, message = model.status("a/0")
    assert status == "blocked" and "vpn-implementation" in message and "not one of" in message, message
    model.set_config("a", {"vpn-implementation": "kernel"})
    status, message = model.status("a/0")
    assert status == "blocked" and "no WireGuard module" in message, message
    # The device keeps running on what it had: the step failed before touching it.
    assert (ifindex(a, "wg-vpn"), ifindex(a, "wg-vpn-peer")) == before
    assert pairs.ping(a, pairs.A_SVC, pairs.B_SVC).returncode == 0
    model.set_config("a", {"vpn-implementation": "auto"})   # auto here is wireguard-go: nothing moves
    status, message = model.status("a/0")
    assert status == "active", message
    assert (ifindex(a, "wg-vpn"), ifindex(a, "wg-vpn-peer")) == before


def test_teardown_removes_the_programs_and_every_record(ab):
    a, _b, model, _tools = ab
    model.run_hook("a/0", "stop")
    model.settle()
    assert a.exec(["sh", "-c", "ls -A " + DIR]).stdout.split() == []
    assert not a.pids("wireguard-go") and not a.pids("boringtun")
    left = a.exec(["sh", "-c", "ls -A /etc/wireguard"]).stdout.split()
    assert not [f for f in left if f.endswith(".impl") or f.startswith("wg-")], left
