import base64

import pytest

from vpnaas.core import validation as v
from vpnaas.core.validation import InvalidValue

GOOD_KEY = base64.b64encode(b"\x01" * 32).decode()


def test_public_key_accepts_32_byte_base64():
    assert v.public_key(GOOD_KEY) == GOOD_KEY
    assert v.public_key("  " + GOOD_KEY + " ") == GOOD_KEY
    with pytest.raises(v.InvalidValue, match="control"):
        v.public_key(GOOD_KEY + "\n")   # a line break is never stripped silently


@pytest.mark.parametrize("bad, fragment", [
    ("", "44 base64"),
    (GOOD_KEY[:-2] + "=", "44 base64"),                      # short
    (GOOD_KEY[:-1] + "A", "ending in '='"),
    ("!" * 43 + "=", "44 base64"),
    (GOOD_KEY[:-2] + "F=", "not canonical"),
    ("a" * 5000, "at most"),
    ("$(reboot)" + "A" * 34 + "=", "44 base64"),
])
def test_public_key_refuses_malformed(bad, fragment):
    with pytest.raises(InvalidValue) as e:
        v.public_key(bad)
    assert fragment in str(e.value)


def test_public_key_refuses_non_text():
    with pytest.raises(InvalidValue, match="expected text"):
        v.public_key(None)


@pytest.mark.parametrize("good, expected", [("1", 1), ("51820", 51820), (65535, 65535), (" 22 ", 22)])
def test_port_accepts(good, expected):
    assert v.port(good) == expected


@pytest.mark.parametrize("bad", [0, 65536, -1, "x", "22;reboot", True, "", None])
def test_port_refuses(bad):
    with pytest.raises(InvalidValue):
        v.port(bad, "s6a-listen-port")


def test_prefix_list_parses_and_canonicalises():
    nets = v.prefix_list("172.16.6.0/24, 10.0.0.1/32,fd00::/64")
    assert [str(n) for n in nets] == ["172.16.6.0/24", "10.0.0.1/32", "fd00::/64"]
    assert v.prefix_list("") == []


@pytest.mark.parametrize("bad, fragment", [
    ("172.16.6.1/24", "host bits"),
    ("172.16.6.0/33", "no valid prefix length"),
    ("10.0.0.0/8,10.0.0.0/8", "listed twice"),
    ("10.0.0.0/8; rm -rf /", "contains a space"),
    ("10.0.0.0/8\n[Peer]", "control"),
    (",".join("10.0.{}.0/24".format(i) for i in range(65)), "at most"),
])
def test_prefix_list_refuses(bad, fragment):
    with pytest.raises(InvalidValue) as e:
        v.prefix_list(bad, "allowed-ips")
    assert fragment in str(e.value) and "allowed-ips" in str(e.value)


def test_interface_address_needs_prefix_length():
    assert str(v.interface_address("10.250.1.1/30")) == "10.250.1.1/30"
    with pytest.raises(InvalidValue, match="prefix length"):
        v.interface_address("10.250.1.1")
    with pytest.raises(InvalidValue):
        v.interface_address("10.250.1.300/30")


def test_service_addresses_default_to_host_prefix():
    assert [str(a) for a in v.service_address_list("172.16.6.2, fd00::2")] == ["172.16.6.2/32", "fd00::2/128"]
    with pytest.raises(InvalidValue, match="twice"):
        v.service_address_list("172.16.6.2/32,172.16.6.2")


@pytest.mark.parametrize("good", ["192.168.8.2", "hss.example.org", "fd00::1", "a-b.c"])
def test_host_accepts(good):
    assert v.host(good)


@pytest.mark.parametrize("bad", ["", "a b", "host;reboot", "$(id)", "`id`", "-oProxyCommand=x", "a" * 300, "é.com"])
def test_host_refuses_shell_syntax(bad):
    with pytest.raises(InvalidValue):
        v.host(bad)


def test_endpoint_forms():
    assert v.endpoint("192.168.8.2:51821") == ("192.168.8.2", 51821)
    assert v.endpoint("[fd00::1]:51821") == ("fd00::1", 51821)
    assert v.format_endpoint("fd00::1", 5) == "[fd00::1]:5"
    for bad in ("192.168.8.2", ":51821", "[nothost]:1", "h:0", "h:port"):
        with pytest.raises(InvalidValue):
            v.endpoint(bad)


def test_endpoint_name_fits_a_device_name():
    assert v.endpoint_name("s6a") == "s6a"
    for bad in ("S6A", "waytoolongname", "s6a;", "1abc", ""):
        with pytest.raises(InvalidValue):
            v.endpoint_name(bad)


def test_ssh_hostname_takes_floating_part():
    assert v.ssh_hostname("10.0.0.5;192.168.1.5") == "10.0.0.5"
    assert v.ssh_hostname("") == ""
    with pytest.raises(InvalidValue):
        v.ssh_hostname("10.0.0.5 && reboot")


def test_a_message_costs_little_whatever_the_value():
    """A refusal never renders a container or converts a huge integer (issue 36: a message that
    repr()'d an expanded YAML alias bomb ran out of memory; Python 3.11 refuses str() of an int
    beyond 4,300 digits and older ones take quadratic time)."""
    deep = []
    for _ in range(100000):
        deep = [deep]
    assert v.excerpt(deep) == "'<list>'" and v.excerpt({"a": 1}) == "'<dict>'"
    assert v.excerpt(1 << 100000) == "'a number of 100001 bits'"
    assert v.excerpt(-5) == "'-5'" and v.excerpt(None) == "'None'"
    with pytest.raises(InvalidValue, match="tunnel-mtu: a number of 100001 bits is outside 1280-9000"):
        v.integer(1 << 100000, "tunnel-mtu", 1280, 9000)
    with pytest.raises(InvalidValue, match="tunnel-mtu: expected a number, got list"):
        v.integer(deep, "tunnel-mtu", 1280, 9000)
    with pytest.raises(InvalidValue, match="expected a number, got float"):
        v.port(51820.0)
    with pytest.raises(InvalidValue, match="mcc: a number of 100001 bits is not a plausible value"):
        v.decimal(1 << 100000, "mcc")
    assert v.decimal(208, "mcc") == "208"
