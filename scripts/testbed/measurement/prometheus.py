"""A real Prometheus server in the testbed (Debian's ``prometheus`` package, `make deps`).

It runs in the testbed's infra namespace, the side of the management network where OSM's
Prometheus would be, and scrapes every VNF's WireGuard exporter (the charms'
``vnf/wg-exporter.py``, port ``metrics-port``) at the VNF's management address, one job per VNF
as OSM 14+ has it: the package's scrape-job template (``monitoring/exporter-endpoint/
prometheus.j2``) with LCM's four variables filled in, only the interval lowered (and a ``vnf``
label added, naming the testbed's VNF). It loads the repository's alerting rules
(``monitoring/vpnaas-wireguard.rules.yml``) with three values lowered so that the demo stays quick
(docs/metrics.md): the threshold (the recording rule ``vpnaas:wireguard_handshake_stale_seconds``),
the alerts' ``for`` and the rate windows (still at least 4 scrapes and longer than the 25 s
keepalive). Its configuration, rules and data live under the directory it is given
(build/demo/prometheus); ``stop`` ends it, and the testbed's teardown would end it too (it is a
process of the infra namespace).

Queries go through the HTTP API from inside the infra namespace (``query``, ``alerts``,
``targets``): Prometheus listens on that namespace's loopback only.
"""
import json
import os
import re
import shutil
import subprocess
import time

import yaml

from testbed.emulators import vim

RULES_FILE = "monitoring/vpnaas-wireguard.rules.yml"
JOB_TEMPLATE = "monitoring/exporter-endpoint/prometheus.j2"
THRESHOLD_RECORD = "vpnaas:wireguard_handshake_stale_seconds"
LISTEN = "127.0.0.1:9090"
#: What the demo lowers (seconds): the stale-handshake threshold, the alerts' `for` and the rate
#: windows of the rules (the file's 2m: 4 scrapes of OSM's 30 s job).
DEMO_THRESHOLD = 30
DEMO_FOR = "10s"
DEMO_WINDOW = "1m"
RULES_WINDOW = "[2m]"
_VARIABLE = re.compile(r"{{ *([A-Z_]+) *}}")
_QUERY = """import json, sys, urllib.parse, urllib.request
url = "http://{}/api/v1/" + sys.argv[1]
if len(sys.argv) > 2:
    url += "?" + urllib.parse.urlencode(json.loads(sys.argv[2]))
sys.stdout.write(urllib.request.urlopen(url, timeout=10).read().decode())
""".format(LISTEN)


class PrometheusError(Exception):
    pass


def binary():
    return shutil.which("prometheus")


def rules(threshold=None, for_=None, window=None, path=None):
    """The repository's rules, with the threshold, every alert's `for` and the rate windows
    replaced when given."""
    with open(path or os.path.join(vim.REPO_DIR, RULES_FILE)) as f:
        doc = yaml.safe_load(f)
    for group in doc["groups"]:
        for rule in group["rules"]:
            if rule.get("record") == THRESHOLD_RECORD and threshold is not None:
                rule["expr"] = "vector({})".format(int(threshold))
            if "alert" in rule and for_ is not None:
                rule["for"] = for_
            if "alert" in rule and window is not None:
                rule["expr"] = rule["expr"].replace(RULES_WINDOW, "[{}]".format(window))
    return doc


def scrape_job(vnf, target, interval, path=None):
    """The package's scrape job for one VNF, as LCM renders it (its variables: osm_lcm/ns.py
    extract_prometheus_scrape_jobs), with the testbed's interval and a ``vnf`` label. Only the
    four variables are filled; anything else of Jinja2 in the template is an error here (LCM's own
    renderer runs over it in `make osm-conformance`)."""
    with open(path or os.path.join(vim.REPO_DIR, JOB_TEMPLATE)) as f:
        text = f.read()
    host, port = target.rsplit(":", 1)
    values = {"JOB_NAME": vnf.replace("-", ""), "TARGET_IP": host, "TARGET_PORT": port, "METRIC_PATH": "/metrics"}
    rendered = _VARIABLE.sub(lambda m: values[m.group(1)], text)
    if "{{" in rendered or "{%" in rendered:
        raise PrometheusError("{}: more than LCM's four variables".format(JOB_TEMPLATE))
    (job,) = yaml.safe_load(rendered)
    job["scrape_interval"] = job["scrape_timeout"] = interval
    for static in job["static_configs"]:
        static.setdefault("labels", {})["vnf"] = vnf
    return job


