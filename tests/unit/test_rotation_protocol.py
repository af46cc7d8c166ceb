"""Make-before-break key rotation at the level of the plan (rotation.py), without ops or a VNF.

Two or three units run the charm's planning against a small model of their VNFs (keys, devices
with their peers, routes) and of Juju (a unit's relation writes reach the others only when its
hook commits; a changed databag runs the remote units' relation-changed, in an order drawn from
a seed). After every hook, every tunnel is checked in both directions: the sender routes the
receiver's service address into one of its devices, whose peer entry for it names a key that one
of the receiver's devices has, and that device holds the sender's key with the sender's service
address and can be reached (an endpoint port on one side or the other). A rotation that loses
nothing keeps that true at every step; the VNF-side order inside one step (routes staged before
any device, a temporary device before its main one) is tunnels.sh's and the end-to-end tests'.
"""
import base64
import itertools
import random

import pytest

from vpnaas import model, relation_data, remote, rotation
from vpnaas import plan as planning

_KEYS = itertools.count(1)


def new_key():
    n = next(_KEYS)
    return base64.b64encode(n.to_bytes(4, "big") + bytes(28)).decode()


class Unit(object):
    """One unit of a charm and its VNF; ``legacy``: the previous release (no rotation fields)."""

    def __init__(self, name, role, index, legacy=False):
        self.name, self.legacy = name, legacy
        self.host = "192.168.8.{}".format(10 + index)
        self.service = "172.16.6.{}".format(10 + index)
        self.endpoints = [model.TunnelEndpoint("vpn", role)]
        self.config = {"ssh-hostname": "198.18.0.{}".format(10 + index), "tunnel-mtu": 1420,
                       "persistent-keepalive": 25, "vpn-listen-port": 51820,
                       "vpn-tunnel-address": "10.9.{}.{}/16".format(index, 1 + index),
                       "vpn-endpoint-address": self.host, "vpn-service-addresses": self.service + "/32",
                       "vpn-service-network": "172.16.0.0/16", "vpn-peer-prefixes": "172.16.0.0/16"}
        self.keys, self.devices, self.routes = {}, {}, {}    # the VNF
        self.stored_keys, self.rotating = {}, set()           # the charm's stored state
        self.bags = {}                                        # committed databag per remote unit

    def plan(self, remotes):
        bags = {}
        for other in remotes:
            bag = dict(other.bags.get(self.name, {}))
            if self.legacy:
                bag = {k: v for k, v in bag.items() if k not in relation_data.ROTATION_KEYS}
            bags[other.name] = bag
        own = rotation.Own(() if self.legacy else self.rotating, self.stored_keys, self.name)
        plan = planning.build_plan(self.config, self.endpoints, {"vpn": [{u: b} for u, b in bags.items()]}, {},
                                   own_keys=set(self.stored_keys.values()), own=own)
        if self.legacy:
            for dev in plan.devices:
                plan.rotation[dev.name] = model.Rotation()
            plan.temp_devices = []
        return plan

    def apply(self, plan, rotate=(), fresh_next=()):
        """The tunnel step: keys as key_mode says, devices, routes; stale devices removed."""
        routed = {}
        for dev in plan.temp_devices + plan.devices:
            mode, source = remote.key_mode(plan, dev.name, rotate, fresh_next)
            key = self.keys.get(dev.name)
            if mode == "fresh" or key is None:
                key = new_key()
            if mode == "copy" and self.keys.get(source):
                key = self.keys[source]
            self.keys[dev.name] = key
            self.devices[dev.name] = {"port": dev.listen_port,
                                      "peers": [(p.public_key, p.endpoint, {str(n) for n in p.allowed_ips})
                                                for p in dev.peers]}
            for prefix, _src in dev.routes():
                assert prefix not in routed, "{} routed into two devices".format(prefix)
                routed[prefix] = dev.name
        wanted = {d.name for d in plan.temp_devices + plan.devices}
        for name in list(self.devices):
            if name not in wanted:
                del self.devices[name], self.keys[name]
        self.routes = routed

    def publication(self, plan, remote_unit):
        dev = plan.devices[0] if plan.devices else None
        if dev is None or dev.name not in self.keys:
            return {}
        bag = relation_data.publication(dev, self.keys[dev.name], {remote_unit}, False, plan.rotation.get(dev.name),
                                        self.keys.get(rotation.temp_name(dev.name), ""))
        if self.legacy:
            bag = {k: v for k, v in bag.items() if k in relation_data.KEYS}
        return {k: v for k, v in bag.items() if v}


