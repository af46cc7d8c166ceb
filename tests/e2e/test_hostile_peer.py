"""A hostile related unit on the testbed: real sshd, real WireGuard, the built charms via dispatch.

Unit b/0's charm is silenced and the test writes its relation data, as a compromised or buggy
charm of another VNF in the same NS could. For each attack the test checks on VNF a that nothing
ran, that no route or address the charm did not create changed, that the tunnel itself keeps
working, that the status names the unit, the device and the prefix, and that the unit recovers by
itself once the peer publishes good data again.

Runs twice: with the charms built for this machine's Python (``make charms-local``, the newest
Python, whose ``ipaddress`` accepts IPv6 scope ids) and with the shipped Ubuntu 18.04 build run by
Python 3.6 (``make charms``), the interpreter of OSM's proxy machine.
"""
import os
import subprocess

import e2e_pairs as pairs
import pytest

from testbed.emulators import vca, vim

MARKER_DIR = "/tmp"


def python36():
    script = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "find-python36.sh")
    proc = subprocess.run(["bash", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    if proc.returncode != 0:
        pytest.fail("the shipped Ubuntu 18.04 build needs Python 3.6: " + proc.stderr.strip())
    return proc.stdout.strip()


@pytest.fixture(scope="module", params=["local", "ubuntu@18.04"])
def hostile(request, environment_ready, tmp_path_factory):
    base = request.param
    # Built once per test run (tests/conftest.py), whichever worker asks first.
    charms_dir = request.getfixturevalue("local_charms_dir") if base == "local" else os.path.dirname(
        next(iter(request.getfixturevalue("shipped_charms").values())))
    interpreter = python36() if base != "local" else None
    work = tmp_path_factory.mktemp("hostile")
    tb = vim.Testbed(str(work / "tb"), tb_id=None, userspace_wireguard=vim.userspace_wireguard())
    tb.create()
    try:
        model = vca.Model(str(work / "vca"), runner=tb.runner(), interpreter=interpreter)
        pairs.bring_up(tb, model, charms_dir)
        a = tb.vnfs["a"]
        # What the operator put on the VNF by hand: the charm must never touch it.
        a.exec(["ip", "addr", "add", "172.31.99.1/32", "dev", "lo"])
        a.exec(["ip", "route", "add", "10.77.0.0/16", "dev", "eth1"])
        model.silenced.add("b/0")
        good = dict(model.relation_data(0)["b/0"])
        yield tb, model, a, good
    finally:
        tb.teardown()


def foreign(vnf):
    """Routes and addresses of the VNF that are not the charm's own (proto 148, the tunnels)."""
    routes = [line for line in vnf.exec(["ip", "-o", "route", "show"]).stdout.splitlines()
              if " proto 148" not in line and "dev wg-" not in line]
    addrs = [line.split()[3] + " " + line.split()[1]
             for line in vnf.exec(["ip", "-o", "addr", "show"]).stdout.splitlines()
             if "lo:vpnaas" not in line and " wg-" not in line]
    return sorted(routes), sorted(addrs)


def publish(model, values):
    model.set_relation_data(0, "b/0", values)


def recovered(model, a, good):
    publish(model, good)
    model.update_status(["a/0"])
    status, message = model.status("a/0")
    assert status == "active", message
    assert pairs.ping(a, pairs.A_SVC, pairs.B_SVC).returncode == 0


def test_code_in_an_endpoint_or_prefix_never_runs(hostile):
    _tb, model, a, good = hostile
    before = foreign(a)
    marker = os.path.join(MARKER_DIR, "vpnaas-hostile-{}".format(os.getpid()))
    inject = "\n[Interface]\nPreUp = touch {}\n#".format(marker)
    for values in ({"endpoint": "[fe80::1%x" + inject + "]:51820"},
                   {"service-prefixes": "fe80::1%x" + inject + "/128"},
                   {"service-prefixes": pairs.B_SVC + "/32\nPostUp = touch " + marker},
                   {"tunnel-address": "10.250.9.2/30$(touch {})".format(marker)}):
        publish(model, dict(good, **values))
        model.update_status(["a/0"])
        status, message = model.status("a/0")
        assert status == "blocked" and "invalid data from b/0" in message, message
        assert len(message) < 600 and "\n" not in message
        assert not os.path.exists(marker)
        assert "PreUp = touch" not in a.exec(["cat", "/etc/wireguard/wg-vpn.conf"]).stdout
    assert foreign(a) == before
    recovered(model, a, good)


@pytest.mark.parametrize("prefixes, fragment", [
    ("0.0.0.0/0", "a default route"),
    ("0.0.0.0/1,128.0.0.0/1", "'this network'"),
    ("{vca}/32", "outside vpn-service-network"),
    ("198.18.0.0/24", "outside vpn-service-network"),
])
def test_a_peer_cannot_lock_out_management(hostile, prefixes, fragment):
    tb, model, a, good = hostile
    before = foreign(a)
    publish(model, dict(good, **{"service-prefixes": prefixes.format(vca=tb.vca_ip)}))
    model.update_status(["a/0"])   # the charm still reaches the VNF: management was never routed away
    status, message = model.status("a/0")
    assert status == "blocked" and "from b/0 on wg-vpn" in message and fragment in message, message
    assert foreign(a) == before
    assert pairs.ping(a, "10.250.9.1", "10.250.9.2").returncode == 0, "the tunnel itself keeps working"
    recovered(model, a, good)


def test_with_everything_allowed_the_connected_route_and_operator_routes_stay(hostile):
    tb, model, a, good = hostile
    model.set_config("a", {"vpn-peer-prefixes": "0.0.0.0/0"})
    try:
        before = foreign(a)
        for prefixes in (pairs.CIDR, "10.77.0.0/16", "172.31.99.1/32", "192.168.8.0/25", tb.vca_ip + "/32"):
            publish(model, dict(good, **{"service-prefixes": prefixes}))
            status, message = model.status("a/0")
            assert status == "blocked" and prefixes in message, message
            assert foreign(a) == before
        publish(model, dict(good, **{"service-prefixes": ""}))   # withdrawn: nothing of the VNF goes with it
        assert foreign(a) == before
    finally:
        model.set_config("a", {"vpn-peer-prefixes": ""})
    recovered(model, a, good)


def test_a_peer_cannot_hijack_another_devices_peer(hostile, wg_key):
    _tb, model, a, good = hostile
    model.set_config("a", {"vpn-peer-tunnel-address": "10.250.8.1/30", "vpn-peer-listen-port": 51829})
    manual = wg_key()
    added = model.run_action("a/0", "add-peer", {"device": "vpn-peer", "public-key": manual,
                                                 "allowed-ips": "10.250.8.2/32,172.16.20.1/32"})
    assert added.status == "completed", added.message
    try:
        publish(model, dict(good, **{"service-prefixes": pairs.B_SVC + "/32,172.16.20.1/32"}))
        _status, message = model.status("a/0")
        assert "refused 172.16.20.1/32 from b/0 on wg-vpn" in message, message
        assert "172.16.20.1 dev wg-vpn-peer" in a.exec(["ip", "route", "show"]).stdout
        assert pairs.ping(a, pairs.A_SVC, pairs.B_SVC).returncode == 0
        # Another peer's key (the manual one, on another device): refused, the incumbent keeps it.
        publish(model, dict(good, **{"public-key": manual}))
        assert manual in a.exec(["wg", "show", "wg-vpn-peer", "peers"]).stdout
        assert manual not in a.exec(["wg", "show", "wg-vpn", "peers"]).stdout
    finally:
        removed = model.run_action("a/0", "remove-peer", {"device": "vpn-peer", "public-key": manual})
        assert removed.status == "completed", removed.message
        model.set_config("a", {"vpn-peer-tunnel-address": "", "vpn-peer-listen-port": 51820})
    recovered(model, a, good)


def test_an_ipv6_prefix_on_an_ipv6_less_vnf_stops_nothing_else(hostile):
    _tb, model, a, good = hostile
    model.set_config("a", {"vpn-peer-prefixes": "fd00::/64," + pairs.B_SVC + "/32"})
    try:
        publish(model, dict(good, **{"service-prefixes": pairs.B_SVC + "/32,fd00::1/128"}))
        _status, message = model.status("a/0")
        assert "refused fd00::1/128 from b/0 on wg-vpn: IPv6 is disabled" in message, message
        assert "step failed" not in message
        assert pairs.ping(a, pairs.A_SVC, pairs.B_SVC).returncode == 0
    finally:
        model.set_config("a", {"vpn-peer-prefixes": ""})
    recovered(model, a, good)


def route_dev(vnf, address):
    """The device ``ip route get`` picks for ``address`` on the VNF ("local" for a local address)."""
    out = vnf.exec(["ip", "route", "get", address], check=False).stdout.split()
    return "local" if out[:1] == ["local"] else out[out.index("dev") + 1] if "dev" in out else ""


@pytest.mark.parametrize("address", ["8.8.8.8", "169.254.169.254", "224.0.0.251", "10.77.0.5"])
def test_a_single_address_outside_the_service_network_captures_nothing(hostile, address):
    _tb, model, a, good = hostile
    before = (foreign(a), route_dev(a, address))
    publish(model, dict(good, **{"service-prefixes": pairs.B_SVC + "/32," + address + "/32"}))
    status, message = model.status("a/0")
    assert status == "blocked" and "refused {}/32 from b/0 on wg-vpn".format(address) in message, message
    assert (foreign(a), route_dev(a, address)) == before and before[1] != "wg-vpn"
    assert pairs.ping(a, pairs.A_SVC, pairs.B_SVC).returncode == 0, "the rest of the tunnel keeps working"
    recovered(model, a, good)


def test_an_endpoint_inside_a_manual_peers_prefix_refuses_the_unit_not_the_manual_peer(hostile, wg_key):
    _tb, model, a, good = hostile
    model.set_config("a", {"vpn-peer-tunnel-address": "10.250.8.1/30", "vpn-peer-listen-port": 51829})
    manual = wg_key()
    added = model.run_action("a/0", "add-peer", {"device": "vpn-peer", "public-key": manual,
                                                 "allowed-ips": "10.250.8.2/32,172.16.20.0/24"})
    assert added.status == "completed", added.message
    try:
        publish(model, dict(good, **{"endpoint": "172.16.20.7:51820"}))
        _status, message = model.status("a/0")
        assert "refused b/0 on wg-vpn: its endpoint 172.16.20.7 lies inside what manual on wg-vpn-peer holds" \
            in message, message
        assert "172.16.20.0/24 dev wg-vpn-peer" in a.exec(["ip", "route", "show"]).stdout
    finally:
        removed = model.run_action("a/0", "remove-peer", {"device": "vpn-peer", "public-key": manual})
        assert removed.status == "completed", removed.message
        model.set_config("a", {"vpn-peer-tunnel-address": "", "vpn-peer-listen-port": 51820})
    recovered(model, a, good)


@pytest.mark.parametrize("options", [
    {"vpn-service-addresses": "{mgmt}.77/32", "vpn-service-network": "{mgmt}.0/24"},
    {"vpn-service-addresses": "{vca}/32", "vpn-service-network": "{mgmt}.0/24"},
    {"vpn-tunnel-address": "{mgmt}.250/24"},
])
def test_an_operator_address_that_would_cut_management_is_refused_and_nothing_is_applied(hostile, options):
    tb, model, a, good = hostile
    mgmt = tb.vca_ip.rsplit(".", 1)[0]
    values = {k: v.format(mgmt=mgmt, vca=tb.vca_ip) for k, v in options.items()}
    before = (foreign(a), a.exec(["cat", "/etc/wireguard/wg-vpn.conf"]).stdout)
    model.set_config("a", values)
    try:
        status, message = model.status("a/0")
        assert status == "blocked" and message.startswith("config: ") and "nothing was applied" in message, message
        assert (foreign(a), a.exec(["cat", "/etc/wireguard/wg-vpn.conf"]).stdout) == before
        assert route_dev(a, tb.vca_ip) == "eth0", "the management path is untouched"
    finally:
        model.set_config("a", {k: pairs.specs("")[0].config.get(k, "") for k in values})
    recovered(model, a, good)


BOMB = "".join(["{a: &a [lol,lol,lol,lol,lol,lol,lol,lol,lol]"] + [
    ", b{0}: &b{0} [{1}]".format(i, ",".join(["*" + ("a" if i == 1 else "b{}".format(i - 1))] * 9))
    for i in range(1, 9)] + [", count_index: *b8}"])


@pytest.mark.parametrize("value, why", [
    (BOMB, "an anchor"), ("{count_index: " + "[" * 4000 + "]" * 4000 + "}", "nesting deeper than 8"),
    ("{count_index: " + "9" * 5000 + "}", "is outside 0-63"),
])
def test_a_hostile_osm_instance_blocks_the_unit_and_every_hook_succeeds(hostile, value, why):
    """Issue 36, on the built charm (and the shipped build under Python 3.6): the alias bomb, the
    deep nesting and the huge number as osm-instance each block the unit with a config message,
    config-changed and update-status succeed (a failed hook raises VcaError here), and nothing on
    the VNF changes; clearing the option repairs the unit."""
    _tb, model, a, good = hostile
    before = (foreign(a), a.exec(["cat", "/etc/wireguard/wg-vpn.conf"]).stdout)
    model.set_config("a", {"osm-instance": value})
    try:
        model.update_status(["a/0"])
        status, message = model.status("a/0")
        assert status == "blocked" and message.startswith("config: osm-instance: ") and why in message, message
        assert (foreign(a), a.exec(["cat", "/etc/wireguard/wg-vpn.conf"]).stdout) == before
    finally:
        model.set_config("a", {"osm-instance": ""})
    recovered(model, a, good)
