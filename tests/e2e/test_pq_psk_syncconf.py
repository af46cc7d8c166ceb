"""The tunnel step's whole sync (tunnels/devices.sh `device_sync`, its `wg syncconf` fallback)
keeps the preshared key pq-psk agreed with a managed peer, on the real `wg` (wireguard-tools) and
a real wireguard-go device in a network namespace of its own: `wg syncconf` would give a running
peer whose entry has no PresharedKey an all-zero one (wireguard-tools src/setconf.c, sync_conf),
and a managed peer's entry never has one. An unmanaged peer still gets the key its entry names.

That reset came with wireguard-tools v1.0.20260223 (commit 780182e, "syncconf: account for psks
removed from config file"); an older `wg` (Debian's and Ubuntu 18.04's) leaves the key as it runs.
VPNAAS_WG_TOOLS names a folder whose `wg` the test uses instead of the installed one (a build of
a later release), so the test is run against both behaviours."""
import os
import shutil
import subprocess
import uuid

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VNF = os.path.join(ROOT, "charms", "vpnaas", "vnf")
MARK = "# PresharedKey managed by pq-psk"


TOOLS = os.environ.get("VPNAAS_WG_TOOLS", "")
ENV = dict(os.environ, PATH=TOOLS + ":" + os.environ["PATH"]) if TOOLS else dict(os.environ)


def run(*args, stdin=None):
    return subprocess.run(list(args), input=stdin, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, check=True, timeout=20).stdout.strip()


def wireguard_go():
    local = os.path.join(ROOT, "build", "tools", "wireguard-go")
    return local if os.access(local, os.X_OK) else shutil.which("wireguard-go")


@pytest.fixture
def device(environment_ready):
    """A wireguard-go device in a throwaway namespace: (namespace, device name)."""
    tag = uuid.uuid4().hex[:8]
    ns, dev = "pqsync-" + tag, "wgs" + tag
    assert wireguard_go(), "wireguard-go is needed (make deps)"
    run("ip", "netns", "add", ns)
    daemon = None
    try:
        daemon = subprocess.Popen(["ip", "netns", "exec", ns, wireguard_go(), "-f", dev],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(100):
            if subprocess.run(["ip", "netns", "exec", ns, "wg", "show", dev], stdout=subprocess.DEVNULL, env=ENV,
                              stderr=subprocess.DEVNULL).returncode == 0:
                break
            subprocess.run(["sleep", "0.05"])
        else:
            raise AssertionError("wireguard-go did not come up")
        yield ns, dev
    finally:
        if daemon is not None:
            daemon.terminate()
            daemon.wait(timeout=10)
        if os.path.exists("/etc/wireguard/{}.conf".format(dev)):
            os.remove("/etc/wireguard/{}.conf".format(dev))
        run("ip", "netns", "del", ns)


def keys():
    private = run("wg", "genkey")
    return private, run("wg", "pubkey", stdin=private + "\n")


def test_the_whole_sync_keeps_a_managed_peers_psk(device, tmp_path):
    ns, dev = device
    if TOOLS:
        assert os.access(os.path.join(TOOLS, "wg"), os.X_OK), "VPNAAS_WG_TOOLS has no wg"
    own, _ = keys()
    _, managed = keys()
    _, plain = keys()
    agreed, wanted_psk = run("wg", "genpsk"), run("wg", "genpsk")
    secret = tmp_path / "secret"
    secret.write_text(own + "\n")
    psk = tmp_path / "psk"
    psk.write_text(agreed + "\n")
    os.chmod(str(secret), 0o600)
    os.chmod(str(psk), 0o600)
    run("ip", "netns", "exec", ns, "wg", "set", dev, "private-key", str(secret),
        "peer", managed, "allowed-ips", "10.0.0.2/32", "preshared-key", str(psk),
        "peer", plain, "allowed-ips", "10.0.0.6/32")
    # The charm's file marks the managed peer (pq_managed reads it); the stripped configuration
    # the step syncs has no PresharedKey for it, and a new one for the unmanaged peer: only a
    # whole sync sets that (wg_peer_changes says "resync").
    peers = "[Peer]\nPublicKey = {}\n{}\nAllowedIPs = 10.0.0.2/32\n\n[Peer]\nPublicKey = {}\nAllowedIPs = 10.0.0.6/32\n"
    os.makedirs("/etc/wireguard", exist_ok=True)
    with open("/etc/wireguard/{}.conf".format(dev), "w") as f:
        f.write("[Interface]\nAddress = 10.0.0.1/30\n\n" + peers.format(managed, MARK, plain))
    stripped = ("[Interface]\nPrivateKey = {}\n\n[Peer]\nPublicKey = {}\nAllowedIPs = 10.0.0.2/32\n\n[Peer]\n"
                "PublicKey = {}\nPresharedKey = {}\nAllowedIPs = 10.0.0.6/32\n").format(own, managed, plain, wanted_psk)
    version = run("wg", "--version").split()[1]    # the step's `wg` is the one the test set
    script = ('set -euo pipefail; WG_TIMEOUT=10; source "$0/tunnels/devices.sh"; wg --version | grep -qF "$2"; '
              'device_sync "$1" "$(cat)" ""; echo "$SYNC_HOW"')
    out = subprocess.run(["ip", "netns", "exec", ns, "bash", "-c", script, VNF, dev, version],
                         input=stripped, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         universal_newlines=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.split()[-1] == "syncconf", out.stdout
    assert agreed not in out.stdout + out.stderr and own not in out.stdout + out.stderr
    shown = run("ip", "netns", "exec", ns, "wg", "show", dev, "preshared-keys")
    held = dict(line.split("\t") for line in shown.splitlines())
    assert held[plain] == wanted_psk
    assert held[managed] == agreed, "the whole sync reset the key pq-psk agreed"
