"""The tunnels' metrics without a VNF: the labels the charm gives the exporter (vpnaas.vnf.metrics)
and the exporter's rendering (vnf/wg-exporter.py) of a `wg show all dump`. Runs on Python 3.6 too
(make unit36): the exporter runs on the VNFs' Python 3.6. The real parser's verdict on a real
VNF's output is tests/e2e/test_metrics_prometheus.py's."""
import importlib.util
import ipaddress
import json
import os
import shutil
import subprocess

import pytest

from vpnaas.core import validation
from vpnaas.core.model import MANUAL, Device, Peer, Plan
from vpnaas.vnf import metrics

COLLECTOR = os.path.join(os.path.dirname(metrics.__file__), "wg-collect.py")
KEY_A = "A" * 43 + "="
KEY_B = "B" * 43 + "="
HOSTILE = ['evil"/0', "a\\b/1", "x\n# TYPE fake gauge\nfake 1", "}{", "\u00e9t\u00e9/0", "app/01", "App/0",
           "a--b/0", "1app/0", "app/" + "9" * 10, "../../etc/0", ""]


def exporter():
    spec = importlib.util.spec_from_file_location("wg_collect", COLLECTOR)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", ["hss/0", "oai-spgwc/12", "wireguard-proxy-b/3", "a1-b2c/0"])
def test_juju_unit_names_pass_the_grammar(name):
    assert validation.unit_name(name) == name
    assert metrics.peer_label(name) == name


@pytest.mark.parametrize("name", HOSTILE)
def test_a_unit_name_that_is_not_one_becomes_an_opaque_label(name):
    with pytest.raises(validation.InvalidValue):
        validation.unit_name(name)
    label = metrics.peer_label(name)
    assert label.startswith("invalid:") and len(label) == len("invalid:") + 12
    assert metrics.peer_label(name + "x") != label


def test_manual_peers_are_named_by_the_start_of_their_public_key():
    assert metrics.peer_label(MANUAL, KEY_A) == "manual:AAAAAAAA"


def _plan():
    plan = Plan()
    dev = Device("s6a", 51821, ipaddress.ip_interface("10.250.1.1/30"), 1420, 25,
                 [ipaddress.ip_interface("172.16.6.2/32")], "192.168.8.2")
    dev.peers.append(Peer(KEY_A, "192.168.8.129:51821", [ipaddress.ip_network("10.250.1.2/32")], "hss/0"))
    dev.peers.append(Peer(KEY_B, "", [ipaddress.ip_network("10.9.9.9/32")], 'evil"/0'))
    dev.refused_prefixes += [("hss/0", "169.254.169.254/32"), ('evil"/0', "10.0.0.0/8"),
                             ("hss/0", "169.254.169.254/32")]
    plan.devices.append(dev)
    return plan


def test_the_labels_document_names_every_peer_and_refusal_by_validated_labels():
    doc = metrics.labels_document(_plan())
    assert doc["schema"] == metrics.LABELS_SCHEMA
    (dev,) = doc["devices"]
    assert (dev["device"], dev["refpoint"]) == ("wg-s6a", "s6a")
    assert [p["peer"] for p in dev["peers"]] == ["hss/0", metrics.peer_label('evil"/0')]
    assert dev["peers"][0]["allowed-ips"] == ["10.250.1.2/32"]
    assert dev["refused"] == [{"peer": metrics.peer_label('evil"/0'), "prefix": "10.0.0.0/8"},
                              {"peer": "hss/0", "prefix": "169.254.169.254/32"}]


def _dump(handshake):
    return {"wg-s6a": [["wg-s6a", KEY_A, "(none)", "192.168.8.129:51821", "10.250.1.2/32", str(handshake),
                        "1000", "2000", "25"]]}