def path_ok(src, dst):
    """src's packets to dst's service address reach dst, and dst accepts them."""
    name = src.routes.get(dst.service + "/32")
    if name is None:
        return False
    dev = src.devices[name]
    entry = next((p for p in dev["peers"] if dst.service + "/32" in p[2]), None)
    if entry is None:
        return False
    for other_name, other in dst.devices.items():
        if dst.keys[other_name] != entry[0]:
            continue
        back = next((p for p in other["peers"] if p[0] == src.keys[name] and src.service + "/32" in p[2]), None)
        if back is None:
            continue
        if (entry[1] and int(entry[1].rsplit(":", 1)[1]) == other["port"]) or \
                (back[1] and int(back[1].rsplit(":", 1)[1]) == dev["port"]):
            return True
    return False


class World(object):
    """The units, their relations (every pair in ``links``) and Juju's pending hooks."""

    def __init__(self, units, links, seed, faults=0.0):
        self.units = {u.name: u for u in units}
        self.links = links
        self.random = random.Random(seed)
        self.faults = faults
        self.pending = set()
        self.checked = 0

    def remotes(self, unit):
        return [self.units[b if a == unit.name else a] for a, b in self.links if unit.name in (a, b)]

    def run(self, unit, rotate=(), fresh_next=(), action=False):
        """One hook (or action) of ``unit``: plan, step, publish; Juju commits or drops it."""
        plan = unit.plan(self.remotes(unit))
        unit.apply(plan, rotate, fresh_next)
        fault = not action and self.random.random() < self.faults
        if fault and self.random.random() < 0.5:
            return False         # the hook was killed after the step: nothing of the charm's kept
        unit.stored_keys = dict(unit.keys)
        own = rotation.Own(unit.rotating, unit.stored_keys)
        unit.rotating -= set(rotation.finished(plan, own))
        if fault:
            return False         # the commit did not reach the controller: relation writes dropped
        for other in self.remotes(unit):
            bag = unit.publication(plan, other.name)
            if bag != unit.bags.get(other.name, {}):
                unit.bags[other.name] = bag
                self.pending.add(other.name)
        return True

    def rotate_keys(self, name):
        unit = self.units[name]
        plan = unit.plan(self.remotes(unit))
        devices = [d.name for d in plan.devices]
        assert not any(plan.rotation[d].busy for d in devices)
        staged = [d for d in devices if rotation.can_start(plan.rotation[d]) and not unit.legacy]
        unit.rotating |= set(staged)
        self.run(unit, rotate=[d for d in devices if d not in staged], fresh_next=staged, action=True)
        return staged

    def settle(self, check=True, limit=200):
        for _ in range(limit):
            if check:
                self.check()
            if not self.pending:
                return
            name = self.random.choice(sorted(self.pending))
            if self.run(self.units[name]):
                self.pending.discard(name)
        raise AssertionError("did not settle")

    def check(self):
        for a, b in self.links:
            for src, dst in ((a, b), (b, a)):
                assert path_ok(self.units[src], self.units[dst]), "{} -> {} broken".format(src, dst)
        self.checked += 1


def related(seed, faults=0.0, legacy=(), hub=False):
    names = ["a/0", "b/0"] + (["c/0"] if hub else [])
    units = [Unit(n, "provider" if i == 0 else "requirer", i, legacy=n in legacy) for i, n in enumerate(names)]
    links = [("a/0", n) for n in names[1:]]
    world = World(units, links, seed, faults)
    world.pending.update(names)
    world.settle(check=False)
    world.check()
    return world


def converged(world, rotated, old):
    for name in rotated:
        assert world.units[name].keys["wg-vpn"] != old[name]
    for unit in world.units.values():
        if not world.remotes(unit):
            continue
        assert set(unit.devices) == {"wg-vpn"} and not unit.rotating
        for other in world.remotes(unit):
            assert [p[0] for p in unit.devices["wg-vpn"]["peers"] if other.service + "/32" in p[2]] == \
                [other.keys["wg-vpn"]]
    world.check()


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("faults", [0.0, 0.3])
def test_a_rotation_keeps_both_directions_up_at_every_step(seed, faults):
    world = related(seed, faults)
    old = {n: u.keys["wg-vpn"] for n, u in world.units.items()}
    assert world.rotate_keys("a/0") == ["wg-vpn"]
    # The action made the new key on the temporary device only: the main device still has the old one.
    a = world.units["a/0"]
    assert a.keys["wg-vpn"] == old["a/0"] and a.keys["wr-vpn"] != old["a/0"]
    assert a.bags["b/0"]["next-key"] == a.keys["wr-vpn"] and a.bags["b/0"]["next-endpoint"] == a.host + ":51920"
    world.settle()
    converged(world, ["a/0"], old)
    assert world.units["b/0"].keys["wg-vpn"] == old["b/0"]
    assert world.checked > 4


