"""The WireGuard metrics end to end: the exporter the charms keep on a real VNF (namespaces,
sshd, wireguard-go), read by Prometheus' own parser (`promtool check metrics`) and scraped by a
real Prometheus server over the management network; label values that no Juju unit name could
be, round-tripped exactly through that server; the stale-handshake alert of the repository's
rules file firing when one peer's WireGuard stops and clearing once the charm repaired it."""
import json
import subprocess
import time

import e2e_pairs as pairs
import pytest
import yaml

from testbed.emulators import vim
from testbed.measurement import dashboard, prometheus

PORT = 9586
FETCH = ("import sys, urllib.request\n"
         "sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())")
HOSTILE = ['evil"/0', "back\\slash/1", "new\nline # TYPE x counter", "}{,=\"", "\u00e9t\u00e9 \u2603/0",
           "x" * 300, "peer=\"b/0\"} 1\nvpnaas_wireguard_up 0"]


@pytest.fixture
def pair(testbed, model, local_charms):
    pairs.bring_up(testbed, model, local_charms)
    a, b = testbed.vnfs["a"], testbed.vnfs["b"]
    deadline = time.monotonic() + 30
    while not (all(pairs.handshakes(a, "wg-vpn")) and pairs.handshakes(a, "wg-vpn")):
        assert time.monotonic() < deadline, "no handshake"
        time.sleep(0.2)
    return a, b


def scrape(testbed, vnf):
    """What a scraper on the management network gets from the VNF's exporter."""
    url = "http://{}:{}/metrics".format(vnf.mgmt_ip, PORT)
    return vim.sh(["ip", "netns", "exec", testbed.infra, "python3", "-c", FETCH, url]).stdout


