"""Nothing that asks WireGuard on a VNF -- the testbed's probe, the metrics collector
(vnf/wg-collect.py), the step's and the OAI service's handshake tests -- may delete a starting
daemon's UAPI socket.

`wg` deletes a UAPI socket that refuses a connection, taking it for stale (wireguard-tools
src/ipc-uapi-unix.h); a userspace daemon's socket does so between its bind() and listen(), and
wireguard-go exits when the file goes (ipc/uapi_linux.go): the step's `wg-quick up` then fails
with "Cannot find device". A socket held in exactly that state shows both what `wg show` does to
it and that ours leave it alone; real wireguard-go and boringtun devices show that the collector
reads them over their sockets exactly as upstream's `wg show all dump` prints them."""
import json
import os
import subprocess
import time

import pytest

from testbed import tunnels
from testbed.emulators import vim

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VNF_DIR = os.path.join(ROOT, "charms", "vpnaas", "vnf")
COLLECTOR = os.path.join(VNF_DIR, "wg-collect.py")
BORINGTUN = os.path.join(ROOT, "build", "tools", "boringtun-cli")
LOAD = ("import importlib.util, json, sys\n"
        "spec = importlib.util.spec_from_file_location('c', sys.argv[1])\n"
        "c = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(c)\n")
HOLD = ("import socket, sys\n"
        "s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
        "s.bind(sys.argv[1])\n"
        "if sys.argv[2] == 'listen':\n"
        "    s.listen(1)\n"
        "print('bound', flush=True)\n"
        "sys.stdin.read()\n")


def _hold(vnf, path, listen):
    holder = vnf.popen(["python3", "-c", HOLD, path, "listen" if listen else "bind-only"], stdin=subprocess.PIPE,
                       stdout=subprocess.PIPE, universal_newlines=True)
    assert holder.stdout.readline().strip() == "bound"
    return holder


def _socket_exists(vnf, device):
    return vnf.exec(["test", "-S", "/run/wireguard/{}.sock".format(device)], check=False).returncode == 0


def test_a_bound_but_not_listening_socket_is_left_alone(testbed):
    vnf = testbed.add_vnf("a")
    holder = _hold(vnf, "/var/run/wireguard/wgz.sock", listen=False)
    try:
        assert not vnf.uapi_listening("wgz")
        assert vnf.wg_show("wgz") == ""
        assert vnf.wg_show("wgz", "latest-handshakes") == ""
        assert _socket_exists(vnf, "wgz"), "the probe deleted a starting daemon's socket"
        # What the probe avoids: plain `wg show` takes the socket for stale and deletes it.
        assert vnf.exec(["wg", "show", "wgz"], check=False).returncode != 0
        assert not _socket_exists(vnf, "wgz")
    finally:
        holder.communicate("", timeout=10)


def test_a_listening_socket_is_seen_as_boringtun_names_it(testbed):
    vnf = testbed.add_vnf("a")
    holder = _hold(vnf, "/var/run/wireguard//wgx.sock", listen=True)
    try:
        assert vnf.uapi_listening("wgx")
        assert not vnf.uapi_listening("wg")
    finally:
        holder.communicate("", timeout=10)


