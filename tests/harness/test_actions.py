"""Every action of the generic charm, run through Juju's dispatch against the fake VNF."""
import json
import os

import pytest
from fake_vnf import keypair
from harness_helpers import CONFIG, peer_data

TUNNEL_STEP = ["programs_check", "facts_guard", "tunnels_prepare", "service_addresses", "stage_routes", "pq_psk_apply",
               "remove_stale_devices", "qos_step", "pq_psk_apply", "metrics_apply", "report"]


def test_first_contact_learns_the_facts_then_applies_in_the_same_login(ready, vnf):
    # generate-ssh-key ran before the config (Waiting, VNF untouched); config-changed made the contact.
    # The first step stops at its facts guard (the charm knew no facts), the second applies.
    assert vnf.steps == [["programs_check", "facts_guard"], TUNNEL_STEP]
    assert vnf.logins == 1
    assert ready.status.name == "active" and ready.status.message == "ready, no tunnel related"
    facts = json.loads(ready.charm._stored.facts)
    assert facts["host"] == "10.0.0.5" and facts["facts"]["client"] == "10.20.0.9"
    # Known facts: later sessions go straight to the tunnel step.
    ready.harness.charm.on.update_status.emit()
    assert vnf.steps[-1] == TUNNEL_STEP and vnf.logins == 2


def test_unchanged_plan_does_not_contact_the_vnf(ready, vnf):
    rel = ready.relate("vpn", "b/0", peer_data())
    logins = vnf.logins
    ready.harness.update_relation_data(rel, "b/0", {"endpoint": "192.168.8.20:51821"})   # same value again
    ready.harness.charm.on["vpn"].relation_changed.emit(ready.harness.model.get_relation("vpn", rel),
                                                          ready.harness.model.get_app("b"),
                                                          ready.harness.model.get_unit("b/0"))
    assert vnf.logins == logins


def test_config_changed_checks_the_vnf_only_for_a_config_the_last_session_did_not_use(ready, vnf):
    # Juju gives every hook the current config: when a relation hook ran between `juju config`
    # and its config-changed, that hook's session already used this config.
    logins = vnf.logins
    ready.harness.charm.on.config_changed.emit()
    assert vnf.logins == logins
    assert ready.status.name == "active"
    # An option outside the plan (how to reach the VNF) is still a reason to look.
    ready.configure(**{"ssh-connect-timeout": 20})
    assert vnf.logins == logins + 1
    ready.harness.charm.on.config_changed.emit()
    assert vnf.logins == logins + 1
    # So is a new SSH key of the charm's (the VNF accepts it already: only the key changed).
    store = ready.charm.keystore
    os.remove(store.key_path)
    os.remove(store.key_path + ".pub")
    assert store.generate_key()
    vnf.authorize(store.public_key())
    ready.harness.charm.on.config_changed.emit()
    assert vnf.logins == logins + 2 and ready.status.name == "active"


def test_config_changed_after_a_failed_session_checks_again(ready, vnf):
    vnf.fault = "refused"
    ready.harness.charm.on.update_status.emit()
    assert ready.status.name == "waiting"
    vnf.fault = None
    logins = vnf.logins
    ready.harness.charm.on.config_changed.emit()
    assert vnf.logins == logins + 1 and ready.status.name == "active"


def test_generate_ssh_key_once_then_keeps_it(proxy, vnf):
    first = proxy.act("generate-ssh-key")
    assert first.results == {"generated": "true"} and first.failed is None
    key = proxy.act("get-ssh-public-key").results["pubkey"]
    assert key.startswith("ssh-ed25519 ") and key.endswith(" vpnaas-proxy")
    again = proxy.act("generate-ssh-key")
    assert again.results == {"generated": "false (a key already exists)"}
    assert proxy.act("get-ssh-public-key").results["pubkey"] == key
    assert vnf.logins == 0   # no ssh-hostname yet: nothing to contact
    assert proxy.status.name == "waiting" and "ssh-hostname" in proxy.status.message


def test_generate_ssh_key_repairs_a_half_written_pair(proxy):
    proxy.act("generate-ssh-key")
    store = proxy.charm.keystore
    key = proxy.act("get-ssh-public-key").results["pubkey"]
    os.remove(store.key_path + ".pub")          # a crash between the two writes of an old version
    repaired = proxy.act("generate-ssh-key")
    assert repaired.failed is None and repaired.results == {"generated": "false (a key already exists)"}
    with open(store.key_path + ".pub") as f:
        assert f.read().strip() == key
    open(store.key_path + ".pub", "w").close()  # empty public half: repaired on read too
    assert proxy.act("get-ssh-public-key").results["pubkey"] == key


