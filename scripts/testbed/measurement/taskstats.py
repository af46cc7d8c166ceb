"""The kernel's per-task exit records (taskstats over generic netlink), read without truncation.

BSD process accounting rounds each process's CPU to its clock ticks, so the thousands of
processes under 10 ms that a star's sessions start count as 0. The kernel's taskstats
interface sends one record per exiting task to every listener registered on a CPU mask
(``TASKSTATS_CMD_ATTR_REGISTER_CPUMASK``, what ``getdelays -m`` of the kernel's
tools/accounting uses). Despite the names, the kernel's ``delayacct_add_tsk`` fills
``cpu_run_real_total`` with utime + stime (tick-sampled: a 2 ms process shows 0 or one tick)
and ``cpu_run_virtual_total`` with the scheduler's own runtime of the task in nanoseconds
(``se.sum_exec_runtime``): that one is read. (On this machine's kernel, 6.18, both are filled
with ``kernel.task_delayacct`` = 0; nothing here changes that setting.)

Written by hand on the standard library: the message layout is four fixed headers and a few
attributes, and no maintained Python library reads taskstats. Offsets follow
``include/uapi/linux/taskstats.h`` (stable since version 8; ``ac_tgid`` since version 12, and a
newer kernel only appends fields); checked once with ``offsetof`` against this machine's header.
"""
import os
import socket
import struct

NETLINK_GENERIC = 16
GENL_ID_CTRL = 0x10
CTRL_CMD_GETFAMILY, CTRL_ATTR_FAMILY_ID, CTRL_ATTR_FAMILY_NAME = 3, 1, 2
NLM_F_REQUEST = 1
NLMSG_ERROR, NLMSG_DONE = 2, 3
TASKSTATS_CMD_GET, TASKSTATS_CMD_NEW = 1, 2
TYPE_PID, TYPE_TGID, TYPE_STATS, TYPE_AGGR_PID, TYPE_AGGR_TGID = 1, 2, 3, 4, 5
ATTR_REGISTER_CPUMASK, ATTR_DEREGISTER_CPUMASK = 3, 4

_NLMSGHDR = struct.Struct("=IHHII")
_GENLHDR = struct.Struct("=BBH")
_NLATTR = struct.Struct("=HH")
#: (name, offset, format) of the fields read from struct taskstats.
_FIELDS = (("version", 0, "H"), ("exitcode", 4, "I"), ("cpu_run_real_total", 64, "Q"),
           ("cpu_run_virtual_total", 72, "Q"), ("pid", 128, "I"), ("ppid", 132, "I"), ("btime", 136, "I"),
           ("utime_us", 152, "Q"), ("stime_us", 160, "Q"))
_COMM = (80, 32)
_TGID = (368, "I")
MIN_STATS_LEN = 168


class TaskstatsError(Exception):
    pass


def _align(n):
    return (n + 3) & ~3


def attrs(buf):
    """[(type, payload)] of a run of netlink attributes (the nested flag bit cleared)."""
    out, i = [], 0
    while i + _NLATTR.size <= len(buf):
        length, kind = _NLATTR.unpack_from(buf, i)
        if length < _NLATTR.size or i + length > len(buf):
            raise TaskstatsError("attribute of length {} at {} overruns {} bytes".format(length, i, len(buf)))
        out.append((kind & 0x3FFF, bytes(buf[i + _NLATTR.size:i + length])))
        i += _align(length)
    return out


def attr(kind, payload):
    return _NLATTR.pack(_NLATTR.size + len(payload), kind) + payload + b"\0" * (_align(len(payload)) - len(payload))


def message(family, cmd, payload, seq=1):
    body = _GENLHDR.pack(cmd, 1, 0) + payload
    return _NLMSGHDR.pack(_NLMSGHDR.size + len(body), family, NLM_F_REQUEST, seq, 0) + body