class Prometheus(object):
    def __init__(self, testbed, workdir, targets, threshold=DEMO_THRESHOLD, for_=DEMO_FOR, interval="2s",
                 window=DEMO_WINDOW):
        """``targets``: {vnf name: "address:port"}."""
        self.tb = testbed
        self.workdir = os.path.abspath(workdir)
        self.targets = dict(targets)
        self.threshold, self.for_, self.interval, self.window = threshold, for_, interval, window
        self.proc = None
        self.started_at = None

    def _write_config(self):
        os.makedirs(self.workdir, exist_ok=True)
        rules_path = os.path.join(self.workdir, "rules.yml")
        with open(rules_path, "w") as f:
            yaml.safe_dump(rules(self.threshold, self.for_, self.window), f, sort_keys=False)
        config = {
            "global": {"scrape_interval": self.interval, "evaluation_interval": self.interval,
                       "scrape_timeout": self.interval},
            "rule_files": [rules_path],
            "scrape_configs": [scrape_job(name, target, self.interval)
                               for name, target in sorted(self.targets.items())],
        }
        path = os.path.join(self.workdir, "prometheus.yml")
        with open(path, "w") as f:
            yaml.safe_dump(config, f, sort_keys=False)
        return path

    def start(self, timeout=30):
        exe = binary()
        if not exe:
            raise PrometheusError("no prometheus: install Debian's prometheus package (`make deps`)")
        config = self._write_config()
        data = os.path.join(self.workdir, "data")
        shutil.rmtree(data, ignore_errors=True)
        log = open(os.path.join(self.workdir, "prometheus.log"), "w")
        self.proc = subprocess.Popen(
            ["ip", "netns", "exec", self.tb.infra, exe, "--config.file=" + config, "--storage.tsdb.path=" + data,
             "--web.listen-address=" + LISTEN, "--storage.tsdb.retention.time=1d"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise PrometheusError("prometheus exited ({}); see {}".format(self.proc.returncode, log.name))
            try:
                self.api("status/buildinfo")
                self.started_at = time.time()
                return self
            except PrometheusError:
                if time.monotonic() > deadline:
                    raise
            time.sleep(0.2)

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def api(self, path, query=None, **params):
        if query:
            params["query"] = query
        argv = ["ip", "netns", "exec", self.tb.infra, "python3", "-c", _QUERY, path] + (
            [json.dumps(params)] if params else [])
        out = vim.sh(argv, check=False, timeout=20)
        try:
            doc = json.loads(out.stdout)
        except ValueError:
            raise PrometheusError("no answer from prometheus for {}: {}".format(
                path, out.stderr.strip()[-200:])) from None
        if doc.get("status") != "success":
            raise PrometheusError("prometheus: {}".format(doc.get("error", doc)))
        return doc["data"]

    def query(self, expr):
        """[(labels, float value)] of an instant query."""
        return [(r["metric"], float(r["value"][1])) for r in self.api("query", expr)["result"]]

    def query_range(self, expr, start, end, step):
        """[(labels, [(unix time, float value)])] of a range query."""
        data = self.api("query_range", expr, start=start, end=end, step=step)
        return [(r["metric"], [(float(t), float(v)) for t, v in r["values"]]) for r in data["result"]]

    def alerts(self, name=None):
        return [a for a in self.api("alerts")["alerts"] if name is None or a["labels"].get("alertname") == name]

    def targets_up(self):
        return sum(1 for t in self.api("targets")["activeTargets"] if t.get("health") == "up")