def test_unreadable_private_key_fails_clearly(proxy):
    proxy.act("generate-ssh-key")
    store = proxy.charm.keystore
    os.remove(store.key_path + ".pub")
    with open(store.key_path, "w") as f:
        f.write("garbage")
    run = proxy.act("generate-ssh-key")
    assert run.failed.startswith("the charm's SSH key ") and "remove it and run generate-ssh-key" in run.failed


def test_get_ssh_public_key_without_a_key_fails(proxy):
    assert proxy.act("get-ssh-public-key").failed == "no SSH key yet: run the generate-ssh-key action"


def test_without_credentials_the_unit_is_blocked_until_a_key_is_generated_and_injected(proxy, vnf):
    proxy.configure(**CONFIG)
    assert proxy.status.name == "blocked"
    assert proxy.status.message == "no SSH credentials: run generate-ssh-key or set ssh-password"
    assert vnf.logins == 0
    proxy.act("generate-ssh-key")               # not injected yet: the VNF refuses it
    assert proxy.status.name == "blocked" and "SSH login as ubuntu on 10.0.0.5 refused" in proxy.status.message
    vnf.authorize(proxy.act("get-ssh-public-key").results["pubkey"])
    verified = proxy.act("verify-ssh-credentials")
    assert verified.results == {"verified": "true", "hostname": "vnf-a"}
    assert proxy.status.name == "active"


def test_password_login(proxy, vnf):
    proxy.configure(**dict(CONFIG, **{"ssh-password": "secret"}))
    assert proxy.status.name == "active" and vnf.logins == 1
    proxy.configure(**{"ssh-password": "wrong"})
    assert proxy.status.name == "blocked" and "refused" in proxy.status.message


def test_verify_ssh_credentials_answers_even_when_the_tunnel_config_is_blocked(ready, vnf):
    ready.configure(**{"vpn-listen-port": 51821})      # same port as vpn-peer
    ready.relate("vpn", "b/0", peer_data())
    ready.relate("vpn-peer", "c/0", peer_data(tunnel="10.9.1.1/30", service="172.16.1.1/32"))
    assert ready.status.name == "blocked" and ready.status.message.startswith("config: ")
    verified = ready.act("verify-ssh-credentials")
    assert verified.failed is None and verified.results == {"verified": "true", "hostname": "vnf-a"}


def test_verify_ssh_credentials_fails_when_the_login_is_refused(ready, vnf):
    vnf.authorized_keys.clear()
    run = ready.act("verify-ssh-credentials")
    assert run.failed.startswith("not verified: SSH login as ubuntu on 10.0.0.5 refused")
    assert "verified" not in run.results


def test_run_returns_output_errors_and_return_code(ready, vnf):
    vnf.answers["uname -r"] = (0, "5.4.0-150-generic\n", "")
    ok = ready.act("run", command="uname -r")
    assert ok.failed is None
    assert ok.results == {"output": "5.4.0-150-generic\n", "errors": "", "return-code": "0"}
    assert vnf.commands[-2] == "uname -r"   # as typed, as the login user (then the closing reconcile)


def test_run_failure_keeps_the_output_and_fails_with_the_last_error_line(ready, vnf):
    vnf.answers["ls /nope"] = (2, "", "ls: cannot access '/nope': No such file or directory\n")
    run = ready.act("run", command="ls /nope")
    assert run.results["return-code"] == "2" and run.results["errors"].startswith("ls: cannot access")
    assert run.failed == "command exited with 2: ls: cannot access '/nope': No such file or directory"


def test_run_refuses_an_empty_command_without_contacting_the_vnf(ready, vnf):
    logins = vnf.logins
    assert ready.act("run", command="  ").failed == "command is empty"
    assert vnf.logins == logins


def test_run_reports_an_unreachable_vnf(ready, vnf):
    vnf.fault = "timeout"
    run = ready.act("run", command="hostname")
    assert run.failed == "VNF 10.0.0.5:22 unreachable: timed out" and run.results == {}


def test_run_without_ssh_hostname(proxy):
    proxy.act("generate-ssh-key")
    assert proxy.act("run", command="hostname").failed == "ssh-hostname is not set"


