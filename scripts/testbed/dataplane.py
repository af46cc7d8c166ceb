"""The bench's data plane: the charms' tunnel beside its own limit and beside a peer VPN.

Paths between the same two VNFs, on the same underlay link, measured in the same run:
  plain       the link itself (underlay addresses)                                      (a)
  wg-bare     a bare WireGuard pair set up by hand: same implementation, same MTU       (b)
  charm       the tunnel exactly as the charms configured it (service addresses)        (c)
  boringtun   a bare boringtun pair (when built: `make boringtun`)
  ovpn-aes, ovpn-chacha   OpenVPN, userspace, UDP, AES-256-GCM / CHACHA20-POLY1305
Each round runs every test on every path; the order of the paths rotates from round to round,
so that a burst of outside load does not always hit the same path. Every sample runs inside a
load window (loadcheck): a sample during which other work used more than ``max_other`` cores
is measured again (at most ``retries`` times) and the other load is recorded with it.
"""
import json
import os
import time

from testbed import tunnels
from testbed.emulators import vim
from testbed.measurement import benchstats, loadcheck, traffic

IPERF_PORT = 5301           # not demo's 5201: a bench and a demo may run side by side
#: Fixed-rate overhead test: 100 Mbit/s of UDP datagrams whose inner IP packet (payload + 28)
#: exactly fills the tunnel MTU (1420): 1400-byte payloads would be fragmented inside the tunnel.
FIXED_RATE = "100M"
FIXED_PAYLOAD = traffic.UDP_PAYLOAD


class Settings(object):
    """What a data-plane measurement takes from the command line."""

    def __init__(self, rounds=3, seconds=5, pings=200, ping_interval=0.01, max_other=0.5, retries=1):
        self.rounds, self.seconds, self.pings, self.ping_interval = rounds, seconds, pings, ping_interval
        self.max_other, self.retries = max_other, retries


class Path(object):
    """``a`` sends to ``b``: ``src`` and ``dst`` are the addresses; ``tests`` what runs on it."""

    def __init__(self, name, label, a, b, src, dst, tests, pids=lambda: []):
        self.name, self.label, self.a, self.b, self.src, self.dst = name, label, a, b, src, dst
        self.tests, self.pids = tests, pids


ALL_TESTS = ("tcp1", "tcp4", "udp", "fixed", "ping")
#: Tests whose result does not depend on the machine's load (bytes counted on the link): the
#: first round only, never repeated.
ONCE = ("fixed",)


class DataplaneError(Exception):
    pass


# --------------------------------------------------------------------------- one test


def iperf_raw(path, seconds, streams=1, udp_bitrate=None, length=None):
    """One iperf3 run a -> b on ``path``; the parsed summary plus UDP loss."""
    try:
        summary, data = traffic.iperf_json(path.b, path.dst, path.a, path.src, seconds, streams, udp_bitrate,
                                           length=length or traffic.UDP_PAYLOAD, port=IPERF_PORT)
    except traffic.MeasureError as e:
        raise DataplaneError(str(e)) from None
    udp = (data.get("end") or {}).get("sum") or {}
    if udp_bitrate is not None:
        # iperf3 3.12 reports UDP as one sum: the sender's rate with the receiver's loss count.
        lost = float(udp.get("lost_percent") or 0.0)
        summary["loss_percent"] = lost
        summary["throughput_bps"] = float(udp.get("bits_per_second") or 0.0) * (1 - lost / 100.0)
        summary["sent_bytes"] = int(udp.get("bytes") or 0)
    return summary


def link_counters(testbed, port):
    """(bytes, packets) the infra side of ``port`` received, i.e. what the VNF sent on the link."""
    out = vim.sh(["ip", "-n", testbed.infra, "-s", "-j", "link", "show", port]).stdout
    rx = json.loads(out)[0]["stats64"]["rx"]
    return int(rx["bytes"]), int(rx["packets"])


