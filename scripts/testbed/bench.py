"""`make bench`: repeated data-plane and control-plane measurements of the VPNaaS core.

1. Data plane: one pair of VNFs with the generic wireguard-proxy charm (brought up through the
   emulated LCM, like tests/e2e), then N rounds of TCP 1 stream, TCP 4 streams, UDP at full
   speed and ping both ways, through the tunnel (service addresses) and on the plain link
   (underlay addresses), interleaved and alternating the order per round (outside load on a
   shared machine cuts throughput in bursts, so both paths share each round's conditions); plus
   the byte overhead of a fixed-rate UDP stream counted on the underlay veth.
2. Control plane: N instantiations of the real EPS NS (eps_wg) -> seconds from the last config
   primitive to all 5 tunnels up, hook runs per unit and per unit and relation, SSH sessions.
3. Synthetic hub-and-spoke topologies of 2, 8 and 32 tunnels -> how convergence grows.
4. A profile of where a hook's time goes and of the WireGuard daemons' CPU.
Output: a table, build/bench/bench.json (raw samples + summary) and build/bench/bench.png.
Everything is torn down, also on Ctrl-C, SIGTERM or failure.
"""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

from bundle import BUILD_DIR, build_charms
from testbed import benchstats, demo, lcm, measure, nsmodel, pair, vca, vim

OUT_DIR = os.path.join(BUILD_DIR, "bench")
HANDSHAKE_TIMEOUT = 120
IPERF_PORT = 5301           # not demo's 5201: a bench and a demo may run side by side
#: Fixed-rate overhead test: 100 Mbit/s of UDP datagrams whose inner IP packet (payload + 28)
#: exactly fills the tunnel MTU (1420): 1400-byte payloads would be fragmented inside the tunnel.
FIXED_RATE = "100M"
FIXED_PAYLOAD = 1392
UDP_PAYLOAD = measure.UDP_PAYLOAD
PINGS = 200
PING_INTERVAL = 0.01
SIZES = (2, 8, 32)

# The data-plane pair (testbed.pair, as in the end-to-end tests).
PAIR_LINK, PAIR_CIDR = pair.LINK, pair.CIDR
A_SVC, B_SVC = pair.A_SVC, pair.B_SVC

# Hub-and-spoke: one link, hub at .1, spoke i at .(i+1); tunnel /24 shared by the hub's device.
STAR_LINK, STAR_CIDR = "star", "192.168.64.0/24"
STAR_TUNNEL = "10.251.0.{}/24"
HUB_SVC, SPOKE_SVC = "172.17.0.1/32", "172.17.1.{}/32"


class BenchError(Exception):
    pass


def _terminate(signum, _frame):
    raise KeyboardInterrupt("signal {}".format(signum))


# --------------------------------------------------------------------------- instrumented VCA


