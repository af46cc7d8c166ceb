"""A VNF healed by OSM 19 (LCM ``heal_N2VC``: the same unit, a re-created VM) brought back by the
charm: the VM behind ``ssh-hostname`` has a new host key, no SSH key of the charm until OSM
injects it again, no WireGuard key, device or route. What OSM runs on the kept unit, in LCM 19's
order: ``generate-ssh-key``, ``get-ssh-public-key``, the key injected; with ``--run-day1`` (and
a day-1 heal can map) ``config`` -- unchanged, so no config-changed -- and
``verify-ssh-credentials``; without it nothing more (docs/lifecycle.md "Heal").

The host key is accepted only after generate-ssh-key (Juju's word, not the network's), once, at
the next login that succeeds (docs/security.md "A VNF re-provisioned by OSM")."""
import json
import logging

import pytest
from harness_helpers import keypair, peer_data

from vpnaas.vnf import ssh


@pytest.fixture
def tunnel(ready, vnf):
    _, key = keypair()
    rel = ready.relate("vpn", "b/0", peer_data(key))
    assert ready.status.name == "active" and vnf.devices["wg-vpn"].up
    return rel


def pinned(unit):
    return unit.charm.keystore.pinned("10.0.0.5", 22)


def osm_heal_up_to_the_key_injection(unit, vnf):
    """heal_RO, then heal_N2VC's key block (ns.py heal_N2VC, get_ee_ssh_public__key,
    wait_vm_up_insert_key_ro)."""
    vnf.rebuild()
    generated = unit.act("generate-ssh-key")
    key = unit.act("get-ssh-public-key").results["pubkey"]
    vnf.authorize(key)
    return generated


def test_heal_without_day1_needs_one_action_and_the_peers_get_the_new_key(ready, vnf, tunnel, caplog):
    old_pin, old_public = pinned(ready), ready.published(tunnel)["public-key"]
    generated = osm_heal_up_to_the_key_injection(ready, vnf)
    assert generated.failed is None and generated.results == {
        "generated": "false (a key already exists)",
        "host-key": "10.0.0.5 is being re-provisioned: its next successful login pins the host key it presents"}
    # generate-ssh-key's own reconcile ran before OSM injected the key: waiting, nothing pinned yet.
    assert ready.statuses[-1] == ("waiting", "the VNF at 10.0.0.5 is being re-provisioned: waiting for OSM to "
                                             "inject this charm's SSH key (get-ssh-public-key)")
    assert pinned(ready) == old_pin and vnf.devices == {}
    # The documented step after `osm ns-heal` without --run-day1: any action (tunnel-status here).
    status = ready.act("tunnel-status")
    assert status.failed is None and json.loads(status.results["tunnels"])[0]["device"] == "wg-vpn"
    assert pinned(ready) not in ("", old_pin) and vnf.devices["wg-vpn"].up
    new_public = ready.published(tunnel)["public-key"]
    assert new_public == vnf.devices["wg-vpn"].public_key != old_public      # the peers get relation-changed
    assert ready.status.name == "active"
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(m.startswith("host key of 10.0.0.5 replaced after OSM re-provisioned the VNF: SHA256:")
               for m in warnings), warnings


def test_heal_with_day1_converges_at_verify_ssh_credentials(ready, vnf, tunnel):
    """LCM's config primitive sets the same values (Juju runs no config-changed); N2VC's config
    then runs verify-ssh-credentials: that reconcile applies the whole plan on the new VM."""
    osm_heal_up_to_the_key_injection(ready, vnf)
    verify = ready.act("verify-ssh-credentials")
    assert verify.failed is None and verify.results["verified"] == "true"
    assert vnf.devices["wg-vpn"].up and ready.published(tunnel)["public-key"] == vnf.devices["wg-vpn"].public_key
    assert ready.status.name == "active"


