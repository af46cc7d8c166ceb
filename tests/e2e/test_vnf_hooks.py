"""The VNF-side route and service-address hooks (vnf/tunnels.sh), run for real in a private network
and mount namespace: the charm changes only what it created, never a connected, static or
operator route, never an address it did not add (IPv4 or IPv6, on lo or the service device)."""
import ipaddress
import shutil
import subprocess

import pytest

from testbed.emulators import vim
from vpnaas.core import wgconfig
from vpnaas.core.model import Device, Peer
from vpnaas.vnf import vnfscript


def run_in_fresh_netns(setup, calls, after="", data=None):
    """Run lib.sh + tunnels.sh + ``calls`` (function, args...) after ``setup`` (shell) in a new
    network and mount namespace whose /etc/wireguard is a private tmpfs; ``after`` (shell) runs
    last, its output after the routes. ``data``: the step's data section (texts: Step.text)."""
    step = vnfscript.Step(["tunnels.sh"])
    for name, value in (data or {}).items():
        step.text(name, value)
    for call in calls:
        step.call(*call)
    program = step.program()
    outer = ("set -e; mount -t tmpfs tmpfs /etc/wireguard; ip link set lo up; "
             "sysctl -q -w net.ipv6.conf.all.disable_ipv6=0 net.ipv6.conf.lo.disable_ipv6=0; "
             + setup + '; f=$(mktemp); cat > "$f"; bash "$f" "$@"; rc=$?; '
             'echo "---ROUTES"; ip -o route show; ip -6 -o route show; '
             + (after + "; " if after else "") + 'echo "---ADDRS"; ip -o addr show; rm -f "$f"; exit $rc')
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


def test_labelled_service_addresses_get_their_reference_points_label_and_the_others_stay_as_they_were():
    """The 5G NFs bind by interface name: an address of a labelled reference point goes up as
    lo:vpnaas-<rp> (no dummy device here), and moves to a new label when its reference point
    changes; an unlabelled (EPS) address keeps lo:vpnaas, exactly as before."""
    calls = [("install_hooks",), ("service_addresses", "192.168.250.132/32=n2", "172.16.30.132/32=n11",
                                  "172.16.6.2/32")]
    proc, report, _, addrs = run_in_fresh_netns(":", calls)
    assert proc.returncode == 0, proc.stderr + report
    labels = {line.split()[3]: line.replace("\\", " ").split()[6] for line in addrs.splitlines()
              if " inet " in line and " lo" in line}
    assert labels == {"127.0.0.1/8": "lo", "192.168.250.132/32": "lo:vpnaas-n2", "172.16.30.132/32": "lo:vpnaas-n11",
                      "172.16.6.2/32": "lo:vpnaas"}
    relabel = calls + [("service_addresses", "192.168.250.132/32=n3", "172.16.6.2/32")]
    proc, report, _, addrs = run_in_fresh_netns(":", relabel)
    assert proc.returncode == 0, proc.stderr + report
    assert "lo:vpnaas-n3" in addrs and "lo:vpnaas-n2" not in addrs and "172.16.30.132" not in addrs
    assert "172.16.6.2/32 scope global lo:vpnaas" in addrs


def test_an_address_that_was_there_before_is_not_adopted():
    setup = "ip addr add 172.16.6.2/32 dev lo"
    calls = [("install_hooks",), ("service_addresses", "172.16.6.2/32"), ("service_addresses",)]
    proc, report, _, addrs = run_in_fresh_netns(setup, calls)
    assert proc.returncode == 0, proc.stderr + report
    assert "172.16.6.2/32" in addrs


#: A counting `ip` first on the step's PATH (lib.sh puts /usr/local/sbin first): every call logged.
IP_SHIM = ("mount -t tmpfs tmpfs /usr/local/sbin; real=$(command -v ip); "
           "printf '#!/bin/sh\\necho \"$*\" >> /etc/wireguard/ip-calls\\nexec %s \"$@\"\\n' \"$real\" "
           "> /usr/local/sbin/ip; chmod 755 /usr/local/sbin/ip")


