"""A continuous probe across a tunnel: ping at 100 packets a second between two service
addresses, so that an operation's packet loss is counted, not guessed.

The probe runs ``ping`` inside the source VNF (its network namespace), from its service address
to the peer's, i.e. through the tunnel. Loss is read from the replies by sequence number: every
sequence number up to the last one answered that got no reply was lost (a packet still in flight
when the probe stops is not counted either way). Each run of lost packets is also placed in time
(``gaps``: from the last reply before it to the first after, seconds since the probe started; its
``started`` is a time.monotonic()), so that a loss can be put beside the operation's steps
afterwards (a run whose report kept only counts could not be: docs/lifecycle.md). A probe that
knows both ends of its tunnel (``ends``) also records, when it has heard nothing for a second,
what both ends' WireGuard devices and routes are at that moment (``silences``, at most
MAX_SILENCES, never a private key): the state that causes a loss, taken while it lasts. ``ping -i
0.01`` needs root, as the testbed does.
"""
import re
import signal
import subprocess
import threading
import time

_REPLY = re.compile(r"icmp_seq=(\d+)")


class Probe(object):
    def __init__(self, vnf, source, destination, label, interval=0.01, ends=()):
        self.vnf, self.source, self.destination, self.label = vnf, source, destination, label
        self.interval = interval
        self.ends = list(ends)    # the Vnfs at both ends: their state is taken while the probe hears nothing
        self._silences = []
        self._proc = None
        self._replies = set()
        self._times = {}          # sequence number -> time.monotonic() of its reply
        self._started = 0.0
        self._last_reply = 0.0
        self._reader = None

    def start(self):
        argv = ["ping", "-n", "-i", str(self.interval), "-W", "1", "-I", self.source, self.destination]
        self._started = time.monotonic()
        self._proc = self.vnf.popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, universal_newlines=True)
        self._reader = threading.Thread(target=self._read, name="probe-" + self.label, daemon=True)
        self._reader.start()
        if self.ends:
            threading.Thread(target=self._watch, name="probe-watch-" + self.label, daemon=True).start()
        return self

    def _watch(self):
        """While the probe runs: once per silence (no reply for SILENCE s after one came), both
        ends' state, at most MAX_SILENCES times."""
        silent = False
        while self._proc.poll() is None and len(self._silences) < MAX_SILENCES:
            time.sleep(SILENCE / 4)
            quiet = self._last_reply > 0 and not self.answering(SILENCE)
            if quiet and not silent:
                at = time.monotonic()
                state = {}
                for vnf in self.ends:
                    try:
                        state[str(vnf.name)] = tunnel_state(vnf)
                    except Exception as e:  # noqa: BLE001 - a diagnosis must never fail the probe
                        state[str(vnf.name)] = "unreadable: {}".format(e)
                self._silences.append({"at": round(at - self._started, 2),
                                       "since": round(self._last_reply - self._started, 2), "state": state})
            silent = quiet

    def _read(self):
        for line in self._proc.stdout:
            m = _REPLY.search(line)
            if m:
                self._last_reply = time.monotonic()
                self._times.setdefault(int(m.group(1)), self._last_reply)
                self._replies.add(int(m.group(1)))

    def received(self):
        """Replies so far (while it runs)."""
        return len(self._replies)

    def answering(self, within=1.0):
        """True when a reply came in the last ``within`` seconds."""
        return time.monotonic() - self._last_reply < within

    def stop(self):
        """Stop and count: {"sent", "received", "lost", "lost_sequences", "gaps", "started"} (up to
        the last reply)."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.send_signal(signal.SIGINT)
            try:
                self._proc.wait(5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        if self._reader is not None:
            self._reader.join(5)
        last = max(self._replies) if self._replies else 0
        lost = sorted(set(range(1, last + 1)) - self._replies)
        return {"label": self.label, "sent": last, "received": len(self._replies), "lost": len(lost),
                "lost_sequences": _ranges(lost), "gaps": gaps(lost, dict(self._times), self._started),
                "silences": list(self._silences), "started": self._started}


#: At most this many gaps are placed in time (the report stays small when a tunnel flaps).
MAX_GAPS = 10
#: Seconds without a reply after which a probe with ``ends`` takes their state; at most this
#: many times per probe.
SILENCE, MAX_SILENCES = 1.0, 3


def tunnel_state(vnf):
    """A VNF's WireGuard devices (public key, port, each peer's key, endpoint, allowed IPs, last
    handshake) and the charms' routes, as text: what decides where a packet goes. Read per device
    through ``wg_show`` (which asks a userspace daemon only once its socket listens), and never the
    dump's first line, which holds the private key."""
    lines = []
    for dev in sorted(vnf.exec(["ip", "-o", "link", "show"], check=False).stdout.split("\n")):
        name = dev.split(":")[1].strip().split("@")[0] if dev.count(":") >= 2 else ""
        if not name.startswith(("wg-", "wr-")):
            continue
        dump = vnf.wg_show(name, "dump").splitlines()
        lines.append("{} public-key {}".format(name, vnf.wg_show(name, "public-key").strip()))
        lines.append("{} listen-port {}".format(name, vnf.wg_show(name, "listen-port").strip()))
        lines += ["{} peer {}".format(name, " ".join(line.split("\t")[:1] + line.split("\t")[2:5]))
                  for line in dump[1:]]
    lines += vnf.exec(["ip", "-o", "route", "show", "proto", "148"], check=False).stdout.splitlines()
    return "\n".join(lines)


def gaps(lost, times, started):
    """[[from, to, packets]] per run of consecutive lost sequence numbers: the seconds since
    ``started`` of the last reply before the run and of the first after it (None when there is
    none: the run began with the probe)."""
    out, run = [], []
    for n in lost + [None]:
        if run and (n is None or n != run[-1] + 1):
            before, after = times.get(run[0] - 1), times.get(run[-1] + 1)
            out.append([round(before - started, 2) if before is not None else None,
                        round(after - started, 2) if after is not None else None, len(run)])
            run = []
        if n is not None:
            run.append(n)
    return out[:MAX_GAPS]


def _ranges(numbers):
    """[1, 2, 3, 7] -> "1-3,7" (short, for the report)."""
    out, start, prev = [], None, None
    for n in numbers:
        if start is None:
            start = prev = n
        elif n == prev + 1:
            prev = n
        else:
            out.append(str(start) if start == prev else "{}-{}".format(start, prev))
            start = prev = n
    if start is not None:
        out.append(str(start) if start == prev else "{}-{}".format(start, prev))
    return ",".join(out)
