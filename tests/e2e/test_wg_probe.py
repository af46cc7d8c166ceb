"""The testbed's WireGuard probe must never delete a starting daemon's UAPI socket.

`wg` deletes a UAPI socket that refuses a connection, taking it for stale; a userspace daemon's
socket does so between its bind() and listen(). A socket held in exactly that state shows both
what `wg show` does to it and that Vnf.wg_show leaves it alone."""
import subprocess
import time

import pytest

from testbed import tunnels
from testbed.emulators import vim

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
