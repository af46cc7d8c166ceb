"""vpnaas.charm.hookgate: a relation hook that can change nothing ends before ops is imported; every
other hook, and anything unexpected, runs the charm. The hook tools are replaced by a recorder
that answers from a dict (tests/harness checks the gate against the charm's own decision, and
the end-to-end tests run it through the built charms' dispatch)."""
import json
import os
import shlex
import subprocess
import sys

import pytest

from vpnaas.charm import hookgate, relation_cache
from vpnaas.core import unitstate

FIELDS = ["vpnaas-schema", "public-key", "endpoint", "tunnel-address", "service-prefixes", "wants-peer-keys"]
BAG = {"vpnaas-schema": "1", "public-key": "A" * 43 + "=", "endpoint": "192.168.64.2:51820",
       "tunnel-address": "10.251.0.2/24", "service-prefixes": "172.17.1.1/32"}
#: What this unit (hub/0) published on relation 2, as Juju holds it after the hook committed.
OWN_FIELDS = FIELDS + ["peer-keys"]
OWN = {"vpnaas-schema": "1", "public-key": "B" * 43 + "=", "endpoint": "192.168.64.1:51820",
       "tunnel-address": "10.251.0.1/24", "service-prefixes": "172.17.0.1/32", "peer-keys": ""}


class Tools(object):
    """The hook tools a hook would call: answers from ``data`` and ``config``, every call recorded."""

    def __init__(self, monkeypatch, config=None, data=None, fail=()):
        self.calls = []
        self.config = {"ssh-hostname": "10.0.0.5"} if config is None else config
        self.data = {"2": {"s1/0": dict(BAG), "hub/0": dict(OWN)}} if data is None else data
        self.fail = set(fail)
        monkeypatch.setattr(hookgate, "_tool", self)

    def __call__(self, *args):
        self.calls.append(list(args))
        if args[0] in self.fail:
            return hookgate.FAILED
        if args[0] == "config-get":
            return self.config.get(args[1])
        if args[0] == "relation-get":
            assert args[1] == "-r" and args[3] == "-"
            return self.data.get(args[2], {}).get(args[4], {})
        raise AssertionError("the gate called {}".format(args))


@pytest.fixture
def unit(tmp_path):
    """A unit's charm directory and its state directory beside it, with a cache taken while the
    VNF held plan "fp-1" and s1/0 had published BAG on relation 2."""
    charm_dir = tmp_path / "unit-hub-0" / "charm"
    charm_dir.mkdir(parents=True)
    state = unitstate.unit_state_dir(str(charm_dir))
    save(state, "fp-1")
    return str(charm_dir), state


def save(state, applied, own=None):
    """The cache as a charm run that ended normally leaves it (written pending, then promoted)."""
    relation_cache.save(state, relation_cache.make(["vpn"], FIELDS, applied, {"2/s1/0": BAG}, OWN_FIELDS,
                                                   {2: OWN if own is None else own}))
    relation_cache.promote(state)


def env_for(charm_dir, hook="hooks/vpn-relation-changed", relation="vpn", rid="vpn:2", remote="s1/0"):
    env = {"JUJU_DISPATCH_PATH": hook, "JUJU_CHARM_DIR": charm_dir, "JUJU_RELATION": relation,
           "JUJU_RELATION_ID": rid, "JUJU_UNIT_NAME": "hub/0", "JUJU_REMOTE_APP": "s1"}
    if remote is not None:
        env["JUJU_REMOTE_UNIT"] = remote
    return env


def test_unchanged_data_ends_the_hook_with_two_tool_calls(unit, monkeypatch):
    tools = Tools(monkeypatch)
    assert hookgate.nothing_to_do(env_for(unit[0]))
    assert tools.calls == [["relation-get", "-r", "2", "-", "s1/0"], ["relation-get", "-r", "2", "-", "hub/0"]]


def test_a_field_outside_the_cache_changes_nothing(unit, monkeypatch):
    tools = Tools(monkeypatch, data={"2": {"s1/0": dict(BAG, **{"peer-keys": "x", "other": "y"}),
                                           "hub/0": dict(OWN, **{"private-address": "192.168.64.1"})}})
    assert hookgate.nothing_to_do(env_for(unit[0])) and len(tools.calls) == 2


