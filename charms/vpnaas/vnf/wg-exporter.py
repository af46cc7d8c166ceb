#!/usr/bin/env python3
# Managed by the VPNaaS charm; changes are overwritten on the next reconcile.
"""vpnaas-wg-exporter: this VNF's WireGuard tunnels for Prometheus, on its management interface only.

Installed as /etc/wireguard/vpnaas-metrics-exporter.py and kept running by the VPNaaS charm
(``vnf/metrics.sh``): a systemd service where the VNF has systemd, else a daemon the charm
starts. It answers ``GET /metrics`` with what ``wg-collect.py`` (installed beside it as
vpnaas-metrics-collect.py) reads and renders: per WireGuard device the charm manages and per peer,
labelled with the reference point, the device and the peer's unit (docs/metrics.md).

Serving, with every resource bounded (a scrape must never wait for another client):

* Only on the management interface: the socket is bound to the management address AND to the
  management device (SO_BINDTODEVICE), so a packet for that address arriving on any other
  interface (an underlay neighbour routing the management address over its link: Linux accepts a
  local address on every interface) finds no listener and is reset.
* One thread per connection, at most ``--max-connections``; a connection must deliver its whole
  request header within REQUEST_SECONDS (a total, not per receive: a sender trickling a byte
  every few seconds is cut at the deadline) and at most MAX_HEADER_BYTES; the answer must be
  taken within RESPONSE_SECONDS. A new connection over the limit evicts the oldest one still
  sending its request (an idle or slow-loris client), so 20 idle connections cost a scrape
  nothing; only when every slot is answering a request is the newcomer refused.
* Concurrent scrapes share one collection (single flight): a request is answered with a
  collection that started after it arrived, so values are never older than the scrape.
* Nothing per request is logged. Clients' faults are counted in
  ``vpnaas_wireguard_exporter_connections_closed_total{reason}``; the exporter's own faults go to
  a bounded log: ``--log FILE`` (rotated at LOG_BYTES, one old file kept; used where the VNF has
  no systemd) or standard error (the journal, which bounds itself), at most LOG_BURST records
  per minute.

Why a server of its own and not the Prometheus client library: prometheus_client 0.17.1 (the
last release for the VNFs' Python 3.6) serves with wsgiref's ThreadingWSGIServer, one daemon
thread per connection with no limit and no timeout, so an idle connection holds a thread forever
and many of them exhaust the VNF: the defect this program exists to avoid. Its device binding,
limits and eviction would be ours either way. Only its text renderer would remain, which for
these gauges and counters is the three escapes of wg-collect.py, checked by Prometheus' own
parser (promtool and a real server's scrape, tests/e2e/test_metrics_prometheus.py); shipping it
would add a second upload to every VNF and pin a library that gets no more fixes for Python 3.6.
Python 3.6 compatible; standard library only. ``--once`` prints one exposition and exits.
"""
import argparse
import importlib.util
import logging
import logging.handlers
import os
import socket
import sys
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

COLLECT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "vpnaas-metrics-collect.py")
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
MAX_CONNECTIONS = 32
REQUEST_SECONDS = 5.0
RESPONSE_SECONDS = 10.0
MAX_HEADER_BYTES = 8192
LOG_BYTES = 256 * 1024
LOG_BURST = 10
#: SO_BINDTODEVICE: socket.SO_BINDTODEVICE only from Python 3.10 on; the value is Linux's.
SO_BINDTODEVICE = getattr(socket, "SO_BINDTODEVICE", 25)
REASONS = ("timeout", "header_too_large", "bad_request", "evicted", "overload", "reset")
STATUS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
          431: "Request Header Fields Too Large", 503: "Service Unavailable"}

log = logging.getLogger("vpnaas-wg-exporter")