def test_a_listening_daemon_is_seen_and_answered(testbed):
    vnf = testbed.add_vnf("a")
    daemon = vnf.popen(["env", "WG_PROCESS_FOREGROUND=1", vim.userspace_wireguard(), "-f", "wgy"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not vnf.uapi_listening("wgy"):
            assert daemon.poll() is None, "wireguard-go exited with {}".format(daemon.returncode)
            assert time.monotonic() < deadline, "wireguard-go never listened on its UAPI socket"
            time.sleep(0.05)
        assert vnf.wg_show("wgy").startswith("interface: wgy")
        assert not vnf.uapi_listening("wgz")
    finally:
        daemon.terminate()
        daemon.wait(10)


def test_a_bare_pair_that_cannot_start_says_why_and_leaves_nothing_running(testbed):
    testbed.add_link("u", "10.77.0.0/24")
    a = testbed.add_vnf("a", {"u": "10.77.0.1/24"})
    b = testbed.add_vnf("b", {"u": "10.77.0.2/24"})
    pair = tunnels.WireGuardPair(a, b, "10.77.0.1", "10.77.0.2", 3, "wireguard-go", "/bin/false")
    with pytest.raises(tunnels.TunnelError) as failed:
        pair.up()
    assert "did not create wgb3 in a (exited with 1)" in str(failed.value)
    assert pair.procs == [] and pair.pids() == []


def test_a_scrape_leaves_a_starting_daemons_socket_alone(testbed):
    vnf = testbed.add_vnf("a")
    holder = _hold(vnf, "/run/wireguard/wgz.sock", listen=False)
    try:
        text = vnf.exec(["python3", "-c", LOAD + "sys.stdout.write(c.exposition({'labels': '/nonexistent'}).decode())",
                         COLLECTOR]).stdout
        assert _socket_exists(vnf, "wgz"), "the collector deleted a starting daemon's socket"
        assert "\nvpnaas_wireguard_up 1\n" in text
        # the tunnel step's and the OAI service's handshake tests do not ask it either
        for script, function in (("tunnels/devices.sh", "has_handshake"), ("oai/service.sh", "handshake")):
            run = vnf.exec(["bash", "-c", 'source "$0"; {} wgz'.format(function), os.path.join(VNF_DIR, script)],
                           check=False)
            assert run.returncode != 0 and _socket_exists(vnf, "wgz"), script
        # What they avoid: upstream's `wg show all dump` takes the socket for stale and deletes it.
        vnf.exec(["wg", "show", "all", "dump"], check=False)
        assert not _socket_exists(vnf, "wgz")
    finally:
        holder.communicate("", timeout=10)


def _start(vnf, program, device):
    """A userspace device started as wg-quick starts it (the program daemonizes), once it listens."""
    vnf.exec(["env", "WG_SUDO=true", "WG_LOG_FILE=/run/wireguard/{}.log".format(device), program, device])
    deadline = time.monotonic() + 120
    while not vnf.uapi_listening(device):
        assert time.monotonic() < deadline, "{} never listened on its UAPI socket".format(program)
        time.sleep(0.05)


def _handshaken(vnf, device):
    lines = vnf.exec(["wg", "show", device, "latest-handshakes"]).stdout.splitlines()
    return any(line.split()[1] != "0" for line in lines)


#: Each device's peers: the other device (a preshared key, keepalives every second: they start the
#: handshake; both devices are in one namespace, with no route between them) and one that is never
#: reached (an IPv6 endpoint, no allowed IP).
CONFIGURE = ('wg set "$1" private-key <(printf "%s\\n" "$2") listen-port "$3" '
             'peer "$4" endpoint "127.0.0.1:$5" allowed-ips "$6/32,fd66::/64" preshared-key <(printf "%s\\n" "$7") '
             'persistent-keepalive 1 peer "$8" endpoint "[fd66::9]:4242" allowed-ips "" persistent-keepalive 25')


def test_the_collector_reads_userspace_devices_exactly_as_wg_prints_them(testbed):
    vnf = testbed.add_vnf("a")
    devices = (("wgo", vim.userspace_wireguard(), 51820, "10.66.0.1"), ("wgb", BORINGTUN, 51821, "10.66.0.2"))
    keys = {dev: vnf.exec(["wg", "genkey"]).stdout.strip() for dev, _, _, _ in devices}
    psk = vnf.exec(["wg", "genkey"]).stdout.strip()
    try:
        for dev, program, _, _ in devices:
            _start(vnf, program, dev)
        for dev, _, port, _ in devices:
            other = [d for d in devices if d[0] != dev][0]
            pub = vnf.exec(["wg", "pubkey"], input=keys[other[0]]).stdout.strip()
            vnf.exec(["bash", "-c", CONFIGURE, "-", dev, keys[dev], str(port), pub, str(other[2]), other[3], psk,
                      "J" * 42 + "E="])
        deadline = time.monotonic() + 120
        while not all(_handshaken(vnf, dev) for dev, _, _, _ in devices):
            assert time.monotonic() < deadline, "the devices never shook hands"
            time.sleep(0.1)
        # the counters grow with each keepalive: wg's are read between two of the collector's
        before = json.loads(vnf.exec(["python3", "-c", LOAD + "print(json.dumps(c.wg_dump()))", COLLECTOR]).stdout)
        theirs = vnf.exec(["wg", "show", "all", "dump"]).stdout
        ours = vnf.exec(["python3", "-c", LOAD + "print(json.dumps(c.wg_dump()))", COLLECTOR]).stdout
        # The kernel devices' path over the same devices: `wg show <dev> dump`, one device's form
        # (no device column), when sysfs names them wireguard and no socket is listed beside them.
        fake = vnf.exec(["mktemp", "-d"]).stdout.strip()
        vnf.exec(["bash", "-c", 'mkdir "$1/run" && for d in wgo wgb; do mkdir -p "$1/sys/$d" && '
                  'echo DEVTYPE=wireguard > "$1/sys/$d/uevent"; done', "-", fake])
        by_wg = "print(json.dumps(c.wg_dump(sys.argv[2] + '/run', sys.argv[2] + '/sys')))"
        kernel = vnf.exec(["python3", "-c", LOAD + by_wg, COLLECTOR, fake]).stdout
        vnf.exec(["rm", "-rf", fake])
    finally:
        for dev, _, _, _ in devices:
            vnf.exec(["ip", "link", "del", dev], check=False)
    after = json.loads(ours)
    expected = {}
    for line in theirs.splitlines():
        f = line.split("\t")
        if len(f) == 9:
            f[2] = "(none)" if f[2] == "(none)" else "(hidden)"
            expected.setdefault(f[0], []).append(f)
        else:
            expected.setdefault(f[0], [])
    assert sorted(after) == sorted(before) == sorted(expected) == ["wgb", "wgo"]
    for dev in expected:
        for low, wg, high in zip(sorted(before[dev]), sorted(expected[dev]), sorted(after[dev])):
            assert low[:5] + low[8:] == wg[:5] + wg[8:] == high[:5] + high[8:]
            for i in (6, 7):   # received and sent bytes
                assert int(low[i]) <= int(wg[i]) <= int(high[i]), (i, low, wg, high)
            # the latest handshake: wireguard-go's time grows; boringtun 0.7.1's is an age, which
            # a new handshake (every 2 minutes) sets back
            assert (low[5] == "0") == (wg[5] == "0") == (high[5] == "0"), (low, wg, high)
            assert dev == "wgb" or int(low[5]) <= int(wg[5]) <= int(high[5]), (low, wg, high)
        assert len(before[dev]) == len(expected[dev]) == len(after[dev]) == 2
        assert sum(1 for f in after[dev] if f[5] != "0") == 1, [f[5:] for f in after[dev]]   # the handshake
    assert any(int(f[6]) > 0 for f in after["wgo"]), after["wgo"]   # (boringtun 0.7.1 counts data bytes only)
    by_kernel = json.loads(kernel)
    assert sorted(by_kernel) == ["wgb", "wgo"]
    for dev in expected:
        assert [f[:5] for f in sorted(by_kernel[dev])] == [f[:5] for f in sorted(expected[dev])]
    for secret in [psk] + list(keys.values()):
        assert secret not in ours and secret not in kernel
