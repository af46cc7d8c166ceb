"""The demo's reading of the pq-psk daemon's state (testbed/measurement/pqpsk.py), on the daemon's
own status lines, and the classical reason it takes from the units' status."""
import subprocess
from types import SimpleNamespace

from testbed.measurement import pqpsk

KEY = "A" * 43 + "="
LINE = ("peer wg-s11 {} role initiator mechanism ML-KEM-768 state ok epoch 17 renewals 3 last 1700000000 "
        "refusals 0 failures 0 reason -").format(KEY)


class Vnf(object):
    def __init__(self, text, rc=0):
        self.text, self.rc = text, rc

    def exec(self, argv, check=True):
        assert argv == [pqpsk.PQ_PSK, "status"]
        return subprocess.CompletedProcess(argv, self.rc, self.text, "")


def test_peer_states_reads_the_status_lines_of_one_device():
    vnf = Vnf("device wg-s11 refusals 2\n" + LINE + "\n" + LINE.replace("wg-s11", "wg-s6a") + "\nbroken line\n")
    (state,) = pqpsk.peer_states(vnf, "wg-s11")
    assert state["mechanism"] == "ML-KEM-768" and state["renewals"] == "3" and state["role"] == "initiator"
    assert pqpsk.peer_states(Vnf("", rc=1), "wg-s11") == []


def test_renewals_come_from_the_initiator_only():
    rp = SimpleNamespace(name="s11", provider="spgwc", requirer="mme")
    tb = SimpleNamespace(vnfs={"spgwc": Vnf(LINE), "mme": Vnf(LINE.replace("initiator", "responder"))})
    assert pqpsk._renewals(tb, rp) == ("ML-KEM-768", 3)
    tb.vnfs["mme"] = Vnf("")
    tb.vnfs["spgwc"] = Vnf("")
    assert pqpsk._renewals(tb, rp) == (None, 0)


def test_the_classical_reason_is_the_status_line():
    message = "s6a: up, handshake 3s ago, s11: up; s11: tunnel to spgwc/0 is classical only: the peer has no pq-psk"
    model = SimpleNamespace(units=lambda: ["mme/0"], status=lambda u: ("active", message))
    rp = SimpleNamespace(name="s11")
    assert pqpsk.classical_reason(None, rp, model) == "tunnel to spgwc/0 is classical only: the peer has no pq-psk"
