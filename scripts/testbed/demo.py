"""`make demo`: the WireGuard EPS (or, NS=sa_wg, the 5G SA network) of the bundle, locally, in
network namespaces.

1. VIM emulation from the NSD and its params file (vim.py), VCA emulation with the BUILT charms
   (vca.py), sequenced like OSM's LCM (lcm.py): relations before config, config, verify, the
   VNFD's initial primitives in seq order -- the OAI builds are SKIPPED (they need the internet),
   and each VNF gets a stand-in service that the charm's own start gate starts only once the
   VNF's tunnels have a handshake.
2. Per reference point: handshake, a capture of the underlay while a plaintext probe crosses the
   tunnel, iperf3 and ping with and without WireGuard, next to the thesis' numbers.
3. The UE: a stand-in, reported as one (ue_standin.py): the eNB charm's real ue-attach refuses
   (no OAI build), its real ue-iperf measures the eNB's end of S1-U to the SPGW-U.
4. build/demo/report.json, report.png, and a table; then everything is torn down, also on Ctrl-C
   or failure.
"""
import collections
import json
import os
import secrets
import signal
import socket
import sys
import threading
import time

import measure_parse

from bundle import BUILD_DIR, build_charms
from testbed import cli, implchoice, monitor, slicelink, standin, tunnels, ue_standin
from testbed.emulators import lcm, nsmodel, vca, vim
from testbed.measurement import benchstats, capture, pqpsk, prometheus, report, secretaudit, thesis, traffic
from vpnaas.core import config as charm_config
from vpnaas.core import refpoints

OUT_DIR = os.path.join(BUILD_DIR, "demo")
#: IPPROTO_SCTP, and the protocols (the registry's ``carries``) that OAI runs over it.
SCTP = 132
SCTP_PROTOCOLS = ("S1AP", "NGAP")
HANDSHAKE_TIMEOUT = 60
#: Where the emulated VMs keep what OAI's steps would write in /var/lib, /usr/local/sbin ...:
#: inside the VNF's own state directory (all namespaces share the machine's filesystem).
VM_ENV = {"OAI_STATE_DIR": "{state}/oai/state", "OAI_SBIN": "{state}/oai/sbin", "OAI_LOG_DIR": "{state}/oai/log",
          "OAI_RUN_DIR": "{state}/oai/run", "OAI_UNIT_DIR": "{state}/oai/units"}


class DemoError(Exception):
    pass


class Progress(object):
    def __init__(self, stream=sys.stdout):
        self.t0 = time.monotonic()
        self.stream = stream

    def __call__(self, text):
        self.stream.write("[{:6.1f}s] {}\n".format(time.monotonic() - self.t0, text))
        self.stream.flush()


def _terminate(signum, _frame):
    raise KeyboardInterrupt("signal {}".format(signum))


def handshakes_up(testbed, inst):
    """{refpoint: True/False}: both ends of each tunnel have a completed handshake."""
    out = {}
    for rp in inst.refpoints:
        ok = True
        for app in (rp.provider, rp.requirer):
            text = testbed.vnfs[app].wg_show("wg-" + rp.name, "latest-handshakes")
            stamps = [int(x) for x in text.split()[1::2]]
            ok = ok and bool(stamps) and all(stamps)
        out[rp.name] = ok
    return out


def wait_tunnels(testbed, inst, timeout=HANDSHAKE_TIMEOUT):
    deadline = time.monotonic() + timeout
    while True:
        state = handshakes_up(testbed, inst)
        if all(state.values()) or time.monotonic() > deadline:
            return state
        time.sleep(0.05)


def prepare_standin(spec, vnf):
    """What oai-install + oai-configure would leave on the VM, with the stand-in as the program."""
    component = os.path.basename(spec.charm_dir)
    base = os.path.join(vnf.state_dir, "oai")
    for sub in ("state", "sbin", "log", "run", "units"):
        os.makedirs(os.path.join(base, sub), exist_ok=True)
    for marker in ("built", "configured"):
        with open(os.path.join(base, "state", "{}.{}".format(component, marker)), "w") as f:
            f.write("testbed stand-in\n")
    addresses = []
    # Instance k of a scaled VDU binds its own service addresses, as the charm derives them.
    config = dict(spec.config, **{"osm-instance": "{{count_index: {}}}".format(getattr(spec, "count_index", 0))})
    for key, value in sorted(spec.config.items()):
        if key.endswith("-service-addresses") and value:
            endpoint = key[:-len("-service-addresses")]
            addresses += [str(a.ip) for a in charm_config.own_service_addresses(config, endpoint)]
    run = os.path.join(base, "sbin", "oai-{}-run".format(component))
    with open(run, "w") as f:
        f.write("#!/bin/sh\nexec {} {} oai-{} {}\n".format(sys.executable, standin.__file__, component,
                                                          " ".join(addresses)))
    os.chmod(run, 0o755)


