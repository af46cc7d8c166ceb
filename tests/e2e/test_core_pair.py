"""The VPNaaS core end to end on one pair of VNFs (real sshd, real WireGuard), two built charms run
through dispatch, peering with no manual step in OSM's event order. The tests share the pair and
run in file order; the last one removes the relation."""
import base64
import contextlib
import hashlib
import json
import os
import re
import threading
import time

import e2e_pairs as pairs
import pytest

from testbed.emulators import lcm, vca, vim, vnf_login
from testbed.measurement import capture, secretaudit
from vpnaas.vnf import ssh


@contextlib.contextmanager
def netns_of(model):
    """Enter the VCA's network namespace in this process (setns), restoring ours afterwards."""
    import ctypes
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    ns = model.runner[-1]
    with open("/proc/self/ns/net") as ours, open("/run/netns/" + ns) as theirs:
        if libc.setns(theirs.fileno(), 0x40000000) != 0:
            raise OSError(ctypes.get_errno(), "setns")
        try:
            yield
        finally:
            libc.setns(ours.fileno(), 0x40000000)


#: What a device's configuration holds that the charm does not control: the preshared key of a
#: peer with pq-psk is the daemon's, renewed every pq-psk-renewal-seconds (and by the daemon alone).
PSK_LINE = re.compile(r"^PresharedKey = \S+$", re.M)


def state_of(vnf):
    """Everything the charms manage on a VNF, as a digest (private keys included, never shown):
    the devices' configurations (a preshared key only as "set": its value is pq-psk's, which
    renews it on its own clock; ``pq_psks`` follows it), routes, addresses and every file under
    /etc/wireguard (pq-psk's folder included) with its mode and size."""
    parts = []
    for argv in (["wg", "showconf", "wg-vpn"], ["wg", "showconf", "wg-vpn-peer"], ["ip", "-o", "route", "show"],
                 ["ip", "-o", "addr", "show", "scope", "global"],
                 ["sh", "-c", "cd /etc/wireguard && find . -printf '%p %y %m %s\\n' | sort"
                  " && find . -type f -exec sha256sum {} + | sort"]):
        parts.append(PSK_LINE.sub("PresharedKey = (set)", vnf.exec(argv, check=False).stdout))
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def pq_psks(vnf, dev):
    """(digest of the device's preshared keys, renewals pq-psk counted on it): a changed key is a
    renewal only when the count moved too."""
    keys = vnf.exec(["wg", "show", dev, "preshared-keys"]).stdout
    status = vnf.exec(["/usr/local/lib/vpnaas/pq-psk", "status"], check=False).stdout
    renewals = sum(int(line.split()[line.split().index("renewals") + 1]) for line in status.splitlines()
                   if line.startswith("peer ") and line.split()[1] == dev)
    return hashlib.sha256(keys.encode()).hexdigest(), renewals


def sessions(model, unit):
    return lcm.ssh_sessions(model, unit)


@pytest.fixture(scope="module")
def shared(environment_ready, local_charms, tmp_path_factory):
    """One pair for the tests below, which run in file order; the last one removes the relation."""
    base = tmp_path_factory.mktemp("pair")
    tb = vim.Testbed(str(base / "tb"), tb_id=None,
                     userspace_wireguard=vim.userspace_wireguard())
    tb.create()
    try:
        model = vca.Model(str(base / "vca"), runner=tb.runner())
        report = pairs.bring_up(tb, model, local_charms)
        yield tb, model, report
    finally:
        tb.teardown()


@pytest.fixture
def pair(shared):
    tb, _model, report = shared
    return tb.vnfs["a"], tb.vnfs["b"], report


@pytest.fixture
def model(shared):
    return shared[1]


@pytest.fixture
def testbed(shared):
    return shared[0]

