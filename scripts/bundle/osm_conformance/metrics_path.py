"""OSM's path for the tunnels' metrics, run with LCM's own code (part of `make osm-conformance`).

    python metrics_path.py --osm-src DIR --packages DIR --out result.json   (in its own venv)

From OSM_SRC/LCM (osm/LCM; the mirror used: docs/metrics.md) it takes, by their source, the
functions LCM runs on this path and executes them unchanged (extracted with ``ast`` from the
files and run in a namespace that gives them their imports; importing osm_lcm.ns itself would
need N2VC, RO and Kafka clients):

* ``osm_lcm/data_utils/vnfr.py get_osm_params``: the <OSM> a VNF-level charm gets, dumped as
  LCM maps it into a primitive (ns.py _map_primitive_params: ``yaml.safe_dump(...,
  default_flow_style=True, width=256)``), read by the charm's own ``instance.osm_labels``;
* ``ns.py NsLcm.extract_prometheus_scrape_jobs`` with ``prometheus.py parse_job``: every base VNF
  package's ``exporter-endpoint/prometheus.j2`` rendered into the scrape job LCM stores;
* ``ns.py NsLcm._gather_vnfr_alarm_alerts``: every VNFD's VDU alarm turned into the alert rule
  LCM stores (``prometheus_config``).

OSM's Prometheus sidecar (devops docker/Prometheus/src/app.py) writes the jobs, less their
``_id``, ``is_active``, ``vnfr_id`` and ``nsr_id``, into the configuration and the alerts'
``prometheus_config`` into one rule group: so here, and `promtool check config` must accept
the result. Then, for the first package, the live path: the charm's real exporter (its
vnf/wg-exporter.py) on loopback with the labels its charm would write from that <OSM>, a `wg`
whose dump has one fresh and one stale peer, a real Prometheus scraping it with LCM's job (its
interval lowered to 1 s) and LCM's alert rules: LCM's alarm expression must select exactly the
stale peer, and the alert must become active with OSM's ns_id, vnf_member_index and vdu_id.
Writes {"results": [{section, name, ok, message}]}.
"""
import argparse
import ast
import asyncio
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.parse
import urllib.request
from uuid import uuid4

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(ROOT, "charms"))
NSR_ID = "2f4c3d9e-1b7a-4c55-9d0e-8a1b2c3d4e5f"


class LcmException(Exception):
    pass


def _functions(path, names, cls=None):
    """{name: source} of module-level functions (or of class ``cls``'s methods and attributes)."""
    with open(path) as f:
        tree = ast.parse(f.read())
    body = tree.body
    if cls:
        body = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls).body
    out = {}
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in names:
            out[node.name] = ast.unparse(node)
        elif isinstance(node, ast.Assign) and any(getattr(t, "id", None) in names for t in node.targets):
            out[node.targets[0].id] = ast.unparse(node)
    missing = set(names) - set(out)
    if missing:
        raise LookupError("{} has no {}".format(path, ", ".join(sorted(missing))))
    return out


def load_lcm(lcm_dir):
    """LCM's functions of this path, run from its own source."""
    from jinja2 import Template, TemplateError, TemplateNotFound, TemplateSyntaxError
    lcm = os.path.join(lcm_dir, "osm_lcm")
    ns = {"Template": Template, "TemplateError": TemplateError, "TemplateNotFound": TemplateNotFound,
          "TemplateSyntaxError": TemplateSyntaxError, "yaml": yaml, "LcmException": LcmException,
          "asyncio": asyncio, "SystemRandom": random.SystemRandom, "uuid4": uuid4}
    sources = _functions(os.path.join(lcm, "lcm_utils.py"), {"get_iterable"})
    sources.update(_functions(os.path.join(lcm, "prometheus.py"), {"parse_job"}))
    sources.update(_functions(os.path.join(lcm, "data_utils", "vnfr.py"), {"get_osm_params"}))
    methods = _functions(os.path.join(lcm, "ns.py"), {"extract_prometheus_scrape_jobs", "_gather_vnfr_alarm_alerts",
                                                      "rel_operation_types"}, cls="NsLcm")
    for src in sources.values():
        exec(compile(src, lcm, "exec"), ns)   # noqa: S102 - LCM's own code, read from OSM_SRC
    klass = {}
    exec(compile("class NsLcm:\n" + "\n".join("    " + line for src in methods.values()
                                              for line in src.splitlines()), lcm, "exec"), ns, klass)
    return ns, klass["NsLcm"]


