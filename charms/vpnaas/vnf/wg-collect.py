#!/usr/bin/env python3
# Managed by the VPNaaS charm; changes are overwritten on the next reconcile.
"""What the VPNaaS WireGuard exporter (wg-exporter.py, its server) serves: this VNF's WireGuard
tunnels read at scrape time and rendered in the Prometheus text format (0.0.4).

Installed beside the exporter as /etc/wireguard/vpnaas-metrics-collect.py; the exporter loads it
by path. The metric families, their labels and where each value comes from: the FAMILIES table
below and docs/metrics.md. Python 3.6 compatible (the VNFs' interpreter); standard library only.
"""
import base64
import json
import os
import re
import socket
import subprocess
import time
from typing import Any, Dict, List, Optional, Tuple

LABELS = "/etc/wireguard/vpnaas-metrics.json"
REFUSED = "/etc/wireguard/vpnaas-metrics.refused"
IMPLEMENTATION = "/etc/wireguard/vpnaas-metrics.impl"
#: The pq-psk daemon's per-device status files (tunnels/pqpsk.sh): public keys, states, counters,
#: times; never a key.
PQ_PSK_STATE = "/run/wireguard/vpnaas-pq-psk"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
WG_TIMEOUT = 5
#: The folder of the userspace devices' UAPI sockets (wireguard-tools, wireguard-go, boringtun).
UAPI_DIR = "/run/wireguard"
#: A get=1 answer is bounded: about 300 bytes per peer.
MAX_UAPI_BYTES = 64 * 1024 * 1024
MAX_LABELS_BYTES = 4 * 1024 * 1024
Labels = Tuple[Tuple[str, object], ...]

#: A session is usable until REJECT_AFTER_TIME (180 s, WireGuard's protocol) after its handshake;
#: with the charms' persistent keepalive a live peer's latest handshake is at most about 150 s old.
SESSION_SECONDS = 180
#: sysfs statistics of a device: (file, family).
DEVICE_STATS = (("rx_dropped", "vpnaas_wireguard_device_receive_dropped_total"),
                ("tx_dropped", "vpnaas_wireguard_device_transmit_dropped_total"),
                ("rx_errors", "vpnaas_wireguard_device_receive_errors_total"),
                ("tx_errors", "vpnaas_wireguard_device_transmit_errors_total"))
MAX_LABEL = 1024

FAMILIES = (
    ("vpnaas_wireguard_up", "gauge", "1 when every WireGuard device on this VNF answered."),
    ("vpnaas_wireguard_device_up", "gauge", "1 when the WireGuard device the charm configured exists."),
    ("vpnaas_wireguard_dataplane_info", "gauge", "The data-plane implementation of the device (value 1)."),
    ("vpnaas_wireguard_device_mtu_bytes", "gauge", "The device's MTU (sysfs)."),
    ("vpnaas_wireguard_device_receive_dropped_total", "counter", "Packets the device dropped on receive (sysfs)."),
    ("vpnaas_wireguard_device_transmit_dropped_total", "counter", "Packets the device dropped on transmit (sysfs)."),
    ("vpnaas_wireguard_device_receive_errors_total", "counter", "Receive errors of the device (sysfs)."),
    ("vpnaas_wireguard_device_transmit_errors_total", "counter", "Transmit errors of the device (sysfs)."),
    ("vpnaas_wireguard_peers", "gauge", "Peers on the device now."),
    ("vpnaas_wireguard_peer_configured", "gauge", "1 for every peer the charm configured on the device."),
    ("vpnaas_wireguard_peer_session_up", "gauge",
     "1 when the peer's device is up and its latest handshake is at most 180 s old (REJECT_AFTER_TIME), "
     "else 0; for every configured peer."),
    ("vpnaas_wireguard_peer_info", "gauge", "The peer's underlay endpoint and allowed IPs as WireGuard has them (1)."),
    ("vpnaas_wireguard_peer_last_handshake_timestamp_seconds", "gauge",
     "Unix time of the latest handshake with the peer (absent before the first one)."),
    ("vpnaas_wireguard_peer_receive_bytes_total", "counter", "Bytes received from the peer."),
    ("vpnaas_wireguard_peer_transmit_bytes_total", "counter", "Bytes sent to the peer."),
    ("vpnaas_wireguard_peer_pq_psk_active", "gauge",
     "1 when pq-psk's last exchange with the peer completed (state ok): the tunnel mixes a post-quantum PSK."),
    ("vpnaas_wireguard_peer_pq_psk_renewals_total", "counter", "Exchanges with the peer that agreed a new PSK."),
    ("vpnaas_wireguard_peer_pq_psk_last_renewal_timestamp_seconds", "gauge",
     "Unix time of the last PSK agreed with the peer; absent before the first."),
    ("vpnaas_wireguard_peer_refused_prefixes", "gauge",
     "Prefixes of the peer that were refused (the charm's route policy, or a route the VNF refused)."),
)