def test_peering_in_osm_order_gives_encrypted_tunnel(pair, model, testbed, tmp_path):
    a, b, report = pair
    assert all(pairs.handshakes(a, "wg-vpn")), "no handshake on a"
    assert all(pairs.handshakes(b, "wg-vpn-peer")), "no handshake on b"
    assert pairs.ping(a, pairs.A_SVC, pairs.B_SVC).returncode == 0
    assert pairs.ping(b, pairs.B_SVC, pairs.A_SVC).returncode == 0
    status, message = model.status("a/0")
    assert status == "active" and message.startswith("vpn: up"), message

    probe = "VPNAAS-PROBE-{}".format(os.getpid())
    path = str(tmp_path / "s6a.pcap")
    with capture.Capture(testbed.infra, testbed.port(a, pairs.LINK), path):
        capture.send_probe(a, pairs.A_SVC, pairs.B_SVC, probe)
        assert pairs.ping(a, pairs.A_SVC, pairs.B_SVC, count=2).returncode == 0
    verdict = capture.judge(path, probe, [51820])
    assert verdict["packets"] >= 4
    assert not verdict["plaintext_seen"]
    assert verdict["non_wireguard"] == []

    # The same probe between the underlay addresses IS visible: the capture can see plaintext.
    with capture.Capture(testbed.infra, testbed.port(a, pairs.LINK), path):
        capture.send_probe(a, a.address(pairs.LINK), b.address(pairs.LINK), probe)
    assert capture.judge(path, probe, [51820])["plaintext_seen"]


def test_rerunning_every_event_and_action_changes_nothing(pair, model, local_charms):
    a, b, _ = pair
    deadline = time.monotonic() + 60      # the first exchange agreed on both ends (pq-psk is on by default)
    while min(pq_psks(a, "wg-vpn")[1], pq_psks(b, "wg-vpn-peer")[1]) == 0 and time.monotonic() < deadline:
        time.sleep(1)
    before = (state_of(a), state_of(b), json.dumps(model.relation_data(0), sort_keys=True))
    psks = (pq_psks(a, "wg-vpn"), pq_psks(b, "wg-vpn-peer"))
    for unit in ("a/0", "b/0"):
        app = unit.split("/")[0]
        ep = "vpn" if app == "a" else "vpn-peer"
        for hook in ("config-changed", "update-status", "upgrade-charm", "start"):
            model.run_hook(unit, hook)
        model.run_hook(unit, ep, suffix="relation-changed", rid=0, remote=("b/0" if app == "a" else "a/0"))
        for action in ("generate-ssh-key", "verify-ssh-credentials", "tunnel-status"):
            assert model.run_action(unit, action).status == "completed", action
        model.settle()
    model.upgrade_charm("a", os.path.join(local_charms, "wireguard-proxy"))
    after = (state_of(a), state_of(b), json.dumps(model.relation_data(0), sort_keys=True))
    assert before == after
    # The preshared keys: unchanged, or renewed by pq-psk meanwhile (never reset by a rerun).
    for (key, renewals), (key_after, renewals_after) in zip(psks, (pq_psks(a, "wg-vpn"), pq_psks(b, "wg-vpn-peer"))):
        assert renewals > 0 and (key_after == key or renewals_after > renewals), (renewals, renewals_after)
    assert pairs.ping(a, pairs.A_SVC, pairs.B_SVC).returncode == 0


def test_no_secret_leaves_the_vnf(pair, model, testbed):
    a, b, _ = pair
    secrets = []
    for vnf in (a, b):
        for name in vnf.exec(["ls", "/etc/wireguard"]).stdout.split():
            if name.endswith(".key"):
                secrets.append(vnf.exec(["cat", "/etc/wireguard/" + name]).stdout.strip())
    for unit in ("a/0", "b/0"):
        with open(os.path.join(model.unit_state(unit)["dir"], "vpnaas", "id_vpnaas")) as f:
            secrets.append("".join(f.read().splitlines()[1:3]))   # the SSH key body
        model.run_action(unit, "tunnel-status")
    assert len(secrets) == 4 and all(len(s) > 20 for s in secrets)
    everything = model.dump()   # relation data, statuses, action results, every juju-log line
    for s in secrets:
        assert s not in everything


def test_ssh_commands_have_a_deadline_even_when_they_keep_printing(pair, model):
    a, _b, _ = pair
    keystore = ssh.KeyStore(os.path.join(model.unit_state("a/0")["dir"], "vpnaas"))
    target = ssh.Target(a.mgmt_ip, "root", connect_timeout=5)
    for command in ("sleep 30", "while :; do echo x; sleep 0.01; done"):
        # The session runs from the VCA's namespace, where the management network is. Only the
        # command is timed: the connection (key exchange, login) takes a loaded machine seconds.
        with netns_of(model):
            with ssh.Session(target, keystore) as session, pytest.raises(ssh.SshError, match="did not finish"):
                started = time.monotonic()
                session.run(command, timeout=1)
        assert time.monotonic() - started < 8, command


