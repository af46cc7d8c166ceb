"""A hostile related unit, operator typo or action parameter: the corpus every value meets.

Runs on the newest Python of the project's venv and on Python 3.6 (``make unit36``): the grammar
must accept and refuse exactly the same values on both, whatever their ``ipaddress`` accepts.
Only pure modules are imported here (no ops, no paramiko).
"""
import ipaddress
import re

import pytest

from vpnaas.core import instance, model, policy, relation_data, validation, wgconfig
from vpnaas.core import plan as planning
from vpnaas.core.facts import Facts
from vpnaas.oai import validation as oai_validation
from vpnaas.oai.cn5g import common as cn5g_common
from vpnaas.vnf import remote, vnfscript

GOOD_KEY = "azyyD5rPNkvOsuPWj4SCDlqUDUSnTgq8EaHEHOOuukM="
INJECT = "\n[Interface]\nPreUp = touch /tmp/pwned\n#"

HOSTILE = [
    # IPv6 scope ids (Python >= 3.9 accepts any text after '%')
    "fe80::1%eth0", "fe80::1%x" + INJECT, "fe80::1%25", "[fe80::1%x" + INJECT + "]:51820", "fe80::1%/64",
    "fe80::%1/64",
    # line breaks and control characters anywhere
    "10.0.0.1\n", "\n10.0.0.1", "10.0.0.1/32" + INJECT, "10.0.0.1\r", "10.0.0.1\t", "10.0.0.1\x00",
    "10.0.0.1\x0b", "10.0.0.1\x1c", "10.0.0.1\x1b[2J", "10.0.0.1\x7f", GOOD_KEY + "\n",
    GOOD_KEY[:20] + "\n" + GOOD_KEY[20:],
    # non-ASCII look-alikes
    "\u0661\u0660.0.0.1", "\uff11\uff10.0.0.1", "10.0.0.1\u200b", "10.0.0.1\u00a0", "10\u30020.0.1",
    "host\u2028name:1", "h\u00f6st:51820",
    # shell syntax
    "$(touch /tmp/pwned)", "`id`", "10.0.0.1;id", "10.0.0.1 id", "10.0.0.1|id", "10.0.0.1&&id", "'", '"', "\\",
    "10.0.0.1/32,$(id)", "host:51820;id", "${IFS}", "*", "~root",
    # malformed addresses and prefixes
    "010.0.0.1", "10.0.0.01", "10.0.0.256", "0x0a.0.0.1", "10.1", "10", "1::2::3", ":::", "::ffff:10.0.0.01",
    "1.2.3.4::", "10.0.0.1/033", "10.0.0.1/+32", "10.0.0.1/ 32", "10.0.0.0/33", "fd00::/129", "10.0.0.1/-1",
    "10.0.0.1/", "/32", "10.0.0.1//32",
    # malformed endpoints
    "host:0", "host:65536", "host:-1", "host: 1", "host:1e3", "host:\uff15\uff11\uff18\uff12\uff10", "[10.0.0.1]:1",
    "a..b:1", "-host:1", "host-:1", "_host:1", "x" * 300 + ":1", "host", ":51820", "[::1]", "::1]:1",
    # keys
    GOOD_KEY[:-2] + "F=", GOOD_KEY[:-1], "A" * 44, "!" * 43 + "=", GOOD_KEY + "A",
    # size
    "1" * 5000, ",".join(["10.0.0.1/32"] * 200),
    # YAML, for whatever parses text as YAML (osm-instance): an alias bomb, deep nesting, a huge
    # number, a tag (issue 36)
    "{a: &a [x,x,x,x,x,x,x,x,x], b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a], count_index: *b}",
    "{count_index: " + "[" * 4000 + "]" * 4000 + "}", "{count_index: " + "9" * 5000 + "}",
    "{count_index: !!python/object/apply:os.system ['id']}", "{count_index: 1}\n{count_index: 2}",
]