def cpu_cores(pids, fn):
    """(fn(), cores the processes ``pids`` used while it ran)."""
    t0, ticks = time.monotonic(), sum(loadcheck.process_ticks(p) for p in pids)
    result = fn()
    used = sum(loadcheck.process_ticks(p) for p in pids) - ticks
    return result, used / loadcheck.TICK / max(time.monotonic() - t0, 1e-6)


def run_test(test, path, s, testbed=None, underlay_port=None):
    """{metric: value} of one test on one path (names without the path prefix)."""
    if test == "ping":
        fwd = traffic.ping(path.a, path.src, path.dst, count=s.pings, interval=s.ping_interval)
        back = traffic.ping(path.b, path.dst, path.src, count=s.pings, interval=s.ping_interval)
        return {"rtt_ms": (fwd["rtt_avg_ms"] + back["rtt_avg_ms"]) / 2, "rtt_ab_ms": fwd["rtt_avg_ms"],
                "rtt_ba_ms": back["rtt_avg_ms"], "rtt_max_ms": max(fwd["rtt_max_ms"], back["rtt_max_ms"])}
    if test == "fixed":
        bytes0, pkts0 = link_counters(testbed, underlay_port)
        r = iperf_raw(path, s.seconds, udp_bitrate=FIXED_RATE, length=FIXED_PAYLOAD)
        bytes1, pkts1 = link_counters(testbed, underlay_port)
        return {"fixed_payload_bytes": r["sent_bytes"], "fixed_underlay_bytes": bytes1 - bytes0,
                "fixed_underlay_packets": pkts1 - pkts0, "fixed_loss_percent": r["loss_percent"],
                "fixed_overhead_ratio": benchstats.ratio(bytes1 - bytes0, r["sent_bytes"])}
    streams, rate = {"tcp1": (1, None), "tcp4": (4, None), "udp": (1, "0")}[test]
    r, cores = cpu_cores(path.pids(), lambda: iperf_raw(path, s.seconds, streams=streams, udp_bitrate=rate))
    out = {test + "_bps": r["throughput_bps"], test + "_daemon_cores": cores if path.pids() else None}
    if rate is not None:
        out[test + "_loss_percent"] = r["loss_percent"]
    else:
        out[test + "_retransmits"] = r.get("retransmits")
    return out


# --------------------------------------------------------------------------- rounds


def rotated(names, i):
    k = i % len(names)
    return list(names[k:]) + list(names[:k])


def measure_round(paths, i, s, namespaces, testbed=None, underlay_port=None, progress=None):
    """Round ``i``: every test on every path, paths in rotated order. Returns {metric: value}."""
    sample = {}
    order = rotated([p.name for p in paths], i)
    by_name = {p.name: p for p in paths}
    for test in ALL_TESTS:
        if test in ONCE and i > 0:
            continue
        for name in order:
            path = by_name[name]
            if test not in path.tests:
                continue
            result, other, steal, attempts, disturbed = loadcheck.sampled(
                lambda test=test, path=path: run_test(test, path, s, testbed, underlay_port), namespaces,
                s.max_other, 0 if test in ONCE else s.retries)
            for k, v in result.items():
                sample["{}_{}".format(name, k)] = v
            sample["{}_{}_other_cores".format(name, test)] = other
            sample["{}_{}_steal_cores".format(name, test)] = steal
            sample["{}_{}_attempts".format(name, test)] = attempts
            if disturbed:
                sample.setdefault("disturbed", []).append("{} {}".format(name, test))
                if progress:
                    progress("  {} {}: other load {:.2f} cores in all {} attempts; kept the least disturbed".format(
                        name, test, other, attempts))
    sample["order"] = order
    return derived(sample, [p.name for p in paths])