def _routes_with_one_refused(lines):
    """Apply a routes file whose line for 10.250.1.3/32 ip refuses; the report names that route
    alone, and it is not added. Returns the routes the device then has."""
    setup = (VETH + "; ip addr add 172.16.6.1/32 dev lo; printf '" + "".join(x + "\\n" for x in lines)
             + "' > /etc/wireguard/wg-t.routes")
    proc, report, routes, _ = run_in_fresh_netns(setup, [("install_hooks",), ("apply_routes", "wg-t")])
    assert proc.returncode == 0, proc.stderr + report
    refused = [line for line in report.splitlines() if line.startswith("REFUSED")]
    assert len(refused) == 1 and refused[0].startswith("REFUSED wg-t 10.250.1.3/32 ip route: "), report
    assert "10.250.1.3 " not in routes, routes
    return routes


def test_a_route_ip_refuses_in_the_batch_is_reported_alone_and_the_others_are_added():
    """The batch fails when one of its routes does (a source address the VNF does not hold): each
    route is then replaced on its own, so the report names that one, with ip's reason."""
    routes = _routes_with_one_refused(["10.250.1.2/32 172.16.6.1", "10.250.1.3/32 172.16.6.99", "10.250.1.4/32 -"])
    assert "10.250.1.2 dev wg-t proto 148 scope link src 172.16.6.1" in routes, routes
    assert "10.250.1.4 dev wg-t proto 148" in routes, routes


def test_a_route_ip_cannot_parse_stops_the_batch_and_every_route_after_it_is_still_added():
    """ip exits at an argument it cannot parse even with -force (iproute2's invarg), so the lines
    after it in the batch are not applied: the replay of every line adds them, and the report names
    only the route ip refused."""
    routes = _routes_with_one_refused(["10.250.1.2/32 172.16.6.1", "10.250.1.3/32 10.0.0.999", "10.250.1.4/32 -",
                                       "10.250.1.5/32 172.16.6.1"])
    for added in ("10.250.1.2 ", "10.250.1.4 ", "10.250.1.5 "):
        assert added + "dev wg-t proto 148" in routes, routes


