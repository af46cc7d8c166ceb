"""Real (not dry) runs against the stand-in `osm`/`openstack` that keeps state (deploy.standin):
idempotency, waiting, tunnel status, the report -- the subprocess boundary is the only thing
replaced."""

import io
import json
import os
import sys

import pytest
from deploy_helpers import LINKS, SECRET_K, SECRET_OP, UE_IMSI, UE_SERVER, base_env

from deploy.cli import main
from deploy.standin import StandInClouds as FakeClouds
from vpnaas.core import refpoints


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        assert seconds > 0
        self.now += seconds


def run(root, fake, *argv, **env):
    clock = Clock()
    out, err = io.StringIO(), io.StringIO()
    old, sys.stderr = sys.stderr, err
    try:
        image = os.path.join(root, "bionic.img")
        open(image, "w").close()
        env.setdefault("IMAGE", image)
        code = main(
            list(argv), environ=base_env(root, **env), out=out, execute=fake, clock=clock, sleep=clock.sleep
        )
    finally:
        sys.stderr = old
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def tools(monkeypatch, fake_root):
    # prereq looks the CLIs up on PATH; point it at files that exist (they are never executed).
    bindir = os.path.join(fake_root, "bin")
    os.makedirs(bindir)
    for name in ("osm", "openstack"):
        path = os.path.join(bindir, name)
        with open(path, "w") as f:
            f.write("#!/bin/sh\nexit 99\n")
        os.chmod(path, 0o755)
    return bindir


def _creates(argv):
    return argv[1].endswith("-create") or "create" in argv[1:5] or argv[1:3] == ["router", "add"]


def test_deploy_twice_creates_nothing_the_second_time(fake_root, tools):
    fake = FakeClouds(fake_root)
    code, out, err = run(fake_root, fake, "deploy", "--ns", "eps_wg_multisite", PATH=tools)
    assert code == 0, err
    first = [c for c in fake.calls]
    creates = [c for c in first if _creates(c)]
    assert len([c for c in creates if c[0] == "osm" and c[1] == "vim-create"]) == 2
    assert "seconds from instantiation to all tunnels up" in out
    assert "s6a   up" in out
    state = json.load(open(os.path.join(fake_root, "build/deploy/state.json")))
    assert "vpnaas.oai-hss" in state["created"]["site1"]["flavors"]
    assert state["created"]["osm"]["vims"] == ["microstack", "microstack-site2"]
    status = json.load(open(os.path.join(fake_root, "build/deploy/eps_wg_multisite/status.json")))
    assert set(status["tunnels"]["vpnaas-eps_wg_multisite"]) == set(LINKS)      # the fake build's relations
    assert SECRET_K not in out and SECRET_K not in err

    fake.calls.clear()
    code, out, err = run(fake_root, fake, "deploy", "--ns", "eps_wg_multisite", PATH=tools)
    assert code == 0, err
    second_creates = [c for c in fake.calls if _creates(c)]
    assert second_creates == []
    updates = [c[1] for c in fake.calls if c[0] == "osm" and c[1].endswith("-update")]
    assert updates == ["vim-update", "vim-update"] + ["nfpkg-update"] * 5 + ["nspkg-update"]
    assert "already exists" in out


def test_wait_times_out_with_the_last_state(fake_root, tools):
    fake = FakeClouds(fake_root, ready_after=10**6)
    code, out, err = run(
        fake_root, fake, "deploy", "--ns", "eps_wg", PATH=tools, NS_READY_TIMEOUT="120", POLL_INTERVAL="30"
    )
    assert code == 1
    assert "not reached within 120 s" in err and "operational init" in err
    polls = [c for c in fake.calls if c[1] == "ns-show" and "--literal" in c]
    assert 4 <= len(polls) <= 6  # bounded: 120 s / 30 s


def test_stale_handshake_is_not_up(fake_root, tools):
    fake = FakeClouds(fake_root, handshake_age=400)
    code, out, err = run(fake_root, fake, "deploy", "--ns", "eps_wg", PATH=tools, TUNNEL_TIMEOUT="60")
    assert code == 1 and "0/5 up" in err


def test_measure_writes_the_report(fake_root, tools):
    fake = FakeClouds(fake_root)
    assert run(fake_root, fake, "deploy", "--ns", "eps_wg", PATH=tools)[0] == 0
    code, out, err = run(fake_root, fake, "measure", "--ns", "eps_wg", PATH=tools)
    assert code == 0, err
    report = json.load(open(os.path.join(fake_root, "build/deploy/eps_wg/report.json")))
    assert isinstance(report["seconds_to_all_tunnels_up"], float)
    s6a = report["reference_points"]["s6a"]
    assert s6a["handshake"] is True and s6a["plaintext_seen"] is None
    assert s6a["wg_throughput_bps"] == pytest.approx(0.891e9)
    assert s6a["plain_throughput_bps"] == pytest.approx(19.8e9)
    assert s6a["wg_rtt_avg_ms"] == 0.8 and s6a["plain_rtt_avg_ms"] == 0.8
    assert set(report["reference_points"]) == set(refpoints.REFERENCE_POINTS)


