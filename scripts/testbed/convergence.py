"""The bench's control plane: how fast the charms bring tunnels up, and what it costs.

- EPS: the real ``eps_wg`` NS (5 VNFs, 5 tunnels, the OAI charms) in OSM's order; the OAI
  primitives after ``config`` are left out (they come after the measured window and need the
  internet).
- Hub and spokes: a hub VNF whose ``vpn`` endpoint is related to k spokes (``vpn-peer``), the
  EPS's scaling case (one MME or SPGW-U with many eNBs).
Convergence = from the first / last ``config`` primitive to the moment every device on both
ends of every tunnel shows a handshake. Counted until that moment: hook runs (per unit, per
unit and relation), the SSH sessions the charms opened (their log lines: one per reconcile that
contacts the VNF, one per credential check) and sshd logins (an independent count).
"""
import os
import re
import threading
import time

from testbed import demo
from testbed.emulators import lcm, vca, vim
from testbed.measurement import benchstats, loadcheck
from vpnaas.charm.base import RECONCILE_SESSION
from vpnaas.charm.proxy_actions import VERIFY_SESSION

HANDSHAKE_TIMEOUT = 120

# Hub-and-spoke: one link, hub at .1, spoke i at .(i+1); tunnel /24 shared by the hub's device.
STAR_LINK, STAR_CIDR = "star", "192.168.64.0/24"
STAR_TUNNEL = "10.251.0.{}/24"
HUB_SVC, SPOKE_SVC = "172.17.0.1/32", "172.17.1.{}/32"
#: The star's service network: what each side admits from the other (vpn*-service-network).
STAR_SERVICE_NET = "172.17.0.0/16"


class ConvergenceError(Exception):
    pass


class BenchModel(vca.Model):
    """The emulated VCA, also recording when config primitives start (monotonic) and the
    machine's CPU counters at the first one."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.config_times = []
        #: (application, time.monotonic()) of every config primitive, in the order they started.
        self.config_apps = []
        self.ticks_at_first_config = None
        #: The testbed's VNF namespaces (set by instantiate_measured) and the CPU ticks of this
        #: process tree and of their processes at the first config (``own_ticks``).
        self.namespaces = lambda: []
        self.own_at_first_config = None
        #: The LCM runs every VNF's config primitive at once, each in a thread of its own: the
        #: readings are taken once, by the first, before any primitive's time is recorded.
        self._first_config = threading.Lock()

    def set_config(self, app, values, wait=True):
        with self._first_config:
            if not self.config_times:
                self.own_at_first_config = own_ticks(self.namespaces())
                self.ticks_at_first_config = loadcheck.machine_ticks()
            self.config_times.append(time.monotonic())
            self.config_apps.append((app, self.config_times[-1]))
        super().set_config(app, values, wait=wait)


def cpu_record(ticks_before, ticks_after, seconds):
    """The machine's busy CPU time between two machine_ticks() readings: on a machine where
    every core stays busy, the time to converge is this work divided by the cores."""
    busy = (ticks_after[0] - ticks_before[0]) / float(loadcheck.TICK)
    steal = (ticks_after[1] - ticks_before[1]) / float(loadcheck.TICK)
    cores = os.cpu_count() or 1
    return {"cpu_seconds": busy, "cpu_steal_seconds": steal,
            "cpu_busy_fraction": benchstats.ratio(busy, seconds * cores) if seconds > 0 else None}


def own_ticks(namespaces):
    """CPU ticks of the instantiation's own processes: this process (the emulated VCA and LCM),
    every child it reaped (hooks, with their hook tools, gate and SSH client), and the processes
    in the VNFs' namespaces with the children they reaped (sshd and its sessions' commands, the
    tunnel daemons). Unlike ``cpu_seconds`` (the whole machine), other work on the machine does
    not count; a hook still running at a reading counts only once it ends."""
    total = loadcheck.process_ticks("self", children=True)
    for pid in loadcheck.namespace_pids(namespaces):
        total += loadcheck.process_ticks(pid, children=True)
    return total


def sshd_logins(vnf):
    """Successful SSH logins sshd logged on ``vnf``: counts sessions independently of the charm."""
    try:
        with open(os.path.join(vnf.state_dir, "sshd.log")) as f:
            return sum(1 for line in f if line.startswith("Accepted "))
    except OSError:
        return 0


_RELATION_HOOK = re.compile(r"^hooks/(?P<ep>.+)-relation-(?P<kind>created|joined|changed|departed|broken)$")


def opened_session(run, line=RECONCILE_SESSION):
    """Sessions ``run`` opened of one kind (its log lines starting with ``line``)."""
    return sum(1 for msg in run.log if msg.startswith(line))


def hook_kind(run):
    """What a hook run did: "gate" when it ended in the charm's hook gate, before ops (ops logs
    at least its start-up line in every hook it runs; the gate logs nothing), "session" when a
    reconcile opened an SSH session, "verify" for a credential check's own login, else "charm"."""
    if not run.log:
        return "gate"
    if opened_session(run):
        return "session"
    return "verify" if opened_session(run, VERIFY_SESSION) else "charm"


