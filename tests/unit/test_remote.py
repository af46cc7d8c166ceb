import subprocess

import pytest

from vpnaas.core import model, relation_data, wgconfig
from vpnaas.core import plan as p
from vpnaas.vnf import remote, vnfscript

EPS = [model.TunnelEndpoint("s6a", "provider")]
CFG = {"ssh-hostname": "198.18.0.2", "tunnel-mtu": 1420, "persistent-keepalive": 25, "s6a-listen-port": 51821,
       "s6a-service-addresses": "172.16.6.2/32"}


def a_plan(wg_key):
    bag = relation_data.encode(wg_key(), "192.168.8.129", 51821, "10.250.1.2/30", [])
    bag["service-prefixes"] = "172.16.6.129/32"
    return p.build_plan(CFG, EPS, {"s6a": [{"hss/0": bag}]}, {})


def test_config_body_has_no_private_key_and_routes_through_the_guarded_hook(wg_key):
    plan = a_plan(wg_key)
    dev = plan.device("s6a")
    body = wgconfig.render_body(dev)
    assert "PrivateKey" not in body
    assert "Table = off" in body and "ListenPort = 51821" in body and "MTU = 1420" in body
    assert "PostUp = /etc/wireguard/vpnaas-routes.sh %i" in body.splitlines()
    assert "AllowedIPs = 10.250.1.2/32, 172.16.6.129/32" in body
    assert "PersistentKeepalive = 25" in body
    assert wgconfig.render_routes(dev) == "10.250.1.2/32 172.16.6.2\n172.16.6.129/32 172.16.6.2\n"


def test_renderer_refuses_anything_but_one_printable_word(wg_key):
    dev = a_plan(wg_key).device("s6a")
    dev.peers[0].endpoint = "192.168.8.129:51821\n[Interface]\nPreUp = id"
    with pytest.raises(wgconfig.RenderError):
        wgconfig.render_body(dev)


def test_tunnel_step_is_valid_bash_and_carries_values_only_as_arguments(wg_key):
    plan = a_plan(wg_key)
    step = remote.tunnel_step(plan, "d" * 64, rotate=["wg-s6a"], restart=True)
    program = step.program()
    proc = subprocess.run(["bash", "-n"], input=program, universal_newlines=True, stderr=subprocess.PIPE)
    assert proc.returncode == 0, proc.stderr
    code, _, data = program.partition("\n" + vnfscript.DATA_MARKER + "\n")
    assert "172.16.6.129" not in code and "51821" not in code
    assert step.args == ["d" * 64, "172.16.6.2/32", "wg-s6a", "DEVICE1", "wg-s6a", "DEVICE1", "wg-s6a", "fresh", "-",
                         "1", "DEVICE1", "auto", "wg-s6a", "--", "--", "wg-s6a", "DEVICE1", "9586", "wg-s6a"]
    assert 'stage_routes "${3}" "${4}"' in code.splitlines()
    # pq-psk's files before the devices (a peer leaving pq-psk is off the daemon's list before the
    # sync resets its key) and after them (a device whose key this step made)
    assert 'pq_psk_apply "${5}" "${6}"' in code.splitlines() and 'pq_psk_apply "${16}" "${17}"' in code.splitlines()
    assert 'apply_device "${7}" "${8}" "${9}" "${10}" "${11}" "${12}"' in code.splitlines()
    assert code.rstrip().endswith("out DONE\nexit 0")
    # The configuration travels in the data section, whatever its size: the command line does not grow.
    section = vnfscript.data_section(program)
    assert sorted(section) == ["DEVICE1_BODY", "DEVICE1_PQ", "DEVICE1_ROUTES", "METRICS_COLLECT", "METRICS_EXPORTER",
                               "METRICS_LABELS"]
    assert "Endpoint = 192.168.8.129:51821" in section["DEVICE1_BODY"]
    assert section["DEVICE1_BODY"] == wgconfig.render_body(plan.devices[0])


def test_scrub_hides_key_shaped_text(wg_key):
    key = wg_key()
    assert key not in remote.scrub("Line unrecognized: `PrivateKey={}'".format(key))
    assert "<key>" in remote.scrub("x " + key)


def test_malformed_pubkey_in_report_is_refused():
    with pytest.raises(remote.RemoteError, match="malformed key"):
        remote.parse_report("PUBKEY wg-s6a ERROR step failed (line 3): wg pubkey\nDONE\n")
    with pytest.raises(remote.RemoteError, match="unexpected report"):
        remote.parse_report("NOW soon\nDONE\n")


