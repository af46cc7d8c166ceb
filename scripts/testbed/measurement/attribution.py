"""Attributing a star's CPU to roles and programs (testbed.cpuattr's pure part).

The input is the kernel's per-task exit records (``measurement.taskstats``: (arrival time, record)
in arrival order), the tasks alive at both ends of the window (``Task``, from /proc) and what
names a role (``Roots``); the output is {role: {comm: [cpu ns, processes]}}. How a task finds its
role (its ancestry, pid reuse included): testbed/cpuattr.py's docstring and docs/bench.md.
"""
import collections

from testbed.measurement import loadcheck

ROLES = ("hub-charm", "spoke-charm", "hub-vnf", "spoke-vnf", "testbed", "orphan")
#: A hook's exit record may arrive a little before its HookRun's ``ended`` or after it.
HOOK_SLACK = 2.0
Task = collections.namedtuple("Task", "tid tgid ppid comm start ns netns")


def parse_task(tid, tgid, stat, schedstat, netns):
    """A Task from /proc/<pid>/task/<tid>/stat and schedstat (None when unreadable)."""
    try:
        head, rest = stat.rsplit(")", 1)
        fields = rest.split()
        return Task(tid, tgid, int(fields[1]), head.split("(", 1)[1], int(fields[19]),
                    int(schedstat.split()[0]), netns)
    except (ValueError, IndexError):
        return None


# --------------------------------------------------------------------------- attribution (pure)

class Roots(object):
    """What names a role: hook runs [(pid, started, ended, unit)], the VNFs' sshd pids and
    network namespace inodes ({value: vnf name}), the bench's pid, and which unit / VNF is the hub;
    ``per_vnf``: a role per VNF instead (``<application>-charm``, ``<vnf>-vnf``: the EPS, whose
    five VNFs differ)."""

    def __init__(self, hooks, sshd, netns, bench_pid, hub="hub", per_vnf=False):
        self.hooks = collections.defaultdict(list)
        for pid, started, ended, unit in hooks:
            if pid:
                self.hooks[pid].append((started, ended, unit))
        self.sshd, self.netns, self.bench_pid, self.hub = sshd, netns, bench_pid, hub
        self.per_vnf = per_vnf

    def hook_unit(self, pid, t):
        """The unit of the hook whose dispatch had ``pid`` at time ``t``, or None."""
        best = None
        for started, ended, unit in self.hooks.get(pid, ()):
            if started - HOOK_SLACK <= t <= ended + HOOK_SLACK:
                if best is None or abs(ended - t) < best[0]:
                    best = (abs(ended - t), unit)
        return best[1] if best else None

    def of_unit(self, unit):
        if self.per_vnf:
            return unit.split("/")[0] + "-charm"
        return "hub-charm" if unit.split("/")[0] == self.hub else "spoke-charm"

    def of_vnf(self, name):
        if self.per_vnf:
            return name + "-vnf"
        return "hub-vnf" if name == self.hub else "spoke-vnf"


def live_role(pid, t, live, roots, depth=0):
    """The role of the live process ``pid`` (a Task table ``live``), or "other"."""
    task = live.get(pid)
    if pid == roots.bench_pid:
        return "testbed"
    if task is not None and task.ppid == roots.bench_pid:
        unit = roots.hook_unit(pid, t)
        if unit:
            return roots.of_unit(unit)
    if pid in roots.sshd:
        return roots.of_vnf(roots.sshd[pid])
    if task is None:
        return "orphan" if pid == 1 else "other"
    if task.netns in roots.netns:
        return roots.of_vnf(roots.netns[task.netns])
    if task.ppid in (0, 1, 2) or depth > 64:
        return "other"
    return live_role(task.ppid, t, live, roots, depth + 1)


def parents(records):
    """For each exit record, the index of its parent process's record (the next one of its
    ``ppid``), or None. A thread's ``ppid`` is its process's parent, which cannot have reaped the
    process while one of its threads still ran; its own thread group leader is no help, as the
    threads of an exit_group end in any order and the leader's pid may be reused after."""
    nxt, out = {}, [None] * len(records)
    for i in range(len(records) - 1, -1, -1):
        rec = records[i][1]
        out[i] = nxt.get(rec["ppid"])
        if rec["tgid"] in (0, rec["pid"]):
            nxt[rec["pid"]] = i
    return out


def record_roles(records, live, roots):
    """The role of every exit record (its ancestry; see the module's docstring)."""
    up = parents(records)
    roles = [None] * len(records)
    for i in range(len(records) - 1, -1, -1):
        t, rec = records[i]
        if rec["ppid"] == roots.bench_pid and rec["tgid"] in (0, rec["pid"]):
            unit = roots.hook_unit(rec["pid"], t)
            if unit:
                roles[i] = roots.of_unit(unit)
                continue
            roles[i] = "testbed"
        elif up[i] is not None:
            roles[i] = roles[up[i]]
        elif rec["ppid"] in (0, 1) and rec["tgid"] not in (0, rec["pid"]) and rec["tgid"] in live:
            roles[i] = live_role(rec["tgid"], t, live, roots)     # a thread of a live daemon
        else:
            roles[i] = live_role(rec["ppid"], t, live, roots)
    return roles