@pytest.mark.parametrize("seed", range(8))
def test_a_hub_rotates_with_every_spoke_and_a_spoke_rotates_on_a_hub(seed):
    world = related(seed, hub=True)
    old = {n: u.keys["wg-vpn"] for n, u in world.units.items()}
    world.rotate_keys("a/0")
    world.settle()
    converged(world, ["a/0"], old)
    old = {n: u.keys["wg-vpn"] for n, u in world.units.items()}
    world.rotate_keys("b/0")
    world.settle()
    converged(world, ["b/0"], old)
    assert world.units["c/0"].keys["wg-vpn"] == old["c/0"]


def rotate_at_once(world, names):
    """rotate-keys on each of ``names``, each before it heard of the others' (Juju hands a unit
    what it read last, and runs the relation-changed hooks later)."""
    seen = {n: {o: dict(u.bags) for o, u in world.units.items()} for n in names}
    for name in names:
        current = {o: u.bags for o, u in world.units.items()}
        for o, u in world.units.items():
            u.bags = seen[name][o] if o != name else u.bags
        world.rotate_keys(name)
        for o, u in world.units.items():
            if o != name:
                u.bags = current[o]
    world.pending.update(world.units)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("faults", [0.0, 0.3])
def test_two_ends_rotating_at_once_keep_both_directions_up(seed, faults):
    world = related(seed, faults)
    old = {n: u.keys["wg-vpn"] for n, u in world.units.items()}
    rotate_at_once(world, ["b/0", "a/0"])
    world.settle()
    converged(world, ["a/0", "b/0"], old)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("rotating", [["b/0", "c/0"], ["a/0", "c/0"], ["a/0", "b/0", "c/0"]])
def test_several_units_of_a_hub_rotating_at_once_keep_every_tunnel_up(seed, rotating):
    world = related(seed, faults=0.2, hub=True)
    old = {n: u.keys["wg-vpn"] for n, u in world.units.items()}
    rotate_at_once(world, rotating)
    world.settle()
    converged(world, rotating, old)


def test_a_unit_that_follows_or_rotates_refuses_to_start_another_rotation():
    world = related(0)
    world.rotate_keys("a/0")
    world.run(world.units["b/0"])
    for name in ("a/0", "b/0"):
        plan = world.units[name].plan(world.remotes(world.units[name]))
        assert plan.rotation["wg-vpn"].busy and not rotation.can_start(plan.rotation["wg-vpn"])
    assert rotation.describe(world.units["b/0"].plan([world.units["a/0"]]).rotation["wg-vpn"]) == \
        "following the key rotation of a/0"


@pytest.mark.parametrize("legacy", ["a/0", "b/0"])
def test_with_a_unit_of_the_previous_release_the_key_is_rotated_in_place(legacy):
    world = related(0, legacy=[legacy])
    old = {n: u.keys["wg-vpn"] for n, u in world.units.items()}
    rotating = "b/0" if legacy == "a/0" else "a/0"
    assert world.rotate_keys(rotating) == []
    assert world.units[rotating].keys["wg-vpn"] != old[rotating]     # in place, at once
    world.settle(check=False)                                          # a break of one round trip
    converged(world, [rotating], old)


def test_a_rotation_whose_partner_departs_ends():
    world = related(0, hub=True)
    old = {n: u.keys["wg-vpn"] for n, u in world.units.items()}
    world.rotate_keys("a/0")
    world.run(world.units["b/0"])
    world.links.remove(("a/0", "c/0"))         # c/0 departs before it followed
    world.units["c/0"].bags.pop("a/0", None)
    world.units["a/0"].bags.pop("c/0", None)
    world.pending.add("a/0")
    world.settle()
    converged(world, ["a/0"], old)


def test_the_rotation_port_is_only_used_where_it_is_free():
    endpoints = [model.TunnelEndpoint("vpn", "provider"), model.TunnelEndpoint("vpn-peer", "provider")]
    config = {"ssh-hostname": "198.18.0.2", "tunnel-mtu": 1420, "persistent-keepalive": 25,
              "vpn-listen-port": 51820, "vpn-peer-listen-port": 51920, "vpn-tunnel-address": "10.9.0.1/30",
              "vpn-peer-tunnel-address": "10.9.1.1/30"}
    manual = {ep.name: [{"public-key": new_key(), "endpoint": "", "allowed-ips": ["10.9.{}.2/32".format(i)]}]
              for i, ep in enumerate(endpoints)}
    plan = planning.build_plan(config, endpoints, {}, manual)
    assert rotation.rotation_ports(plan) == {"wg-vpn-peer": 52020}
    config["vpn-peer-listen-port"] = 65500
    plan = planning.build_plan(config, endpoints, {}, manual)
    assert rotation.rotation_ports(plan) == {"wg-vpn": 51920, "wg-vpn-peer": 65400}
