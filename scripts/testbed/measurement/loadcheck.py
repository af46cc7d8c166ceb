"""How much CPU something other than the bench used while a sample ran (from /proc).

The machine's busy time (user + nice + system in /proc/stat) minus what the bench's own
processes used: this process and the children it waited for (iperf3, ping through nsenter:
their time lands in our cutime/cstime once reaped), the live processes in the testbed's
network namespaces (the tunnel daemons, sshd) and the kernel's threads (ksoftirqd, kworker:
during a sample they mostly move the bench's own packets). Interrupt and softirq time is left
out on both sides for the same reason, and so is steal, which is recorded apart: it is another
virtual machine taking this one's CPU. The result is in cores: 0.5 means half a core was busy
with other work for the whole sample.
"""
import os
import time

TICK = os.sysconf("SC_CLK_TCK")


def machine_ticks():
    """(busy, steal) jiffies of all CPUs since boot."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    user, nice, system = fields[0], fields[1], fields[2]
    steal = fields[7] if len(fields) > 7 else 0
    return user + nice + system, steal


def process_ticks(pid, children=False):
    fields = _stat_fields(pid)
    if fields is None:
        return 0
    ticks = int(fields[11]) + int(fields[12])
    if children:
        ticks += int(fields[13]) + int(fields[14])
    return ticks


def _stat_fields(pid):
    """The fields of /proc/<pid>/stat after the command name (the state first), or None once gone."""
    try:
        with open("/proc/{}/stat".format(pid)) as f:
            return f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None


def kernel_threads():
    """{(pid, start time): utime + stime} of the kernel's threads (kthreadd, pid 2, and its children)."""
    out = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        fields = _stat_fields(pid)
        if fields is not None and (fields[1] == "2" or pid == "2"):
            out[(pid, fields[19])] = int(fields[11]) + int(fields[12])
    return out


#: Where `ip netns add` keeps a named network namespace (iproute2's NETNS_RUN_DIR).
NETNS_RUN_DIR = "/run/netns"


def namespace_pids(namespaces):
    """The pids of the processes in any of the named network ``namespaces``, from one pass over
    /proc: what `ip netns pids <ns>` answers for each (iproute2's ip/ipnetns.c compares the device
    and inode of /proc/<pid>/ns/net with the name's), without a process and a whole /proc scan per
    namespace, which at 33 VNFs took the bench seconds at the first config."""
    wanted = set()
    for ns in namespaces:
        try:
            st = os.stat(os.path.join(NETNS_RUN_DIR, ns))
        except OSError:
            continue
        wanted.add((st.st_dev, st.st_ino))
    if not wanted:
        return []
    pids = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            st = os.stat("/proc/{}/ns/net".format(pid))
        except OSError:
            continue        # gone meanwhile, or a kernel thread's namespace not ours to read
        if (st.st_dev, st.st_ino) in wanted:
            pids.append(pid)
    return pids


def own_ticks(namespaces):
    """{process: CPU ticks so far} of what counts as the bench's own, each process named by its pid
    and start time (a pid used again is another process): the difference of two readings is taken
    per process (``ticks_between``), never of two totals. A process that exits between them (a
    kworker the kernel retires, a short-lived process in a testbed's namespace) would otherwise take
    all its earlier CPU out of the second total: the bench's own seconds came out lower than this
    process's own CPU in the window, and the other load higher by as much."""
    own = dict(kernel_threads())
    fields = _stat_fields("self")
    own[("self", fields[19])] = process_ticks("self", children=True)
    for pid in namespace_pids(namespaces):
        fields = _stat_fields(pid)
        if fields is not None:
            own[(pid, fields[19])] = process_ticks(pid)
    return own


def ticks_between(before, after):
    """The CPU ticks the processes of ``after`` (an ``own_ticks`` reading) used since ``before``:
    all of a process's ticks if it started since. What a process that exited in between used after
    ``before`` is not known from /proc and is not counted (a child we waited for: in our own
    children's time already)."""
    return sum(ticks - before.get(key, 0) for key, ticks in after.items())


class Window(object):
    """``with Window(namespaces) as w: ...``; then w.other_cores, w.steal_cores, w.seconds and
    w.own_seconds (the CPU seconds counted as the bench's own)."""

    def __init__(self, namespaces):
        self.namespaces = list(namespaces)

    def __enter__(self):
        self.t0 = time.monotonic()
        self.busy0, self.steal0 = machine_ticks()
        self.own0 = own_ticks(self.namespaces)
        return self

    def __exit__(self, *exc):
        own = ticks_between(self.own0, own_ticks(self.namespaces))
        busy, steal = machine_ticks()
        self.seconds = max(time.monotonic() - self.t0, 1e-6)
        self.own_seconds = own / TICK
        self.other_cores = max(0.0, (busy - self.busy0 - own) / TICK / self.seconds)
        self.steal_cores = (steal - self.steal0) / TICK / self.seconds
        return False


def sampled(measure, namespaces, max_other, retries):
    """Run ``measure()`` until the other load during it stays at or below ``max_other`` cores,
    at most 1 + ``retries`` times; returns (result, other cores, steal cores, attempts,
    disturbed). When every attempt was disturbed, the least disturbed result is kept and
    flagged, so that a busy machine still gives an answer (marked as such)."""
    best = None
    for attempt in range(1, retries + 2):
        with Window(namespaces) as w:
            result = measure()
        if best is None or w.other_cores < best[1]:
            best = (result, w.other_cores, w.steal_cores)
        if w.other_cores <= max_other:
            return result, w.other_cores, w.steal_cores, attempt, False
    return best[0], best[1], best[2], retries + 1, True