def test_ssh_stops_a_command_that_prints_more_than_a_report_can_be(pair, model):
    """A VNF that prints without end is stopped at the output cap, not buffered until the deadline."""
    a, _b, _ = pair
    keystore = ssh.KeyStore(os.path.join(model.unit_state("a/0")["dir"], "vpnaas"))
    with netns_of(model):
        with ssh.Session(ssh.Target(a.mgmt_ip, "root", connect_timeout=5), keystore) as session:
            session.max_output = 1024 * 1024
            started = time.monotonic()
            with pytest.raises(ssh.SshError, match="printed more than 1048576 bytes"):
                session.run("yes", timeout=60)
            assert time.monotonic() - started < 20
            # The session stays usable, and stderr comes back as its last bytes only.
            rc, out, err = session.run("head -c 200000 /dev/zero | tr '\\0' e >&2; echo ok", timeout=30)
    assert rc == 0 and out == "ok\n"
    assert err.startswith("[...]") and len(err) == len("[...]") + ssh.MAX_STDERR_KEPT and set(err[5:]) == {"e"}


def test_ssh_reads_all_output_even_when_the_exit_status_comes_first(pair, model):
    """sshd may send the exit status before it has sent the command's last output."""
    a, _b, _ = pair
    keystore = ssh.KeyStore(os.path.join(model.unit_state("a/0")["dir"], "vpnaas"))
    with netns_of(model):
        with ssh.Session(ssh.Target(a.mgmt_ip, "root", connect_timeout=5), keystore) as session:
            for _ in range(5):
                rc, out, _err = session.run("seq 1 100000; echo END", timeout=30)
                assert rc == 0 and out.endswith("99999\n100000\nEND\n") and out.count("\n") == 100001


def test_a_session_runs_in_the_vnfs_own_home_not_this_machines(pair, model):
    """bash started by sshd reads ~/.bashrc even for a command: with this machine's home, every
    session of the charms paid its .bashrc (pyenv's init here, ~100 ms and dozens of processes)."""
    a, _b, _ = pair
    keystore = ssh.KeyStore(os.path.join(model.unit_state("a/0")["dir"], "vpnaas"))
    with netns_of(model):
        with ssh.Session(ssh.Target(a.mgmt_ip, "root", connect_timeout=5), keystore) as session:
            rc, out, _err = session.run('printf "%s\\n" "$HOME"; cat ~/.bashrc', timeout=10)
    home, bashrc = out.split("\n", 1)
    assert rc == 0 and home == vnf_login.home(a.state_dir)
    assert home != os.path.expanduser("~root") and "case $- in *i*) ;; *) return ;; esac" in bashrc


def test_a_closed_session_leaves_no_transport_thread_behind(pair, model):
    """paramiko's close() does not wait for its transport thread; a hook that exits while that
    thread still runs can abort in the interpreter's finalization ("double free or corruption")."""
    a, _b, _ = pair
    keystore = ssh.KeyStore(os.path.join(model.unit_state("a/0")["dir"], "vpnaas"))
    before = set(threading.enumerate())
    with netns_of(model):
        for _ in range(5):
            with ssh.Session(ssh.Target(a.mgmt_ip, "root", connect_timeout=5), keystore) as session:
                assert session.run("true", timeout=10)[0] == 0
            assert [t for t in threading.enumerate() if t not in before and t.is_alive()] == []


def test_manual_peer_refuses_what_it_would_ignore_or_what_captures_the_vnf(pair, model, testbed, wg_key):
    a, _b, _ = pair
    peer_key = model.relation_data(0)["b/0"]["public-key"]
    routes_before = a.exec(["ip", "route", "show"]).stdout
    for params, fragment in (
            ({"public-key": peer_key, "allowed-ips": "10.9.0.0/24"}, "also announced by manual"),
            ({"public-key": wg_key(), "allowed-ips": pairs.B_SVC + "/32"}, "also claimed by manual"),
            ({"public-key": wg_key(), "allowed-ips": "0.0.0.0/0"}, "default route"),
            ({"public-key": wg_key(), "allowed-ips": testbed.vca_ip + "/32"}, "management path"),
            ({"public-key": wg_key(), "allowed-ips": pairs.CIDR}, "endpoint address 192.168.8.2"),
            ({"public-key": wg_key(), "allowed-ips": "192.168.8.192/26"}, "connected network 192.168.8.0/24"),
            ({"public-key": wg_key(), "allowed-ips": "10.9.0.0/24", "endpoint": "10.9.0.1:51820"},
             "WireGuard endpoint")):
        result = model.run_action("a/0", "add-peer", dict(params, device="vpn"))
        assert result.status == "failed" and fragment in result.message, (params, result.message)
    assert len(a.exec(["wg", "show", "wg-vpn", "peers"]).stdout.split()) == 1
    assert a.exec(["ip", "route", "show"]).stdout == routes_before


