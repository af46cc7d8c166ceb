"""vpnaas.charm.published_peers: the relation-changed hooks about a remote unit that come before
``ssh-hostname`` is set are counted (in the hook gate, before ops, and in the charm), without
reading the unit; the second one means it published, and a unit whose every related unit
published reads them all in its first session (tests/harness/test_first_session_published.py runs
that part through the charm). The hook tools are replaced by a recorder, as in test_hookgate."""
import json

import pytest

from vpnaas.charm import hookgate, published_peers, relation_cache
from vpnaas.core import unitstate

FIELDS = ["vpnaas-schema", "public-key", "endpoint", "tunnel-address", "service-prefixes", "wants-peer-keys"]


class Tools(object):
    """The hook tools the gate may call, answered from ``config``; every call recorded."""

    def __init__(self, monkeypatch, config):
        self.calls, self.config = [], config
        monkeypatch.setattr(hookgate, "_tool", self)

    def __call__(self, *args):
        self.calls.append(list(args))
        if args[0] == "config-get":
            return self.config.get(args[1])
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


def env_for(charm_dir, hook="hooks/vpn-relation-changed", remote="s1/0", rid="vpn:2"):
    env = {"JUJU_DISPATCH_PATH": hook, "JUJU_CHARM_DIR": charm_dir, "JUJU_RELATION": "vpn",
           "JUJU_RELATION_ID": rid, "JUJU_UNIT_NAME": "enb/0", "JUJU_REMOTE_APP": remote.split("/")[0]}
    if remote:
        env["JUJU_REMOTE_UNIT"] = remote
    return env


def test_the_second_changed_hook_before_the_config_marks_a_remote_unit_published(unit, monkeypatch):
    tools = Tools(monkeypatch, {})
    assert hookgate.nothing_to_do(env_for(unit[0]))                     # the one after relation-joined
    assert published_peers.load(unit[1]) == {"2/s1/0": 1} and not published_peers.all_published(unit[1], ["2/s1/0"])
    assert hookgate.nothing_to_do(env_for(unit[0]))                     # s1/0 wrote: its key with its data
    assert published_peers.all_published(unit[1], ["2/s1/0"])
    assert not published_peers.all_published(unit[1], ["2/s1/0", "3/s2/0"])
    assert tools.calls == [["config-get", "ssh-hostname"]] * 2, "counted without reading the remote unit"
    assert hookgate.nothing_to_do(env_for(unit[0]))
    assert published_peers.load(unit[1]) == {"2/s1/0": published_peers.PUBLISHED}


def test_a_configured_unit_counts_nothing(unit, monkeypatch):
    """Once ssh-hostname is set the hook runs the charm, which reads every unit it needs itself."""
    Tools(monkeypatch, {"ssh-hostname": "10.0.0.5"})
    assert not hookgate.nothing_to_do(env_for(unit[0]))
    assert published_peers.load(unit[1]) == {}


@pytest.mark.parametrize("hook,remote", [("hooks/vpn-relation-joined", "s1/0"), ("hooks/vpn-relation-created", "")])
def test_other_relation_hooks_count_nothing(unit, monkeypatch, hook, remote):
    Tools(monkeypatch, {})
    for _ in range(2):
        assert hookgate.nothing_to_do(env_for(unit[0], hook, remote))
    assert published_peers.load(unit[1]) == {}


def test_each_remote_unit_is_counted_apart(unit, monkeypatch):
    Tools(monkeypatch, {})
    for env in (env_for(unit[0]), env_for(unit[0], remote="s2/0", rid="vpn:3"), env_for(unit[0])):
        assert hookgate.nothing_to_do(env)
    assert published_peers.load(unit[1]) == {"2/s1/0": 2, "3/s2/0": 1}
    assert published_peers.all_published(unit[1], ["2/s1/0"]) and not published_peers.all_published(unit[1], ["3/s2/0"])


def test_no_related_unit_is_no_reason_to_read_early(tmp_path):
    """A config-changed that Juju runs before the relation-joined hooks (relation-list is empty
    then) keeps the deferral: nothing is known of the peers."""
    assert not published_peers.all_published(str(tmp_path), [])


def test_the_record_is_bounded(tmp_path):
    d = str(tmp_path)
    unitstate.write_atomic(published_peers.path(d), json.dumps(
        {"{}/s/0".format(i): 1 for i in range(published_peers.MAX_SLOTS)}).encode(), 0o600)
    published_peers.note(d, "9999/s/0")
    assert "9999/s/0" not in published_peers.load(d)
    published_peers.note(d, "0/s/0")                    # a slot already counted still counts
    assert published_peers.load(d)["0/s/0"] == 2


@pytest.mark.parametrize("text", ["", "{", "[]", '{"2/s1/0": "2"}', '{"2/s1/0": true}', "null", '"2/s1/0"'])
def test_an_unreadable_record_is_no_record(tmp_path, text):
    with open(published_peers.path(str(tmp_path)), "w") as f:
        f.write(text)
    assert published_peers.load(str(tmp_path)) == {}
    assert not published_peers.all_published(str(tmp_path), ["2/s1/0"])
    published_peers.note(str(tmp_path), "2/s1/0")        # counting starts again
    assert published_peers.load(str(tmp_path)) == {"2/s1/0": 1}


def test_a_record_that_cannot_be_written_is_lost_silently(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("")
    published_peers.note(str(blocked / "state"), "2/s1/0")     # a state directory under a file
    assert published_peers.load(str(blocked / "state")) == {}


@pytest.mark.parametrize("kind,unit,hostname,record", [
    ("changed", "s1/0", "", True), ("changed", "s1/0", None, True), ("changed", "s1/0", "10.0.0.5", False),
    ("changed", None, "", False), ("joined", "s1/0", "", False), ("created", None, "", False)])
def test_the_wrapped_question_answers_the_same_and_says_when_to_count(kind, unit, hostname, record):
    asked = published_peers.UnconfiguredChanged(kind, unit, lambda: hostname)
    assert not asked.record
    assert asked() == hostname and asked.record is record
