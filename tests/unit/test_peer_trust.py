"""Peer trust, second round: what a related unit or a careless operator can no longer do.

Each case was a break found against the earlier policy (a peer capturing traffic with single
addresses or its endpoint, evicting others, keeping what another held, an operator locking the
VNF out of its own management). Pure modules only: runs on the venv's Python and on Python 3.6
(``make unit36``), like the rest of the hostile corpus. What the VNF side does with the plan is
tests/e2e's job; what the charm does with it is tests/harness's.
"""
import ipaddress
import time

import pytest

from vpnaas.core import config as charm_config
from vpnaas.core import model, policy, relation_data, validation
from vpnaas.core import plan as planning
from vpnaas.core.facts import Facts
from vpnaas.vnf import remote, vnfscript

KEYS = ["{}{}=".format(c * 42, "A") for c in "BCDEFGHIJ"]
MME = [model.TunnelEndpoint("s6a", "provider"), model.TunnelEndpoint("s11", "provider")]
CFG = {"ssh-hostname": "198.18.0.2", "tunnel-mtu": 1420, "persistent-keepalive": 25,
       "s6a-listen-port": 51821, "s11-listen-port": 51822,
       "s6a-endpoint-address": "192.168.8.2", "s6a-service-addresses": "172.16.6.2/32",
       "s11-endpoint-address": "192.168.10.2", "s11-service-addresses": "172.16.1.102/32"}
FACTS = Facts.from_lines(["addr 198.18.0.2/24", "addr 192.168.8.2/24", "addr 192.168.10.2/24",
                          "addr 127.0.0.1/8", "gateway 198.18.0.254", "client 198.18.0.1", "ipv6 on"])


def bag(key, tunnel="10.250.1.2/30", prefixes="172.16.6.129/32", endpoint="192.168.8.129:51821", **more):
    data = relation_data.encode(key, "192.168.8.129", 51821, tunnel, [])
    data.update({"service-prefixes": prefixes, "endpoint": endpoint}, **more)
    return data


def a_plan(relations, config=None, manual=None, facts=FACTS, incumbents=()):
    return planning.build_plan(dict(CFG, **(config or {})), MME, relations, manual or {}, facts=facts,
                               incumbents=incumbents)


def routed(plan_, device="s6a"):
    return {p.source: sorted(str(x) for x in p.allowed_ips) for p in plan_.device(device).peers}


# ------------------------------------------------------------------ 1. a default that captures nothing
@pytest.mark.parametrize("prefix", ["169.254.169.254/32", "8.8.8.8/32", "224.0.0.251/32", "255.255.255.255/32",
                                    "10.77.0.5/32", "172.16.1.104/32", "172.16.7.1/32"])
def test_an_empty_allowance_admits_no_single_address_outside_the_service_network(prefix):
    plan_ = a_plan({"s6a": [{"hss/0": bag(KEYS[0], prefixes=prefix)}]})
    assert routed(plan_) == {"hss/0": ["10.250.1.2/32"]}, "the tunnel itself keeps working"
    assert any(prefix in m and "hss/0" in m for m in plan_.device("s6a").problems), plan_.device("s6a").problems


def test_an_empty_allowance_admits_single_addresses_of_the_reference_points_service_network():
    plan_ = a_plan({"s6a": [{"hss/0": bag(KEYS[0], prefixes="172.16.6.129/32,172.16.6.200/32")}]})
    assert routed(plan_) == {"hss/0": ["10.250.1.2/32", "172.16.6.129/32", "172.16.6.200/32"]}
    assert plan_.device("s6a").problems == []


@pytest.mark.parametrize("prefix, why", [
    ("169.254.169.254/32", "link-local"), ("224.0.0.251/32", "multicast"), ("255.255.255.255/32", "broadcast"),
    ("127.0.0.53/32", "loopback"), ("0.0.0.1/32", "this network"), ("::ffff:10.0.0.7/128", "IPv4-mapped"),
    ("fe80::1/128", "link-local"), ("ff02::1/128", "multicast"), ("::1/128", "loopback"), ("240.0.0.0/4", "reserved"),
])
def test_no_allowance_lets_a_special_purpose_address_into_a_tunnel(prefix, why):
    plan_ = a_plan({"s6a": [{"hss/0": bag(KEYS[0], prefixes=prefix)}]},
                   config={"s6a-peer-prefixes": "0.0.0.0/1,128.0.0.0/1,::/1,8000::/1"})
    assert routed(plan_) == {"hss/0": ["10.250.1.2/32"]}
    assert any(why in m for m in plan_.device("s6a").problems), plan_.device("s6a").problems


