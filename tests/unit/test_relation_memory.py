"""vpnaas.charm.relation_memory: what a unit keeps of its tunnel relations across hooks is exactly what
the grammar read (kept and restored without loss), valid only for the code that made it, and
gives the hook gate the same digests as the databags themselves. Pure modules: runs on Python
3.6 too (``make unit36``)."""
import json
import random

import pytest

from vpnaas.charm import relation_cache, relation_memory
from vpnaas.core import relation_data

KEYS = ["{}{}=".format(c * 42, "A") for c in "BCDE"]


def _bag(rng):
    bag = {"vpnaas-schema": rng.choice(["1", "1", "2", ""]), "public-key": rng.choice(KEYS + ["bad", ""]),
           "endpoint": rng.choice(["192.168.64.5:51820", "[fd00::5]:51820", "peer.example:51820", "x"]),
           "tunnel-address": rng.choice(["10.251.0.5/24", "fd01::5/64", "10.251.0.5"]),
           "service-prefixes": rng.choice(["", "172.17.1.1/32,172.17.2.0/24", "fd00::/64", "nope"])}
    if rng.random() < 0.4:
        bag.update({"rotation-protocol": rng.choice(["1", "2", "x"]), "next-key": rng.choice(KEYS),
                    "next-endpoint": rng.choice(["192.168.64.5:51920", "10.0.0.1:51920"]),
                    "next-peer-keys": ",".join(rng.sample(KEYS, 2)), "peer-keys": rng.choice(KEYS)})
    if rng.random() < 0.3:
        bag["wants-peer-keys"] = rng.choice(["yes", "no"])
    return bag


def _same(a, b):
    return a.as_dict() == b.as_dict() and (a.info is None) == (b.info is None) and (
        a.info is None or (a.info.allowed_ips() == b.info.allowed_ips() and a.info.endpoint == b.info.endpoint))


@pytest.mark.parametrize("seed", range(20))
def test_a_reading_kept_and_restored_is_the_reading(seed):
    rng = random.Random(seed)
    for _ in range(50):
        reading = relation_data.read("s1/0", _bag(rng))
        kept = json.loads(json.dumps(reading.as_dict()))
        assert _same(relation_data.Reading.from_dict("s1/0", kept), reading)


@pytest.mark.parametrize("doc", [None, [], {"incomplete": 3}, {"public-key": "k"}, {"invalid": None},
                                 {"public-key": 1, "endpoint": ["h", 1], "tunnel-address": "10.0.0.1/24",
                                  "service-prefixes": [], "wants-peer-keys": False,
                                  "rotation": {"protocol": False, "next-key": "", "next-endpoint": "",
                                               "next-peer-keys": [], "peer-keys": []}}])
def test_a_kept_reading_of_another_shape_is_refused(doc):
    with pytest.raises((ValueError, KeyError, TypeError)):
        relation_data.Reading.from_dict("s1/0", doc)


def test_the_gate_digest_made_from_field_digests_is_the_databags_own():
    rng = random.Random(5)
    fields = list(relation_data.KEYS) + [relation_data.WANTS_PEER_KEYS]
    for _ in range(50):
        bag = _bag(rng)
        memory = relation_memory.Memory()
        memory.keep("2/s1/0", relation_memory.field_digests(bag), relation_data.read("s1/0", bag))
        assert memory.gate_digests(fields) == {"2/s1/0": relation_cache.digest(bag, fields)}


def test_a_databag_read_again_with_the_same_digests_gives_the_kept_reading_and_another_none():
    rng = random.Random(9)
    bag = _bag(rng)
    memory = relation_memory.Memory()
    memory.keep("2/s1/0", relation_memory.field_digests(bag), relation_data.read("s1/0", bag))
    assert memory.reading("2/s1/0", "s1/0", relation_memory.field_digests(bag)) is not None
    other = dict(bag, endpoint="192.168.64.99:51820")
    assert memory.reading("2/s1/0", "s1/0", relation_memory.field_digests(other)) is None
    memory.retain_only([])
    assert memory.reading("2/s1/0", "s1/0") is None


def _memory():
    memory = relation_memory.Memory()
    bag = _bag(random.Random(1))
    memory.keep("2/s1/0", relation_memory.field_digests(bag), relation_data.read("s1/0", bag))
    memory.own["2"], memory.written = "d" * 32, ["2"]
    memory.admission = {"format": 1}
    return memory


