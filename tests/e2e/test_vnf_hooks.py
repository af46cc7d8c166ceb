"""The VNF-side route and service-address hooks (vnf/tunnels.sh), run for real in a private network
and mount namespace: the charm changes only what it created, never a connected, static or
operator route, never an address it did not add (IPv4 or IPv6, on lo or the service device)."""
import subprocess

import pytest

from vpnaas import vnfscript


def run_in_fresh_netns(setup, calls):
    """Run lib.sh + tunnels.sh + ``calls`` (function, args...) after ``setup`` (shell) in a new
    network and mount namespace whose /etc/wireguard is a private tmpfs."""
    step = vnfscript.Step(["tunnels.sh"])
    for call in calls:
        step.call(*call)
    program = step.program()
    outer = ("set -e; mount -t tmpfs tmpfs /etc/wireguard; ip link set lo up; "
             "sysctl -q -w net.ipv6.conf.all.disable_ipv6=0 net.ipv6.conf.lo.disable_ipv6=0; "
             + setup + '; f=$(mktemp); cat > "$f"; bash "$f" "$@"; rc=$?; '
             'echo "---ROUTES"; ip -o route show; ip -6 -o route show; '
             'echo "---ADDRS"; ip -o addr show; rm -f "$f"; exit $rc')
    proc = subprocess.run(["unshare", "--net", "--mount", "--propagation", "private", "bash", "-c", outer, "step"]
                          + step.args, input=program, universal_newlines=True, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=60)
    report, _, rest = proc.stdout.partition("---ROUTES\n")
    routes, _, addrs = rest.partition("---ADDRS\n")
    return proc, report, routes, addrs


@pytest.fixture(autouse=True)
def _root(environment_ready):
    return environment_ready


VETH = "ip link add wg-t type veth peer name wg-t-peer; ip link set wg-t up; ip link set wg-t-peer up"


def test_routes_hook_adds_only_its_own_and_refuses_what_is_in_the_way():
    setup = (VETH + "; ip link add eth1 type veth peer name eth1-p; ip link set eth1 up; "
             "ip addr add 192.168.8.2/24 dev eth1; ip route add 10.77.0.0/16 dev eth1 proto static; "
             "printf '10.250.1.2/32 -\\n192.168.8.0/24 -\\n10.77.0.0/16 -\\n172.16.6.129/32 -\\n' "
             "> /etc/wireguard/wg-t.routes")
    proc, report, routes, _ = run_in_fresh_netns(setup, [("install_hooks",), ("apply_routes", "wg-t")])
    assert proc.returncode == 0, proc.stderr
    refused = sorted(line.split()[2] for line in report.splitlines() if line.startswith("REFUSED"))
    assert refused == ["10.77.0.0/16", "192.168.8.0/24"]
    assert "192.168.8.0/24 dev eth1 proto kernel" in routes
    assert "10.77.0.0/16 dev eth1 proto static" in routes
    assert "10.250.1.2 dev wg-t proto 148" in routes and "172.16.6.129 dev wg-t proto 148" in routes


def test_routes_hook_withdraws_its_own_routes_only():
    setup = (VETH + "; ip route add 10.66.0.0/16 dev wg-t proto static; "
             "ip route add 172.16.6.129/32 dev wg-t proto 148; : > /etc/wireguard/wg-t.routes")
    proc, _report, routes, _ = run_in_fresh_netns(setup, [("install_hooks",), ("apply_routes", "wg-t")])
    assert proc.returncode == 0, proc.stderr
    assert "172.16.6.129" not in routes
    assert "10.66.0.0/16 dev wg-t proto static" in routes


def test_service_addresses_keep_the_operators_own_on_lo():
    setup = "ip addr add 172.31.0.9/32 dev lo; ip addr add fd00::99/128 dev lo"
    add = [("install_hooks",), ("service_addresses", "172.16.6.2/32", "fd00::2/128")]
    proc, report, _, addrs = run_in_fresh_netns(setup, add)
    assert proc.returncode == 0, proc.stderr + report
    assert "172.16.6.2/32" in addrs and "fd00::2/128" in addrs
    # Withdraw everything: only what the charm added goes; the operator's addresses stay.
    proc, report, _, addrs = run_in_fresh_netns(setup, add + [("service_addresses",)])
    assert proc.returncode == 0, proc.stderr + report
    assert "172.16.6.2/32" not in addrs and "fd00::2/128" not in addrs
    assert "172.31.0.9/32" in addrs and "fd00::99/128" in addrs


def test_an_address_that_was_there_before_is_not_adopted():
    setup = "ip addr add 172.16.6.2/32 dev lo"
    calls = [("install_hooks",), ("service_addresses", "172.16.6.2/32"), ("service_addresses",)]
    proc, report, _, addrs = run_in_fresh_netns(setup, calls)
    assert proc.returncode == 0, proc.stderr + report
    assert "172.16.6.2/32" in addrs