def load_collector(path: str = COLLECT) -> Any:
    """wg-collect.py, from beside this program (its name on the VNF) or from the charm's tree."""
    if not os.path.exists(path):
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "wg-collect.py")
    # No __pycache__ beside it: /etc/wireguard holds only what the charm writes and removes.
    sys.dont_write_bytecode = True
    spec = importlib.util.spec_from_file_location("vpnaas_wg_collect", path)
    if spec is None or spec.loader is None:
        raise ImportError("cannot load " + path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class RateLimit(logging.Filter):
    """At most ``burst`` records per ``period`` seconds; the rest are dropped and counted."""

    def __init__(self, burst: int = LOG_BURST, period: float = 60.0) -> None:
        super().__init__()
        self.burst, self.period = burst, period
        self.window, self.count, self.dropped = 0.0, 0, 0

    def filter(self, record: logging.LogRecord) -> bool:
        now = time.monotonic()
        if now - self.window >= self.period:
            if self.dropped:
                record.msg = "({} log records dropped) {}".format(self.dropped, record.msg)
            self.window, self.count, self.dropped = now, 0, 0
        self.count += 1
        if self.count > self.burst:
            self.dropped += 1
            return False
        return True


def setup_logging(path: Optional[str]) -> None:
    handler: logging.Handler
    if path:
        handler = logging.handlers.RotatingFileHandler(path, maxBytes=LOG_BYTES, backupCount=1)
    else:
        handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    handler.addFilter(RateLimit())
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False


class SingleFlight(object):
    """One collection at a time; a request takes the first collection that started after it."""

    def __init__(self, collect: Any) -> None:
        self.collect = collect
        self.lock = threading.Lock()
        self.started = float("-inf")
        self.body = b""

    def get(self, asked: float) -> bytes:
        with self.lock:
            if self.started < asked:
                started = time.monotonic()
                self.body = self.collect()
                self.started = started
            return self.body


class Exporter(object):
    def __init__(self, collect: Any, max_connections: int = MAX_CONNECTIONS,
                 request_seconds: float = REQUEST_SECONDS, response_seconds: float = RESPONSE_SECONDS,
                 max_header: int = MAX_HEADER_BYTES) -> None:
        self.flight = SingleFlight(collect)
        self.max_connections, self.max_header = max_connections, max_header
        self.request_seconds, self.response_seconds = request_seconds, response_seconds
        self.lock = threading.Lock()
        self.conns: Dict[socket.socket, List[Any]] = {}    # socket: [accepted at, still reading]
        self.closed = {r: 0 for r in REASONS}
        self.sock: Optional[socket.socket] = None

    def listen(self, address: str, port: int, interface: Optional[str]) -> int:
        """Bind and listen; returns the port (``port`` 0: the one the kernel chose)."""
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if interface:
            sock.setsockopt(socket.SOL_SOCKET, SO_BINDTODEVICE, interface.encode() + b"\0")
        sock.bind((address, port))
        sock.listen(64)
        self.sock = sock
        return int(sock.getsockname()[1])

    def serve_forever(self) -> None:
        assert self.sock is not None
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError as e:   # EMFILE and the like: wait instead of spinning
                log.warning("accept failed: %s", e)
                time.sleep(0.5)
                continue
            if self.admit(conn):
                threading.Thread(target=self.handle, args=(conn,), daemon=True).start()

    def admit(self, conn: socket.socket) -> bool:
        with self.lock:
            if len(self.conns) >= self.max_connections:
                reading = [(v[0], c) for c, v in self.conns.items() if v[1]]
                if not reading:
                    self.closed["overload"] += 1
                    conn.close()
                    return False
                victim = min(reading, key=lambda x: x[0])[1]
                self.conns[victim][1] = False   # its thread closes it and counts it as evicted
                self.conns[victim].append("evicted")
                try:
                    victim.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            self.conns[conn] = [time.monotonic(), True]
        return True

    def handle(self, conn: socket.socket) -> None:
        reason = None
        try:
            reason = self._serve(conn)
        except socket.timeout:
            reason = "timeout"
        except OSError:
            reason = "reset"
        except Exception:   # noqa: BLE001 - a fault of ours: logged (bounded), the server goes on
            log.exception("unexpected error while answering a request")
        finally:
            with self.lock:
                state = self.conns.pop(conn, None)
                if state is not None and len(state) > 2:
                    reason = state[2]
                if reason:
                    self.closed[reason] += 1
            conn.close()

    def _read_request(self, conn: socket.socket) -> Tuple[Optional[bytes], Optional[str]]:
        """(request line, None), or (None, the reason to close) once the header is complete."""
        deadline = self.conns[conn][0] + self.request_seconds
        data = b""
        while b"\r\n\r\n" not in data and b"\n\n" not in data:
            if len(data) > self.max_header:
                return None, "header_too_large"
            left = deadline - time.monotonic()
            if left <= 0:
                return None, "timeout"
            conn.settimeout(left)
            chunk = conn.recv(4096)
            if not chunk:
                return None, "reset"
            data += chunk
        end = min(i for i in (data.find(b"\r\n\r\n"), data.find(b"\n\n")) if i >= 0)
        if end > self.max_header:
            return None, "header_too_large"
        return data.split(b"\n", 1)[0].rstrip(b"\r"), None

    def _serve(self, conn: socket.socket) -> Optional[str]:
        line, reason = self._read_request(conn)
        with self.lock:
            state = self.conns.get(conn)
            if state is None or len(state) > 2:
                return "evicted"
            state[1] = False   # answering now: no longer evictable
        if line is None:
            if reason == "header_too_large":
                self._send(conn, 431, b"request header too large\n")
            return reason
        parts = line.split(b" ")
        if len(parts) != 3 or not parts[2].startswith(b"HTTP/1."):
            self._send(conn, 400, b"bad request\n")
            return "bad_request"
        method, path = parts[0], parts[1].split(b"?", 1)[0]
        if method not in (b"GET", b"HEAD"):
            self._send(conn, 405, b"only GET\n", [("Allow", "GET, HEAD")])
            return None
        if path not in (b"/metrics", b"/"):
            self._send(conn, 404, b"not found: try /metrics\n")
            return None
        body = self.flight.get(self.conns[conn][0]) + self.own_metrics()
        self._send(conn, 200, body, [("Content-Type", CONTENT_TYPE)], head=method == b"HEAD")
        return None

    def _send(self, conn: socket.socket, status: int, body: bytes,
              headers: Optional[List[Tuple[str, str]]] = None, head: bool = False) -> None:
        lines = ["HTTP/1.1 {} {}".format(status, STATUS[status]), "Server: vpnaas-wg-exporter",
                 "Content-Length: {}".format(len(body)), "Connection: close"]
        lines += ["{}: {}".format(k, v) for k, v in headers or [("Content-Type", "text/plain; charset=utf-8")]]
        data = ("\r\n".join(lines) + "\r\n\r\n").encode("ascii") + (b"" if head else body)
        deadline = time.monotonic() + self.response_seconds
        view = memoryview(data)
        while view:
            left = deadline - time.monotonic()
            if left <= 0:
                raise socket.timeout("response not taken in time")
            conn.settimeout(left)
            sent = conn.send(view[:65536])
            view = view[sent:]

    def own_metrics(self) -> bytes:
        with self.lock:
            closed = dict(self.closed)
            open_now = len(self.conns)
        name = "vpnaas_wireguard_exporter_connections_closed_total"
        lines = ["# HELP {} Connections the exporter closed without an answer, by reason.".format(name),
                 "# TYPE {} counter".format(name)]
        lines += ['{}{{reason="{}"}} {}'.format(name, r, closed[r]) for r in REASONS]
        gauge = "vpnaas_wireguard_exporter_connections"
        lines += ["# HELP {} Connections open now (this scrape's included).".format(gauge),
                  "# TYPE {} gauge".format(gauge), "{} {}".format(gauge, open_now)]
        return ("\n".join(lines) + "\n").encode("ascii")


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description="WireGuard metrics of the VPNaaS charm's tunnels")
    parser.add_argument("--listen", help="address to listen on (the VNF's management address)")
    parser.add_argument("--port", type=int, default=9586)
    parser.add_argument("--interface", help="the management interface: only packets arriving on it are answered")
    parser.add_argument("--max-connections", type=int, default=MAX_CONNECTIONS)
    parser.add_argument("--log", help="log file, rotated at {} KiB (default: standard error)".format(LOG_BYTES // 1024))
    parser.add_argument("--once", action="store_true", help="print one exposition and exit")
    args = parser.parse_args(argv)
    collector = load_collector()
    if args.once:
        sys.stdout.buffer.write(collector.exposition())
        return 0
    if not args.listen:
        parser.error("--listen is required")
    setup_logging(args.log)
    threading.stack_size(512 * 1024)
    exporter = Exporter(collector.exposition, max(1, args.max_connections))
    port = exporter.listen(args.listen, args.port, args.interface)
    log.info("serving on %s:%s%s", args.listen, port, " (device {})".format(args.interface)
             if args.interface else "")
    exporter.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
