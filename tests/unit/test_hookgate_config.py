"""vpnaas.charm.hookgate on config-changed: it ends before ops only when the config and the charm's
SSH key are those the last session ran with, the related units are those the cache was taken over,
each one's data and this unit's own on the relations written last have their digests, and the VNF
holds the plan; anything else, or anything unexpected, runs the charm. The hook tools are replaced
by a recorder (tests/harness/test_config_gate.py checks the gate against the charm's own decision)."""
import json
import os
import shlex
import subprocess
import sys
import time

import pytest

from vpnaas.charm import hookgate, relation_cache
from vpnaas.core import unitstate

FIELDS = ["vpnaas-schema", "public-key", "endpoint", "tunnel-address", "service-prefixes", "wants-peer-keys"]
BAG = {"vpnaas-schema": "1", "public-key": "A" * 43 + "=", "endpoint": "192.168.64.2:51820",
       "tunnel-address": "10.251.0.2/24", "service-prefixes": "172.17.1.1/32"}
OWN = {"vpnaas-schema": "1", "public-key": "B" * 43 + "=", "endpoint": "192.168.64.1:51820",
       "tunnel-address": "10.251.0.1/24", "service-prefixes": "172.17.0.1/32"}
CONFIG = {"ssh-hostname": "10.0.0.5", "ssh-password": "secret", "vpn-tunnel-address": "10.251.0.1/24",
          "ssh-port": 22}
SALT = "5a17"
PUBLIC = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHubHubHubHubHubHubHubHubHubHubHubHubHubHub0 hub"
ENV_HOOK = "hooks/config-changed"


class Tools(object):
    """The hook tools a config-changed would call, answered from dicts; every call recorded."""

    def __init__(self, monkeypatch, config=None, members=None, data=None, fail=()):
        self.calls = []
        self.config = dict(CONFIG) if config is None else config
        self.members = {"vpn": {"vpn:2": ["s1/0"]}} if members is None else members
        self.data = {"2": {"s1/0": dict(BAG), "hub/0": dict(OWN)}} if data is None else data
        self.fail = set(fail)
        monkeypatch.setattr(hookgate, "_tool", self)

    def __call__(self, *args):
        self.calls.append(list(args))
        if args[0] in self.fail:
            return hookgate.FAILED
        if args[:2] == ("config-get", "--all"):
            return self.config
        if args[0] == "relation-ids":
            return sorted(self.members.get(args[1], {}))
        if args[0] == "relation-list":
            return next(units for ep in self.members.values() for rid, units in ep.items() if rid == args[2])
        if args[0] == "relation-get":
            return self.data.get(args[2], {}).get(args[4], {})
        raise AssertionError("the gate called {}".format(args))


def save(state_dir, config=None, members=("2/s1/0",), written=("2",), until=None, applied="fp-1",
         public=PUBLIC):
    relation_cache.save(state_dir, relation_cache.make(
        ["vpn"], FIELDS, applied, {"2/s1/0": BAG}, FIELDS, {2: OWN}, until=until, written=written,
        config=relation_cache.config_digest(SALT, CONFIG if config is None else config, public),
        salt=SALT, members=members))
    relation_cache.promote(state_dir)


@pytest.fixture
def unit(tmp_path):
    """hub/0's charm directory and state directory, with its SSH key and a cache taken by a run
    whose session used CONFIG, with s1/0 related on relation 2."""
    charm_dir = tmp_path / "unit-hub-0" / "charm"
    charm_dir.mkdir(parents=True)
    state = unitstate.unit_state_dir(str(charm_dir))
    os.makedirs(state)
    with open(os.path.join(state, unitstate.KEY_FILE), "w") as f:
        f.write("private\n")
    with open(os.path.join(state, unitstate.KEY_FILE + ".pub"), "w") as f:
        f.write(PUBLIC + "\n")
    save(state)
    return str(charm_dir), state


def env_for(charm_dir, hook=ENV_HOOK, me="hub/0"):
    return {"JUJU_DISPATCH_PATH": hook, "JUJU_CHARM_DIR": charm_dir, "JUJU_UNIT_NAME": me}