def test_the_exporter_renders_handshake_times_counters_and_refusals_per_peer(tmp_path):
    mod = exporter()
    labels = metrics.labels_document(_plan())["devices"]
    sysfs = tmp_path / "wg-s6a"
    (sysfs / "statistics").mkdir(parents=True)
    (sysfs / "mtu").write_text("1420\n")
    for stat, value in (("rx_dropped", 3), ("tx_dropped", 4), ("rx_errors", 5), ("tx_errors", 6)):
        (sysfs / "statistics" / stat).write_text("{}\n".format(value))
    families = mod.collect(labels, _dump(1000), "userspace /usr/bin/wireguard-go 0.0.20250522",
                           {"wg-s6a": ["10.250.1.2/32"]}, 1042.7, sysfs=str(tmp_path))
    base = 'refpoint="s6a",device="wg-s6a"'
    assert families["vpnaas_wireguard_peer_last_handshake_timestamp_seconds"] == [
        'vpnaas_wireguard_peer_last_handshake_timestamp_seconds{%s,peer="hss/0"} 1000' % base]
    assert families["vpnaas_wireguard_peer_receive_bytes_total"] == [
        'vpnaas_wireguard_peer_receive_bytes_total{%s,peer="hss/0"} 1000' % base]
    assert families["vpnaas_wireguard_peers"] == ['vpnaas_wireguard_peers{%s} 1' % base]
    assert 'vpnaas_wireguard_peer_refused_prefixes{%s,peer="hss/0"} 2' % base in \
        families["vpnaas_wireguard_peer_refused_prefixes"]   # the policy's and the VNF's refusal
    assert families["vpnaas_wireguard_dataplane_info"] == [
        'vpnaas_wireguard_dataplane_info{%s,implementation="wireguard-go",version="0.0.20250522"} 1' % base]
    assert families["vpnaas_wireguard_peer_info"] == [
        'vpnaas_wireguard_peer_info{%s,peer="hss/0",endpoint="192.168.8.129:51821",allowed_ips="10.250.1.2/32"} 1'
        % base]
    assert families["vpnaas_wireguard_device_mtu_bytes"] == ['vpnaas_wireguard_device_mtu_bytes{%s} 1420' % base]
    assert families["vpnaas_wireguard_device_receive_dropped_total"] == [
        'vpnaas_wireguard_device_receive_dropped_total{%s} 3' % base]
    assert families["vpnaas_wireguard_device_transmit_errors_total"] == [
        'vpnaas_wireguard_device_transmit_errors_total{%s} 6' % base]
    planed = base + ',plane="control"'
    assert families["vpnaas_wireguard_device_up"] == ['vpnaas_wireguard_device_up{%s} 1' % planed]
    assert len(families["vpnaas_wireguard_peer_configured"]) == 2
    # A session is usable for 180 s after its handshake; the peer without one (evil) is down.
    assert families["vpnaas_wireguard_peer_session_up"] == [
        'vpnaas_wireguard_peer_session_up{%s,peer="hss/0"} 1' % planed,
        'vpnaas_wireguard_peer_session_up{%s,peer="%s"} 0' % (planed, metrics.peer_label('evil"/0'))]
    stale = mod.collect(labels, _dump(1000), "", {}, 1181, sysfs=str(tmp_path))
    assert 'vpnaas_wireguard_peer_session_up{%s,peer="hss/0"} 0' % planed in stale["vpnaas_wireguard_peer_session_up"]
    # Before the first handshake: no timestamp at all (the alert treats a configured peer without one as stale).
    assert not mod.collect(labels, _dump(0), "", {}, 5)["vpnaas_wireguard_peer_last_handshake_timestamp_seconds"]
    # The device gone (its daemon stopped): down, and its peers still configured, their sessions down.
    down = mod.collect(labels, {}, "", {}, 5)
    assert down["vpnaas_wireguard_device_up"] == ['vpnaas_wireguard_device_up{%s} 0' % planed]
    assert len(down["vpnaas_wireguard_peer_configured"]) == 2 and not down["vpnaas_wireguard_peers"]
    assert all(line.endswith(" 0") for line in down["vpnaas_wireguard_peer_session_up"])


