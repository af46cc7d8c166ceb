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

Units run one of three revisions: this release ("current"), the previous one ("previous": the
same protocol without the deadlines) and one from before make-before-break ("legacy": it neither
reads nor writes the rotation fields, never removes a temporary device it does not know, and,
as Juju's relation-set writes only the keys it is given, leaves the rotation fields an earlier
revision wrote in its databag). A unit may be downgraded between any two hooks. Time is the
model's: every hook takes a second, and the deadlines (rotation.DEADLINE) pass when a test
moves the clock.
"""
import base64
import itertools
import random

import pytest

from vpnaas.core import model, relation_data, rotation
from vpnaas.core import plan as planning
from vpnaas.vnf import remote

_KEYS = itertools.count(1)


def new_key():
    n = next(_KEYS)
    return base64.b64encode(n.to_bytes(4, "big") + bytes(28)).decode()


#: What a unit of a release before make-before-break writes (relation_data.py then).
LEGACY_FIELDS = relation_data.KEYS + (relation_data.WANTS_PEER_KEYS, relation_data.PEER_KEYS)


class Unit(object):
    """One unit of a charm and its VNF; ``revision``: "current", "previous" or "legacy" (above)."""

    def __init__(self, name, role, index, legacy=False):
        self.name = name
        self.revision = "legacy" if legacy else "current"
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
        self.started, self.followed = {}, {}                  # ... and the deadlines' records
        self.bags = {}                                        # committed databag per remote unit
        self.hostile = False                                  # its charm no longer runs: the test writes its data

    @property
    def legacy(self):
        return self.revision == "legacy"

    def own(self, now):
        clock = now if self.revision == "current" else None
        return rotation.Own(() if self.legacy else self.rotating, self.stored_keys, self.name, now=clock,
                            started=self.started, followed=self.followed)

    def plan(self, remotes, now=None):
        bags = {}
        for other in remotes:
            bag = dict(other.bags.get(self.name, {}))
            if self.legacy:
                bag = {k: v for k, v in bag.items() if k not in relation_data.ROTATION_KEYS}
            bags[other.name] = bag
        plan = planning.build_plan(self.config, self.endpoints, {"vpn": [{u: b} for u, b in bags.items()]}, {},
                                   own_keys=set(self.stored_keys.values()), own=self.own(now))
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
            # An earlier release's tunnels.sh knows no temporary device: it leaves one alone.
            if name not in wanted and not (self.legacy and name.startswith(rotation.TEMP_PREFIX)):
                del self.devices[name], self.keys[name]
        self.routes = routed

    def publication(self, plan, remote_unit):
        """The databag after this unit's relation-set: the fields it writes (an empty one
        removed), the others as they were."""
        dev = plan.devices[0] if plan.devices else None
        before = self.bags.get(remote_unit, {})
        if dev is None or dev.name not in self.keys:
            return before
        bag = relation_data.publication(dev, self.keys[dev.name], {remote_unit}, False, plan.rotation.get(dev.name),
                                        self.keys.get(rotation.temp_name(dev.name), ""))
        if self.legacy:
            bag = {k: ("" if k == relation_data.PEER_KEYS else v) for k, v in bag.items() if k in LEGACY_FIELDS}
        merged = dict(before)
        for key, value in bag.items():
            if value:
                merged[key] = value
            else:
                merged.pop(key, None)
        return merged


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
        self.now = 1.0e9          # the units' clock (time.time()); every hook takes a second
        self.hooks = 0
        #: Directions that are not checked at all (a hostile unit's)
        self.allow_broken = None
        #: A unit whose directions may break for one round trip: each is whole again once both
        #: ends ran a hook since it broke (``broken``: direction -> ends still to run one).
        self.round_trip = None
        self.broken = {}
        self.last = None

    def remotes(self, unit):
        return [self.units[b if a == unit.name else a] for a, b in self.links if unit.name in (a, b)]

    def run(self, unit, rotate=(), fresh_next=(), action=False):
        """One hook (or action) of ``unit``: plan, step, publish; Juju commits or drops it."""
        self.now += 1
        self.hooks += 1
        if unit.hostile:
            return True
        plan = unit.plan(self.remotes(unit), self.now)
        unit.apply(plan, rotate, fresh_next)
        fault = not action and self.random.random() < self.faults
        if fault and self.random.random() < 0.5:
            return False         # the hook was killed after the step: nothing of the charm's kept
        own = unit.own(self.now)
        unit.stored_keys = dict(unit.keys)
        unit.followed = rotation.followed(plan)
        unit.started = rotation.started(plan, own)
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
        plan = unit.plan(self.remotes(unit), self.now + 1)       # the action's own plan
        devices = [d.name for d in plan.devices]
        assert not any(plan.rotation[d].busy for d in devices)
        staged = [d for d in devices if rotation.can_start(plan.rotation[d]) and not unit.legacy]
        unit.rotating |= set(staged)
        unit.started.update({d: self.now + 1 for d in staged})
        self.run(unit, rotate=[d for d in devices if d not in staged], fresh_next=staged, action=True)
        return staged

    def settle(self, check=True, limit=200, hooks=None):
        """Run pending hooks until none is (or ``hooks`` of them ran), checking after each."""
        for _ in range(limit if hooks is None else hooks):
            if check:
                self.check()
            if not self.pending:
                return
            name = self.random.choice(sorted(self.pending))
            if self.run(self.units[name]):
                self.pending.discard(name)
            self.last = name
        if hooks is None:
            raise AssertionError("did not settle")

    def check(self):
        for waiting in self.broken.values():
            waiting.discard(self.last)
        for a, b in self.links:
            for src, dst in ((a, b), (b, a)):
                if self.allow_broken is not None and self.allow_broken(src, dst):
                    continue
                ok = path_ok(self.units[src], self.units[dst])
                if ok or self.round_trip not in (src, dst):
                    assert ok, "{} -> {} broken".format(src, dst)
                    self.broken.pop((src, dst), None)
                    continue
                waiting = self.broken.setdefault((src, dst), {src, dst})
                assert waiting, "{} -> {} still broken after a hook of each end".format(src, dst)
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


def converged(world, rotated, old, orphans=()):
    """Every rotated key replaced and held by every peer, no rotation left; ``orphans``: units
    that may keep a temporary device they do not know (a release before make-before-break)."""
    for name in rotated:
        assert world.units[name].keys["wg-vpn"] != old[name]
    for unit in world.units.values():
        if not world.remotes(unit):
            continue
        devices = set(unit.devices) - ({"wr-vpn"} if unit.name in orphans else set())
        assert devices == {"wg-vpn"} and (unit.legacy or not unit.rotating)
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


# ---------------------------------------------------------------------- version skew and deadlines
def finish_by_deadline(world, names, seconds=rotation.FOLLOW_DEADLINE + 1):
    """``seconds`` pass: a hook of each of ``names`` (update-status) after them, and once more
    (a rotation whose deadline made the main device take the new key ends at the next hook that
    finds nobody on the temporary path: update-status at the latest)."""
    world.now += seconds
    for _round in range(2):
        world.pending.update(names)
        world.settle()


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("step", range(0, 10, 2))
@pytest.mark.parametrize("who", ["a/0", "b/0"])
def test_a_downgrade_to_the_previous_revision_in_the_middle_of_a_rotation_loses_nothing(seed, step, who):
    """The supported skew (docs/lifecycle.md): this release and the previous one, either end
    downgraded at any moment of a rotation (its upgrade-charm hook is the next hook it runs)."""
    world = related(seed, faults=0.2)
    old = {n: u.keys["wg-vpn"] for n, u in world.units.items()}
    world.rotate_keys("a/0")
    world.settle(hooks=step)
    world.units[who].revision = "previous"
    world.pending.add(who)
    world.settle()
    converged(world, ["a/0"], old)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("step", range(0, 10))
@pytest.mark.parametrize("who", ["a/0", "b/0"])
def test_a_downgrade_to_a_release_before_make_before_break_mid_rotation_costs_one_round_trip(seed, step, who):
    """Issue 34: such a release keeps the rotation fields it does not know in its databag (a
    stale acknowledgement) and its temporary device on its VNF. A direction to or from it may
    break for one relation round trip (what an in-place rotation costs: whole again once both
    ends ran a hook); no other direction breaks; the rotation ends (its deadline at the latest);
    only its own temporary device is left."""
    world = related(seed)
    old = {n: u.keys["wg-vpn"] for n, u in world.units.items()}
    world.rotate_keys("a/0")
    world.settle(hooks=step)
    world.units[who].revision = "legacy"
    world.pending.add(who)
    world.round_trip = who
    world.settle()
    finish_by_deadline(world, ["a/0", "b/0"])
    assert not world.broken
    world.round_trip = None
    world.check()
    assert world.units["a/0"].keys["wg-vpn"] != old["a/0"] or who == "a/0"
    converged(world, [] if who == "a/0" else ["a/0"], old, orphans=[who])


def hostile_rotation(world, name, offer=True):
    """``name`` publishes rotation-protocol 1 with a next-key and a next-endpoint (and offers its
    temporary path) and never finishes: its charm does nothing any more."""
    unit = world.units[name]
    unit.hostile = True
    for other in world.remotes(unit):
        bag = dict(unit.bags[other.name], **{"next-key": new_key(), "next-endpoint": unit.host + ":51920"})
        if offer:
            bag["next-peer-keys"] = other.keys["wg-vpn"]
        unit.bags[other.name] = bag
        world.pending.add(other.name)


@pytest.mark.parametrize("seed", range(6))
def test_a_unit_that_never_finishes_its_rotation_is_followed_until_the_deadline_only(seed):
    """Issue 36: a hub follows b/0's endless rotation for FOLLOW_DEADLINE at most; then its own rotation
    proceeds, make-before-break with c/0 (which never loses a packet) and in place for b/0, and
    b/0 starting over at once is not followed again."""
    world = related(seed, faults=0.2, hub=True)
    hostile_rotation(world, "b/0")
    world.allow_broken = lambda src, dst: "b/0" in (src, dst)
    world.settle()
    hub = world.units["a/0"]
    assert "wr-vpn" in hub.devices and hub.plan(world.remotes(hub), world.now).rotation["wg-vpn"].busy
    world.now += rotation.FOLLOW_DEADLINE / 2
    world.pending.add("a/0")
    world.settle()
    assert "wr-vpn" in hub.devices
    finish_by_deadline(world, ["a/0"])
    plan = hub.plan(world.remotes(hub), world.now)
    assert "wr-vpn" not in hub.devices and not plan.rotation["wg-vpn"].busy
    assert plan.rotation["wg-vpn"].abandoned == ["b/0"] and path_ok(hub, world.units["b/0"])
    old = {n: u.keys["wg-vpn"] for n, u in world.units.items()}
    assert world.rotate_keys("a/0") == ["wg-vpn"]
    world.settle()
    assert hub.keys["wg-vpn"] != old["a/0"] and not hub.rotating and set(hub.devices) == {"wg-vpn"}
    assert [p[0] for p in world.units["c/0"].devices["wg-vpn"]["peers"]] == [hub.keys["wg-vpn"]]
    hostile_rotation(world, "b/0")           # it starts over
    world.settle()
    assert "wr-vpn" not in hub.devices


@pytest.mark.parametrize("seed", range(6))
def test_a_partner_that_never_follows_holds_a_rotation_up_until_the_deadline_only(seed):
    world = related(seed, faults=0.2, hub=True)
    old = {n: u.keys["wg-vpn"] for n, u in world.units.items()}
    world.units["b/0"].hostile = True        # it stops following (its charm is gone)
    world.allow_broken = lambda src, dst: "b/0" in (src, dst)
    world.rotate_keys("a/0")
    world.settle()
    hub = world.units["a/0"]
    assert hub.keys["wg-vpn"] == old["a/0"] and hub.rotating == {"wg-vpn"}
    finish_by_deadline(world, ["a/0"], rotation.DEADLINE + 1)
    assert hub.keys["wg-vpn"] != old["a/0"] and not hub.rotating and set(hub.devices) == {"wg-vpn"}
    c = world.units["c/0"]
    assert set(c.devices) == {"wg-vpn"} and [p[0] for p in c.devices["wg-vpn"]["peers"]] == [hub.keys["wg-vpn"]]


@pytest.mark.parametrize("seed", range(4))
def test_a_unit_that_rotates_again_and_again_is_followed_every_time(seed):
    """The follow deadline bounds one rotation, not a unit's rotations: a rotation that finished
    (its key changed) ends the count, so an honest peer rotating every FOLLOW_DEADLINE / 2, for
    longer than FOLLOW_DEADLINE in all, is followed make-before-break every time."""
    world = related(seed, faults=0.2, hub=True)
    for _round in range(4):
        old = {n: u.keys["wg-vpn"] for n, u in world.units.items()}
        assert world.rotate_keys("b/0") == ["wg-vpn"]
        world.settle()
        converged(world, ["b/0"], old)
        world.now += rotation.FOLLOW_DEADLINE / 2