def test_the_memory_is_saved_only_when_it_changed_and_loads_back(tmp_path):
    memory = _memory()
    memory.save(str(tmp_path))
    path = tmp_path / relation_memory.FILE_NAME
    stamp = path.stat().st_mtime_ns
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    loaded = relation_memory.load(str(tmp_path))
    assert loaded.as_dict() == memory.as_dict()
    loaded.save(str(tmp_path))
    assert path.stat().st_mtime_ns == stamp, "nothing changed: nothing written"


@pytest.mark.parametrize("change", [
    lambda d: d.update(format=99), lambda d: d.update(grammar="another charm revision"),
    lambda d: d.update(units={"2/s1/0": {"fields": {"a": 1}, "reading": {}}}), lambda d: d.update(own=[]),
    lambda d: d.update(written=[2]), lambda d: d.pop("admission")])
def test_a_memory_of_other_code_or_shape_is_no_memory(tmp_path, change):
    _memory().save(str(tmp_path))
    path = tmp_path / relation_memory.FILE_NAME
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))
    assert relation_memory.load(str(tmp_path)).as_dict() == relation_memory.Memory().as_dict()


def test_an_unreadable_memory_is_no_memory(tmp_path):
    (tmp_path / relation_memory.FILE_NAME).write_text("{not json")
    assert relation_memory.load(str(tmp_path)).units == {}
    assert relation_memory.load(str(tmp_path / "missing")).units == {}


# ---------------------------------------------------------------------- membership (Juju 2.9's record)

def test_membership_is_unknown_until_recorded_then_answers_per_relation_and_endpoint():
    memory = relation_memory.Memory()
    assert memory.relations is None and memory.members(2, "vpn") is None
    memory.record({2: ("vpn", ["s1/0", "s2/0", "s1/0"]), 5: ("vpn-peer", [])})
    assert memory.members(2, "vpn") == ["s1/0", "s2/0"]
    assert memory.members(5, "vpn-peer") == [], "a relation with no member yet is known (relation-created ran)"
    assert memory.members(2, "vpn-peer") is None, "the same id on another endpoint is not this relation"
    assert memory.members(7, "vpn") is None, "a relation created since is not known: it is read"


def test_a_recorded_membership_replaces_the_last_whole():
    """A departed member, a broken relation: gone from the record written after their hook."""
    memory = relation_memory.Memory()
    memory.record({2: ("vpn", ["s1/0", "s2/0"]), 3: ("vpn", ["s3/0"])})
    memory.record({2: ("vpn", ["s1/0"])})
    assert memory.members(2, "vpn") == ["s1/0"] and memory.members(3, "vpn") is None


def test_the_membership_goes_through_the_file_and_back(tmp_path):
    memory = _memory()
    memory.record({2: ("vpn", ["s1/0"]), 11: ("vpn-peer", [])})
    memory.save(str(tmp_path))
    loaded = relation_memory.load(str(tmp_path))
    assert loaded.relations == memory.relations and loaded.members(11, "vpn-peer") == []
    unknown = relation_memory.Memory()
    unknown.save(str(tmp_path))
    assert relation_memory.load(str(tmp_path)).relations is None


@pytest.mark.parametrize("relations", [
    [], {"2": ["vpn", ["s1/0"]]}, {"x": {"endpoint": "vpn", "units": []}}, {"2": {"endpoint": "vpn"}},
    {"2": {"endpoint": 3, "units": []}}, {"2": {"endpoint": "vpn", "units": "s1/0"}},
    {"2": {"endpoint": "vpn", "units": ["S1/0"]}}, {"2": {"endpoint": "vpn", "units": ["s1/0; rm -rf /"]}},
    {"2": {"endpoint": "vpn", "units": [1]}}, {"2": {"endpoint": "vpn", "units": [], "extra": 1}},
    {"1234567890": {"endpoint": "vpn", "units": []}}])
def test_a_membership_of_another_shape_is_no_memory(tmp_path, relations):
    memory = _memory()
    memory.record({2: ("vpn", ["s1/0"])})
    memory.save(str(tmp_path))
    path = tmp_path / relation_memory.FILE_NAME
    doc = json.loads(path.read_text())
    doc["relations"] = relations
    path.write_text(json.dumps(doc))
    assert relation_memory.load(str(tmp_path)).as_dict() == relation_memory.Memory().as_dict()


def test_a_memory_without_a_membership_record_is_no_memory(tmp_path):
    """A memory of the format before membership was kept (its hook would trust what it never
    recorded): read everything."""
    _memory().save(str(tmp_path))
    path = tmp_path / relation_memory.FILE_NAME
    doc = json.loads(path.read_text())
    del doc["relations"]
    path.write_text(json.dumps(doc))
    assert relation_memory.load(str(tmp_path)).units == {}
