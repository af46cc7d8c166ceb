"""A config-changed that can change nothing ends in the hook gate (before ops), and the gate ends it
exactly when the charm, run for it, would have done nothing: no session, no new publication, the
same plan. The gate reads the relation cache the charm wrote and answers its hook tools from the
Harness model, as Juju hands them to the hook."""
import json
import os

import pytest
from fake_vnf import keypair
from harness_helpers import peer_data

from vpnaas.charm import hookgate, relation_cache
from vpnaas.core import unitstate


@pytest.fixture
def hub(ready, vnf, monkeypatch):
    """The unit with b/0 related on vpn and its tunnel applied; the gate's tools answer from Harness."""
    rel = ready.relate("vpn", "b/0", peer_data(keypair()[1]))
    assert vnf.devices["wg-vpn"].peers
    harness = ready.harness
    # The key where a deployed charm keeps it and the gate reads it: the unit's state directory.
    assert os.path.samefile(ready.charm.keystore.directory, ready.charm.state_dir)

    def tool(*args):
        if args[:2] == ("config-get", "--all"):
            return dict(harness.model.config)
        backend = harness._backend          # what the hook tools answer now (ops' model caches members)
        if args[0] == "relation-ids":
            return ["{}:{}".format(args[1], r) for r in backend.relation_ids(args[1])]
        if args[0] == "relation-list":
            return sorted(backend.relation_list(int(args[2].partition(":")[2])))
        if args[0] == "relation-get":
            return dict(harness.get_relation_data(int(args[2]), args[4]))
        raise AssertionError(args)
    monkeypatch.setattr(hookgate, "_tool", tool)
    return ready, rel


def gate(ready):
    env = {"JUJU_DISPATCH_PATH": "hooks/config-changed", "JUJU_CHARM_DIR": str(ready.charm.charm_dir),
           "JUJU_UNIT_NAME": ready.charm.unit.name}
    return hookgate.nothing_to_do(env)


def charm_did_nothing(ready, vnf, rel):
    """Run the charm for config-changed: True when it opened no session and changed nothing."""
    before = (vnf.logins, ready.charm._stored.applied, ready.published(rel), ready.status)
    ready.harness.charm.on.config_changed.emit()
    return (vnf.logins, ready.charm._stored.applied, ready.published(rel), ready.status) == before


def test_a_config_the_last_session_ran_with_ends_in_the_gate_and_the_charm_agrees(hub, vnf):
    ready, rel = hub
    assert gate(ready)
    assert charm_did_nothing(ready, vnf, rel)
    assert gate(ready), "and it still does after that run"


def test_a_config_a_relation_hook_applied_before_its_config_changed_ends_there(hub, vnf):
    """OSM's config primitive sets options while the unit runs relation hooks: a relation hook
    applies the new config first (Juju hands every hook the current config), and the
    config-changed Juju runs after it has nothing left to do."""
    ready, rel = hub
    ready.harness._update_config({"vpn-service-addresses": "172.16.0.7/32"})    # no config-changed yet
    assert not gate(ready), "the config is not the one the last session ran with"
    logins = vnf.logins
    ready.harness.update_relation_data(rel, "b/0", {"endpoint": "192.168.8.21:51821"})
    assert vnf.logins == logins + 1
    assert gate(ready)
    assert charm_did_nothing(ready, vnf, rel)


@pytest.mark.parametrize("option", [{"vpn-service-addresses": "172.16.0.9/32"}, {"ssh-connect-timeout": 17}])
def test_a_new_option_reaches_the_charm_which_opens_a_session(hub, vnf, option):
    ready, rel = hub
    ready.harness._update_config(option)
    assert not gate(ready)
    assert not charm_did_nothing(ready, vnf, rel)
    assert gate(ready)


def test_a_unit_related_since_the_cache_reaches_the_charm(hub, vnf):
    """Membership: a unit whose relation hooks have not run yet, and one that left."""
    ready, rel = hub
    new = ready.harness.add_relation("vpn", "c")
    ready.harness._backend._relation_list_map[new].append("c/0")       # relation-list names it; no hook ran
    assert not gate(ready)
    ready.harness._backend._relation_list_map[new].remove("c/0")
    assert gate(ready)
    ready.harness._backend._relation_list_map[rel].remove("b/0")
    assert not gate(ready)


def test_a_changed_databag_the_charm_never_took_reaches_the_charm(hub, vnf):
    ready, rel = hub
    ready.harness._backend._relation_data_raw[rel]["b/0"]["endpoint"] = "192.168.8.29:51821"   # no hook ran
    assert not gate(ready)
    assert not charm_did_nothing(ready, vnf, rel)


def test_a_new_ssh_key_reaches_the_charm(hub, vnf):
    ready = hub[0]
    pub = os.path.join(ready.charm.state_dir, unitstate.KEY_FILE + ".pub")
    with open(pub, "w") as f:
        f.write("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOtherKeyOtherKeyOtherKeyOtherKeyOtherKey0 x\n")
    assert not gate(ready)
    os.remove(pub)                         # half-written pair: the charm repairs it
    assert not gate(ready)


def test_a_run_that_died_after_stepping_the_vnf_reaches_the_charm(hub, vnf):
    ready, rel = hub
    unitstate.mark_vnf_unconfirmed(ready.charm.state_dir)
    assert not gate(ready)
    assert not charm_did_nothing(ready, vnf, rel), "the charm contacts the VNF"
    assert gate(ready)


def test_a_publication_juju_dropped_reaches_the_charm(hub, vnf):
    """The last charm run wrote on the relation (as the cache records) and Juju dropped the write
    (a hook whose commit failed): the gate reads it back and lets the charm publish again."""
    ready, rel = hub
    path = relation_cache.path(ready.charm.state_dir)
    with open(path) as f:
        state = json.load(f)
    with open(path, "w") as f:
        json.dump(dict(state, written=[str(rel)]), f)
    assert gate(ready)
    ready.harness._backend._relation_data_raw[rel][ready.charm.unit.name].pop("public-key")
    assert not gate(ready)


def test_a_failed_session_leaves_no_cache_and_the_gate_skips_nothing(hub, vnf):
    ready = hub[0]
    vnf.fault = "refused"
    ready.harness.charm.on.update_status.emit()
    vnf.fault = None
    assert not gate(ready)


def test_get_ssh_public_key_answered_before_ops_is_what_the_charm_answers(ready, tmp_path, monkeypatch):
    """hookgate.answered sets the same result the charm's own handler sets."""
    tools = tmp_path / "bin"
    tools.mkdir()
    record = tmp_path / "action-set.args"
    (tools / "action-set").write_text('#!/bin/sh\nprintf "%s\\n" "$@" > {}\n'.format(record))
    (tools / "action-set").chmod(0o755)
    monkeypatch.setenv("PATH", str(tools) + os.pathsep + os.environ["PATH"])
    env = {"JUJU_DISPATCH_PATH": "actions/get-ssh-public-key", "JUJU_CHARM_DIR": str(ready.charm.charm_dir),
           "JUJU_UNIT_NAME": ready.charm.unit.name}
    assert hookgate.answered(env)
    charm = ready.act("get-ssh-public-key")
    assert charm.failed is None
    assert record.read_text() == "pubkey={}\n".format(charm.results["pubkey"])