def test_an_endpoint_without_a_service_network_admits_the_tunnel_address_only():
    eps = [model.TunnelEndpoint("vpn", "provider")]
    cfg = {"ssh-hostname": "198.18.0.2", "tunnel-mtu": 1420, "persistent-keepalive": 25, "vpn-listen-port": 51820,
           "vpn-tunnel-address": "10.9.0.1/30", "vpn-service-addresses": "172.30.0.1/32"}
    rels = {"vpn": [{"b/0": bag(KEYS[0], tunnel="10.9.0.2/30", prefixes="172.30.0.2/32")}]}
    plan_ = planning.build_plan(cfg, eps, rels, {}, facts=FACTS)
    assert routed(plan_, "vpn") == {"b/0": ["10.9.0.2/32"]}
    assert "set vpn-service-network" in plan_.device("vpn").problems[0]
    plan_ = planning.build_plan(dict(cfg, **{"vpn-service-network": "172.30.0.0/24"}), eps, rels, {}, facts=FACTS)
    assert routed(plan_, "vpn") == {"b/0": ["10.9.0.2/32", "172.30.0.2/32"]}


def test_own_service_addresses_outside_the_service_network_are_a_config_error_naming_the_option():
    plan_ = a_plan({"s6a": [{"hss/0": bag(KEYS[0])}]}, config={"s6a-service-addresses": "10.60.0.2/32"})
    assert plan_.errors and "s6a-service-network" in plan_.errors[0] and "10.60.0.2/32" in plan_.errors[0]
    plan_ = a_plan({"s6a": [{"hss/0": bag(KEYS[0], prefixes="10.60.0.9/32")}]},
                   config={"s6a-service-addresses": "10.60.0.2/32", "s6a-service-network": "10.60.0.0/24"})
    assert not plan_.errors and routed(plan_) == {"hss/0": ["10.250.1.2/32", "10.60.0.9/32"]}


# ------------------------------------------------------------------ 2. admission before exclusion
def test_the_endpoint_of_a_refused_unit_evicts_nobody():
    b = bag(KEYS[0], prefixes="172.16.6.129/32")
    c = bag(KEYS[1], tunnel="10.99.0.2/30", endpoint="172.16.6.129:51820")    # refused whole: tunnel outside
    plan_ = a_plan({"s6a": [{"b/0": b, "c/0": c}]})
    assert routed(plan_) == {"b/0": ["10.250.1.2/32", "172.16.6.129/32"]}


def test_a_newcomers_endpoint_inside_a_held_prefix_refuses_the_newcomer_not_the_holder():
    wide = {"s6a-peer-prefixes": "172.16.0.0/16", "s6a-tunnel-address": "10.250.1.1/29"}
    b0 = bag(KEYS[0], prefixes="172.16.50.0/24")
    first = a_plan({"s6a": [{"b/0": b0}]}, config=wide)
    assert routed(first) == {"b/0": ["10.250.1.2/32", "172.16.50.0/24"]}
    b1 = bag(KEYS[1], tunnel="10.250.1.3/29", prefixes="172.16.50.128/25", endpoint="172.16.50.9:51821")
    plan_ = a_plan({"s6a": [{"b/0": b0, "b/1": b1}]}, config=wide, incumbents=policy.claims(first))
    assert routed(plan_) == {"b/0": ["10.250.1.2/32", "172.16.50.0/24"]}
    assert any("b/1" in m and "endpoint 172.16.50.9" in m for m in plan_.device("s6a").problems)


def test_a_units_endpoint_never_evicts_a_manual_peer():
    manual = {"s6a": [{"public-key": KEYS[2], "endpoint": "", "allowed-ips": ["172.16.6.128/25"]}]}
    c = bag(KEYS[1], prefixes="172.16.6.3/32", endpoint="172.16.6.130:51820")
    plan_ = a_plan({"s6a": [{"c/0": c}]}, manual=manual)
    assert routed(plan_) == {"manual": ["172.16.6.128/25"]}