class BenchModel(vca.Model):
    """The emulated VCA, also recording when config primitives start and, per hook, how many
    SSH sessions its reconcile opened (hook_log index -> sessions)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.config_times = []
        self.hook_sessions = []
        self.hook_relations = []      # hook_log index -> relation id ("" for other hooks)

    def set_config(self, app, values):
        self.config_times.append(time.monotonic())
        super().set_config(app, values)

    def _dispatch(self, unit, dispatch_path, extra):
        before = lcm.ssh_sessions(self, unit)
        try:
            return super()._dispatch(unit, dispatch_path, extra)
        finally:
            if len(self.hook_sessions) < len(self.hook_log):
                self.hook_sessions.append(lcm.ssh_sessions(self, unit) - before)
                self.hook_relations.append(extra.get("JUJU_RELATION_ID", ""))


def sshd_logins(vnf):
    """Successful SSH logins sshd logged on ``vnf``: counts sessions independently of the charm."""
    try:
        with open(os.path.join(vnf.state_dir, "sshd.log")) as f:
            return sum(1 for line in f if line.startswith("Accepted "))
    except OSError:
        return 0


_RELATION_HOOK = re.compile(r"^hooks/(?P<ep>.+)-relation-(?P<kind>created|joined|changed|departed|broken)$")


def hook_counts(model, upto):
    """Hook runs until index ``upto`` of hook_log: per unit, per (unit, relation) -- a hub's
    endpoint has one relation per spoke -- and relation-changed only per (unit, relation)."""
    per_unit, per_rel, per_rel_changed = {}, {}, {}
    for i, (_t, unit, path, _took) in enumerate(model.hook_log[:upto]):
        per_unit[unit] = per_unit.get(unit, 0) + 1
        m = _RELATION_HOOK.match(path)
        if m:
            rid = model.hook_relations[i] if i < len(model.hook_relations) else ""
            key = "{} {}".format(unit, rid or m.group("ep"))
            per_rel[key] = per_rel.get(key, 0) + 1
            if m.group("kind") == "changed":
                per_rel_changed[key] = per_rel_changed.get(key, 0) + 1
    return {"per_unit": per_unit, "per_unit_relation": per_rel, "changed_per_unit_relation": per_rel_changed}


def convergence_record(model, testbed, t_up, upto):
    """Everything counted at the moment all tunnels were up."""
    first, last = model.config_times[0], model.config_times[-1]
    after_first = [i for i, e in enumerate(model.hook_log[:upto]) if e[0] >= _wall(first)]
    reconciles = {u: lcm.ssh_sessions(model, u) for u in model.units()}
    logins = {name: sshd_logins(v) for name, v in testbed.vnfs.items()}
    counts = hook_counts(model, upto)
    total_reconciles, total_logins = sum(reconciles.values()), sum(logins.values())
    return {
        "seconds_after_last_config": t_up - last,
        "seconds_after_first_config": t_up - first,
        "hooks_total": upto,
        "hooks_after_first_config": len(after_first),
        "hooks": counts,
        "max_hooks_per_unit": max(counts["per_unit"].values()),
        "max_hooks_per_unit_relation": max(counts["per_unit_relation"].values() or [0]),
        "max_changed_per_unit_relation": max(counts["changed_per_unit_relation"].values() or [0]),
        "reconcile_sessions_per_unit": reconciles,
        "sshd_logins_per_vnf": logins,
        "reconcile_sessions": total_reconciles,
        "sshd_logins": total_logins,
        "sessions_per_reconcile": benchstats.ratio(total_logins, total_reconciles),
        "hook_seconds": [round(e[3], 4) for e in model.hook_log[:upto]],
        "hook_opened_session": list(model.hook_sessions[:upto]),
    }


def _wall(mono):
    """hook_log carries wall-clock times; config_times are monotonic."""
    return time.time() - (time.monotonic() - mono)


# --------------------------------------------------------------------------- helpers


def wireguard_choice(testbed):
    """(userspace path or None, description): the kernel module when the kernel has it, else the
    newest wireguard-go (build/tools), else the distribution's."""
    probe = vim.sh(["ip", "-n", testbed.infra, "link", "add", "wgprobe", "type", "wireguard"], check=False)
    if probe.returncode == 0:
        vim.sh(["ip", "-n", testbed.infra, "link", "del", "wgprobe"], check=False)
        return None, "kernel WireGuard ({})".format(os.uname().release)
    path = vim.userspace_wireguard()
    if not path:
        raise BenchError("no WireGuard: no kernel module and no wireguard-go (run `make wireguard-go` or "
                         "`sudo make deps`)")
    out = vim.sh([path, "--version"], check=False).stdout.split()
    version = out[1] if len(out) > 1 else "unknown"
    kind = "newest, built by make wireguard-go" if os.sep + "build" + os.sep in path else "distribution package"
    return path, "wireguard-go {} ({}, {})".format(version, kind, path)


#: Ids of the testbeds this process created (the teardown check looks at these only).
CREATED = []


def new_testbed(workdir, userspace):
    tb = vim.Testbed(workdir, userspace_wireguard=userspace)
    CREATED.append(tb.id)
    tb.create()
    return tb


def wait_handshakes(checks, timeout=HANDSHAKE_TIMEOUT):
    """Poll ``checks`` (a list of (vnf, device, expected peers)) until every device has a
    handshake with every expected peer; returns the monotonic time that happened."""
    deadline = time.monotonic() + timeout
    pending = list(checks)
    while pending:
        vnf, device, peers = pending[0]
        text = vnf.exec(["wg", "show", device, "latest-handshakes"], check=False).stdout.split()
        stamps = [int(x) for x in text[1::2]]
        if len(stamps) >= peers and all(stamps):
            pending.pop(0)
            continue
        if time.monotonic() > deadline:
            raise BenchError("no handshake on {} {} after {} s".format(vnf.name, device, timeout))
        time.sleep(0.05)
    return time.monotonic()


def wg_pids(testbed):
    """{vnf name: [wireguard-go pids]} (empty for the kernel module)."""
    out = {}
    for name, vnf in testbed.vnfs.items():
        pids = vim.sh(["ip", "netns", "pids", vnf.netns], check=False).stdout.split()
        out[name] = [p for p in pids if vim._comm(p).startswith("wireguard")]
    return out


def cpu_ticks(pids):
    total = 0
    for pid in pids:
        try:
            with open("/proc/{}/stat".format(pid)) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])    # utime + stime
        except (OSError, IndexError, ValueError):
            pass
    return total


# --------------------------------------------------------------------------- data plane


