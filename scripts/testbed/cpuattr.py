"""Where a star's CPU goes, by program and by role, without truncating short processes (issue 37).

One star of N tunnels (``convergence.Star``: the hub configured last, the VCA's default
scheduling) per size, interleaved; over the window from the first ``config`` primitive to the
last handshake it attributes every CPU nanosecond of the instantiation's processes:

- tasks that exit in the window: the kernel's taskstats exit records (``measurement.taskstats``,
  every CPU registered; ``cpu_run_virtual_total``, the scheduler's runtime in ns). A task that
  was already alive at the first config counts its CPU after that moment only (its runtime then
  is read from ``/proc/<pid>/task/<tid>/schedstat``);
- tasks alive at the last handshake (the bench, the VNFs' sshd and tunnel daemons, hooks still
  running): their schedstat at the end minus at the start.

A record's role comes from its ancestry. Its parent is the next exit record of the parent's pid
(a parent outlives its running child, and a pid is reused only after its task exited, so
that record is the parent, whatever the pid reuse of a 32,768-pid machine) or, when none
arrives, the live process of that pid: a hook's ``dispatch`` (pid and time from the emulated
VCA's ``HookRun.pid``) names its unit; a VNF's sshd, or any live process in a VNF's network
namespace, names that VNF; the bench's process is the testbed (the emulated VCA, LCM and VIM,
and their probes). A process reparented to init before it exited (ppid 1) cannot be traced:
counted as ``orphan`` (on a shared machine that may include other users' work). Everything
else on the machine is ``other`` and reported as one total only.

Roles: ``hub-charm`` / ``spoke-charm`` (the unit's hooks: Python, ops, the charm, paramiko, the
hook tools), ``hub-vnf`` / ``spoke-vnf`` (everything under the VNF's sshd and the daemons in its
namespace), ``testbed``, ``orphan``. Also, every 0.1 s, the machine's busy time (``/proc/stat``)
with what hooks were running then: where the idle core-seconds fall (the hub's hooks alone,
spokes', none).

    sudo PYTHONPATH=scripts:charms .venv/bin/python -m testbed.cpuattr --sizes 8,32,32,8 [--json FILE]
    sudo PYTHONPATH=scripts:charms .venv/bin/python -m testbed.cpuattr --sizes "" --eps 3 [--charms DIR]

With ``--eps N`` it then brings up the EPS N times with and N times without the PQ PSK (the
bench's control part) and gives each VNF a role of its own (``<app>-charm``, ``<vnf>-vnf``).
"""
import argparse
import json
import os
import sys
import threading
import time

from testbed import bench, cli, convergence, demo, pqcost
from testbed.emulators import vim
from testbed.measurement import loadcheck, taskstats
from testbed.measurement.attribution import (
    Roots,
    attribute,
    by_program,
    by_side,
    excess,
    flat_programs,
    idle_split,
    median_maps,
    parse_task,
    role_totals,
)

# --------------------------------------------------------------------------- reading the machine

def _read(path):
    with open(path) as f:
        return f.read()


def live_tasks(proc="/proc"):
    """{tid: Task} of every task alive now: its process, parent, comm, start (clock ticks after
    boot), the scheduler's runtime in ns and its network namespace's inode."""
    out = {}
    for pid in os.listdir(proc):
        if not pid.isdigit():
            continue
        try:
            netns = os.stat(os.path.join(proc, pid, "ns", "net")).st_ino
            tids = os.listdir(os.path.join(proc, pid, "task"))
        except OSError:
            continue
        for tid in tids:
            base = os.path.join(proc, pid, "task", tid)
            try:
                stat, sched = _read(base + "/stat"), _read(base + "/schedstat")
            except OSError:
                continue
            task = parse_task(int(tid), int(pid), stat, sched, netns)
            if task:
                out[task.tid] = task
    return out


