"""Throughput and latency between two emulated VNFs, with the thesis' tools (iperf3, ping).

The command lines come from ``measure_parse`` (the same ones ``make measure-remote`` runs on a
real deployment), and so do the parsers, so local and remote reports are the same format.
"""
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


def iperf(server, server_addr, client, client_addr, seconds=5, streams=1, udp_bitrate=None, port=IPERF_PORT):
    """One iperf3 run client -> server; returns measure_parse.parse_iperf3_json's dict."""
    srv = server.popen(measure_parse.iperf3_server_cmd(server_addr) + ["-p", str(port)],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        if not udp_bitrate:
            _wait_listening(server, port)
        else:
            # The UDP test's control connection is TCP too.
            _wait_listening(server, port)
        argv = measure_parse.iperf3_client_cmd(client_addr, server_addr, seconds=seconds, interval=seconds)
        argv += ["-p", str(port), "-P", str(streams)]
        if udp_bitrate:
            argv += ["-u", "-b", str(udp_bitrate), "-l", "1400"]
        out = client.exec(argv, check=False, timeout=seconds + 30)
        if out.returncode != 0 and not out.stdout.strip():
            raise MeasureError("iperf3 {} -> {} failed: {}".format(client_addr, server_addr, out.stderr.strip()[-300:]))
        try:
            return measure_parse.parse_iperf3_json(out.stdout)
        except measure_parse.ParseError as e:
            raise MeasureError("iperf3 {} -> {}: {}".format(client_addr, server_addr, e)) from None
    finally:
        if srv.poll() is None:
            srv.terminate()
        try:
            srv.wait(10)
        except subprocess.TimeoutExpired:
            srv.kill()
            srv.wait()


def ping(vnf, source, destination, count=200, interval=0.01):
    """ping -q from ``source`` to ``destination``; returns parse_ping_summary's dict."""
    argv = measure_parse.ping_cmd(destination, source, count=count, interval=interval)
    out = vnf.exec(argv, check=False, timeout=count * interval + 30)
    try:
        return measure_parse.parse_ping_summary(out.stdout)
    except measure_parse.ParseError as e:
        raise MeasureError("ping {} -> {}: {}".format(source, destination, e)) from None
