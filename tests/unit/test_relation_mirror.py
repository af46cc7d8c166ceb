"""The application-data mirror and the publications' generations (relation_data, "Mirror"): a
reader takes a mirror only for a current member, complete, valid and newer than what it has; and
never plans with an older publication than one it planned with, whichever source (its unit data as
Juju's agent hands it, possibly an older cached copy; the mirror; the newest kept) a hook reads."""
import pytest

from vpnaas.core import relation_data, validation


def publication(key, endpoint="192.168.8.21:51820", generation=1):
    bag = relation_data.encode(key, endpoint.rsplit(":", 1)[0], int(endpoint.rsplit(":", 1)[1]), "10.9.0.2/24", [])
    bag[relation_data.GENERATION] = str(generation) if generation else ""
    return bag


@pytest.mark.parametrize("value", ["0", "01", "-1", "1.5", "1e3", "1 2", "x", "9" * 21, "١٢", "1\n2"])
def test_a_generation_is_a_plain_number_or_the_reading_is_refused(wg_key, value):
    reading = relation_data.read("s/0", dict(publication(wg_key()), generation=value))
    assert reading.info is None and "s/0 generation" in reading.invalid


def test_a_publication_of_an_earlier_release_has_generation_zero(wg_key):
    reading = relation_data.read("s/0", publication(wg_key(), generation=0))
    assert reading.info is not None and reading.generation == 0
    assert relation_data.read("s/0", publication(wg_key(), generation=7)).generation == 7


def test_generations_grow_even_when_the_last_one_is_lost():
    assert relation_data.next_generation(5, 0.001) == 6
    assert relation_data.next_generation(0, 1000.0) == 1000000
    assert relation_data.next_generation(2000000, 1000.0) == 2000001


def test_a_mirror_is_taken_only_for_a_current_member_complete_valid_and_of_a_generation(wg_key):
    bag = relation_data.mirror("s/0", publication(wg_key(), generation=4))
    assert bag[relation_data.MIRROR_OF] == "s/0"
    reading = relation_data.read_mirror({"s/0"}, bag)
    assert reading is not None and reading.unit == "s/0" and reading.generation == 4
    # A former leader that departed (no member now), or a name that is no member, is never taken.
    assert relation_data.read_mirror({"s/1"}, bag) is None
    assert relation_data.read_mirror(set(), bag) is None
    assert relation_data.read_mirror({"s/0"}, dict(bag, **{relation_data.MIRROR_OF: ""})) is None
    # Incomplete, of no generation, or refused by the grammar: not taken.
    assert relation_data.read_mirror({"s/0"}, dict(bag, **{"public-key": ""})) is None
    assert relation_data.read_mirror({"s/0"}, dict(bag, generation="")) is None
    assert relation_data.read_mirror({"s/0"}, dict(bag, endpoint="999.1.1.1:1")) is None
    assert relation_data.read_mirror({"s/0"}, dict(bag, generation="x" * 100000)) is None
    assert relation_data.read_mirror({"s/0"}, {}) is None


def test_a_request_is_exactly_the_protocol():
    assert relation_data.requests_mirror({relation_data.MIRROR_REQUEST: "1"})
    for value in ("", "2", "1 ", "yes", None):
        assert not relation_data.requests_mirror({relation_data.MIRROR_REQUEST: value})