def derived(sample, names):
    """Per-round ratios and added RTTs (both sides of a ratio from the same round)."""
    out = dict(sample)
    for name in names:
        for test in ("tcp1", "tcp4", "udp"):
            if name != "plain" and "{}_{}_bps".format(name, test) in sample:
                out["{}_over_plain_{}".format(name, test)] = benchstats.ratio(
                    sample["{}_{}_bps".format(name, test)], sample.get("plain_{}_bps".format(test)))
        if name != "plain" and "{}_rtt_ms".format(name) in sample and "plain_rtt_ms" in sample:
            out["{}_added_rtt_ms".format(name)] = sample["{}_rtt_ms".format(name)] - sample["plain_rtt_ms"]
    if "charm" in names and "wg-bare" in names:
        for test in ("tcp1", "tcp4"):
            if "charm_{}_bps".format(test) in sample and "wg-bare_{}_bps".format(test) in sample:
                out["charm_over_bare_{}".format(test)] = benchstats.ratio(
                    sample["charm_{}_bps".format(test)], sample["wg-bare_{}_bps".format(test)])
    ovpn = [sample.get("{}_tcp1_bps".format(n)) for n in names if n.startswith("ovpn")]
    ovpn = [v for v in ovpn if v]
    if ovpn and sample.get("charm_tcp1_bps"):
        out["charm_over_best_openvpn_tcp1"] = benchstats.ratio(sample["charm_tcp1_bps"], max(ovpn))
    return out