class _Fs:
    def __init__(self, root):
        self.root = root

    def dir_ls(self, path):
        return os.listdir(os.path.join(self.root, path))

    def file_open(self, parts, mode):
        return open(os.path.join(self.root, *parts), mode)


class _Db:
    def __init__(self, vnfr):
        self.vnfr = vnfr

    def get_one(self, table, query):
        return self.vnfr


class _Log:
    def __getattr__(self, name):
        return lambda *a, **k: None


def vnfr_of(vnfd, member, mgmt_ip):
    """The VNF record LCM has for a VNF of this VNFD (the fields the path reads)."""
    vdu = vnfd["vdu"][0]
    uid = "8c1d2e3f-4a5b-4c6d-8e7f-{:012x}".format(int(member))
    return {"_id": uid, "id": uid,
            "nsr-id-ref": NSR_ID, "member-vnf-index-ref": member, "vnfd-id": vnfd["id"], "vnfd-ref": vnfd["id"],
            "ip-address": mgmt_ip, "vim-account-id": "vim-1",
            "vdur": [{"vdu-id-ref": vdu["id"], "count-index": 0, "name": "ns-{}-{}-0".format(member, vdu["id"]),
                      "ip-address": mgmt_ip, "interfaces": [{"name": "ens3", "ip-address": mgmt_ip}]}]}


def scrape_jobs(ns, klass, pkg_dir, vnfd, vnfr, port=None):
    exporter = dict(vnfd["df"][0]["exporters-endpoints"])
    if port:
        exporter["metric-port"] = port
    this = klass()
    this.fs, this.db, this.logger = _Fs(pkg_dir), _Db(vnfr), _Log()
    return asyncio.run(this.extract_prometheus_scrape_jobs(
        ee_id=None, artifact_path="exporter-endpoint", ee_config_descriptor=exporter, vnfr_id=vnfr["_id"],
        nsr_id=NSR_ID, target_ip=vnfr["ip-address"], element_type="VDU", vdu_id=vnfr["vdur"][0]["vdu-id-ref"],
        vdu_index=0))


def alarm_rules(klass, vnfr, vnfd):
    this = klass()
    this.logger = _Log()
    return this._gather_vnfr_alarm_alerts(vnfr, vnfd)


def sidecar_config(jobs, alerts, rules_path):
    """What OSM's Prometheus sidecar writes: the jobs less LCM's bookkeeping, the alerts' rules."""
    clean = [{k: v for k, v in j.items() if k not in ("_id", "is_active", "vnfr_id", "nsr_id")} for j in jobs]
    with open(rules_path, "w") as f:
        rules = [a["prometheus_config"] for a in alerts]
        yaml.safe_dump({"groups": [{"name": "_osm_alert_rules_", "rules": rules}]}, f)
    return {"scrape_configs": clean, "rule_files": [rules_path]}


def packages(packages_dir):
    """[(package file, extracted dir, vnfd)] of the VNF packages with the exporter's endpoint."""
    with open(os.path.join(packages_dir, "catalog.json")) as f:
        catalog = json.load(f)
    work = tempfile.mkdtemp(prefix="osm-metrics-path-")
    out = []
    for entry in catalog["vnf"]:
        path = os.path.join(packages_dir, entry["package"])
        with tarfile.open(path) as tar:
            tar.extractall(work)   # noqa: S202 - our own package
            top = tar.getnames()[0].split("/")[0]
        pkg = os.path.join(work, top)
        vnfd_file = next(os.path.join(pkg, n) for n in os.listdir(pkg) if n.endswith(".yaml"))
        with open(vnfd_file) as f:
            vnfd = yaml.safe_load(f)["vnfd"]
        if "exporters-endpoints" in vnfd["df"][0]:
            out.append((entry["package"], pkg, vnfd))
    return out


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _get(url, **params):
    full = url + ("?" + urllib.parse.urlencode(params) if params else "")
    return json.loads(urllib.request.urlopen(full, timeout=5).read().decode())["data"]