def escape(value: object) -> str:
    """A label value in the text format: backslash, double quote and line feed escaped."""
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def sample(name: str, labels: Labels, value: object) -> str:
    inner = ",".join('{}="{}"'.format(k, escape(v)) for k, v in labels)
    return "{}{{{}}} {}".format(name, inner, value) if inner else "{} {}".format(name, value)


def read_text(path: str, limit: int = MAX_LABELS_BYTES) -> str:
    try:
        with open(path, "rb") as f:
            return f.read(limit).decode("utf-8", "replace")
    except OSError:
        return ""


def load_labels(path: str = LABELS) -> Tuple[Labels, List[Dict[str, Any]]]:
    """The charm's view: (OSM's labels of this VNF, [{device, refpoint, plane, peers:
    [{public-key, peer, allowed-ips}], refused}])."""
    try:
        doc = json.loads(read_text(path) or "{}")
    except ValueError:
        return (), []
    if not isinstance(doc, dict):
        return (), []
    osm = doc.get("osm")
    names = ("ns_id", "vnf_member_index", "vdu_id")
    own: Labels = tuple((k, str(osm[k])) for k in names if isinstance(osm.get(k), str)) \
        if isinstance(osm, dict) else ()
    devices = doc.get("devices")
    return own, [d for d in devices if isinstance(d, dict) and isinstance(d.get("device"), str)] \
        if isinstance(devices, list) else []