def iperf_raw(server, server_addr, client, client_addr, seconds, streams=1, udp_bitrate=None, length=None):
    """One iperf3 run client -> server; the parsed summary plus UDP loss and CPU figures."""
    try:
        summary, data = measure.iperf_json(server, server_addr, client, client_addr, seconds, streams,
                                           udp_bitrate, length=length or UDP_PAYLOAD, port=IPERF_PORT)
    except measure.MeasureError as e:
        raise BenchError(str(e)) from None
    end = data.get("end") or {}
    udp = end.get("sum") or {}
    if udp_bitrate is not None:
        # iperf3 3.12 reports UDP as one sum: the sender's rate with the receiver's loss count.
        lost = float(udp.get("lost_percent") or 0.0)
        summary["loss_percent"] = lost
        summary["received_bps"] = float(udp.get("bits_per_second") or 0.0) * (1 - lost / 100.0)
        summary["throughput_bps"] = summary["received_bps"]
        summary["sent_bytes"] = int(udp.get("bytes") or 0)
        summary["packets"] = int(udp.get("packets") or 0)
    cpu = end.get("cpu_utilization_percent") or {}
    summary["cpu_sender_percent"] = cpu.get("host_total")
    summary["cpu_receiver_percent"] = cpu.get("remote_total")
    return summary


def link_counters(testbed, port):
    """(bytes, packets) the infra side of ``port`` received, i.e. what the VNF sent on the link."""
    out = vim.sh(["ip", "-n", testbed.infra, "-s", "-j", "link", "show", port]).stdout
    rx = json.loads(out)[0]["stats64"]["rx"]
    return int(rx["bytes"]), int(rx["packets"])


def pair_specs(charms_dir):
    return pair.specs(charms_dir)


def dataplane_round(tb, paths, order, seconds, cpu_pids):
    """One round: every test on both paths, the paths in ``order``. Returns {metric: value}."""
    a, b = tb.vnfs["a"], tb.vnfs["b"]
    sample = {}
    tests = (("tcp1", 1, None), ("tcp4", 4, None), ("udp", 1, "0"))
    for test, streams, rate in tests:
        for path in order:
            src, dst = paths[path]
            ticks = cpu_ticks(cpu_pids)
            t0 = time.monotonic()
            r = iperf_raw(b, dst, a, src, seconds, streams=streams, udp_bitrate=rate)
            wall = time.monotonic() - t0
            sample["{}_{}_bps".format(path, test)] = r["throughput_bps"]
            if rate is not None:
                sample["{}_{}_loss_percent".format(path, test)] = r["loss_percent"]
            else:
                sample["{}_{}_retransmits".format(path, test)] = r["retransmits"]
            sample["{}_{}_sender_cpu_percent".format(path, test)] = r["cpu_sender_percent"]
            if path == "wg" and cpu_pids:
                # Both daemons together, in cores (1.0 = one core busy for the whole run).
                sample["wg_{}_wireguard_go_cores".format(test)] = (cpu_ticks(cpu_pids) - ticks) / \
                    os.sysconf("SC_CLK_TCK") / wall
    for path in order:
        src, dst = paths[path]
        fwd = measure.ping(a, src, dst, count=PINGS, interval=PING_INTERVAL)
        back = measure.ping(b, dst, src, count=PINGS, interval=PING_INTERVAL)
        sample["{}_rtt_ab_ms".format(path)] = fwd["rtt_avg_ms"]
        sample["{}_rtt_ba_ms".format(path)] = back["rtt_avg_ms"]
        sample["{}_rtt_ms".format(path)] = (fwd["rtt_avg_ms"] + back["rtt_avg_ms"]) / 2
        sample["{}_rtt_max_ms".format(path)] = max(fwd["rtt_max_ms"], back["rtt_max_ms"])
    for path in order:
        sample.update(fixed_rate_overhead(tb, paths, path, seconds))
    for test in ("tcp1", "tcp4", "udp"):
        sample["ratio_{}".format(test)] = benchstats.ratio(sample["wg_{}_bps".format(test)],
                                                           sample["plain_{}_bps".format(test)])
    sample["added_rtt_ms"] = sample["wg_rtt_ms"] - sample["plain_rtt_ms"]
    return sample


def fixed_rate_overhead(tb, paths, path, seconds):
    """Bytes on a's underlay port per byte of UDP payload, at a fixed rate with no loss."""
    a, b = tb.vnfs["a"], tb.vnfs["b"]
    src, dst = paths[path]
    port = tb.port(a, PAIR_LINK)
    bytes0, pkts0 = link_counters(tb, port)
    r = iperf_raw(b, dst, a, src, seconds, udp_bitrate=FIXED_RATE, length=FIXED_PAYLOAD)
    bytes1, pkts1 = link_counters(tb, port)
    return {"{}_fixed_payload_bytes".format(path): r["sent_bytes"],
            "{}_fixed_underlay_bytes".format(path): bytes1 - bytes0,
            "{}_fixed_underlay_packets".format(path): pkts1 - pkts0,
            "{}_fixed_overhead_ratio".format(path): benchstats.ratio(bytes1 - bytes0, r["sent_bytes"]),
            "{}_fixed_loss_percent".format(path): r["loss_percent"]}