def test_a_user_plane_device_and_osms_labels_reach_every_sample():
    """The plane comes from the registry (s1u: user); OSM's ns_id, vnf_member_index and vdu_id
    (the charm's osm-instance, OSM's <OSM>) label every sample, so OSM's alarms can select them."""
    mod = exporter()
    plan = _plan()
    plan.devices[0].endpoint = "s1u"
    doc = metrics.labels_document(plan)
    assert doc["devices"][0]["plane"] == "user" and doc["osm"] == {}
    own = (("ns_id", "0b1c"), ("vnf_member_index", "hss"), ("vdu_id", "hss"))
    families = mod.collect(doc["devices"], _dump(1000), "", {}, 1010, own)
    lines = [line for family in families.values() for line in family]
    wrong = [line for line in lines if not line.rsplit("} ", 1)[0].endswith(
        'ns_id="0b1c",vnf_member_index="hss",vdu_id="hss"')]
    assert lines and not wrong, wrong
    assert 'plane="user"' in families["vpnaas_wireguard_device_up"][0]


@pytest.mark.parametrize("osm, labels", [
    ("{member_vnf_index: hss, ns_id: 0b1c-4d, vdu: {hss-0: {count_index: 0, vdu_id: hss}}, vnf_id: x}",
     (("ns_id", "0b1c-4d"), ("vnf_member_index", "hss"), ("vdu_id", "hss"))),
    ("{count_index: 1, member_vnf_index: '3', ns_id: n, vdu_id: spgwu, vdu: {a: {vdu_id: a}, b: {vdu_id: b}}}",
     (("ns_id", "n"), ("vnf_member_index", "3"), ("vdu_id", "spgwu"))),
    ("{member_vnf_index: hss, ns_id: n, vdu: {a: {vdu_id: a}, b: {vdu_id: b}}}", ()),   # which VDU: unknown
    ("{member_vnf_index: 'h\"ss', ns_id: n, vdu_id: x}", ()),   # not an identifier
    ("", ()),
])
def test_osms_identity_comes_from_osm_instance(osm, labels):
    from vpnaas.core import instance
    assert instance.osm_labels({"osm-instance": osm}) == labels


def test_label_values_are_escaped_per_the_text_format():
    mod = exporter()
    assert mod.escape('a"b\\c\nd') == 'a\\"b\\\\c\\nd'
    line = mod.sample("m", (("peer", 'x"}\n# TYPE m counter\\'),), 1)
    assert line == 'm{peer="x\\"}\\n# TYPE m counter\\\\"} 1' and "\n" not in line


def test_no_secret_of_the_dump_reaches_a_sample():
    """The dump's interface line carries the private key and a peer line the preshared key."""
    mod = exporter()
    private, psk = "P" * 43 + "=", "S" * 43 + "="
    text = "wg-s6a\t{}\t{}\t51821\toff\nwg-s6a\t{}\t{}\t1.2.3.4:51821\t10.250.1.2/32\t7\t1\t2\t25\n".format(
        private, KEY_A, KEY_A, psk)
    dump = {}
    for line in text.splitlines():
        f = line.split("\t")
        if len(f) == 9:
            dump.setdefault(f[0], []).append(f)
    families = mod.collect(metrics.labels_document(_plan())["devices"], dump, "", {}, 9)
    rendered = "\n".join(line for lines in families.values() for line in lines)
    assert private not in rendered and psk not in rendered


@pytest.mark.skipif(not shutil.which("promtool"), reason="promtool (Debian's prometheus) not installed")
def test_hostile_labels_pass_prometheus_own_parser(tmp_path):
    mod = exporter()
    labels = [{"device": "wg-s6a", "refpoint": 's6a"\n', "peers": [
        {"public-key": KEY_A, "peer": h, "allowed-ips": []} for h in HOSTILE[:5]],
        "refused": [{"peer": h, "prefix": "10.0.0.0/8"} for h in HOSTILE[5:8]]}]
    path = tmp_path / "labels.json"
    path.write_text(json.dumps({"schema": 1, "devices": labels}))
    text = mod.exposition({"labels": str(path), "refused": str(tmp_path / "none"),
                           "implementation": str(tmp_path / "none")})
    proc = subprocess.run(["promtool", "check", "metrics"], input=text, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT)
    assert proc.returncode == 0, proc.stdout.decode()


