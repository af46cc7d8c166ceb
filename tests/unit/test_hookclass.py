"""testbed.hookclass: the classification of a unit's hooks by event, outcome and cause, on a
hand-made hook log (the emulated VCA's HookRun records)."""
import io

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


def test_uapi_state_reads_the_first_peer_handshake_and_preshared_key():
    none = "private_key=ab\nlisten_port=51820\nerrno=0\n\n"
    assert hookclass.uapi_state(none) == {"peer": False, "handshake": False, "psk": False}
    peer = ("private_key=ab\npublic_key=cd\npreshared_key=" + hookclass.NO_PSK + "\nlast_handshake_time_sec=0\n"
            "last_handshake_time_nsec=0\nerrno=0\n\n")
    assert hookclass.uapi_state(peer) == {"peer": True, "handshake": False, "psk": False}
    up = peer.replace("last_handshake_time_sec=0\n", "last_handshake_time_sec=1764313000\n")
    assert hookclass.uapi_state(up) == {"peer": True, "handshake": True, "psk": False}
    assert hookclass.uapi_state(up.replace(hookclass.NO_PSK, "1f" * 32))["psk"]
    assert hookclass.uapi_state("") == {"peer": False, "handshake": False, "psk": False}


def test_uapi_get_asks_no_socket_that_does_not_listen():
    class Vnf(object):
        ns_pid = 1

        def uapi_listening(self, device):
            return False
    assert hookclass.uapi_get(Vnf(), "wg-s6a") == ""


def test_timeline_gives_each_units_chain_from_the_last_config():
    class Model(object):
        config_apps = [("hss", 10.0), ("mme", 12.0)]
        config_times = [10.0, 12.0]
        hook_log = [run(5, "mme/0", "hooks/install"),
                    run(12, "mme/0", "hooks/config-changed", log=[RECONCILE_SESSION + " x (3 device(s))"]),
                    run(13, "hss/0", "hooks/s6a-relation-changed", "mme/0", log=[RECONCILE_SESSION + " y"]),
                    run(14, "hss/0", "actions/verify-ssh-credentials", log=["ops started"])]
    events = {("hss", "wg-s6a"): {"peer": 13.5, "handshake": 13.75}, ("mme", "wg-s6a"): {}, ("enb", "wg-s1c"): {}}
    chain = hookclass.timeline(Model(), events)
    assert chain["hss/0"]["config"] == -2.0 and chain["mme/0"]["config"] == 0.0 and "enb/0" not in chain
    assert chain["mme/0"]["runs"] == [[0.0, 1.0, "config-changed", "", "session"]]      # install ended before
    assert chain["hss/0"]["runs"] == [[1.0, 2.0, "s6a-relation-changed", "mme/0", "session"],
                                      [2.0, 3.0, "verify-ssh-credentials", "", "charm"]]
    assert chain["hss/0"]["devices"] == {"wg-s6a": {"handshake": 1.75, "peer": 1.5}}
    assert chain["mme/0"]["devices"] == {"wg-s6a": {}}
    out = io.StringIO()
    hookclass.print_timeline(chain, out)
    assert "hss/0 config -2.00" in out.getvalue() and "wg-s6a handshake +1.75 peer +1.50" in out.getvalue()