def test_manual_peer_add_and_remove(pair, model, wg_key):
    a, _b, _ = pair
    key = wg_key()
    bad = model.run_action("a/0", "add-peer", {"device": "vpn", "public-key": "x", "allowed-ips": "10.9.0.0/24"})
    assert bad.status == "failed" and "public-key" in bad.message
    ok = model.run_action("a/0", "add-peer", {"device": "vpn", "public-key": key, "endpoint": "203.0.113.7:51820",
                                              "allowed-ips": "10.9.0.0/24"})
    assert ok.status == "completed", ok.message
    assert key in a.exec(["wg", "show", "wg-vpn", "peers"]).stdout
    assert "10.9.0.0/24 dev wg-vpn" in a.exec(["ip", "route", "show"]).stdout
    gone = model.run_action("a/0", "remove-peer", {"device": "wg-vpn", "public-key": key})
    assert gone.status == "completed"
    assert key not in a.exec(["wg", "show", "wg-vpn", "peers"]).stdout
    assert "10.9.0.0/24" not in a.exec(["ip", "route", "show"]).stdout
    assert all(pairs.handshakes(a, "wg-vpn"))


def test_the_secret_audit_finds_nothing_after_a_real_run(pair, model, testbed):
    """The demo's secret audit over this pair's run: the keys read on both VNFs, searched in the
    VCA's databags, logs, action results and files; one key planted in a log is found."""
    a, b, _ = pair
    for unit in ("a/0", "b/0"):
        assert model.run_action(unit, "tunnel-status").status == "completed"
    audit = secretaudit.Audit(os.path.dirname(model.workdir))

    def held():   # the PSKs the two devices hold now (pq-psk's: on by default)
        return {line.split("\t")[1] for vnf, dev in ((a, "wg-vpn"), (b, "wg-vpn-peer"))
                for line in vnf.exec(["wg", "show", dev, "preshared-keys"]).stdout.splitlines()} - {"(none)"}
    psks = held()
    audit.collect({"a": a, "b": b}, {}, {"vca": model})
    psks |= held()        # a renewal may fall between the reads: the audit read one of these
    assert sorted(s.kind for s in audit.secrets if s.kind != secretaudit.PQ_PSK) == ["wireguard-private-key"] * 2
    collected = [s.value for s in audit.secrets if s.kind == secretaudit.PQ_PSK]
    assert psks and collected and set(collected) <= psks, "the audit did not search the PSKs the devices hold"
    fields = audit.finish()
    assert fields["pq_psk_secret_found_in"] == [] and not secretaudit.found_any(fields), fields
    assert fields["secret_audit"]["places_searched"] > 10 and fields["secret_audit"]["bytes_searched"] > 0
    assert fields["secret_audit"]["secrets"][secretaudit.PQ_PSK] == len(collected), fields["secret_audit"]
    planted = os.path.join(model.workdir, "planted.log")
    private = next(s for s in audit.secrets if s.kind == "wireguard-private-key")
    key = private.value
    with open(planted, "w") as f:
        f.write("2026-11-27 INFO {}\n    {}\n".format(key[:30], key[30:]))
    try:
        found = audit.finish()["secrets_found_in"]["wireguard-private-key"]
    finally:
        os.remove(planted)
    assert found == ["file/vca/planted.log: {} (exact)".format(private.label)]


