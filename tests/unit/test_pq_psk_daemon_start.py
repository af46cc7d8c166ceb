"""The tunnel step's start of the pq-psk daemon without systemd (tunnels/pqpsk.sh `pq_psk_daemon`):
the daemon's own process records its pid before it becomes the daemon, and a daemon whose pid
file was lost is found by its state's lock (the daemon holds an exclusive flock on
`<state>/lock` while it runs), so the next step never starts a second daemon beside it, and
restarts or stops exactly the one that runs. A stand-in program keeps the daemon's lock contract
(take the lock or exit at once; make the state folder; run until told to stop)."""
import os
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VNF = os.path.join(ROOT, "charms", "vpnaas", "vnf")
STAND_IN = """#!/bin/bash
# pq-psk run -config DIR -state DIR -ready FIFO, as far as the step sees it
state=$5
sleep {delay}
mkdir -p "$state"
exec 9>>"$state/lock"
flock -n 9 || { echo "another daemon holds $state/lock" >&2; exit 1; }
trap 'exit 0' TERM
echo "{tag}"
if [ "$6" = -ready ] && [ -p "$7" ]; then echo ready > "$7"; fi
while :; do sleep 0.2 9>&-; done
"""


def step(tmp_path, script, tag="one", delay=0):
    prog = tmp_path / "bin" / "pq-psk"
    prog.parent.mkdir(exist_ok=True)
    (tmp_path / "run").mkdir(exist_ok=True)     # /run/wireguard on a VNF
    prog.write_text(STAND_IN.replace("{tag}", tag).replace("{delay}", str(delay)))
    prog.chmod(0o755)
    setup = ('source "$1/lib.sh"; source "$1/tunnels/pqpsk.sh"; DATAPLANE_DIR=$2/bin; init=none; '
             'PQ_PSK_DIR=$2/conf; PQ_PSK_STATE=$2/state; PQ_PSK_PIDFILE=$2/run/pq.pid; PQ_PSK_LOG=$2/run/pq.log; ')
    run = subprocess.run(["bash", "-c", setup + script, "/dev/null", VNF, str(tmp_path)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=30)
    assert run.returncode == 0 and "ERROR" not in run.stdout, run.stdout + run.stderr
    return run.stdout.strip()


def daemons(tmp_path):
    """The pids of the stand-in daemons of this test that run. A stand-in forks for each `sleep`
    of its loop, and the child has the stand-in's command line until it runs sleep: a process
    whose parent is one of the stand-ins is such a child, not a second daemon (one was counted
    as one on a loaded machine: "too many values to unpack")."""
    found = {}
    for pid in os.listdir("/proc"):
        try:
            with open("/proc/{}/cmdline".format(pid), "rb") as f:
                args = f.read().split(b"\0")
            with open("/proc/{}/stat".format(pid), "rb") as f:
                parent = int(f.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if str(tmp_path / "bin" / "pq-psk").encode() in args and b"run" in args:
            found[int(pid)] = parent
    return sorted(pid for pid, parent in found.items() if parent not in found)


def cleanup(tmp_path):
    for pid in daemons(tmp_path):
        os.kill(pid, 15)


def test_the_pid_file_names_the_daemon_itself(tmp_path):
    try:
        step(tmp_path, "pq_psk_daemon")
        (pid,) = daemons(tmp_path)
        assert (tmp_path / "run" / "pq.pid").read_text() == "{}\n".format(pid)
        assert not (tmp_path / "run" / "pq.pid.vpnaas-tmp").exists()
        assert step(tmp_path, "pq_psk_daemon; pq_psk_pid") == str(pid), "a running daemon is left running"
        assert daemons(tmp_path) == [pid]
    finally:
        cleanup(tmp_path)


def test_a_lost_pid_file_is_found_by_the_lock_and_no_second_daemon_starts(tmp_path):
    """A step killed between the start and its pid record (or any loss of the pid file) leaves a
    daemon no pid file names: the next step finds it by its lock, records it again and leaves it."""
    try:
        step(tmp_path, "pq_psk_daemon")
        (pid,) = daemons(tmp_path)
        (tmp_path / "run" / "pq.pid").unlink()
        assert step(tmp_path, "pq_psk_daemon; pq_psk_pid") == str(pid)
        assert daemons(tmp_path) == [pid], "a second daemon was started beside the running one"
        assert (tmp_path / "run" / "pq.pid").read_text() == "{}\n".format(pid)
        # A stale pid file (a pid reused by another program) does not hide the daemon either.
        (tmp_path / "run" / "pq.pid").write_text("1\n")
        assert step(tmp_path, "pq_psk_pid") == str(pid)
    finally:
        cleanup(tmp_path)


def test_a_new_program_replaces_the_daemon_found_by_its_lock(tmp_path):
    try:
        step(tmp_path, "pq_psk_daemon")
        (old,) = daemons(tmp_path)
        (tmp_path / "run" / "pq.pid").unlink()
        step(tmp_path, "pq_psk_daemon", tag="two")      # another program: another digest
        (new,) = daemons(tmp_path)
        assert new != old and (tmp_path / "run" / "pq.log").read_text().strip() == "two"
        step(tmp_path, "pq_psk_forget")
        deadline = time.monotonic() + 5
        while daemons(tmp_path) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert daemons(tmp_path) == [] and not (tmp_path / "state").exists()
        assert sorted(os.listdir(str(tmp_path / "run"))) == []
    finally:
        cleanup(tmp_path)


def test_a_daemon_slow_to_start_is_waited_for_and_one_that_exits_is_reported_with_its_reason(tmp_path):
    """A loaded machine can take seconds to start a program: a daemon that makes its state 4 s
    after its start runs, and the step says so (it waited 3 s and reported "exited at its
    start" with an empty reason, the daemon running on unrecorded). One that exits is reported
    with its last log line."""
    try:
        assert step(tmp_path, "pq_psk_daemon; pq_psk_pid", delay=4) == str(daemons(tmp_path)[0])
    finally:
        cleanup(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    (other / "bin").mkdir()
    (other / "bin" / "pq-psk").write_text("#!/bin/sh\necho 'config: no such device' >&2\nexit 1\n")
    (other / "bin" / "pq-psk").chmod(0o755)
    (other / "run").mkdir()
    setup = ('source "$1/lib.sh"; source "$1/tunnels/pqpsk.sh"; DATAPLANE_DIR=$2/bin; init=none; '
             'PQ_PSK_DIR=$2/conf; PQ_PSK_STATE=$2/state; PQ_PSK_PIDFILE=$2/run/pq.pid; PQ_PSK_LOG=$2/run/pq.log; ')
    run = subprocess.run(["bash", "-c", setup + "pq_psk_daemon", "/dev/null", VNF, str(other)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
    assert run.returncode != 0 and "the pq-psk daemon exited at its start: config: no such device" in run.stdout, \
        run.stdout + run.stderr


def test_the_start_goes_on_at_the_daemons_word_and_leaves_no_fifo(tmp_path):
    """The step waits for the daemon's "ready" on a FIFO it holds (no poll interval): the daemon
    is given the FIFO, says its word into it, and the FIFO is gone after the start."""
    try:
        step(tmp_path, "pq_psk_daemon")
        (pid,) = daemons(tmp_path)
        with open("/proc/{}/cmdline".format(pid), "rb") as f:
            args = f.read().split(b"\0")
        assert args[-3:-1] == [b"-ready", str(tmp_path / "run" / "pq.pid.ready").encode()]
        assert sorted(os.listdir(str(tmp_path / "run"))) == ["pq.log", "pq.pid", "pq.pid.sha256"]
    finally:
        cleanup(tmp_path)


def test_a_daemon_that_exits_at_its_start_fails_the_start_without_a_fifo_left(tmp_path):
    prog = tmp_path / "bin" / "pq-psk"
    prog.parent.mkdir()
    (tmp_path / "run").mkdir()
    prog.write_text("#!/bin/bash\necho 'cannot start: no such device' >&2\nexit 1\n")
    prog.chmod(0o755)
    setup = ('source "$1/lib.sh"; source "$1/tunnels/pqpsk.sh"; DATAPLANE_DIR=$2/bin; init=none; '
             'PQ_PSK_DIR=$2/conf; PQ_PSK_STATE=$2/state; PQ_PSK_PIDFILE=$2/run/pq.pid; PQ_PSK_LOG=$2/run/pq.log; ')
    run = subprocess.run(["bash", "-c", setup + "pq_psk_daemon", "/dev/null", VNF, str(tmp_path)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=30)
    assert run.returncode == 3
    assert run.stdout.strip() == "ERROR the pq-psk daemon exited at its start: cannot start: no such device"
    assert "pq.pid.ready" not in os.listdir(str(tmp_path / "run"))
