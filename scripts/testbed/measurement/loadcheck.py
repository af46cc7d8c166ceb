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
    try:
        with open("/proc/{}/stat".format(pid)) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    ticks = int(fields[11]) + int(fields[12])
    if children:
        ticks += int(fields[13]) + int(fields[14])
    return ticks


def kernel_thread_ticks():
    """utime + stime of the kernel's threads (children of kthreadd, pid 2)."""
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/{}/stat".format(pid)) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == "2" or pid == "2":
            total += int(fields[11]) + int(fields[12])
    return total


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
    total = process_ticks("self", children=True) + kernel_thread_ticks()
    for pid in namespace_pids(namespaces):
        total += process_ticks(pid)
    return total


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
        own = own_ticks(self.namespaces) - self.own0
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