def test_the_config_of_the_last_session_ends_the_hook(unit, monkeypatch):
    tools = Tools(monkeypatch)
    assert hookgate.nothing_to_do(env_for(unit[0]))
    assert tools.calls == [["config-get", "--all"], ["relation-ids", "vpn"], ["relation-list", "-r", "vpn:2"],
                           ["relation-get", "-r", "2", "-", "s1/0"], ["relation-get", "-r", "2", "-", "hub/0"]]


@pytest.mark.parametrize("change", [{"ssh-password": "other"}, {"ssh-port": 2222}, {"new-option": ""}])
def test_any_other_config_runs_the_charm(unit, monkeypatch, change):
    Tools(monkeypatch, config=dict(CONFIG, **change))
    assert not hookgate.nothing_to_do(env_for(unit[0]))


def test_a_removed_option_runs_the_charm(unit, monkeypatch):
    Tools(monkeypatch, config={k: v for k, v in CONFIG.items() if k != "ssh-port"})
    assert not hookgate.nothing_to_do(env_for(unit[0]))


def test_the_digest_is_salted_and_keeps_no_secret(unit):
    with open(relation_cache.path(unit[1])) as f:
        text = f.read()
    assert "secret" not in text
    assert relation_cache.config_digest(SALT, CONFIG, PUBLIC) != relation_cache.config_digest("other", CONFIG, PUBLIC)


def test_a_new_or_half_written_ssh_key_runs_the_charm(unit, monkeypatch):
    pub = os.path.join(unit[1], unitstate.KEY_FILE + ".pub")
    with open(pub, "w") as f:
        f.write(PUBLIC.replace("hub", "new") + "\n")
    Tools(monkeypatch)
    assert not hookgate.nothing_to_do(env_for(unit[0]))
    os.remove(pub)
    tools = Tools(monkeypatch)
    assert not hookgate.nothing_to_do(env_for(unit[0]))
    assert tools.calls == [], "a pair the charm must repair: no tool call"


def test_without_a_key_the_digest_takes_none(unit, monkeypatch):
    os.remove(os.path.join(unit[1], unitstate.KEY_FILE))
    os.remove(os.path.join(unit[1], unitstate.KEY_FILE + ".pub"))
    save(unit[1], public="")
    Tools(monkeypatch)
    assert hookgate.nothing_to_do(env_for(unit[0]))


@pytest.mark.parametrize("members", [
    {"vpn": {"vpn:2": ["s1/0", "s2/0"]}},             # a unit joined; its hooks have not run
    {"vpn": {"vpn:2": []}},                          # s1/0 left
    {"vpn": {"vpn:2": ["s1/0"], "vpn:3": ["s3/0"]}},  # a new relation
    {"vpn": {}},
])
def test_other_related_units_run_the_charm(unit, monkeypatch, members):
    Tools(monkeypatch, members=members)
    assert not hookgate.nothing_to_do(env_for(unit[0]))


def test_a_changed_databag_runs_the_charm(unit, monkeypatch):
    Tools(monkeypatch, data={"2": {"s1/0": dict(BAG, endpoint="192.168.64.9:51820"), "hub/0": dict(OWN)}})
    assert not hookgate.nothing_to_do(env_for(unit[0]))


def test_a_publication_juju_dropped_runs_the_charm(unit, monkeypatch):
    Tools(monkeypatch, data={"2": {"s1/0": dict(BAG), "hub/0": {}}})
    assert not hookgate.nothing_to_do(env_for(unit[0]))


def test_a_member_the_cache_has_no_digest_of_runs_the_charm(unit, monkeypatch):
    """A unit the charm never read (an OAI unit's first session leaves some unread)."""
    save(unit[1], members=("2/s1/0", "2/s2/0"))
    tools = Tools(monkeypatch, members={"vpn": {"vpn:2": ["s1/0", "s2/0"]}},
                  data={"2": {"s1/0": dict(BAG), "s2/0": dict(BAG), "hub/0": dict(OWN)}})
    assert not hookgate.nothing_to_do(env_for(unit[0]))
    assert ["relation-get", "-r", "2", "-", "s2/0"] not in tools.calls