VALIDATORS = [
    ("public_key", validation.public_key), ("ip_address", validation.ip_address),
    ("interface_address", validation.interface_address), ("prefix", validation.prefix),
    ("prefix_list", validation.prefix_list), ("service_address_list", validation.service_address_list),
    ("host", validation.host), ("endpoint", validation.endpoint), ("endpoint_name", validation.endpoint_name),
    ("ssh_hostname", validation.ssh_hostname), ("port", validation.port),
    ("login_name", validation.login_name),
    ("unit_name", validation.unit_name), ("implementation", validation.implementation),
    ("protocol_version", validation.protocol_version), ("public_key_list", validation.public_key_list),
    ("integer", lambda v: validation.integer(v, "i", 0, 65535)),
    ("osm-instance", lambda v: instance.index({"osm-instance": v})),
    # the OAI components' options
    ("oai realm", oai_validation.realm), ("oai digits", lambda v: oai_validation.digits(v, "mcc", 3, 3)),
    ("oai repository", oai_validation.repository), ("oai git_ref", oai_validation.git_ref),
    ("oai https_url", lambda v: oai_validation.https_url(v, "u")),
    ("oai apt_series", lambda v: oai_validation.apt_series(v, "s")),
    ("oai ipv4", lambda v: oai_validation.ipv4(v, "a")),
    ("oai ipv4_pool", lambda v: oai_validation.ipv4_pool(v, "p")),
    ("oai interface_name", lambda v: oai_validation.interface_name(v, "i")),
    ("oai secret_password", lambda v: oai_validation.secret_password(v, "db-password")),
    ("oai hex_digits", lambda v: oai_validation.hex_digits(v, "sd", 6)),
    ("oai db_name", lambda v: oai_validation.db_name(v, "db-user")),
    ("oai apt_series", lambda v: oai_validation.apt_series(v, "cassandra-series")), ("oai dnn", cn5g_common.dnn),
    ("oai ambr", lambda v: cn5g_common.ambr(v, "session-ambr-ul")),
]
SAFE = re.compile(r"[\x21-\x7e]*")


def test_the_corpus_is_big_enough():
    assert len(HOSTILE) >= 60


def every(values, check):
    """``check(value)`` for each value, the failures of all of them reported together. A test per
    value of the corpus (thousands) would cost the test runner many times what the checks cost."""
    failures = []
    for value in values:
        try:
            check(value)
        except (AssertionError, pytest.fail.Exception) as e:
            failures.append("{!r:.100}: {}".format(value, " ".join(str(e).split())[:300] or type(e).__name__))
    assert not failures, "{} of {} values:\n".format(len(failures), len(values)) + "\n".join(failures)


def test_every_reports_each_failing_value():
    with pytest.raises(AssertionError) as e:
        every(["a", "bb", "ccc"], lambda v: len(v) == 1 or pytest.fail("long {}".format(v)))
    assert "2 of 3 values" in str(e.value) and "'bb': long bb" in str(e.value) and "'ccc'" in str(e.value)


def _words(result):
    if isinstance(result, (list, tuple)):
        return [w for item in result for w in _words(item)]
    return [str(result)]


@pytest.mark.parametrize("name, check", VALIDATORS)
def test_every_validator_refuses_or_returns_only_safe_words(name, check):
    def one(value):
        try:
            result = check(value)
        except validation.InvalidValue as e:
            message = str(e)
            assert "\n" not in message and "\r" not in message and "\x00" not in message
            assert len(message) < 400
            return
        # Anything accepted is canonical text without control characters, spaces or scope ids.
        for word in _words(result):
            assert SAFE.fullmatch(word) and "%" not in word, (name, value, result)
    every(HOSTILE, one)


@pytest.mark.parametrize("name, check", VALIDATORS)
def test_non_text_values_are_refused(name, check):
    def one(value):
        if name in ("port", "oai digits", "integer") and type(value) is int:
            return  # Juju hands int options as numbers
        if (name.startswith("oai") or name in ("implementation", "osm-instance")) and value is None:
            return  # an unset option is empty text (refused or allowed by the option itself)
        with pytest.raises(validation.InvalidValue):
            check(value)
    every([None, 1, 2.5, [], {}, b"10.0.0.1", True], one)


@pytest.mark.parametrize("value", [v for v in HOSTILE if "%" in v or "\n" in v or "\x00" in v])
def test_scope_ids_and_line_breaks_never_pass_any_validator(value):
    for _name, check in VALIDATORS:
        with pytest.raises(validation.InvalidValue):
            check(value)


