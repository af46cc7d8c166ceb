"""admission.admit (the route policy computed incrementally) against policy.admit (the policy's
definition, computed whole): the same plan after every hook of random hook sequences.

A small universe of keys, prefixes and endpoints makes conflicts common: keys announced twice,
overlapping prefixes (also with manual peers and with what departed or refused units still
hold), endpoints inside another peer's prefixes, names the VNF resolves or not, this VNF's own
key, rotation keys, invalid data. After each hook the "applied" plan's claims become the next
incumbents (or not: a failed session keeps the old ones), as in the charm. Pure modules: runs on
the venv's Python and on Python 3.6 (``make unit36``).
"""
import random

import pytest

from vpnaas import admission, model, policy, relation_data
from vpnaas import plan as planning
from vpnaas.facts import Facts

KEYS = ["{}{}=".format(c * 42, "A") for c in "BCDEFGH"]
EPS = [model.TunnelEndpoint("vpn", "provider"), model.TunnelEndpoint("s6a", "provider")]
CFG = {"ssh-hostname": "198.18.0.2", "tunnel-mtu": 1420, "persistent-keepalive": 25,
       "vpn-listen-port": 51820, "vpn-endpoint-address": "192.168.64.1", "vpn-tunnel-address": "10.251.0.1/24",
       "vpn-service-addresses": "172.17.0.1/32", "vpn-service-network": "172.17.0.0/16",
       "s6a-listen-port": 51821, "s6a-endpoint-address": "192.168.8.2", "s6a-service-addresses": "172.16.6.2/32"}
PREFIXES = ["172.17.1.1/32", "172.17.1.2/32", "172.17.1.0/30", "172.17.0.0/16", "172.16.6.129/32",
            "172.16.6.128/25", "192.168.64.7/32", "192.168.64.0/28", "10.9.9.9/32", "172.17.0.1/32",
            "fd00::1/128", "fd00::/64"]
HOSTS = ["192.168.64.5", "192.168.64.7", "192.168.64.9", "192.168.8.129", "peer.example", "gone.example"]
TUNNELS = {"vpn": ["10.251.0.{}/24".format(i) for i in (2, 3, 4, 5)] + ["10.99.0.2/24"],
           "s6a": ["10.250.1.2/30", "10.250.1.2/30", "10.250.1.6/30"]}
ALLOWANCES = ["", "", "172.17.0.0/16", "172.17.0.0/16,192.168.64.0/24", "172.16.0.0/12,fd00::/48"]


def _facts(rng):
    lines = ["addr 198.18.0.2/24", "addr 192.168.64.1/24", "addr 192.168.8.2/24", "gateway 198.18.0.254",
             "client 198.18.0.1", "ipv6 " + rng.choice(["on", "off"])]
    if rng.random() < 0.7:
        lines.append("resolve peer.example " + rng.choice(["192.168.64.9", "192.168.64.7", "172.17.1.2"]))
    lines.append("resolve gone.example -")
    return Facts.from_lines(lines)


def _bag(rng, ep):
    if rng.random() < 0.05:
        return {"vpnaas-schema": "1", "public-key": "not-a-key", "endpoint": "x:1", "tunnel-address": "10.0.0.1/24"}
    if rng.random() < 0.05:
        return {"vpnaas-schema": "1"}
    data = {"vpnaas-schema": "1", "public-key": rng.choice(KEYS),
            "endpoint": "{}:{}".format(rng.choice(HOSTS), rng.choice([51820, 51821])),
            "tunnel-address": rng.choice(TUNNELS[ep]),
            "service-prefixes": ",".join(sorted(set(rng.sample(PREFIXES, rng.randint(0, 3)))))}
    if rng.random() < 0.2:
        data.update({"rotation-protocol": "1", "next-key": rng.choice(KEYS)})
    return data