def test_the_data_plane_is_per_device_from_the_charms_record():
    """vnf/metrics.sh writes one "device implementation version" line per device the step applied;
    the line of another device, or of a device on the kernel module, never labels this one."""
    mod = exporter()
    labels = metrics.labels_document(_plan())["devices"]
    base = 'refpoint="s6a",device="wg-s6a"'
    record = "wg-s11 wireguard-go v0.0.20250522\nwg-s6a boringtun 0.7.1\n"
    assert mod.collect(labels, _dump(1000), record, {}, 1042)["vpnaas_wireguard_dataplane_info"] == [
        'vpnaas_wireguard_dataplane_info{%s,implementation="boringtun",version="0.7.1"} 1' % base]
    other = mod.collect(labels, _dump(1000), "wg-s11 boringtun 0.7.1\n", {}, 1042)
    assert other["vpnaas_wireguard_dataplane_info"] == [
        'vpnaas_wireguard_dataplane_info{%s,implementation="userspace",version="unknown"} 1' % base]


def test_boringtuns_handshake_age_becomes_a_timestamp():
    mod = exporter()
    labels = metrics.labels_document(_plan())["devices"]
    families = mod.collect(labels, _dump(3), "wg-s6a boringtun 0.7.1\n", {}, 1042)
    assert families["vpnaas_wireguard_peer_last_handshake_timestamp_seconds"] == [
        'vpnaas_wireguard_peer_last_handshake_timestamp_seconds{refpoint="s6a",device="wg-s6a",peer="hss/0"} 1039']


def _pq_line(dev, key, state, renewals, last):
    """A line as the pq-psk daemon writes it (pqpsk/state.go, States.line)."""
    return ("peer {} {} role initiator mechanism ML-KEM-768 state {} epoch 1795819260779 renewals {} last {} "
            "refusals 0 failures 0 reason -".format(dev, key, state, renewals, last))


def test_pq_psk_state_per_peer_comes_from_the_daemons_status_files_never_a_key(tmp_path):
    """pq-psk's state of each configured peer: active (its last exchange completed), renewals and
    the last renewal's time, read from the daemon's status files; a malformed line is skipped; a
    peer pq-psk does not run with has no sample."""
    mod = exporter()
    folder = tmp_path / "pq"
    folder.mkdir()
    (folder / "wg-s6a.status").write_text("\n".join([
        "device wg-s6a refusals 3", _pq_line("wg-s6a", KEY_A, "ok", 4, 1795819260),
        _pq_line("wg-s6a", KEY_B, "bogus", 1, 1), _pq_line("wg-s6a", "x" * 44, "ok", "NaN", 1)]) + "\n")
    states = mod.pq_psk_states(str(folder))
    assert states == {("wg-s6a", KEY_A): ("ok", 4, 1795819260)}
    labels = metrics.labels_document(_plan())["devices"]
    families = mod.collect(labels, _dump(1000), "", {}, 1042, pq=states)
    peer = 'refpoint="s6a",device="wg-s6a",plane="control",peer="hss/0"'
    assert families["vpnaas_wireguard_peer_pq_psk_active"] == ["vpnaas_wireguard_peer_pq_psk_active{%s} 1" % peer]
    assert families["vpnaas_wireguard_peer_pq_psk_renewals_total"] == [
        "vpnaas_wireguard_peer_pq_psk_renewals_total{%s} 4" % peer]
    assert families["vpnaas_wireguard_peer_pq_psk_last_renewal_timestamp_seconds"] == [
        "vpnaas_wireguard_peer_pq_psk_last_renewal_timestamp_seconds{%s} 1795819260" % peer]
    failing = mod.collect(labels, _dump(1000), "", {}, 1042, pq={("wg-s6a", KEY_A): ("failing", 4, 0)})
    assert failing["vpnaas_wireguard_peer_pq_psk_active"] == ["vpnaas_wireguard_peer_pq_psk_active{%s} 0" % peer]
    assert not failing["vpnaas_wireguard_peer_pq_psk_last_renewal_timestamp_seconds"]
    assert mod.pq_psk_states(str(tmp_path / "absent")) == {}
    path = tmp_path / "labels.json"
    path.write_text(json.dumps({"schema": 1, "devices": labels}))
    text = mod.exposition({"labels": str(path), "refused": str(tmp_path / "none"),
                           "implementation": str(tmp_path / "none"), "pq_psk": str(folder)})
    assert b"vpnaas_wireguard_peer_pq_psk_renewals_total{" in text
    proc = subprocess.run(["promtool", "check", "metrics"], input=text, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT)
    assert proc.returncode == 0, proc.stdout.decode()