def _round_with_repair(tb, model, paths, order, seconds, repairs, progress, tries=3):
    """One round; when a WireGuard daemon died meanwhile (another test on this machine running
    `pkill -f wireguard` inside a VNF reaches every namespace: VNFs share one PID namespace), the
    charms' own repair path (update-status) restarts it and the round is measured again."""
    for attempt in range(tries):
        pids = [p for ps in wg_pids(tb).values() for p in ps]
        try:
            return dataplane_round(tb, paths, order, seconds, pids)
        except (BenchError, measure.MeasureError) as e:
            alive = [p for p in pids if os.path.exists("/proc/" + p)]
            if len(alive) == len(pids) or attempt == tries - 1:
                raise
            repairs.append({"error": str(e), "killed": sorted(set(pids) - set(alive))})
            progress("a wireguard-go daemon of the pair died (killed from outside?): repairing with update-status")
            model.update_status()
            wait_handshakes([(tb.vnfs["a"], "wg-vpn", 1), (tb.vnfs["b"], "wg-vpn-peer", 1)])
    raise BenchError("unreachable")


def run_dataplane(charms_dir, workdir, runs, seconds, progress):
    tb = new_testbed(os.path.join(workdir, "tb-dataplane"), None)
    try:
        userspace, impl = wireguard_choice(tb)
        tb.userspace_wireguard = userspace
        progress("data plane: WireGuard implementation: {}".format(impl))
        model = BenchModel(os.path.join(workdir, "vca-dataplane"), runner=tb.runner())
        lcm.instantiate(tb, model, {PAIR_LINK: PAIR_CIDR}, list(pair_specs(charms_dir)), [("a:vpn", "b:vpn-peer")])
        a, b = tb.vnfs["a"], tb.vnfs["b"]
        wait_handshakes([(a, "wg-vpn", 1), (b, "wg-vpn-peer", 1)])
        paths = {"wg": (A_SVC, B_SVC), "plain": (a.address(PAIR_LINK), b.address(PAIR_LINK))}
        rounds, repairs = [], []
        for i in range(runs):
            order = ("wg", "plain") if i % 2 == 0 else ("plain", "wg")
            sample = _round_with_repair(tb, model, paths, order, seconds, repairs, progress)
            rounds.append(sample)
            progress("data plane round {}/{}: TCP1 wg {:,.0f} / plain {:,.0f} Mbit/s (ratio {:.3f}), "
                     "RTT wg {:.3f} / plain {:.3f} ms".format(
                         i + 1, runs, sample["wg_tcp1_bps"] / 1e6, sample["plain_tcp1_bps"] / 1e6,
                         sample["ratio_tcp1"], sample["wg_rtt_ms"], sample["plain_rtt_ms"]))
        return {"implementation": impl, "unit_status": {u: model.status(u) for u in model.units()},
                "tunnel_mtu": 1420, "underlay_mtu": 1500, "udp_payload_bytes": UDP_PAYLOAD,
                "fixed_rate": FIXED_RATE, "fixed_payload_bytes": FIXED_PAYLOAD, "seconds": seconds,
                "pings_per_direction": PINGS, "rounds": rounds, "repairs": repairs,
                "summary": benchstats.summarize_rounds(rounds)}
    finally:
        tb.teardown()


# --------------------------------------------------------------------------- control plane


def eps_instance(charms_dir):
    """The eps_wg instance as the demo loads it, without the primitives after ``config`` (the
    OAI builds and the start come after the measured window)."""
    inst = demo.load_instances("eps_wg", charms_dir)[0]
    for spec in inst.vnfs:
        spec.primitives = []
    return inst


def instantiate_measured(tb, model, links, vnfs, relations, checks):
    """lcm.instantiate, timing the tunnels right after the last config primitive."""
    record = {}

    def after_config(_report):
        t_up = wait_handshakes(checks(tb))
        record.update(convergence_record(model, tb, t_up, len(model.hook_log)))

    lcm.instantiate(tb, model, links, vnfs, relations, after_config=after_config)
    return record


def run_eps_once(charms_dir, workdir, userspace):
    inst = eps_instance(charms_dir)
    tb = new_testbed(os.path.join(workdir, "tb-eps"), userspace)
    try:
        model = BenchModel(os.path.join(workdir, "vca-eps"), name="eps", runner=tb.runner())

        def checks(tb_):
            return [(tb_.vnfs[app], "wg-" + rp.name, 1) for rp in inst.refpoints for app in (rp.provider, rp.requirer)]

        rec = instantiate_measured(tb, model, inst.links, inst.vnfs, inst.relations, checks)
        rec["tunnels"] = len(inst.refpoints)
        return rec
    finally:
        tb.teardown()


