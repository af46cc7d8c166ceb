"""Traffic between two emulated VNFs with the thesis' tools (iperf3, ping), inside their namespaces.

(Named apart from scripts/deploy/measure.py, which runs the same commands on a deployed NS.)

The command lines come from ``measure_parse`` (the same ones ``make measure-remote`` runs on a
real deployment), and so do the parsers, so local and remote reports are the same format.
"""
import json
import subprocess
import time

import measure_parse

IPERF_PORT = 5201


class MeasureError(Exception):
    pass


def _wait_listening(vnf, port, deadline_s=10):
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        out = vnf.exec(["ss", "-Hltn", "sport", "= :{}".format(port)], check=False).stdout
        if out.strip():
            return
        time.sleep(0.02)
    raise MeasureError("iperf3 server in {} did not start listening".format(vnf.name))


#: The largest UDP payload whose inner packet (payload + 28) fits the tunnel MTU of 1420.
UDP_PAYLOAD = 1392


def iperf_json(server, server_addr, client, client_addr, seconds=5, streams=1, udp_bitrate=None,
               length=UDP_PAYLOAD, port=IPERF_PORT):
    """One iperf3 run client -> server; returns (parse_iperf3_json's summary, iperf3's whole JSON)."""
    srv = server.popen(measure_parse.iperf3_server_cmd(server_addr) + ["-p", str(port)],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_listening(server, port)   # UDP tests too: their control connection is TCP
        argv = measure_parse.iperf3_client_cmd(client_addr, server_addr, seconds=seconds, interval=seconds)
        argv += ["-p", str(port), "-P", str(streams)]
        if udp_bitrate is not None:
            argv += ["-u", "-b", str(udp_bitrate), "-l", str(length)]
        out = client.exec(argv, check=False, timeout=seconds + 30)
        try:
            data = json.loads(out.stdout)
            return measure_parse.parse_iperf3_json(data), data
        except (ValueError, measure_parse.ParseError) as e:
            raise MeasureError("iperf3 {} -> {}: {} {}".format(client_addr, server_addr, e,
                                                                out.stderr.strip()[-300:])) from None
    finally:
        stop(srv)


def iperf(server, server_addr, client, client_addr, seconds=5, streams=1, udp_bitrate=None, port=IPERF_PORT):
    """One iperf3 run client -> server; returns measure_parse.parse_iperf3_json's dict."""
    return iperf_json(server, server_addr, client, client_addr, seconds, streams, udp_bitrate, port=port)[0]


def stop(proc):
    """Terminate a helper process (an iperf3 server) and reap it, killing it if it lingers."""
    if proc.poll() is None:
        proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def ping(vnf, source, destination, count=200, interval=0.01):
    """ping -q from ``source`` to ``destination``; returns parse_ping_summary's dict."""
    argv = measure_parse.ping_cmd(destination, source, count=count, interval=interval)
    out = vnf.exec(argv, check=False, timeout=count * interval + 30)
    try:
        return measure_parse.parse_ping_summary(out.stdout)
    except measure_parse.ParseError as e:
        raise MeasureError("ping {} -> {}: {}".format(source, destination, e)) from None
