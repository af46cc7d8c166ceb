"""testbed.hookclass: the classification of a unit's hooks by event, outcome and cause, on a
hand-made hook log (the emulated VCA's HookRun records)."""
from testbed import hookclass
from testbed.emulators.vca import HookRun
from vpnaas.charm.base import RECONCILE_SESSION


def run(t, unit, hook, remote="", causes=(), log=()):
    return HookRun(t, t + 1, unit, hook, 1.0, "1" if remote else "", list(log), 0, {}, "c{}".format(t), remote,
                   tuple(causes))


def test_relation_changed_hooks_are_classified_by_what_the_remote_wrote():
    key_write = ("s1/0", "hooks/config-changed", ["endpoint", "public-key"])
    log = [
        run(0, "hub/0", "hooks/vpn-relation-joined", "s1/0"),
        run(1, "hub/0", "hooks/vpn-relation-changed", "s1/0", [("s1/0", "joined", [])]),
        run(5, "hub/0", "hooks/vpn-relation-changed", "s1/0", [key_write],
            log=[RECONCILE_SESSION + " x (1 device(s))"]),
        run(6, "hub/0", "hooks/vpn-relation-changed", "s2/0", [("s2/0", "joined", []), key_write],
            log=["ops started"]),
        run(7, "hub/0", "hooks/config-changed", log=["ops started"]),
        run(8, "s1/0", "hooks/vpn-peer-relation-changed", "hub/0", [("hub/0", "hooks/x", ["peer-keys"])]),
    ]
    c = hookclass.classify(log, "hub/0", since=1)
    assert c["hooks"] == 4 and c["sessions"] == 1 and c["gate"] == 1
    assert c["by_event"] == {"changed gate": 1, "changed session": 1, "changed charm": 1, "config-changed charm": 1}
    assert c["changed_by_cause"] == {"joined -> gate": 1, "config-changed:endpoint,public-key -> session": 1,
                                     "joined + config-changed:endpoint,public-key -> charm": 1}
    assert c["remote_units"] == 2 and c["hooks_per_remote_unit"] == 1.5
    # the writes the remote units made (not the hook Juju runs after joined): one each
    assert c["remote_writes_per_remote_unit"] == 1.0


def test_sequence_lists_a_units_hooks_in_order_from_a_time():
    log = [run(10, "hub/0", "hooks/install"), run(12, "hub/0", "hooks/vpn-relation-changed", "s1/0",
                                                  [("s1/0", "joined", [])])]
    assert hookclass.sequence(log, "hub/0", 10) == [[0, 1, "install", "", "gate", "-"],
                                                     [2, 3, "changed", "s1/0", "gate", "joined"]]


def test_spokes_counts_every_spokes_hooks_per_spoke_from_a_time():
    log = [run(0, "s1/0", "hooks/install"),
           run(2, "s1/0", "hooks/config-changed", log=[RECONCILE_SESSION + " x (1 device(s))"]),
           run(3, "s2/0", "hooks/config-changed", log=["ops started"]),
           run(4, "hub/0", "hooks/vpn-relation-changed", "s1/0", log=[RECONCILE_SESSION + " y"])]
    sp = hookclass.spokes(log, since=1)
    assert sp["spokes"] == 2 and sp["hooks_per_spoke"] == 1.0 and sp["sessions_per_spoke"] == 0.5
    assert sp["by_event_per_spoke"] == {"config-changed charm": 0.5, "config-changed session": 0.5}


def test_star_record_is_what_the_bench_keeps_of_a_star():
    class Model(object):
        config_times = [3.0, 1.0, 2.5]
        hook_log = [run(2, "hub/0", "hooks/vpn-relation-changed", "s1/0", [("s1/0", "hooks/config-changed", ["k"])]),
                    run(2, "s1/0", "hooks/config-changed", log=["ops started"])]
    rec = hookclass.star_record(Model())
    assert rec["seconds_config_spread"] == 2.0 and rec["hub_hook_classes"]["hooks"] == 1
    assert rec["spoke_hook_classes"]["hooks_per_spoke"] == 1.0