def test_parse_report(wg_key):
    key, peer = wg_key(), wg_key()
    text = "\n".join([
        "INIT none", "IMPL userspace /usr/bin/wireguard-go v0.0.20250522", "PUBKEY wg-s6a " + key,
        "APPLIED wg-s6a up", "HOST mme", "NOW 1000", "UP wg-s6a",
        "PEER wg-s6a " + "\t".join([peer, "(none)", "192.168.8.129:51821", "10.250.1.2/32,172.16.6.129/32",
                                    "996", "1200", "3400", "25"]),
        "UP wg-s11", "PEER wg-s11 " + "\t".join([wg_key(), "(none)", "(none)", "(none)", "0", "0", "0", "off"]),
        "COMPONENT service running", "DONE"])
    obs = remote.parse_report(text)
    assert obs.init == "none" and obs.implementation == "userspace" and obs.hostname == "mme"
    assert obs.public_keys == {"wg-s6a": key}
    assert obs.peers["wg-s6a"][0] == {"public-key": peer, "endpoint": "192.168.8.129:51821",
                                      "allowed-ips": ["10.250.1.2/32", "172.16.6.129/32"],
                                      "latest-handshake-age": 4, "rx-bytes": 1200, "tx-bytes": 3400}
    assert obs.peers["wg-s11"][0]["latest-handshake-age"] is None
    assert obs.component == {"service": "running"}


def test_parse_report_errors():
    with pytest.raises(remote.RemoteError, match="missing-tool wg"):
        remote.parse_report("INIT none\nERROR missing-tool wg\n")
    with pytest.raises(remote.RemoteError, match="ended early"):
        remote.parse_report("INIT none\n")
    with pytest.raises(remote.RemoteError, match="unexpected wg dump"):
        remote.parse_report("NOW 1\nPEER wg-s6a a b\nDONE\n")


def test_a_report_is_remote_text_every_field_bounded_and_checked(wg_key):
    key = wg_key()
    long = "x" * 100000
    text = "\n".join([
        "INIT " + long, "IMPL userspace " + long, "HOST " + long + "\x1b[2J", "COMPONENT service " + long,
        "FAILED wg-s6a " + long, "REFUSED wg-s6a " + long + " " + long, "METRICS " + long, "NOW 1700000000",
        "PEER wg-s6a {}\t(none)\t{}:51820\t10.250.1.2/32,172.16.6.129/32\t1699999990\t5\t6\t25".format(key, long),
        "DONE"]) + "\n"
    obs = remote.parse_report(text)
    fields = [obs.init, obs.implementation, obs.implementation_detail, obs.hostname, obs.component["service"],
              obs.failed["wg-s6a"], obs.metrics] + list(obs.refused[0]) + [obs.peers["wg-s6a"][0]["endpoint"]]
    assert all(len(f) <= 400 and f.isprintable() for f in fields), [len(f) for f in fields]
    assert obs.peers["wg-s6a"][0]["allowed-ips"] == ["10.250.1.2/32", "172.16.6.129/32"]
    assert obs.peers["wg-s6a"][0]["latest-handshake-age"] == 10


@pytest.mark.parametrize("line, why", [
    ("NOW " + "9" * 5000, "time '" + "9" * 40),
    ("NOW 1e9", "is not a number"),
    ("PEER wg-s6a notakey\t(none)\t(none)\t(none)\t0\t0\t0\toff", "peer key"),
    ("PEER wg-s6a {k}\t(none)\t(none)\t10.0.0.1/8\t0\t0\t0\toff", "not a network prefix"),
    ("PEER wg-s6a {k}\t(none)\t(none)\t(none)\t0\t" + "1" * 21 + "\t0\toff", "byte counter"),
    ("PEER wg-s6a {k}\t(none)\t(none)\t" + ",".join(["10.0.0.1/32"] * 1025) + "\t0\t0\t0\toff", "more than 1024"),
])
def test_a_malformed_report_field_is_refused_never_converted_whole(line, why, wg_key):
    with pytest.raises(remote.RemoteError, match="unexpected"):
        try:
            remote.parse_report("NOW 1\n" + line.format(k=wg_key()) + "\nDONE\n")
        except remote.RemoteError as e:
            assert why in str(e) and len(str(e)) < 300, str(e)
            raise


def test_a_report_too_long_too_many_lines_or_facts_is_refused_unread():
    with pytest.raises(remote.RemoteError, match="characters long"):
        remote.parse_report("x" * (remote.MAX_REPORT + 1))
    with pytest.raises(remote.RemoteError, match="more than 65536 lines"):
        remote.parse_report("UP wg-s6a\n" * 70000 + "DONE\n")
    with pytest.raises(remote.RemoteError, match="more than 4096 facts"):
        remote.parse_report("FACT addr 10.0.0.5/24\n" * 4097 + "DONE\n")


def test_only_a_line_feed_ends_a_report_line():
    """str.splitlines() would end a line at \\x1c, \\x85 or \\u2028 inside a remote value and make
    a line of what follows (here an ERROR that is not one)."""
    obs = remote.parse_report("FAILED wg-s6a wg: bad\x1cERROR injected\u2028DONE\nUP wg-s6a\nDONE\n")
    assert obs.failed["wg-s6a"] == "wg: bad ERROR injected DONE" and obs.up == {"wg-s6a": True}