def test_never_a_generation_back_from_either_source(wg_key):
    """The probe of the review: endpoint .21 (generation 1), then .99 from the mirror (2), then an
    action re-reads the agent's cached copy of generation 1: the plan keeps .99."""
    key = wg_key()
    old = relation_data.read("s/0", publication(key, "192.168.8.21:51820", 1))
    mirrored = relation_data.read_mirror({"s/0"},
                                         relation_data.mirror("s/0", publication(key, "192.168.8.99:51820", 2)))
    step1 = relation_data.newest(old, None, None)
    step2 = relation_data.newest(old, step1, mirrored)
    assert step2.info.endpoint == ("192.168.8.99", 51820)
    step3 = relation_data.newest(old, step2, None)             # the action: cached unit data, no mirror read
    assert step3.info.endpoint == ("192.168.8.99", 51820)
    stale_mirror = relation_data.read_mirror({"s/0"}, relation_data.mirror("s/0", publication(key, generation=1)))
    assert relation_data.newest(old, step3, stale_mirror) is step3, "a stale mirror is older: not taken"
    newer = relation_data.read("s/0", publication(key, "192.168.8.50:51820", 3))
    assert relation_data.newest(newer, step3, stale_mirror) is newer, "its unit data moved on: taken"
    # A keyless copy (what the agent cached before the unit published) never replaces a publication.
    keyless = relation_data.read("s/0", {"vpnaas-schema": "1"})
    assert relation_data.newest(keyless, step3, None) is step3
    # The unit's newer data that the grammar refuses is not hidden behind the older one.
    hostile = relation_data.read("s/0", dict(publication(key, generation=9), endpoint="x" * 5000))
    assert relation_data.newest(hostile, step3, None) is hostile and hostile.invalid


def test_a_kept_reading_keeps_its_generation(wg_key):
    reading = relation_data.read("s/0", publication(wg_key(), generation=12))
    again = relation_data.Reading.from_dict("s/0", reading.as_dict())
    assert again.generation == 12 and again.info.public_key == reading.info.public_key
    incomplete = relation_data.read("s/0", {"vpnaas-schema": "1", "generation": "3"})
    assert relation_data.Reading.from_dict("s/0", incomplete.as_dict()).generation == 3
    with pytest.raises(ValueError):
        relation_data.Reading.from_dict("s/0", dict(reading.as_dict(), generation=-1))


def test_the_mirror_holds_nothing_but_the_publication_and_whose_it_is(wg_key):
    bag = relation_data.mirror("s/0", dict(publication(wg_key()), **{"private-address": "10.0.0.1"}))
    assert set(bag) == set(relation_data.READ) | {relation_data.MIRROR_OF}
    assert not any("private" in k or "password" in k for k in bag)
    with pytest.raises(validation.InvalidValue):
        relation_data.parse_generation("1" * 21)


def test_a_generation_far_ahead_of_the_clock_is_not_trusted(wg_key):
    """The review's probe: a mirror (or a unit's data) of generation 99999999999999999999 would pin
    every reader for good. Refused as a generation: the mirror and a kept copy are not taken; the
    unit's own data still is, as a publication of no generation."""
    key, now = wg_key(), 1700000000.0
    huge = "9" * 20
    own = relation_data.read("s/0", publication(key, "192.168.8.66:51820", huge), now)
    assert own.info is not None and own.generation == 0
    assert relation_data.read_mirror({"s/0"}, relation_data.mirror(
        "s/0", dict(publication(key, "192.168.8.66:51820"), generation=huge)), now) is None
    limit = relation_data.generation_limit(now)
    assert relation_data.read("s/0", publication(key, generation=limit), now).generation == limit
    assert relation_data.read("s/0", publication(key, generation=limit + 1), now).generation == 0
    current = relation_data.read("s/0", publication(key, "192.168.8.50:51820", 6), now)
    kept = relation_data.Reading.from_dict("s/0", dict(current.as_dict(), generation=int(huge),
                                                       endpoint=["192.168.8.66", 51820]))
    assert relation_data.newest(current, kept, now=now) is current, "a kept copy of an untrusted generation"


def test_a_mirror_is_taken_only_where_the_application_has_that_one_unit(wg_key):
    bag = relation_data.mirror("s/0", publication(wg_key(), generation=4))
    assert relation_data.read_mirror({"s/0"}, bag) is not None
    # Two members: the leader s/1 could name s/0 with any data; not taken.
    assert relation_data.read_mirror({"s/0", "s/1"}, bag) is None