class World(object):
    """The hub's inputs, changed one hook at a time."""

    def __init__(self, rng):
        self.rng = rng
        self.relations = {"vpn": [{"s{}/0".format(i): _bag(rng, "vpn")} for i in range(1, 5)],
                          "s6a": [{"hss/0": _bag(rng, "s6a")}]}
        self.manual = {}
        self.facts = _facts(rng)
        self.own = {rng.choice(KEYS)}
        self.config = dict(CFG)
        self.incumbents = []

    def hook(self):
        rng, r = self.rng, self.rng.random()
        if r < 0.55:            # a unit's data changes (its relation-changed)
            ep = rng.choice(["vpn", "vpn", "s6a"])
            if self.relations[ep]:
                rel = rng.choice(self.relations[ep])
                for unit in rel:
                    rel[unit] = _bag(rng, ep)
        elif r < 0.65:          # a unit departs, or joins
            if rng.random() < 0.5 and self.relations["vpn"]:
                self.relations["vpn"].pop(rng.randrange(len(self.relations["vpn"])))
            else:
                self.relations["vpn"].append({"s{}/0".format(rng.randint(5, 40)): _bag(rng, "vpn")})
        elif r < 0.73:          # add-peer / remove-peer
            peers = self.manual.setdefault("vpn", [])
            if peers and rng.random() < 0.4:
                peers.pop(rng.randrange(len(peers)))
            else:
                peers.append({"public-key": rng.choice(KEYS), "endpoint": rng.choice(["", "192.168.64.7:51820"]),
                              "allowed-ips": rng.sample(PREFIXES, rng.randint(1, 2))})
        elif r < 0.80:          # the VNF reports other facts
            self.facts = _facts(rng)
        elif r < 0.85:          # this VNF's keys change (a rotation)
            self.own = {rng.choice(KEYS)}
        elif r < 0.92:          # the operator changes what peers may announce
            self.config["vpn-peer-prefixes"] = rng.choice(ALLOWANCES)
        # else: a hook that changes nothing (update-status)

    def plan(self, memo=None):
        return planning.build_plan(self.config, EPS, self.relations, self.manual, facts=self.facts,
                                   incumbents=self.incumbents, own_keys=self.own, memo=memo)


def outcome(plan):
    """Everything the policy decides, as comparable values."""
    return {"devices": [{"name": d.name, "problems": d.problems, "waiting": d.waiting,
                         "refused": d.refused_prefixes,
                         "peers": [(p.source, p.public_key, [str(a) for a in p.allowed_ips],
                                    [str(h) for h in p.endpoint_hosts]) for p in d.peers]}
                        for d in plan.devices],
            "retained": plan.retained, "errors": plan.errors, "fingerprint": plan.fingerprint(),
            "claims": policy.claims(plan)}


@pytest.mark.parametrize("seed", range(60))
def test_the_incremental_policy_decides_as_the_whole_one(seed):
    rng = random.Random(seed)
    world = World(rng)
    memo = {}
    conflicts = 0
    for _ in range(40):
        world.hook()
        whole = world.plan()
        incremental = world.plan(memo)
        assert outcome(incremental) == outcome(whole)
        conflicts += sum("also" in p or "inside" in p for d in whole.devices for p in d.problems)
        if rng.random() < 0.8:      # the session succeeded: its claims are the next incumbents
            world.incumbents = policy.claims(whole)
    assert conflicts, "the sequence made no conflict: it tests nothing across peers"


def test_a_memo_that_went_through_json_gives_the_same_answer():
    import json
    rng = random.Random(7)
    world = World(rng)
    memo = {}
    for _ in range(30):
        world.hook()
        memo = json.loads(json.dumps(memo))
        assert outcome(world.plan(memo)) == outcome(world.plan())
        world.incumbents = policy.claims(world.plan())


@pytest.mark.parametrize("broken", [{"format": 1, "keys": "x"}, {"format": 1, "verdicts": {"a": 1}, "context": "c"},
                                    {"format": 1, "keys": {"claims": {"x": [["key", "k", 0, 0, 0, 3]]}, "out": {}}},
                                    {"format": 99}])
def test_a_memo_of_another_shape_is_no_memo(broken):
    world = World(random.Random(3))
    assert outcome(world.plan(dict(broken))) == outcome(world.plan())


def test_one_changed_peer_of_many_judges_and_settles_one_peer():
    """The work of a hook is proportional to the change: with 30 honest spokes, a spoke's new
    data judges one peer and settles one owner."""
    from vpnaas import hookclock
    rels = [{"s{}/0".format(i): relation_data.encode("{}{}=".format(chr(65 + i % 26) * 41, "AB"[i // 26] + "A"),
                                                      "192.168.64.{}".format(i + 1), 51820,
                                                      "10.251.0.{}/24".format(i + 1), [])} for i in range(1, 31)]
    for i, rel in enumerate(rels, 1):
        rel["s{}/0".format(i)]["service-prefixes"] = "172.17.1.{}/32".format(i)
    memo = {}
    facts = _facts(random.Random(1))
    planning.build_plan(CFG, EPS[:1], {"vpn": rels}, {}, facts=facts, memo=memo)
    rels[4]["s5/0"]["service-prefixes"] = "172.17.1.5/32,172.17.2.5/32"
    hookclock.CLOCK.counts.clear()
    plan = planning.build_plan(CFG, EPS[:1], {"vpn": rels}, {}, facts=facts, memo=memo)
    assert len(plan.devices[0].peers) == 30
    assert hookclock.CLOCK.counts.get("peers_judged") == 1
    assert hookclock.CLOCK.counts.get("owners_settled") == 1
    assert admission.MEMO_FORMAT == memo["format"]
