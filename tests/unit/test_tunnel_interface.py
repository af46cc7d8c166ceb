"""The tunnel relation interface as one versioned module (vpnaas.core.relation_data): its
version, its schema held against what the codec writes and reads, its sides, and the wire
format peers of the previous revision read (field names, order and version strings unchanged)."""
import ipaddress
import re

import jsonschema
import pytest

from vpnaas.charm import tunnel_relation
from vpnaas.core import refpoints, registry, relation_data

#: What this and the previous revision write, in this order (the relation cache's digests follow
#: it): a change here is a change of the wire format, which needs a new LIBAPI.
WIRE_FIELDS = ("vpnaas-schema", "public-key", "endpoint", "tunnel-address", "service-prefixes", "wants-peer-keys",
               "peer-keys", "rotation-protocol", "next-key", "next-endpoint", "next-peer-keys")
#: What the previous revision appended (optional, LIBPATCH 3).
PREVIOUS_FIELDS = ("pq-psk",)
#: What this revision appends (optional, LIBPATCH 4: the publication's generation, which the
#: application-data mirror needs): a unit of the previous revision ignores it.
NEW_FIELDS = ("generation",)


def test_the_version_on_the_wire_is_the_api_and_the_fields_are_the_previous_revisions():
    assert (relation_data.LIBAPI, relation_data.SCHEMA_VERSION, relation_data.ROTATION_PROTOCOL) == (1, "1", "1")
    assert relation_data.PUBLISHED == WIRE_FIELDS + PREVIOUS_FIELDS
    assert relation_data.READ == WIRE_FIELDS + PREVIOUS_FIELDS + NEW_FIELDS
    assert relation_data.KEYS == WIRE_FIELDS[:5]
    assert relation_data.ROTATION_KEYS == WIRE_FIELDS[7:]
    assert relation_data.LIBPATCH == 4 and not any(f.required for f in relation_data.FIELDS
                                                   if f.name in PREVIOUS_FIELDS + NEW_FIELDS)
    assert relation_data.LIBPATCH == max(f.patch for f in relation_data.FIELDS)
    assert [f.name for f in relation_data.FIELDS if f.required] == ["vpnaas-schema", "public-key", "endpoint",
                                                                     "tunnel-address"]


def test_the_docstring_table_is_the_schema_and_nothing_else_specifies_it():
    specified = re.findall(r"^\| `([a-z-]+)` +\|", relation_data.__doc__, re.M)
    assert specified == list(relation_data.READ)
    assert "| `public-key`" not in tunnel_relation.__doc__


@pytest.fixture
def bags(wg_key):
    key = wg_key()
    base = relation_data.encode(key, "192.168.8.10", 51821, ipaddress.ip_interface("10.250.1.1/30"),
                                [ipaddress.ip_network("172.16.6.0/24")])
    full = dict(base, **{"wants-peer-keys": "yes", "peer-keys": ",".join([wg_key(), wg_key()]),
                         "rotation-protocol": "1", "next-key": wg_key(), "next-endpoint": "192.168.8.10:51921",
                         "next-peer-keys": wg_key(), "pq-psk": "1"})
    return [base, full, dict(full, **{"ingress-address": "192.168.8.10", "egress-subnets": "192.168.8.10/32"})]


def test_what_the_codec_writes_and_reads_fits_the_schema(bags):
    schema = relation_data.json_schema()
    jsonschema.Draft7Validator.check_schema(schema)
    for bag in bags:
        jsonschema.validate(bag, schema)
        assert relation_data.read("mme/0", bag).info is not None


def test_the_schema_refuses_what_the_codec_refuses_by_shape(bags):
    schema = relation_data.json_schema()
    for broken in (dict(bags[0], **{"vpnaas-schema": "2"}), {k: v for k, v in bags[0].items() if k != "endpoint"},
                   dict(bags[0], **{"wants-peer-keys": "no"}), dict(bags[0], **{"public-key": "A" * 45})):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(broken, schema)
        assert relation_data.read("mme/0", broken).info is None


@pytest.mark.parametrize("rp", sorted(registry.load().reference_points))
def test_the_provider_takes_the_first_host_and_the_requirer_the_second(rp):
    network = ipaddress.ip_network(refpoints.default_tunnel_network(rp))
    first, second = list(network.hosts())[:2]
    assert relation_data.side("provider").default_tunnel_address(network) == \
        ipaddress.ip_interface("{}/{}".format(first, network.prefixlen))
    assert relation_data.side("requirer").default_tunnel_address(network) == \
        ipaddress.ip_interface("{}/{}".format(second, network.prefixlen))
    assert isinstance(relation_data.side("provider"), relation_data.Provider)
    assert isinstance(relation_data.side("requirer"), relation_data.Requirer)