def test_reset_ssh_host_key_after_a_rebuild(ready, vnf):
    assert ready.act("reset-ssh-host-key").results == {"forgotten": "true"}   # re-pinned right away
    vnf.rebuild()
    vnf.authorize(ready.charm.keystore.public_key())
    ready.harness.charm.on.update_status.emit()
    assert ready.status.name == "blocked"
    assert ready.status.message == ("host key of 10.0.0.5 changed since it was pinned; if the VNF was rebuilt, "
                                    "run the reset-ssh-host-key action")
    logins = vnf.logins
    reset = ready.act("reset-ssh-host-key")
    assert reset.results == {"forgotten": "true"} and reset.failed is None
    assert vnf.logins == logins + 1 and ready.status.name == "active"


def test_reset_ssh_host_key_with_nothing_pinned(proxy):
    assert proxy.act("reset-ssh-host-key").results == {"forgotten": "false (no pinned key)"}


def test_tunnel_status_reports_every_device(ready, vnf):
    _, key = keypair()
    ready.relate("vpn", "b/0", peer_data(key))
    vnf.handshakes[key] = vnf.now - 7
    run = ready.act("tunnel-status")
    assert run.failed is None
    (tunnel,) = json.loads(run.results["tunnels"])
    assert tunnel["device"] == "wg-vpn" and tunnel["up"] is True
    assert tunnel["public-key"] == vnf.devices["wg-vpn"].public_key
    assert tunnel["peers"][0]["public-key"] == key and tunnel["peers"][0]["latest-handshake-age"] == 7
    assert tunnel["peers"][0]["allowed-ips"] == ["10.9.0.2/32", "172.16.0.2/32"]
    assert run.results["implementation"] == "kernel"
    assert tunnel["implementation"] == "kernel 1.0"   # the device's own (vpn-implementation)
    assert run.results["status"] == "vpn: up, handshake 7s ago" == ready.status.message


def test_tunnel_status_fails_when_the_vnf_cannot_be_reached(ready, vnf):
    vnf.fault = "refused"
    run = ready.act("tunnel-status")
    assert run.failed.startswith("VNF 10.0.0.5:22 unreachable: ")
    assert ready.status.name == "waiting"


def add_peer(unit, key=None, **params):
    return unit.act("add-peer", **dict({"device": "vpn", "public-key": key or keypair()[1],
                                        "allowed-ips": "172.16.9.0/24"}, **params))


def test_add_peer_applies_the_peer_and_answers_with_the_device_key(ready, vnf):
    _, key = keypair()
    run = add_peer(ready, key, endpoint="203.0.113.7:51820")
    assert run.failed is None
    assert run.results["device"] == "wg-vpn"
    assert run.results["public-key-wg-vpn"] == vnf.devices["wg-vpn"].public_key
    assert vnf.allowed_ips("wg-vpn") == {key: ["172.16.9.0/24"]}
    assert vnf.devices["wg-vpn"].peers[0]["endpoint"] == "203.0.113.7:51820"
    assert vnf.routes["172.16.9.0/24"] == ("wg-vpn", "172.16.0.1")
    # The same parameters again change nothing (idempotent); "wg-vpn" names the device too. Other
    # addresses for the same key are refused: tests/harness/test_manual_peer_trust.py.
    again = add_peer(ready, key, device="wg-vpn", endpoint="203.0.113.7:51820")
    assert again.failed is None and vnf.allowed_ips("wg-vpn") == {key: ["172.16.9.0/24"]}


@pytest.mark.parametrize("params, reason", [
    ({"allowed-ips": "0.0.0.0/0"}, "refused 0.0.0.0/0 from manual on wg-vpn: a default route"),
    ({"allowed-ips": "10.20.0.9/32"},
     "refused 10.20.0.9/32 from manual on wg-vpn: it overlaps the management path to the charm (10.20.0.9)"),
    ({"allowed-ips": "192.168.8.128/25"},
     "refused 192.168.8.128/25 from manual on wg-vpn: it overlaps this VNF's connected network 192.168.8.0/24"),
    ({"allowed-ips": "10.0.0.254/32"},
     "refused 10.0.0.254/32 from manual on wg-vpn: it overlaps this VNF's default gateway 10.0.0.254"),
    ({"allowed-ips": "203.0.113.7/32", "endpoint": "203.0.113.7:51820"},
     "refused 203.0.113.7/32 from manual on wg-vpn: it contains the peer's own WireGuard endpoint 203.0.113.7"),
])
def test_add_peer_refused_by_the_route_policy_changes_nothing(ready, vnf, params, reason):
    assert add_peer(ready).failed is None
    before = vnf.allowed_ips("wg-vpn")
    stored = ready.charm._stored.manual_peers
    run = add_peer(ready, **params)
    assert run.failed == reason
    assert ready.charm._stored.manual_peers == stored and vnf.allowed_ips("wg-vpn") == before


