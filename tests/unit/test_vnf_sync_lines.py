"""The device sync's comparison (vnf/tunnels/devices.sh: wg_canon_lines and wg_peer_changes, one
`wg show dump` read by one awk): a device that is as wanted gives no line, whatever the order
wg lists the allowed prefixes in; an endpoint that is a name is compared with the name it had
in the previous configuration, not with the address the device resolved it to; a device that
does not answer is "absent" (the whole sync follows); only the peer that joined is set."""
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEVICES = os.path.join(ROOT, "charms", "vpnaas", "vnf", "tunnels", "devices.sh")
OWN = "O" * 43 + "="
A = "A" * 43 + "="
B = "B" * 43 + "="


def wanted(b_endpoint="spoke-b.example:51820", with_b=True):
    text = ("[Interface]\nPrivateKey = {}\nListenPort = 51820\n\n[Peer]\nPublicKey = {}\n"
            "AllowedIPs = 10.0.0.2/32, 172.17.1.1/32\nEndpoint = 192.0.2.2:51820\nPersistentKeepalive = 25\n").format(
        OWN, A)
    if with_b:
        text += "\n[Peer]\nPublicKey = {}\nAllowedIPs = 10.0.0.3/32\nEndpoint = {}\n".format(B, b_endpoint)
    return text


def dump(with_b=True):
    lines = ["{}\tpub\t51820\toff".format(OWN),
             # wg lists the prefixes in its own order: compared as a set
             "{}\t(none)\t192.0.2.2:51820\t172.17.1.1/32,10.0.0.2/32\t0\t0\t0\t25".format(A)]
    if with_b:
        lines.append("{}\t(none)\t198.51.100.7:51820\t10.0.0.3/32\t0\t0\t0\toff".format(B))
    return "\n".join(lines)


def changes(want, previous, running):
    run = subprocess.run(["bash", "-c", 'set -euo pipefail; source "$0"; wg_canon_lines "" <(printf "%s\\n" "$1") '
                          '<(printf "%s\\n" "$2") <(printf "%s" "$3") | LC_ALL=C sort | wg_peer_changes',
                          DEVICES, want, previous, running],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=20)
    assert run.returncode == 0, run.stderr
    return [line for line in run.stdout.split("\n") if line]


def test_a_device_as_wanted_gives_no_change():
    assert changes(wanted(), wanted(), dump()) == []


def test_a_name_is_compared_with_the_name_it_had():
    assert changes(wanted("spoke-b2.example:51820"), wanted(), dump()) == [
        "set {} spoke-b2.example:51820 - - -".format(B)]


def test_a_device_that_does_not_answer_is_absent():
    assert changes(wanted(), wanted(), "")[0] == "absent"


def test_only_the_peer_that_joined_is_set():
    assert changes(wanted(), wanted(with_b=False), dump(with_b=False)) == [
        "set {} spoke-b.example:51820 off 10.0.0.3/32 -".format(B)]
