"""What the tunnel step keeps of a failed `wg-quick up` (vnf/tunnels/devices.sh `quick_failure`):
the whole output and the userspace daemon's log, on one bounded line, and never a key -- also not
the one upstream's wg echoes when it cannot parse it (run here: the installed wg's own message)."""
import os
import shutil
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEVICES = os.path.join(ROOT, "charms", "vpnaas", "vnf", "tunnels", "devices.sh")
WG = shutil.which("wg") or "/usr/bin/wg"
SECRET = "sEcReTkEy0123456789abcdefghijklmnopqrstuvw"      # 42 characters: not a valid key, echoed by wg
KEY = "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVowMTIzNDU="   # a well-formed key
HEX = "ab" * 32


def kept(output, log="/nonexistent/vpnaas-wg-x.log"):
    run = subprocess.run(["bash", "-c", 'set -Eeuo pipefail; LC_ALL=C; source "$0"; quick_failure "$1" "$2"',
                          DEVICES, output, log], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         universal_newlines=True, timeout=60)
    assert run.returncode == 0, run.stderr
    return run.stdout


def test_the_whole_output_is_kept_on_one_line():
    output = ("[#] ip link add wg-x type wireguard\n[#] wg setconf wg-x /dev/fd/63\n"
              "[#] ip -4 address add 10.0.0.1/24 dev wg-x\nCannot find device \"wg-x\"\n")
    assert kept(output) == ('[#] ip link add wg-x type wireguard | [#] wg setconf wg-x /dev/fd/63 | '
                            '[#] ip -4 address add 10.0.0.1/24 dev wg-x | Cannot find device "wg-x"')


def test_no_key_survives_not_even_one_wg_echoes(tmp_path):
    conf = tmp_path / "wg-x.conf"
    conf.write_text("[Interface]\nPrivateKey = {}\n".format(SECRET))
    wg = subprocess.run([WG, "setconf", "wg-x", str(conf)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                        universal_newlines=True, timeout=60)
    assert wg.returncode != 0 and SECRET in wg.stdout, "upstream wg no longer echoes the value: {}".format(wg.stdout)
    log = tmp_path / "vpnaas-wg-x.log"
    log.write_text("boringtun started\nprivate_key={}\npeer {} {}\n".format(HEX, KEY, KEY[:43]))
    line = kept("[#] wg setconf wg-x /dev/fd/63\n" + wg.stdout + "PresharedKey = {}\n\x1b[31mx\n".format(KEY),
                str(log))
    for secret in (SECRET, KEY, KEY[:43], HEX):
        assert secret not in line
    assert "Key is not the correct length or format: (hidden)" in line
    assert "daemon log:" in line and "boringtun started" in line and "\x1b" not in line and "\n" not in line


def test_what_is_kept_is_bounded_and_ends_with_the_last_lines():
    output = "".join("line {} {}\n".format(i, "-" * 60) for i in range(1500))
    line = kept(output)
    assert len(line) <= 3000 and line.endswith("line 1499 " + "-" * 60) and "line 1459 " not in line
