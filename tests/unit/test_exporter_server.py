"""The WireGuard exporter's server (vnf/wg-exporter.py) as the VNF runs it: the real program in a
process of its own, on loopback, with a `wg` of the test's on its PATH. A scrape is answered in
under a second whatever other clients do (idle connections, a sender trickling its request, an
oversized header, a connection reset mid-request), every connection is bounded in time, and the
log stays bounded. Runs on Python 3.6 too (make unit36): the VNFs' interpreter."""
import importlib.util
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from vpnaas.vnf import metrics

VNF = os.path.dirname(metrics.__file__)
EXPORTER = os.path.join(VNF, "wg-exporter.py")
FAKE_WG = "#!/bin/sh\nprintf 'wg-s6a\\tPRIV\\t(none)\\t51821\\toff\\n'\n"


@pytest.fixture
def exporter(tmp_path):
    """(port, log path, process): the exporter serving on 127.0.0.1, bound to device lo. It is
    started with --port 0 and its log names the port the kernel gave it: a port found free by the
    test and bound later by the exporter could be taken in between by another process (xdist
    workers, other test runs), and the test would then talk to that one."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "wg").write_text(FAKE_WG)
    (bindir / "wg").chmod(0o755)
    log = tmp_path / "exporter.log"
    env = dict(os.environ, PATH="{}:{}".format(bindir, os.environ["PATH"]))
    proc = subprocess.Popen([sys.executable, EXPORTER, "--listen", "127.0.0.1", "--port", "0",
                             "--interface", "lo", "--log", str(log), "--max-connections", "32"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while True:
        serving = re.search(r"serving on 127\.0\.0\.1:(\d+) ", log.read_text() if log.exists() else "")
        if serving:
            port = int(serving.group(1))
            break
        assert proc.poll() is None, proc.stderr.read().decode()
        assert time.monotonic() < deadline, "the exporter did not listen"
        time.sleep(0.05)
    try:
        yield port, log, proc
    finally:
        proc.kill()
        proc.wait()
        proc.stderr.close()


def scrape(port, timeout=5.0):
    """(seconds, body) of one GET /metrics."""
    t0 = time.monotonic()
    body = urllib.request.urlopen("http://127.0.0.1:{}/metrics".format(port), timeout=timeout).read()
    return time.monotonic() - t0, body.decode()


def idle(port, n):
    return [socket.create_connection(("127.0.0.1", port)) for _ in range(n)]


def closed_total(text, reason):
    line = next(line for line in text.splitlines()
                if line.startswith('vpnaas_wireguard_exporter_connections_closed_total{reason="%s"}' % reason))
    return int(line.split()[-1])


def closed_once(port, done, limit=60.0):
    """{reason: count} of the connections the exporter closed, from a scrape once ``done`` of it
    holds (or the deadline passed). The exporter counts a connection when its handler ends, after
    the answer was sent: the client can read a 431 or a 400 before the count, so a scrape right
    after may not have it yet (it failed so under load)."""
    deadline = time.monotonic() + limit
    while True:
        counts = {m.group(1): int(m.group(2)) for m in re.finditer(
            r'^vpnaas_wireguard_exporter_connections_closed_total\{reason="(\w+)"\} (\d+)$', scrape(port)[1], re.M)}
        if done(counts) or time.monotonic() > deadline:
            return counts
        time.sleep(0.05)


def test_a_scrape_answers_in_under_a_second_with_20_idle_connections_open(exporter):
    port, _log, _proc = exporter
    conns = idle(port, 20)
    try:
        times = [scrape(port)[0] for _ in range(5)]
        assert max(times) < 1.0, times
        # A scrape's connection leaves the count when its handler ends, which can be just after its
        # client has read the answer: an earlier scrape may still be counted by the next one. Every
        # scrape counts the 20 and itself, never fewer; the earlier ones leave within the deadline.
        deadline = time.monotonic() + 10
        while True:
            seconds, text = scrape(port)
            assert "vpnaas_wireguard_up 1" in text and seconds < 1.0
            counted = re.search(r"^vpnaas_wireguard_exporter_connections (\d+)$", text, re.M)
            assert counted and 21 <= int(counted.group(1)) <= 26, text   # the 20, this scrape, the 5 before
            if int(counted.group(1)) == 21:
                break
            assert time.monotonic() < deadline, "an earlier scrape stayed counted: " + counted.group(0)
    finally:
        for c in conns:
            c.close()


def test_more_idle_connections_than_slots_evict_the_oldest_and_never_block_a_scrape(exporter):
    port, _log, _proc = exporter
    conns = idle(port, 40)
    try:
        time.sleep(0.3)
        seconds, text = scrape(port)
        assert seconds < 1.0
        assert closed_total(text, "evicted") >= 8   # 40 + the scrape over 32 slots
        # The evicted ones were the oldest: the first connection is closed by the exporter.
        conns[0].settimeout(2)
        assert conns[0].recv(10) == b""
    finally:
        for c in conns:
            c.close()


def test_a_slow_loris_sender_is_cut_at_the_request_deadline_and_scrapes_go_on(exporter):
    """One byte every 2 s: each receive is quick, the whole request never comes; the exporter
    closes it 5 s after it connected (the deadline is a total, not per receive)."""
    port, _log, _proc = exporter
    slow = socket.create_connection(("127.0.0.1", port))
    t0 = time.monotonic()
    closed_after = None
    try:
        for byte in b"GET /metrics HTTP/1.1\r\n":
            assert scrape(port)[0] < 1.0
            try:
                slow.send(bytes([byte]))
                slow.settimeout(2.0)
                if slow.recv(10) == b"":
                    closed_after = time.monotonic() - t0
                    break
            except socket.timeout:
                continue
            except OSError:
                closed_after = time.monotonic() - t0
                break
        assert closed_after is not None and 4.5 <= closed_after <= 8.0, closed_after
        assert closed_total(scrape(port)[1], "timeout") == 1
    finally:
        slow.close()


def test_an_oversized_header_is_refused_with_431(exporter):
    port, _log, _proc = exporter
    c = socket.create_connection(("127.0.0.1", port), timeout=5)
    try:
        c.sendall(b"GET /metrics HTTP/1.1\r\nX-Pad: " + b"a" * 20000 + b"\r\n\r\n")
        answer = c.recv(200)
    finally:
        c.close()
    assert answer.startswith(b"HTTP/1.1 431 ")
    counts = closed_once(port, lambda c: c["header_too_large"] >= 1)
    assert counts["header_too_large"] == 1, counts


def test_bad_requests_get_an_answer_and_the_log_stays_empty(exporter):
    """Resets and malformed requests are clients' faults: counted, never logged."""
    port, log, _proc = exporter
    for _ in range(200):   # a reset in the middle of the request (RST on close)
        c = socket.create_connection(("127.0.0.1", port))
        c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        c.send(b"GET /met")
        c.close()
    for request, status in ((b"BREW / HTTP/1.1\r\n\r\n", b"405"), (b"GET /x HTTP/1.1\r\n\r\n", b"404"),
                            (b"nonsense\r\n\r\n", b"400")):
        c = socket.create_connection(("127.0.0.1", port), timeout=5)
        c.sendall(request)
        assert c.recv(100).split(b" ")[1] == status
        c.close()
    # Every one of the 201 is counted once, when its handler ends: the 200 resets as resets, or
    # as evicted when more than 32 were open at once (their handlers not run yet: under load),
    # or timed out when a handler first ran 5 s after its connection; the nonsense as a bad
    # request (its 400 was read above). The 405 and the 404 are answers, not counted.
    counts = closed_once(port, lambda c: sum(c.values()) >= 201)
    assert sum(counts.values()) == 201 and counts["bad_request"] == 1, counts
    assert counts["header_too_large"] == counts["overload"] == 0, counts
    logged = log.read_text().splitlines()
    assert len(logged) == 1 and "serving on 127.0.0.1" in logged[0], logged   # only the start


