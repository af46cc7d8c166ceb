"""The tunnel step's programs check (vnf/tunnels/dataplane.sh) hashes a shipped program only when
its file changed: the digest is kept with the file's device, inode, size, mtime and ctime, and
recorded only once the file has been unchanged for PROGRAMS_SETTLED s. The real functions run
in bash over real files; a `sha256sum` first on PATH counts the hashings. Every way of changing
a program's bytes from user space changes its ctime, so each is still caught (NEED), and a
change of metadata only costs one more hashing, never a false NEED."""
import hashlib
import os
import subprocess
import time

import pytest

VNF = os.path.join(os.path.dirname(__file__), "..", "..", "charms", "vpnaas", "vnf")
WG, PQ = b"\x7fELF wireguard-go " * 4000, b"\x7fELF pq-psk " * 3000

STEP = r"""
source "$VNF/lib.sh"
DATAPLANE_DIR=$1
source "$VNF/tunnels/dataplane.sh"
kernel_probe() { TUNNELS_KERNEL=0; }
export PATH="$SHIM:$PATH"
if [ -n "${SETTLED:-}" ]; then PROGRAMS_SETTLED=$SETTLED; fi
programs_check wireguard-go "$2" always pq-psk "$3" always
if [ "${PROGRAMS_MISSING:-0}" = 0 ]; then programs_digests_write; fi
out "SHIPPED ${!SHIPPED[*]}"
"""


@pytest.fixture
def shim(tmp_path):
    d = tmp_path / "shim"
    d.mkdir()
    log = tmp_path / "hashed"
    real = subprocess.run(["bash", "-c", "command -v sha256sum"], stdout=subprocess.PIPE,
                          universal_newlines=True).stdout.strip()
    (d / "sha256sum").write_text('#!/bin/sh\necho x >> "{}"\nexec {} "$@"\n'.format(log, real))
    (d / "sha256sum").chmod(0o755)
    return d, log


def vnf_dir(root, name):
    d = root / name
    d.mkdir()
    for prog, data in (("wireguard-go", WG), ("pq-psk", PQ)):
        (d / prog).write_bytes(data)
        (d / prog).chmod(0o755)
    return d


def step(d, shim, settled=None):
    """One programs check of ``d`` as the step runs it: (report lines, hashings it made)."""
    shim_dir, log = shim
    before = len(log.read_text().splitlines()) if log.exists() else 0
    env = dict(os.environ, VNF=VNF, SHIM=str(shim_dir), SETTLED="" if settled is None else str(settled))
    run = subprocess.run(["bash", "-c", STEP, "step", str(d), hashlib.sha256(WG).hexdigest(),
                          hashlib.sha256(PQ).hexdigest()], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         universal_newlines=True, env=env, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr
    after = len(log.read_text().splitlines()) if log.exists() else 0
    return run.stdout.splitlines(), after - before


def settle(*dirs):
    """Poll until every program is older than PROGRAMS_SETTLED (2 s) by a second's margin."""
    deadline = time.time() + 60
    while any(time.time() - os.stat(str(d / p)).st_ctime < 3.5 for d in dirs for p in ("wireguard-go", "pq-psk")):
        assert time.time() < deadline
        time.sleep(0.2)


def test_a_program_changed_lately_is_hashed_every_time_and_not_recorded(tmp_path, shim):
    d = vnf_dir(tmp_path, "vnf")
    for _ in range(2):
        lines, hashed = step(d, shim, settled=10 ** 9)
        assert hashed == 2 and sorted(lines[-1].split()[1:]) == ["pq-psk", "wireguard-go"], lines
        assert not [line for line in lines if line.startswith("NEED")]
    assert not (d / ".programs.sha256").exists()


def test_an_unchanged_program_is_not_hashed_again_and_every_change_of_its_bytes_is_caught(tmp_path, shim):
    names = ("in-place", "truncated", "replaced", "mtime-restored", "bytes-restored", "chmod", "not-executable",
             "garbage-record")
    dirs = {name: vnf_dir(tmp_path, name) for name in names}
    settle(*dirs.values())
    for d in dirs.values():
        lines, hashed = step(d, shim)
        assert hashed == 2 and not [line for line in lines if line.startswith("NEED")], lines
        record = (d / ".programs.sha256").read_text().splitlines()
        assert [line.split()[:2] for line in record] == [["wireguard-go", hashlib.sha256(WG).hexdigest()],
                                                        ["pq-psk", hashlib.sha256(PQ).hexdigest()]]
        assert oct(os.stat(str(d / ".programs.sha256")).st_mode & 0o777) == "0o600"
        lines, hashed = step(d, shim)
        assert hashed == 0 and sorted(lines[-1].split()[1:]) == ["pq-psk", "wireguard-go"], lines

    wg = lambda name: dirs[name] / "wireguard-go"   # noqa: E731
    st = os.stat(str(wg("mtime-restored")))
    for name in ("in-place", "mtime-restored", "bytes-restored"):
        with open(str(wg(name)), "r+b") as f:       # same size, one byte changed
            f.seek(100)
            f.write(b"X")
    os.utime(str(wg("mtime-restored")), ns=(st.st_atime_ns, st.st_mtime_ns))   # touch -r: the ctime moves on
    with open(str(wg("bytes-restored")), "r+b") as f:
        f.seek(100)
        f.write(WG[100:101])                        # the hashed bytes again
    with open(str(wg("truncated")), "r+b") as f:
        f.truncate(len(WG) // 2)
    other = tmp_path / "other"
    other.write_bytes(WG[:-1] + b"!")
    other.chmod(0o755)
    os.replace(str(other), str(wg("replaced")))
    os.chmod(str(wg("chmod")), 0o775)
    os.chmod(str(wg("not-executable")), 0o644)
    record = dirs["garbage-record"] / ".programs.sha256"
    record.write_text("wireguard-go " + "f" * 64 + "\npq-psk 12ab truncated\n")

    caught = {}
    for name, d in dirs.items():
        lines, hashed = step(d, shim)
        caught[name] = ([line for line in lines if line.startswith("NEED")], hashed)
    assert caught == {
        "in-place": (["NEED wireguard-go"], 1),
        "truncated": (["NEED wireguard-go"], 1),
        "replaced": (["NEED wireguard-go"], 1),
        "mtime-restored": (["NEED wireguard-go"], 1),
        "bytes-restored": ([], 1),             # the same bytes: hashed again, still the charm's
        "chmod": ([], 1),
        "not-executable": (["NEED wireguard-go"], 0),
        "garbage-record": ([], 2),             # a line not well formed is no record
    }