def written_by_remote(run):
    """Whether a relation-changed run is one the remote side's writes caused: it covers a committed
    write of that side and is not the relation-changed Juju runs right after relation-joined
    (which it runs whatever was written: worker/uniter/relation/state.go ``UpdateStateForHook``
    sets ``ChangedPending`` after joined, resolver.go ``nextHookForRelation`` returns it first)."""
    kinds = [hook for _writer, hook, _keys in run.causes]
    return bool(kinds) and "joined" not in kinds


def hook_counts(runs):
    """Hook runs per unit, per (unit, relation) -- a hub's endpoint has one relation per spoke --,
    relation-changed only per (unit, relation), of them those the remote unit's writes caused
    (``written_by_remote``), and per (unit, relation) the runs that reached the charm (the others
    ended in the hook gate)."""
    per_unit, per_rel, per_rel_changed, per_rel_written, per_rel_charm = {}, {}, {}, {}, {}
    for run in runs:
        per_unit[run.unit] = per_unit.get(run.unit, 0) + 1
        m = _RELATION_HOOK.match(run.hook)
        if m:
            key = "{} {}".format(run.unit, run.relation or m.group("ep"))
            per_rel[key] = per_rel.get(key, 0) + 1
            if m.group("kind") == "changed":
                per_rel_changed[key] = per_rel_changed.get(key, 0) + 1
                per_rel_written[key] = per_rel_written.get(key, 0) + written_by_remote(run)
            per_rel_charm[key] = per_rel_charm.get(key, 0) + (hook_kind(run) != "gate")
    return {"per_unit": per_unit, "per_unit_relation": per_rel, "changed_per_unit_relation": per_rel_changed,
            "written_per_unit_relation": per_rel_written, "charm_per_unit_relation": per_rel_charm}


def convergence_record(model, testbed, t_up, ticks_up, own_up=None):
    """Everything counted at the moment all tunnels were up (hooks that ended by then); the
    logins-per-session check compares sshd's logins with the charms' session lines once the
    model has settled (both counts complete)."""
    first, last = min(model.config_times), max(model.config_times)
    cpu = cpu_record(model.ticks_at_first_config, ticks_up, t_up - first)
    own0 = getattr(model, "own_at_first_config", None)
    own = (own_up - own0) / float(loadcheck.TICK) if own_up is not None and own0 is not None else None
    cpu.update(own_cpu_seconds=own, own_cpu_seconds_per_vnf=own / len(testbed.vnfs) if own is not None else None)
    runs = [r for r in list(model.hook_log) if r.ended <= t_up]
    reconciles = {}
    for r in runs:
        reconciles[r.unit] = reconciles.get(r.unit, 0) + opened_session(r)
    verifications = sum(opened_session(r, VERIFY_SESSION) for r in runs)
    model.settle()
    settled_sessions = sum(opened_session(r) + opened_session(r, VERIFY_SESSION) for r in model.hook_log)
    logins = {name: sshd_logins(v) for name, v in testbed.vnfs.items()}
    counts = hook_counts(runs)
    total_reconciles, total_logins = sum(reconciles.values()), sum(logins.values())
    return {
        "seconds_after_last_config": t_up - last,
        "seconds_after_first_config": t_up - first,
        "hooks_total": len(runs),
        "hooks_after_first_config": sum(1 for r in runs if r.started >= first),
        "charm_hooks_after_first_config": sum(1 for r in runs if r.started >= first and hook_kind(r) != "gate"),
        "hooks": counts,
        "max_hooks_per_unit": max(counts["per_unit"].values()),
        "max_hooks_per_unit_relation": max(counts["per_unit_relation"].values() or [0]),
        "max_changed_per_unit_relation": max(counts["changed_per_unit_relation"].values() or [0]),
        "max_written_per_unit_relation": max(counts["written_per_unit_relation"].values() or [0]),
        "max_charm_hooks_per_unit_relation": max(counts["charm_per_unit_relation"].values() or [0]),
        "reconcile_sessions_per_unit": reconciles,
        "sshd_logins_per_vnf": logins,
        "reconcile_sessions": total_reconciles,
        "verify_sessions": verifications,
        "sessions": total_reconciles + verifications,
        "sshd_logins": total_logins,
        "sessions_settled": settled_sessions,
        "hooks_until_settled": len(model.hook_log),
        "logins_per_session": benchstats.ratio(total_logins, settled_sessions),
        "hook_seconds": [round(r.seconds, 4) for r in runs],
        "hook_kinds": [hook_kind(r) for r in runs],
        **cpu,
    }


