"""The Grafana dashboard (monitoring/grafana/vpnaas-wireguard.json) against a real Prometheus.

Every query of every panel is run the way Grafana would send it: the dashboard's variables at
"All" (their ``allValue``, ``.*``) and Grafana's ``$__rate_interval`` as the given window; then
the per-reference-point row once for each reference point the Prometheus knows, with
``$refpoint`` set to it. A query that returns no series is reported by panel title: a panel
that would stay empty on the dashboard. The demo runs it after its measurements
(report.json "prometheus" "dashboard"), tests/e2e/test_metrics_prometheus.py on a pair.
"""
import json
import os

from testbed.emulators import vim

DASHBOARD = "monitoring/grafana/vpnaas-wireguard.json"


def load(path=None):
    with open(path or os.path.join(vim.REPO_DIR, DASHBOARD)) as f:
        return json.load(f)


def panels(doc):
    """[(row title or "", panel)] in order; the row a panel follows is its row."""
    out, row = [], None
    for panel in doc["panels"]:
        if panel["type"] == "row":
            row = panel
            continue
        out.append((row, panel))
    return out


def expand(expr, values, window):
    for name, value in values.items():
        expr = expr.replace("${}".format(name), value)
    return expr.replace("$__rate_interval", window)


def check(prom, window="1m", doc=None):
    """{"queries": n, "empty": ["<panel>: <expr>"], "refpoints": [...], "series": {panel: n}}."""
    doc = doc or load()
    everything = {v["name"]: v.get("allValue", ".*") for v in doc["templating"]["list"] if v["type"] == "query"}
    refpoints = sorted({labels.get("refpoint", "") for labels, _ in prom.query(
        "count by (refpoint) (vpnaas_wireguard_device_up)")} - {""})
    out = {"queries": 0, "empty": [], "refpoints": refpoints, "series": {}}
    for row, panel in panels(doc):
        repeated = bool(row and row.get("repeat"))
        for value in (refpoints if repeated else [None]):
            values = dict(everything, **({row["repeat"]: value} if repeated else {}))
            title = panel["title"] + (" [{}]".format(value) if repeated else "")
            for target in panel["targets"]:
                expr = expand(target["expr"], values, window)
                found = prom.query(expr)
                out["queries"] += 1
                out["series"][title] = out["series"].get(title, 0) + len(found)
                if not found:
                    out["empty"].append("{}: {}".format(title, expr))
    return out