def test_undeploy_removes_only_what_deploy_created(fake_root, tools):
    fake = FakeClouds(fake_root)
    fake.os[(1, "network")]["test"] = {"name": "test"}  # MicroStack's own network pre-exists
    fake.os[(1, "subnet")] = {"test-subnet": {"name": "test-subnet"}}
    assert run(fake_root, fake, "deploy", "--ns", "eps_wg", PATH=tools)[0] == 0
    fake.calls.clear()
    code, out, err = run(fake_root, fake, "undeploy", "--ns", "eps_wg", PATH=tools)
    assert code == 0, err
    deleted = [c for c in fake.calls if "delete" in c[1:5] or c[1].endswith("-delete")]
    assert ["openstack", "network", "delete", "test"] not in deleted
    assert ["openstack", "router", "delete", "test-router"] in deleted
    assert ["osm", "ns-delete", "vpnaas-eps_wg", "--wait"] == deleted[0]
    # as many as it created: SSH, WireGuard, rotation, ICMP, iperf3, and the metrics exporter from
    # the management subnet and from OSM's address
    assert len([c for c in deleted if c[1:4] == ["security", "group", "rule"]]) == 7
    state = json.load(open(os.path.join(fake_root, "build/deploy/state.json")))
    assert not any(state["created"].get("site1", {}).values())


def test_missing_tools_stop_with_clear_message(fake_root):
    fake = FakeClouds(fake_root)
    code, out, err = run(fake_root, fake, "deploy", "--ns", "eps_wg", PATH="/nonexistent")
    assert code == 1
    assert "osmclient" in err and "python-openstackclient" in err and not fake.calls
    code, out, err = run(
        fake_root, fake, "deploy", "--ns", "eps_wg", PATH="/nonexistent", OS_PASSWORD="", OSM_HOSTNAME=""
    )
    assert "OSM_HOSTNAME" in err and "OS_PASSWORD" in err


def test_deploy_ends_with_the_ue_and_prints_its_result(fake_root, tools):
    fake = FakeClouds(fake_root)
    code, out, err = run(fake_root, fake, "deploy", "--ns", "eps_wg", PATH=tools)
    assert code == 0, err
    # the order: tunnels up first, then server, attach, MME's view, iperf
    actions = [(c[c.index("--vnf_name") + 1], c[c.index("--action_name") + 1]) for c in fake.calls
               if c[1] == "ns-action"]
    ue_steps = [a for a in actions if a[1] != "tunnel-status"]
    assert ue_steps == [("spgwu", "run"), ("enb", "ue-attach"), ("mme", "run"), ("enb", "ue-iperf")]
    assert actions.index(("spgwu", "run")) > max(i for i, a in enumerate(actions) if a[1] == "tunnel-status")
    assert "UE: IMSI {} attached, address 12.1.1.2 (7 s)".format(UE_IMSI) in out
    assert "IMSI {} in the MME's log (1 lines)".format(UE_IMSI) in out and "Attached UEs 1 (+1 -0" in out
    assert "with WireGuard on S1-U: throughput 9.8 Mbit/s sent, 9.6 Mbit/s received; RTT 21.4 ms" in out
    status = json.load(open(os.path.join(fake_root, "build/deploy/eps_wg/status.json")))
    ue = status["ue"]["vpnaas-eps_wg"]
    assert ue["ip"] == "12.1.1.2" and ue["sent_mbps"] == 9.8 and ue["rtt_ms"] == 21.4 and ue["wireguard"] is True
    assert ue["server"] == UE_SERVER
    for secret in (SECRET_K, SECRET_OP):
        assert secret not in out and secret not in err
    # idempotent: a second deploy creates nothing and simply attaches and measures again
    fake.calls.clear()
    code, out, err = run(fake_root, fake, "deploy", "--ns", "eps_wg", PATH=tools)
    assert code == 0, err
    assert [c for c in fake.calls if _creates(c)] == [] and fake.ue_attaches == 2
    # UE=0 skips it
    code, out, err = run(fake_root, fake, "deploy", "--ns", "eps_wg", PATH=tools, UE="0")
    assert code == 0 and fake.ue_attaches == 2 and "skipped (UE=0)" in out


def test_plain_ns_gives_the_baseline(fake_root, tools):
    fake = FakeClouds(fake_root)
    code, out, err = run(fake_root, fake, "deploy", "--ns", "eps", PATH=tools)
    assert code == 0, err
    assert "without WireGuard (baseline): throughput 9.8 Mbit/s sent" in out


def test_a_failing_ue_fails_the_deploy_after_the_summary(fake_root, tools):
    fake = FakeClouds(fake_root)
    fake.ue_fails = True
    code, out, err = run(fake_root, fake, "deploy", "--ns", "eps_wg", PATH=tools)
    assert code == 1
    assert "the NS is up but its UE failed" in err and "ue-iperf failed: the UE is not attached" in err
    assert "UE: FAILED" in out and "s1u   up" in out
    status = json.load(open(os.path.join(fake_root, "build/deploy/eps_wg/status.json")))
    assert "the UE is not attached" in status["ue"]["vpnaas-eps_wg"]["error"]


def test_a_metrics_rule_open_to_everybody_is_reported_and_not_duplicated(fake_root, tools):
    fake = FakeClouds(fake_root)
    fake.rules[1].append({"ID": "r0", "IP Protocol": "tcp", "Port Range": "9586:9586", "IP Range": "0.0.0.0/0",
                          "Ethertype": "IPv4"})
    code, out, err = run(fake_root, fake, "prepare", "--ns", "eps_wg", PATH=tools)
    assert code == 0, err
    assert "the metrics exporter is reachable on the data networks too" in out
    assert [r for r in fake.rules[1] if r["Port Range"] == "9586:9586"] == fake.rules[1][:1]
