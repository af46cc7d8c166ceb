"""The charm's side of pq-psk: the capability it publishes, the peers whose preshared key the VNF's
sync leaves to the daemon, the daemon's file, and the status line that says a tunnel is classical
only (never a silent downgrade)."""

import os
import shutil
import subprocess

import pytest
from fake_vnf import keypair
from harness_helpers import peer_data, ship_pq_psk

from vpnaas.core import wgconfig
from vpnaas.vnf import dataplane

CLASSICAL = "vpn: tunnel to b/0 is classical only: the peer has no pq-psk"


def test_a_peer_of_this_release_gets_a_managed_psk(ready, vnf):
    _, key = keypair()
    rel = ready.relate("vpn", "b/0", peer_data(key))
    assert ready.published(rel)["pq-psk"] == "1"
    (dev,) = ready.charm.build_plan().devices
    body = wgconfig.render_body(dev)
    assert wgconfig.PQ_PSK_MARK in body.split("PublicKey = " + key, 1)[1].split("[Peer]")[0]
    pq = wgconfig.render_pq_psk(dev).splitlines()
    assert pq[1:] == ["device wg-vpn", "listen 10.9.0.1:{}".format(wgconfig.PQ_PSK_PORT), "interval 120",
                      "peer {} 10.9.0.2".format(key)]
    assert CLASSICAL not in ready.status.message


def test_a_peer_without_the_capability_is_classical_and_said_so(ready, vnf):
    _, key = keypair()
    ready.relate("vpn", "b/0", peer_data(key, pq_psk=False))
    (dev,) = ready.charm.build_plan().devices
    assert wgconfig.PQ_PSK_MARK not in wgconfig.render_body(dev)
    assert "peer " not in wgconfig.render_pq_psk(dev)
    assert CLASSICAL in ready.status.message and ready.status.name == "active"


def test_pq_psk_off_is_classical_without_a_note(ready, vnf):
    ready.configure(**{"vpn-pq-psk": False, "pq-psk-renewal-seconds": 30})
    rel = ready.relate("vpn", "b/0", peer_data(keypair()[1], pq_psk=False))
    assert ready.published(rel).get("pq-psk", "") == ""
    (dev,) = ready.charm.build_plan().devices
    assert wgconfig.render_pq_psk(dev) == "" and "classical" not in ready.status.message


def test_renewal_bounds_and_hostile_values(ready, vnf):
    for bad in (9, 86401, 0, -120):
        ready.configure(**{"pq-psk-renewal-seconds": bad})
        assert ready.status.name == "blocked" and "pq-psk-renewal-seconds" in ready.status.message
    ready.configure(**{"pq-psk-renewal-seconds": 10})
    assert ready.status.name != "blocked"
    rel = ready.relate("vpn", "b/0", dict(peer_data(keypair()[1]), **{"pq-psk": "1\nx"}))
    assert ready.status.name == "blocked" and "pq-psk" in ready.status.message
    assert ready.published(rel)["pq-psk"] == "1"


def test_a_later_protocol_counts_as_none(ready, vnf):
    ready.relate("vpn", "b/0", dict(peer_data(keypair()[1]), **{"pq-psk": "2"}))
    assert CLASSICAL in ready.status.message


@pytest.fixture
def shipped(tmp_path, monkeypatch):
    """A charm folder that ships pq-psk (any bytes: the fake VNF checks only their digest)."""
    ship_pq_psk(tmp_path, monkeypatch)


def test_not_shipped_is_said_and_the_tunnel_is_classical(ready, vnf, tmp_path, monkeypatch):
    folder = tmp_path / "nothing"
    folder.mkdir()
    monkeypatch.setattr(dataplane, "charm_folder", lambda _charm_dir: str(folder))
    rel = ready.relate("vpn", "b/0", peer_data(keypair()[1]))
    assert "vpn: tunnels are classical only: pq-psk is not shipped with this charm" in ready.status.message
    assert ready.published(rel).get("pq-psk", "") == "" and vnf.pq_files == {}
    assert vnf.devices["wg-vpn"].up and ready.status.name == "active"


def test_the_vnf_gets_the_daemon_and_its_file(ready, vnf, shipped):
    _, key = keypair()
    ready.relate("vpn", "b/0", peer_data(key))
    assert "pq-psk" in vnf.programs, "the charm ships pq-psk and the VNF asked for it (NEED)"
    own = vnf.devices["wg-vpn"].public_key
    assert vnf.pq_files["wg-vpn"].splitlines()[1:] == [
        "device wg-vpn", "listen 10.9.0.1:{}".format(wgconfig.PQ_PSK_PORT), "interval 120",
        "peer {} 10.9.0.2".format(key), "public {}".format(own)]
    ready.configure(**{"vpn-pq-psk": False})
    assert vnf.pq_files == {}