def test_add_peer_refuses_another_peers_prefix(ready, vnf):
    assert add_peer(ready).failed is None
    run = add_peer(ready, **{"allowed-ips": "172.16.9.128/25"})
    assert run.failed.startswith("refused 172.16.9.128/25 from manual on wg-vpn: also claimed by manual on wg-vpn")
    other_device = add_peer(ready, device="vpn-peer", **{"allowed-ips": "172.16.9.7/32"})
    assert other_device.failed.startswith("refused 172.16.9.7/32 from manual on wg-vpn-peer: also claimed by")
    assert "wg-vpn-peer" not in vnf.devices
    _, key = keypair()
    ready.relate("vpn", "b/0", peer_data(key))
    related = add_peer(ready, **{"allowed-ips": "172.16.0.2/32"})
    assert related.failed == "refused 172.16.0.2/32 from b/0 on wg-vpn: also claimed by manual on wg-vpn"
    # ... and from another device: an add-peer never takes a working tunnel's prefix away.
    related = add_peer(ready, device="vpn-peer", **{"allowed-ips": "172.16.0.2/32"})
    assert related.failed == "refused 172.16.0.2/32 from b/0 on wg-vpn: also claimed by manual on wg-vpn-peer"
    assert vnf.allowed_ips("wg-vpn")[key] == ["10.9.0.2/32", "172.16.0.2/32"]
    assert ready.status.name == "active"


def test_add_peer_refuses_invalid_input_without_contacting_the_vnf(ready, vnf):
    logins = vnf.logins
    assert add_peer(ready, key="not-a-key").failed.startswith("public-key: ")
    assert add_peer(ready, device="s6a").failed.startswith("device: s6a is not one of this charm's tunnel endpoints")
    assert add_peer(ready, **{"allowed-ips": "10.1.1.1/32\nPostUp = reboot"}).failed.startswith("allowed-ips: ")
    assert add_peer(ready, endpoint="host name:1").failed.startswith("endpoint: ")
    assert vnf.logins == logins and ready.charm._stored.manual_peers == "{}"


def test_add_peer_when_the_vnf_is_down_is_stored_and_applied_later(ready, vnf):
    vnf.fault = "timeout"
    _, key = keypair()
    run = add_peer(ready, key)
    assert run.failed == "stored; not applied on the VNF yet: VNF 10.0.0.5:22 unreachable: timed out"
    vnf.fault = None
    ready.harness.charm.on.update_status.emit()
    assert vnf.allowed_ips("wg-vpn") == {key: ["172.16.9.0/24"]}


def test_remove_peer(ready, vnf):
    _, kept = keypair()
    _, gone = keypair()
    add_peer(ready, kept)
    add_peer(ready, gone, **{"allowed-ips": "172.16.10.1/32"})
    run = ready.act("remove-peer", device="wg-vpn", **{"public-key": gone})
    assert run.failed is None and run.results["device"] == "wg-vpn"
    assert vnf.allowed_ips("wg-vpn") == {kept: ["172.16.9.0/24"]}
    assert "172.16.10.1/32" not in vnf.routes
    unknown = ready.act("remove-peer", device="vpn", **{"public-key": gone})
    assert unknown.failed == "no manual peer with that key on wg-vpn"
    assert ready.act("remove-peer", device="vpn", **{"public-key": "x"}).failed.startswith("public-key: ")
    # The last peer of a device without relations: the device goes away.
    assert ready.act("remove-peer", device="vpn", **{"public-key": kept}).failed is None
    assert "wg-vpn" not in vnf.devices and ready.status.message == "ready, no tunnel related"


