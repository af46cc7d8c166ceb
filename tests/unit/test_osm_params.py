"""OSM's <OSM> as LCM writes it, and nothing else (instance.read): LCM's own output is read as
PyYAML reads it, PyYAML's flow style of any OSM-shaped mapping too, and whatever the reader accepts
of random text PyYAML reads the same way; every other text is refused with one short line naming
the option, what is wrong and where, in one pass and at a bounded depth (the cost of every case at
1 MiB is tests/unit/test_grammar_cost.py's)."""
import random

import pytest
import yaml

from bundle.lcm_osm_params import same
from vpnaas.core import instance
from vpnaas.core.validation import InvalidValue

# The texts below are LCM's own rendering (LCM of OSM 19, seltonlucas/osm-capk@35936ae, folder
# LCM/): `python3 scripts/bundle/lcm_osm_params.py <LCM folder> --vectors` runs LCM's
# get_osm_params and NsLcm._map_primitive_params over VNF records of the bundle's shapes (and
# checks every one of them against the reader, up to 119 kB: `make lcm-conformance`).
#: spgwu instance 2 of 3 (count_index 2)
SPGWU_2_OF_3 = (
    '{count_index: 2, ip_address: 198.18.0.20, member_vnf_index: spgwu, ns_id: a3c5f1d2-7b1e-4c3a-9f0e-2d'
    '4b6c8e0f11, vdu: {spgwu-0: {count_index: 0, interfaces: {s1u: {ip_address: 192.168.9.159, mac_addres'
    "s: 'fa:16:3e:00:02:00', name: s1u}, spgwu-mgmt: {ip_address: 198.18.0.20,\n"
    "          mac_address: 'fa:16:3e:00:00:00', name: spgwu-mgmt}, sxab: {ip_address: 192.168.16.102, ma"
    "c_address: 'fa:16:3e:00:01:00', name: sxab}}, ip_address: 198.18.0.20, vdu_id: spgwu}, spgwu-1: {cou"
    'nt_index: 1, interfaces: {s1u: {ip_address: 192.168.9.160,\n'
    "          mac_address: 'fa:16:3e:01:02:01', name: s1u}, spgwu-mgmt: {ip_address: 198.18.0.21, mac_ad"
    "dress: 'fa:16:3e:01:00:01', name: spgwu-mgmt}, sxab: {ip_address: 192.168.16.103, mac_address: 'fa:1"
    "6:3e:01:01:01', name: sxab}}, ip_address: 198.18.0.21, vdu_id: spgwu},\n"
    "    spgwu-2: {count_index: 2, interfaces: {s1u: {ip_address: 192.168.9.161, mac_address: 'fa:16:3e:0"
    "2:02:02', name: s1u}, spgwu-mgmt: {ip_address: 198.18.0.22, mac_address: 'fa:16:3e:02:00:02', name: "
    "spgwu-mgmt}, sxab: {ip_address: 192.168.16.104, mac_address: 'fa:16:3e:02:01:02',\n"
    '          name: sxab}}, ip_address: 198.18.0.22, vdu_id: spgwu}}, vdu_id: spgwu, vim_account_id: 0f1'
    'e2d3c-4b5a-6978-8695-a4b3c2d1e0f9, vnf_id: 7e1c9a34-1f0b-4d7e-8a22-5b6c7d8e9f01, vnfd_id: 5d4c3b2a-1'
    '908-7f6e-5d4c-3b2a19087f6e, vnfd_ref: spgwu_vnfd}\n'
)
#: member index 1, ipv6 mgmt, numeric interface name (count_index 2)
ODD_NAMES_2 = (
    "{count_index: 2, ip_address: 'fd00:0::a', member_vnf_index: '1', ns_id: a3c5f1d2-7b1e-4c3a-9f0e-2d4b"
    "6c8e0f11, vdu: {vdu1-0: {count_index: 0, interfaces: {'0': {ip_address: 'fd00:0::a', mac_address: 'f"
    "a:16:3e:00:00:00', name: '0'}, eth 1: {ip_address: 10.2.0.5,\n"
    "          mac_address: 'fa:16:3e:00:02:00', name: eth 1}, 'it''s #1': {ip_address: 10.3.0.5, mac_add"
    "ress: 'fa:16:3e:00:03:00', name: 'it''s #1'}, 'true': {ip_address: 10.1.0.5, mac_address: 'fa:16:3e:"
    "00:01:00', name: 'true'}}, ip_address: 'fd00:0::a', vdu_id: vdu1},\n"
    "    vdu1-1: {count_index: 1, interfaces: {'0': {ip_address: 'fd00:0::b', mac_address: 'fa:16:3e:01:0"
    "0:01', name: '0'}, eth 1: {ip_address: 10.2.0.6, mac_address: 'fa:16:3e:01:02:01', name: eth 1}, 'it"
    "''s #1': {ip_address: 10.3.0.6, mac_address: 'fa:16:3e:01:03:01',\n"
    "          name: 'it''s #1'}, 'true': {ip_address: 10.1.0.6, mac_address: 'fa:16:3e:01:01:01', name: "
    "'true'}}, ip_address: 'fd00:0::b', vdu_id: vdu1}, vdu1-2: {count_index: 2, interfaces: {'0': {ip_add"
    "ress: 'fd00:0::c', mac_address: 'fa:16:3e:02:00:02', name: '0'},\n"
    "        eth 1: {ip_address: 10.2.0.7, mac_address: 'fa:16:3e:02:02:02', name: eth 1}, 'it''s #1': {i"
    "p_address: 10.3.0.7, mac_address: 'fa:16:3e:02:03:02', name: 'it''s #1'}, 'true': {ip_address: 10.1."
    "0.7, mac_address: 'fa:16:3e:02:01:02', name: 'true'}}, ip_address: 'fd00:0::c',\n"
    '      vdu_id: vdu1}}, vdu_id: vdu1, vim_account_id: 0f1e2d3c-4b5a-6978-8695-a4b3c2d1e0f9, vnf_id: 7e'
    '1c9a34-1f0b-4d7e-8a22-5b6c7d8e9f01, vnfd_id: 5d4c3b2a-1908-7f6e-5d4c-3b2a19087f6e, vnfd_ref: 1_vnfd}\n'
)
#: vnf-level (count_index 0)
VNF_LEVEL = (
    '{ip_address: 198.18.0.20, member_vnf_index: spgwu, ns_id: a3c5f1d2-7b1e-4c3a-9f0e-2d4b6c8e0f11, vdu:'
    " {spgwu-0: {count_index: 0, interfaces: {s1u: {ip_address: 192.168.9.159, mac_address: 'fa:16:3e:00:"
    "02:00', name: s1u}, spgwu-mgmt: {ip_address: 198.18.0.20,\n"
    "          mac_address: 'fa:16:3e:00:00:00', name: spgwu-mgmt}, sxab: {ip_address: 192.168.16.102, ma"
    "c_address: 'fa:16:3e:00:01:00', name: sxab}}, ip_address: 198.18.0.20, vdu_id: spgwu}, spgwu-1: {cou"
    'nt_index: 1, interfaces: {s1u: {ip_address: 192.168.9.160,\n'
    "          mac_address: 'fa:16:3e:01:02:01', name: s1u}, spgwu-mgmt: {ip_address: 198.18.0.21, mac_ad"
    "dress: 'fa:16:3e:01:00:01', name: spgwu-mgmt}, sxab: {ip_address: 192.168.16.103, mac_address: 'fa:1"
    "6:3e:01:01:01', name: sxab}}, ip_address: 198.18.0.21, vdu_id: spgwu}},\n"
    '  vim_account_id: 0f1e2d3c-4b5a-6978-8695-a4b3c2d1e0f9, vnf_id: 7e1c9a34-1f0b-4d7e-8a22-5b6c7d8e9f01'
    ', vnfd_id: 5d4c3b2a-1908-7f6e-5d4c-3b2a19087f6e, vnfd_ref: spgwu_vnfd}\n'
)