@pytest.mark.parametrize("field", OWN_FIELDS)
def test_a_publication_juju_dropped_runs_the_charm(unit, monkeypatch, field):
    """The hook that published OWN failed to commit (controller unreachable, agent restarted):
    Juju hands the retried hook this unit's data without that publication."""
    tools = Tools(monkeypatch, data={"2": {"s1/0": dict(BAG), "hub/0": dict(OWN, **{field: "older"})}})
    assert not hookgate.nothing_to_do(env_for(unit[0]))
    assert [c[0] for c in tools.calls] == ["relation-get", "relation-get", "config-get"]


def test_nothing_published_yet_on_a_relation_runs_the_charm(unit, monkeypatch):
    Tools(monkeypatch, data={"2": {"s1/0": dict(BAG), "hub/0": {}}})
    assert not hookgate.nothing_to_do(env_for(unit[0]))


def test_a_cache_whose_run_never_committed_is_never_read(unit, monkeypatch):
    """A hook died after its reconcile wrote the cache, before ops committed: the pending copy
    is not the cache, and the next charm run removes it."""
    relation_cache.forget(unit[1])
    relation_cache.save(unit[1], relation_cache.make(["vpn"], FIELDS, "fp-2", {"2/s1/0": BAG}, OWN_FIELDS, {2: OWN}))
    Tools(monkeypatch)
    assert relation_cache.load(unit[1]) is None
    assert not hookgate.nothing_to_do(env_for(unit[0]))
    relation_cache.discard_pending(unit[1])
    assert not os.path.exists(relation_cache.pending_path(unit[1]))
    relation_cache.promote(unit[1])     # nothing pending: nothing becomes the cache
    assert relation_cache.load(unit[1]) is None


def test_a_vnf_a_dead_run_stepped_runs_the_charm_until_a_run_ends_normally(unit, monkeypatch):
    """A run applied a step on the VNF and died before its commit (an agent restart during an
    action: Juju never runs it again): the VNF may hold what neither the cache nor the unit's
    data shows, so every hook runs the charm, which contacts the VNF, until a run that did ends
    normally (charm_base.main: unitstate.confirm_vnf after ops committed)."""
    tools = Tools(monkeypatch)
    unitstate.mark_vnf_unconfirmed(unit[1])
    assert not hookgate.nothing_to_do(env_for(unit[0])) and tools.calls == []
    unitstate.vnf_confirmed_pending(unit[1])       # a run's session ended ...
    unitstate.discard_vnf_confirmation(unit[1])    # ... and it died before its commit
    unitstate.confirm_vnf(unit[1])
    assert unitstate.vnf_unconfirmed(unit[1]) and not hookgate.nothing_to_do(env_for(unit[0]))
    unitstate.vnf_confirmed_pending(unit[1])
    assert not unitstate.vnf_unconfirmed(unit[1])  # the session of the run under way counts
    unitstate.confirm_vnf(unit[1])
    assert hookgate.nothing_to_do(env_for(unit[0]))
    assert sorted(os.listdir(unit[1])) == [relation_cache.FILE_NAME]


def test_forget_removes_the_pending_copy_too(unit):
    relation_cache.save(unit[1], relation_cache.make(["vpn"], FIELDS, "fp-2", {}, OWN_FIELDS, {}))
    relation_cache.forget(unit[1])
    relation_cache.promote(unit[1])
    assert relation_cache.load(unit[1]) is None


@pytest.mark.parametrize("field", FIELDS)
def test_a_changed_tunnel_field_runs_the_charm(unit, monkeypatch, field):
    tools = Tools(monkeypatch, data={"2": {"s1/0": dict(BAG, **{field: "changed"}), "hub/0": dict(OWN)}})
    assert not hookgate.nothing_to_do(env_for(unit[0]))
    assert [c[0] for c in tools.calls] == ["relation-get", "config-get"]


def test_a_unit_the_cache_does_not_know_runs_the_charm(unit, monkeypatch):
    Tools(monkeypatch, data={"2": {"s9/0": dict(BAG)}})
    assert not hookgate.nothing_to_do(env_for(unit[0], remote="s9/0"))


@pytest.mark.parametrize("hook", ["hooks/vpn-relation-created", "hooks/vpn-relation-changed"])
def test_before_the_config_primitive_arriving_relation_hooks_end_here(unit, monkeypatch, hook):
    tools = Tools(monkeypatch, config={"ssh-hostname": ""}, data={"2": {"s1/0": {}}})
    assert hookgate.nothing_to_do(env_for(unit[0], hook=hook))
    assert tools.calls[-1] == ["config-get", "ssh-hostname"] and len(tools.calls) <= 2