def test_grammar_accepts_the_ordinary_forms():
    assert str(validation.ip_address("::ffff:10.0.0.1")) == "::ffff:a00:1"
    assert str(validation.prefix("FD00::/64")) == "fd00::/64"
    assert validation.endpoint("[fd00::1]:51820") == ("fd00::1", 51820)
    assert validation.endpoint("hss.example:51821") == ("hss.example", 51821)
    assert validation.host("0.0.0.0") == "0.0.0.0"
    assert validation.port("51820") == 51820


@pytest.mark.parametrize("field", relation_data.APP_FIELDS)
def test_a_hostile_mirror_is_no_mirror_or_a_canonical_one(field):
    """The application-data mirror goes through the unit data's grammar: a value it refuses makes
    no mirror at all; one it takes is canonical, as from unit data."""
    bag = relation_data.encode(GOOD_KEY, "192.168.8.129", 51821, "10.250.1.2/30", [])
    bag = relation_data.mirror("hss/0", dict(bag, generation="5"))

    def one(value):
        reading = relation_data.read_mirror({"hss/0"}, dict(bag, **{field: value}))
        if reading is None:
            return
        assert reading.unit == "hss/0" and reading.generation > 0
        info = reading.info
        words = [info.public_key, validation.format_endpoint(*info.endpoint)] + [str(p) for p in info.allowed_ips()]
        for word in words:
            assert SAFE.fullmatch(word) and "%" not in word
    every(HOSTILE, one)


@pytest.mark.parametrize("field", relation_data.PUBLISHED)
def test_hostile_relation_data_never_becomes_a_peer(field):
    def one(value):
        bag = relation_data.encode(GOOD_KEY, "192.168.8.129", 51821, "10.250.1.2/30", [])
        bag.update({"rotation-protocol": "1", "next-key": GOOD_KEY, "next-endpoint": "192.168.8.129:51921"})
        bag[field] = value
        try:
            info = relation_data.decode("hss/0", bag)
        except (relation_data.Incomplete, validation.InvalidValue):
            return
        # Accepted only if canonical: then the rendered config has exactly the expected lines.
        rot = info.rotation
        words = [info.public_key, validation.format_endpoint(*info.endpoint)] + [str(p) for p in info.allowed_ips()]
        words += [w for w in [rot.next_key, rot.next_endpoint] if w] + sorted(rot.next_peer_keys | rot.peer_keys)
        for word in words:
            assert SAFE.fullmatch(word) and "%" not in word
    every(HOSTILE, one)


MME = [model.TunnelEndpoint("s6a", "provider"), model.TunnelEndpoint("s11", "provider")]
CFG = {"ssh-hostname": "198.18.0.2", "tunnel-mtu": 1420, "persistent-keepalive": 25,
       "s6a-listen-port": 51821, "s11-listen-port": 51822,
       "s6a-endpoint-address": "192.168.8.2", "s6a-service-addresses": "172.16.6.2/32",
       "s11-endpoint-address": "192.168.10.2", "s11-service-addresses": "172.16.1.102/32"}
FACTS = Facts.from_lines(["addr 198.18.0.2/24", "addr 192.168.8.2/24", "addr 192.168.10.2/24",
                                 "addr 127.0.0.1/8", "gateway 198.18.0.254", "client 198.18.0.1", "ipv6 off"])


def bag(key, tunnel="10.250.1.2/30", prefixes="172.16.6.129/32", endpoint="192.168.8.129:51821"):
    data = relation_data.encode(key, "192.168.8.129", 51821, tunnel, [])
    data.update({"service-prefixes": prefixes, "endpoint": endpoint})
    return data


def a_plan(relations, manual=None, facts=FACTS, incumbents=(), config=None):
    return planning.build_plan(dict(CFG, **(config or {})), MME, relations, manual or {}, facts=facts,
                               incumbents=incumbents)


def routed(plan_, device="s6a"):
    return sorted(str(p) for p in (x for peer in plan_.device(device).peers for x in peer.allowed_ips))


def test_a_well_behaved_peer_is_admitted():
    plan_ = a_plan({"s6a": [{"hss/0": bag(GOOD_KEY)}]})
    assert routed(plan_) == ["10.250.1.2/32", "172.16.6.129/32"] and plan_.device("s6a").problems == []


