"""Capture on an underlay bridge and judge it: the automated form of the thesis' Figs 5.1/5.2.

A probe string is sent between two service addresses while tcpdump records the link. The
verdict is "encrypted" only if the probe is absent from the raw capture AND every captured IP
packet is WireGuard UDP on one of the tunnel ports. A capture that saw nothing at all proves
nothing, so it fails too.
"""
import os
import signal
import subprocess
import time

PROBE_PORT = 47001
#: IGMP membership reports, which a kernel sends on its own, are not traffic of the EPS.
CAPTURE_FILTER = "(ip or ip6) and not igmp"


class Capture(object):
    def __init__(self, netns, interface, path, hosts=()):
        """``hosts``: only traffic between these addresses counts (a shared network such as the
        management network also carries other VNFs' traffic)."""
        self.netns, self.interface, self.path = netns, interface, path
        self.filter = CAPTURE_FILTER + "".join(" and host {}".format(h) for h in hosts)
        self.proc = None

    def __enter__(self):
        if os.path.exists(self.path):
            os.remove(self.path)
        # Immediate mode and -U: each packet is delivered and written at once, so stopping the
        # capture right after the traffic loses nothing (the ring buffer would hold it back ~1 s).
        argv = ["ip", "netns", "exec", self.netns, "tcpdump", "--immediate-mode", "-i", self.interface, "-U",
                "-s", "0", "-w", self.path, "-n", self.filter]
        self.proc = subprocess.Popen(argv,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10
        while not os.path.exists(self.path):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("tcpdump did not start: {}".format(self.proc.stderr.read().decode()[-300:]))
            time.sleep(0.02)
        return self

    def __exit__(self, *exc):
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def send_probe(vnf, source, destination, payload, count=5):
    """Send ``payload`` over UDP from ``source`` to ``destination`` inside ``vnf`` (plaintext)."""
    code = ("import socket,sys\n"
            "s=socket.socket(socket.AF_INET6 if ':' in sys.argv[2] else socket.AF_INET, socket.SOCK_DGRAM)\n"
            "s.bind((sys.argv[1],0))\n"
            "[s.sendto(sys.argv[3].encode(),(sys.argv[2],{})) for _ in range(int(sys.argv[4]))]\n").format(PROBE_PORT)
    vnf.exec(["python3", "-c", code, source, destination, payload, str(count)])


def judge(path, probe, wireguard_ports):
    """Return a dict: packets, non_wireguard (list of summary lines), plaintext_seen (bool)."""
    with open(path, "rb") as f:
        raw = f.read()
    lines = subprocess.run(["tcpdump", "-r", path, "-nn", "-q"], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, universal_newlines=True).stdout.splitlines()
    ports = {str(p) for p in wireguard_ports}
    non_wg = []
    for line in lines:
        # "12:00:00.1 IP 192.168.8.2.51821 > 192.168.8.129.51821: UDP, length 148"
        fields = line.split()
        if "UDP," not in line or len(fields) < 5:
            non_wg.append(line)
            continue
        src_port = fields[2].rsplit(".", 1)[-1]
        dst_port = fields[4].rstrip(":").rsplit(".", 1)[-1]
        if src_port not in ports and dst_port not in ports:
            non_wg.append(line)
    return {"packets": len(lines), "non_wireguard": non_wg, "plaintext_seen": probe.encode() in raw}
