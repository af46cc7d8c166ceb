"""Every option of every charm, as Juju sees it (charmspec: the charm's own, its workload's and
_common's fragments, the options generated from its tunnel endpoints), and every action parameter
meet the hostile corpus: each is refused with a message that names the option (one short
printable line, never a secret), or accepted as values without a control or non-ASCII character.
A new option or parameter that no parser reads fails here until it is read or listed below."""
import functools
import re

import pytest
from charms_helpers import COMMON, CONFIGS, config_for

from bundle import charmspec
from vpnaas.charm import entry
from vpnaas.core import model, registry, validation
from vpnaas.core import plan as planning
from vpnaas.oai import component as oai
from vpnaas.oai import validation as oai_validation
from vpnaas.oai.cn5g import nrue
from vpnaas.oai.lte import ue

INJECT = "10.0.0.1\n[Interface]\nPreUp = touch /tmp/pwned"
TEXT_VALUES = [
    INJECT, "x\n", "\x00", "\r", "\t", "\u0661\u0660.0.0.1", "h\u00f6st", "fe80::1%eth0", "$(touch /tmp/pwned)",
    "a;id", "a b", "'", '"', "\\", "../../etc/passwd", "-1", "99999999999", "0x10", "1e3", "9" * 5000, "a" * (1 << 20),
    "{a: &a [x,x,x,x,x,x,x,x,x], b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a], count_index: *b}",
    "{count_index: " + "[" * 4000 + "]" * 4000 + "}", "{count_index: " + "9" * 5000 + "}",
    "https://x.example/$(id)", "git://a b", "0123456789abcdef0123456789abcdeX",
]
INT_VALUES = [-(1 << 63), (1 << 63) - 1, -1, 0]
#: Options that take any text by design (nothing of them reaches a file, command or message).
FREE_TEXT = {"ssh-password"}
SAFE_TEXT = re.compile(r"[\x20-\x7e]*")
NAMES = charmspec.charm_names()
COMPONENTS = {c.name: entry.description(c) for c in registry.load().of_workload("oai")}
UE = {"enb": (ue.values, {"ue-imsi": "208950000000001", "ue-lte-k": "8baf473f2f8fd09487cccbd7097c6862",
                              "ue-lte-op": "1006020f0a478bf6b699f15c062e42b3"}),
      "gnb": (nrue.values, {"ue-imsi": "208950000000001", "ue-k": "465b5ce8b199b49faa5f0a2ee238a6bc",
                                "ue-op": "e8ed289deba952e4283b54e88e6183ca"})}


@functools.lru_cache(maxsize=None)
def spec(name):
    return charmspec.charm_spec(name)


@functools.lru_cache(maxsize=None)
def endpoints_of(name):
    return [model.TunnelEndpoint(ep, role) for ep, role, _iface in charmspec.tunnel_endpoints(spec(name)["metadata"])]


def base_config(name):
    return dict(_base_config(name))


@functools.lru_cache(maxsize=None)
def _base_config(name):
    if name in CONFIGS:
        config = config_for(name)
    else:
        config = {k: v.get("default") for k, v in spec(name)["config"]["options"].items()}
        config.update(COMMON)
        config.update({"vpn-tunnel-address": "10.9.0.1/30", "vpn-service-addresses": "172.16.0.1/32",
                       "vpn-service-network": "172.16.0.0/16", "vpn-peer-tunnel-address": "10.9.1.2/30",
                       "vpn-peer-listen-port": 51821, "vpn-peer-service-addresses": "172.17.0.1/32",
                       "vpn-peer-service-network": "172.17.0.0/16"})
    config.update(UE.get(name, (None, {}))[1])
    return config


def parse_all(name, config):
    """([refusal messages], [accepted values]) of everything the charm parses its options with: the
    plan (every tunnel endpoint's options, with a relation so that each is read), and for an OAI
    component its configure, install, gate and UE values."""
    endpoints = endpoints_of(name)
    plan = planning.build_plan(config, endpoints, {ep.name: [{}] for ep in endpoints}, {})
    errors, values = list(plan.errors + plan.missing), [plan.config] + [
        (d.address, d.service_addresses, d.publish_host, d.allowance, d.service_network, d.implementation)
        for d in plan.devices]
    calls = []
    if name in COMPONENTS:
        comp = COMPONENTS[name]
        calls += [lambda: comp.config_values(config, None), lambda: oai.install_plan(comp, config),
                  lambda: comp.install_args(config),
                  lambda: oai_validation.integer(config.get("oai-handshake-timeout"), "oai-handshake-timeout",
                                                 10, 3600)]
    if name in UE:
        calls.append(lambda: UE[name][0](config))
    for call in calls:
        try:
            values.append(call())
        except validation.InvalidValue as e:
            errors.append(str(e))
    return errors, values


