"""The tunnel step's sync never undoes a preshared key the pq-psk daemon installed: a peer marked
"PresharedKey managed by pq-psk" in the device's configuration has no psk line on either side of
the comparison, so an unchanged device stays unchanged and a new such peer is set without a whole
resync; a peer not marked still gets its preshared key reset (pq-psk off: classical, as before)."""
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEVICES = os.path.join(ROOT, "charms", "vpnaas", "vnf", "tunnels", "devices.sh")
A = "A" * 43 + "="
B = "B" * 43 + "="
PSK = "C" * 43 + "="
CONF = ("[Interface]\nAddress = 10.0.0.1/30\n\n[Peer]\n# spgwc/0\nPublicKey = {}\n"
        "# PresharedKey managed by pq-psk\nAllowedIPs = 10.0.0.2/32\n\n[Peer]\n# manual\n"
        "PublicKey = {}\nAllowedIPs = 10.0.0.6/32\n").format(A, B)
STRIPPED = ("[Interface]\n\n[Peer]\nPublicKey = {}\nAllowedIPs = 10.0.0.2/32\n\n[Peer]\nPublicKey = {}\n"
            "AllowedIPs = 10.0.0.6/32\n").format(A, B)


def bash(script, tmp_path, *args):
    conf = tmp_path / "wg-s11.conf"
    conf.write_text(CONF)
    run = subprocess.run(["bash", "-c", 'set -euo pipefail; source "$0"; ' + script, DEVICES, str(conf)] + list(args),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=20)
    assert run.returncode == 0, run.stderr
    return run.stdout


def test_the_marked_peer_is_managed(tmp_path):
    assert bash('pq_managed "$1"', tmp_path).split() == [A]


OWN = "F" * 43 + "="


def changes(tmp_path, running):
    """wg_peer_changes' lines for STRIPPED (with its own key and port) against a device whose
    `wg show dump` is ``running`` (the device asked once: wg_canon_lines)."""
    wanted = STRIPPED.replace("[Interface]\n", "[Interface]\nPrivateKey = {}\nListenPort = 51820\n".format(OWN))
    return bash('m=$(pq_managed "$1"); wg_canon_lines "$m" <(printf "%s\\n" "$2") <(printf "%s\\n" "$2") '
                '<(printf "%s\\n" "$3") | LC_ALL=C sort | wg_peer_changes', tmp_path, wanted, running).split("\n")


def running_lines(psk_a, psk_b, with_a=True):
    """A `wg show dump` of the device: its own key and port, then each peer's line."""
    lines = ["{}\tpub\t51820\toff".format(OWN)]
    for key, psk, allowed in ((A, psk_a, "10.0.0.2/32"), (B, psk_b, "10.0.0.6/32")):
        if key == A and not with_a:
            continue
        lines.append("{}\t{}\t(none)\t{}\t0\t0\t0\toff".format(key, "(none)" if psk == "none" else psk, allowed))
    return "\n".join(lines)


def test_an_installed_psk_is_left_alone(tmp_path):
    out = [line for line in changes(tmp_path, running_lines(PSK, "none")) if line]
    assert out == [], out


def test_a_new_managed_peer_is_set_without_a_resync(tmp_path):
    out = [line for line in changes(tmp_path, running_lines("none", "none", with_a=False)) if line]
    assert "resync" not in out
    assert "set {} - off 10.0.0.2/32 -".format(A) in out, out


def test_an_unmarked_peer_gets_its_psk_reset(tmp_path):
    out = [line for line in changes(tmp_path, running_lines(PSK, PSK)) if line]
    assert "set {} - - - none".format(B) in out, out


KEY_OLD = "D" * 43 + "="
KEY_NEW = "E" * 43 + "="
FAKE_WG = """#!/bin/bash
echo "$*" >> "$WG_LOG"
if [ "$1" = show ] && [ "$3" = dump ]; then
  printf '%s\\t%s\\t51820\\toff\\n' "$KEY_OLD" "pub"
  printf '%s\\t%s\\t(none)\\t10.0.0.2/32\\t0\\t0\\t0\\toff\\n' "$PEER_A" "$PSK"
  printf '%s\\t(none)\\t(none)\\t10.0.0.6/32\\t0\\t0\\t0\\toff\\n' "$PEER_B"
fi
"""


def test_a_new_own_key_clears_the_managed_peers_keys_in_the_same_set(tmp_path):
    """A key rotation's switch (`private-key` in the `wg set`): the preshared keys pq-psk agreed
    under the previous key are cleared in the same call, the unmanaged peer's is left alone: the
    other end's entry for the new key starts without one, so both ends start classical."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "wg").write_text(FAKE_WG)
    (bindir / "wg").chmod(0o755)
    log = tmp_path / "wg.log"
    wanted = STRIPPED.replace("[Interface]\n", "[Interface]\nPrivateKey = {}\nListenPort = 51820\n".format(KEY_NEW))
    env = dict(os.environ, PATH="{}:{}".format(bindir, os.environ["PATH"]), WG_LOG=str(log), KEY_OLD=KEY_OLD,
               PEER_A=A, PEER_B=B, PSK=PSK)
    script = ('WG_TIMEOUT=5; pq_managed() { printf "%s " "$PEER_A"; }; pq_psk_kick() { :; }; '
              'device_sync wg-s11 "$1" ""; echo "$SYNC_HOW"')
    run = subprocess.run(["bash", "-c", 'set -euo pipefail; source "$0"; ' + script, DEVICES, wanted],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=20, env=env)
    assert run.returncode == 0, run.stderr
    sets = [line for line in log.read_text().splitlines() if line.startswith("set ")]
    assert sets, log.read_text()
    first = sets[0].split()
    assert "private-key" in first, sets
    assert "peer {} preshared-key /dev/null".format(A) in sets[0], sets
    assert "peer {} preshared-key".format(B) not in sets[0], sets
    # the fake device never changes: the whole sync follows, and the clearing once more after it
    assert run.stdout.split() == ["syncconf"], run.stdout
    assert sets[-1] == "set wg-s11 peer {} preshared-key /dev/null".format(A), sets