def test_the_exporter_is_bound_to_its_interface(exporter, tmp_path):
    """The listening socket carries SO_BINDTODEVICE=lo (its effect on a packet arriving on
    another interface: tests/e2e/test_metrics_prometheus.py, with a real underlay neighbour)."""
    port, _log, proc = exporter
    out = subprocess.run(["ss", "-Hltn", "( sport = :{} )".format(port)], stdout=subprocess.PIPE,
                         universal_newlines=True).stdout
    assert "127.0.0.1%lo:{}".format(port) in out, out


def test_the_log_is_rate_limited_and_rotated(tmp_path):
    spec = importlib.util.spec_from_file_location("wg_exporter_log", EXPORTER)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    path = tmp_path / "x.log"
    mod.setup_logging(str(path))
    try:
        for i in range(100):   # one minute's burst: the first LOG_BURST only
            mod.log.error("fault %d", i)
        assert len(path.read_text().splitlines()) == mod.LOG_BURST
        limit = mod.log.handlers[0].filters[0]
        for i in range(5000):   # a new minute every 10 records: rotated at LOG_BYTES, one old file
            if i % 10 == 0:
                limit.window = 0.0
            mod.log.error("fault %d %s", i, "x" * 200)
        sizes = [os.path.getsize(str(p)) for p in tmp_path.glob("x.log*")]
        assert len(sizes) == 2 and max(sizes) <= mod.LOG_BYTES + 1024, sizes
    finally:
        for handler in list(mod.log.handlers):
            handler.close()
            mod.log.removeHandler(handler)


def test_loading_the_collector_writes_nothing_beside_it(tmp_path):
    """On the VNF the collector is /etc/wireguard/vpnaas-metrics-collect.py, a folder where every
    file is the charm's: loading it leaves no __pycache__ there, whatever the environment says."""
    for name in ("wg-exporter.py", "wg-collect.py"):
        (tmp_path / name).write_bytes(open(os.path.join(VNF, name), "rb").read())
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("PYTHONPYCACHEPREFIX", None)       # make unit's: bytecode would be written there instead
    # The exporter's own source is run without an import (which would cache it), as `python3 FILE` does.
    code = ("import sys, types\n"
            "m = types.ModuleType('exporter'); m.__file__ = sys.argv[1]\n"
            "exec(compile(open(sys.argv[1]).read(), sys.argv[1], 'exec'), m.__dict__)\n"
            "m.load_collector(sys.argv[2])\n")
    subprocess.run([sys.executable, "-c", code, str(tmp_path / "wg-exporter.py"), str(tmp_path / "wg-collect.py")],
                   env=env, check=True)
    assert sorted(os.listdir(str(tmp_path))) == ["wg-collect.py", "wg-exporter.py"]