def test_an_unset_option_counts_as_empty(unit, monkeypatch):
    Tools(monkeypatch, config={}, data={"2": {"s1/0": {}}})
    assert hookgate.nothing_to_do(env_for(unit[0], hook="hooks/vpn-relation-created", remote=None))


def test_with_a_hostname_created_runs_the_charm(unit, monkeypatch):
    Tools(monkeypatch)
    assert not hookgate.nothing_to_do(env_for(unit[0], hook="hooks/vpn-relation-created", remote=None))


@pytest.mark.parametrize("config", [{"ssh-hostname": ""}, {"ssh-hostname": "192.168.8.10"}])
def test_a_joined_hook_ends_here_without_a_tool_call_its_changed_hook_follows(unit, monkeypatch, config):
    """Juju runs relation-changed for the unit right after its relation-joined (ChangedPending,
    kept across an agent restart): that hook does the work, once."""
    tools = Tools(monkeypatch, config=config, data={"2": {"s1/0": {"public-key": "changed"}}})
    assert hookgate.nothing_to_do(env_for(unit[0], hook="hooks/vpn-relation-joined"))
    assert tools.calls == []
    # ... but not without a unit (no relation-changed is promised then), nor before any reconcile.
    assert hookgate.nothing_to_do(env_for(unit[0], hook="hooks/vpn-relation-joined", remote=None)) == (
        not config["ssh-hostname"])


def test_a_joined_hook_of_a_unit_that_never_reconciled_runs_the_charm(tmp_path, monkeypatch):
    charm = tmp_path / "unit-hub-0" / "charm"
    charm.mkdir(parents=True)
    Tools(monkeypatch)
    assert not hookgate.nothing_to_do(env_for(str(charm), hook="hooks/vpn-relation-joined"))


@pytest.mark.parametrize("hook", ["hooks/vpn-relation-departed", "hooks/vpn-relation-broken", "hooks/config-changed",
                                  "hooks/update-status", "hooks/install", "actions/verify-ssh-credentials",
                                  "hooks/upgrade-charm", ""])
def test_every_other_hook_runs_the_charm_without_a_tool_call(unit, monkeypatch, hook):
    tools = Tools(monkeypatch, config={"ssh-hostname": ""})
    assert not hookgate.nothing_to_do(env_for(unit[0], hook=hook))
    assert tools.calls == []


def test_an_endpoint_that_carries_no_tunnel_runs_the_charm(unit, monkeypatch):
    tools = Tools(monkeypatch, config={"ssh-hostname": ""})
    assert not hookgate.nothing_to_do(env_for(unit[0], hook="hooks/db-relation-changed", relation="db", rid="db:2"))
    assert tools.calls == []


def test_without_a_cache_nothing_is_skipped(unit, monkeypatch):
    tools = Tools(monkeypatch, config={"ssh-hostname": ""})
    relation_cache.forget(unit[1])
    assert not hookgate.nothing_to_do(env_for(unit[0]))
    assert tools.calls == []


GOOD = {"format": 2, "applied": "fp-1", "endpoints": ["vpn"], "fields": FIELDS, "digests": {},
        "own_fields": OWN_FIELDS, "own": {}}


@pytest.mark.parametrize("content", [
    "", "{", "[]", "null",
    json.dumps(dict(GOOD, format=1)),
    json.dumps(dict(GOOD, applied=1)),
    json.dumps(dict(GOOD, endpoints="vpn")),
    json.dumps(dict(GOOD, fields=[1])),
    json.dumps(dict(GOOD, digests={"2/s1/0": 5})),
    json.dumps(dict(GOOD, own_fields="peer-keys")),
    json.dumps(dict(GOOD, own={"2": None})),
    json.dumps({k: v for k, v in GOOD.items() if k != "own"}),
])
def test_a_cache_this_code_did_not_write_is_no_cache(unit, monkeypatch, content):
    tools = Tools(monkeypatch, config={"ssh-hostname": ""})
    with open(relation_cache.path(unit[1]), "w") as f:
        f.write(content)
    assert relation_cache.load(unit[1]) is None
    assert not hookgate.nothing_to_do(env_for(unit[0]))
    assert tools.calls == []


def test_a_cache_taken_for_no_plan_skips_nothing_by_digest(unit, monkeypatch):
    save(unit[1], "")
    tools = Tools(monkeypatch)
    assert not hookgate.nothing_to_do(env_for(unit[0]))
    assert tools.calls == [["config-get", "ssh-hostname"]]


def test_app_data_changes_are_never_skipped_by_digest(unit, monkeypatch):
    tools = Tools(monkeypatch)
    assert not hookgate.nothing_to_do(env_for(unit[0], remote=None))
    assert tools.calls == [["config-get", "ssh-hostname"]]