# --------------------------------------------------------------------------- the devices, asked without `wg`'s deletion
PRIVATE_HEX = "e" * 64
PSK_HEX = "d" * 64


def _answer(*peers):
    """A get=1 answer as wireguard-go gives it (ipc/uapi.go, IpcGetOperation): the device, then each peer."""
    text = "private_key={}\nlisten_port=51820\n".format(PRIVATE_HEX)
    for key_hex, psk, endpoint, allowed, keepalive in peers:
        text += "public_key={}\npreshared_key={}\nprotocol_version=1\n".format(key_hex, psk)
        text += "endpoint={}\n".format(endpoint) if endpoint else ""
        text += "last_handshake_time_sec=1700000000\nlast_handshake_time_nsec=5\ntx_bytes=20\nrx_bytes=10\n"
        text += "persistent_keepalive_interval={}\n".format(keepalive)
        text += "".join("allowed_ip={}\n".format(a) for a in allowed)
    return text + "errno=0\n\n"


class Daemon(object):
    """A userspace device's UAPI socket that answers every connection with ``answer`` (None: never answers)."""

    def __init__(self, path, answer):
        import socket
        import threading
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        self.sock.listen(8)
        self.answer = answer
        self.asked = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn, conn.makefile("rb") as request:
                lines = []
                for line in request:   # a request ends with an empty line
                    lines.append(line)
                    if line == b"\n":
                        break
                self.asked.append(b"".join(lines))
                if self.answer is None:
                    conn.recv(1)   # until the client gives up
                else:
                    conn.sendall(self.answer.encode())

    def close(self):
        self.sock.close()
        self.thread.join(10)


def _bound_only(path):
    """A socket bound and not listening: a daemon in the instant between its bind() and listen()."""
    import socket
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    return s


def test_a_userspace_device_is_read_over_its_socket_as_wg_dump_prints_it(tmp_path):
    mod = exporter()
    (tmp_path / "sys").mkdir()
    a_hex = bytes.fromhex("0a" * 32)
    daemon = Daemon(str(tmp_path / "wg-a.sock"), _answer(
        (a_hex.hex(), PSK_HEX, "192.0.2.1:51821", ["10.250.1.2/32", "fd00::2/128"], 25),
        ("0b" * 32, "0" * 64, "", [], 0)))
    try:
        dump = mod.wg_dump(str(tmp_path), str(tmp_path / "sys"), 30)
    finally:
        daemon.close()
    assert daemon.asked == [b"get=1\n\n"]
    b64 = __import__("base64").b64encode
    assert dump == {"wg-a": [
        ["wg-a", b64(a_hex).decode(), "(hidden)", "192.0.2.1:51821", "10.250.1.2/32,fd00::2/128", "1700000000",
         "10", "20", "25"],
        ["wg-a", b64(bytes.fromhex("0b" * 32)).decode(), "(none)", "(none)", "(none)", "1700000000", "10", "20",
         "off"]]}
    text = repr(dump)
    for secret in (PRIVATE_HEX, PSK_HEX):
        assert secret not in text and b64(bytes.fromhex(secret)).decode() not in text


