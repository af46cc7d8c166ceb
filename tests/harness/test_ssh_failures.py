"""Every way the session to the VNF can fail, and the status each one gives: transient faults
wait (and clear by themselves at the next event), faults only the operator can fix block."""
import pytest
from harness_helpers import peer_data

UNREACHABLE = "VNF 10.0.0.5:22 unreachable: "


@pytest.fixture
def related(ready, vnf):
    ready.relate("vpn", "b/0", peer_data())
    assert ready.status.name == "active", ready.status
    return ready


def update_status(unit):
    unit.harness.charm.on.update_status.emit()
    return unit.status


@pytest.mark.parametrize("fault, kind, message", [
    ("timeout", "waiting", UNREACHABLE + "timed out"),
    ("refused", "waiting", UNREACHABLE + "[Errno 111] Connection refused"),
    ("banner", "waiting", "SSH to 10.0.0.5:22 failed: Error reading SSH protocol banner"),
    ("no-session", "waiting", "SSH to 10.0.0.5:22 failed: No existing session"),
    ("channel", "waiting", "SSH session to 10.0.0.5 broke: No existing session"),
    ("incompatible", "blocked", "SSH to 10.0.0.5:22 failed: Incompatible ssh peer (no acceptable host key)"),
])
def test_connection_faults(related, vnf, fault, kind, message):
    vnf.fault = fault
    status = update_status(related)
    assert (status.name, status.message) == (kind, message)
    vnf.fault = None
    status = update_status(related)
    assert status.name == "active" and status.message == "vpn: up, no handshake yet"


def test_refused_login_blocks(related, vnf):
    vnf.authorized_keys.clear()
    status = update_status(related)
    assert status.name == "blocked"
    assert status.message == ("SSH login as ubuntu on 10.0.0.5 refused (check ssh-username/ssh-password, or that "
                              "OSM injected the key from get-ssh-public-key)")


def test_changed_host_key_blocks_with_the_way_out(related, vnf):
    vnf.host_key = type(vnf.host_key).generate()
    status = update_status(related)
    assert status.name == "blocked" and status.message.endswith("run the reset-ssh-host-key action")
    assert vnf.devices["wg-vpn"].up        # nothing was sent to the impostor
    assert related.act("reset-ssh-host-key").results == {"forgotten": "true"}
    assert related.status.name == "active"


def test_sudo_that_wants_a_password_blocks(related, vnf):
    vnf.sudo_needs_password = True
    status = update_status(related)
    assert (status.name, status.message) == ("blocked", "ubuntu cannot run sudo without a password")


def test_root_login_needs_no_sudo(ready, vnf):
    vnf.users["root"] = "pw"
    vnf.sudo_needs_password = True
    ready.configure(**{"ssh-username": "root", "ssh-password": "pw"})
    assert ready.status.name == "active"
    assert not vnf.commands[-1].startswith("sudo")


def test_a_step_that_ends_early_blocks(related, vnf):
    vnf.kill_at = "apply_device"
    status = update_status(related)
    assert status.name == "blocked"
    assert status.message == "the remote step ended early (exit 137): bash: line 1: 4242 Killed"
    vnf.kill_at = None
    assert update_status(related).name == "active"


def test_a_step_that_never_finishes_is_stopped_by_the_deadline(related, vnf):
    vnf.hang = True
    status = update_status(related)
    assert (status.name, status.message) == ("waiting", "command on 10.0.0.5 did not finish within 120 s")


def test_a_failed_device_blocks_by_name_and_the_others_stay(ready, vnf):
    vnf.broken_devices["wg-vpn-peer"] = "wg-quick up wg-vpn-peer failed: RTNETLINK answers: Address in use"
    rel = ready.relate("vpn", "b/0", peer_data())
    other = ready.relate("vpn-peer", "c/0", peer_data(tunnel="10.9.1.1/30", service="172.16.1.1/32"))
    status = ready.status
    assert status.name == "blocked"
    assert status.message == ("vpn: up, no handshake yet, vpn-peer: failed: wg-quick up wg-vpn-peer failed: "
                              "RTNETLINK answers: Address in use")
    assert vnf.devices["wg-vpn"].up and vnf.routes["172.16.0.2/32"] == ("wg-vpn", "172.16.0.1")
    assert ready.published(rel)["public-key"] == vnf.devices["wg-vpn"].public_key
    # A failed step is not "applied": the next event tries again, and the unit recovers by itself.
    del vnf.broken_devices["wg-vpn-peer"]
    assert update_status(ready).name == "active"
    assert vnf.devices["wg-vpn-peer"].up
    assert ready.published(other)["public-key"] == vnf.devices["wg-vpn-peer"].public_key


def test_a_route_in_the_way_is_refused_on_the_vnf_and_shown(ready, vnf):
    vnf.foreign_routes["172.16.0.2/32"] = "172.16.0.2 via 192.168.8.1 dev eth1"
    ready.relate("vpn", "b/0", peer_data())
    assert ready.status.name == "blocked"
    assert ready.status.message == ("vpn: route 172.16.0.2/32 refused on the VNF: a route this charm did not "
                                    "create is in the way: 172.16.0.2 via 192.168.8.1 dev eth1, "
                                    "vpn: up, no handshake yet")
    assert "172.16.0.2/32" not in vnf.routes and vnf.routes["10.9.0.2/32"][0] == "wg-vpn"


def test_progress_is_shown_while_applying(related, vnf):
    update_status(related)
    assert ("maintenance", "applying 1 tunnel(s) on 10.0.0.5") in related.statuses