def test_routes_cost_one_listing_per_family_and_one_batch_not_a_call_per_prefix():
    wanted = "".join("10.250.{}.{}/32 172.16.6.1\\n".format(i // 200, i % 200 + 1) for i in range(64))
    setup = (VETH + "; ip addr add 172.16.6.1/32 dev lo; printf '" + wanted + "' > /etc/wireguard/wg-t.routes; "
             + IP_SHIM)
    calls = [("install_hooks",), ("apply_routes", "wg-t"), ("apply_routes", "wg-t")]
    proc, report, routes, _ = run_in_fresh_netns(setup, calls, after="echo ---IPCALLS; cat /etc/wireguard/ip-calls")
    assert proc.returncode == 0, proc.stderr + report
    assert "REFUSED" not in report
    routes, _, ip_calls = routes.partition("---IPCALLS\n")
    assert routes.count(" dev wg-t proto 148 ") == 64
    lines = ip_calls.splitlines()
    listings = [x for x in lines if x.endswith("route show table main")]
    # the first run: the two listings and one batch of the 64 routes (issue 37), no call per route
    assert not [x for x in lines if x.startswith(("-4 route replace", "-6 route replace"))], lines
    assert [x for x in lines if "batch" in x] == ["-4 -force -batch -"], lines
    assert len(lines) == 5 and len(listings) == 4 and lines[-2:] == listings[-2:]   # the second: the listings only


def test_routes_hook_follows_a_changed_source_and_leaves_its_own_default_route():
    setup = (VETH + "; ip addr add 172.16.6.1/32 dev lo; ip addr add 172.16.6.9/32 dev lo; "
             "ip route add 10.250.1.2/32 dev wg-t proto 148 src 172.16.6.9; "
             "ip route add 10.250.1.3/32 dev wg-t proto 148 src 172.16.6.9; "
             "ip route add default dev wg-t proto 148; "
             "printf '10.250.1.2/32 172.16.6.1\\n10.250.1.3/32 -\\n' > /etc/wireguard/wg-t.routes")
    proc, report, routes, _ = run_in_fresh_netns(setup, [("install_hooks",), ("apply_routes", "wg-t")])
    assert proc.returncode == 0, proc.stderr + report
    assert "10.250.1.2 dev wg-t proto 148 scope link src 172.16.6.1" in routes
    line = next(x for x in routes.splitlines() if x.startswith("10.250.1.3 "))
    assert " src " not in line and " proto 148" in line
    assert "default dev wg-t proto 148" in routes


def test_routes_hook_refuses_foreign_ipv6_multipath_and_typed_routes_and_withdraws_its_own_ipv6():
    setup = (VETH + "; ip link add eth1 type veth peer name eth1-p; ip link set eth1 up; ip link set eth1-p up; "
             "ip addr add 192.168.8.2/24 dev eth1; ip -6 addr add fd00:8::2/64 dev eth1 nodad; "
             "ip -6 route add fd00:250::2/128 dev eth1 proto static; "
             "ip route add 10.88.0.0/16 nexthop dev eth1 nexthop dev wg-t-peer; "
             "ip route add blackhole 10.99.0.0/16; "
             "ip -6 route add fd00:250::9/128 dev wg-t proto 148; "
             "printf 'fd00:250::2/128 -\\nfd00:250::3/128 -\\n10.88.0.0/16 -\\n10.99.0.0/16 -\\n' "
             "> /etc/wireguard/wg-t.routes")
    proc, report, routes, _ = run_in_fresh_netns(setup, [("install_hooks",), ("apply_routes", "wg-t")])
    assert proc.returncode == 0, proc.stderr + report
    refused = [line for line in report.splitlines() if line.startswith("REFUSED")]
    assert sorted(line.split()[2] for line in refused) == ["10.88.0.0/16", "10.99.0.0/16", "fd00:250::2/128"]
    assert "blackhole 10.99.0.0/16" in next(x for x in refused if " 10.99.0.0/16 " in x)
    assert "fd00:250::3 dev wg-t proto 148" in routes
    assert "fd00:250::9" not in routes and "fd00:250::2 dev eth1 proto static" in routes


def test_an_ipv4_mapped_prefix_is_compared_as_an_address_not_as_text():
    """Python before 3.13 writes ::ffff:10.0.0.7 as ::ffff:a00:7, iproute2 prints the dotted
    form: an operator's mapped route is still in the way, and the charm's own route in either
    spelling stays put run after run (it flapped present/absent when compared as text)."""
    setup = (VETH + "; ip link add eth1 type veth peer name eth1-p; ip link set eth1 up; ip link set eth1-p up; "
             "ip -6 route add ::ffff:10.0.0.7/128 dev eth1 proto static; "
             "printf '::ffff:a00:7/128 -\\n::ffff:a00:8/128 -\\n::FFFF:10.0.0.9/128 -\\n' "
             "> /etc/wireguard/wg-t.routes")
    calls = [("install_hooks",)] + [("apply_routes", "wg-t")] * 3
    proc, report, routes, _ = run_in_fresh_netns(setup, calls)
    assert proc.returncode == 0, proc.stderr + report
    refused = [line for line in report.splitlines() if line.startswith("REFUSED")]
    assert [line.split()[2] for line in refused] == ["::ffff:a00:7/128"] * 3, report
    assert "::ffff:10.0.0.7 dev eth1 proto static" in routes
    assert "::ffff:10.0.0.8 dev wg-t proto 148" in routes and "::ffff:10.0.0.9 dev wg-t proto 148" in routes


def test_an_unchanged_run_rewrites_no_file():
    """The service-address hook run again with the same wanted addresses (a second reconcile, or
    wg-quick's PreUp): the owned list keeps its inode and its bytes."""
    calls = [("install_hooks",), ("service_addresses", "172.16.6.2/32", "fd00::2/128")]
    owned = "/etc/wireguard/vpnaas-service-addresses.owned"
    after = ("echo INODES $(stat -c %i {0}) $(/etc/wireguard/vpnaas-service-addresses.sh && stat -c %i {0}); "
             "cat {0}".format(owned))
    proc, report, routes, _ = run_in_fresh_netns("true", calls, after=after)
    assert proc.returncode == 0, proc.stderr + report
    inodes = next(line for line in routes.splitlines() if line.startswith("INODES ")).split()[1:]
    assert len(inodes) == 2 and inodes[0] == inodes[1]
    assert routes.splitlines()[-2:] == ["172.16.6.2/32", "fd00::2/128"]


def facts_run(expected, names=(), setup="true"):
    step_calls = [("facts_guard", expected) + tuple(names), ("out", "APPLYING")]
    proc, report, _, _ = run_in_fresh_netns(setup, step_calls)
    assert proc.returncode == 0, proc.stderr + report
    lines = report.splitlines()
    digest = next(line.split()[1] for line in lines if line.startswith("FACTS ") and line != "FACTS changed")
    return lines, digest


def test_the_facts_guard_applies_nothing_unless_the_facts_are_the_planned_ones():
    setup = ("ip link add eth1 type veth peer name eth1-p; ip link set eth1 up; ip addr add 192.168.8.2/24 dev eth1; "
             "ip route add default via 192.168.8.1")
    lines, digest = facts_run("-", setup=setup)
    assert "FACTS changed" in lines and "APPLYING" not in lines and lines[-1] == "DONE"
    assert "FACT addr 192.168.8.2/24" in lines and "FACT gateway 192.168.8.1" in lines
    lines, again = facts_run(digest, setup=setup)
    assert again == digest and "FACTS changed" not in lines and "APPLYING" in lines
    # The same address with another gateway (a VNF rebuilt at that address): stopped again.
    lines, other = facts_run(digest, setup=setup.replace("via 192.168.8.1", "via 192.168.8.254"))
    assert other != digest and "FACTS changed" in lines and "APPLYING" not in lines


def test_the_facts_guard_resolves_the_peers_endpoint_names_on_the_vnf():
    # /etc/wireguard is the namespace's private tmpfs: the hosts file never touches the machine's.
    hosts = ("printf '127.0.0.1 localhost\\n192.168.8.77 hss.example\\n' > /etc/wireguard/hosts && "
             "mount --bind /etc/wireguard/hosts /etc/hosts")
    lines, _ = facts_run("-", ["hss.example", "nowhere.invalid"], setup=hosts)
    assert "FACT resolve hss.example 192.168.8.77" in lines
    assert "FACT resolve nowhere.invalid -" in lines


# ---------------------------------------------------------------------- key rotation (rotation.py)
TWO = ("ip link add wg-t type veth peer name wg-t-p; ip link add wr-t type veth peer name wr-t-p; "
       "for d in wg-t wr-t; do ip link set $d up; done; sysctl -q -w net.ipv4.conf.all.rp_filter=1")
MOVING = "172.16.6.129/32 -\n"


@pytest.mark.parametrize("first", ["wg-t", "wr-t"])
def test_a_route_that_moves_between_two_devices_is_moved_not_withdrawn(first):
    """Every route list staged first, then the devices in either order: the device that loses
    the prefix leaves it for the one that gains it, which replaces it; in between it still has
    its route."""
    setup = TWO + "; ip route add 172.16.6.129/32 dev wg-t proto 148"
    calls = [("install_hooks",), ("stage_routes", "wr-t", "D1", "wg-t", "D2"),
             ("apply_routes", first), ("out", "BETWEEN"), ("apply_routes", "wr-t" if first == "wg-t" else "wg-t")]
    after = "echo LISTS $(wc -c < /etc/wireguard/wr-t.routes) $(wc -c < /etc/wireguard/wg-t.routes)"
    proc, report, routes, _ = run_in_fresh_netns(setup, calls, after,
                                                 data={"D1_ROUTES": MOVING, "D2_ROUTES": ""})
    assert proc.returncode == 0, proc.stderr + report
    assert "172.16.6.129 dev wr-t proto 148" in routes and "172.16.6.129 dev wg-t" not in routes
    assert "LISTS 18 0" in routes


def test_the_route_list_of_a_device_that_goes_away_protects_nothing():
    setup = (TWO + "; ip route add 172.16.6.129/32 dev wg-t proto 148; "
             "printf '172.16.6.129/32 -\\n' > /etc/wireguard/wr-x.routes")
    calls = [("install_hooks",), ("stage_routes", "wg-t", "D1"), ("apply_routes", "wg-t")]
    proc, report, routes, _ = run_in_fresh_netns(setup, calls, "echo STALE $(wc -c < /etc/wireguard/wr-x.routes)",
                                                 data={"D1_ROUTES": ""})
    assert proc.returncode == 0, proc.stderr + report
    assert "172.16.6.129" not in routes.split("STALE")[0] and "STALE 0" in routes


def test_the_charms_devices_get_loose_reverse_path_filtering():
    rpf = "/proc/sys/net/ipv4/conf/{}/rp_filter"
    proc, report, routes, _ = run_in_fresh_netns(
        TWO + "; : > /etc/wireguard/wg-t.routes", [("install_hooks",), ("apply_routes", "wg-t")],
        after="echo RPF $(cat {}) $(cat {})".format(rpf.format("wg-t"), rpf.format("wr-t")))
    assert proc.returncode == 0, proc.stderr + report
    assert "RPF 2 0" in routes, "the device the hook ran for, and only that one"


def test_a_device_key_is_kept_renewed_or_copied_but_never_from_a_file_wg_refuses():
    keys = "/etc/wireguard/{}.key"
    setup = ("for d in wg-t wr-t; do wg genkey > /etc/wireguard/$d.key; "
             "wg pubkey < /etc/wireguard/$d.key > /etc/wireguard/$d.before; done; echo junk > " + keys.format("bad"))
    calls = [("device_key", "wg-t", "keep", "-"), ("device_key", "wr-t", "copy", "bad"),
             ("device_key", "wg-t", "copy", "wr-t"), ("device_key", "wr-t", "fresh", "-"),
             ("device_key", "new-t", "keep", "-")]
    show = "; ".join("echo {0} $(cat /etc/wireguard/{0}.before 2>/dev/null || echo -) $(wg pubkey < {1})"
                     .format(d, keys.format(d)) for d in ("wg-t", "wr-t", "new-t"))
    proc, report, routes, _ = run_in_fresh_netns(setup, calls, after=show)
    assert proc.returncode == 0, proc.stderr + report
    state = {line.split()[0]: line.split()[1:] for line in routes.splitlines() if line.split()[:1] in
             (["wg-t"], ["wr-t"], ["new-t"])}
    assert state["wg-t"][1] == state["wr-t"][0], "the main device took its temporary device's key"
    assert state["wr-t"][1] not in (state["wr-t"][0], state["wg-t"][0]), "a fresh key"
    assert len(state["new-t"][1]) == 44 and report == "DONE\n", "nothing of a key is reported"



def _public_key():
    private = subprocess.run(["wg", "genkey"], stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout
    return subprocess.run(["wg", "pubkey"], input=private, stdout=subprocess.PIPE, universal_newlines=True,
                          check=True).stdout.strip()


def _device_body(peers):
    dev = Device("t", 51999, ipaddress.ip_interface("10.250.9.1/30"), 1420, 25, [], "192.0.2.1", name="wg-t")
    for key, endpoint, prefixes in peers:
        dev.peers.append(Peer(key, endpoint, [ipaddress.ip_network(p) for p in prefixes], "t/0"))
    return wgconfig.render_body(dev)


def _applied(text):
    return [line for line in text.splitlines() if line.startswith("APPLIED ")]


@pytest.mark.parametrize("between, second", [
    ("true", "APPLIED wg-t unchanged"),
    ("wg set wg-t peer {second_key} allowed-ips 10.250.9.6/32,10.9.9.9/32", "APPLIED wg-t set 1"),
    ("wg set wg-t listen-port 51998", "APPLIED wg-t set 1"),
    ("wg set wg-t peer {first_key} endpoint 192.0.2.9:51820", "APPLIED wg-t set 1"),
    ("wg set wg-t peer {second_key} remove", "APPLIED wg-t set 1"),
    ("wg set wg-t peer {third_key} allowed-ips 10.250.9.10/32 peer {first_key} persistent-keepalive off",
     "APPLIED wg-t set 2"),
    ("wg set wg-t private-key <(wg genkey)", "APPLIED wg-t set 1"),
    ("wg set wg-t peer {first_key} preshared-key <(wg genpsk)", "APPLIED wg-t set 1"),
])
def test_a_device_whose_configuration_did_not_change_is_not_touched(between, second):
    """`wg syncconf` replaces every peer's allowed IPs even when they are unchanged, and the
    userspace implementations drop a packet to or from that peer in between: a device already as
    wanted is left alone (`unchanged`); one that drifted (an allowed prefix, the port, a literal
    endpoint, a peer changed, removed or added behind the charm's back, its key) is set back, the
    differing settings only (`set <n>`). Real wireguard-go, the step run twice in one fresh
    namespace."""
    first_key, second_key, third_key = _public_key(), _public_key(), _public_key()
    peers = [(first_key, "192.0.2.2:51820", ["10.250.9.2/32", "172.16.6.2/32"]), (second_key, "", ["10.250.9.6/32"])]
    data = {"D1_BODY": _device_body(peers), "D1_ROUTES": ""}
    calls = [("tunnels_prepare",), ("stage_routes", "wg-t", "D1"), ("ensure_device", "wg-t", "keep", "-", "0", "D1")]
    # Deleting the device ends its wireguard-go, which would otherwise outlive the namespace.
    after = ('{}; echo SECOND; bash "$f" "$@"; echo RUNNING; wg show wg-t dump | tail -n +2 | cut -f1,3,4 | sort; '
             'wg show wg-t private-key | wg pubkey; cat /etc/wireguard/wg-t.key | wg pubkey; wg show wg-t dump | '
             'tail -n +2 | cut -f8; ip link del wg-t'
             .format(between.format(first_key=first_key, second_key=second_key, third_key=third_key)))
    # The data plane's directory as on a testbed VNF: private (what the step installs stays here).
    setup = ("mount -t tmpfs tmpfs /run/wireguard; mkdir -p {0}; mount -t tmpfs tmpfs {0}"
             .format(vim.DATAPLANE_DIR))
    proc, report, routes, _ = run_in_fresh_netns(setup, calls, after=after, data=data)
    assert proc.returncode == 0, proc.stderr + report
    assert _applied(report) == ["APPLIED wg-t up"]
    rerun, _, running = routes.partition("SECOND\n")[2].partition("RUNNING\n")
    assert _applied(rerun) == [second]
    lines = running.split("\n")
    assert sorted(" ".join(lines[:2]).split()) == sorted([first_key, "192.0.2.2:51820", "10.250.9.2/32,172.16.6.2/32",
                                                         second_key, "(none)", "10.250.9.6/32"]), running
    assert lines[2] == lines[3], "the device runs on the key of its file"
    assert lines[4:6] == ["25", "25"], "every peer's keepalive as configured"


def test_a_peer_that_joins_leaves_or_changes_is_set_alone_and_the_others_are_not_touched(tmp_path):
    """A hub's spoke joins, another leaves, a third changes its prefixes: each step sets exactly
    those peers with one `wg set` (never `wg syncconf`, which re-inserts every peer's allowed IPs:
    a packet to another spoke in between is lost), and the device ends as configured. `wg` is
    traced in the VNF's own mount namespace. Real wireguard-go."""
    keys = [_public_key() for _ in range(3)]
    steps = [[(keys[0], "192.0.2.2:51820", ["10.250.9.2/32"]), (keys[1], "192.0.2.3:51820", ["10.250.9.3/32"])],
             [(keys[0], "192.0.2.2:51820", ["10.250.9.2/32"]), (keys[1], "192.0.2.3:51820", ["10.250.9.3/32"]),
              (keys[2], "192.0.2.4:51820", ["10.250.9.4/32"])],
             [(keys[1], "192.0.2.3:51820", ["10.250.9.3/32", "172.16.6.3/32"]),
              (keys[2], "192.0.2.4:51820", ["10.250.9.4/32"])]]
    for i, peers in enumerate(steps):
        step = vnfscript.Step(["tunnels.sh"])
        step.text("D1_BODY", _device_body(peers))
        step.text("D1_ROUTES", "")
        step.call("tunnels_prepare").call("stage_routes", "wg-t", "D1").call("ensure_device", "wg-t", "keep", "-",
                                                                              "0", "D1")
        (tmp_path / "step{}.sh".format(i)).write_text(step.program())
        args = " ".join(step.args)
    trace = "/etc/wireguard/trace.log"
    wrapper = "#!/bin/sh\necho \"$*\" >> {}\nexec {} \"$@\"\n".format(trace, shutil.which("wg"))
    outer = ("set -e; mount -t tmpfs tmpfs /etc/wireguard; mount -t tmpfs tmpfs /usr/local/sbin; "
             "mount -t tmpfs tmpfs /run/wireguard; mkdir -p {dp}; mount -t tmpfs tmpfs {dp}; ip link set lo up; "
             "printf '%s' \"$1\" > /usr/local/sbin/wg; chmod 755 /usr/local/sbin/wg; "
             "for i in 0 1 2; do : > {t}; bash {d}/step$i.sh {a}; echo \"---TRACE $i\"; "
             "grep -E '^(set|syncconf|setconf|addconf)' {t} || true; echo \"---END $i\"; done; "
             "echo ---RUNNING; wg show wg-t dump | tail -n +2 | cut -f1,4 | sort; "
             "ip link del wg-t").format(dp=vim.DATAPLANE_DIR, t=trace, d=tmp_path, a=args)
    proc = subprocess.run(["unshare", "--net", "--mount", "--propagation", "private", "bash", "-c", outer, "x",
                           wrapper], universal_newlines=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    out = proc.stdout
    applied = [_applied(out.split("---END {}".format(i - 1))[-1].split("---TRACE {}".format(i))[0]) for i in range(3)]
    assert applied == [["APPLIED wg-t up"], ["APPLIED wg-t set 1"], ["APPLIED wg-t set 2"]], out
    traced = [out.split("---TRACE {}\n".format(i))[1].split("---END")[0].splitlines() for i in range(3)]
    assert traced[1] == ["set wg-t peer {} endpoint 192.0.2.4:51820 persistent-keepalive 25 allowed-ips "
                         "10.250.9.4/32".format(keys[2])], out
    assert traced[2] == ["set wg-t peer {} allowed-ips 10.250.9.3/32,172.16.6.3/32 peer {} remove".format(
        keys[1], keys[0])], out
    running = proc.stdout.split("---RUNNING\n")[1].split()
    assert sorted(running) == sorted([keys[1], "10.250.9.3/32,172.16.6.3/32", keys[2], "10.250.9.4/32"])