def hub_specs(charms_dir, k, hub_last=True):
    """A hub VNF whose ``vpn`` endpoint is related to k spoke VNFs (``vpn-peer``): one device
    wg-vpn with k peers on the hub, one device with one peer on each spoke. The hub is the
    scaling case of the EPS (one MME, many eNBs on S1). The hub is configured last by default,
    so that the VCA delivers its key to all spokes in one pass."""
    charm = os.path.join(charms_dir, "wireguard-proxy")
    hub = lcm.VnfSpec("hub", charm, {STAR_LINK: "192.168.64.1/24"}, {
        "ssh-hostname": "<rw_mgmt_ip>", "ssh-username": "root", "vpn-endpoint-address": "192.168.64.1",
        "vpn-tunnel-address": STAR_TUNNEL.format(1), "vpn-service-addresses": HUB_SVC})
    spokes = []
    for i in range(1, k + 1):
        spokes.append(lcm.VnfSpec("s{}".format(i), charm, {STAR_LINK: "192.168.64.{}/24".format(i + 1)}, {
            "ssh-hostname": "<rw_mgmt_ip>", "ssh-username": "root",
            "vpn-peer-endpoint-address": "192.168.64.{}".format(i + 1),
            "vpn-peer-tunnel-address": STAR_TUNNEL.format(i + 1), "vpn-peer-service-addresses": SPOKE_SVC.format(i)}))
    relations = [("hub:vpn", "{}:vpn-peer".format(s.name)) for s in spokes]
    return (spokes + [hub] if hub_last else [hub] + spokes), relations


def run_synthetic_once(charms_dir, workdir, userspace, k, hub_last=True):
    if not 1 <= k <= 250:
        raise BenchError("synthetic topology size {} is outside 1-250 (one /24 link)".format(k))
    specs, relations = hub_specs(charms_dir, k, hub_last)
    tb = new_testbed(os.path.join(workdir, "tb-syn{}".format(k)), userspace)
    try:
        model = BenchModel(os.path.join(workdir, "vca-syn{}".format(k)), name="syn", runner=tb.runner())

        def checks(tb_):
            return [(tb_.vnfs["hub"], "wg-vpn", k)] + [(tb_.vnfs[s.name], "wg-vpn-peer", 1) for s in specs
                                                        if s.name != "hub"]

        t0 = time.monotonic()
        rec = instantiate_measured(tb, model, {STAR_LINK: STAR_CIDR}, specs, relations, checks)
        rec["seconds_instantiation"] = time.monotonic() - t0
        rec["tunnels"], rec["vnfs"], rec["hub_last"] = k, k + 1, hub_last
        rec["hub_hooks"] = rec["hooks"]["per_unit"].get("hub/0", 0)
        return rec
    finally:
        tb.teardown()


def conv_line(label, rec):
    return ("{}: up {:.1f} s after the last config ({:.1f} s after the first), {} hooks ({} after the first "
            "config), {} reconcile sessions / {} sshd logins, worst unit+relation {} hooks").format(
        label, rec["seconds_after_last_config"], rec["seconds_after_first_config"], rec["hooks_total"],
        rec["hooks_after_first_config"], rec["reconcile_sessions"], rec["sshd_logins"],
        rec["max_hooks_per_unit_relation"])


CONV_METRICS = ("seconds_after_last_config", "seconds_after_first_config", "hooks_total", "hooks_after_first_config",
                "max_hooks_per_unit", "max_hooks_per_unit_relation", "max_changed_per_unit_relation",
                "reconcile_sessions", "sshd_logins", "sessions_per_reconcile")


def conv_summary(records):
    return benchstats.summarize_rounds([{k: r[k] for k in CONV_METRICS if k in r} for r in records])


# --------------------------------------------------------------------------- profile


def _timed(argv, cwd=None, env=None, repeat=3):
    """Median wall time of running argv ``repeat`` times."""
    times = []
    for _ in range(repeat):
        t0 = time.monotonic()
        subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.monotonic() - t0)
    return benchstats.summarize(times)["median"]


SSH_PROBE = r"""
import sys, time
t0 = time.monotonic()
import paramiko
t1 = time.monotonic()
c = paramiko.SSHClient(); c.set_missing_host_key_policy(paramiko.AutoAddPolicy())
c.connect(sys.argv[1], username="root", key_filename=sys.argv[2], timeout=10, allow_agent=False, look_for_keys=False)
t2 = time.monotonic()
_, out, _ = c.exec_command("true"); out.channel.recv_exit_status()
t3 = time.monotonic(); c.close()
print(t1 - t0, t2 - t1, t3 - t2)
"""


def profile_hooks(charms_dir, workdir, userspace, records):
    """Where a hook's time goes: interpreter start, ops import, paramiko import, SSH connect and
    the remote script (the remainder), from the hook log and from timing each piece alone."""
    charm = os.path.join(charms_dir, "wireguard-proxy")
    env = dict(os.environ, PYTHONPATH="lib:venv")
    out = {"python_start_s": _timed([sys.executable, "-c", "pass"]),
           "python_import_ops_s": _timed([sys.executable, "-c", "import ops.main"], cwd=charm, env=env),
           "python_import_ops_charm_s": _timed([sys.executable, "-c", "import ops.main, vpnaas.charm_base"],
                                               cwd=charm, env=env),
           "python_import_paramiko_s": _timed([sys.executable, "-c", "import paramiko"], cwd=charm, env=env),
           "hook_tool_call_s": _timed([sys.executable, os.path.join(os.path.dirname(__file__), "hooktool.py"),
                                       "--help"])}
    with_ssh, without = [], []
    for rec in records:
        for took, opened in zip(rec["hook_seconds"], rec["hook_opened_session"]):
            (with_ssh if opened else without).append(took)
    out["hook_without_ssh_s"] = benchstats.summarize(without)
    out["hook_with_ssh_s"] = benchstats.summarize(with_ssh)
    out.update(_ssh_timing(charm, workdir, userspace))
    wo, w = out["hook_without_ssh_s"]["median"], out["hook_with_ssh_s"]["median"]
    if wo is not None and w is not None and out.get("ssh_connect_s") is not None:
        out["remote_script_and_rest_s"] = w - wo - out["ssh_connect_s"] - out["python_import_paramiko_s"]
    return out