def test_the_secret_audit_reads_real_preshared_keys(pair, model, tmp_path):
    """A PSK set with `wg set` on both ends (as the post-quantum mechanism installs it) is read
    back from real `wg show … preshared-keys`, searched once, and found where it is planted."""
    a, b, _ = pair
    psk = base64.b64encode(os.urandom(32)).decode()
    path = tmp_path / "psk"
    path.write_text(psk + "\n")
    os.chmod(str(path), 0o600)
    devices = ((a, "wg-vpn", b, "wg-vpn-peer"), (b, "wg-vpn-peer", a, "wg-vpn"))
    try:
        for vnf, dev, other, other_dev in devices:
            peer = other.exec(["wg", "show", other_dev, "public-key"]).stdout.strip()
            vnf.exec(["wg", "set", dev, "peer", peer, "preshared-key", str(path)])
        audit = secretaudit.Audit(os.path.dirname(model.workdir))
        audit.collect({"a": a, "b": b}, {}, {"vca": model})
        psks = [s for s in audit.secrets if s.kind == secretaudit.PQ_PSK]
        assert [s.value for s in psks] == [psk] and psks[0].label.count(" psk with ") == 2, psks
        assert audit.finish()["pq_psk_secret_found_in"] == []
        planted = os.path.join(model.workdir, "planted.json")
        with open(planted, "w") as f:
            f.write(json.dumps({"x": base64.b64encode(b"prefix" + base64.b64decode(psk) + b"suffix").decode()}))
        try:
            found = audit.finish()["pq_psk_secret_found_in"]
        finally:
            os.remove(planted)
        assert found == ["file/vca/planted.json: {} (base64 embedded)".format(psks[0].label)]
    finally:
        for vnf, dev, other, other_dev in devices:
            peer = other.exec(["wg", "show", other_dev, "public-key"]).stdout.strip()
            vnf.exec(["wg", "set", dev, "peer", peer, "preshared-key", "/dev/null"])
    assert pairs.ping(a, pairs.A_SVC, pairs.B_SVC).returncode == 0


def test_rotate_keys_is_followed_by_the_peer(pair, model):
    a, b, _ = pair
    old = model.relation_data(0)["a/0"]["public-key"]
    result = model.run_action("a/0", "rotate-keys", {"device": "vpn"})
    assert result.status == "completed", result.message
    new = model.relation_data(0)["a/0"]["public-key"]
    assert new != old and result.results["public-key-wg-vpn"] == new
    assert new in b.exec(["wg", "show", "wg-vpn-peer", "peers"]).stdout
    assert pairs.ping(b, pairs.B_SVC, pairs.A_SVC).returncode == 0


def test_repair_after_killed_wireguard_and_restarted_sshd(pair, model, testbed):
    a, b, _ = pair
    assert a.kill(os.path.basename(vim.userspace_wireguard())[:15]), "no wireguard-go process to kill"
    assert a.exec(["wg", "show", "wg-vpn"], check=False).returncode != 0
    testbed.restart_sshd(b)
    model.update_status()
    assert all(pairs.handshakes(b, "wg-vpn-peer"))
    assert pairs.ping(a, pairs.A_SVC, pairs.B_SVC).returncode == 0
    assert model.status("a/0")[0] == "active"


def test_changed_host_key_is_refused_until_reset(pair, model, testbed):
    a, _b, _ = pair
    key = os.path.join(a.state_dir, vnf_login.HOST_KEY)
    os.remove(key)
    os.remove(key + ".pub")
    vnf_login.new_host_key(a.state_dir)
    testbed.restart_sshd(a)
    model.run_hook("a/0", "update-status")
    status, message = model.status("a/0")
    assert status == "blocked" and "host key" in message and "reset-ssh-host-key" in message
    assert model.run_action("a/0", "reset-ssh-host-key").results["forgotten"] == "true"
    assert model.status("a/0")[0] == "active"


def test_departed_peer_is_removed_with_its_routes(pair, model):
    a, b, _ = pair
    model.remove_relation(0)
    for vnf, dev in ((a, "wg-vpn"), (b, "wg-vpn-peer")):
        assert vnf.exec(["wg", "show", dev], check=False).returncode != 0, "device still there"
        routes = vnf.exec(["ip", "-o", "route", "show"]).stdout
        assert pairs.B_SVC not in routes and pairs.A_SVC not in routes.replace("src " + pairs.A_SVC, "")
        assert "wg-" not in vnf.exec(["ls", "/etc/wireguard"]).stdout
    assert model.status("a/0")[1].startswith("ready, no tunnel related")