def idx(text):
    return instance.index({"osm-instance": text})


@pytest.mark.parametrize("text, k", [(SPGWU_2_OF_3, 2), (ODD_NAMES_2, 2), (VNF_LEVEL, 0)])
def test_lcms_own_output_is_read_as_pyyaml_reads_it(text, k):
    assert "\n" in text.rstrip("\n"), "LCM wraps at 256 columns"
    assert idx(text) == k
    assert same(instance.read(text), yaml.safe_load(text))


def test_the_largest_mapping_lcm_writes_for_the_bundle_fits():
    """64 instances of four VDUs with four interfaces each (LCM's 119 kB, see above) are under the limit."""
    def vdu(v, k):
        return {"count_index": k, "vdu_id": v, "ip_address": "10.0.{}.{}".format(k, 20), "interfaces": {
            name: {"ip_address": "10.{}.{}.{}".format(n, k, 20), "mac_address": "fa:16:3e:{:02x}:{:02x}:00".format(
                k, n), "name": name} for n, name in enumerate(("spgwu-mgmt", "sxab", "s1u", "extra-net-long"))}}
    doc = {"count_index": 63, "vdu_id": "c", "ns_id": "a3c5f1d2-7b1e-4c3a-9f0e-2d4b6c8e0f11",
           "vdu": {"{}-{}".format(v, k): vdu(v, k) for v in "abcd" for k in range(64)}}
    text = yaml.safe_dump(doc, default_flow_style=True, width=256)
    assert 100000 < len(text) <= instance.MAX_TEXT
    assert idx(text) == 63 and same(instance.read(text), doc)