@pytest.mark.parametrize("prefixes, reason", [
    ("198.18.0.1/32", "management path"),                  # the charm's own address (the VCA)
    ("0.0.0.0/0", "default route"),
    ("0.0.0.0/1,128.0.0.0/1", "overlaps"),
    ("198.18.0.0/24", "management"),                        # the management network
    ("198.18.0.64/26", "connected network 198.18.0.0/24"),
    ("192.168.8.0/24", "endpoint address"),                 # the underlay subnet
    ("192.168.8.0/26", "endpoint address"),
    ("192.168.8.192/26", "connected network 192.168.8.0/24"),
    ("192.168.8.2/32", "endpoint address"),
    ("192.168.8.129/32", "connected network"),              # would route the tunnel into itself
    ("172.16.6.2/32", "service address"),
    ("10.250.2.1/32", "tunnel network of wg-s11"),
    ("127.0.0.1/32", "loopback"),
    ("198.18.0.254/32", "default gateway"),
    ("fd00::1/128", "IPv6 is disabled"),
])
def test_a_peer_cannot_take_a_route_it_must_not_have(prefixes, reason):
    # Even an operator who allows every prefix on the endpoint cannot let these through.
    plan_ = a_plan({"s6a": [{"hss/0": bag(GOOD_KEY, prefixes=prefixes)}], "s11": [{}]},
                   config={"s6a-peer-prefixes": "0.0.0.0/0,::/0"})
    dev = plan_.device("s6a")
    assert routed(plan_) == ["10.250.1.2/32"], "the tunnel itself keeps working"
    assert dev.problems and all("hss/0" in m and "wg-s6a" in m for m in dev.problems)
    assert any(reason in m for m in dev.problems), dev.problems


def test_the_operator_allowance_admits_networks_inside_it_only():
    allowed = {"s6a-peer-prefixes": "172.16.0.0/16"}
    plan_ = a_plan({"s6a": [{"hss/0": bag(GOOD_KEY, prefixes="172.16.7.0/24,10.99.0.0/16")}]}, config=allowed)
    assert routed(plan_) == ["10.250.1.2/32", "172.16.7.0/24"]
    assert "outside s6a-peer-prefixes" in plan_.device("s6a").problems[0]
    # the allowance never overrides what belongs to the VNF
    plan_ = a_plan({"s6a": [{"hss/0": bag(GOOD_KEY, prefixes="192.168.8.0/24")}]},
                   config={"s6a-peer-prefixes": "192.168.0.0/16"})
    assert routed(plan_) == ["10.250.1.2/32"]


def test_a_tunnel_address_outside_the_tunnel_network_refuses_the_peer():
    plan_ = a_plan({"s6a": [{"hss/0": bag(GOOD_KEY, tunnel="198.18.0.1/30")}]})
    assert plan_.device("s6a").peers == [] and "outside wg-s6a's tunnel network" in plan_.device("s6a").problems[0]
    plan_ = a_plan({"s6a": [{"hss/0": bag(GOOD_KEY, tunnel="10.250.1.1/30")}]})   # our own tunnel address
    assert plan_.device("s6a").peers == []


def test_cross_device_hijack_is_refused_and_the_incumbent_keeps_its_prefix():
    spgwc = bag("BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBA=", tunnel="10.250.2.2/30", prefixes="172.16.1.104/32",
                endpoint="192.168.10.4:51822")
    hostile = bag(GOOD_KEY, prefixes="172.16.6.129/32,172.16.1.104/32")
    wide = {"s6a-peer-prefixes": "172.16.0.0/16"}   # the operator allows HSS more than its own network
    before = a_plan({"s11": [{"spgwc/0": spgwc}]}, config=wide)
    plan_ = a_plan({"s6a": [{"hss/0": hostile}], "s11": [{"spgwc/0": spgwc}]}, incumbents=policy.claims(before),
                   config=wide)
    assert routed(plan_, "s11") == ["10.250.2.2/32", "172.16.1.104/32"]
    assert routed(plan_) == ["10.250.1.2/32", "172.16.6.129/32"]
    assert any("172.16.1.104/32 from hss/0" in m and "spgwc/0" in m for m in plan_.device("s6a").problems)