def wait_handshakes(checks, timeout=HANDSHAKE_TIMEOUT):
    """Poll ``checks`` (a list of (vnf, device, expected peers)) until every device has a
    handshake with every expected peer; returns the monotonic time that happened."""
    deadline = time.monotonic() + timeout
    pending = list(checks)
    while pending:
        vnf, device, peers = pending[0]
        text = vnf.wg_show(device, "latest-handshakes").split()
        stamps = [int(x) for x in text[1::2]]
        if len(stamps) >= peers and all(stamps):
            pending.pop(0)
            continue
        if time.monotonic() > deadline:
            raise ConvergenceError("no handshake on {} {} after {} s".format(vnf.name, device, timeout))
        time.sleep(0.05)
    return time.monotonic()


def instantiate_measured(tb, model, links, vnfs, relations, checks, progress=None, after_up=None):
    """lcm.instantiate, timing the tunnels right after the last config primitive (the VCA may
    still be delivering hooks meanwhile, as Juju would). ``progress`` gets the phases;
    ``after_up()``, called at once when every handshake is there, adds figures of its own."""
    record = {}
    if isinstance(model, BenchModel):
        model.namespaces = lambda: [v.netns for v in tb.vnfs.values()]

    def after_config(_report):
        pending = checks(tb)
        if progress:
            progress("waiting for handshakes on {} device(s)".format(len(pending)))
        t_up = wait_handshakes(pending)
        ticks_up = loadcheck.machine_ticks()
        own_up = own_ticks(model.namespaces()) if isinstance(model, BenchModel) else None
        extra = after_up() if after_up else {}
        record.update(convergence_record(model, tb, t_up, ticks_up, own_up))
        record.update(extra)

    lcm.instantiate(tb, model, links, vnfs, relations, after_config=after_config, progress=progress, detail=False)
    return record


class Runner(object):
    """Creates testbeds under ``workdir`` and remembers their ids (for the teardown check)."""

    def __init__(self, charms_dir, workdir, userspace, parallel, progress=None):
        self.charms_dir, self.workdir, self.userspace, self.parallel = charms_dir, workdir, userspace, parallel
        self.progress = progress       # the phases of each instantiation
        self.created = []

    def testbed(self, name):
        tb = vim.Testbed(os.path.join(self.workdir, name), userspace_wireguard=self.userspace)
        self.created.append(tb.id)
        tb.create()
        return tb

    def model(self, tb, name):
        return BenchModel(os.path.join(self.workdir, "vca-" + name), name=name, runner=tb.runner(),
                          parallel=self.parallel)


def eps_instance(charms_dir):
    """The eps_wg instance as the demo loads it, without the primitives after ``config``."""
    inst = demo.load_instances("eps_wg", charms_dir)[0]
    for spec in inst.vnfs:
        spec.primitives = []
    return inst