def measure_paths(paths, s, namespaces, testbed=None, underlay_port=None, progress=None, check=None):
    """``s.rounds`` rounds; ``check()`` runs before each round (e.g. repairs a daemon killed
    from outside). Returns {"rounds": [...], "summary": {...}}."""
    rounds = []
    for i in range(s.rounds):
        if check:
            check()
        sample = measure_round(paths, i, s, namespaces, testbed, underlay_port, progress)
        rounds.append(sample)
        if progress:
            progress("round {}/{}: ".format(i + 1, s.rounds) + round_line(sample, [p.name for p in paths]))
    numeric = [{k: v for k, v in r.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
               for r in rounds]
    return {"rounds": rounds, "summary": benchstats.summarize_rounds(numeric)}


def round_line(sample, names):
    cells = []
    for n in names:
        bps, rtt = sample.get(n + "_tcp1_bps"), sample.get(n + "_rtt_ms")
        if bps is not None:
            cells.append("{} {:,.0f} Mbit/s {:.3f} ms".format(n, bps / 1e6, rtt if rtt is not None else float("nan")))
    return "; ".join(cells)


# --------------------------------------------------------------------------- extra tunnels


def extra_pairs(a, b, a_underlay, b_underlay, mtu, wireguard_go, pki_dir, want, first_index=1):
    """The hand-made tunnels between ``a`` and ``b`` that ``want`` names (up, in that order)."""
    pairs, index = {}, first_index
    bt = tunnels.boringtun_path()
    for name in want:
        if name == "wg-bare" and wireguard_go:
            # The charms' implementation, whichever it is (the comparison is the product's cost).
            pairs[name] = tunnels.WireGuardPair(a, b, a_underlay, b_underlay, index, tunnels.impl_of(wireguard_go),
                                                wireguard_go, mtu=mtu)
        elif name == "boringtun" and bt:
            pairs[name] = tunnels.WireGuardPair(a, b, a_underlay, b_underlay, index, "boringtun", bt, mtu=mtu)
        elif name.startswith("ovpn-"):
            cipher = {"ovpn-aes": "AES-256-GCM", "ovpn-chacha": "CHACHA20-POLY1305"}[name]
            pairs[name] = tunnels.OpenVpnPair(a, b, a_underlay, b_underlay, index, cipher, pki_dir, mtu=mtu)
        else:
            continue
        index += 1
    try:
        for pair in pairs.values():
            pair.up()
    except Exception:
        for pair in pairs.values():
            pair.down()
        raise
    return pairs


def device_mtu(vnf, device):
    out = vnf.exec(["ip", "-j", "link", "show", "dev", device]).stdout
    return int(json.loads(out)[0]["mtu"])


def daemon_pids(testbed, names, exclude=()):
    """Pids of the processes named like ``names`` in the testbed's VNFs, minus ``exclude``."""
    out = []
    for vnf in testbed.vnfs.values():
        for pid in vim.sh(["ip", "netns", "pids", vnf.netns], check=False).stdout.split():
            if pid not in exclude and any(vim._comm(pid).startswith(n) for n in names):
                out.append(pid)
    return out


def testbed_namespaces(testbed):
    return [testbed.infra] + [v.netns for v in testbed.vnfs.values()]


def flag_implementation(path):
    """Which WireGuard the charms' tunnel uses, for the report."""
    if not path:
        return "kernel WireGuard ({})".format(os.uname().release)
    kind = "built by make" if os.sep + "build" + os.sep in path else "distribution package"
    return "{} {} ({}, {})".format(os.path.basename(path), tunnels.version_of(path), kind, path)


# --------------------------------------------------------------------------- setup comparison


def device_setup(vnf, device):
    """What decides a userspace tunnel's speed besides its code: the TUN device's MTU, queue
    length and offloads, the daemon's UDP socket buffers, CPU affinity, niceness and threads."""
    link = json.loads(vnf.exec(["ip", "-d", "-j", "link", "show", "dev", device]).stdout)[0]
    out = {"mtu": link.get("mtu"), "txqlen": link.get("txqlen"), "gso_max_size": link.get("gso_max_size"),
           "gro_max_size": link.get("gro_max_size"),
           "vnet_hdr": ((link.get("linkinfo") or {}).get("info_data") or {}).get("vnet_hdr")}
    port = vnf.wg_show(device, "listen-port").strip()
    if not port.isdigit():
        return out
    pid = None
    for line in vnf.exec(["ss", "-Hunapm", "sport", "= :" + port], check=False).stdout.splitlines():
        if "pid=" in line and pid is None:
            pid = line.split("pid=")[1].split(",")[0]
        if "skmem:" in line:
            mem = dict((k[:2], k[2:]) for k in line.split("skmem:(")[1].rstrip(") ").split(","))
            out["udp_rcvbuf"], out["udp_sndbuf"] = int(mem["rb"]), int(mem["tb"])
    if pid:
        status = open("/proc/{}/status".format(pid)).read()
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        out["cpus_allowed"] = fields.get("Cpus_allowed_list", "").strip()
        out["threads"] = int(fields.get("Threads", "0"))
        out["nice"] = int(open("/proc/{}/stat".format(pid)).read().rsplit(")", 1)[1].split()[16])
        out["daemon"] = os.path.basename(os.readlink("/proc/{}/exe".format(pid)))
    return out


def setup_differences(vnfs, charm_devices, bare_device):
    """{vnf: {setting: [charms' tunnel, bare pair]}} for every setting that differs."""
    out = {}
    for vnf, device in zip(vnfs, charm_devices):
        c, b = device_setup(vnf, device), device_setup(vnf, bare_device)
        # The Go runtime starts threads as it needs them: their number is not a setting.
        diff = {k: [c.get(k), b.get(k)] for k in sorted(set(c) | set(b)) if c.get(k) != b.get(k) and k != "threads"}
        out[vnf.name] = {"differences": diff, "charm": c}
    return out


# --------------------------------------------------------------------------- the charms' choice


def device_implementation(vnf, device):
    """What the charm brought ``device`` up on (its record on the VNF: vnf/tunnels.sh), or ""."""
    return vnf.exec(["cat", "/etc/wireguard/{}.impl".format(device)], check=False).stdout.strip()


def wait_reachable(vnf, src, dst, deadline=60):
    """Until ``dst`` answers a ping from ``src`` (a re-created device's first handshake)."""
    end = time.monotonic() + deadline
    while vnf.exec(["ping", "-n", "-q", "-c", "1", "-W", "1", "-I", src, dst], check=False).returncode != 0:
        if time.monotonic() > end:
            raise DataplaneError("{} does not answer from {} within {} s".format(dst, src, deadline))