KEYS = ["count_index", "vdu", "0", "1", "true", "null", "on", "~", "eth 1", "a#b", "it's", "-x", "x-", "1e3",
        "0x1f", "1_000", "12:30", "\u00e9t\u00e9", "a: b", "a, b", "[x]", "{x}", "*x", "&x", "!x", "%x", "@x", "`x",
        "'q'", '"q"', " lead", "trail ", "tab\tx", "\x07bell", "=", "<<x", "?x", "x" * 120]
#: Values only: PyYAML writes a key with a line break (or over 128 characters) as an explicit
#: "? key", which names in OSM never need and the reader refuses.
VALUES = KEYS + ["multi\nline", "two\n\nbreaks", "x" * 300]


def random_doc(rng, depth=0):
    doc = {}
    for _ in range(rng.randint(0, 6)):
        key = rng.choice(KEYS + ["k{}".format(rng.randint(0, 999))])
        roll = rng.random()
        if roll < 0.25 and depth < 4:
            doc[key] = random_doc(rng, depth + 1)
        elif roll < 0.3 and depth < 4:
            doc[key] = [rng.choice(VALUES) for _ in range(rng.randint(0, 3))]
        elif roll < 0.5:
            doc[key] = rng.randint(-5, 10 ** rng.randint(0, 12))
        elif roll < 0.55:
            doc[key] = rng.choice([None, True, False])
        else:
            doc[key] = " ".join(rng.choice(VALUES) for _ in range(rng.randint(1, 30)))
    return doc


def test_pyyamls_flow_style_of_any_osm_shaped_mapping_is_read_as_pyyaml_reads_it():
    """What LCM calls (yaml.safe_dump(..., default_flow_style=True, width=256)) over mappings of
    awkward keys and values: quoted, escaped, folded at the wrap, numbers, booleans, null."""
    rng = random.Random(36)
    for _ in range(400):
        doc = random_doc(rng)
        k = rng.randint(0, instance.MAX_INDEX)
        doc["count_index"] = k
        text = yaml.safe_dump(doc, default_flow_style=True, width=256)
        assert idx(text) == k, text
        assert same(instance.read(text), yaml.safe_load(text)), text


TOKENS = ["{", "}", "[", "]", ", ", ",", ": ", ":", " ", "\n", "\n  ", "'", "''", '"', '\\"', "\\n", "\\x41",
          "\\\n", "count_index", "0", "7", "63", "64", "-1", "a", "b c", "#", " #c", "&a", "*a", "!!int", "---",
          "...", "?", "-", "<<", "|", ">", "%", "@", "`", "\t", "\r", "\x00", "\u00e9"]
SCALARS = ["count_index", "0", "7", "63", "-1", "1.5", "true", "null", "~", "a", "b c", "x#y", "-x", "a'b", 'a"b',
           "'q'", "'it''s'", "'two\n\n  lines'", '"e\\tsc"', '"\\x41\\u00e9"', '"fold\\\n  ed"', "''", '""',
           "a\n  b", "=", "<<"]


def random_text(rng, depth=0):
    """A flow mapping of random scalars, spacing and nesting, then up to two random edits."""
    def node(d):
        roll = rng.random()
        if roll < 0.2 and d < 9:
            return random_mapping(d + 1)
        if roll < 0.3 and d < 9:
            return "[" + gap().join(node(d + 1) + "," for _ in range(rng.randint(0, 3))).rstrip(",") + "]"
        return rng.choice(SCALARS)

    def gap():
        return rng.choice([" ", " ", "\n  ", "\n", "  "])

    def random_mapping(d):
        items = ["{}: {}".format(rng.choice(SCALARS), node(d)) for _ in range(rng.randint(0, 4))]
        return "{" + ("," + gap()).join(items) + "}"

    text = random_mapping(depth)
    for _ in range(rng.randint(0, 2)):
        at = rng.randint(0, len(text))
        if rng.random() < 0.5:
            text = text[:at] + rng.choice(TOKENS) + text[at:]
        else:
            text = text[:at] + text[at + rng.randint(1, 3):]
    return text