def attribute(records, at_start, at_end, roots, t_start, t_end, exclude_tids=()):
    """{role: {comm: [cpu ns, processes]}} over the window (``other``: the rest of the machine;
    ``measurement``: the tasks ``exclude_tids``, this tool's own thread). Records are (arrival,
    record) in arrival order; ``at_start``/``at_end`` {tid: Task}."""
    roles = record_roles(records, at_end, roots)
    table = collections.defaultdict(lambda: collections.defaultdict(lambda: [0, 0]))
    before = {tid: task.ns for tid, task in at_start.items()}
    for (t, rec), role in zip(records, roles):
        if t < t_start or t > t_end:
            continue
        ns = max(0, rec["cpu_run_virtual_total"] - before.pop(rec["pid"], 0))
        cell = table[role][rec["comm"]]
        cell[0] += ns
        cell[1] += rec["tgid"] in (0, rec["pid"])
    for tid, task in at_end.items():
        old = at_start.get(tid)
        same = old is not None and old.start == task.start
        ns = task.ns - (old.ns if same else 0)
        if ns <= 0:
            continue
        role = "measurement" if tid in exclude_tids else live_role(task.tgid, t_end, at_end, roots)
        cell = table[role][task.comm]
        cell[0] += ns
        cell[1] += tid == task.tgid and not same
    return {role: {comm: list(v) for comm, v in comms.items()} for role, comms in table.items()}


def idle_split(busy, hooks, hub_unit, cores):
    """Where the machine's idle core-seconds fell: per bin of ``busy`` [(t, busy ticks)], by what
    hooks ran (``hooks`` [(started, ended, unit)]): "hub only", "hub and spokes", "spokes only",
    "no hook". {kind: {"seconds", "busy_cpu_s", "idle_core_s"}}."""
    out = collections.defaultdict(lambda: {"seconds": 0.0, "busy_cpu_s": 0.0, "idle_core_s": 0.0})
    for (t0, b0), (t1, b1) in zip(busy, busy[1:]):
        if t1 <= t0:
            continue
        units = {unit for started, ended, unit in hooks if started < t1 and ended > t0}
        hub = hub_unit in units
        spokes = bool(units - {hub_unit})
        kind = ("hub and spokes" if spokes else "hub only") if hub else ("spokes only" if spokes else "no hook")
        cpu = (b1 - b0) / float(loadcheck.TICK)
        cell = out[kind]
        cell["seconds"] += t1 - t0
        cell["busy_cpu_s"] += cpu
        cell["idle_core_s"] += max(0.0, cores * (t1 - t0) - cpu)
    return dict(out)


# --------------------------------------------------------------------------- summaries

def role_totals(table):
    """{role: {"cpu_s", "processes"}} of an ``attribute`` table."""
    return {role: {"cpu_s": sum(v[0] for v in comms.values()) / 1e9, "processes": sum(v[1] for v in comms.values())}
            for role, comms in table.items()}


def by_program(table, roles=ROLES):
    """{role: {comm: cpu_s}} of the instantiation's roles (``other`` left out)."""
    return {role: {comm: v[0] / 1e9 for comm, v in table.get(role, {}).items()} for role in roles}


def by_side(table):
    """{"charm": {comm: cpu_s}, "vnf": {comm: cpu_s}} of a per-VNF ``attribute`` table (``Roots``
    with ``per_vnf``): every unit's hooks together, every VNF together."""
    out = {"charm": collections.defaultdict(float), "vnf": collections.defaultdict(float)}
    for role, comms in table.items():
        side = role.rsplit("-", 1)[-1]
        if side in out and "-" in role:
            for comm, v in comms.items():
                out[side][comm] += v[0] / 1e9
    return {side: dict(v) for side, v in out.items()}


def excess(small, big, k_small, k_big):
    """What grows faster than the VNF count: big - (k_big+1)/(k_small+1) x small, per key of
    two {key: number} maps (a key missing on one side counts 0)."""
    scale = (k_big + 1) / float(k_small + 1)
    return {key: big.get(key, 0.0) - scale * small.get(key, 0.0) for key in set(small) | set(big)}


def _median(values):
    values = sorted(values)
    n = len(values)
    return (values[n // 2] + values[(n - 1) // 2]) / 2.0 if n else 0.0


def median_maps(maps):
    """The per-key median of several {key: number} maps (a missing key counts 0)."""
    keys = set().union(*maps) if maps else set()
    return {key: _median([m.get(key, 0.0) for m in maps]) for key in keys}


def flat_programs(rec):
    """{"role comm": cpu_s} of one run's record."""
    return {"{} {}".format(role, comm): cpu for role, comms in rec["programs"].items() for comm, cpu in comms.items()}
