"""testbed.measurement.attribution (testbed.cpuattr's pure part): attributing exit records and
live tasks to roles by ancestry (pid reuse included), the window, the idle split and the excess
over linear growth, on hand-made records."""
import pytest

from testbed.measurement import attribution
from testbed.measurement.attribution import Task

BENCH = 100


def rec(pid, ppid, comm, ns, tgid=None):
    return {"pid": pid, "ppid": ppid, "tgid": pid if tgid is None else tgid, "comm": comm,
            "cpu_run_virtual_total": ns}


def roots():
    # hub/0's dispatch was pid 200 from t=1 to 3, s1/0's pid 300 from 2 to 4; the hub VNF's sshd
    # is 50 and its namespace inode 9001; spoke s1's namespace 9002.
    return attribution.Roots([(200, 1.0, 3.0, "hub/0"), (300, 2.0, 4.0, "s1/0")], {50: "hub"},
                         {9001: "hub", 9002: "s1"}, BENCH)


def live():
    return {BENCH: Task(BENCH, BENCH, 1, "python", 0, 0, 1),
            50: Task(50, 50, BENCH, "sshd", 0, 0, 9001),
            60: Task(60, 60, 1, "wireguard-go", 0, 0, 9002),          # a daemon, reparented
            61: Task(61, 60, 1, "wireguard-go", 0, 0, 9002),
            70: Task(70, 70, 1, "bash", 0, 0, 1)}                     # someone else's shell


def test_each_record_gets_the_role_of_its_ancestry_even_when_pids_are_reused():
    records = [
        (1.5, rec(210, 200, "relation-get", 1)),     # a hook tool of hub/0's hook
        (1.6, rec(51, 50, "bash", 2)),               # a session's shell under the hub's sshd ...
        (1.7, rec(52, 1, "sha256sum", 3)),           # ... its child, which outlived it: reparented
        (2.5, rec(200, BENCH, "python3", 4)),        # hub/0's dispatch ends
        (2.6, rec(210, 300, "relation-set", 5)),     # pid 210 reused by s1/0's hook tool
        (3.9, rec(300, BENCH, "python3", 6)),        # s1/0's dispatch ends
        (3.95, rec(400, BENCH, "ip", 7)),            # the bench's own probe
        (3.96, rec(71, 70, "make", 8)),              # another user's work
        (3.97, rec(62, 1, "wireguard-go", 9, tgid=60)),    # a thread of a live daemon (reparented)
        (3.98, rec(80, 1, "awk", 10)),               # reparented to init before it exited
    ]
    roles = attribution.record_roles(records, live(), roots())
    assert roles == ["hub-charm", "hub-vnf", "orphan", "hub-charm", "spoke-charm", "spoke-charm", "testbed", "other",
                     "spoke-vnf", "orphan"]


def test_a_child_whose_parent_exits_later_is_its_parents_role():
    records = [(1.1, rec(53, 52, "awk", 1)), (1.2, rec(52, 51, "bash", 1)), (1.3, rec(51, 50, "sshd", 1))]
    assert attribution.record_roles(records, live(), roots()) == ["hub-vnf"] * 3
    assert attribution.parents(records) == [1, 2, None]


def test_a_threads_parent_is_its_processs_parent_whatever_order_the_group_exits_in():
    # A Go program under a spoke's session (bash 52 under sshd 50) exits: its leader 70 first, then
    # a thread 71; pid 70 is reused later by someone else's process under their shell 75.
    records = [(1.0, rec(70, 52, "go", 1)), (1.1, rec(71, 52, "go", 2, tgid=70)), (1.2, rec(52, 50, "bash", 3)),
               (8.0, rec(70, 75, "make", 4))]
    assert attribution.parents(records) == [2, 2, None, None]
    assert attribution.record_roles(records, live(), roots()) == ["hub-vnf", "hub-vnf", "hub-vnf", "other"]


def test_the_window_counts_exits_inside_it_and_live_tasks_from_their_start_in_it():
    at_start = {50: Task(50, 50, BENCH, "sshd", 5, 1000, 9001), 55: Task(55, 55, 50, "bash", 7, 400, 9001)}
    at_end = dict(live())
    at_end[50] = Task(50, 50, BENCH, "sshd", 5, 1600, 9001)         # +600 in the window
    at_end[60] = Task(60, 60, 1, "wireguard-go", 9, 2000, 9002)     # born in the window
    at_end[BENCH] = Task(BENCH, BENCH, 1, "python", 0, 0, 1)
    at_end[99] = Task(99, BENCH, 1, "python", 0, 300, 1)            # the collector's own thread
    records = [(0.5, rec(54, 50, "bash", 111)),                      # before the window: left out
               (1.5, rec(55, 50, "bash", 1000)),                     # alive at the start: 1000 - 400
               (9.0, rec(56, 50, "bash", 222))]                      # after it: left out
    table = attribution.attribute(records, at_start, at_end, roots(), 1.0, 5.0, exclude_tids={99})
    assert table["hub-vnf"] == {"sshd": [600, 0], "bash": [600, 1]}
    assert table["spoke-vnf"] == {"wireguard-go": [2000, 1]}
    assert table["measurement"] == {"python": [300, 0]}
    totals = attribution.role_totals(table)
    assert totals["hub-vnf"] == {"cpu_s": pytest.approx(1.2e-6), "processes": 1}


