"""A hub's relation hook makes as many hook-tool calls with many spokes as with two: it lists the
members of its own relation only (relation-list), and takes the other relations' members and data
from its relation memory (Juju 2.9 changes them only with hooks of their own: relation_memory).
The built charms through the emulated OSM and Juju (the tool calls counted by the emulated unit
agent that answers them), real OpenSSH and wireguard-go, the star of the bench's synthetic part."""
import pytest

from testbed import convergence
from testbed.emulators import vim

pytestmark = pytest.mark.timeout(600)

#: The tunnel endpoints of the hub's charm (wireguard-proxy: vpn and vpn-peer): relation-ids once each.
ENDPOINTS = 2
#: The tools whose calls depend on what a hook found changed (its writes, the juju-log lines of
#: what it did, the statuses it set), not on the number of relations.
WHAT_CHANGED = ("relation-set", "juju-log", "status-set")


def _hub_relation_runs(tmp_path, k):
    """The hub's relation hooks that ran the charm once the star of ``k`` spokes converged and one
    spoke's data changed (it asks for ``peer-keys``, then no longer: the hub answers each time)."""
    runner = convergence.Runner(_hub_relation_runs.charms, str(tmp_path / "star-{}".format(k)),
                                vim.userspace_wireguard(), 1)
    runs = []

    def then(star, _rec):
        log = star.model.hook_log
        rid = next(int(r.relation.split(":")[1]) for r in log if r.unit == "hub/0" and r.remote == "s1/0")
        start = len(log)
        for value in ("yes", None):
            star.model.set_relation_data(rid, "s1/0", {"wants-peer-keys": value})
        runs.extend(r for r in log[start:] if r.unit == "hub/0" and r.relation != ""
                    and convergence.hook_kind(r) != "gate")
    convergence.run_synthetic_once(runner, k, hub_last=True, then=then)
    assert len(runs) >= 2, "the hub's charm ran for each change of the spoke's data"
    return runs


def _counts(run):
    return {tool: n for tool, n in sorted(run.tools.items()) if tool not in WHAT_CHANGED}


def test_a_hub_relation_hook_makes_as_many_tool_calls_with_6_spokes_as_with_2(environment_ready, local_charms,
                                                                              tmp_path):
    _hub_relation_runs.charms = local_charms
    by_size = {k: _hub_relation_runs(tmp_path, k) for k in (2, 6)}
    for k, runs in by_size.items():
        for run in runs:
            assert run.tools.get("relation-list") == 1, (k, run.hook, run.tools)
            assert run.tools.get("relation-ids") == ENDPOINTS, (k, run.hook, run.tools)
    small, big = ([_counts(r) for r in by_size[k]] for k in (2, 6))
    assert sorted(map(repr, big)) == sorted(map(repr, small)), "the same reads at 6 spokes as at 2"
    assert max(r.tool_calls for r in by_size[6]) <= max(r.tool_calls for r in by_size[2]), (
        [r.tools for r in by_size[6]], [r.tools for r in by_size[2]])