def _ssh_timing(charm, workdir, userspace):
    """paramiko connect + auth and one command to a fresh VNF (same path the charm takes)."""
    tb = new_testbed(os.path.join(workdir, "tb-profile"), userspace)
    try:
        vnf = tb.add_vnf("p")
        key = os.path.join(workdir, "profile_key")
        for path in (key, key + ".pub"):
            if os.path.exists(path):
                os.remove(path)
        vim.sh(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key])
        tb.authorize(vnf, open(key + ".pub").read())
        samples = []
        for _ in range(3):
            proc = vim.sh(tb.runner() + [sys.executable, "-c", SSH_PROBE, vnf.mgmt_ip, key], cwd=charm,
                          env=dict(os.environ, PYTHONPATH="lib:venv"), timeout=60)
            samples.append([float(x) for x in proc.stdout.split()])
        med = [benchstats.summarize([s[i] for s in samples])["median"] for i in range(3)]
        return {"ssh_connect_s": med[1], "ssh_exec_true_s": med[2]}
    finally:
        tb.teardown()


# --------------------------------------------------------------------------- orchestration


def run(args, progress):
    charms_dir = build_charms.output_dir("local")
    if not os.path.isdir(os.path.join(charms_dir, "wireguard-proxy")):
        raise BenchError("no built charms in {}: run `make charms-local`".format(charms_dir))
    # Absolute: the profile and the VNFs' processes run with other working directories.
    args.out = os.path.abspath(args.out)
    os.makedirs(args.out, exist_ok=True)
    work = os.path.join(args.out, "work")
    result = {"schema": 1, "command": " ".join(["python -m testbed.bench"] + (args.argv or [])),
              "runs": args.runs, "seconds": args.seconds, "machine": machine_info()}
    userspace = vim.userspace_wireguard()
    if "dataplane" in args.parts:
        progress("data plane: {} round(s), {} s per iperf3 run".format(args.runs, args.seconds))
        result["dataplane"] = run_dataplane(charms_dir, work, args.runs, args.seconds, progress)
        result["wireguard"] = result["dataplane"]["implementation"]
    records_for_profile = []
    if "control" in args.parts:
        eps = []
        for i in range(args.runs):
            rec = run_eps_once(charms_dir, work, userspace)
            eps.append(rec)
            progress(conv_line("EPS run {}/{}".format(i + 1, args.runs), rec))
        result["eps"] = {"runs": eps, "summary": conv_summary(eps)}
        records_for_profile += eps
    if "synthetic" in args.parts:
        result["synthetic"] = {"topology": "hub-and-spoke, hub configured {}".format(
            "last" if not args.hub_first else "first"), "sizes": {}}
        for k in args.sizes:
            runs = args.runs if k <= args.big else args.big_runs
            recs = []
            for i in range(runs):
                rec = run_synthetic_once(charms_dir, work, userspace, k, hub_last=not args.hub_first)
                recs.append(rec)
                progress(conv_line("synthetic {} tunnels run {}/{}".format(k, i + 1, runs), rec))
            result["synthetic"]["sizes"][str(k)] = {"runs": recs, "summary": conv_summary(recs)}
            records_for_profile += recs
    if records_for_profile and not args.no_profile:
        progress("profiling a hook")
        result["profile"] = profile_hooks(charms_dir, work, userspace, records_for_profile)
    result["targets"] = targets(result)
    return result


def machine_info():
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "")
    except OSError:
        pass
    return {"cpus": os.cpu_count(), "cpu_model": model, "kernel": os.uname().release,
            "python": sys.version.split()[0]}


