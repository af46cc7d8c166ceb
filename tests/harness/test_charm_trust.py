"""Peer trust and operator mistakes, charm level: the shipped reconcile against the fake VNF.

What the route policy decides is tests/unit/test_peer_trust.py's job; here: that the charm
never applies a plan made with another VNF's or outdated facts, refuses an operator's address
that would cut the VNF off before anything is applied, survives a plan too big for a step, a
hub of 400 spokes and a publication Juju dropped, and says what is wrong."""
import json

from fake_vnf import keypair
from harness_helpers import peer_data

from vpnaas import vnfscript


def test_a_service_address_on_the_management_network_is_refused_before_anything_is_applied(ready, vnf):
    rel = ready.relate("vpn", "b/0", peer_data())
    applied = [s for s in vnf.steps if "apply_device" in s]
    before = (list(vnf.service_addresses), dict(vnf.routes))
    ready.configure(**{"vpn-service-addresses": "10.0.0.77/32", "vpn-service-network": "10.0.0.0/16"})
    assert ready.status.name == "blocked"
    assert ready.status.message.startswith("config: vpn-service-addresses: 10.0.0.77/32 lies in this VNF's "
                                           "connected network 10.0.0.0/24; nothing was applied")
    assert [s for s in vnf.steps if "apply_device" in s] == applied
    assert (vnf.service_addresses, vnf.routes) == before and ready.published(rel)["service-prefixes"] == "172.16.0.1/32"


def test_a_tunnel_address_holding_the_ssh_client_is_refused_on_first_contact(proxy, vnf):
    proxy.act("generate-ssh-key")
    vnf.authorize(proxy.charm.keystore.public_key())
    proxy.relate("vpn", "b/0", peer_data())
    proxy.configure(**{"ssh-hostname": "10.0.0.5", "vpn-tunnel-address": "10.20.0.10/24",
                       "vpn-service-addresses": "172.16.0.1/32", "vpn-service-network": "172.16.0.0/16"})
    assert proxy.status.name == "blocked"
    assert "vpn-tunnel-address: 10.20.0.10/24 contains the SSH client 10.20.0.9" in proxy.status.message
    assert vnf.steps == [["facts_guard"]] and vnf.devices == {}


def test_rotate_keys_with_a_config_error_names_the_config_error(ready, vnf):
    ready.relate("vpn", "b/0", peer_data())
    ready.configure(**{"vpn-service-addresses": "not-an-address"})
    run = ready.act("rotate-keys", device="vpn")
    assert run.failed.startswith("config: vpn-service-addresses: ")


def test_a_vnf_rebuilt_at_the_same_address_never_gets_the_old_vnfs_plan(ready, vnf):
    _, key = keypair()
    ready.relate("vpn", "b/0", peer_data(key, service="172.16.0.254/32"))
    assert vnf.routes["172.16.0.254/32"][0] == "wg-vpn"
    vnf.rebuild()
    vnf.authorize(ready.charm.keystore.public_key())
    vnf.gateways = ["172.16.0.254"]             # the new VM's gateway is what the peer announces
    ready.harness.charm.on.update_status.emit()
    assert ready.status.name == "blocked" and "host key of 10.0.0.5 changed" in ready.status.message
    assert ready.act("reset-ssh-host-key").results == {"forgotten": "true"}
    assert json.loads(ready.charm._stored.facts).get("facts", {}).get("gateways") == ["172.16.0.254"]
    steps = [s for s in vnf.steps[-2:]]
    assert steps[0] == ["facts_guard"], "the old VNF's facts were not used to apply anything"
    assert "172.16.0.254/32" not in vnf.routes and vnf.allowed_ips("wg-vpn") == {key: ["10.9.0.2/32"]}
    assert "refused 172.16.0.254/32 from b/0 on wg-vpn: it overlaps this VNF's default gateway" in ready.status.message


def test_new_facts_stop_the_step_before_the_stale_plan_is_applied(ready, vnf):
    _, key = keypair()
    rel = ready.relate("vpn", "b/0", peer_data(key))
    vnf.gateways = ["172.16.0.50"]      # the VNF's gateway moved (the charm has not seen it yet) ...
    ready.harness.update_relation_data(rel, "b/0", {"service-prefixes": "172.16.0.50/32"})   # ... onto this
    assert "172.16.0.50/32" not in vnf.routes_ever, "a plan made with the old facts was applied"
    assert vnf.steps[-2] == ["facts_guard"] and "apply_device" in vnf.steps[-1]
    assert "172.16.0.50/32 from b/0 on wg-vpn: it overlaps this VNF's default gateway" in ready.status.message


def test_a_plan_too_big_for_one_step_blocks_naming_the_cause_and_the_hook_succeeds(ready, vnf, monkeypatch):
    monkeypatch.setattr(vnfscript, "MAX_PROGRAM", 4096)
    ready.relate("vpn", "b/0", peer_data())
    assert ready.status.name == "blocked"
    assert ready.status.message.startswith("cannot apply the plan: the step is ")
    monkeypatch.setattr(vnfscript, "MAX_PROGRAM", 16 * 1024 * 1024)
    ready.harness.charm.on.update_status.emit()
    assert ready.status.name == "active", ready.status.message


def test_a_hub_with_400_spokes_reconciles_in_one_session(ready, vnf):
    harness = ready.harness
    harness.update_config({"vpn-tunnel-address": "10.100.0.1/16", "vpn-peer-prefixes": "172.16.0.0/16"})
    harness.disable_hooks()
    keys = []
    for i in range(400):
        _, key = keypair()
        keys.append(key)
        ready.relate("vpn", "s{}/0".format(i), peer_data(
            key, endpoint="192.168.{}.{}:51820".format(64 + i // 250, 1 + i % 250),
            tunnel="10.100.{}.{}/16".format(1 + i // 250, 1 + i % 250),
            service="172.16.{}.{}/32".format(100 + i // 250, 1 + i % 250)))
    harness.enable_hooks()
    logins = vnf.logins
    harness.charm.on.update_status.emit()
    assert vnf.logins == logins + 1
    assert ready.status.name == "active", ready.status.message[:300]
    assert sorted(vnf.peer_keys("wg-vpn")) == sorted(keys)
    assert max(len(c) for c in vnf.commands[-2:]) < 2048, "the command line does not grow with the peers"


def test_a_publication_juju_dropped_is_published_again_without_a_session(ready, vnf):
    _, key = keypair()
    rel = ready.relate("vpn", "b/0", peer_data(key))
    published = ready.published(rel)
    assert published["public-key"] == vnf.devices["wg-vpn"].public_key
    # The hook's commit never reached the controller: Juju holds this unit's data as before it.
    mine = ready.charm.unit.name
    ready.harness.update_relation_data(rel, mine, {k: "" for k in published})
    logins = vnf.logins
    ready.harness.update_relation_data(rel, "b/0", {"peer-keys": keypair()[1]})   # Juju retries: nothing new from b/0
    assert ready.published(rel) == published
    assert vnf.logins == logins, "the VNF already holds the plan: no session needed to publish again"