def promtool(*args, text=None):
    return subprocess.run(["promtool"] + list(args), input=text, universal_newlines=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def exporter_pid(vnf):
    return vnf.exec(["cat", "/run/wireguard/vpnaas-metrics-exporter.pid"]).stdout.strip()


def test_the_exporter_serves_the_text_format_on_the_management_address_only(pair, testbed, model):
    a, _b = pair
    text = scrape(testbed, a)
    check = promtool("check", "metrics", text=text)
    assert check.returncode == 0, check.stdout
    # The generic endpoint "vpn" is no reference point of the registry: no plane.
    assert 'vpnaas_wireguard_peer_configured{refpoint="vpn",device="wg-vpn",plane="",peer="b/0"} 1' in text
    assert 'vpnaas_wireguard_peer_session_up{refpoint="vpn",device="wg-vpn",plane="",peer="b/0"} 1' in text
    assert 'vpnaas_wireguard_peer_last_handshake_timestamp_seconds{refpoint="vpn",device="wg-vpn",peer="b/0"}' in text
    assert 'vpnaas_wireguard_device_mtu_bytes{refpoint="vpn",device="wg-vpn"} 1420' in text
    assert 'vpnaas_wireguard_device_receive_dropped_total{refpoint="vpn",device="wg-vpn"}' in text
    assert 'vpnaas_wireguard_peer_info{refpoint="vpn",device="wg-vpn",peer="b/0",endpoint="192.168.8.129:' in text
    assert 'vpnaas_wireguard_peers{refpoint="vpn",device="wg-vpn"} 1' in text
    assert 'vpnaas_wireguard_peer_refused_prefixes{refpoint="vpn",device="wg-vpn",peer="b/0"} 0' in text
    assert 'vpnaas_wireguard_dataplane_info{refpoint="vpn",device="wg-vpn",implementation=' in text
    private = a.exec(["cat", "/etc/wireguard/wg-vpn.key"]).stdout.strip()
    assert private and private not in text
    # pq-psk (on by default): the peer's state from the daemon once its first exchange completed, never the PSK.
    pq = 'vpnaas_wireguard_peer_pq_psk_active{refpoint="vpn",device="wg-vpn",plane="",peer="b/0"} 1'
    deadline = time.monotonic() + 60
    while pq not in text and time.monotonic() < deadline:
        time.sleep(2)
        text = scrape(testbed, a)
    assert pq in text, text
    assert 'vpnaas_wireguard_peer_pq_psk_renewals_total{refpoint="vpn",device="wg-vpn",plane="",peer="b/0"} ' in text
    psk = a.exec(["wg", "show", "wg-vpn", "preshared-keys"]).stdout.split()[1]
    assert psk != "(none)" and psk not in text
    listening = a.exec(["ss", "-Hltn", "( sport = :{} )".format(PORT)]).stdout.split()
    # On the management address and bound to the management device (eth0 in the testbed's VNFs).
    assert "{}%eth0:{}".format(a.mgmt_ip, PORT) in listening and "0.0.0.0:{}".format(PORT) not in listening
    # Idempotent: a reconcile that changes nothing leaves the exporter running as it was.
    pid = exporter_pid(a)
    model.update_status(["a/0"])
    assert exporter_pid(a) == pid and "METRICS" not in str(model.status("a/0"))


CONNECT = ("import socket, sys\n"
           "try:\n"
           "    s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)\n"
           "    s.sendall(b'GET /metrics HTTP/1.0\\r\\n\\r\\n'); print(s.recv(12).decode())\n"
           "except OSError as e:\n"
           "    print(type(e).__name__)\n")


def test_an_underlay_neighbour_routing_the_management_address_over_its_link_gets_no_answer(pair, testbed):
    """Linux accepts a packet for any local address on any interface: b routes a's management
    address over the underlay link they share. The exporter (bound to a's management device)
    resets it; a listener on the same address without the binding answers b on the same path."""
    a, b = pair
    b.exec(["ip", "route", "replace", a.mgmt_ip + "/32", "via", pairs.A_ADDR.split("/")[0]])
    control = a.popen(["python3", "-m", "http.server", "--bind", a.mgmt_ip, "9587"],
                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60    # the control listens (a Python starting: seconds under load, not 1)
        while not a.exec(["ss", "-Hltn", "( sport = :9587 )"]).stdout.strip():
            assert control.poll() is None and time.monotonic() < deadline, "the control server did not listen"
            time.sleep(0.1)
        via_underlay = b.exec(["python3", "-c", CONNECT, a.mgmt_ip, "9587"]).stdout.strip()
        assert via_underlay.startswith("HTTP/1.0 "), via_underlay   # the path exists: the control answers
        refused = b.exec(["python3", "-c", CONNECT, a.mgmt_ip, str(PORT)]).stdout.strip()
        assert refused == "ConnectionRefusedError", refused
        assert "vpnaas_wireguard_up 1" in scrape(testbed, a)   # the management network still is
    finally:
        control.kill()
        control.wait()
        b.exec(["ip", "route", "del", a.mgmt_ip + "/32"], check=False)


def test_hostile_label_values_round_trip_through_a_real_prometheus(pair, testbed):
    """The charm lets only Juju unit names through (tests/unit/test_metrics.py); the exporter
    escapes whatever its labels file says. Here the file says what no unit name could."""
    a, b = pair
    b_key = b.exec(["wg", "show", "wg-vpn-peer", "public-key"]).stdout.strip()
    devices = [{"device": "wg-vpn", "refpoint": HOSTILE[0],
                "peers": [{"public-key": b_key, "peer": HOSTILE[1], "allowed-ips": []}]
                + [{"public-key": "{:043d}=".format(i), "peer": h, "allowed-ips": []}
                   for i, h in enumerate(HOSTILE) if i != 1],
                "refused": [{"peer": h, "prefix": "10.0.0.0/8"} for h in HOSTILE[2:]]}]
    a.exec(["sh", "-c", "cat > /etc/wireguard/vpnaas-metrics.json"],
           input=json.dumps({"schema": 1, "devices": devices}))
    text = scrape(testbed, a)
    check = promtool("check", "metrics", text=text)
    assert check.returncode == 0, check.stdout
    prom = prometheus.Prometheus(testbed, str(testbed.workdir) + "/prometheus", {"a": "{}:{}".format(a.mgmt_ip, PORT)})
    try:
        prom.start()
        deadline = time.monotonic() + 30
        while not prom.query("vpnaas_wireguard_peer_last_handshake_timestamp_seconds"):
            assert time.monotonic() < deadline, "not scraped"
            time.sleep(1)
        configured = {labels["peer"] for labels, _ in prom.query("vpnaas_wireguard_peer_configured")}
        assert configured == set(HOSTILE)
        (age,) = prom.query("vpnaas_wireguard_peer_last_handshake_timestamp_seconds")
        assert age[0]["peer"] == HOSTILE[1] and age[0]["refpoint"] == HOSTILE[0]
        assert {labels["refpoint"] for labels, _ in prom.query("vpnaas_wireguard_device_up")} == {HOSTILE[0]}
        # pq-psk's families carry the same labels (the daemon's state of b's key).
        renewals = prom.query("vpnaas_wireguard_peer_pq_psk_renewals_total")
        assert [labels["peer"] for labels, _ in renewals] == [HOSTILE[1]], renewals
        up = {"__name__": "vpnaas_wireguard_up", "instance": a.mgmt_ip + ":9586", "job": "vpnaas_wg_a", "vnf": "a",
              "exporter": "vpnaas-wireguard"}
        assert prom.query("vpnaas_wireguard_up") == [(up, 1.0)]
    finally:
        prom.stop()


def test_the_rules_file_passes_promtool_as_shipped_and_as_the_testbed_lowers_it(tmp_path):
    assert promtool("check", "rules", prometheus.RULES_FILE).returncode == 0
    lowered = tmp_path / "rules.yml"
    lowered.write_text(yaml.safe_dump(prometheus.rules(20, "5s", "1m")))
    check = promtool("check", "rules", str(lowered))
    assert check.returncode == 0, check.stdout
    text = lowered.read_text()
    assert "vector(20)" in text and "vector(180)" in open(prometheus.RULES_FILE).read()
    assert "[1m]" in text and "[2m]" not in text and "[2m]" in open(prometheus.RULES_FILE).read()


def test_the_testbed_scrape_job_is_the_packages_template_as_lcm_fills_it(tmp_path):
    job = prometheus.scrape_job("spgw-u", "198.18.0.9:9586", "2s")
    assert job["job_name"] == "vpnaas_wg_spgwu" and job["metrics_path"] == "/metrics"
    assert job["static_configs"] == [{"targets": ["198.18.0.9:9586"],
                                      "labels": {"exporter": "vpnaas-wireguard", "vnf": "spgw-u"}}]
    config = tmp_path / "prometheus.yml"
    config.write_text(yaml.safe_dump({"scrape_configs": [job]}))
    check = promtool("check", "config", str(config))
    assert check.returncode == 0, check.stdout


def test_the_stale_handshake_alert_fires_for_a_stopped_peer_and_clears_after_the_repair(pair, testbed, model):
    a, b = pair
    prom = prometheus.Prometheus(testbed, str(testbed.workdir) + "/prometheus",
                                 {n: "{}:{}".format(v.mgmt_ip, PORT) for n, v in (("a", a), ("b", b))},
                                 threshold=20, for_="4s")
    try:
        prom.start()
        time.sleep(10)   # healthy tunnels, handshakes older than the lowered threshold: nothing fires
        assert not [x for x in prom.alerts("WireGuardHandshakeStale") if x["state"] == "firing"]
        # Every query of the Grafana dashboard returns data, for each reference point.
        panels = dashboard.check(prom)
        assert panels["refpoints"] == ["vpn", "vpn-peer"] and panels["queries"] >= 15 and panels["empty"] == [], panels
        assert b.kill("wireguard-go")
        fired = _wait(lambda: _state(prom, "a", "wg-vpn", "b/0") == "firing", 150)
        assert fired, "WireGuardHandshakeStale did not fire on a for b/0"
        model.update_status(["b/0"])   # the charm's repair path: it brings wg-vpn-peer up again
        assert _wait(lambda: _state(prom, "a", "wg-vpn", "b/0") is None, 60), "the alert did not clear"
    finally:
        prom.stop()


def _state(prom, vnf, device, peer):
    for alert in prom.alerts("WireGuardHandshakeStale"):
        labels = alert["labels"]
        if (labels.get("vnf"), labels.get("device"), labels.get("peer")) == (vnf, device, peer):
            return alert["state"]
    return None


def _wait(predicate, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(2)
    return False
