"""The Grafana dashboard (monitoring/grafana/vpnaas-wireguard.json) without a Prometheus: every
panel's query, its variables expanded as Grafana would, is accepted by Prometheus' own parser
(`promtool check rules` over them as recording rules), the per-reference-point row repeats on the
refpoint variable, and the panels cover what an operator asks per reference point. That each
query returns data from a real Prometheus: tests/e2e/test_metrics_prometheus.py and the demo
(testbed/measurement/dashboard.py)."""
import subprocess

import yaml

from testbed.measurement import dashboard


def test_every_query_parses_with_prometheus_own_parser(tmp_path):
    doc = dashboard.load()
    values = {v["name"]: "s1u" for v in doc["templating"]["list"] if v["type"] == "query"}
    rules = [{"record": "dashboard:q{}".format(i), "expr": dashboard.expand(t["expr"], values, "2m")}
             for i, (_row, panel) in enumerate(dashboard.panels(doc)) for t in panel["targets"]]
    path = tmp_path / "queries.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    check = subprocess.run(["promtool", "check", "rules", str(path)], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, universal_newlines=True)
    assert check.returncode == 0, check.stdout
    assert "$" not in path.read_text().replace("$1", "")   # no variable left unexpanded


def test_the_reference_point_row_covers_what_an_operator_asks():
    doc = dashboard.load()
    repeated = [(row, p) for row, p in dashboard.panels(doc) if row and row.get("repeat") == "refpoint"]
    exprs = " ".join(t["expr"] for _row, p in repeated for t in p["targets"])
    for metric in ("vpnaas_wireguard_peer_last_handshake_timestamp_seconds",
                   "vpnaas_wireguard_peer_receive_bytes_total", "vpnaas_wireguard_peer_transmit_bytes_total",
                   "vpnaas_wireguard_device_up",
                   "vpnaas_wireguard_device_receive_dropped_total", "vpnaas_wireguard_peer_refused_prefixes",
                   "vpnaas_wireguard_dataplane_info"):
        assert metric in exprs, metric
    assert all('refpoint=~"$refpoint"' in t["expr"] for _row, p in repeated for t in p["targets"])
    assert {v["name"] for v in doc["templating"]["list"]} >= {"datasource", "refpoint", "instance", "ns_id"}