def wg_dump(uapi: str = UAPI_DIR, sysfs: str = "/sys/class/net",
            timeout: float = WG_TIMEOUT) -> Optional[Dict[str, List[List[str]]]]:
    """{device: [peer fields]} as `wg show all dump` gives them, or None when a device did not
    answer (as that command fails then).

    Not `wg show all dump` itself: `wg` deletes a UAPI socket that refuses its connection, taking
    it for stale (wireguard-tools src/ipc-uapi-unix.h, userspace_has_wireguard_interface), and a
    userspace daemon's socket refuses in the instant between its bind() and listen() while the
    device starts; wireguard-go then exits when its socket file goes (wireguard-go
    ipc/uapi_linux.go), and the VNF step's `wg-quick up` fails with "Cannot find device". So a
    userspace device is asked over its socket here (uapi_device: a refusal skips it, nothing is
    ever deleted), and `wg` asks only the kernel's devices, by name, and only one that has no
    socket beside it."""
    out: Dict[str, List[List[str]]] = {}
    try:
        names = sorted(n[:-len(".sock")] for n in os.listdir(uapi) if n.endswith(".sock"))
    except OSError:
        names = []
    for name in names:
        if not _IFNAME.match(name):
            continue
        try:
            peers = uapi_device(os.path.join(uapi, name + ".sock"), name, timeout)
        except UAPIError:
            return None
        if peers is not None:
            out[name] = peers
    try:
        links = sorted(os.listdir(sysfs))
    except OSError:
        links = []
    for name in links:
        if name in out or name in names or not _IFNAME.match(name):
            continue
        if "DEVTYPE=wireguard" not in read_text("{}/{}/uevent".format(sysfs, name), 4096).split("\n"):
            continue
        try:
            proc = subprocess.run(["wg", "show", name, "dump"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                  timeout=timeout)
        except (OSError, subprocess.SubprocessError):
            return None
        if proc.returncode != 0:
            return None
        out[name] = parse_device_dump(name, proc.stdout.decode("utf-8", "replace"))
    return out


def parse_device_dump(name: str, text: str) -> List[List[str]]:
    """The peers of `wg show <name> dump`'s output, each as `wg show all dump` prints it: the
    one-device form has no device column (wireguard-tools src/show.c ``dump_print`` with
    ``with_interface`` false), so its device line has 4 fields (the private key first, never
    kept) and each peer line 8: public key, preshared key, endpoint, allowed IPs, latest
    handshake, rx, tx, keepalive. The device's name goes first, and the preshared key is given
    as the UAPI reading gives it ("(hidden)" or "(none)"), so that no secret is kept."""
    peers: List[List[str]] = []
    for line in text.splitlines():
        f = line.split("\t")
        if len(f) == 8:
            f[1] = "(none)" if f[1] == "(none)" else "(hidden)"
            peers.append([name] + f)
    return peers


class UAPIError(Exception):
    """A device's socket accepted the connection but its answer failed or was not the protocol's."""


def uapi_device(path: str, name: str, timeout: float = WG_TIMEOUT) -> Optional[List[List[str]]]:
    """The peers of a userspace device as `wg show <name> dump` prints them (its preshared keys
    as "(hidden)"), asked over its UAPI socket with the protocol's ``get=1``
    (https://www.wireguard.com/xplatform/); None when nothing listens there (refused, gone): a
    daemon that is starting, or one that has exited. The socket file is never deleted. Written
    here because no library speaks the protocol in the standard library of Python 3.6, and `wg`
    itself deletes a socket it cannot connect to (wg_dump). The private and preshared keys in
    the answer are skipped unread; the answer is bounded (MAX_UAPI_BYTES, ``timeout`` s)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        try:
            sock.connect(path)
        except (ConnectionRefusedError, FileNotFoundError):
            return None
        except OSError as e:
            raise UAPIError("connect: {}".format(e.strerror)) from None
        deadline = time.monotonic() + timeout
        data = bytearray()   # appended in place: a long answer costs linear time
        try:
            sock.sendall(b"get=1\n\n")
            while not data.endswith(b"\n\n"):
                sock.settimeout(max(0.001, deadline - time.monotonic()))
                chunk = sock.recv(65536)
                if not chunk:
                    break
                data += chunk
                if len(data) > MAX_UAPI_BYTES:
                    raise UAPIError("answer over {} bytes".format(MAX_UAPI_BYTES))
        except OSError as e:
            raise UAPIError("get: {}".format(e)) from None
    finally:
        sock.close()
    return _uapi_peers(data.decode("ascii", "replace"), name)


_HEX_KEY = re.compile(r"[0-9a-f]{64}\Z")
_IFNAME = re.compile(r"[A-Za-z0-9_.=+-]{1,15}\Z")
_UNSIGNED = re.compile(r"[0-9]{1,20}\Z")


def _uapi_peers(text: str, name: str) -> List[List[str]]:
    """A ``get=1`` answer as wg's dump peer lines; UAPIError unless it is the protocol's, ending
    in ``errno=0``."""
    peers: List[List[str]] = []
    lines = text.split("\n")
    if len(lines) < 3 or lines[-2:] != ["", ""] or lines[-3] != "errno=0":
        raise UAPIError("not a complete answer with errno=0")
    for line in lines[:-3]:
        key, sep, value = line.partition("=")
        if not sep:
            raise UAPIError("a line without =")
        if key == "public_key":
            if not _HEX_KEY.match(value):
                raise UAPIError("a public key that is not 64 hex digits")
            peers.append([name, base64.b64encode(bytes.fromhex(value)).decode("ascii"), "(none)", "(none)", "",
                          "0", "0", "0", "off"])
        elif not peers:
            continue   # the device's own settings (its private key among them): not read
        elif key == "preshared_key":
            peers[-1][2] = "(none)" if value.strip("0") == "" else "(hidden)"
        elif key == "endpoint":
            peers[-1][3] = value
        elif key == "allowed_ip":
            peers[-1][4] += "," + value
        elif key in ("last_handshake_time_sec", "rx_bytes", "tx_bytes", "persistent_keepalive_interval"):
            if not _UNSIGNED.match(value):
                raise UAPIError("{} is not a number".format(key))
            index = {"last_handshake_time_sec": 5, "rx_bytes": 6, "tx_bytes": 7,
                     "persistent_keepalive_interval": 8}[key]
            peers[-1][index] = str(int(value)) if index < 8 or int(value) else "off"
    for peer in peers:
        peer[4] = peer[4][1:] or "(none)"
    return peers


def implementation(device: str, userspace: str) -> Tuple[str, str]:
    """(implementation, version) of a present device: the kernel module's, or the userspace
    program the charm's step brought it up with. ``userspace`` is the charm's record, one
    "device implementation version" line per device (or, written by a release before the
    per-device choice, one "userspace <program> <version>" line for every device)."""
    uevent = read_text("/sys/class/net/{}/uevent".format(device), 4096)
    if "DEVTYPE=wireguard" in uevent.split("\n"):
        return "kernel", read_text("/sys/module/wireguard/version", 64).strip() or "unknown"
    lines = [line.split() for line in userspace.splitlines()]
    for parts in lines:
        if len(parts) == 3 and parts[0] == device and parts[1] != "kernel":
            return parts[1], parts[2]
    for parts in lines:
        if len(parts) >= 2 and parts[0] == "userspace":
            return os.path.basename(parts[1]), (parts[2] if len(parts) > 2 else "unknown")
    return "userspace", "unknown"


def _peer_labels(dev: Dict[str, Any]) -> Dict[str, str]:
    """{public key: peer label}, one label per key: a label that repeats (never from the charm)
    gets the key's start appended, so no two series of a scrape are the same."""
    out: Dict[str, str] = {}
    for p in dev.get("peers") or []:
        if isinstance(p, dict) and isinstance(p.get("public-key"), str):
            label = str(p.get("peer"))
            if label in out.values():
                label = "{}#{}".format(label, p["public-key"][:8])
            out.setdefault(p["public-key"], label)
    return out


def _refused_counts(dev: Dict[str, Any], vnf_refused: Dict[str, List[str]]) -> Dict[str, int]:
    """{peer label: refused prefix count}: the charm's refusals and the routes the VNF refused
    (attributed to the peer whose allowed IPs hold the prefix)."""
    counts: Dict[str, int] = {}
    for item in dev.get("refused") or []:
        if isinstance(item, dict) and isinstance(item.get("peer"), str):
            counts[item["peer"]] = counts.get(item["peer"], 0) + 1
    for prefix in vnf_refused.get(dev["device"], []):
        for peer in dev.get("peers") or []:
            if isinstance(peer, dict) and prefix in (peer.get("allowed-ips") or []):
                counts[str(peer.get("peer"))] = counts.get(str(peer.get("peer")), 0) + 1
    return counts


def vnf_refusals(path: str = REFUSED) -> Dict[str, List[str]]:
    out: Dict[str, List[str]] = {}
    for line in read_text(path).splitlines():
        words = line.split()
        if len(words) == 2:
            out.setdefault(words[0], []).append(words[1])
    return out


def pq_psk_states(folder: str = PQ_PSK_STATE) -> Dict[Tuple[str, str], Tuple[str, int, int]]:
    """{(device, peer key): (state, renewals, last renewal)} from the pq-psk daemon's status files;
    a line that is not exactly the daemon's (the grammar of tunnels/pqpsk.sh's report) is skipped."""
    out: Dict[Tuple[str, str], Tuple[str, int, int]] = {}
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".status"))
    except OSError:
        return out
    for name in names[:256]:
        for line in read_text(os.path.join(folder, name), 1024 * 1024).splitlines():
            w = line.split()
            if (len(w) == 21 and w[0] == "peer" and len(w[2]) == 44 and w[8] in ("waiting", "ok", "failing")
                    and w[12].isdigit() and w[14].isdigit()):
                out[(w[1], w[2])] = (w[8], int(w[12]), int(w[14]))
    return out


