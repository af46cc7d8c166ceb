"""Peer trust and operator mistakes, charm level: the shipped reconcile against the fake VNF.

What the route policy decides is tests/unit/test_peer_trust.py's job; here: that the charm
never applies a plan made with another VNF's or outdated facts, refuses an operator's address
that would cut the VNF off before anything is applied, survives a plan too big for a step, a
hub of 400 spokes and a publication Juju dropped, and says what is wrong."""
import json

import pytest
from fake_vnf import keypair
from harness_helpers import peer_data

from vpnaas.core import relation_data
from vpnaas.vnf import vnfscript


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
    assert vnf.steps == [["programs_check", "facts_guard"]] and vnf.devices == {}


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
    # the new VM's facts and (its shipped programs are gone) NEED pq-psk in one answer, the
    # install, then the step: two steps, not one more for the programs
    steps = [s for s in vnf.steps[-2:]]
    assert steps[0] == ["programs_check", "facts_guard"], "the old VNF's facts were not used to apply anything"
    assert vnf.installs[-1] == "pq-psk" and "apply_device" in steps[1]
    assert "172.16.0.254/32" not in vnf.routes and vnf.allowed_ips("wg-vpn") == {key: ["10.9.0.2/32"]}
    assert "refused 172.16.0.254/32 from b/0 on wg-vpn: it overlaps this VNF's default gateway" in ready.status.message


def test_new_facts_stop_the_step_before_the_stale_plan_is_applied(ready, vnf):
    _, key = keypair()
    rel = ready.relate("vpn", "b/0", peer_data(key))
    vnf.gateways = ["172.16.0.50"]      # the VNF's gateway moved (the charm has not seen it yet) ...
    ready.harness.update_relation_data(rel, "b/0", {"service-prefixes": "172.16.0.50/32"})   # ... onto this
    assert "172.16.0.50/32" not in vnf.routes_ever, "a plan made with the old facts was applied"
    assert vnf.steps[-2] == ["programs_check", "facts_guard"] and "apply_device" in vnf.steps[-1]
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
    again = ready.published(rel)
    generation = relation_data.GENERATION
    assert dict(again, **{generation: ""}) == dict(published, **{generation: ""})
    assert int(again[generation]) > int(published[generation]), "written again: a newer generation"
    assert vnf.logins == logins, "the VNF already holds the plan: no session needed to publish again"


#: Issue 36's osm-instance values, and other text no grammar accepts, at their worst sizes.
BOMB = "".join(["{a: &a [lol,lol,lol,lol,lol,lol,lol,lol,lol]"] + [
    ", b{0}: &b{0} [{1}]".format(i, ",".join(["*" + ("a" if i == 1 else "b{}".format(i - 1))] * 9))
    for i in range(1, 9)] + [", count_index: *b8}"])
HOSTILE_OSM = [BOMB, "{count_index: " + "[" * 4000 + "]" * 4000 + "}", "{count_index: " + "9" * 5000 + "}",
               "{count_index: 1}" + " " * (1 << 20), "{count_index: !!python/object/apply:os.system ['id']}"]


def test_a_hostile_osm_instance_blocks_every_hook_with_a_clear_message_and_applies_nothing(ready, vnf):
    """Issue 36: the alias bomb exhausted memory in the refusal's message, the deep nesting raised
    RecursionError out of config-changed and update-status (every hook failed until the option was
    cleared), the huge number raised ValueError on Python 3.11+. Now each is a config error: the
    unit is Blocked saying so, every hook succeeds, nothing is applied; a good value repairs it."""
    rel = ready.relate("vpn", "b/0", peer_data())
    applied = [s for s in vnf.steps if "apply_device" in s]
    assert ready.status.name == "active"
    for value in HOSTILE_OSM:
        ready.configure(**{"osm-instance": value})
        ready.harness.charm.on.update_status.emit()
        assert ready.status.name == "blocked", value[:40]
        message = ready.status.message
        assert message.startswith("config: osm-instance: ") and len(message) < 300 and message.isprintable()
        assert [s for s in vnf.steps if "apply_device" in s] == applied
    assert ready.published(rel)["tunnel-address"] == "10.9.0.1/30"
    ready.configure(**{"osm-instance": "{count_index: 0, vdu_id: vm}"})
    assert ready.status.name == "active", ready.status.message


@pytest.mark.parametrize("field", ["vpnaas-schema", "public-key", "endpoint", "tunnel-address", "service-prefixes",
                                   "wants-peer-keys", "peer-keys", "rotation-protocol", "next-key", "next-endpoint",
                                   "next-peer-keys"])
def test_a_related_unit_with_a_huge_field_is_refused_and_the_other_keeps_its_tunnel(ready, vnf, field):
    _, good = keypair()
    rel = ready.relate("vpn", "b/0", peer_data(good))
    ready.harness.add_relation_unit(rel, "b/1")
    ready.harness.update_relation_data(rel, "b/1", dict(peer_data(endpoint="192.168.8.21:51821", tunnel="10.9.0.3/30",
                                                                  service="172.16.0.3/32"),
                                                        **{field: "x" * (1 << 20) + "\n" + BOMB}))
    assert ready.status.name == "blocked" and "b/1" in ready.status.message and len(ready.status.message) < 1000
    assert vnf.peer_keys("wg-vpn") == [good], "the well-behaved unit keeps its tunnel"


@pytest.mark.parametrize("action, params", [
    ("add-peer", {"device": "vpn", "public-key": "x" * (1 << 20), "allowed-ips": "10.8.0.0/24"}),
    ("add-peer", {"device": "vpn\n" + BOMB, "public-key": keypair()[1], "allowed-ips": "10.8.0.0/24"}),
    ("add-peer", {"device": "vpn", "public-key": keypair()[1], "allowed-ips": ",".join(["10.8.0.0/24"] * 100000)}),
    ("add-peer", {"device": "vpn", "public-key": keypair()[1], "endpoint": "h:1\x00", "allowed-ips": "10.8.0.0/24"}),
    ("remove-peer", {"device": "wg-" + "v" * (1 << 20), "public-key": keypair()[1]}),
    ("remove-peer", {"device": "vpn", "public-key": "\u0661" * 44}),
    ("rotate-keys", {"device": "wg-vpn\n[Interface]"}),
    ("rotate-keys", {"device": "\x00" * (1 << 20)}),
])
def test_a_hostile_action_parameter_fails_the_action_in_one_line_and_changes_nothing(ready, vnf, action, params):
    ready.relate("vpn", "b/0", peer_data())
    logins, stored = vnf.logins, ready.charm._stored.manual_peers
    run = ready.act(action, **params)
    assert run.failed and "\n" not in run.failed and len(run.failed) < 300 and run.failed.isprintable(), run
    assert vnf.logins == logins and ready.charm._stored.manual_peers == stored
