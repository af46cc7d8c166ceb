"""The tunnel step's pq-psk report (tunnels/pqpsk.sh `pq_psk_report`) over a status file the real
daemon wrote (build/tools/pq-psk, driving its device through a stand-in `wg` tool (-wg), and a peer
that does not answer: its exchanges fail), under every awk this machine has, mawk first: mawk is the VNFs'
awk (Ubuntu 18.04) and has no interval expressions, so a `{42}` in the program matched nothing and
a failing exchange never reached the unit's status (tests/harness/test_pq_psk_charm.py follows
such a line into the status)."""
import os
import re
import shutil
import socket
import subprocess
import time

from vpnaas.vnf import report

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.path.join(ROOT, "build", "tools", "pq-psk")
VNF = os.path.join(ROOT, "charms", "vpnaas", "vnf")
OWN = "A" * 42 + "E="            # a small key (not zero: refused), so this end is the initiator
PEER = "/" * 42 + "8="
# A stand-in for `wg` (the daemon's -wg: one `wg show <dev> dump` per look): the device's public
# key, the peer on the device (the daemon dials only then) with no handshake, no preshared keys.
FAKE_WG = """#!/bin/sh
case "$3" in dump) printf '%s\\t%s\\t51820\\toff\\n' '{priv}' '{own}'
  printf '%s\\t(none)\\t(none)\\t(none)\\t0\\t0\\t0\\toff\\n' '{peer}' ;; esac
exit 0
""".format(priv="B" * 42 + "E=", own=OWN, peer=PEER)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def real_status(tmp_path):
    """The daemon's own status file for a peer whose exchanges fail (nothing listens at it)."""
    conf, state = tmp_path / "conf", tmp_path / "state"
    conf.mkdir()
    wg = tmp_path / "wg"
    wg.write_text(FAKE_WG)
    wg.chmod(0o755)
    (conf / "wg-s6a.conf").write_text("device wg-s6a\nlisten 127.0.0.1:{}\ninterval 120\npeer {} 127.0.0.2\npublic {}\n"
                                      .format(free_port(), PEER, OWN))
    daemon = subprocess.Popen([BINARY, "run", "-config", str(conf), "-state", str(state), "-wg", str(wg)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        status = state / "wg-s6a.status"
        while time.monotonic() < deadline:
            if status.exists() and " state failing " in status.read_text():
                return state
            time.sleep(0.1)
        raise AssertionError("the daemon wrote no failing state: " + (status.read_text() if status.exists() else "-"))
    finally:
        daemon.terminate()
        daemon.wait(timeout=10)


def awks():
    """mawk (required: the VNFs' awk) and every other awk implementation installed here."""
    found = [shutil.which(name) for name in ("mawk", "gawk", "original-awk")]
    assert found[0], "mawk is the VNFs' awk: the test needs it"
    return [path for path in found if path]


def report_under(awk, state, tmp_path):
    """pq_psk_report's lines with `awk` being that implementation (the step's PATH, set by lib.sh,
    then has it first)."""
    bindir = tmp_path / ("bin-" + os.path.basename(awk))
    bindir.mkdir()
    (bindir / "awk").symlink_to(awk)
    run = subprocess.run(["bash", "-c", 'set -euo pipefail; source "$3/lib.sh"; source "$3/tunnels/pqpsk.sh"; '
                          'PATH=$2:$PATH; [ "$(command -v awk)" = "$2/awk" ]; PQ_PSK_STATE=$1; pq_psk_report',
                          "/dev/null", str(state), str(bindir), VNF],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=20)
    assert run.returncode == 0, run.stderr
    assert run.stderr == "", run.stderr
    return run.stdout.splitlines()


def test_the_report_reads_the_daemons_own_status_under_every_awk(tmp_path):
    state = real_status(tmp_path)
    for awk in awks():
        lines = report_under(awk, state, tmp_path)
        assert len(lines) == 1, (awk, lines)
        kind, dev, key, st, epoch, renewals, last, refusals = lines[0].split(" ")
        assert (kind, dev, key, st, epoch, renewals, last, refusals) == (
            "PQPEER", "wg-s6a", PEER, "failing", "0", "0", "0", "0"), (awk, lines)
        assert report.problems(lines[0] + "\n") == [], (awk, lines)


def test_a_hostile_status_line_is_left_out_under_every_awk(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    good = "peer wg-s6a {} role initiator mechanism ML-KEM-768 state failing epoch 0 renewals 0 last 0 " \
           "refusals 0 failures 1 reason unreachable".format(PEER)
    bad = [good.replace(PEER, PEER[:-2] + "9="),            # not a canonical key
           good.replace(PEER, "A" + PEER),                  # 45 characters
           good.replace("wg-s6a", "x" * 16),                # longer than a device name
           good.replace("epoch 0", "epoch " + "9" * 21),    # longer than a counter
           good.replace("state failing", "state gone")]
    (state / "wg-s6a.status").write_text("\n".join([good] + bad) + "\n")
    for awk in awks():
        assert [line.split(" ")[3] for line in report_under(awk, state, tmp_path)] == ["failing"], awk



def test_no_vnf_program_uses_an_interval_expression():
    """awk, sed and grep programs on the VNFs must not count with {n} or {n,m}: mawk (the VNFs'
    awk) has no intervals. Bash's own `[[ =~ ]]` (the C library's regex) is exempt."""
    interval = re.compile(r"[\])a-zA-Z.]\\?\{[0-9]+(,[0-9]*)?\\?\}")
    found = []
    for folder, _dirs, files in os.walk(VNF):
        for name in files:
            if not name.endswith(".sh"):
                continue
            with open(os.path.join(folder, name)) as f:
                for number, text in enumerate(f, 1):
                    if interval.search(text) and "=~" not in text:
                        found.append("{}:{}: {}".format(name, number, text.strip()))
    assert found == []