def test_a_socket_that_refuses_is_skipped_and_never_deleted(tmp_path):
    """A starting daemon's socket (bound, not yet listening) refuses: `wg` would delete it and
    the daemon would exit; the collector skips it and the other devices are reported."""
    mod = exporter()
    (tmp_path / "sys").mkdir()
    starting = _bound_only(str(tmp_path / "wg-b.sock"))
    (tmp_path / "wg-gone.sock").write_text("")      # not a socket at all (a daemon's leftover)
    daemon = Daemon(str(tmp_path / "wg-a.sock"), _answer(("0a" * 32, "0" * 64, "", ["10.0.0.2/32"], 0)))
    labels = {"devices": [{"device": "wg-a", "refpoint": "s6a"}, {"device": "wg-b", "refpoint": "s11"}]}
    (tmp_path / "labels.json").write_text(json.dumps(labels))
    try:
        text = mod.exposition({"uapi": str(tmp_path), "sysfs": str(tmp_path / "sys"),
                               "labels": str(tmp_path / "labels.json")}).decode()
    finally:
        daemon.close()
        starting.close()
    assert os.path.exists(str(tmp_path / "wg-b.sock")), "the starting daemon's socket was deleted"
    assert os.path.exists(str(tmp_path / "wg-gone.sock"))
    assert "\nvpnaas_wireguard_up 1\n" in text
    assert 'vpnaas_wireguard_device_up{refpoint="s6a",device="wg-a",plane=""} 1' in text
    assert 'vpnaas_wireguard_device_up{refpoint="s11",device="wg-b",plane=""} 0' in text
    assert 'vpnaas_wireguard_peers{refpoint="s6a",device="wg-a"} 1' in text


@pytest.mark.parametrize("answer", [
    "errno=22\n\n",                                                      # the daemon's own failure
    _answer(("0a" * 32, "0" * 64, "", [], 0))[:-12],                     # cut before errno=0
    _answer(("0a" * 31, "0" * 64, "", [], 0)),                           # a key that is not 32 bytes
    _answer(("0a" * 32, "0" * 64, "", [], 0)).replace("rx_bytes=10", "rx_bytes=-1"),
    "garbage\nerrno=0\n\n",
    None,                                                                # never answers: the deadline
], ids=["errno", "cut", "short-key", "negative", "garbage", "silent"])
def test_a_device_that_answers_wrongly_makes_the_scrape_say_wireguard_is_down(tmp_path, answer):
    """As `wg show all dump` fails when one device's answer fails: vpnaas_wireguard_up 0."""
    mod = exporter()
    (tmp_path / "sys").mkdir()
    daemon = Daemon(str(tmp_path / "wg-a.sock"), answer)
    try:
        assert mod.wg_dump(str(tmp_path), str(tmp_path / "sys"), 0.5 if answer is None else 30) is None
    finally:
        daemon.close()


def test_only_kernel_devices_are_asked_with_wg_by_name(tmp_path, monkeypatch):
    """A kernel device (sysfs DEVTYPE=wireguard) is asked with `wg show <dev> dump`; one with a
    UAPI socket of its name (a device changing implementation) is not, nor is any other link."""
    mod = exporter()
    sysfs = tmp_path / "sys"
    for name, devtype in (("wg-k", "wireguard"), ("wg-b", "wireguard"), ("eth0", "")):
        (sysfs / name).mkdir(parents=True)
        (sysfs / name / "uevent").write_text("DEVTYPE={}\nINTERFACE={}\n".format(devtype, name))
    run = tmp_path / "run"
    run.mkdir()
    starting = _bound_only(str(run / "wg-b.sock"))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "wg.log"
    # `wg show <dev> dump` as wireguard-tools prints one device (src/show.c dump_print without the
    # device column): the device's line (private key, public key, port, fwmark), then its peers
    (bin_dir / "wg").write_text("#!/bin/sh\necho \"$@\" >> {}\nprintf '%s\\t%s\\t%s\\t%s\\n' {} {} 51820 off\n"
                                "printf '%s\\t%s\\t%s\\t%s\\t%s\\t%s\\t%s\\t%s\\n' "
                                "{} {} '(none)' 10.0.0.1/32 0 1 2 off\n".format(log, KEY_B, KEY_B, KEY_A, KEY_B))
    (bin_dir / "wg").chmod(0o755)
    monkeypatch.setenv("PATH", "{}:{}".format(bin_dir, os.environ["PATH"]))
    try:
        dump = mod.wg_dump(str(run), str(sysfs), 30)
    finally:
        starting.close()
    assert log.read_text() == "show wg-k dump\n"
    assert dump == {"wg-k": [["wg-k", KEY_A, "(hidden)", "(none)", "10.0.0.1/32", "0", "1", "2", "off"]]}
    assert KEY_B not in json.dumps(dump)   # the private key of the device line and the preshared key
    assert os.path.exists(str(run / "wg-b.sock"))