def test_a_failing_relation_get_skips_nothing_by_digest(unit, monkeypatch):
    tools = Tools(monkeypatch, fail={"relation-get"})
    assert not hookgate.nothing_to_do(env_for(unit[0]))
    assert [c[0] for c in tools.calls] == ["relation-get", "config-get"]


def test_a_failing_config_get_counts_as_a_hostname(unit, monkeypatch):
    Tools(monkeypatch, config={"ssh-hostname": ""}, fail={"config-get"})
    assert not hookgate.nothing_to_do(env_for(unit[0], hook="hooks/vpn-relation-created", remote=None))


@pytest.mark.parametrize("answer", [["a"], "text", 3, {"public-key": 5}])
def test_remote_data_of_another_shape_is_not_compared(unit, monkeypatch, answer):
    Tools(monkeypatch, data={"2": {"s1/0": answer}})
    assert not hookgate.nothing_to_do(env_for(unit[0]))


@pytest.mark.parametrize("value", [7, True, ["x"], {"a": 1}])
def test_a_hostname_of_another_shape_counts_as_set(unit, monkeypatch, value):
    Tools(monkeypatch, config={"ssh-hostname": value}, data={"2": {"s1/0": {}}})
    assert not hookgate.nothing_to_do(env_for(unit[0], hook="hooks/vpn-relation-created", remote=None))


@pytest.mark.parametrize("field,value", [
    ("JUJU_DISPATCH_PATH", "hooks/vpn-relation-changed\n"),
    ("JUJU_DISPATCH_PATH", "hooks/../vpn-relation-changed"),
    ("JUJU_DISPATCH_PATH", "hooks/VPN-relation-changed"),
    ("JUJU_RELATION", "vpn-peer"),
    ("JUJU_RELATION_ID", "vpn:2 3"),
    ("JUJU_RELATION_ID", "vpn:-2"),
    ("JUJU_RELATION_ID", "vpn:2\n"),
    ("JUJU_RELATION_ID", ""),
    ("JUJU_REMOTE_UNIT", "s1/0 --app"),
    ("JUJU_REMOTE_UNIT", "-s1/0"),
    ("JUJU_REMOTE_UNIT", "s1/0\n"),
    ("JUJU_REMOTE_UNIT", "s1"),
    ("JUJU_CHARM_DIR", ""),
    ("JUJU_UNIT_NAME", ""),
    ("JUJU_UNIT_NAME", "hub/0 -"),
    ("JUJU_UNIT_NAME", "hub"),
])
def test_an_environment_outside_the_grammar_runs_the_charm_without_a_tool_call(unit, monkeypatch, field, value):
    tools = Tools(monkeypatch, config={"ssh-hostname": ""})
    env = env_for(unit[0])
    env[field] = value
    assert not hookgate.nothing_to_do(env)
    assert tools.calls == []


def test_a_relation_id_without_its_endpoint_prefix_is_accepted(unit, monkeypatch):
    Tools(monkeypatch)
    assert hookgate.nothing_to_do(env_for(unit[0], rid="2"))


def test_the_state_directory_is_beside_the_resolved_charm_directory(tmp_path):
    real = tmp_path / "agents" / "unit-a-0" / "charm"
    real.mkdir(parents=True)
    link = tmp_path / "charm-link"
    link.symlink_to(real)
    assert unitstate.unit_state_dir(str(link)) == str(tmp_path / "agents" / "unit-a-0" / "vpnaas")


def test_the_cache_file_is_written_whole_and_private(unit):
    state_dir = unit[1]
    assert oct(os.stat(relation_cache.path(state_dir)).st_mode & 0o777) == "0o600"
    assert oct(os.stat(state_dir).st_mode & 0o777) == "0o700"
    assert not [n for n in os.listdir(state_dir) if n.endswith(".tmp")]
    relation_cache.forget(state_dir)
    relation_cache.forget(state_dir)       # idempotent
    assert relation_cache.load(state_dir) is None