def run_eps_once(runner, then=None, adjust=None, after_up=None, on_testbed=None):
    """One EPS instantiation; ``then(tb, inst, model)`` runs on the converged testbed before teardown;
    ``adjust(inst)`` changes the instance first (its config primitives' parameters);
    ``after_up(tb, inst, model)`` adds figures the moment every handshake is there (pqcost.py);
    ``on_testbed(tb, inst)`` runs once the testbed exists, before any VNF (hookclass's watch)."""
    inst = eps_instance(runner.charms_dir)
    if adjust:
        adjust(inst)
    tb = runner.testbed("tb-eps")
    model = None
    try:
        if on_testbed:
            on_testbed(tb, inst)
        model = runner.model(tb, "eps")

        def checks(tb_):
            return [(tb_.vnfs[app], "wg-" + rp.name, 1) for rp in inst.refpoints for app in (rp.provider, rp.requirer)]

        rec = instantiate_measured(tb, model, inst.links, inst.vnfs, inst.relations, checks, runner.progress,
                                   after_up=(lambda: after_up(tb, inst, model)) if after_up else None)
        rec["tunnels"] = len(inst.refpoints)
        if then:
            rec["then"] = then(tb, inst, model)
        return rec
    finally:
        if model:
            model.close()
        tb.teardown()


def hub_specs(charms_dir, k, hub_last=True):
    """A hub VNF whose ``vpn`` endpoint is related to k spoke VNFs (``vpn-peer``): one device
    wg-vpn with k peers on the hub, one device with one peer on each spoke. The hub is
    configured last by default, so that it meets all spoke keys at once."""
    charm = os.path.join(charms_dir, "wireguard-proxy")
    hub = lcm.VnfSpec("hub", charm, {STAR_LINK: "192.168.64.1/24"}, {
        "ssh-hostname": "<rw_mgmt_ip>", "ssh-username": "root", "vpn-endpoint-address": "192.168.64.1",
        "vpn-tunnel-address": STAR_TUNNEL.format(1), "vpn-service-addresses": HUB_SVC,
        "vpn-service-network": STAR_SERVICE_NET})
    spokes = [spoke_spec(charms_dir, i) for i in range(1, k + 1)]
    relations = [("hub:vpn", "{}:vpn-peer".format(s.name)) for s in spokes]
    return (spokes + [hub] if hub_last else [hub] + spokes), relations


def spoke_spec(charms_dir, i):
    """Spoke i of the star (1-249): ``s<i>`` at .(i+1) of the link, of the tunnel network and with
    service address 172.17.1.<i>."""
    return lcm.VnfSpec("s{}".format(i), os.path.join(charms_dir, "wireguard-proxy"),
                       {STAR_LINK: "192.168.64.{}/24".format(i + 1)}, {
                           "ssh-hostname": "<rw_mgmt_ip>", "ssh-username": "root",
                           "vpn-peer-endpoint-address": "192.168.64.{}".format(i + 1),
                           "vpn-peer-tunnel-address": STAR_TUNNEL.format(i + 1),
                           "vpn-peer-service-addresses": SPOKE_SVC.format(i),
                           "vpn-peer-service-network": STAR_SERVICE_NET})


def hub_hook_costs(hook_log, hub="hub/0"):
    """The hub's cost per relation hook over a whole instantiation: the hooks that concern one
    relation and can change nothing end in the hook gate (their cost must not grow with the
    number of relations: seconds and hook-tool calls each); those that run the charm decide on
    every relation (their tool calls grow with it)."""
    mine = [r for r in hook_log if r.unit == hub and r.relation != ""]
    gate = [r for r in mine if hook_kind(r) == "gate"]
    charm = [r for r in mine if hook_kind(r) != "gate"]
    return {"hub_gate_hooks": len(gate), "hub_charm_relation_hooks": len(charm),
            "hub_gate_hook_seconds": benchstats.summarize([r.seconds for r in gate])["median"],
            "hub_gate_hook_tool_calls": max((r.tool_calls for r in gate), default=None),
            "hub_charm_hook_tool_calls": benchstats.summarize([r.tool_calls for r in charm])["median"]}