def test_two_peers_may_share_an_endpoint_host():
    b = bag(KEYS[0], prefixes="172.16.6.129/32", endpoint="192.168.8.129:51821")
    c = bag(KEYS[1], tunnel="10.250.2.2/30", prefixes="172.16.1.104/32", endpoint="192.168.8.129:51822")
    plan_ = a_plan({"s6a": [{"b/0": b}], "s11": [{"c/0": c}]})
    assert routed(plan_) == {"b/0": ["10.250.1.2/32", "172.16.6.129/32"]}
    assert routed(plan_, "s11") == {"c/0": ["10.250.2.2/32", "172.16.1.104/32"]}


# ------------------------------------------------------------------ 3. DNS endpoints
def test_an_endpoint_name_is_protected_as_what_it_resolves_to_on_the_vnf():
    facts = Facts.from_lines(FACTS_LINES + ["resolve hss.example 172.16.6.150"])
    b = bag(KEYS[0], prefixes="172.16.6.129/32", endpoint="hss.example:51821")
    c = bag(KEYS[1], tunnel="10.250.2.2/30", prefixes="172.16.1.104/32")
    held = policy.claims(a_plan({"s6a": [{"b/0": b}]}, facts=facts))
    assert "wg-s6a|b/0|endpoint:172.16.6.150" in held
    hostile = dict(b, **{"public-key": KEYS[2], "service-prefixes": "172.16.6.150/32"})
    plan_ = a_plan({"s6a": [{"b/0": b, "b/1": dict(hostile, **{"tunnel-address": "10.250.1.3/29"})}],
                    "s11": [{"c/0": c}]}, facts=facts, incumbents=held,
                   config={"s6a-tunnel-address": "10.250.1.1/29"})
    assert routed(plan_)["b/0"] == ["10.250.1.2/32", "172.16.6.129/32"]
    assert routed(plan_)["b/1"] == ["10.250.1.3/32"], "b/1 keeps its tunnel, not b/0's endpoint"
    assert any("172.16.6.150/32 from b/1" in m for m in plan_.device("s6a").problems)


def test_a_name_the_vnf_cannot_resolve_refuses_that_peer_and_an_unknown_one_waits():
    b = bag(KEYS[0], endpoint="nowhere.invalid:51821")
    facts = Facts.from_lines(FACTS_LINES + ["resolve nowhere.invalid -"])
    plan_ = a_plan({"s6a": [{"b/0": b}]}, facts=facts)
    assert routed(plan_) == {} and "does not resolve" in plan_.device("s6a").problems[0]
    plan_ = a_plan({"s6a": [{"b/0": b}]})
    assert routed(plan_) == {} and "resolve" in plan_.device("s6a").waiting[0]
    assert plan_.endpoint_names == ["nowhere.invalid"]


FACTS_LINES = ["addr 198.18.0.2/24", "addr 192.168.8.2/24", "addr 192.168.10.2/24", "addr 127.0.0.1/8",
               "gateway 198.18.0.254", "client 198.18.0.1", "ipv6 on"]


# ------------------------------------------------------------------ 4. ownership survives
def test_ownership_survives_an_invalid_publication_until_the_unit_departs():
    b = bag(KEYS[0], prefixes="172.16.6.77/32")
    c = bag(KEYS[1], tunnel="10.250.1.3/29", prefixes="172.16.6.77/32")
    cfg = {"s6a-tunnel-address": "10.250.1.1/29"}
    held = policy.claims(a_plan({"s6a": [{"b/0": b}]}, config=cfg))
    for bad in ({"vpnaas-schema": "2"}, {"public-key": "x"}, {"endpoint": ""}):
        plan_ = a_plan({"s6a": [{"b/0": dict(b, **bad), "c/0": c}]}, config=cfg, incumbents=held)
        assert routed(plan_)["c/0"] == ["10.250.1.3/32"], bad
        assert any("172.16.6.77/32 from c/0" in m and "held" in m for m in plan_.device("s6a").problems)
        held = policy.claims(plan_)     # the next reconcile keeps what b/0 held
    plan_ = a_plan({"s6a": [{"b/0": b, "c/0": c}]}, config=cfg, incumbents=held)
    assert routed(plan_)["b/0"] == ["10.250.1.2/32", "172.16.6.77/32"] and routed(plan_)["c/0"] == ["10.250.1.3/32"]
    # b/0 departed: nothing of it is retained, and c/0 may have the address.
    departed = policy.claims(a_plan({"s6a": [{"c/0": c}]}, config=cfg, incumbents=held))
    assert not [r for r in departed if "|b/0|" in r]
    assert routed(a_plan({"s6a": [{"c/0": c}]}, config=cfg, incumbents=departed))["c/0"][-1] == "172.16.6.77/32"


