"""The alerting rules (monitoring/vpnaas-wireguard.rules.yml) by Prometheus' and Alertmanager's
own tools: `promtool test rules` over the shipped cases (healthy, stale, never handshook, target
down, no target, metrics missing, wg failing, flapping), and the inhibit rules
(monitoring/alertmanager-inhibit.yml) in a real Alertmanager on loopback, fed the alerts of one
fault at a time. promtool and Alertmanager are Debian's (scripts/install-deps.sh;
scripts/check-unit-deps.sh names them when missing)."""
import glob
import json
import os
import re
import subprocess
import time
import urllib.request

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MONITORING = os.path.join(ROOT, "monitoring")
RULES = os.path.join(MONITORING, "vpnaas-wireguard.rules.yml")
INHIBIT = os.path.join(MONITORING, "alertmanager-inhibit.yml")
CASES = sorted(glob.glob(os.path.join(MONITORING, "tests", "*.yml")))


def _run(argv):
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)


def test_the_rules_pass_promtools_check_and_its_unit_tests():
    check = _run(["promtool", "check", "rules", RULES])
    assert check.returncode == 0, check.stdout
    assert CASES
    result = _run(["promtool", "test", "rules"] + CASES)
    assert result.returncode == 0 and "SUCCESS" in result.stdout, result.stdout


def test_the_cases_cover_a_dead_target_healthy_stale_and_flapping_tunnels():
    names = {t["name"] for path in CASES for t in yaml.safe_load(open(path))["tests"]}
    assert {"healthy", "stale", "target down", "no target", "flapping"} <= names
    fired = {a["alertname"] for path in CASES for t in yaml.safe_load(open(path))["tests"]
             for a in t.get("alert_rule_test", []) if a.get("exp_alerts")}
    alerts = {r["alert"] for g in yaml.safe_load(open(RULES))["groups"] for r in g["rules"] if "alert" in r}
    assert fired == alerts   # every alert is seen firing in some case


def test_every_alert_has_a_severity_a_description_and_a_runbook_in_the_docs():
    with open(os.path.join(ROOT, "docs", "metrics.md")) as f:
        anchors = set(re.findall(r'<a id="([a-z0-9-]+)"></a>', f.read()))
    for group in yaml.safe_load(open(RULES))["groups"]:
        for rule in (r for r in group["rules"] if "alert" in r):
            assert rule["labels"]["severity"], rule["alert"]
            assert {"summary", "description", "runbook_url"} <= set(rule["annotations"]), rule["alert"]
            doc, _, anchor = rule["annotations"]["runbook_url"].partition("#")
            assert doc == "docs/metrics.md" and anchor in anchors, rule["alert"]


def test_rate_windows_span_at_least_four_scrapes_of_osms_job():
    with open(os.path.join(MONITORING, "exporter-endpoint", "prometheus.j2")) as f:
        interval = re.search(r"scrape_interval: (\d+)s", f.read())
    scrape = int(interval.group(1))
    text = open(RULES).read()
    windows = re.findall(r"\[(\d+)([sm])\]", text)
    assert windows
    for value, unit in windows:
        assert int(value) * (60 if unit == "m" else 1) >= 4 * scrape


@pytest.fixture
def alertmanager(tmp_path):
    """A real Alertmanager on loopback with the shipped inhibit rules and a receiver that drops all.
    It listens on port 0 and its log names the port it got (exporter-toolkit's "Listening on"
    line): a port found free by the test and bound later could be taken in between."""
    config = {"route": {"receiver": "null", "group_wait": "1h"}, "receivers": [{"name": "null"}]}
    config.update(yaml.safe_load(open(INHIBIT)))
    path = tmp_path / "alertmanager.yml"
    path.write_text(yaml.safe_dump(config))
    check = _run(["amtool", "check-config", str(path)])
    assert check.returncode == 0 and "3 inhibit rules" in check.stdout, check.stdout
    log = tmp_path / "alertmanager.log"
    with open(str(log), "w") as err:
        proc = subprocess.Popen(["prometheus-alertmanager", "--config.file=" + str(path),
                                 "--storage.path=" + str(tmp_path / "data"), "--cluster.listen-address=",
                                 "--web.listen-address=127.0.0.1:0"],
                                stdout=subprocess.DEVNULL, stderr=err)
    deadline = time.monotonic() + 60
    url = None
    while True:
        if url is None:
            listening = re.search(r'msg="Listening on" address=127\.0\.0\.1:(\d+)', log.read_text())
            url = listening and "http://127.0.0.1:{}/api/v2/".format(listening.group(1))
        try:
            if url is not None:
                urllib.request.urlopen(url + "status", timeout=5).read()
                break
        except OSError:
            pass
        assert proc.poll() is None and time.monotonic() < deadline, "alertmanager did not start: " + log.read_text()
        time.sleep(0.2)
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(30)


