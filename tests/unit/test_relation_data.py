import pytest

from vpnaas import SCHEMA_VERSION, relation_data, validation


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