def targets(result):
    out = []
    dp = (result.get("dataplane") or {}).get("summary") or {}
    if dp:
        out.append(benchstats.check_target("tcp1_ratio", dp["ratio_tcp1"]["median"]))
        out.append(benchstats.check_target("added_rtt_ms", dp["added_rtt_ms"]["median"]))
    eps = (result.get("eps") or {}).get("summary") or {}
    if eps:
        out.append(benchstats.check_target("eps_seconds_after_last_config", eps["seconds_after_last_config"]["median"]))
        worst = eps["max_hooks_per_unit_relation"]["max"]
        out.append(benchstats.check_target("eps_max_hooks_per_unit_relation", worst))
    sessions = [s["summary"]["sessions_per_reconcile"]["max"] for s in
                [result.get("eps") or {}] + list(((result.get("synthetic") or {}).get("sizes") or {}).values())
                if s.get("summary")]
    if sessions:
        out.append(benchstats.check_target("sessions_per_reconcile", max(x for x in sessions if x is not None)))
    sizes = (result.get("synthetic") or {}).get("sizes") or {}
    times = {int(k): [r["seconds_after_first_config"] for r in v["runs"]] for k, v in sizes.items()}
    if 8 in times and 32 in times:
        out.append(benchstats.check_target("synthetic_32_over_8", benchstats.growth(times, 8, 32)))
    return out


# --------------------------------------------------------------------------- output


DP_LABELS = {"bps": ("Mbit/s", 1e6, 0)}


def print_tables(result, stream=sys.stdout):
    w = stream.write
    w("\nWireGuard: {}\n".format(result.get("wireguard", "-")))
    dp = (result.get("dataplane") or {}).get("summary")
    if dp:
        rows = []
        for key, s in dp.items():
            scale, digits = (1e6, 0) if key.endswith("_bps") else (1, 3)
            name = key.replace("_bps", " Mbit/s") if key.endswith("_bps") else key
            rows.append([name] + [benchstats.fmt(None if s[x] is None else s[x] / scale, digits)
                                  for x in ("median", "min", "max")] + [s["n"]])
        w("\nData plane (tunnel = wg, plain link = plain)\n")
        w(benchstats.table(("metric", "median", "min", "max", "n"), rows) + "\n")
    conv = []
    if result.get("eps"):
        conv.append(("EPS (5 tunnels)", result["eps"]["summary"]))
    for k, v in ((result.get("synthetic") or {}).get("sizes") or {}).items():
        conv.append(("hub {} tunnels".format(k), v["summary"]))
    if conv:
        head = ("topology", "s after last cfg", "s after first cfg", "hooks", "hooks after 1st cfg",
                "max/unit", "max/unit+rel", "reconciles", "sshd logins", "logins/reconcile", "n")
        rows = []
        for label, s in conv:
            cell = ["{} ({}-{})".format(*(benchstats.fmt(s[m][x], _digits(m)) for x in ("median", "min", "max")))
                    for m in
                    ("seconds_after_last_config", "seconds_after_first_config", "hooks_total",
                     "hooks_after_first_config", "max_hooks_per_unit", "max_hooks_per_unit_relation",
                     "reconcile_sessions", "sshd_logins", "sessions_per_reconcile")]
            rows.append([label] + cell + [s["seconds_after_last_config"]["n"]])
        w("\nControl plane: convergence, median (min-max)\n")
        w(benchstats.table(head, rows) + "\n")
    prof = result.get("profile")
    if prof:
        w("\nProfile of a hook (seconds)\n")
        for key, v in prof.items():
            if isinstance(v, dict):
                v = "{} median ({}-{}), n={}".format(benchstats.fmt(v["median"]), benchstats.fmt(v["min"]),
                                                     benchstats.fmt(v["max"]), v["n"])
            else:
                v = benchstats.fmt(v)
            w("  {:28} {}\n".format(key, v))
    if result.get("targets"):
        w("\nTargets\n")
        rows = [[t["text"], "{} {}".format(t["op"], t["target"]), benchstats.fmt(t["measured"]),
                 {True: "met", False: "MISSED", None: "-"}[t["met"]]] for t in result["targets"]]
        w(benchstats.table(("target", "wanted", "measured", "verdict"), rows) + "\n")


def _digits(metric):
    return 1 if "seconds" in metric else 2 if "per_reconcile" in metric else 0


