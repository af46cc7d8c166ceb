"""Real (not dry) runs against a fake `osm`/`openstack` that keeps state: idempotency, waiting,
tunnel status, the report -- the subprocess boundary is the only thing replaced."""

import io
import json
import os
import subprocess
import sys
import uuid

import pytest
import yaml
from deploy_helpers import SECRET_K, SECRET_OP, UE_IMSI, UE_SERVER, base_env

from deploy.cli import main
from vpnaas import refpoints


class FakeClouds:
    def __init__(self, root, handshake_age=5, ready_after=2):
        self.root = root
        self.calls = []
        # (site, kind) -> {name: data}; MicroStack creates `external` at init on both sites
        self.os = {(1, "network"): {"external": {}}, (2, "network"): {"external": {}}}
        self.rules = {1: [], 2: []}
        self.router_ifaces = set()
        self.osm = {"vim": set(), "nfpkg": set(), "nspkg": set(), "nst": set(), "ns": {}, "nsi": {}}
        self.ops = {}
        self.polls = 0
        self.ready_after = ready_after
        self.handshake_age = handshake_age
        self.ue_attaches = 0
        self.ue_fails = False
        with open(os.path.join(root, "build/packages/catalog.json")) as f:
            cat = json.load(f)
        self.by_path = {i["package"]: i["id"] for i in cat["vnf"] + cat["ns"]}
        self.by_path.update({i["file"]: i["id"] for i in cat["nst"]})

    def __call__(self, argv, env=None, timeout=None, **kw):
        assert timeout and timeout > 0, "every command needs a bounded timeout"
        argv = [os.path.basename(argv[0])] + list(argv[1:])
        self.calls.append(argv)
        site = 2 if env.get("OS_AUTH_URL") == "https://10.30.30.1:5000/v3/" else 1
        rc, out = self.openstack(site, argv[1:]) if argv[0] == "openstack" else self.osm_cli(argv[1:])
        return subprocess.CompletedProcess(argv, rc, out, "" if rc == 0 else "not found")

    def openstack(self, site, a):
        if a[:2] == ["token", "issue"]:
            return 0, "{}"
        if a[:3] == ["security", "group", "rule"]:
            if a[3] == "list":
                return 0, json.dumps(self.rules[site])
            if a[3] == "delete":
                self.rules[site] = [r for r in self.rules[site] if r["ID"] != a[4]]
                return 0, ""
            rid = str(uuid.uuid4())
            proto = a[a.index("--protocol") + 1]
            ports = a[a.index("--dst-port") + 1] if "--dst-port" in a else ""
            self.rules[site].append(
                {
                    "ID": rid,
                    "IP Protocol": proto,
                    "Port Range": ports,
                    "IP Range": "0.0.0.0/0",
                    "Ethertype": "IPv4",
                }
            )
            return 0, json.dumps({"id": rid})
        if a[:2] == ["port", "list"]:
            key = (site, a[a.index("--router") + 1], a[a.index("--fixed-ip") + 1].split("=")[1])
            return 0, json.dumps([{"ID": "p"}] if key in self.router_ifaces else [])
        kind, verb = a[0], a[1]
        store = self.os.setdefault((site, kind), {})
        if verb == "show":
            return (0, json.dumps(store[a[2]])) if a[2] in store else (1, "")
        if verb == "create":
            data = {"name": a[-1]}
            if kind == "flavor":
                data.update(
                    vcpus=int(a[a.index("--vcpus") + 1]),
                    ram=int(a[a.index("--ram") + 1]),
                    disk=int(a[a.index("--disk") + 1]),
                )
            store[a[-1]] = data
            return 0, json.dumps(data)
        if verb == "add":
            self.router_ifaces.add((site, a[-2], a[-1]))
            return 0, ""
        if verb in ("set", "delete", "remove"):
            return 0, ""
        raise AssertionError(a)

    def ns_record(self):
        self.polls += 1
        ready = self.polls >= self.ready_after
        return {
            "nsState": "READY" if ready else "BUILDING",
            "operational-status": "running" if ready else "init",
            "config-status": "configured" if ready else "init",
            "configurationStatus": [
                {"elementUnderConfiguration": m, "status": "READY" if ready else "INSTALLING"}
                for m in ("hss", "mme", "spgwc", "spgwu", "enb")
            ],
            "constituent-vnfr-ref": [],
        }

    def osm_cli(self, a):
        cmd = a[0]
        if cmd == "vim-list":
            return 0, ""
        if cmd in ("vim-show", "nfpkg-show", "nspkg-show", "nst-show"):
            return (0, "x") if a[1] in self.osm[cmd.split("-")[0]] else (1, "")
        if cmd == "vim-create":
            self.osm["vim"].add(a[a.index("--name") + 1])
            return 0, ""
        if cmd in ("nfpkg-create", "nspkg-create", "nst-create"):
            self.osm[cmd.split("-")[0]].add(self.by_path[a[1]])
            return 0, ""
        if cmd in ("vim-update", "nfpkg-update", "nspkg-update", "nst-update"):
            return 0, ""
        if cmd in ("ns-show", "nsi-show"):
            kind = cmd.split("-")[0]
            if a[1] not in self.osm[kind]:
                return 1, ""
            return 0, yaml.safe_dump(self.ns_record()) if "--literal" in a else "table"
        if cmd in ("ns-create", "nsi-create"):
            self.osm[cmd.split("-")[0]][a[2]] = True
            return 0, str(uuid.uuid4())
        if cmd == "ns-action":
            member = a[a.index("--vnf_name") + 1]
            action = a[a.index("--action_name") + 1]
            op = str(uuid.uuid4())
            self.ops[op] = (member, action, json.loads(a[a.index("--params") + 1]) if "--params" in a else {})
            return 0, op + "\n"
        if cmd == "ns-op-show":
            member, action, params = self.ops[a[1]]
            if action == "tunnel-status":
                eps = {
                    "hss": ["s6a"],
                    "mme": ["s6a", "s11", "s1c"],
                    "spgwc": ["s11", "sxab"],
                    "spgwu": ["sxab", "s1u"],
                    "enb": ["s1c", "s1u"],
                }[member]
                tunnels = [
                    {
                        "device": "wg-" + e,
                        "endpoint": e,
                        "public-key": "k",
                        "listen-port": 51821,
                        "peers": [
                            {
                                "public-key": "p",
                                "endpoint": "h:1",
                                "allowed-ips": [],
                                "latest-handshake-age": self.handshake_age,
                                "rx-bytes": 1,
                                "tx-bytes": 1,
                            }
                        ],
                    }
                    for e in eps
                ]
                detail = {"tunnels": json.dumps(tunnels)}
            elif action == "ue-attach":
                self.ue_attaches += 1
                detail = {"result": "attached", "imsi": UE_IMSI, "ip": "12.1.1.2", "interface": "oaitun_ue1",
                          "seconds": "7", "mme-view": "not read from the eNB VNF"}
            elif action == "ue-iperf":
                if self.ue_fails:
                    return 0, yaml.safe_dump({"operationState": "FAILED", "detailed-status":
                                              "ue-iperf failed: the UE is not attached"})
                detail = {"ip": "12.1.1.2", "server": params["server"], "rtt-ms": "21.4", "sent-mbps": "9.8",
                          "received-mbps": "9.6", "tunnels": "5 tunnels up"}
            else:
                command = params["command"]
                if command.startswith("sh -c") and "mme-view" in command:
                    detail = {"output": "Attached UEs   |          1      |              1              |"
                              "             0               |\n[NAS] IMSI {} attach complete\n".format(UE_IMSI)}
                elif command.startswith("iperf3") and "-c" in command:
                    rate = 0.9e9 if command.split()[2].startswith("172.16.") else 20e9
                    detail = {
                        "output": json.dumps(
                            {
                                "end": {
                                    "sum_sent": {"bits_per_second": rate, "retransmits": 3, "seconds": 600},
                                    "sum_received": {"bits_per_second": rate * 0.99, "seconds": 600},
                                }
                            }
                        )
                    }
                elif command.startswith("ping"):
                    detail = {
                        "output": "1000 packets transmitted, 1000 received, 0% packet loss, time 1ms\n"
                        "rtt min/avg/max/mdev = 0.5/0.8/2.1/0.1 ms\n"
                    }
                else:
                    detail = {"output": ""}
            # LCM of some releases stores the results as their Python repr
            return 0, yaml.safe_dump({"operationState": "COMPLETED", "detailed-status": str(detail)})
        if cmd in ("ns-delete", "nsi-delete", "nfpkg-delete", "nspkg-delete", "nst-delete", "vim-delete"):
            return 0, ""
        raise AssertionError(a)


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
    assert set(status["tunnels"]["vpnaas-eps_wg_multisite"]) == {"s6a", "s11", "s1c", "sxab", "s1u"}
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
    assert len([c for c in deleted if c[1:4] == ["security", "group", "rule"]]) == 5   # as many as it created
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