def _run_gate(env, tool_dir):
    """The gate as dispatch runs it: a new interpreter without site, real tool programs on PATH."""
    charms = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "charms")
    full = dict(env, PATH=tool_dir + os.pathsep + os.environ.get("PATH", ""), PYTHONPATH=charms)
    return subprocess.run([sys.executable, "-S", "-m", "vpnaas.charm.hookgate"], env=full, cwd=env["JUJU_CHARM_DIR"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=60)


def _tool_program(tool_dir, name, body):
    path = os.path.join(tool_dir, name)
    with open(path, "w") as f:
        f.write("#!/bin/sh\n" + body + "\n")
    os.chmod(path, 0o755)


def test_as_dispatch_runs_it_the_exit_status_says_whether_the_hook_is_done(unit, tmp_path):
    tools = tmp_path / "bin"
    tools.mkdir()
    answers = 'case "$4" in s1/0) printf "%s" {};; hub/0) printf "%s" {};; esac'.format(
        shlex.quote(json.dumps(BAG)), shlex.quote(json.dumps(OWN)))
    _tool_program(str(tools), "relation-get", answers)
    _tool_program(str(tools), "config-get", "echo '\"10.0.0.5\"'")
    done = _run_gate(env_for(unit[0]), str(tools))
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    _tool_program(str(tools), "relation-get", "echo '{}'")
    assert _run_gate(env_for(unit[0]), str(tools)).returncode == 1
    _tool_program(str(tools), "relation-get", "exit 3")
    assert _run_gate(env_for(unit[0]), str(tools)).returncode == 1
    assert _run_gate(env_for(unit[0], hook="hooks/install"), str(tools)).returncode == 1


def test_a_hook_after_a_rotation_deadline_runs_the_charm(unit, monkeypatch):
    """The cache of a plan with a key rotation is valid until that rotation's first deadline
    (rotation.py): a hook after it reaches the charm, which plans without the rotation whose time
    is up, even though nothing in the relation changed."""
    import time
    for until, skipped in ((time.time() + 60, True), (time.time() - 1, False)):
        relation_cache.save(unit[1], relation_cache.make(["vpn"], FIELDS, "fp-1", {"2/s1/0": BAG}, OWN_FIELDS,
                                                         {2: OWN}, until=until))
        relation_cache.promote(unit[1])
        Tools(monkeypatch)
        assert hookgate.nothing_to_do(env_for(unit[0])) is skipped
    with open(relation_cache.path(unit[1])) as f:
        text = f.read()
    with open(relation_cache.path(unit[1]), "w") as f:
        f.write(text.replace('"until": ', '"until": "soon", "x": '))
    assert relation_cache.load(unit[1]) is None, "an until that is no number makes no cache"


def _save_written(state, written, own=None):
    own = own or {rid: OWN for rid in ["2"] + list(written)}
    relation_cache.save(state, relation_cache.make(["vpn"], FIELDS, "fp-1", {"2/s1/0": BAG}, OWN_FIELDS, own,
                                                   written=written))
    relation_cache.promote(state)


def test_what_the_last_run_wrote_on_other_relations_is_read_back_before_skipping(unit, monkeypatch):
    """The last charm run wrote on relations 3 and 4 too (a dropped commit loses all its writes):
    the gate skips only once Juju holds them."""
    _save_written(unit[1], ["3", "4"])
    tools = Tools(monkeypatch, data={"2": {"s1/0": dict(BAG), "hub/0": dict(OWN)}, "3": {"hub/0": dict(OWN)},
                                     "4": {"hub/0": dict(OWN)}})
    assert hookgate.nothing_to_do(env_for(unit[0]))
    assert [c[2] for c in tools.calls] == ["2", "2", "3", "4"]
    Tools(monkeypatch, data={"2": {"s1/0": dict(BAG), "hub/0": dict(OWN)}, "3": {"hub/0": dict(OWN)},
                             "4": {"hub/0": {}}})
    assert not hookgate.nothing_to_do(env_for(unit[0]))


def test_after_a_run_that_wrote_on_many_relations_the_charm_reads_them_back(unit, monkeypatch):
    written = [str(r) for r in range(3, 4 + relation_cache.MAX_WRITTEN)]
    _save_written(unit[1], written)
    tools = Tools(monkeypatch, data=dict({"2": {"s1/0": dict(BAG), "hub/0": dict(OWN)}},
                                         **{r: {"hub/0": dict(OWN)} for r in written}))
    assert not hookgate.nothing_to_do(env_for(unit[0]))
    assert [c[0] for c in tools.calls] == ["relation-get", "config-get"], "the gate read none of them"


def test_a_cache_with_written_relations_of_the_wrong_shape_is_no_cache(unit):
    _save_written(unit[1], ["3"])
    path = relation_cache.path(unit[1])
    with open(path) as f:
        state = json.load(f)
    state["written"] = [3]
    with open(path, "w") as f:
        json.dump(state, f)
    assert relation_cache.load(unit[1]) is None