def test_a_task_whose_start_time_changed_is_a_new_task():
    at_start = {60: Task(60, 60, 1, "wireguard-go", 9, 5000, 9002)}
    at_end = {60: Task(60, 60, 1, "wireguard-go", 12, 700, 9002)}   # tid reused by a new daemon
    table = attribution.attribute([], at_start, at_end, roots(), 1.0, 5.0)
    assert table == {"spoke-vnf": {"wireguard-go": [700, 1]}}


def test_parse_task_reads_comm_with_spaces_and_parentheses():
    stat = "77 (my (odd) prog) S 5 77 77 0 -1 4194560 " + " ".join(["0"] * 12) + " 123456 0"
    task = attribution.parse_task(77, 77, stat, "987654 10 3\n", 4026531840)
    assert task == Task(77, 77, 5, "my (odd) prog", 123456, 987654, 4026531840)
    assert attribution.parse_task(77, 77, "garbage", "", 1) is None


def test_idle_split_charges_each_bin_to_what_hooks_ran_in_it():
    tick = float(attribution.loadcheck.TICK)
    busy = [(0.0, 0), (1.0, 2 * tick), (2.0, 2.5 * tick), (3.0, 2.5 * tick)]
    hooks = [(0.0, 1.0, "s1/0"), (0.5, 2.0, "hub/0")]
    split = attribution.idle_split(busy, hooks, "hub/0", 2)
    assert split["hub and spokes"] == {"seconds": 1.0, "busy_cpu_s": 2.0, "idle_core_s": 0.0}
    assert split["hub only"] == {"seconds": 1.0, "busy_cpu_s": 0.5, "idle_core_s": 1.5}
    assert split["no hook"] == {"seconds": 1.0, "busy_cpu_s": 0.0, "idle_core_s": 2.0}


def test_excess_is_what_grows_faster_than_the_vnfs():
    small = {"hub-vnf bash": 1.0, "spoke-vnf bash": 8.0}
    big = {"hub-vnf bash": 10.0, "spoke-vnf bash": 32.0 * 33 / 9 / 8 * 8 / 4 * 1.0}
    got = attribution.excess(small, big, 8, 32)
    assert got["hub-vnf bash"] == pytest.approx(10.0 - 33 / 9.0)
    assert got["spoke-vnf bash"] == pytest.approx(big["spoke-vnf bash"] - 33 / 9.0 * 8.0)
    assert attribution.excess({}, {"x": 1.0}, 8, 32) == {"x": 1.0}
    assert attribution.median_maps([{"a": 1.0}, {"a": 3.0, "b": 2.0}]) == {"a": 2.0, "b": 1.0}


def test_per_vnf_roots_give_each_unit_and_vnf_a_role_and_by_side_sums_them():
    # The EPS: mme/0's dispatch pid 200, enb/0's 300; the MME's sshd 50 in namespace 9001, the
    # eNB's namespace 9002 (its daemon, reparented to init, found by its namespace).
    eps = attribution.Roots([(200, 1.0, 3.0, "mme/0"), (300, 2.0, 4.0, "enb/0")], {50: "mme"},
                            {9001: "mme", 9002: "enb"}, BENCH, per_vnf=True)
    records = [(1.5, rec(210, 200, "relation-get", 1)), (1.6, rec(51, 50, "bash", 2)),
               (2.5, rec(200, BENCH, "python3", 4)), (3.9, rec(300, BENCH, "python3", 6)),
               (3.97, rec(62, 1, "wireguard-go", 9, tgid=60))]
    assert attribution.record_roles(records, live(), eps) == ["mme-charm", "mme-vnf", "mme-charm", "enb-charm",
                                                               "enb-vnf"]
    table = attribution.attribute(records, {}, live(), eps, 0.0, 5.0)
    sides = attribution.by_side(table)
    assert sides["charm"] == {"relation-get": pytest.approx(1e-9), "python3": pytest.approx(10e-9)}
    assert sides["vnf"] == {"bash": pytest.approx(2e-9), "wireguard-go": pytest.approx(9e-9)}
