"""The whole WireGuard EPS on the local testbed (issue: Local EPS testbed): five VNFs from the
bundle's own NSD and params, the built charms in OSM's order, five tunnels. The tests share one
instantiation and run in file order."""
import hashlib
import os
import re

import pytest

from bundle import membership
from testbed import convergence, demo, ue_standin
from testbed.emulators import vim
from testbed.measurement import capture

#: Its tunnels: the registry's reference points between its members (pinned: tests/pins.yaml).
REFPOINTS = tuple(membership.of_variant("eps_wg")[1])


@pytest.fixture(scope="module")
def eps(environment_ready, local_charms, tmp_path_factory):
    out = str(tmp_path_factory.mktemp("eps"))
    tb = vim.Testbed(os.path.join(out, "tb"), userspace_wireguard=vim.userspace_wireguard())
    tb.create()
    try:
        instances = demo.load_instances("eps_wg")
        steps = []
        results = demo.bring_up(tb, instances, out, steps.append)
        yield tb, results["eps_wg"], out, steps
    finally:
        tb.teardown()
    left = [ns for ns in vim.list_testbed_netns() if ns.startswith(tb.id)]
    assert not left, "teardown left namespaces: {}".format(left)


def digest(vnf):
    """Everything the charms manage on the VNF, as a digest (the text holds private keys): the
    devices, routes, addresses and every file under /etc/wireguard (pq-psk's folder of daemon
    files included). A preshared key counts as "set": its value is pq-psk's, renewed by the
    daemon on its own clock (pq-psk-renewal-seconds), not by a primitive; its state is in /run."""
    out = vnf.exec(["sh", "-c", "for d in $(wg show interfaces); do wg showconf $d; done;"
                    " ip -o route show; ip -o addr show scope global;"
                    " cd /etc/wireguard && find . -printf '%p %y %m %s\\n' | sort"
                    " && find . -type f -exec sha256sum {} + | sort"]).stdout
    assert "[Interface]" in out and "PrivateKey" in out, "nothing read from {}".format(vnf.name)
    out = re.sub(r"(?m)^PresharedKey = \S+$", "PresharedKey = (set)", out)
    return hashlib.sha256(out.encode()).hexdigest()


def test_all_five_tunnels_handshake_after_osm_order(eps):
    tb, r, _out, steps = eps
    inst = r["inst"]
    assert sorted(rp.name for rp in inst.refpoints) == sorted(REFPOINTS)
    assert all(r["timing"]["state"].values()), r["timing"]["state"]
    assert demo.handshakes_up(tb, inst) == {rp: True for rp in REFPOINTS}
    # Relations came before any config primitive, as OSM's LCM does it.
    first_config = next(i for i, s in enumerate(steps) if s.startswith("config primitive"))
    assert max(i for i, s in enumerate(steps) if "relation" in s) < first_config
    # The OAI builds are reported SKIPPED by name, never as done.
    skipped = {(v, p) for v, p, _ in r["lcm"].skipped}
    assert ("hss", "oai-install") in skipped and ("enb", "oai-configure") in skipped
    assert not any(s.startswith("oai-install on") for s in steps)


def test_a_vnf_configured_after_all_its_peers_takes_their_keys_in_its_first_session(eps):
    """The demo's VCA configures the VNFs one after another, each one's hooks settled before the
    next: a VNF whose peers were all configured before it saw each publish its key
    (published_peers) and applies their keys in its first session, so no relation hook of its own
    opens a second one before the tunnels are up (the last VNF configured always is such a VNF)."""
    _tb, r, _out, steps = eps
    inst, model = r["inst"], r["model"]
    order = [s.split()[-1] for s in steps if s.startswith("config primitive on ")]
    assert sorted(order) == sorted(v.name for v in inst.vnfs)
    peers = {v.name: set() for v in inst.vnfs}
    for rp in inst.refpoints:
        peers[rp.provider].add(rp.requirer)
        peers[rp.requirer].add(rp.provider)
    last_ones = [app for i, app in enumerate(order) if peers[app] <= set(order[:i])]
    assert order[-1] in last_ones
    done = r["lcm"].config_done_at
    for app in last_ones:
        mine = [run for run in model.hook_log if run.unit == app + "/0" and run.started < done
                and run.hook.startswith("hooks/") and convergence.opened_session(run)]
        assert [run.hook for run in mine] == ["hooks/config-changed"], (app, [(run.hook, run.remote) for run in mine])


