"""The tunnel step's `wg-quick strip` in its own shell (vnf/tunnels/devices.sh `wg_strip`): for
every configuration here it gives what upstream's wg-quick itself prints for the same file (its
own `parse_options` and `cmd_strip`, run from the installed wg-quick: the functions above its
"function override insertion point", so no root is needed), and the managed peers exactly as
`pq_managed`'s awk reads them from that file."""
import ipaddress
import os
import shutil
import subprocess

import pytest

from vpnaas.core import wgconfig
from vpnaas.core.model import Device, Peer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEVICES = os.path.join(ROOT, "charms", "vpnaas", "vnf", "tunnels", "devices.sh")
WG_QUICK = shutil.which("wg-quick") or "/usr/bin/wg-quick"
MARK = "# PresharedKey managed by pq-psk"


def key(c):
    return c * 43 + "="


def rendered(n, pq=False):
    """The charm's own rendering of a hub device with n peers (pq: their PSKs managed by pq-psk)."""
    dev = Device(endpoint="vpn", listen_port=51820, address=ipaddress.ip_interface("10.251.0.1/24"), mtu=1420,
                 keepalive=25, service_addresses=[ipaddress.ip_interface("172.17.0.1/32")], publish_host="192.0.2.1",
                 name="wg-vpn", pq_psk=pq)
    dev.peers = [Peer(public_key=key("ABCDEFGHIJKLMNOPQRSTUVWXYZ"[i % 26]), endpoint="192.0.2.{}:51820".format(i + 2),
                      allowed_ips=[ipaddress.ip_network("10.0.{}.0/24".format(i)),
                                   ipaddress.ip_network("172.17.1.{}/32".format(i))],
                      source="s{}/0".format(i), tunnel=ipaddress.ip_network("10.251.0.{}/32".format(i + 2)),
                      pq_psk=pq)
                 for i in range(n)]
    return "[Interface]\nPrivateKey = {}\n".format(key("P")) + wgconfig.render_body(dev)


HANDMADE = [
    # case, blanks, comments, tabs, an empty value, settings wg-quick keeps and drops, no final line break
    "[interface]\n  address = 10.0.0.1/24 # a comment\nPrivateKey=" + key("P") + "\n\tMtu\t= 1420\nDNS = 1.1.1.1\n"
    "Table = off\nPreUp = echo a = b\nPostUp = x\nPreDown = y\nPostDown = z\nSaveConfig = false\nListenPort = 1\n"
    "FwMark = 0x1\n# Address = 10.9.9.9/32\n\n[PEER]\nPublicKey = " + key("A") + "\nAddress = 10.0.0.9/32\n"
    + MARK + "\nAllowedIPs = 10.0.0.2/32,  10.0.0.3/32\n[Peer]\n" + MARK + "\nPublicKey = " + key("B") + " = x\n"
    "[Interface]\nMTU = 1\n[Peer]\nPublicKey = " + key("C") + "\nEndpoint = host.example:51820",
    "",
    "\n\n[Interface]\n\n\n",
    "[Peer]\nPublicKey\n" + MARK + "\n[Peer]\n" + MARK + "\n  PublicKey = " + key("D") + "\n",
    "[Interface] # x\nAddress\nmtu=\n=\n#\n[Peer]PublicKey = " + key("E") + "\n" + MARK + "\n",
]


def upstream_strip(tmp_path, text):
    """What wg-quick prints for `wg-quick strip` of a file holding text, through $(...) as the step read it."""
    path = tmp_path / "wg-vpn.conf"
    path.write_text(text)
    path.chmod(0o600)
    with open(WG_QUICK) as f:
        source = f.read()
    functions = source.split("# ~~ function override insertion point ~~")[0]
    script = tmp_path / "wg-quick-functions"
    script.write_text(functions + '\nparse_options "$1"\nout=$(cmd_strip)\nprintf "%s" "$out"\n')
    run = subprocess.run(["bash", str(script), str(path)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, universal_newlines=True, timeout=20)
    assert run.returncode == 0, run.stderr
    return run.stdout


def ours(tmp_path, text):
    path = tmp_path / "wg-vpn.conf"
    path.write_text(text)
    run = subprocess.run(["bash", "-c", 'set -Eeuo pipefail; LC_ALL=C; source "$0"; wg_strip "$1"; '
                          'printf "%s\\n--\\n%s\\n--\\n%s" "$STRIPPED" "$MANAGED" "$(pq_managed "$2")"',
                          DEVICES, text, str(path)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=20)
    assert run.returncode == 0, run.stderr
    stripped, managed, awk = run.stdout.split("\n--\n")
    return stripped, managed, awk


@pytest.mark.parametrize("text", [rendered(1), rendered(8), rendered(8, pq=True), rendered(32, pq=True)] + HANDMADE,
                         ids=["hub-1", "hub-8", "hub-8-pq", "hub-32-pq"] + ["handmade-{}".format(i)
                                                                           for i in range(len(HANDMADE))])
def test_wg_strip_is_wg_quick_strip(tmp_path, text):
    assert os.path.exists(WG_QUICK), "wireguard-tools' wg-quick is missing (scripts/install-deps.sh installs it)"
    stripped, managed, awk = ours(tmp_path, text)
    assert stripped == upstream_strip(tmp_path, text)
    assert managed == awk


def test_the_managed_peers_of_a_rendering_are_found():
    text = rendered(3, pq=True)
    assert MARK in text
    run = subprocess.run(["bash", "-c", 'set -Eeuo pipefail; source "$0"; wg_strip "$1"; printf "%s" "$MANAGED"',
                          DEVICES, text], stdout=subprocess.PIPE, universal_newlines=True, timeout=20, check=True)
    assert run.stdout.split() == [key("A"), key("B"), key("C")]