def test_a_related_unit_cannot_evict_a_manual_peer():
    manual = {"s6a": [{"public-key": "CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCA=", "endpoint": "",
                       "allowed-ips": ["172.16.9.0/24"]}]}
    plan_ = a_plan({"s6a": [{"hss/0": bag(GOOD_KEY, prefixes="172.16.9.5/32")}]}, manual=manual)
    peers = {p.source: [str(x) for x in p.allowed_ips] for p in plan_.device("s6a").peers}
    assert peers == {"manual": ["172.16.9.0/24"], "hss/0": ["10.250.1.2/32"]}


def test_a_sibling_cannot_take_a_units_place_with_its_key():
    tunnel_net = {"s6a-tunnel-address": "10.250.1.1/29"}
    first = a_plan({"s6a": [{"hss/1": bag(GOOD_KEY)}]}, config=tunnel_net)
    rels = {"s6a": [{"hss/0": bag(GOOD_KEY, tunnel="10.250.1.3/29", prefixes=""), "hss/1": bag(GOOD_KEY)}]}
    plan_ = a_plan(rels, incumbents=policy.claims(first), config=tunnel_net)
    assert [p.source for p in plan_.device("s6a").peers] == ["hss/1"]
    assert "also announced by hss/1 on wg-s6a" in plan_.device("s6a").problems[0]


def test_without_facts_the_own_addresses_are_still_protected():
    plan_ = a_plan({"s6a": [{"hss/0": bag(GOOD_KEY, prefixes="198.18.0.2/32")}]}, facts=None)
    assert routed(plan_) == ["10.250.1.2/32"]


def test_facts_lines_from_the_vnf_are_parsed_strictly():
    facts = Facts.from_lines(["addr 10.0.0.5/24", "addr fe80::1%eth0/64", "gateway x", "client 10.0.0.1",
                                     "ipv6 on", "bogus"])
    assert [str(a) for a in facts.addresses] == ["10.0.0.5/24"] and facts.client == "10.0.0.1" and facts.ipv6
    assert Facts.from_dict(facts.as_dict()).as_dict() == facts.as_dict()


def test_add_peer_parameters_are_held_to_the_same_grammar():
    def one(value):
        for field in ("device", "public-key", "endpoint", "allowed-ips"):
            params = {"device": "s6a", "public-key": GOOD_KEY, "endpoint": "203.0.113.5:51820",
                      "allowed-ips": "10.9.0.0/24"}
            params[field] = value
            try:
                _ep, entry = planning.validate_manual_peer(params, MME)
            except validation.InvalidValue:
                continue
            for word in [entry["public-key"], entry["endpoint"]] + entry["allowed-ips"]:
                assert SAFE.fullmatch(word) and "%" not in word
    every(HOSTILE, one)


def test_a_rendered_config_has_one_line_per_setting_whatever_the_peer_sent():
    plan_ = a_plan({"s6a": [{"hss/0": bag(GOOD_KEY, prefixes="172.16.6.129/32")}]})
    body = wgconfig.render_body(plan_.device("s6a"))
    keys = [line.split(" = ")[0] for line in body.splitlines() if " = " in line]
    assert keys == ["Address", "ListenPort", "MTU", "Table", "PreUp", "PostUp", "PublicKey", "Endpoint", "AllowedIPs",
                    "PersistentKeepalive"]


def test_step_arguments_refuse_line_breaks_and_control_characters():
    def one(value):
        if validation.is_safe_word(value) or re.fullmatch(r"[\x20-\x7e]*", value):
            vnfscript.Step([]).call("f", value)   # printable text is passed quoted, as one word
            return
        with pytest.raises(vnfscript.ScriptError):
            vnfscript.Step([]).call("f", value)
    every(HOSTILE, one)


def test_status_excerpts_are_short_and_printable():
    text = validation.excerpt("x" * 1000 + INJECT)
    assert len(text) < 50 and "\n" not in text
    with pytest.raises(validation.InvalidValue) as e:
        validation.endpoint("A" * 1000 + ":1")
    assert len(str(e.value)) < 200


def test_ipaddress_of_this_python_is_not_what_refuses_scope_ids():
    """Documents why the grammar exists: on Python >= 3.9 the standard library accepts them."""
    try:
        ipaddress.ip_address("fe80::1%x\ny")
        accepted = True
    except ValueError:
        accepted = False
    with pytest.raises(validation.InvalidValue):
        validation.ip_address("fe80::1%x\ny")
    assert accepted in (True, False)


