"""testbed.probe places each run of lost packets in time (the report's ``gaps``), so that a loss
can be put beside the operation's steps."""
from testbed import probe


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