def test_no_plaintext_on_any_underlay_link(eps):
    tb, r, out, _steps = eps
    for rp in r["inst"].refpoints:
        judged = demo.verdict(tb, r["inst"], rp, out, lambda _t: None)
        assert judged["packets"] >= 2, rp.name
        assert not judged["plaintext_seen"], rp.name
        assert judged["non_wireguard"] == [], (rp.name, judged["non_wireguard"][:3])
    # The same probe between underlay addresses is seen: the capture would notice a leak.
    rp = r["inst"].refpoints[0]
    path = os.path.join(out, "control.pcap")
    a = tb.vnfs[rp.provider]
    with capture.Capture(tb.infra, tb.port(a, rp.link), path):
        capture.send_probe(a, rp.underlay[rp.provider], rp.underlay[rp.requirer], "CONTROL-PROBE")
    assert capture.judge(path, "CONTROL-PROBE", rp.ports)["plaintext_seen"]


def test_services_started_only_after_handshake_and_reachable_through_tunnels(eps):
    tb, r, _out, _steps = eps
    for rp in r["inst"].refpoints:
        assert demo.standin_reachable(tb, rp) == "oai-{} stand-in".format(rp.requirer), rp.name
    model = r["model"]
    model.update_status()       # the status catches up with a service that was still starting
    for unit in model.units():
        status, message = model.status(unit)
        assert status == "active", (unit, message)
        assert "running" in message and "no boot persistence (no systemd)" in message, message


def test_ue_is_a_stand_in_and_reported_as_such(eps):
    """The eNB charm's real UE actions: ue-attach refuses without the OAI build (never a claimed
    attach); ue-iperf measures from the stand-in UE interface through wg-s1u to the SPGW-U."""
    tb, r, _out, _steps = eps
    s1u = next(rp for rp in r["inst"].refpoints if rp.name == "s1u")
    ue = ue_standin.run(tb, r, 2, lambda _t: None)
    assert ue["ue"] == "stand-in (no OAI build here)" and "through wg-s1u" in ue["path"]
    assert ue["ue-attach"]["status"] == "failed", ue["ue-attach"]
    assert "lte-uesoftmodem: run oai-install on the eNB first" in ue["ue-attach"]["message"]
    assert ue["ue-iperf"]["status"] == "completed", ue["ue-iperf"]
    res = ue["ue-iperf"]["results"]
    assert res["ip"] == s1u.service["enb"] and res["server"] == s1u.service["spgwu"]
    assert float(res["sent-mbps"]) > 0 and float(res["received-mbps"]) > 0 and float(res["rtt-ms"]) > 0
    line = ue_standin.describe(ue)
    assert line.startswith("UE: stand-in (no OAI build here); ue-attach: ue-attach failed:") and "Mbit/s" in line
    # the SIM's secrets never reach an action's output or the unit's log
    enb = next(v for v in r["inst"].vnfs if v.name == "enb")
    logs = repr(r["model"].logs("enb/0")) + repr(ue)
    for key in ("ue-lte-k", "ue-lte-op"):
        assert enb.config[key] and enb.config[key] not in logs
    assert tb.vnfs["enb"].exec(["ip", "link", "show", ue_standin.UE_IF], check=False).returncode != 0


def test_rerunning_every_primitive_changes_nothing(eps):
    tb, r, _out, _steps = eps
    model = r["model"]
    before = {name: digest(vnf) for name, vnf in tb.vnfs.items()}
    for spec in r["inst"].vnfs:
        unit = spec.name + "/0"
        model.run_hook(unit, "config-changed")
        for action in ("verify-ssh-credentials", "tunnel-status", "oai-start"):
            result = model.run_action(unit, action)
            assert result.status == "completed", (unit, action, result.message)
    model.update_status()
    assert {name: digest(vnf) for name, vnf in tb.vnfs.items()} == before
    assert demo.handshakes_up(tb, r["inst"]) == {rp: True for rp in REFPOINTS}


def test_rotate_keys_on_mme_reestablishes_its_three_tunnels(eps):
    tb, r, _out, _steps = eps
    model = r["model"]
    old = tb.vnfs["mme"].exec(["wg", "show", "all", "public-key"]).stdout
    result = model.run_action("mme/0", "rotate-keys")
    assert result.status == "completed", result.message
    assert tb.vnfs["mme"].exec(["wg", "show", "all", "public-key"]).stdout != old
    state = demo.wait_tunnels(tb, r["inst"])
    assert state == {rp: True for rp in REFPOINTS}
    for rp in r["inst"].refpoints:
        assert demo.standin_reachable(tb, rp), rp.name


def test_killed_wireguard_and_restarted_sshd_are_repaired_by_update_status(eps):
    tb, r, _out, _steps = eps
    spgwu, hss = tb.vnfs["spgwu"], tb.vnfs["hss"]
    assert spgwu.kill(os.path.basename(vim.userspace_wireguard())[:15]), "no wireguard-go process to kill"
    assert spgwu.exec(["wg", "show", "wg-s1u"], check=False).returncode != 0
    tb.restart_sshd(hss)
    r["model"].update_status()
    assert demo.wait_tunnels(tb, r["inst"]) == {rp: True for rp in REFPOINTS}