@pytest.mark.parametrize("setup", ["no-config", "no-plan", "unconfirmed", "no-cache", "pending-only"])
def test_what_no_cache_can_end_runs_the_charm_without_a_tool_call(unit, monkeypatch, setup):
    if setup == "no-config":
        relation_cache.save(unit[1], relation_cache.make(["vpn"], FIELDS, "fp-1", {"2/s1/0": BAG}, FIELDS, {2: OWN}))
        relation_cache.promote(unit[1])
    elif setup == "no-plan":
        save(unit[1], applied="")
    elif setup == "unconfirmed":
        unitstate.mark_vnf_unconfirmed(unit[1])
    elif setup == "no-cache":
        relation_cache.forget(unit[1])
    else:
        relation_cache.forget(unit[1])
        relation_cache.save(unit[1], relation_cache.make(
            ["vpn"], FIELDS, "fp-1", {"2/s1/0": BAG}, FIELDS, {2: OWN},
            config=relation_cache.config_digest(SALT, CONFIG, PUBLIC), salt=SALT, members=["2/s1/0"]))
    tools = Tools(monkeypatch)
    assert not hookgate.nothing_to_do(env_for(unit[0]))
    assert tools.calls == []


def test_after_a_rotation_deadline_the_charm_runs(unit, monkeypatch):
    save(unit[1], until=time.time() - 1)
    Tools(monkeypatch)
    assert not hookgate.nothing_to_do(env_for(unit[0]))
    save(unit[1], until=time.time() + 600)
    assert hookgate.nothing_to_do(env_for(unit[0]))


@pytest.mark.parametrize("fail", ["config-get", "relation-ids", "relation-list", "relation-get"])
def test_a_failing_tool_runs_the_charm(unit, monkeypatch, fail):
    Tools(monkeypatch, fail=[fail])
    assert not hookgate.nothing_to_do(env_for(unit[0]))


@pytest.mark.parametrize("answer", [
    {"config": ["a"]},
    {"members": {"vpn": {"vpn:2": ["S1/0"]}}},
    {"members": {"vpn": {"vpn:2": "s1/0"}}},
    {"members": {"vpn": {"vpn:x": ["s1/0"]}}},
    {"data": {"2": {"s1/0": dict(BAG, endpoint=5), "hub/0": dict(OWN)}}},
])
def test_answers_of_another_shape_run_the_charm(unit, monkeypatch, answer):
    Tools(monkeypatch, **answer)
    assert not hookgate.nothing_to_do(env_for(unit[0]))


@pytest.mark.parametrize("env", [{"JUJU_UNIT_NAME": "Hub"}, {"JUJU_UNIT_NAME": ""}, {"JUJU_CHARM_DIR": ""}])
def test_an_environment_outside_the_grammar_runs_the_charm_without_a_tool_call(unit, monkeypatch, env):
    tools = Tools(monkeypatch)
    assert not hookgate.nothing_to_do(dict(env_for(unit[0]), **env))
    assert tools.calls == []


def test_more_members_than_the_gate_reads_run_the_charm(unit, monkeypatch):
    many = ["2/s{}/0".format(i) for i in range(relation_cache.MAX_MEMBERS + 1)]
    save(unit[1], members=many)
    tools = Tools(monkeypatch)
    assert not hookgate.nothing_to_do(env_for(unit[0]))
    assert all(c[0] != "relation-get" for c in tools.calls)


@pytest.mark.parametrize("field,value", [("config", 5), ("salt", None), ("members", "2/s1/0"), ("members", [2])])
def test_a_cache_whose_config_fields_have_another_shape_is_no_cache(unit, field, value):
    path = relation_cache.path(unit[1])
    with open(path) as f:
        state = json.load(f)
    state[field] = value
    with open(path, "w") as f:
        json.dump(state, f)
    assert relation_cache.load(unit[1]) is None