def test_what_the_reader_accepts_of_random_text_pyyaml_reads_the_same_way():
    rng = random.Random(3636)
    accepted = refused = 0
    for _ in range(5000):
        text = random_text(rng)
        try:
            k = idx(text)
        except InvalidValue as e:
            assert str(e).startswith("osm-instance: ") and str(e).isprintable() and len(str(e)) < 200
            refused += 1
            continue
        if not text.strip(" "):
            continue        # empty: no <OSM> at all
        accepted += 1
        doc = yaml.safe_load(text)
        assert isinstance(doc, dict) and same(instance.read(text), doc), text
        assert k == doc.get("count_index", 0), text
    assert accepted > 1000 and refused > 1000, "the random texts reach both sides"


@pytest.mark.parametrize("text, why", [
    ("{a: &x 1, count_index: *x}", "an anchor"),
    ("{count_index: *x}", "an alias"),
    ("{count_index: !!int 1}", "a tag"),
    ("!!python/object/apply:os.system ['id']", "not a mapping"),
    ("{count_index: 1} # c", "text after the mapping"),
    ("{count_index: 1, #c\n}", "a comment"),
    ("count_index: 1", "not a mapping"),
    ("{count_index: 1, count_index: 2}", "a repeated key"),
    ("{count_index: 1, 'count_index': 2}", "a repeated key"),
    ("{<<: {count_index: 5}}", "a merge key"),
    ("{a: =}", "a value key"),
    ("{a: [1, <<]}", "a merge key"),
    ("{count_index: 1,}", "an empty item"),
    ("{count_index: }", "a value that is missing"),
    ("{count_index}", "a key without ': '"),
    ("{count_index:1}", "a key without ': '"),
    ("{count_index : 1}", "a key without ': '"),
    ("{count\n_index: 1}", "a key longer than one line"),
    ("{'" + "k" * 1100 + "': 1}", "a key longer than one line"),
    ("{[a]: 1}", "a key that is not a scalar"),
    ("{? a: 1}", "starts with an indicator"),
    ("{a: 'open}", "an unclosed quote"),
    ('{a: "\\q"}', "a bad escape"),
    ('{a: "\\U00110000"}', "a bad escape"),
    ("{a: [1, 2}", "a missing ',' or ']'"),
    ("{a: 1", "an unclosed collection"),
    ("{a: b:c}", "a missing ',' or '}'"),
    ("{a: 1}\n---\n{b: 2}", "a YAML document marker"),
    ("--- {count_index: 1}", "a YAML document marker"),
    ("{a: " + "[" * 8 + "]" * 8 + "}", "nesting deeper than 8"),
])
def test_anything_but_osms_shape_is_refused_saying_what_and_where(text, why):
    with pytest.raises(InvalidValue) as e:
        idx(text)
    message = str(e.value)
    assert message.startswith("osm-instance: ") and why in message, message
    assert message.isprintable() and len(message) < 200


@pytest.mark.parametrize("text", ["{count_index: 1}\t", "{count_index:\t1}", "{count_index: 1}\r\n", "\x00",
                                  "{a: \u00e9}", "\ufeff{count_index: 1}", "\t"])
def test_a_control_or_non_ascii_character_is_refused_before_reading(text):
    with pytest.raises(InvalidValue, match="control or non-ASCII"):
        idx(text)


def test_the_nesting_osm_writes_is_read_and_a_level_more_refused():
    assert instance.read("{a: " + "{a: " * 6 + "1" + "}" * 7)["a"]["a"]["a"]["a"]["a"]["a"]["a"].text == "1"
    with pytest.raises(InvalidValue, match="nesting deeper than 8"):
        instance.read("{a: " + "{a: " * 8 + "1" + "}" * 9)


def test_quoted_scalars_fold_and_unescape_as_yaml_does():
    text = "{a: 'x  \n\n  y', b: \"p\\tq\\\n   r\\x41\\u00e9\\\\\", c: 'it''s', d: plain  two\n  words}"
    doc = instance.read(text)
    assert {k: v.text for k, v in doc.items()} == yaml.safe_load(text)
    assert [v.plain for v in doc.values()] == [False, False, False, True]


def test_only_a_plain_decimal_count_index_is_one():
    assert idx("{count_index: 0}") == 0 and idx("{count_index: 63}") == 63 and idx("{}") == 0
    assert idx("   ") == 0 and idx("") == 0
    for text, why in [("{count_index: '1'}", "is not an integer"), ('{count_index: "1"}', "is not an integer"),
                      ("{count_index: 01}", "is outside 0-63"), ("{count_index: +1}", "is not an integer"),
                      ("{count_index: 0x1}", "is not an integer"), ("{count_index: 1_0}", "is not an integer"),
                      ("{count_index: 64}", "is outside 0-63"), ("{count_index: [1]}", "is a sequence"),
                      ("{count_index: {a: 1}}", "is a mapping"), ("{count_index: 1.0}", "is not an integer")]:
        with pytest.raises(InvalidValue, match=why):
            idx(text)
