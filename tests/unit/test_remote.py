import subprocess

import pytest

from vpnaas import plan as p
from vpnaas import relation_data, remote, wgconfig

EPS = [p.TunnelEndpoint("s6a", "provider")]
CFG = {"ssh-hostname": "198.18.0.2", "tunnel-mtu": 1420, "persistent-keepalive": 25, "s6a-listen-port": 51821,
       "s6a-service-addresses": "172.16.6.2/32"}


def a_plan(wg_key):
    bag = relation_data.encode(wg_key(), "192.168.8.129", 51821, "10.250.1.2/30", [])
    bag["service-prefixes"] = "172.16.6.129/32"
    return p.build_plan(CFG, EPS, {"s6a": [{"hss/0": bag}]}, {})


def test_config_body_has_no_private_key_and_routes_with_source(wg_key):
    plan = a_plan(wg_key)
    body = wgconfig.render_body(plan.device("s6a"))
    assert "PrivateKey" not in body
    assert "Table = off" in body and "ListenPort = 51821" in body and "MTU = 1420" in body
    assert "PostUp = ip route replace 172.16.6.129/32 dev %i src 172.16.6.2" in body
    assert "AllowedIPs = 10.250.1.2/32, 172.16.6.129/32" in body
    assert "PersistentKeepalive = 25" in body


def test_script_is_valid_bash_and_quotes_everything(wg_key):
    script = remote.build_script(a_plan(wg_key), rotate=["wg-s6a"], restart=True, component='out "COMPONENT x y"')
    proc = subprocess.run(["bash", "-n"], input=script, universal_newlines=True, stderr=subprocess.PIPE)
    assert proc.returncode == 0, proc.stderr
    assert "ensure_device wg-s6a 1 1 " in script
    assert "'172.16.6.129/32|172.16.6.2'" in script
    assert script.rstrip().endswith("out DONE")


def test_dummy_script_is_valid_sh():
    from ipaddress import ip_interface
    text = wgconfig.render_dummy_script([ip_interface("172.16.6.2/32"), ip_interface("fd00::2/128")])
    assert subprocess.run(["sh", "-n"], input=text, universal_newlines=True).returncode == 0
    assert "wanted='172.16.6.2/32 fd00::2/128'" in text


def test_remote_command_uses_sudo_for_non_root():
    assert remote.remote_command("root").startswith("bash -c ")
    assert remote.remote_command("ubuntu").startswith("sudo -n bash -c ")


def _remote(script, timeout=None):
    """Run the remote command line as the VNF's login shell would, with the script on stdin."""
    return subprocess.run(["sh", "-c", remote.remote_command("root", timeout)], input=script,
                          universal_newlines=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)


def test_children_cannot_swallow_the_script_and_the_exit_code_comes_back():
    script = "echo first\ncat\necho second\nexit 7\n"   # `cat` would eat "echo second" from stdin
    proc = _remote(script)
    assert proc.stdout.split() == ["first", "second"] and proc.returncode == 7


def test_remote_timeout_stops_the_script_on_the_vnf():
    import time
    started = time.monotonic()
    proc = _remote("sleep 20\necho never\n", timeout=1)
    assert proc.returncode == 124 and "never" not in proc.stdout
    assert time.monotonic() - started < 10


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
