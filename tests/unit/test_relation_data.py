import pytest

from vpnaas.core import relation_data, validation

SCHEMA_VERSION = relation_data.SCHEMA_VERSION


def test_roundtrip(wg_key):
    key = wg_key()
    bag = relation_data.encode(key, "fd00::5", 51821, "10.250.1.1/30", [validation.prefix("172.16.6.2/32")])
    assert bag == {"vpnaas-schema": SCHEMA_VERSION, "public-key": key, "endpoint": "[fd00::5]:51821",
                   "tunnel-address": "10.250.1.1/30", "service-prefixes": "172.16.6.2/32"}
    info = relation_data.decode("mme/0", bag)
    assert info.endpoint == ("fd00::5", 51821) and not info.wants_peer_keys
    assert relation_data.decode("mme/0", dict(bag, **{"wants-peer-keys": "yes"})).wants_peer_keys
    assert [str(n) for n in info.allowed_ips()] == ["10.250.1.1/32", "172.16.6.2/32"]


def test_juju_keys_are_ignored_and_nothing_secret_is_published(wg_key):
    bag = relation_data.encode(wg_key(), "h", 1, "10.0.0.1/30", [])
    assert set(bag) == set(relation_data.KEYS)
    assert not any("private" in k or "password" in k for k in bag)
    bag.update({"private-address": "10.1.1.1", "ingress-address": "10.1.1.1", "egress-subnets": "10.1.1.1/32"})
    assert relation_data.decode("x/0", bag).public_key == bag["public-key"]


@pytest.mark.parametrize("value", ["no", "Yes", "yes ", "1", "true", "yes\nx", "y" * 300])
def test_wants_peer_keys_is_yes_or_absent(wg_key, value):
    bag = relation_data.encode(wg_key(), "h", 1, "10.0.0.1/30", [])
    bag["wants-peer-keys"] = value
    with pytest.raises(validation.InvalidValue, match="x/0 wants-peer-keys: .* is not 'yes'"):
        relation_data.decode("x/0", bag)


def test_incomplete_names_what_is_missing():
    with pytest.raises(relation_data.Incomplete, match="public-key, endpoint, tunnel-address"):
        relation_data.decode("hss/0", {"vpnaas-schema": "1"})


def test_a_unit_of_the_previous_release_publishes_no_rotation_fields_and_is_followed_in_place(wg_key):
    rot = relation_data.decode("x/0", relation_data.encode(wg_key(), "h", 1, "10.0.0.1/30", [])).rotation
    assert (rot.protocol, rot.next_key, rot.next_endpoint, rot.next_peer_keys, rot.peer_keys) == \
        (False, "", "", frozenset(), frozenset())
    assert rot.owner_stage("any") == ""


def test_rotation_fields_are_read_canonically(wg_key):
    key, new, other = wg_key(), wg_key(), wg_key()
    bag = dict(relation_data.encode(key, "FD00::5", 51821, "10.0.0.1/30", []),
               **{"rotation-protocol": "1", "next-key": new, "next-endpoint": "[fd00:0::5]:51921",
                  "next-peer-keys": other + "," + key, "peer-keys": other})
    rot = relation_data.decode("x/0", bag).rotation
    assert rot.protocol and rot.next_key == new and rot.next_endpoint == "[fd00::5]:51921"
    assert rot.next_peer_keys == {other, key} and rot.peer_keys == {other}
    assert rot.owner_stage(key) == "next" and rot.owner_stage(new) == "switched"
    # A later protocol: read through the grammar, but not spoken here.
    assert not relation_data.decode("x/0", dict(bag, **{"rotation-protocol": "2"})).rotation.protocol


@pytest.mark.parametrize("field, value, why", [
    ("rotation-protocol", "01", "is not a protocol version"),
    ("rotation-protocol", "1 ", None),
    ("rotation-protocol", "yes", "is not a protocol version"),
    ("next-key", "x" * 44, "a WireGuard key is 44 base64 characters"),
    ("next-endpoint", "192.168.8.130:51921", "is not on the host of its endpoint 192.168.8.129"),
    ("next-endpoint", "192.168.8.129", "is not host:port"),
    ("next-peer-keys", "a,b", "a WireGuard key"),
    ("peer-keys", "retry", "a WireGuard key"),
])
def test_rotation_fields_pass_the_grammar_or_refuse_the_unit(wg_key, field, value, why):
    bag = relation_data.encode(wg_key(), "192.168.8.129", 51821, "10.0.0.1/30", [])
    bag[field] = value
    if why is None:
        relation_data.decode("x/0", bag)
        return
    with pytest.raises(validation.InvalidValue, match=why):
        relation_data.decode("x/0", bag)


def test_a_key_list_holds_the_keys_of_up_to_64_units(wg_key):
    bag = relation_data.encode(wg_key(), "h", 1, "10.0.0.1/30", [])
    bag["next-peer-keys"] = ",".join(wg_key() for _ in range(64))
    assert len(relation_data.decode("x/0", bag).rotation.next_peer_keys) == 64
    bag["next-peer-keys"] += "," + wg_key()
    with pytest.raises(validation.InvalidValue, match="next-peer-keys: value is 2924 characters long .at most 2880"):
        relation_data.decode("x/0", bag)