class Collector(object):
    """From ``start`` to ``stop``: taskstats exit records as they arrive (with their arrival time),
    the live tasks at both ends, and the machine's busy ticks every ``period`` s."""

    def __init__(self, period=0.1):
        self.period = period
        self.raw, self.busy = [], []
        self.t_start = self.t_end = None
        self.at_start = self.at_end = None
        self.listener = self._thread = None
        self.own_tid = None
        self._stop = threading.Event()
        self._once = threading.Lock()
        #: CPU-s of the two /proc snapshots, in the bench's threads (counted as measurement, not testbed)
        self.snapshot_cpu = 0.0

    def start(self):
        """Open the window (once: the LCM's tasks run every VNF's first config at once)."""
        with self._once:
            if self.listener is not None:
                return
            self.listener = taskstats.Listener()
            t0 = time.thread_time()
            self.at_start = live_tasks()
            self.snapshot_cpu += time.thread_time() - t0
            self.t_start = time.monotonic()
            self.busy.append((self.t_start, loadcheck.machine_ticks()[0]))
            self._thread = threading.Thread(target=self._loop, name="cpuattr", daemon=True)
            self._thread.start()

    def _loop(self):
        self.own_tid = threading.get_native_id() if hasattr(threading, "get_native_id") else None
        next_sample = time.monotonic() + self.period
        while not self._stop.is_set():
            data = self.listener.read(timeout=max(0.005, next_sample - time.monotonic()))
            now = time.monotonic()
            if data:
                self.raw.append((now, data))
            if now >= next_sample:
                self.busy.append((now, loadcheck.machine_ticks()[0]))
                next_sample = now + self.period

    def stop(self):
        """End the window (the moment every handshake is there); the records of tasks that exit
        in the next second are kept for their children's ancestry only."""
        self.t_end = time.monotonic()
        self.busy.append((self.t_end, loadcheck.machine_ticks()[0]))
        t0 = time.thread_time()
        self.at_end = live_tasks()
        self.snapshot_cpu += time.thread_time() - t0
        time.sleep(1.0)
        self._stop.set()
        self._thread.join()
        while True:
            data = self.listener.read(timeout=0.05)
            if not data:
                break
            self.raw.append((time.monotonic(), data))
        self.listener.close()
        return {}

    def abandon(self):
        """Stop listening if ``stop`` never ran (an instantiation that failed)."""
        if self.listener is not None and self.t_end is None:
            self._stop.set()
            self._thread.join()
            self.listener.close()
            self.t_end = time.monotonic()

    def records(self):
        """[(arrival, record)] in arrival order."""
        out = []
        for t, data in self.raw:
            for _kind, _cmd, payload in taskstats.messages(data):
                out.extend((t, rec) for rec in taskstats.exit_records(payload))
        return out


# --------------------------------------------------------------------------- one star

class _Model(convergence.BenchModel):
    """The bench's model, starting the collector at the first config primitive. It scans no
    namespace for ``own_cpu_seconds`` (``ip netns pids`` reads every process of the machine, once
    per VNF, at both ends of the window: work the bench's own figure leaves out of its window)."""

    collector = None

    @property
    def namespaces(self):
        return lambda: []

    @namespaces.setter
    def namespaces(self, _value):
        pass

    def set_config(self, app, values, wait=True):
        if not self.config_times and self.collector is not None:
            self.collector.start()
        super().set_config(app, values, wait=wait)


class _Runner(convergence.Runner):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.collector = None

    def model(self, tb, name):
        m = _Model(os.path.join(self.workdir, "vca-" + name), name=name, runner=tb.runner(), parallel=self.parallel)
        m.collector = self.collector
        return m


def measure_star(runner, k):
    """One star of ``k`` tunnels with the collector on; its convergence record with ``cpuattr``."""
    collector = runner.collector = Collector()
    star = convergence.Star(runner, k)
    try:
        rec = star.up(after_up=collector.stop)
        tb, model = star.tb, star.model
        hooks = [(r.pid, r.started, r.ended, r.unit) for r in model.hook_log]
        roots = Roots(hooks, {v.sshd.pid: name for name, v in tb.vnfs.items()},
                      {os.stat("/proc/{}/ns/net".format(v.ns_pid)).st_ino: name for name, v in tb.vnfs.items()},
                      os.getpid())
        records = collector.records()
        table = attribute(records, collector.at_start, collector.at_end, roots, collector.t_start, collector.t_end,
                          exclude_tids={collector.own_tid})
        window = [(r.started, r.ended, r.unit) for r in model.hook_log]
        return {"tunnels": k, "vnfs": k + 1, "seconds_after_first_config": rec["seconds_after_first_config"],
                "cpu_seconds_machine": rec["cpu_seconds"], "cpu_busy_fraction": rec["cpu_busy_fraction"],
                "sessions": rec["sessions"], "reconcile_sessions": rec["reconcile_sessions"],
                "verify_sessions": rec["verify_sessions"], "snapshot_cpu_s": collector.snapshot_cpu,
                "exit_records": sum(1 for t, _r in records if collector.t_start <= t <= collector.t_end),
                "overruns": collector.listener.overruns, "roles": role_totals(table), "programs": by_program(table),
                "idle": idle_split(sorted(b for b in collector.busy if b[0] <= collector.t_end), window, "hub/0",
                                   os.cpu_count() or 1),
                "hub_hooks": hub_chain(model.hook_log, min(model.config_times), collector.t_end)}
    finally:
        collector.abandon()
        star.down()