def _post(url, alerts):
    body = json.dumps([{"labels": a} for a in alerts]).encode()
    req = urllib.request.Request(url + "alerts", body, {"Content-Type": "application/json"})
    urllib.request.urlopen(req, timeout=5).read()


def _inhibited(url, expected):
    """{alertname/instance/device: inhibited?} as Alertmanager reports it, once it is ``expected``
    (or after 60 s). Its inhibitor indexes the source alerts in a goroutine of its own, one at a
    time, and the state is computed when the alerts are read: a read right after the post can
    show some sources' inhibitions and not yet the others'."""
    deadline = time.monotonic() + 60
    while True:
        alerts = json.loads(urllib.request.urlopen(url + "alerts", timeout=5).read().decode())
        out = {"{}/{}/{}".format(a["labels"]["alertname"], a["labels"].get("instance", ""),
                                 a["labels"].get("device", "")): bool(a["status"]["inhibitedBy"]) for a in alerts}
        if out == expected or time.monotonic() > deadline:
            return out
        time.sleep(0.3)


A = {"job": "vpnaas_wg_a", "instance": "10.0.0.1:9586"}
B = {"job": "vpnaas_wg_b", "instance": "10.0.0.2:9586"}


def test_one_dead_exporter_or_failing_wg_is_one_notification(alertmanager):
    stale = dict(alertname="WireGuardHandshakeStale", refpoint="s6a", device="wg-s6a", peer="hss/0")
    _post(alertmanager, [
        dict(A, alertname="WireGuardExporterDown", exporter="vpnaas-wireguard"),
        dict(A, alertname="WireGuardDeviceDown", refpoint="s6a", device="wg-s6a", plane="control"),
        dict(A, **stale),
        dict(B, alertname="WireGuardToolFailing"),
        dict(B, alertname="WireGuardDeviceDown", refpoint="s1u", device="wg-s1u", plane="user"),
        dict(B, alertname="WireGuardHandshakeStale", refpoint="s1u", device="wg-s1u", peer="enb/0"),
        # Another VNF's tunnel to the dead one: a fault of its own, not inhibited.
        dict(job="vpnaas_wg_c", instance="10.0.0.3:9586", **stale),
    ])
    expected = {
        "WireGuardExporterDown/10.0.0.1:9586/": False,
        "WireGuardDeviceDown/10.0.0.1:9586/wg-s6a": True,
        "WireGuardHandshakeStale/10.0.0.1:9586/wg-s6a": True,
        "WireGuardToolFailing/10.0.0.2:9586/": False,
        "WireGuardDeviceDown/10.0.0.2:9586/wg-s1u": True,
        "WireGuardHandshakeStale/10.0.0.2:9586/wg-s1u": True,
        "WireGuardHandshakeStale/10.0.0.3:9586/wg-s6a": False,
    }
    assert _inhibited(alertmanager, expected) == expected


def test_a_device_down_inhibits_only_its_own_peers(alertmanager):
    _post(alertmanager, [
        dict(A, alertname="WireGuardDeviceDown", refpoint="s6a", device="wg-s6a", plane="control"),
        dict(A, alertname="WireGuardHandshakeStale", refpoint="s6a", device="wg-s6a", peer="hss/0"),
        dict(A, alertname="WireGuardHandshakeStale", refpoint="s11", device="wg-s11", peer="spgwc/0"),
    ])
    expected = {
        "WireGuardDeviceDown/10.0.0.1:9586/wg-s6a": False,
        "WireGuardHandshakeStale/10.0.0.1:9586/wg-s6a": True,
        "WireGuardHandshakeStale/10.0.0.1:9586/wg-s11": False,
    }
    assert _inhibited(alertmanager, expected) == expected