def test_without_an_allowance_a_peer_may_announce_single_addresses_only():
    plan_ = a_plan({"s6a": [{"hss/0": bag(GOOD_KEY, prefixes="172.16.6.0/24")}]})
    assert routed(plan_) == ["10.250.1.2/32"] and "only single addresses" in plan_.device("s6a").problems[0]


def test_an_lte_key_never_appears_in_a_message():
    def one(value):
        try:
            oai_validation.secret_hex32(value, "lte-k")
        except validation.InvalidValue as e:
            for i in range(0, max(1, len(value) - 7)):
                assert value[i:i + 8] not in str(e)
    every(HOSTILE + ["0123456789abcdef0123456789abcdeX", "0123456789abcdef\n0123456789abcde"], one)


def test_oai_ipv4_is_the_strict_grammar_on_every_python():
    for bad in ("010.0.0.1", "10.0.0.1%x", "10.0.0.1\n"):
        with pytest.raises(validation.InvalidValue):
            oai_validation.ipv4(bad, "mme-address")
    assert oai_validation.ipv4(" 10.0.0.1 ", "mme-address") == "10.0.0.1"


#: Every line of the tunnel step's report (remote.parse_report), each field in turn hostile.
PEER_DUMP = GOOD_KEY + "\t(none)\t192.0.2.2:51820\t10.250.1.2/32\t1699999990\t5\t6\t25"
REPORT_LINES = ["INIT {}", "IMPL userspace {}", "DATAPLANE {} kernel 1.0", "DATAPLANE wg-s6a {} 1.0",
                "DATAPLANE wg-s6a boringtun {}", "NEED {}", "PUBKEY wg-s6a {}", "PUBKEY {} " + GOOD_KEY,
                "FAILED wg-s6a {}", "FAILED metrics {}", "FAILED qos {}", "FAILED {} why", "METRICS {}",
                "QOS mark {} 46", "QOS mark 51820 {}", "QOS queue {} 100000 pfifo", "QOS queue eth0 {} pfifo",
                "REFUSED wg-s6a {} why",
                "REFUSED wg-s6a 10.0.0.0/8 {}", "REFUSED {} 10.0.0.0/8 why", "FACT addr {}", "FACT gateway {}",
                "FACT client {}", "FACT ipv6 {}", "FACT resolve {} 10.0.0.1", "FACT resolve hss.example {}", "FACTS {}",
                "UP {}", "DOWN {}", "COMPONENT service {}", "COMPONENT {} running", "HOST {}", "NOW {}",
                "PEER {} " + PEER_DUMP]
REPORT_LINES += ["PEER wg-s6a " + "\t".join(PEER_DUMP.split("\t")[:i] + ["{}"] + PEER_DUMP.split("\t")[i + 1:])
                 for i in range(8)]


def _observed_texts(obs):
    out = [obs.init, obs.implementation, obs.implementation_detail, obs.hostname, obs.metrics] + obs.needs + obs.qos
    out += [t for item in (obs.failed, obs.component, obs.public_keys) for pair in item.items() for t in pair]
    out += [t for row in obs.refused for t in row] + list(obs.up) + list(obs.dataplane)
    out += [t for impl in obs.dataplane.values() for t in impl]
    for dev, peers in obs.peers.items():
        out += [dev] + [t for p in peers for t in [p["public-key"], p["endpoint"]] + p["allowed-ips"]]
    return out + [str(a) for a in obs.facts.addresses + obs.facts.gateways] + [obs.facts.client]


@pytest.mark.parametrize("line", REPORT_LINES)
def test_a_hostile_report_field_is_refused_or_kept_short_and_printable(line):
    """The VNF's report is remote text too: whatever a field holds, parse_report refuses the
    report (RemoteError, one short line) or keeps only checked or scrubbed text of bounded length."""
    def one(value):
        try:
            obs = remote.parse_report("NOW 1700000000\n" + line.replace("{}", value) + "\nDONE\n")
        except remote.RemoteError as e:
            assert str(e).isprintable() and len(str(e)) < 400
            return
        for text in _observed_texts(obs):
            assert re.fullmatch(r"[\x20-\x7e]{0,400}", text), (line, text[:60])
    every(HOSTILE, one)