def measure_eps(runner, pq=True):
    """One EPS instantiation (``convergence.run_eps_once``, the bench's control part; ``pq``
    False: every ``<ep>-pq-psk`` off, as its interleaved rounds without the PQ PSK) with the
    collector on from the first config to the last handshake; a role per VNF (its hooks, its
    namespace), and every hook's and every VNF's programs together (``by_side``)."""
    collector = runner.collector = Collector()
    options = pqcost.pq_options(convergence.eps_instance(runner.charms_dir))
    adjust = pqcost.without_pq(options) if options and not pq else None

    def then(tb, _inst, model):
        hooks = [(r.pid, r.started, r.ended, r.unit) for r in model.hook_log]
        roots = Roots(hooks, {v.sshd.pid: name for name, v in tb.vnfs.items()},
                      {os.stat("/proc/{}/ns/net".format(v.ns_pid)).st_ino: name for name, v in tb.vnfs.items()},
                      os.getpid(), per_vnf=True)
        records = collector.records()
        table = attribute(records, collector.at_start, collector.at_end, roots, collector.t_start, collector.t_end,
                          exclude_tids={collector.own_tid})
        first = min(model.config_times)
        window = [r for r in model.hook_log if r.ended > first and r.started < collector.t_end]
        return {"roles": role_totals(table), "sides": by_side(table),
                "exit_records": sum(1 for t, _r in records if collector.t_start <= t <= collector.t_end),
                "overruns": collector.listener.overruns, "snapshot_cpu_s": collector.snapshot_cpu,
                "hooks": {kind: sum(1 for r in window if convergence.hook_kind(r) == kind)
                          for kind in ("gate", "charm", "session")}}
    try:
        rec = convergence.run_eps_once(runner, then=then, adjust=adjust, after_up=lambda *_: collector.stop())
    finally:
        collector.abandon()
    out = rec.pop("then")
    out.update({"pq_psk": bool(options) and pq, "seconds_after_last_config": rec["seconds_after_last_config"],
                "seconds_after_first_config": rec["seconds_after_first_config"],
                "cpu_seconds_machine": rec["cpu_seconds"], "cpu_busy_fraction": rec["cpu_busy_fraction"],
                "sessions": rec["sessions"], "reconcile_sessions_per_unit": rec["reconcile_sessions_per_unit"]})
    return out


def measure_eps_rounds(runner, rounds, progress, failed):
    """``rounds`` rounds of the EPS with and without the PQ PSK, the first of each pair
    alternating (as the bench's control part interleaves them)."""
    out = []
    for i in range(rounds):
        for pq in ((True, False) if i % 2 == 0 else (False, True)):
            try:
                out.append(measure_eps(runner, pq))
            except convergence.ConvergenceError as e:
                failed.append("EPS: {}".format(e))
                progress("EPS: FAILED ({})".format(e))
    return out


def print_eps(recs, out=sys.stdout):
    """Per EPS run: CPU-s by VNF (its hooks; its VNF), then the programs of the hooks and of the
    VNFs together, as medians over the runs with and without the PQ PSK."""
    for rec in recs:
        roles = ", ".join("{} {:.2f}".format(r, v["cpu_s"]) for r, v in sorted(rec["roles"].items())
                          if r.endswith(("-charm", "-vnf")))
        print("EPS{} up {:.1f} s after the last config (under load), {} sessions, hooks {}: CPU-s {}".format(
            "" if rec["pq_psk"] else " without the PQ PSK", rec["seconds_after_last_config"], rec["sessions"],
            rec["hooks"], roles), file=out)
    for pq in (True, False):
        mine = [r for r in recs if r["pq_psk"] == pq]
        if not mine:
            continue
        print("\nEPS{}, medians over {} run(s), CPU-s from the first config to the last handshake:".format(
            "" if pq else " without the PQ PSK", len(mine)), file=out)
        for side in ("charm", "vnf"):
            med = median_maps([r["sides"][side] for r in mine])
            top = sorted(med.items(), key=lambda kv: -kv[1])
            print("  {:<6} {:6.2f}: {}".format("hooks" if side == "charm" else "VNFs", sum(med.values()),
                                              ", ".join("{} {:.2f}".format(c, v) for c, v in top[:10])), file=out)


def hub_chain(hook_log, t0, t1):
    """The hub's hooks in the window: how many, how many opened a session, and the seconds they
    ran (one at a time: a unit runs one hook after another)."""
    mine = [r for r in hook_log if r.unit == "hub/0" and r.ended > t0 and r.started < t1]
    return {"hooks": len(mine), "sessions": sum(1 for r in mine if convergence.hook_kind(r) == "session"),
            "seconds": sum(min(r.ended, t1) - max(r.started, t0) for r in mine)}


# --------------------------------------------------------------------------- report and command line