class Star(object):
    """The hub-and-spoke topology of ``k`` tunnels (``hub_specs``), brought up by ``up`` and kept
    until ``down``: the bench measures its convergence, the hook profiler and the spoke-join probe
    act on it once converged."""

    def __init__(self, runner, k, hub_last=True):
        if not 1 <= k <= 250:
            raise ConvergenceError("synthetic topology size {} is outside 1-250 (one /24 link)".format(k))
        self.runner, self.k, self.hub_last = runner, k, hub_last
        self.specs, self.relations = hub_specs(runner.charms_dir, k, hub_last)
        self.tb = self.model = None

    def checks(self, tb):
        return [(tb.vnfs["hub"], "wg-vpn", self.k)] + [(tb.vnfs[s.name], "wg-vpn-peer", 1) for s in self.specs
                                                       if s.name != "hub"]

    def up(self, after_up=None):
        """Instantiate and wait for every handshake; the convergence record. ``after_up()`` runs
        the moment every handshake is there (instantiate_measured; testbed.cpuattr ends its window)."""
        self.tb = self.runner.testbed("tb-syn{}".format(self.k))
        self.model = self.runner.model(self.tb, "syn{}".format(self.k))
        t0 = time.monotonic()
        rec = instantiate_measured(self.tb, self.model, {STAR_LINK: STAR_CIDR}, self.specs, self.relations,
                                   self.checks, self.runner.progress, after_up=after_up)
        k = self.k
        rec["seconds_instantiation"] = time.monotonic() - t0
        rec["tunnels"], rec["vnfs"], rec["hub_last"] = k, k + 1, self.hub_last
        rec["hub_hooks"] = rec["hooks"]["per_unit"].get("hub/0", 0)
        rec["hooks_per_tunnel"] = rec["hooks_after_first_config"] / float(k)
        rec["charm_hooks_per_tunnel"] = rec["charm_hooks_after_first_config"] / float(k)
        rec.update(hub_hook_costs(self.model.hook_log))
        rec["sessions_per_tunnel"] = rec["sessions"] / float(k)
        rec["cpu_seconds_per_vnf"] = rec["cpu_seconds"] / float(k + 1)
        return rec

    def down(self):
        if self.model:
            self.model.close()
        if self.tb:
            self.tb.teardown()


def run_synthetic_once(runner, k, hub_last=True, then=None):
    """One instantiation of the star of ``k`` tunnels; ``then(star, record)`` runs on the
    converged star before teardown."""
    star = Star(runner, k, hub_last)
    try:
        rec = star.up()
        if then:
            then(star, rec)
        return rec
    finally:
        star.down()


def conv_line(label, rec):
    return ("{}: up {:.1f} s after the last config ({:.1f} s after the first), {} hooks ({} after the first "
            "config), {} reconcile + {} verify sessions by then, {} sshd logins for {} sessions once settled, "
            "worst unit+relation {} hooks ({} relation-changed)").format(
        label, rec["seconds_after_last_config"], rec["seconds_after_first_config"], rec["hooks_total"],
        rec["hooks_after_first_config"], rec["reconcile_sessions"], rec["verify_sessions"], rec["sshd_logins"],
        rec["sessions_settled"], rec["max_hooks_per_unit_relation"], rec.get("max_changed_per_unit_relation", "-"))


CONV_METRICS = ("seconds_after_last_config", "seconds_after_first_config", "hooks_total", "hooks_after_first_config",
                "max_hooks_per_unit", "max_hooks_per_unit_relation", "max_changed_per_unit_relation",
                "max_written_per_unit_relation", "max_charm_hooks_per_unit_relation",
                "reconcile_sessions", "verify_sessions", "sessions", "sshd_logins", "logins_per_session",
                "hooks_per_tunnel", "charm_hooks_per_tunnel",
                "sessions_per_tunnel", "hub_gate_hook_seconds", "hub_gate_hook_tool_calls",
                "hub_charm_hook_tool_calls", "cpu_seconds", "cpu_busy_fraction",
                "cpu_seconds_per_vnf")


def conv_summary(records):
    return benchstats.summarize_rounds([{k: r[k] for k in CONV_METRICS if k in r} for r in records])