def standin_reachable(testbed, rp):
    """The requirer's stand-in, reached from the provider through the tunnel (service addresses)."""
    src, dst = rp.service[rp.provider], rp.service[rp.requirer]
    code = ("import socket,sys\ns=socket.create_connection((sys.argv[2],{}),timeout=5,source_address=(sys.argv[1],0))\n"
            "print(s.recv(100).decode().strip())").format(standin.STANDIN_PORT)
    out = testbed.vnfs[rp.provider].exec(["python3", "-c", code, src, dst], check=False)
    return out.stdout.strip() if out.returncode == 0 else ""


def verdict(testbed, inst, rp, out_dir, progress):
    """Capture on the provider's port of the link while a probe crosses between service addresses."""
    a, b = testbed.vnfs[rp.provider], testbed.vnfs[rp.requirer]
    link = rp.link or "mgmt"
    path = os.path.join(out_dir, "capture-{}{}.pcap".format(inst.prefix, rp.name))
    probe = "VPNAAS-PROBE-{}-{}".format(rp.name, secrets.token_hex(4))
    with capture.Capture(testbed.infra, testbed.port(a, link), path,
                         hosts=(rp.underlay[rp.provider] or a.mgmt_ip, rp.underlay[rp.requirer] or b.mgmt_ip)):
        capture.send_probe(a, rp.service[rp.provider], rp.service[rp.requirer], probe)
        capture.send_probe(b, rp.service[rp.requirer], rp.service[rp.provider], probe)
    judged = capture.judge(path, probe, rp.ports)
    progress("capture {}: {} packets, plaintext probe {}, non-WireGuard packets {}".format(
        rp.name, judged["packets"], "SEEN" if judged["plaintext_seen"] else "absent", len(judged["non_wireguard"])))
    return judged