def texts(value):
    """Every text inside parsed values (named tuples, lists, dicts, addresses)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [t for k, v in value.items() for t in texts(k) + texts(v)]
    if isinstance(value, (list, tuple, set)):
        return [t for v in value for t in texts(v)]
    return [] if value is None or isinstance(value, (int, float)) else [str(value)]


def shares_8_characters(a, b):
    """Whether ``a`` and ``b`` have 8 characters in a row in common: the shorter one's windows
    looked up in the longer (a message against a 1 MiB value: a few hundred searches, not a
    million)."""
    short, long_ = sorted((a, b), key=len)
    return any(short[i:i + 8] in long_ for i in range(len(short) - 7))


def test_shares_8_characters_either_way_round():
    assert shares_8_characters("xx0123456789abcdefyy", "key 456789ab refused") is True
    assert shares_8_characters("key 456789ab refused", "xx0123456789abcdefyy") is True
    assert shares_8_characters("0123456789abcdef", "key 0123456 refused") is False


@pytest.mark.parametrize("name", NAMES)
def test_the_base_configuration_parses_without_a_refusal(name):
    errors, _values = parse_all(name, base_config(name))
    assert errors == []


@pytest.mark.parametrize("name", NAMES)
def test_every_option_refuses_or_keeps_clean_whatever_it_is_given(name):
    options = spec(name)["config"]["options"]
    secrets = {k for k, v in options.items() if "Secret" in v.get("description", "")}
    unread = []
    for option, desc in sorted(options.items()):
        for value in (INT_VALUES if desc.get("type") == "int" else TEXT_VALUES):
            errors, values = parse_all(name, dict(base_config(name), **{option: value}))
            for message in errors:
                assert "\n" not in message and message.isprintable() and len(message) < 500, (option, message)
                if option in secrets and isinstance(value, str) and len(value) >= 8:
                    assert not shares_8_characters(value, message), (option, message)
            if not errors and option not in FREE_TEXT:
                bad = [t for t in texts(values) if not SAFE_TEXT.fullmatch(t)]
                assert bad == [], (option, value[:40] if isinstance(value, str) else value, bad[:3])
            if value == INJECT and option not in FREE_TEXT and not any(option in m for m in errors):
                raise AssertionError((option, errors))
        if desc.get("type") == "string" and not parse_all(name, dict(base_config(name), **{option: INJECT}))[0]:
            unread.append(option)
    assert set(unread) <= FREE_TEXT, "options no grammar reads: {}".format(sorted(set(unread) - FREE_TEXT))


#: The parser of every action parameter (plan.validate_manual_peer for add-peer, what
#: proxy_actions and oai_workload call for the others); 'run' is the operator's command, run as given.
ENDPOINTS = [model.TunnelEndpoint("s6a", "provider")]
PEER = {"device": "s6a", "public-key": "azyyD5rPNkvOsuPWj4SCDlqUDUSnTgq8EaHEHOOuukM=", "endpoint": "203.0.113.5:51820",
        "allowed-ips": "10.9.0.0/24"}
PARAMETERS = {
    ("add-peer", p): (lambda v, p=p: planning.validate_manual_peer(dict(PEER, **{p: v}), ENDPOINTS)) for p in PEER}
PARAMETERS.update({
    ("remove-peer", "device"): lambda v: planning.validate_manual_peer(
        dict(PEER, device=v, **{"allowed-ips": "0.0.0.0/32"}), ENDPOINTS),
    ("remove-peer", "public-key"): lambda v: validation.public_key(v, "public-key"),
    ("remove-peer", "allowed-ips"): lambda v: validation.prefix_list(v, "allowed-ips"),
    ("rotate-keys", "device"): lambda v: validation.endpoint_name(v[3:] if v.startswith("wg-") else v),
    ("ue-iperf", "server"): lambda v: oai_validation.ipv4(v, "server"),
    ("ue-iperf", "seconds"): lambda v: oai_validation.integer(v, "seconds", 1, 300),
    ("run", "command"): None,
})


def test_every_action_parameter_has_its_parser():
    params = {(action, p) for name in NAMES for action, desc in spec(name)["actions"].items()
              for p in (desc or {}).get("params", {})}
    assert params == set(PARAMETERS)


@pytest.mark.parametrize("action, param", sorted(k for k, v in PARAMETERS.items() if v is not None))
def test_every_action_parameter_refuses_or_keeps_clean(action, param):
    parse = PARAMETERS[(action, param)]
    for value in TEXT_VALUES + (INT_VALUES if param == "seconds" else []):
        try:
            result = parse(value)
        except validation.InvalidValue as e:
            assert "\n" not in str(e) and str(e).isprintable() and len(str(e)) < 500
            continue
        bad = [t for t in texts(result) if not SAFE_TEXT.fullmatch(t) or " " in t]
        assert bad == [] and value != INJECT, (action, param, value[:40] if isinstance(value, str) else value)