def live(ns, klass, name, pkg_dir, vnfd, work):
    """The exporter -> LCM's job -> Prometheus -> LCM's alarm rule, on loopback."""
    from vpnaas.core import instance
    vnfr = vnfr_of(vnfd, "1", "127.0.0.1")
    osm = yaml.safe_dump(ns["get_osm_params"](vnfr), default_flow_style=True, width=256)
    labels = dict(instance.osm_labels({"osm-instance": osm}))
    if set(labels) != {"ns_id", "vnf_member_index", "vdu_id"}:
        raise AssertionError("the charm read no OSM identity from LCM's <OSM>: {}".format(osm))
    now = int(time.time())
    fresh, stale = "F" * 43 + "=", "S" * 43 + "="
    dump = "".join("wg-s6a\t{}\t(none)\t192.0.2.{}:51821\t10.250.1.{}/32\t{}\t100\t200\t25\n".format(k, i, i, t)
                   for i, (k, t) in enumerate(((fresh, now), (stale, now - 900)), 2))
    os.makedirs(os.path.join(work, "bin"), exist_ok=True)
    with open(os.path.join(work, "bin", "wg"), "w") as f:
        f.write("#!/bin/sh\nprintf 'wg-s6a\\tPRIVATE\\t(none)\\t51821\\toff\\n%s'\n" % dump.replace("\n", "\\n"))
    os.chmod(os.path.join(work, "bin", "wg"), 0o755)
    exporter_dir = os.path.join(work, "exporter")
    os.makedirs(exporter_dir, exist_ok=True)
    vnf = os.path.join(ROOT, "charms", "vpnaas", "vnf")
    shutil.copy(os.path.join(vnf, "wg-exporter.py"), exporter_dir)
    shutil.copy(os.path.join(vnf, "wg-collect.py"), os.path.join(exporter_dir, "vpnaas-metrics-collect.py"))
    doc = {"schema": 1, "osm": labels, "devices": [{"device": "wg-s6a", "refpoint": "s6a", "plane": "control",
           "peers": [{"public-key": fresh, "peer": "hss/0", "allowed-ips": []},
                     {"public-key": stale, "peer": "hss/1", "allowed-ips": []}], "refused": []}]}
    labels_file = os.path.join(work, "labels.json")
    with open(labels_file, "w") as f:
        json.dump(doc, f)
    port, prom_port = _free_port(), _free_port()
    collect = os.path.join(exporter_dir, "vpnaas-metrics-collect.py")
    with open(collect) as f:
        text = f.read().replace('LABELS = "/etc/wireguard/vpnaas-metrics.json"', 'LABELS = {!r}'.format(labels_file))
    with open(collect, "w") as f:
        f.write(text)
    env = dict(os.environ, PATH=os.path.join(work, "bin") + ":" + os.environ["PATH"])
    procs = [subprocess.Popen([sys.executable, os.path.join(exporter_dir, "wg-exporter.py"), "--listen", "127.0.0.1",
                               "--port", str(port), "--interface", "lo"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        jobs = scrape_jobs(ns, klass, pkg_dir, vnfd, vnfr, port)
        for job in jobs:
            job["scrape_interval"] = job["scrape_timeout"] = "1s"
        alerts = alarm_rules(klass, vnfr, vnfd)
        config = sidecar_config(jobs, alerts, os.path.join(work, "alerts.yml"))
        config["global"] = {"evaluation_interval": "1s"}
        with open(os.path.join(work, "prometheus.yml"), "w") as f:
            yaml.safe_dump(config, f)
        procs.append(subprocess.Popen(["prometheus", "--config.file=" + os.path.join(work, "prometheus.yml"),
                                       "--storage.tsdb.path=" + os.path.join(work, "data"),
                                       "--web.listen-address=127.0.0.1:{}".format(prom_port)],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        api = "http://127.0.0.1:{}/api/v1/".format(prom_port)
        expr = alerts[0]["prometheus_config"]["expr"]
        deadline = time.monotonic() + 60
        while True:
            try:
                found = _get(api + "query", query=expr)["result"]
                active = [a for a in _get(api + "alerts")["alerts"] if a["labels"]["alertname"] == alerts[0]["name"]]
            except OSError:
                found, active = [], []
            if found and active:
                break
            if time.monotonic() > deadline:
                raise AssertionError("LCM's alarm {} selected {} and no alert became active".format(expr, found))
            time.sleep(1)
        peers = sorted(r["metric"].get("peer") for r in found)
        if peers != ["hss/1"]:
            raise AssertionError("LCM's alarm {} selected {}, not the stale peer hss/1 only".format(expr, peers))
        got = {k: active[0]["labels"].get(k) for k in ("ns_id", "vnf_member_index", "vdu_id", "peer")}
        want = dict(labels, peer="hss/1")
        if got != want:
            raise AssertionError("the active alert has {}, not {}".format(got, want))
        return "LCM's alarm `{}` selects the stale peer only; alert {} {} with {}".format(
            expr, alerts[0]["name"], active[0]["state"], got)
    finally:
        for proc in reversed(procs):
            proc.terminate()
            proc.wait(15)


def run(osm_src, packages_dir):
    results = []

    def record(name, fn):
        try:
            results.append({"section": "metrics", "name": name, "ok": True, "message": fn()})
        except Exception as e:  # noqa: BLE001 - every failure is a result
            results.append({"section": "metrics", "name": name, "ok": False,
                            "message": "{}: {}".format(type(e).__name__, e)})

    ns, klass = load_lcm(os.path.join(osm_src, "LCM"))
    found = packages(packages_dir)
    if not found:
        return [{"section": "metrics", "name": "packages", "ok": False,
                 "message": "no package with exporters-endpoints"}]
    work = tempfile.mkdtemp(prefix="osm-metrics-live-")
    jobs, alerts = [], []
    for member, (name, pkg_dir, vnfd) in enumerate(found, 1):
        vnfr = vnfr_of(vnfd, str(member), "192.0.2.{}".format(member))

        def static(pkg_dir=pkg_dir, vnfd=vnfd, vnfr=vnfr):
            js = scrape_jobs(ns, klass, pkg_dir, vnfd, vnfr)
            al = alarm_rules(klass, vnfr, vnfd)
            if len(js) != 1 or vnfr["_id"].replace("-", "") not in js[0]["job_name"]:
                raise AssertionError("LCM rendered {}".format(js))
            if len(al) != 1 or not al[0]["prometheus_config"]["expr"].startswith(
                    'osm_vpnaas_wireguard_peer_session_up{ns_id="%s"' % NSR_ID):
                raise AssertionError("LCM made the alarm rules {}".format([a.get("prometheus_config") for a in al]))
            jobs.extend(js)
            alerts.extend(al)
            return "job {}; alarm rule `{}`".format(js[0]["job_name"], al[0]["prometheus_config"]["expr"])
        record("{}: LCM's scrape job and alarm rule".format(name), static)

    def promtool():
        config = sidecar_config(jobs, alerts, os.path.join(work, "all-alerts.yml"))
        path = os.path.join(work, "all.yml")
        with open(path, "w") as f:
            yaml.safe_dump(config, f)
        out = subprocess.run(["promtool", "check", "config", path], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             universal_newlines=True)
        if out.returncode:
            raise AssertionError(out.stdout[-2000:])
        return "{} jobs and {} alert rules as OSM's sidecar writes them: promtool check config SUCCESS".format(
            len(jobs), len(alerts))
    record("the sidecar's configuration", promtool)
    name, pkg_dir, vnfd = found[0]
    record("{}: live exporter -> LCM's job -> Prometheus -> LCM's alarm".format(name),
           lambda: live(ns, klass, name, pkg_dir, vnfd, work))
    return results


def render(results):
    """(text, ok) of the results, one line each."""
    lines = ["== osm-conformance: the metrics path through LCM's own code"]
    for r in results:
        lines.append("{:<5} metrics  {}\n        {}".format("ok" if r["ok"] else "FAIL", r["name"], r["message"][:600]))
    failed = sum(1 for r in results if not r["ok"])
    lines.append("   metrics path: {} ok, {} failed".format(len(results) - failed, failed))
    return "\n".join(lines), failed == 0


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--osm-src", required=True)
    ap.add_argument("--packages", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    results = run(os.path.abspath(args.osm_src), os.path.abspath(args.packages))
    with open(args.out, "w") as f:
        json.dump({"notes": [], "results": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
