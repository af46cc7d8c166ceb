"""Spokes join a hub while an existing spoke pings it at 1,000 echoes a second: not one echo is
lost, and the hub's steps add each new peer with `wg set` alone, never touching the peers it
had (a whole `wg syncconf` re-inserts every peer's allowed IPs; an echo in between is lost).
The built charms through the emulated OSM and Juju, real OpenSSH, real wireguard-go; `wg` is
traced inside the hub VNF's own mount namespace. The same join converges when the hub's unit agent
restarts in the middle of a hook and when Juju drops one of its commits, with one SSH login per
session the charms opened."""
import time

import pytest

from testbed import convergence, spokejoin
from testbed.emulators import faults, vim

pytestmark = pytest.mark.timeout(600)

TRACE = "/run/wireguard/wg-trace.log"
PQ_STATUS = "/run/wireguard/vpnaas-pq-psk/wg-vpn.status"
PQ_LOG = "/run/wireguard/vpnaas-pq-psk.log"
#: pq-psk-renewal-seconds as the star leaves it (the charms' default); a renewal falls 0.9-1.0 x it
#: after the last.
RENEWAL_SECONDS = 120
WRAPPER = "#!/bin/sh\necho \"$*\" >> " + TRACE + "\nexec /usr/bin/wg \"$@\"\n"


def _trace_wg(vnf):
    """Every `wg` the charm's steps run on ``vnf`` is logged first (PATH puts /usr/local/sbin
    before /usr/bin; the mount is the VNF's own)."""
    vnf.exec(["mount", "-t", "tmpfs", "tmpfs", "/usr/local/sbin"])
    vnf.exec(["sh", "-c", 'printf "%s" "$1" > /usr/local/sbin/wg && chmod 755 /usr/local/sbin/wg', "x", WRAPPER])


def _pq_renewals(vnf):
    """{peer key: renewals} of the hub's wg-vpn as its pq-psk daemon counts them (status file)."""
    out = vnf.exec(["cat", PQ_STATUS], check=False).stdout
    return {w[2]: int(w[12]) for w in (line.split() for line in out.splitlines()) if len(w) == 21 and w[0] == "peer"}


def _wait_pq_renewed(vnf, peers, timeout=60):
    """Until the daemon agreed a key with each of ``peers``: its first exchanges are not a join's."""
    deadline = time.monotonic() + timeout
    while True:
        renewals = _pq_renewals(vnf)
        if all(renewals.get(p, 0) >= 1 for p in peers):
            return renewals
        assert time.monotonic() < deadline, "no post-quantum PSK with the existing spokes: {}".format(renewals)
        time.sleep(0.2)


def test_no_echo_of_an_existing_spoke_is_lost_while_spokes_join(environment_ready, local_charms, tmp_path):
    runner = convergence.Runner(local_charms, str(tmp_path), vim.userspace_wireguard(), 1)
    star = convergence.Star(runner, 2)
    try:
        star.up()
        hub = star.tb.vnfs["hub"]
        before = {line.split("\t")[0] for line in hub.wg_show("wg-vpn", "dump").splitlines()[1:]}
        assert len(before) == 2
        renewed_before = _wait_pq_renewed(hub, before)
        _trace_wg(hub)
        logged = len(hub.exec(["cat", PQ_LOG]).stdout.splitlines())
        began = time.monotonic()
        result = spokejoin.join(star, 4)
        window = time.monotonic() - began
        trace = hub.exec(["cat", TRACE]).stdout.splitlines()
        daemon_log = hub.exec(["cat", PQ_LOG]).stdout.splitlines()[logged:]
        renewed_after = _pq_renewals(hub)
        after = {line.split("\t")[0] for line in hub.wg_show("wg-vpn", "dump").splitlines()[1:]}
    finally:
        star.down()
    assert result["probe"]["sent"] > 1000 and result["lost"] == 0, result
    assert len(after) == 6 and before < after
    changes = [line for line in trace if line.split()[:1] in (["set"], ["syncconf"], ["setconf"], ["addconf"])]
    assert changes and all(line.startswith("set wg-vpn ") for line in changes), changes
    # The VNF step's `wg` touches the joining spokes' peers alone. The pq-psk daemon sets PSKs in
    # process (wgctrl, never through `wg`): its periodic renewal of an existing spoke's key may fall
    # in the join, but no more often than its schedule allows (no renewal of every peer because the
    # hub's file changed), and it puts no key back and clears none (the step never took one away).
    touched = {word for line in changes for word in line.split() if word in after}
    for peer in before:
        renewed = renewed_after.get(peer, 0) - renewed_before[peer]
        assert 0 <= renewed <= 1 + int(window / (0.9 * RENEWAL_SECONDS)), (peer, window, renewed_before, renewed_after)
    put_back = [line for line in daemon_log if ("put the agreed PSK back" in line or "cleared the PSK" in line)
                and any(peer in line for peer in before)]
    assert not put_back, put_back
    assert touched == after - before, "only the joining spokes' peers were set"


def test_a_killed_hub_hook_and_a_dropped_commit_still_converge_with_one_login_per_session(
        environment_ready, local_charms, tmp_path, monkeypatch):
    """The repair-from-state property with the relation memory: the hub's first hook about a new
    spoke is killed when it publishes (the VNF already holds the new peer; nothing the hook wrote
    reaches Juju, nor its memory), and the commit of its retry is refused (the memory says what
    the unit asked Juju to hold; Juju holds the old data). Each retry repairs from what the VNF and
    Juju hold: every tunnel handshakes, not one echo of s1 is lost, and every session the charms
    opened is one sshd login."""
    monkeypatch.setenv(faults.RETRY_MIN_ENV, "1")      # Juju's first retry after 5 s: 1 s here
    runner = convergence.Runner(local_charms, str(tmp_path), vim.userspace_wireguard(), 1)
    star = convergence.Star(runner, 2)
    try:
        star.up()
        star.model.faults.kill_hooks("hub/0", tool="relation-set")
        star.model.faults.fail_commits("hub/0", 1, hook="relation-joined")
        result = spokejoin.join(star, 2)
        star.model.settle()
        injected = dict(star.model.faults.injected)
        errors = [(e.hook, e.why) for e in star.model.hook_errors if e.unit == "hub/0"]
        runs = list(star.model.hook_log)
        logins = sum(convergence.sshd_logins(v) for v in star.tb.vnfs.values())
        keys = {name: star.tb.vnfs[name].wg_show(dev, "public-key").strip()
                for name, dev in (("hub", "wg-vpn"), ("s3", "wg-vpn-peer"), ("s4", "wg-vpn-peer"))}
        hub_peers = set(star.tb.vnfs["hub"].wg_show("wg-vpn", "peers").split())
    finally:
        star.down()
    assert injected.get("agent-restart") == 1 and injected.get("commit-failure") == 1, injected
    assert sorted(why for _hook, why in errors) == ["agent restarted", "commit refused"], errors
    assert result["lost"] == 0 and result["probe"]["sent"] > 1000, result
    assert {keys["s3"], keys["s4"]} <= hub_peers
    sessions = sum(convergence.opened_session(r) + convergence.opened_session(r, convergence.VERIFY_SESSION)
                   for r in runs)
    assert sessions > 0 and logins == sessions, (logins, sessions)
