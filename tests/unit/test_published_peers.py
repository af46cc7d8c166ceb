"""vpnaas.charm.published_peers: a relation-changed that comes before ``ssh-hostname`` is set records
its remote unit when that unit published its key (in the hook gate, before ops, and in the charm),
and a unit whose every related unit is recorded reads them all in its first session
(tests/harness/test_first_session_published.py runs that part through the charm). The hook tools
are replaced by a recorder, as in test_hookgate."""
import json
import os

import pytest

from vpnaas.charm import hookgate, published_peers, relation_cache
from vpnaas.core import relation_data, unitstate

FIELDS = ["vpnaas-schema", "public-key", "endpoint", "tunnel-address", "service-prefixes", "wants-peer-keys"]
BAG = {"vpnaas-schema": "1", "public-key": "A" * 43 + "=", "endpoint": "192.168.64.2:51820",
       "tunnel-address": "10.251.0.2/24", "service-prefixes": "172.17.1.1/32"}


class Tools(object):
    """The hook tools the gate calls, answered from ``config`` and ``data`` (relation 2), recorded."""

    def __init__(self, monkeypatch, config, data):
        self.calls, self.config, self.data = [], config, data
        monkeypatch.setattr(hookgate, "_tool", self)

    def __call__(self, *args):
        self.calls.append(list(args))
        if args[0] == "config-get":
            return self.config.get(args[1])
        if args[0] == "relation-get":
            return self.data.get(args[4], {})
        raise AssertionError("the gate called {}".format(args))


@pytest.fixture
def unit(tmp_path):
    """A unit's charm directory and its state directory, with the relation cache a unit leaves
    before its first session (no plan applied: ``applied`` "")."""
    charm_dir = tmp_path / "unit-enb-0" / "charm"
    charm_dir.mkdir(parents=True)
    state = unitstate.unit_state_dir(str(charm_dir))
    relation_cache.save(state, relation_cache.make(["vpn"], FIELDS, "", {}))
    relation_cache.promote(state)
    return str(charm_dir), state


def env_for(charm_dir, hook="hooks/vpn-relation-changed", remote="s1/0"):
    env = {"JUJU_DISPATCH_PATH": hook, "JUJU_CHARM_DIR": charm_dir, "JUJU_RELATION": "vpn",
           "JUJU_RELATION_ID": "vpn:2", "JUJU_UNIT_NAME": "enb/0", "JUJU_REMOTE_APP": "s1"}
    if remote:
        env["JUJU_REMOTE_UNIT"] = remote
    return env


def test_the_key_field_is_one_the_interface_requires():
    assert published_peers.KEY_FIELD in relation_data.KEYS


def test_a_changed_hook_before_the_config_records_a_remote_unit_that_published(unit, monkeypatch):
    tools = Tools(monkeypatch, {}, {"s1/0": dict(BAG)})
    assert hookgate.nothing_to_do(env_for(unit[0]))
    assert published_peers.load(unit[1]) == ["2/s1/0"]
    assert [c[0] for c in tools.calls] == ["config-get", "relation-get"]
    assert published_peers.all_recorded(unit[1], ["2/s1/0"])
    assert not published_peers.all_recorded(unit[1], ["2/s1/0", "3/s2/0"])


@pytest.mark.parametrize("data", [{}, {"s1/0": dict(BAG, **{"public-key": ""})}, {"s1/0": {"endpoint": "x:1"}}])
def test_a_remote_unit_without_its_key_is_not_recorded(unit, monkeypatch, data):
    Tools(monkeypatch, {}, data)
    assert hookgate.nothing_to_do(env_for(unit[0]))
    assert published_peers.load(unit[1]) == [] and not os.path.exists(published_peers.path(unit[1]))


def test_a_configured_unit_records_nothing_and_costs_no_read_more(unit, monkeypatch):
    """Once ssh-hostname is set the hook runs the charm, which reads every unit it needs itself."""
    tools = Tools(monkeypatch, {"ssh-hostname": "10.0.0.5"}, {"s1/0": dict(BAG)})
    assert not hookgate.nothing_to_do(env_for(unit[0]))
    assert published_peers.load(unit[1]) == [] and [c[0] for c in tools.calls] == ["config-get"]


@pytest.mark.parametrize("hook,remote", [("hooks/vpn-relation-joined", "s1/0"), ("hooks/vpn-relation-created", "")])
def test_other_relation_hooks_record_nothing(unit, monkeypatch, hook, remote):
    tools = Tools(monkeypatch, {}, {"s1/0": dict(BAG)})
    assert hookgate.nothing_to_do(env_for(unit[0], hook, remote))
    assert published_peers.load(unit[1]) == [] and not any(c[0] == "relation-get" for c in tools.calls)


def test_a_slot_is_kept_once_and_the_record_is_bounded(tmp_path):
    d = str(tmp_path)
    published_peers.note(d, "2/s1/0", BAG)
    published_peers.note(d, "2/s1/0", BAG)
    assert published_peers.load(d) == ["2/s1/0"]
    unitstate.write_atomic(published_peers.path(d), json.dumps(
        ["{}/s/0".format(i) for i in range(published_peers.MAX_SLOTS)]).encode(), 0o600)
    published_peers.note(d, "9999/s/0", BAG)
    assert "9999/s/0" not in published_peers.load(d)


@pytest.mark.parametrize("text", ["", "{", "{}", "[1, 2]", "null", '"2/s1/0"'])
def test_an_unreadable_record_is_no_record(tmp_path, text):
    with open(published_peers.path(str(tmp_path)), "w") as f:
        f.write(text)
    assert published_peers.load(str(tmp_path)) == []
    assert not published_peers.all_recorded(str(tmp_path), ["2/s1/0"])


def test_a_record_that_cannot_be_written_is_lost_silently(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("")
    published_peers.note(str(blocked / "state"), "2/s1/0", BAG)     # a state directory under a file
    assert published_peers.load(str(blocked / "state")) == []


def test_no_related_unit_is_all_recorded(tmp_path):
    assert published_peers.all_recorded(str(tmp_path), [])


@pytest.mark.parametrize("kind,unit,hostname,record", [
    ("changed", "s1/0", "", True), ("changed", "s1/0", None, True), ("changed", "s1/0", "10.0.0.5", False),
    ("changed", None, "", False), ("joined", "s1/0", "", False), ("created", None, "", False)])
def test_the_wrapped_question_answers_the_same_and_says_when_to_record(kind, unit, hostname, record):
    asked = published_peers.UnconfiguredChanged(kind, unit, lambda: hostname)
    assert not asked.record
    assert asked() == hostname and asked.record is record