def measure_refpoint(testbed, rp, seconds, pings, tunnelled, rounds=1):
    """iperf3 and ping on the tunnel and on the plain link, ``rounds`` interleaved rounds (the
    order of the paths alternates). Returns {path_iperf, path_ping: the median round's result,
    "spread": {metric: median/min/max/n}}."""
    a, b = testbed.vnfs[rp.provider], testbed.vnfs[rp.requirer]
    paths = [("plain", rp.underlay[rp.provider], rp.underlay[rp.requirer])]
    if tunnelled:
        paths.insert(0, ("wg", rp.service[rp.provider], rp.service[rp.requirer]))
    paths = [p for p in paths if p[1] and p[2]]
    samples = {label: [] for label, _s, _d in paths}
    for i in range(rounds):
        for label, src, dst in (paths if i % 2 == 0 else paths[::-1]):
            samples[label].append((traffic.iperf(b, dst, a, src, seconds=seconds),
                                   traffic.ping(a, src, dst, count=pings)))
    result, spread = {}, {}
    for label, runs in samples.items():
        by_rate = sorted(runs, key=lambda r: r[0]["throughput_bps"])
        by_rtt = sorted(runs, key=lambda r: r[1]["rtt_avg_ms"])
        result[label + "_iperf"] = by_rate[(len(runs) - 1) // 2][0]
        result[label + "_ping"] = by_rtt[(len(runs) - 1) // 2][1]
        spread[label + "_throughput_bps"] = benchstats.summarize([r[0]["throughput_bps"] for r in runs])
        spread[label + "_rtt_avg_ms"] = benchstats.summarize([r[1]["rtt_avg_ms"] for r in runs])
    if "wg" in samples and "plain" in samples:
        pairs = list(zip(samples["wg"], samples["plain"]))
        spread["throughput_ratio"] = benchstats.summarize(
            [benchstats.ratio(w[0]["throughput_bps"], p[0]["throughput_bps"]) for w, p in pairs])
        spread["added_rtt_ms"] = benchstats.summarize([w[1]["rtt_avg_ms"] - p[1]["rtt_avg_ms"] for w, p in pairs])
    result["spread"] = spread
    return result


def load_instances(ns, charms_dir=None):
    """The NS variant's instances, with the emulated VMs' environment."""
    env = dict(os.environ)
    for key in ("LTE_K", "LTE_OP", "NR_K", "NR_OP", "MYSQL_PASSWORD"):
        env.setdefault(key, secrets.token_hex(16))   # never printed; the testbed runs no HSS or MySQL
    env.setdefault("MGMT_NETWORK", "mgmt")
    env.setdefault("VIM_ACCOUNT", "testbed")
    env.setdefault("VIM_ACCOUNT_SITE2", "testbed-site2")
    instances = nsmodel.load(ns, charms_dir or build_charms.output_dir("local"), env)
    for inst in instances:
        # What the secret audit searches for (never printed, never in the report).
        inst.secret_params = {k: env[k] for k in secretaudit.SECRET_PARAMS}
        for spec in inst.vnfs:
            spec.env = VM_ENV
    return instances


def bring_up(tb, instances, out_dir, progress):
    """Instantiate every instance on the (created) testbed like OSM would; returns
    {instance name: {"inst", "model", "lcm", "timing"}}."""
    out = {}
    for inst in instances:
        model = vca.Model(os.path.join(out_dir, "vca-" + inst.name), name=inst.name, runner=tb.runner())
        timing = {}

        def after_config(lcm_report, inst=inst, timing=timing):
            if inst.tunnelled:
                state = wait_tunnels(tb, inst)
                timing["seconds"] = time.monotonic() - lcm_report.last_config_at
                timing["state"] = state
                progress("tunnels of {}: {} ({:.1f} s after the last config primitive)".format(
                    inst.name, ", ".join("{} {}".format(k, "up" if v else "DOWN") for k, v in state.items()),
                    timing["seconds"]))

        lcm_report = lcm.instantiate(tb, model, inst.links, inst.vnfs, inst.relations, progress=progress,
                                     after_config=after_config, before_primitives=prepare_standin)
        out[inst.name] = {"inst": inst, "model": model, "lcm": lcm_report, "timing": timing}
    return out


def run(ns, seconds, pings, out_dir, progress, rounds=1, impl_choice="", threshold=prometheus.DEMO_THRESHOLD,
        audit=None):
    """Bring the NS up, check and measure it, tear it down; returns the report. ``audit``
    (secretaudit.Audit) collects the secrets in use and what the VCAs hold before the teardown."""
    instances = load_instances(ns)
    asked = implchoice.apply(instances, impl_choice)
    os.makedirs(out_dir, exist_ok=True)
    tb = vim.Testbed(os.path.join(out_dir, "tb"), userspace_wireguard=vim.userspace_wireguard())
    impl = _implementation(tb)
    progress("NS {}: {} instance(s), WireGuard: {}; per interface (IMPL): {}".format(
        ns, len(instances), impl, "; ".join("{}={}".format(k, v) for a in asked.values() for k, v in sorted(a.items()))
        or "the charms' default (auto)"))
    results = {"ns": ns, "wireguard": {"implementation": impl, "asked": asked}, "instances": {}}
    prom = None
    try:
        tb.create()
        results["instances"] = bring_up(tb, instances, out_dir, progress)
        prom = prometheus.Prometheus(tb, os.path.join(out_dir, "prometheus"), monitor.targets(tb, instances),
                                     threshold=threshold)
        progress("prometheus: scraping {} exporters through the management network (rules: {}, threshold "
                 "lowered to {} s)".format(len(prom.targets), prometheus.RULES_FILE, threshold))
        prom.start()
        for r in results["instances"].values():
            r["entries"] = _check_and_measure(tb, r, seconds, pings, out_dir, progress, rounds)
            if r["inst"].tunnelled:
                r["dataplane"] = implchoice.summary(tb, r["inst"], r["entries"])
                for name, figures in pqpsk.measure(tb, r["inst"], r["model"], progress).items():
                    r["entries"][name].update(figures)
        if len(instances) > 1:
            results["simultaneous"] = _simultaneous(tb, results, seconds, pings, progress)
            results["slice_qos"] = _slice_qos(tb, results, out_dir, progress, rounds)
        rep = _final_report(results)
        rep["prometheus"] = monitor.report(prom, [r for r in results["instances"].values() if r["inst"].tunnelled],
                                            progress)
        if audit is not None:
            collect_secrets(tb, results, audit, progress)
        return rep
    finally:
        if prom is not None:
            prom.stop()
        progress("tearing down")
        tb.teardown()
        left = [ns for ns in vim.list_testbed_netns() if ns.startswith(tb.id + "-")]
        progress("teardown: {}".format("nothing left behind" if not left else "LEFT: " + ", ".join(left)))


def collect_secrets(tb, results, audit, progress):
    """The secret audit's first half, while the VNFs are up: every device's keys, the NS
    parameters' secrets, what each VCA holds."""
    params = {}
    for r in results["instances"].values():
        params.update(getattr(r["inst"], "secret_params", {}))
    audit.collect(tb.vnfs, params, {"vca " + name: r["model"] for name, r in results["instances"].items()})
    kinds = collections.Counter(s.kind for s in audit.secrets)
    progress("secret audit: {} secrets in use ({}); searching once the report is written".format(
        len(audit.secrets), ", ".join("{} {}".format(n, k) for k, n in sorted(kinds.items()))))


def finish_audit(rep, audit, progress):
    """The secret audit's second half: search every place, report.json included (as it is about
    to be written); adds its fields to ``rep``. Returns the lines that fail the demo."""
    text = json.dumps(rep, indent=1, sort_keys=True)
    fields = audit.finish([secretaudit.text_place("report.json", text)])
    rep.update(fields)
    done = fields["secret_audit"]
    progress("secret audit: {} places, {:.1f} MB searched; derived PSKs found in: {}; other secrets found in: {}"
             .format(done["places_searched"], done["bytes_searched"] / 1e6, len(fields["pq_psk_secret_found_in"]),
                     sum(len(v) for v in fields["secrets_found_in"].values())))
    return secretaudit.loud_lines(fields)


def _check_and_measure(tb, r, seconds, pings, out_dir, progress, rounds=1):
    inst = r["inst"]
    entries = {}
    state = handshakes_up(tb, inst) if inst.tunnelled else {}
    for rp in inst.refpoints:
        entry = {"provider": rp.provider, "requirer": rp.requirer, "underlay": rp.underlay, "service": rp.service}
        judged = None
        if inst.tunnelled:
            judged = verdict(tb, inst, rp, out_dir, progress)
        entry["standin"] = standin_reachable(tb, rp)
        progress("measuring {} {} ({} round(s): {} s iperf3, {} pings per path)".format(
            inst.name, rp.name, rounds, seconds, pings))
        m = measure_refpoint(tb, rp, seconds, pings, inst.tunnelled, rounds)
        entries[rp.name] = measure_parse.interface_entry(
            handshake=state.get(rp.name) if inst.tunnelled else None,
            plaintext_seen=judged["plaintext_seen"] if judged else None,
            wg_iperf=m.get("wg_iperf"), plain_iperf=m.get("plain_iperf"),
            wg_ping=m.get("wg_ping"), plain_ping=m.get("plain_ping"),
            only_wireguard=(not judged["non_wireguard"] and judged["packets"] > 0) if judged else None,
            captured_packets=judged["packets"] if judged else None,
            thesis=thesis.values(rp.name), spread=m["spread"], rounds=rounds, **entry)
    r["ue"] = ue_standin.run(tb, r, seconds, progress)
    skipped = [{"vnf": v, "primitive": p, "reason": why} for v, p, why in r["lcm"].skipped]
    status = {u: r["model"].status(u) for u in r["model"].units()}
    r["skipped"], r["status"] = skipped, status
    return entries


def _simultaneous(tb, results, seconds, pings, progress):
    """The same refpoint measured in every slice at once (thesis §5.2 "simultaneous")."""
    out = {}
    names = list(results["instances"])
    rps = [rp.name for rp in results["instances"][names[0]]["inst"].refpoints]
    for rp_name in rps:
        found, threads = {}, []
        for port_offset, name in enumerate(names):
            inst = results["instances"][name]["inst"]
            rp = next(r for r in inst.refpoints if r.name == rp_name)

            def work(rp=rp, name=name, off=port_offset, found=found):
                a, b = tb.vnfs[rp.provider], tb.vnfs[rp.requirer]
                src, dst = rp.service[rp.provider], rp.service[rp.requirer]
                found[name] = {"iperf": traffic.iperf(b, dst, a, src, seconds=seconds, port=traffic.IPERF_PORT + off),
                               "ping": traffic.ping(a, src, dst, count=pings)}
            threads.append(threading.Thread(target=work))
        progress("measuring {} in {} slices at once".format(rp_name, len(names)))
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        out[rp_name] = {n: {"wg_throughput_bps": v["iperf"]["throughput_bps"], "wg_rtt_avg_ms": v["ping"]["rtt_avg_ms"]}
                        for n, v in found.items()}
    return out


def _slice_qos(tb, results, out_dir, progress, rounds):
    """Both slices' user-plane tunnels on one shared link, with and without the slice policy
    (slicelink.py); the URLLC latency CDFs in slice_qos.png."""
    try:
        summary, samples = slicelink.measure(tb, results["instances"], progress, rounds=rounds)
    except (slicelink.SliceLinkError, traffic.MeasureError, vca.VcaError) as e:
        progress("slice QoS: NOT measured: {}".format(e))
        return {"shared_link": True, "error": str(e)}
    png = os.path.join(out_dir, "slice_qos.png")
    slicelink.plot_cdf(samples, png)
    summary["cdf_png"] = os.path.basename(png)
    return summary


def kernel_has_sctp():
    try:
        socket.socket(socket.AF_INET, socket.SOCK_STREAM, SCTP).close()
        return True
    except OSError:
        return False


def standin_note(inst):
    """What the stand-in services are, and which of OAI's transports they do not exercise."""
    note = ("stand-ins for OAI's programs: each answers on TCP port {} of every service address of its "
            "VNF".format(standin.STANDIN_PORT))
    sctp = [rp.name for rp in inst.refpoints if refpoints.carries(rp.name).split(" ")[0] in SCTP_PROTOCOLS]
    if sctp and not kernel_has_sctp():
        note += ("; {} {} over SCTP in OAI ({}), and this kernel has no SCTP: TCP stands in there (the tunnel "
                 "carries either alike)".format(", ".join(r.upper() for r in sctp), "runs" if len(sctp) == 1 else "run",
                                                "/".join(refpoints.carries(r).split(" ")[0] for r in sctp)))
    return note


def _final_report(results):
    per_instance = {}
    for name, r in results["instances"].items():
        per_instance[name] = measure_parse.build_report(
            r["entries"], seconds_to_all_tunnels_up=(round(r["timing"]["seconds"], 2) if r["timing"] else None),
            ns=results["ns"] if len(results["instances"]) == 1 else name, descriptor_id=r["inst"].descriptor_id,
            refpoints=[rp.name for rp in r["inst"].refpoints],
            wireguard=results["wireguard"], skipped_primitives=r["skipped"], ue=r.get("ue"),
            unit_status={u: list(s) for u, s in r["status"].items()}, standins=standin_note(r["inst"]))
        if r.get("dataplane"):
            per_instance[name]["dataplane"] = r["dataplane"]
    if len(per_instance) == 1:
        return next(iter(per_instance.values()))
    return {"schema": measure_parse.REPORT_SCHEMA_VERSION, "ns": results["ns"], "wireguard": results["wireguard"],
            "slices": per_instance, "simultaneous": results.get("simultaneous", {}),
            "slice_qos": results.get("slice_qos", {})}


def _implementation(tb):
    """What ``auto`` runs on here: the kernel module, else the wireguard-go the charms ship."""
    if tb.userspace_wireguard:
        name = tunnels.impl_of(tb.userspace_wireguard)
        version = tunnels.version_of(tb.userspace_wireguard)
        return "auto = {} {} ({})".format(name, version, "built by make, shipped in the charms"
                                          if "build" in tb.userspace_wireguard else "distribution package")
    return "auto = kernel"


def _print_monitoring(mon):
    print("\nPrometheus ({} of {} exporters up, {} handshake-age series; rules {}):".format(
        mon.get("targets_up"), mon.get("targets"), mon.get("handshake_age_series"), mon.get("rules_file")))
    for line in mon.get("health_lines", []):
        print("  " + line)
    if mon.get("stopped"):
        print("  stopped {} ({}): {} {} after {} s; after the repair {} in {} s".format(
            mon["stopped"]["unit"], mon["stopped"]["device"], monitor.ALERT,
            "FIRED" if mon["alert_fired_on_stopped_peer"] else "did NOT fire", mon["seconds_to_fire"],
            "cleared" if mon["alert_cleared_after_repair"] else "did NOT clear", mon["seconds_to_clear"]))


def main(argv=None):
    parser = cli.OneLineParser(prog="testbed.demo", description="Bring up an NS of the bundle locally and measure it.")
    parser.add_argument("--ns", default="eps_wg", help="variant: eps_wg (default), eps (baseline), slices, ...")
    parser.add_argument("--seconds", type=cli.positive_int, default=3, help="iperf3 duration per path and round "
                        "(thesis: 600)")
    parser.add_argument("--pings", type=cli.positive_int, default=200, help="pings per path and round (thesis: 1000)")
    parser.add_argument("--rounds", type=cli.positive_int, default=3,
                        help="interleaved rounds per reference point; the table shows median (min-max)")
    parser.add_argument("--implementation", default="", metavar="IMPL",
                        help="the data plane per interface, set through the charms' <rp>-implementation option: "
                        "boringtun, signalling=boringtun, s6a=boringtun,s1u=wireguard-go ... (testbed/implchoice.py;"
                        " default: the charms' auto)")
    parser.add_argument("--stale-threshold", type=cli.positive_int, default=prometheus.DEMO_THRESHOLD,
                        help="the stale-handshake alert's threshold in the testbed's Prometheus, seconds (the rules "
                        "file's default: 180; docs/metrics.md)")
    parser.add_argument("--out", default=OUT_DIR)
    args = parser.parse_args(argv)
    cli.check_out_dir(parser, args.out)
    if os.geteuid() != 0:
        print("make demo needs root (network namespaces): run `sudo make demo`", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, _terminate)
    progress = Progress()
    removed = vim.cleanup_stale()
    if removed:
        progress("removed namespaces left by an interrupted run: " + ", ".join(removed))
    try:
        if "boringtun" in args.implementation and "boringtun" not in build_charms.shipped_programs():
            raise DemoError("IMPL names boringtun but build/tools/boringtun-cli is missing: run `make boringtun`")
        audit = secretaudit.Audit(args.out)
        rep = run(args.ns, args.seconds, args.pings, args.out, progress, args.rounds, args.implementation,
                  args.stale_threshold, audit)
        leaks = finish_audit(rep, audit, progress)
    except KeyboardInterrupt:
        print("interrupted; everything was torn down", file=sys.stderr)
        return 130
    except (nsmodel.NsModelError, lcm.InstantiationFailed, traffic.MeasureError, vim.VimError,
            vca.VcaError, prometheus.PrometheusError, DemoError, implchoice.ChoiceError) as e:
        print("demo failed: {}".format(e), file=sys.stderr)
        return 1
    reports = rep["slices"] if "slices" in rep else {args.ns: rep}
    for name, r in reports.items():
        print("\n{} (thesis: {})".format(name, thesis.SOURCE))
        print(report.table(r))
        if r.get("seconds_to_all_tunnels_up") is not None:
            print("all tunnels up {:.1f} s after the last config primitive".format(r["seconds_to_all_tunnels_up"]))
        for s in r.get("skipped_primitives", []):
            print("SKIPPED {} on {}: {}".format(s["primitive"], s["vnf"], s["reason"]))
        if r.get("standins"):
            print(r["standins"])
        if r.get("ue"):
            print(ue_standin.describe(r["ue"]))
        if r.get("dataplane"):
            print("data plane per interface (added RTT: WireGuard minus plain link, median of {} round(s)):".format(
                args.rounds))
            for line in implchoice.lines(r["dataplane"]):
                print("  " + line)
    if rep.get("slice_qos"):
        print("\n" + slicelink.describe(rep["slice_qos"]))
    if "simultaneous" in rep:
        print("\nslices under simultaneous load (WireGuard path, Mbit/s / ms):")
        for rp, per in rep["simultaneous"].items():
            cells = ["{} {:,.0f} / {:.3f}".format(n, v["wg_throughput_bps"] / 1e6, v["wg_rtt_avg_ms"])
                     for n, v in per.items()]
            print("  {:5} {}".format(rp, "  ".join(cells)))
    _print_monitoring(rep.get("prometheus") or {})
    path, pngs = report.write(rep, args.out)
    print("\nreport: {}\nplot:   {}".format(os.path.relpath(path), ", ".join(os.path.relpath(p) for p in pngs)))
    for line in leaks:
        print(line, file=sys.stderr)
    if leaks:
        print("demo FAILED: {} secret(s) found outside the VNFs (report.json: pq_psk_secret_found_in, "
              "secrets_found_in)".format(len(leaks)), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    socket.setdefaulttimeout(30)
    sys.exit(main())
