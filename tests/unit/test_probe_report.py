"""testbed.probe places each run of lost packets in time (the report's ``gaps``) and takes both
ends' state while one lasts (``silences``), so that a loss can be put beside the operation's
steps."""
import subprocess
import sys
import time

from testbed.measurement import probe

# The report rounds "at" and "since" to 0.01 s each, so their difference may fall short of the
# true one by up to 0.01 s (CI saw 0.21 - 0.01 < 0.2 for a 0.2 s silence).
ROUNDING = 0.01 + 1e-9


def test_each_run_of_lost_packets_is_placed_between_the_replies_around_it():
    times = {1: 10.0, 2: 10.01, 5: 10.05, 6: 10.06, 9: 24.3}
    assert probe.gaps([3, 4, 7, 8], times, 9.0) == [[1.01, 1.05, 2], [1.06, 15.3, 2]]


def test_a_run_at_the_start_has_no_reply_before_it():
    assert probe.gaps([1, 2], {3: 5.5}, 5.0) == [[None, 0.5, 2]]
    assert probe.gaps([], {1: 1.0}, 0.0) == []


def test_at_most_max_gaps_are_kept():
    lost = list(range(2, 2 * probe.MAX_GAPS + 10, 2))
    times = {n: float(n) for n in range(1, 2 * probe.MAX_GAPS + 11, 2)}
    assert len(probe.gaps(lost, times, 0.0)) == probe.MAX_GAPS


class FakeVnf(object):
    """A VNF with one WireGuard device, as `ip` and `wg` print it."""
    name = "mme"
    PRIVATE = "cHJpdmF0ZS1rZXktbmV2ZXItc2hvd24tYW55d2hlcmU9"

    def exec(self, argv, check=True):
        out = {"link": "1: lo: <LOOPBACK,UP> mtu 65536\n7: wg-s6a: <POINTOPOINT,NOARP,UP> mtu 1420\n"
                       "8: eth1@if9: <BROADCAST> mtu 1500\n",
               "route": "172.16.6.129 dev wg-s6a proto 148 scope link src 172.16.6.2 \n"}[argv[2]]
        return type("Done", (), {"stdout": out})()

    def wg_show(self, device, field):
        assert device == "wg-s6a"
        return {"dump": "{}\tPUB\t51821\toff\nPEERKEY\tPSK-SECRET\t192.168.8.129:51821\t172.16.6.129/32\t"
                        "1795798684\t10\t20\t25\n".format(self.PRIVATE),
                "public-key": "PUB\n", "listen-port": "51821\n"}[field]


def test_the_state_taken_during_a_silence_says_where_packets_go_and_holds_no_secret():
    state = probe.tunnel_state(FakeVnf())
    assert state.splitlines() == ["wg-s6a public-key PUB", "wg-s6a listen-port 51821",
                                  "wg-s6a peer PEERKEY 192.168.8.129:51821 172.16.6.129/32 1795798684",
                                  "172.16.6.129 dev wg-s6a proto 148 scope link src 172.16.6.2 "]
    assert FakeVnf.PRIVATE not in state and "PSK-SECRET" not in state


class SilentVnf(FakeVnf):
    """Its "ping" answers once, then nothing while the probe runs."""

    def popen(self, argv, **kw):
        code = "import time; print('64 bytes: icmp_seq=1 ttl=64', flush=True); time.sleep(30)"
        return subprocess.Popen([sys.executable, "-c", code], **kw)


def test_a_probe_that_hears_nothing_takes_both_ends_state_once_per_silence(monkeypatch):
    monkeypatch.setattr(probe, "SILENCE", 0.2)
    vnf = SilentVnf()
    p = probe.Probe(vnf, "172.16.6.2", "172.16.6.129", "s6a", ends=(vnf, vnf)).start()
    deadline = time.monotonic() + 60        # a Python started, printed and read: slow under load
    while not p._silences and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    result = p.stop()
    assert len(result["silences"]) == 1 and result["received"] == 1
    silence = result["silences"][0]
    assert silence["state"]["mme"].startswith("wg-s6a public-key PUB")
    assert silence["at"] - silence["since"] >= 0.2 - ROUNDING