def collect(labels: List[Dict[str, Any]], dump: Optional[Dict[str, List[List[str]]]], userspace: str,
            vnf_refused: Dict[str, List[str]], now: float, own: Labels = (),
            sysfs: str = "/sys/class/net",
            pq: Optional[Dict[Tuple[str, str], Tuple[str, int, int]]] = None) -> Dict[str, List[str]]:
    """{family: [sample lines]} for the devices the charm manages. ``own``: labels every
    sample carries (OSM's ns_id, vnf_member_index, vdu_id); ``pq``: pq-psk's state per peer
    (pq_psk_states)."""
    out: Dict[str, List[str]] = {name: [] for name, _, _ in FAMILIES}

    def add(family: str, labels_: Labels, value: object) -> None:
        out[family].append(sample(family, labels_ + own, value))

    add("vpnaas_wireguard_up", (), 0 if dump is None else 1)
    for dev in labels:
        name = dev["device"]
        base = (("refpoint", dev.get("refpoint", "")), ("device", name))
        planed = base + (("plane", dev.get("plane") or ""),)
        present = dump is not None and name in dump
        add("vpnaas_wireguard_device_up", planed, 1 if present else 0)
        by_key = _peer_labels(dev)
        refused = _refused_counts(dev, vnf_refused)
        fresh = set()
        for f in (dump or {}).get(name, []) if present else []:
            handshake = _handshake_time(_int(f[5]), name, userspace, now)
            if handshake and now - handshake <= SESSION_SECONDS:
                fresh.add(f[1])
        for key, peer in sorted(by_key.items(), key=lambda kv: kv[1]):
            add("vpnaas_wireguard_peer_configured", planed + (("peer", peer),), 1)
            add("vpnaas_wireguard_peer_session_up", planed + (("peer", peer),), 1 if key in fresh else 0)
            add("vpnaas_wireguard_peer_refused_prefixes", base + (("peer", peer),), refused.pop(peer, 0))
            _pq_psk(add, planed + (("peer", peer),), (pq or {}).get((name, key)))
        for peer, count in sorted(refused.items()):   # units refused whole: not configured, still counted
            add("vpnaas_wireguard_peer_refused_prefixes", base + (("peer", peer),), count)
        if dump is None or not present:
            continue
        _device(add, base, name, userspace, sysfs)
        peers = dump[name]
        add("vpnaas_wireguard_peers", base, len(peers))
        for f in sorted(peers, key=lambda f: by_key.get(f[1], f[1])):
            labels_ = base + (("peer", by_key.get(f[1]) or "unknown:" + f[1][:8]),)
            add("vpnaas_wireguard_peer_info", labels_ + (("endpoint", f[3][:MAX_LABEL]),
                                                         ("allowed_ips", f[4][:MAX_LABEL])), 1)
            handshake = _handshake_time(_int(f[5]), name, userspace, now)
            if handshake:
                add("vpnaas_wireguard_peer_last_handshake_timestamp_seconds", labels_, handshake)
            add("vpnaas_wireguard_peer_receive_bytes_total", labels_, _int(f[6]))
            add("vpnaas_wireguard_peer_transmit_bytes_total", labels_, _int(f[7]))
    return out


