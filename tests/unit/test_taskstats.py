"""measurement.taskstats: the netlink and struct taskstats parsing, on messages built here byte
by byte as the kernel lays them out (include/uapi/linux/taskstats.h, linux/netlink.h,
linux/genetlink.h); the offsets were checked with offsetof against this machine's header."""
import struct

import pytest

from testbed.measurement import taskstats as ts


def stats(pid, ppid, tgid, comm, ns, utime_us=0, stime_us=0, version=16, size=416):
    raw = bytearray(size)
    struct.pack_into("=H", raw, 0, version)
    struct.pack_into("=Q", raw, 64, utime_us * 1000 + stime_us * 1000)
    struct.pack_into("=Q", raw, 72, ns)
    raw[80:80 + len(comm)] = comm.encode()
    struct.pack_into("=II", raw, 128, pid, ppid)
    struct.pack_into("=QQ", raw, 152, utime_us, stime_us)
    if size >= 372:
        struct.pack_into("=I", raw, 368, tgid)
    return bytes(raw)


def exit_message(pid, raw, tgid_aggregate=None):
    """A TASKSTATS_CMD_NEW notification as taskstats_exit sends it: AGGR_PID (PID, STATS), and
    for a thread group's last task AGGR_TGID (TGID, STATS)."""
    body = ts.attr(ts.TYPE_AGGR_PID, ts.attr(ts.TYPE_PID, struct.pack("=I", pid)) + ts.attr(ts.TYPE_STATS, raw))
    if tgid_aggregate:
        tgid, agg = tgid_aggregate
        body += ts.attr(ts.TYPE_AGGR_TGID, ts.attr(ts.TYPE_TGID, struct.pack("=I", tgid)) + ts.attr(ts.TYPE_STATS, agg))
    return ts.message(0x17, ts.TASKSTATS_CMD_NEW, body)


def test_an_exit_record_gives_the_tasks_runtime_in_ns_and_its_ancestry():
    raw = stats(4242, 4000, 4242, "sha256sum", 1234567, utime_us=0, stime_us=0)
    (kind, cmd, payload), = ts.messages(exit_message(4242, raw))
    assert (kind, cmd) == (0x17, ts.TASKSTATS_CMD_NEW)
    rec, = ts.exit_records(payload)
    assert (rec["pid"], rec["ppid"], rec["tgid"], rec["comm"]) == (4242, 4000, 4242, "sha256sum")
    assert rec["cpu_run_virtual_total"] == 1234567       # under a tick: not truncated
    assert rec["utime_us"] + rec["stime_us"] == 0          # what tick-based accounting says


def test_a_thread_groups_aggregate_is_left_out():
    thread = stats(501, 1, 500, "wireguard-go", 7000)
    agg = stats(500, 1, 500, "wireguard-go", 99000)
    recs = ts.exit_records(ts.messages(exit_message(501, thread, (500, agg)))[0][2])
    assert [(r["pid"], r["cpu_run_virtual_total"]) for r in recs] == [(501, 7000)]


def test_several_messages_in_one_datagram_and_an_older_struct():
    old = stats(7, 1, 0, "sh", 10, version=11, size=328)      # before ac_tgid (version 12)
    data = exit_message(7, old) + exit_message(8, stats(8, 7, 8, "ls", 20))
    recs = [r for _k, _c, p in ts.messages(data) for r in ts.exit_records(p)]
    assert [(r["pid"], r["tgid"], r["comm"]) for r in recs] == [(7, 0, "sh"), (8, 8, "ls")]


def test_a_netlink_error_raises_and_truncated_input_is_refused():
    err = struct.pack("=IHHII", 16 + 4, ts.NLMSG_ERROR, 0, 1, 0) + struct.pack("=i", -22)
    with pytest.raises(ts.TaskstatsError, match="netlink error -22"):
        ts.messages(err)
    ack = struct.pack("=IHHII", 16 + 4, ts.NLMSG_ERROR, 0, 1, 0) + struct.pack("=i", 0)
    assert ts.messages(ack) == []
    whole = exit_message(9, stats(9, 1, 9, "x", 1))
    with pytest.raises(ts.TaskstatsError, match="overruns"):
        ts.messages(whole[:-8] + struct.pack("=I", 0))    # nlmsg_len says more than there is
    with pytest.raises(ts.TaskstatsError, match="overruns"):
        ts.messages(struct.pack("=IHHII", 4000, 0x17, 0, 0, 0))
    with pytest.raises(ts.TaskstatsError, match="overruns"):
        ts.attrs(struct.pack("=HH", 64, 1) + b"abcd")
    with pytest.raises(ts.TaskstatsError, match="struct taskstats of 100 bytes"):
        ts.parse_stats(b"\0" * 100)


def test_the_family_request_and_the_registration_are_laid_out_as_the_kernel_reads_them():
    msg = ts.message(ts.GENL_ID_CTRL, ts.CTRL_CMD_GETFAMILY, ts.attr(ts.CTRL_ATTR_FAMILY_NAME, b"TASKSTATS\0"))
    length, kind, flags, _seq, _pid = struct.unpack_from("=IHHII", msg)
    assert (length, kind, flags) == (len(msg), 0x10, ts.NLM_F_REQUEST)
    assert struct.unpack_from("=BBH", msg, 16) == (ts.CTRL_CMD_GETFAMILY, 1, 0)
    assert ts.attrs(msg[20:]) == [(ts.CTRL_ATTR_FAMILY_NAME, b"TASKSTATS\0")]
    assert len(msg) % 4 == 0