def plot(result, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.8))
    dp = (result.get("dataplane") or {}).get("summary")
    if dp:
        _bars(axes[0], dp, ("tcp1", "tcp4", "udp"), "{}_{}_bps", 1e6, "Mbit/s", "throughput (median, min-max)")
        ax = axes[1]
        _bars(ax, dp, ("rtt",), "{}_{}_ms", 1, "ms", "average RTT (median, min-max)")
    conv = []
    if result.get("eps"):
        conv.append(("EPS", 5, result["eps"]["summary"]))
    for k, v in ((result.get("synthetic") or {}).get("sizes") or {}).items():
        conv.append(("hub", int(k), v["summary"]))
    ax = axes[2]
    for metric, style in (("seconds_after_first_config", "o-"), ("seconds_after_last_config", "s--")):
        pts = sorted((k, s[metric]) for label, k, s in conv if label == "hub")
        if pts:
            ax.errorbar([p[0] for p in pts], [p[1]["median"] for p in pts],
                        yerr=[[p[1]["median"] - p[1]["min"] for p in pts], [p[1]["max"] - p[1]["median"] for p in pts]],
                        fmt=style, capsize=4, label="hub-and-spoke, " + metric.replace("_", " "))
        eps = [s[metric] for label, _k, s in conv if label == "EPS"]
        if eps:
            ax.plot([5], [eps[0]["median"]], "r" + style[0], label="EPS, " + metric.replace("_", " "))
    ax.set_xscale("log", base=2)
    ax.set_xlabel("tunnels")
    ax.set_ylabel("seconds")
    ax.set_title("control-plane convergence")
    ax.legend(fontsize=7)
    fig.suptitle("make bench: {}".format(result.get("wireguard", "")), fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _bars(ax, dp, tests, pattern, scale, unit, title):
    xs = range(len(tests))
    for off, path, color in ((-0.2, "wg", "tab:blue"), (0.2, "plain", "tab:gray")):
        ss = [dp.get(pattern.format(path, t)) for t in tests]
        med = [s["median"] / scale for s in ss]
        err = [[(s["median"] - s["min"]) / scale for s in ss], [(s["max"] - s["median"]) / scale for s in ss]]
        ax.bar([x + off for x in xs], med, 0.4, yerr=err, capsize=4, color=color,
               label="WireGuard" if path == "wg" else "plain link")
    ax.set_xticks(list(xs))
    ax.set_xticklabels(tests)
    ax.set_ylabel(unit)
    ax.set_title(title)
    ax.legend(fontsize=7)


def write(result, out_dir):
    path = os.path.join(out_dir, "bench.json")
    with open(path + ".tmp", "w") as f:
        json.dump(result, f, indent=1, sort_keys=True)
    os.replace(path + ".tmp", path)
    png = os.path.join(out_dir, "bench.png")
    plot(result, png)
    return path, png


def left_behind(progress):
    """Namespaces of this process's testbeds still present (each testbed removes its own)."""
    mine = [ns for ns in vim.list_testbed_netns() if any(ns.startswith(tb_id + "-") for tb_id in CREATED)]
    progress("teardown: {}".format("nothing left behind" if not mine else "LEFT: " + ", ".join(mine)))
    return mine


def parse_args(argv):
    p = argparse.ArgumentParser(description="Repeated data-plane and control-plane measurements (root).")
    p.add_argument("--runs", type=int, default=3, help="rounds / instantiations per measurement (default 3)")
    p.add_argument("--seconds", type=int, default=5, help="seconds per iperf3 run (default 5)")
    p.add_argument("--only", help="comma-separated parts to run: dataplane, control, synthetic (default: all)")
    p.add_argument("--sizes", default=",".join(map(str, SIZES)), help="synthetic topology sizes (tunnels)")
    p.add_argument("--big", type=int, default=2,
                   help="sizes above this get --big-runs runs (a 32-tunnel run takes ~10 min here)")
    p.add_argument("--big-runs", type=int, default=1, help="runs of the sizes above --big (default 1)")
    p.add_argument("--hub-first", action="store_true", help="configure the hub before the spokes")
    p.add_argument("--no-profile", action="store_true", help="skip the hook profile")
    p.add_argument("--out", default=OUT_DIR)
    args = p.parse_args(argv)
    try:
        args.sizes = [int(x) for x in args.sizes.split(",") if x.strip()]
    except ValueError:
        p.error("--sizes: comma-separated numbers")
    if args.runs < 1 or args.seconds < 1:
        p.error("--runs and --seconds must be at least 1")
    parts = ("dataplane", "control", "synthetic")
    args.parts = set(parts) if not args.only else {x.strip() for x in args.only.split(",") if x.strip()}
    if args.parts - set(parts):
        p.error("--only: unknown part(s) {}; choose from {}".format(", ".join(sorted(args.parts - set(parts))),
                                                                    ", ".join(parts)))
    args.argv = list(argv or [])
    return args


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if os.geteuid() != 0:
        print("make bench needs root (network namespaces): run `sudo make bench`", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, _terminate)
    progress = demo.Progress()
    removed = vim.cleanup_stale()
    if removed:
        progress("removed namespaces left by an interrupted run: " + ", ".join(removed))
    t0 = time.monotonic()
    try:
        result = run(args, progress)
        result["left_behind"] = left_behind(progress)
    except KeyboardInterrupt:
        print("interrupted; everything was torn down", file=sys.stderr)
        return 130
    except (BenchError, lcm.InstantiationFailed, measure.MeasureError, vim.VimError, vca.VcaError,
            nsmodel.NsModelError) as e:
        print("bench failed: {}".format(e), file=sys.stderr)
        return 1
    finally:
        # Per-run copies of the charms (a venv per unit): large, and worthless after the run.
        shutil.rmtree(os.path.join(args.out, "work"), ignore_errors=True)
    result["seconds_total"] = time.monotonic() - t0
    print_tables(result)
    path, png = write(result, args.out)
    print("\nresults: {}\nplot:    {}\ntotal {:.0f} s".format(os.path.relpath(path), os.path.relpath(png),
                                                               result["seconds_total"]))
    return 0


if __name__ == "__main__":
    socket.setdefaulttimeout(30)
    sys.exit(main())