def _pq_psk(add: Any, labels: Labels, state: Optional[Tuple[str, int, int]]) -> None:
    """A peer's pq-psk samples, for a peer the daemon has a state of (pq-psk runs with it)."""
    if state is None:
        return
    add("vpnaas_wireguard_peer_pq_psk_active", labels, 1 if state[0] == "ok" else 0)
    add("vpnaas_wireguard_peer_pq_psk_renewals_total", labels, state[1])
    if state[2] > 0:
        add("vpnaas_wireguard_peer_pq_psk_last_renewal_timestamp_seconds", labels, state[2])


def _handshake_time(value: int, name: str, userspace: str, now: float) -> int:
    """The latest handshake as Unix time, 0 for none. boringtun 0.7.1 gives the time since the
    handshake where the others give its time (seconds since the epoch): a value before 2001 from
    a boringtun device is that age, converted here."""
    if value <= 0:
        return 0
    if value < 10 ** 9 and implementation(name, userspace)[0] == "boringtun":
        return max(0, int(now) - value)
    return value


def _device(add: Any, base: Labels, name: str, userspace: str, sysfs: str) -> None:
    impl, version = implementation(name, userspace)
    add("vpnaas_wireguard_dataplane_info", base + (("implementation", impl), ("version", version)), 1)
    mtu = read_text("{}/{}/mtu".format(sysfs, name), 64).strip()
    if mtu.isdigit():
        add("vpnaas_wireguard_device_mtu_bytes", base, int(mtu))
    for stat, family in DEVICE_STATS:
        value = read_text("{}/{}/statistics/{}".format(sysfs, name, stat), 64).strip()
        if value.isdigit():
            add(family, base, int(value))


def _int(text: str) -> int:
    try:
        return max(0, int(text))
    except ValueError:
        return 0


def exposition(paths: Optional[Dict[str, str]] = None) -> bytes:
    """The whole text exposition, as bytes."""
    paths = paths or {}
    own, labels = load_labels(paths.get("labels", LABELS))
    sysfs = paths.get("sysfs", "/sys/class/net")
    families = collect(labels, wg_dump(paths.get("uapi", UAPI_DIR), sysfs),
                       read_text(paths.get("implementation", IMPLEMENTATION), 4096).strip(),
                       vnf_refusals(paths.get("refused", REFUSED)), time.time(), own, sysfs,
                       pq_psk_states(paths.get("pq_psk", PQ_PSK_STATE)))
    lines = []
    for name, kind, text in FAMILIES:
        if families[name]:
            lines += ["# HELP {} {}".format(name, text), "# TYPE {} {}".format(name, kind)] + families[name]
    return ("\n".join(lines) + "\n").encode("utf-8", "replace")