def _tool_program(tool_dir, name, body):
    path = os.path.join(tool_dir, name)
    with open(path, "w") as f:
        f.write("#!/bin/sh\n" + body + "\n")
    os.chmod(path, 0o755)


def test_as_dispatch_runs_it_the_exit_status_says_whether_the_hook_is_done(unit, tmp_path):
    tools = tmp_path / "bin"
    tools.mkdir()
    _tool_program(str(tools), "config-get", "printf '%s' {}".format(shlex.quote(json.dumps(CONFIG))))
    _tool_program(str(tools), "relation-ids", "echo '[\"vpn:2\"]'")
    _tool_program(str(tools), "relation-list", "echo '[\"s1/0\"]'")
    _tool_program(str(tools), "relation-get", 'case "$4" in s1/0) printf "%s" {};; hub/0) printf "%s" {};; esac'.format(
        shlex.quote(json.dumps(BAG)), shlex.quote(json.dumps(OWN))))
    charms = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "charms")

    def run():
        env = dict(env_for(unit[0]), PATH=str(tools) + os.pathsep + os.environ["PATH"], PYTHONPATH=charms)
        return subprocess.run([sys.executable, "-S", "-m", "vpnaas.charm.hookgate"], env=env, cwd=unit[0],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
    done = run()
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    _tool_program(str(tools), "relation-list", "echo '[\"s1/0\", \"s2/0\"]'")
    assert run().returncode == 1


# ---------------------------------------------------------------------- get-ssh-public-key before ops
def _action_set_recorder(tmp_path, rc=0):
    tools = tmp_path / "action-bin"
    tools.mkdir(exist_ok=True)
    record = tmp_path / "action-set.args"
    _tool_program(str(tools), "action-set", 'for a in "$@"; do printf "%s\\n" "$a"; done >> {}\nexit {}'.format(
        shlex.quote(str(record)), rc))
    return str(tools), record


def _answered(unit, tools, hook="actions/get-ssh-public-key", monkeypatch=None):
    env = env_for(unit[0], hook=hook)
    monkeypatch.setenv("PATH", tools + os.pathsep + os.environ["PATH"])
    return hookgate.answered(env)


def test_get_ssh_public_key_is_answered_before_ops_as_the_charm_answers_it(unit, tmp_path, monkeypatch):
    tools, record = _action_set_recorder(tmp_path)
    assert _answered(unit, tools, monkeypatch=monkeypatch)
    assert record.read_text() == "pubkey=" + PUBLIC + "\n"


@pytest.mark.parametrize("case", ["no-key", "half-written", "empty", "two-lines", "not-a-key"])
def test_without_a_whole_key_the_action_reaches_the_charm(unit, tmp_path, monkeypatch, case):
    tools, record = _action_set_recorder(tmp_path)
    pub = os.path.join(unit[1], unitstate.KEY_FILE + ".pub")
    if case == "no-key":
        os.remove(os.path.join(unit[1], unitstate.KEY_FILE))
    elif case == "half-written":
        os.remove(pub)
    else:
        with open(pub, "w") as f:
            f.write({"empty": "", "two-lines": PUBLIC + "\n" + PUBLIC, "not-a-key": "$(reboot)"}[case])
    assert not _answered(unit, tools, monkeypatch=monkeypatch)
    assert not record.exists()


def test_a_failing_action_set_reaches_the_charm(unit, tmp_path, monkeypatch):
    tools, _record = _action_set_recorder(tmp_path, rc=1)
    assert not _answered(unit, tools, monkeypatch=monkeypatch)


@pytest.mark.parametrize("hook", ["actions/generate-ssh-key", "actions/verify-ssh-credentials", "hooks/install",
                                  "actions/get-ssh-public-key-x", ""])
def test_no_other_action_is_answered_before_ops(unit, tmp_path, monkeypatch, hook):
    tools, record = _action_set_recorder(tmp_path)
    assert not _answered(unit, tools, hook=hook, monkeypatch=monkeypatch)
    assert not record.exists()