def compare(recs, small, big):
    """Medians per size and the excess at ``big`` over (big+1)/(small+1) x ``small``, by role
    and by role and program."""
    roles = {k: median_maps([{r: v["cpu_s"] for r, v in rec["roles"].items()} for rec in recs[k]])
             for k in (small, big)}
    progs = {k: median_maps([flat_programs(rec) for rec in recs[k]]) for k in (small, big)}
    return {"roles": {str(small): roles[small], str(big): roles[big],
                      "excess": excess(roles[small], roles[big], small, big)},
            "programs": {str(small): progs[small], str(big): progs[big],
                         "excess": excess(progs[small], progs[big], small, big)}}


def print_report(recs, out=sys.stdout):
    for k in sorted(recs):
        for i, rec in enumerate(recs[k]):
            roles = ", ".join("{} {:.1f} CPU-s ({} proc)".format(r, v["cpu_s"], v["processes"])
                              for r, v in sorted(rec["roles"].items()))
            print("{} tunnels run {}: {:.1f} s from the first config (under load), {} exit records, {} overruns; {}"
                  .format(k, i + 1, rec["seconds_after_first_config"], rec["exit_records"], rec["overruns"], roles),
                  file=out)
            print("    the hub: {hooks} hooks, {sessions} sessions, {seconds:.1f} s running in the window".format(
                **rec["hub_hooks"]), file=out)
            for kind, v in sorted(rec["idle"].items()):
                print("    {:<15} {:6.1f} s, busy {:6.1f} CPU-s, idle {:6.1f} core-s".format(
                    kind, v["seconds"], v["busy_cpu_s"], v["idle_core_s"]), file=out)
    sizes = sorted(recs)
    if len(sizes) >= 2:
        cmp = compare(recs, sizes[0], sizes[-1])
        print("\nexcess at {} over {}/{} x {} (medians, CPU-s):".format(sizes[-1], sizes[-1] + 1, sizes[0] + 1,
                                                                     sizes[0]), file=out)
        for key, value in sorted(cmp["programs"]["excess"].items(), key=lambda kv: -abs(kv[1]))[:25]:
            print("  {:<36} {:7.2f}  ({:.2f} -> {:.2f})".format(key, value, cmp["programs"][str(sizes[0])].get(key, 0),
                                                              cmp["programs"][str(sizes[-1])].get(key, 0)), file=out)
        for key, value in sorted(cmp["roles"]["excess"].items()):
            print("  role {:<31} {:7.2f}".format(key, value), file=out)
        return cmp
    return None


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m testbed.cpuattr", description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="8,32,32,8", help="stars to bring up, in this order (default 8,32,32,8)")
    p.add_argument("--parallel", type=cli.hook_slots, default=0, help="hook slots across units (default 0: none)")
    p.add_argument("--json", help="write every run's record here")
    p.add_argument("--charms", default="", help="built charms to run (default: build/charms-local)")
    p.add_argument("--eps", type=int, default=0, choices=range(0, 101), metavar="N",
                   help="then N rounds of the EPS (the bench's control part), each with and without the PQ PSK")
    args = p.parse_args(argv)
    args.sizes = cli.parse_list(p, "--sizes", args.sizes, convert=cli.positive_int) if args.sizes else []
    if any(k > 250 for k in args.sizes):
        p.error("--sizes: at most 250 tunnels (one /24 link)")
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if os.geteuid() != 0:
        print("testbed.cpuattr needs root (namespaces, taskstats)", file=sys.stderr)
        return 2
    progress = demo.Progress()
    charms_dir = os.path.abspath(args.charms) if args.charms else bench.build_charms.output_dir("local")
    if not os.path.isdir(os.path.join(charms_dir, "wireguard-proxy")):
        print("no built charms in {}: run `make charms-local`".format(charms_dir), file=sys.stderr)
        return 2
    out = os.path.join(bench.BUILD_DIR, "cpuattr")
    os.makedirs(out, exist_ok=True)
    work = bench.make_work_dir(out)
    recs, failed = {}, []
    try:
        runner = _Runner(charms_dir, work, vim.userspace_wireguard(), args.parallel, progress)
        for k in args.sizes:
            try:
                rec = measure_star(runner, k)
            except convergence.ConvergenceError as e:      # the machine too loaded: say so, go on
                failed.append("{} tunnels: {}".format(k, e))
                progress("{} tunnels: FAILED ({})".format(k, e))
                continue
            recs.setdefault(k, []).append(rec)
            progress("{} tunnels: {:.1f} CPU-s attributed".format(
                k, sum(v["cpu_s"] for r, v in rec["roles"].items() if r != "other")))
        eps = measure_eps_rounds(runner, args.eps, progress, failed)
    finally:
        bench.remove_work_dir(work)
    cmp = print_report(recs)
    print_eps(eps)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"command": " ".join(["python -m testbed.cpuattr"] + (argv or sys.argv[1:])),
                       "runs": {str(k): v for k, v in recs.items()}, "compare": cmp, "eps": eps, "failed": failed},
                      f, indent=1, sort_keys=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