def test_turning_pq_psk_off_withdraws_the_capability(ready, vnf):
    rel = ready.relate("vpn", "b/0", peer_data(keypair()[1]))
    assert ready.published(rel)["pq-psk"] == "1"
    ready.configure(**{"vpn-pq-psk": False})
    assert ready.published(rel).get("pq-psk", "") == ""


def test_a_peer_withdrawing_the_capability_is_not_skipped_by_the_hook_gate(ready, vnf):
    _, key = keypair()
    rel = ready.relate("vpn", "b/0", peer_data(key))
    assert CLASSICAL not in ready.status.message
    assert "pq-psk" in ready.charm.cache_fields()
    ready.harness.update_relation_data(rel, "b/0", {"pq-psk": ""})
    assert CLASSICAL in ready.status.message
    (dev,) = ready.charm.build_plan().devices
    assert wgconfig.PQ_PSK_MARK not in wgconfig.render_body(dev)


def test_the_capability_is_published_only_once_the_vnf_said_the_daemon_runs(ready, vnf):
    """A daemon that does not start: no capability (the peer stays classical and says so), the
    reason in the status, and the next hook tries again; once it runs, the capability follows."""
    vnf.pq_psk_fails = "no such device"
    rel = ready.relate("vpn", "b/0", peer_data(keypair()[1]))
    assert ready.published(rel).get("pq-psk", "") == ""
    assert "pq-psk failed: the pq-psk daemon exited at its start: no such device" in ready.status.message
    assert ready.charm._stored.applied == ""     # not taken as applied: the next hook contacts the VNF
    vnf.pq_psk_fails = ""
    ready.harness.charm.on.update_status.emit()
    assert ready.published(rel)["pq-psk"] == "1" and "pq-psk failed" not in ready.status.message
    ready.configure(**{"vpn-pq-psk": False})     # off: the capability is withdrawn with the daemon
    assert ready.published(rel).get("pq-psk", "") == ""


VNF_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                       "charms", "vpnaas", "vnf")


def step_report(tmp_path, status_lines):
    """The real step's report (tunnels/pqpsk.sh `pq_psk_report`, under mawk, the VNFs' awk) over a
    daemon status file in the daemon's format (pqpsk/state.go `States.line`)."""
    state = tmp_path / "pq-state"
    state.mkdir()
    (state / "wg-vpn.status").write_text("device wg-vpn refusals 0\n" + "\n".join(status_lines) + "\n")
    bindir = tmp_path / "mawk-bin"
    bindir.mkdir()
    (bindir / "awk").symlink_to(shutil.which("mawk"))
    run = subprocess.run(["bash", "-c", 'set -euo pipefail; source "$3/lib.sh"; source "$3/tunnels/pqpsk.sh"; '
                          'PATH=$2:$PATH; [ "$(command -v awk)" = "$2/awk" ]; PQ_PSK_STATE=$1; pq_psk_report',
                          "/dev/null", str(state), str(bindir), VNF_DIR],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=20)
    assert run.returncode == 0, run.stderr
    return run.stdout.splitlines()


def daemon_line(key, state, epoch):
    return ("peer wg-vpn {} role initiator mechanism ML-KEM-768 state {} epoch {} renewals 0 last 0 refusals 0 "
            "failures 3 reason unreachable").format(key, state, epoch)


def test_a_failing_exchange_in_the_steps_report_reaches_the_status(ready, vnf, tmp_path):
    """A peer that advertises pq-psk but whose exchanges fail is never a silent downgrade: the
    real report's PQPEER line becomes the status note; once the exchange completes, it is gone."""
    _, key = keypair()
    ready.relate("vpn", "b/0", peer_data(key))
    vnf.pq_report = step_report(tmp_path, [daemon_line(key, "failing", 0)])
    assert vnf.pq_report and vnf.pq_report[0].startswith("PQPEER wg-vpn " + key + " failing ")
    ready.harness.charm.on.update_status.emit()
    assert "vpn: pq-psk with b/0 does not complete (classical only)" in ready.status.message
    (tmp_path / "later").mkdir()
    vnf.pq_report = step_report(tmp_path / "later", [daemon_line(key, "failing", 7)])
    ready.harness.charm.on.update_status.emit()
    assert "vpn: pq-psk with b/0 does not complete (on the PSK of epoch 7)" in ready.status.message
    (tmp_path / "ok").mkdir()
    vnf.pq_report = step_report(tmp_path / "ok", [daemon_line(key, "ok", 8)])
    ready.harness.charm.on.update_status.emit()
    assert "does not complete" not in ready.status.message