def test_a_relation_event_before_the_key_is_injected_waits_then_update_status_converges(ready, vnf, tunnel):
    vnf.rebuild()
    ready.act("generate-ssh-key")
    ready.harness.update_relation_data(tunnel, "b/0", {"service-prefixes": "172.16.0.3/32"})
    assert ready.status.name == "waiting" and "being re-provisioned" in ready.status.message
    vnf.authorize(ready.charm.keystore.public_key())
    ready.harness.charm.on.update_status.emit()
    assert ready.status.name == "active"
    assert list(vnf.allowed_ips("wg-vpn").values()) == [["10.9.0.2/32", "172.16.0.3/32"]]


def test_a_rebuilt_vnf_without_osms_signal_is_refused(ready, vnf, tunnel):
    """A changed host key with no generate-ssh-key before it is what a man in the middle looks
    like: Blocked, and nothing is sent to the new machine."""
    vnf.rebuild()
    vnf.authorize(ready.charm.keystore.public_key())
    steps = len(vnf.steps)
    ready.harness.charm.on.update_status.emit()
    assert ready.status.name == "blocked" and "host key of 10.0.0.5 changed" in ready.status.message
    assert len(vnf.steps) == steps and vnf.devices == {}


def test_the_new_key_is_accepted_once(ready, vnf, tunnel):
    osm_heal_up_to_the_key_injection(ready, vnf)
    ready.act("tunnel-status")
    assert ready.status.name == "active"
    vnf.host_key = type(vnf.host_key).generate()            # someone else answers at that address now
    steps = len(vnf.steps)
    ready.harness.charm.on.update_status.emit()
    assert ready.status.name == "blocked" and "host key of 10.0.0.5 changed" in ready.status.message
    assert len(vnf.steps) == steps
    assert not ready.charm.keystore.expects_new_host_key("10.0.0.5", 22)


def test_generate_ssh_key_at_instantiation_expects_nothing(proxy, vnf):
    """A new unit (instantiation, scale-out) has nothing pinned: the first login is the usual
    trust on first use, and generate-ssh-key says nothing about a host key."""
    assert proxy.act("generate-ssh-key").results == {"generated": "true"}
    assert not proxy.charm.keystore.expects_new_host_key("10.0.0.5", 22)


def test_generate_ssh_key_on_a_vnf_that_was_not_rebuilt_changes_nothing_on_it(ready, vnf, tunnel, caplog):
    """An operator runs generate-ssh-key by hand: the same VM answers with the same key; its
    facts are learnt again and the plan re-applied, no device restarted, nothing logged as replaced."""
    device = vnf.devices["wg-vpn"]
    starts, public = device.starts, device.public_key
    ready.act("generate-ssh-key")
    assert ready.status.name == "active" and not ready.charm.keystore.expects_new_host_key("10.0.0.5", 22)
    assert vnf.devices["wg-vpn"].public_key == public and vnf.devices["wg-vpn"].starts == starts
    assert not [r for r in caplog.records if "replaced after OSM re-provisioned" in r.getMessage()]


def test_reset_ssh_host_key_also_ends_an_expectation(ready, vnf, tunnel):
    vnf.rebuild()
    ready.act("generate-ssh-key")
    assert ready.charm.keystore.expects_new_host_key("10.0.0.5", 22)
    vnf.authorize(ready.charm.keystore.public_key())
    assert ready.act("reset-ssh-host-key").results == {"forgotten": "true"}
    assert not ready.charm.keystore.expects_new_host_key("10.0.0.5", 22) and vnf.devices["wg-vpn"].up


def test_the_expectation_is_kept_beside_the_pinned_keys(ready, vnf, tunnel, tmp_path):
    """It survives a charm upgrade (the state directory is beside the charm directory) and names
    the host only: no key, nothing secret."""
    vnf.rebuild()
    ready.act("generate-ssh-key")
    store = ready.charm.keystore
    with open(store.directory + "/" + ssh.REPROVISIONED) as f:
        assert f.read() == "10.0.0.5\n"
    assert ssh.KeyStore(store.directory).expects_new_host_key("10.0.0.5", 22)