def messages(buf):
    """[(nlmsg type, genl cmd, attribute bytes)] of one datagram; an error message raises."""
    out, i = [], 0
    while i + _NLMSGHDR.size <= len(buf):
        length, kind, _flags, _seq, _pid = _NLMSGHDR.unpack_from(buf, i)
        if length < _NLMSGHDR.size or i + length > len(buf):
            raise TaskstatsError("netlink message of length {} at {} overruns {} bytes".format(length, i, len(buf)))
        body = buf[i + _NLMSGHDR.size:i + length]
        if kind == NLMSG_ERROR:
            err = struct.unpack_from("=i", body)[0] if len(body) >= 4 else -1
            if err:
                raise TaskstatsError("netlink error {}: {}".format(err, os.strerror(-err)))
        elif kind != NLMSG_DONE and len(body) >= _GENLHDR.size:
            out.append((kind, body[0], bytes(body[_GENLHDR.size:])))
        i += _align(length)
    return out


def parse_stats(raw):
    """The fields of one struct taskstats: pid, ppid, tgid (0 before version 12), comm, exit code,
    the scheduler's runtime (ns) and the tick-sampled user and system time (us)."""
    if len(raw) < MIN_STATS_LEN:
        raise TaskstatsError("struct taskstats of {} bytes (at least {} expected)".format(len(raw), MIN_STATS_LEN))
    rec = {name: struct.unpack_from("=" + fmt, raw, off)[0] for name, off, fmt in _FIELDS}
    off, size = _COMM
    rec["comm"] = raw[off:off + size].split(b"\0", 1)[0].decode("utf-8", "replace")
    rec["tgid"] = struct.unpack_from("=" + _TGID[1], raw, _TGID[0])[0] if len(raw) >= _TGID[0] + 4 else 0
    return rec


def exit_records(attributes):
    """The per-task records of one TASKSTATS_CMD_NEW message (``TASKSTATS_TYPE_AGGR_PID``); the
    thread group's aggregate (``AGGR_TGID``) repeats its tasks' time and is left out."""
    out = []
    for kind, payload in attrs(attributes):
        if kind != TYPE_AGGR_PID:
            continue
        nested = dict(attrs(payload))
        if TYPE_STATS in nested:
            out.append(parse_stats(nested[TYPE_STATS]))
    return out


def _roundtrip(sock, msg):
    sock.send(msg)
    return messages(sock.recv(65536))


def family_id(sock):
    """The generic netlink id of the TASKSTATS family (its controller answers by name)."""
    reply = _roundtrip(sock, message(GENL_ID_CTRL, CTRL_CMD_GETFAMILY, attr(CTRL_ATTR_FAMILY_NAME, b"TASKSTATS\0")))
    for _kind, _cmd, payload in reply:
        for kind, value in attrs(payload):
            if kind == CTRL_ATTR_FAMILY_ID:
                return struct.unpack("=H", value[:2])[0]
    raise TaskstatsError("the kernel has no TASKSTATS generic netlink family")


def cpumask():
    with open("/sys/devices/system/cpu/possible") as f:
        return f.read().strip()


class Listener(object):
    """A socket registered for every CPU's exit records; ``read`` returns the raw datagrams
    (``messages`` and ``exit_records`` parse them later, off the measured path)."""

    def __init__(self, rcvbuf=32 << 20):
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_GENERIC)
        try:
            self.sock.setsockopt(socket.SOL_SOCKET, 33, rcvbuf)   # SO_RCVBUFFORCE (root)
        except OSError:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.bind((0, 0))
        self.family = family_id(self.sock)
        self.mask = cpumask()
        self.sock.send(message(self.family, TASKSTATS_CMD_GET, attr(ATTR_REGISTER_CPUMASK, self.mask.encode() + b"\0")))
        self.overruns = 0

    def read(self, timeout=0.2):
        """One datagram, or None after ``timeout``; a receive-buffer overrun (records lost) is
        counted in ``overruns``."""
        self.sock.settimeout(max(timeout, 0.001))
        try:
            return self.sock.recv(1 << 16)
        except (socket.timeout, BlockingIOError):
            return None
        except OSError as e:
            if e.errno == 105:      # ENOBUFS: the kernel dropped records
                self.overruns += 1
                return None
            raise

    def close(self):
        try:
            self.sock.send(message(self.family, TASKSTATS_CMD_GET,
                                   attr(ATTR_DEREGISTER_CPUMASK, self.mask.encode() + b"\0")))
        finally:
            self.sock.close()