def test_a_retained_key_keeps_a_sibling_from_taking_the_units_place():
    cfg = {"s6a-tunnel-address": "10.250.1.1/29"}
    b = bag(KEYS[0])
    held = policy.claims(a_plan({"s6a": [{"b/0": b}]}, config=cfg))
    impostor = bag(KEYS[0], tunnel="10.250.1.3/29", prefixes="")
    plan_ = a_plan({"s6a": [{"b/0": dict(b, **{"vpnaas-schema": "9"}), "b/1": impostor}]}, config=cfg, incumbents=held)
    assert routed(plan_) == {}
    assert any("b/1" in m and "public key" in m for m in plan_.device("s6a").problems)


# ------------------------------------------------------------------ 6. bounded work
def test_a_hub_with_400_spokes_plans_in_bounded_time_and_its_step_fits_the_transport():
    eps = [model.TunnelEndpoint("vpn", "provider")]
    cfg = {"ssh-hostname": "198.18.0.2", "tunnel-mtu": 1420, "persistent-keepalive": 25, "vpn-listen-port": 51820,
           "vpn-tunnel-address": "10.100.0.1/16", "vpn-service-addresses": "172.17.0.1/32",
           "vpn-service-network": "172.17.0.0/16", "vpn-peer-prefixes": "fd00:17::/32,172.17.0.0/16"}
    spokes = {}
    for i in range(400):
        key = validation.public_key(__import__("base64").b64encode(i.to_bytes(2, "big") * 16).decode())
        v6 = ",".join("fd00:17:{:x}::{:x}/128".format(i, j) for j in range(1, 24))
        spokes["s{}/0".format(i)] = bag(key, tunnel="10.100.{}.{}/16".format(1 + i // 250, 1 + i % 250),
                                        prefixes="172.17.{}.{}/32,{}".format(1 + i // 250, 1 + i % 250, v6),
                                        endpoint="192.168.{}.{}:51820".format(64 + i // 250, 1 + i % 250))
    # CPU seconds of this process, not the wall clock: the work is bounded, not the machine's load
    # (a xdist worker among busy ones gets a fraction of a core; grammar_cost.py does the same).
    started = time.process_time()
    plan_ = planning.build_plan(cfg, eps, {"vpn": [{u: b} for u, b in spokes.items()]}, {}, facts=FACTS)
    planned = time.process_time() - started
    dev = plan_.device("vpn")
    assert len(dev.peers) == 400 and dev.problems == []
    assert planned < 20, "planning 400 spokes (10,000 prefixes) took {:.1f} s".format(planned)
    step = remote.tunnel_step(plan_, "d" * 64)
    command = step.command("ubuntu", 110)
    program = step.program()
    assert len(command) < 2048, "the command line does not grow with the peers"
    assert len(program) < vnfscript.MAX_PROGRAM


def test_a_step_over_its_bound_raises_the_error_the_charm_reports():
    step = vnfscript.Step(["tunnels.sh"]).data("BIG", "A" * vnfscript.MAX_PROGRAM)
    with pytest.raises(vnfscript.ScriptError, match="at most"):
        step.program()


# ------------------------------------------------------------------ 7. operator mistakes
MGMT_FACTS = Facts.from_lines(["addr 10.0.0.5/24", "addr 192.168.8.2/24", "gateway 10.0.0.254",
                               "client 10.0.0.9", "ipv6 on"])


@pytest.mark.parametrize("option, value, why", [
    ("s6a-service-addresses", "10.0.0.9/32", "SSH client"),
    ("s6a-service-addresses", "10.0.0.254/32", "gateway"),
    ("s6a-service-addresses", "10.0.0.0/24", "SSH client"),
    ("s6a-service-addresses", "10.0.0.77/32", "connected network 10.0.0.0/24"),
    ("s6a-service-addresses", "192.168.8.0/23", "connected network 192.168.8.0/24"),
    ("s6a-tunnel-address", "10.0.0.9/30", "SSH client"),
    ("s6a-tunnel-address", "10.0.0.1/30", "connected network 10.0.0.0/24"),
    ("s6a-tunnel-address", "10.0.0.253/30", "gateway"),
])
def test_an_operator_address_that_would_cut_the_vnf_off_is_a_config_error(option, value, why):
    network = {"s6a-service-network": "0.0.0.0/0"} if option == "s6a-service-addresses" else {}
    plan_ = a_plan({"s6a": [{"b/0": bag(KEYS[0])}]}, config=dict(network, **{option: value}), facts=MGMT_FACTS)
    assert plan_.errors and option in plan_.errors[0] and why in plan_.errors[0], plan_.errors
    assert "nothing was applied" in plan_.errors[0]
    # Unknown facts (before the first contact): the same config waits for them, it is not refused.
    assert not a_plan({"s6a": [{"b/0": bag(KEYS[0])}]}, config=dict(network, **{option: value}), facts=None).errors


def test_the_bundles_own_addresses_are_no_mistake():
    assert not a_plan({"s6a": [{"b/0": bag(KEYS[0])}]}, facts=MGMT_FACTS).errors


def test_config_checks_against_the_vnf_need_known_facts():
    epc = charm_config.parse_endpoint(dict(CFG, **{"s6a-service-addresses": "10.0.0.9/32",
                                                   "s6a-service-network": "10.0.0.0/8"}), "s6a", "provider", "x")
    charm_config.check_against_vnf(epc, "s6a", Facts())
    with pytest.raises(validation.InvalidValue):
        charm_config.check_against_vnf(epc, "s6a", MGMT_FACTS)


# ------------------------------------------------------------------ facts from the VNF
def test_facts_round_trip_with_their_digest_and_resolutions():
    digest = "ab" * 32
    facts = Facts.from_lines(FACTS_LINES + ["resolve hss.example 172.16.6.150", "resolve hss.example fd00::9",
                                            "resolve gone.example -", "resolve bad\nname 1.2.3.4",
                                            "resolve x.example 010.0.0.1"], digest=digest)
    assert facts.digest == digest
    assert {n: [str(a) for a in v] for n, v in facts.resolved.items()} == {
        "hss.example": ["172.16.6.150", "fd00::9"], "gone.example": []}
    assert Facts.from_dict(facts.as_dict()).as_dict() == facts.as_dict()
    assert Facts.from_lines([], digest="not a digest").digest == ""


def test_special_purpose_ranges_are_the_registries_not_forwardable_ones():
    for net, _why in policy.SPECIAL_PURPOSE:
        first = net.network_address
        assert first.is_loopback or first.is_link_local or first.is_multicast or first.is_reserved \
            or first.is_unspecified or net == ipaddress.ip_network("::ffff:0:0/96") \
            or net == ipaddress.ip_network("0.0.0.0/8"), net


# ------------------------------------------------------------------ 5. third round (issue 36)
@pytest.mark.parametrize("field", relation_data.PUBLISHED)
def test_fifty_units_with_a_mebibyte_in_a_field_are_refused_whole_in_bounded_time(field):
    """Hostile values in every field, as large as Juju carries: each unit is refused whole (none of
    its prefixes routed), the well-behaved unit keeps its tunnel, and planning stays cheap."""
    huge = "1" * (1 << 20) + "\n{count_index: " + "[" * 4000
    units = {"hss/{}".format(i): bag(KEYS[1], tunnel="10.250.1.3/29", **{field: huge}) for i in range(1, 51)}
    units["hss/0"] = bag(KEYS[0], tunnel="10.250.1.2/29")
    start = time.process_time()      # CPU seconds: bounded work, whatever the machine's load
    plan_ = a_plan({"s6a": [units]}, config={"s6a-tunnel-address": "10.250.1.1/29"})
    assert time.process_time() - start < 2.0
    assert routed(plan_) == {"hss/0": ["10.250.1.2/32", "172.16.6.129/32"]}
    problems = plan_.device("s6a").problems
    assert len(problems) == 50 and all(len(p) < 300 and "\n" not in p for p in problems), problems[:2]


@pytest.mark.parametrize("value", [
    "{a: &a [x,x,x,x,x,x,x,x,x], b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a], count_index: *b}",
    "{count_index: " + "[" * 4000 + "]" * 4000 + "}", "{count_index: " + "9" * 5000 + "}", "\n" * 100, 7,
])
def test_a_hostile_osm_instance_is_a_config_error_of_the_plan_never_an_exception(value):
    plan_ = a_plan({"s6a": [{"hss/0": bag(KEYS[0])}]}, config={"osm-instance": value})
    assert plan_.devices == [] and len(plan_.errors) == 1
    assert plan_.errors[0].startswith("osm-instance: ") and len(plan_.errors[0]) < 200
