"""The hub takes its spokes' keys from their applications' mirrors (relation_data, "Mirror";
docs/architecture.md): the built charms through the emulated OSM and Juju, whose unit agent runs
the hooks in Juju 2.9's order (an application's relation-changed before the relation's joins,
relation/resolver.go; the agent's cache of the spokes' unit data, fresh application data:
hookcontext.py), real OpenSSH and wireguard-go, the star of the bench's synthetic part.

Without the mirror the hub took one session per spoke (k + 1 in all); with it a hub hook takes
every spoke that published so far, and the later hooks about them end in the hook gate."""
import pytest

from testbed import convergence
from testbed.emulators import vim

pytestmark = pytest.mark.timeout(900)

SPOKES = 6


def _star(charms, workdir, parallel):
    runner = convergence.Runner(charms, workdir, vim.userspace_wireguard(), parallel)
    seen = {}

    def then(star, _rec):
        log = star.model.hook_log
        hub = [r for r in log if r.unit == "hub/0"]
        seen["sessions"] = sum(1 for r in hub if convergence.opened_session(r) and convergence.hook_kind(r) != "verify")
        seen["app_changed"] = [r for r in hub if r.relation and not r.remote and r.hook.endswith("-relation-changed")]
        seen["app_charm_runs"] = [r for r in seen["app_changed"] if convergence.hook_kind(r) != "gate"]
        seen["spoke_app_changed"] = [r for r in log if r.unit != "hub/0" and r.relation and not r.remote]
    convergence.run_synthetic_once(runner, SPOKES, hub_last=True, then=then)
    return seen


@pytest.mark.parametrize("parallel", [1, 0])
def test_the_hub_takes_the_spokes_keys_from_their_mirrors_in_few_sessions(environment_ready, local_charms,
                                                                          tmp_path, parallel):
    seen = _star(local_charms, str(tmp_path / "star"), parallel)
    # Converged (run_synthetic_once waits for every tunnel's handshake), and:
    assert len(seen["app_changed"]) >= SPOKES, "each spoke's mirror came as an application-data relation-changed"
    assert seen["spoke_app_changed"], "each spoke heard its hub's request"
    assert seen["sessions"] <= 3, (seen["sessions"], "without the mirror: one per spoke, {}".format(SPOKES + 1))
    assert len(seen["app_charm_runs"]) <= 3, [r.hook for r in seen["app_charm_runs"]]
