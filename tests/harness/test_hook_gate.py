"""The hook gate (run by dispatch before ops) and the charm decide the same: for every change of
a related unit's data, the gate ends the hook exactly when the charm would not have reconciled.
The gate reads the relation cache the charm wrote, through hook tools answered from Harness."""
import json

import pytest
from fake_vnf import keypair
from harness_helpers import peer_data

from vpnaas.charm import hookgate, relation_cache


@pytest.fixture
def hub(ready, vnf, monkeypatch):
    """The unit with b/0 related on vpn and its tunnel applied; the gate's hook tools answer
    from the Harness model."""
    rel = ready.relate("vpn", "b/0", peer_data(keypair()[1]))
    assert vnf.devices["wg-vpn"].peers
    harness = ready.harness
    pending = {}

    def tool(*args):
        if args[0] == "config-get":
            return harness.model.config.get(args[1])
        if args[0] == "relation-get":
            if args[4] == "b/0" and pending.get("bag"):
                return dict(pending["bag"])
            return dict(harness.get_relation_data(int(args[2]), args[4]))
        raise AssertionError(args)
    monkeypatch.setattr(hookgate, "_tool", tool)
    reconciles = []
    real = ready.charm.reconcile

    def counting(*a, **kw):
        reconciles.append(1)
        return real(*a, **kw)
    monkeypatch.setattr(ready.charm, "reconcile", counting)
    return ready, rel, pending, reconciles


def _gate_then_charm(hub, change):
    """What the gate decides for b/0's new data ``change``, then whether the charm, handed the
    same change by Juju, reconciled."""
    ready, rel, pending, reconciles = hub
    bag = dict(ready.harness.get_relation_data(rel, "b/0"), **change)
    pending["bag"] = {k: v for k, v in bag.items() if v != ""}
    env = {"JUJU_DISPATCH_PATH": "hooks/vpn-relation-changed", "JUJU_CHARM_DIR": str(ready.charm.charm_dir),
           "JUJU_RELATION": "vpn", "JUJU_RELATION_ID": "vpn:{}".format(rel), "JUJU_REMOTE_UNIT": "b/0",
           "JUJU_UNIT_NAME": ready.charm.unit.name}
    gate = hookgate.nothing_to_do(env)
    before = len(reconciles)
    ready.harness.update_relation_data(rel, "b/0", change)
    pending.clear()
    return gate, len(reconciles) == before


@pytest.mark.parametrize("change,skipped", [
    ({"unrelated": "x"}, True),
    ({"peer-keys": "a,b"}, True),                  # the generic charm does not wait for its tunnels
    ({"endpoint": "192.168.8.21:51821"}, False),
    ({"service-prefixes": "172.16.0.9/32"}, False),
    ({"public-key": keypair()[1]}, False),
    ({"wants-peer-keys": "yes"}, False),            # decides what this unit publishes
    ({"vpnaas-schema": "2"}, False),
])
def test_the_gate_ends_a_hook_exactly_when_the_charm_would_not_reconcile(hub, change, skipped):
    assert _gate_then_charm(hub, change) == (skipped, skipped)


def test_after_a_failed_session_the_cache_is_gone_and_nothing_is_skipped(hub, vnf):
    ready = hub[0]
    vnf.fault = "refused"
    ready.harness.charm.on.update_status.emit()
    assert ready.status.name == "waiting"
    assert relation_cache.load(ready.charm.state_dir) is None
    vnf.fault = None
    assert _gate_then_charm(hub, {"unrelated": "y"}) == (False, False)
    # That reconcile succeeded: the cache is back, and the next such hook ends in the gate.
    assert _gate_then_charm(hub, {"unrelated": "z"}) == (True, True)


def test_the_cache_holds_digests_of_what_the_reconcile_read_for_the_plan_the_vnf_holds(hub):
    ready, rel = hub[0], hub[1]
    state = relation_cache.load(ready.charm.state_dir)
    assert state["applied"] == ready.charm._stored.applied != ""
    assert state["endpoints"] == ["vpn", "vpn-peer"] and state["fields"] == ready.charm.cache_fields()
    bag = ready.harness.get_relation_data(rel, "b/0")
    assert state["digests"] == {relation_cache.slot(rel, "b/0"): relation_cache.digest(bag, state["fields"])}
    # Public data only: digests and a fingerprint, never a key or a password.
    text = json.dumps(state)
    assert bag["public-key"] not in text and "secret" not in text


def test_a_new_plan_applied_by_an_action_drops_the_cache_until_a_hook_takes_it_again(hub):
    ready, _rel, _pending, _reconciles = hub
    _, key = keypair()
    done = ready.act("add-peer", device="vpn", **{"public-key": key, "allowed-ips": "172.16.9.0/24"})
    assert done.failed is None
    assert relation_cache.load(ready.charm.state_dir) is None
    assert _gate_then_charm(hub, {"unrelated": "x"}) == (False, False)
    assert _gate_then_charm(hub, {"unrelated": "y"}) == (True, True)


def test_peer_keys_wake_the_generic_charm_while_it_rotates_a_key(hub):
    ready = hub[0]
    assert _gate_then_charm(hub, {"rotation-protocol": "1"}) == (False, False)
    assert _gate_then_charm(hub, {"peer-keys": keypair()[1]}) == (True, True)     # nothing rotates: no news
    new = ready.act("rotate-keys").results["public-key-wg-vpn"]
    # b/0 follows; then it confirms with peer-keys alone that its main device holds the new key,
    # which the rotating unit must see (rotation.py): neither the gate nor the charm skip it.
    _gate_then_charm(hub, {"next-endpoint": "192.168.8.20:51920", "next-peer-keys": new})
    assert ready.charm.cache_fields()[-1] == "peer-keys"
    assert _gate_then_charm(hub, {"peer-keys": new}) == (False, False)


def test_a_joined_hook_ends_in_the_gate_and_its_changed_hook_applies_the_peer_with_one_session(hub, vnf):
    """Juju runs relation-changed for a unit right after its relation-joined (ChangedPending): the
    gate and the charm both leave the work to it, so a joining spoke costs one reconcile."""
    ready, _rel, _pending, reconciles = hub
    ready.configure(**{"vpn-tunnel-address": "10.9.0.1/24"})
    new = ready.harness.add_relation("vpn", "c")
    env = {"JUJU_DISPATCH_PATH": "hooks/vpn-relation-joined", "JUJU_CHARM_DIR": str(ready.charm.charm_dir),
           "JUJU_RELATION": "vpn", "JUJU_RELATION_ID": "vpn:{}".format(new), "JUJU_REMOTE_UNIT": "c/0",
           "JUJU_UNIT_NAME": ready.charm.unit.name}
    assert hookgate.nothing_to_do(env)
    before, sessions = len(reconciles), vnf.logins
    ready.harness.add_relation_unit(new, "c/0")
    assert len(reconciles) == before and vnf.logins == sessions
    key = keypair()[1]
    ready.harness.update_relation_data(new, "c/0", peer_data(key, endpoint="192.168.8.23:51820",
                                                            tunnel="10.9.0.3/24", service="172.16.0.3/32"))
    assert key in vnf.peer_keys("wg-vpn")
    assert len(reconciles) == before + 1 and vnf.logins == sessions + 1