def test_restart_tunnels_restarts_every_device(ready, vnf):
    ready.relate("vpn", "b/0", peer_data())
    add_peer(ready, device="vpn-peer", **{"allowed-ips": "172.16.11.1/32"})
    starts = {name: dev.starts for name, dev in vnf.devices.items()}
    ready.harness.charm.on.update_status.emit()          # a plain reconcile syncs, never restarts
    assert {name: dev.starts for name, dev in vnf.devices.items()} == starts
    run = ready.act("restart-tunnels")
    assert run.failed is None and run.results["status"] == ready.status.message
    assert {name: dev.starts for name, dev in vnf.devices.items()} == {n: s + 1 for n, s in starts.items()}


def test_rotate_keys_of_every_device_republishes(ready, vnf):
    rel = ready.relate("vpn", "b/0", peer_data())
    add_peer(ready, device="vpn-peer", **{"allowed-ips": "172.16.11.1/32"})
    old = {name: dev.public_key for name, dev in vnf.devices.items()}
    run = ready.act("rotate-keys")
    assert run.failed is None
    new = {name: dev.public_key for name, dev in vnf.devices.items()}
    assert set(new) == {"wg-vpn", "wg-vpn-peer"} and all(new[n] != old[n] for n in new)
    assert run.results["public-key-wg-vpn"] == new["wg-vpn"]
    assert run.results["public-key-wg-vpn-peer"] == new["wg-vpn-peer"]
    assert ready.published(rel)["public-key"] == new["wg-vpn"]


@pytest.mark.parametrize("device", ["vpn", "wg-vpn"])
def test_rotate_keys_of_one_device(ready, vnf, device):
    ready.relate("vpn", "b/0", peer_data())
    add_peer(ready, device="vpn-peer", **{"allowed-ips": "172.16.11.1/32"})
    old = {name: dev.public_key for name, dev in vnf.devices.items()}
    run = ready.act("rotate-keys", device=device)
    assert run.failed is None
    assert vnf.devices["wg-vpn"].public_key != old["wg-vpn"]
    assert vnf.devices["wg-vpn-peer"].public_key == old["wg-vpn-peer"]


def test_rotate_keys_refuses_a_device_that_is_not_there(ready, vnf):
    ready.relate("vpn", "b/0", peer_data())
    old = vnf.devices["wg-vpn"].public_key
    assert ready.act("rotate-keys", device="vpn-peer").failed == \
        "wg-vpn-peer is not an active tunnel device here (wg-vpn)"
    assert ready.act("rotate-keys", device="bad name").failed.startswith("device: ")
    assert vnf.devices["wg-vpn"].public_key == old


def test_verify_after_the_config_session_is_one_login_that_changes_nothing(ready, vnf):
    # OSM asks right after `config`, whose config-changed session already applied everything.
    steps, logins = len(vnf.steps), vnf.logins
    verified = ready.act("verify-ssh-credentials")
    assert verified.failed is None and verified.results == {"verified": "true", "hostname": "vnf-a"}
    assert vnf.logins == logins + 1 and len(vnf.steps) == steps and vnf.commands[-1] == "hostname"
    assert ready.status.name == "active"


def test_verify_applies_what_is_pending_in_its_one_login(ready, vnf):
    vnf.fault = "refused"
    ready.relate("vpn", "b/0", peer_data())          # the VNF refused that hook's session
    assert ready.status.name == "waiting"
    vnf.fault = None
    logins = vnf.logins
    verified = ready.act("verify-ssh-credentials")
    assert verified.failed is None and verified.results == {"verified": "true", "hostname": "vnf-a"}
    assert vnf.logins == logins + 1 and vnf.steps[-1] == TUNNEL_STEP[:6] + ["apply_device"] + TUNNEL_STEP[6:]
    assert vnf.devices["wg-vpn"].peers and ready.status.name == "active"


def test_a_first_contact_that_needs_a_program_is_two_steps_in_one_login(proxy, vnf):
    """The VNF says which shipped program it lacks before its facts are judged: the facts and the
    NEED come in one answer, the charm installs on a second channel of the same login, and the
    next step applies. Nothing was applied by the first step."""
    proxy.act("generate-ssh-key")
    vnf.authorize(proxy.charm.keystore.public_key())
    proxy.relate("vpn", "b/0", peer_data())
    proxy.configure(**CONFIG)
    assert vnf.logins == 1 and vnf.installs == ["pq-psk"]
    assert vnf.steps == [["programs_check", "facts_guard"], TUNNEL_STEP[:6] + ["apply_device"] + TUNNEL_STEP[6:]]
    assert vnf.devices["wg-vpn"].peers and proxy.status.name == "active"
