"""deploy/scale.py against a fake VNFM that keeps the charms' peer state as OSM would show it
(the OSM side is the only thing replaced; make lifecycle runs the same code on the emulated LCM)."""
import json

import pytest

from bundle import membership
from deploy import scale
from deploy.osm import Osm, OsmError
from vpnaas.core import registry

#: The EPS with WireGuard's members and the SPGW-U's hubs in it: from the registry and the
#: membership line, so that a reference point ending at the SPGW-U is its registry entry here too.
MEMBERS = membership.of_variant("eps_wg")[0]
HUBS = scale.ScaleSpec.for_component("spgwu", MEMBERS).hubs
#: Each hub's public key (distinct from every scaled instance's: tunnel-status below).
KEYS = {hub: letter * 43 + "=" for hub, letter in zip(sorted(set(HUBS.values())), "CEGIKMOQ")}
HUB_UNITS = tuple("{}/0".format(hub) for hub in KEYS)


class FakeVnfm:
    """Instances of spgwu and two hubs; add-peer/remove-peer/tunnel-status as the charms answer."""

    def __init__(self):
        self.live = [0]
        self.peers = {}            # (unit, endpoint) -> {key: params}
        self.calls = []
        self.fail_next = 0         # the new instance's charm does not answer yet

    def instances(self, member):
        return list(self.live)

    def scale(self, member, aspect, out):
        self.calls.append(("scale", aspect, out))
        if out:
            self.live.append(len(self.live))
        else:
            self.live.pop()

    def _entry(self, unit, endpoint):
        if unit.startswith("spgwu"):
            k = int(unit.split("/")[1])
            if k and not self.peers.get((unit, endpoint)):
                return None      # no peer, no device
            key = "{}{}".format(endpoint[0].upper(), k) * 21 + "A="
            return {"endpoint": endpoint, "public-key": key[:43] + "=", "address": "10.250.4.{}/30".format(1 + 4 * k),
                    "listen-port": 51824, "endpoint-address": "192.168.16.{}".format(102 + k),
                    "service-addresses": ["172.55.55.{}/32".format(102 + k)], "temporary": False,
                    "peers": self._peers(unit, endpoint)}
        return {"endpoint": endpoint, "public-key": KEYS[unit.split("/")[0]], "address": "10.250.4.2/30",
                "listen-port": 51824, "endpoint-address": "192.168.16.101", "service-addresses": ["172.55.55.101/32"],
                "temporary": False, "peers": self._peers(unit, endpoint)}

    def _peers(self, unit, endpoint):
        """The related peer (instance 0 and its hub hold each other) and the add-peer ones."""
        related = []
        if unit in HUB_UNITS:
            zero = self._entry("spgwu/0", endpoint)
            related = [{"public-key": zero["public-key"], "latest-handshake-age": 1,
                        "allowed-ips": ["10.250.4.1/32", "172.55.55.102/32"]}]
        return related + [{"public-key": p, "latest-handshake-age": 1, "allowed-ips": v["allowed-ips"].split(",")}
                          for p, v in self.peers.get((unit, endpoint), {}).items()]

    def action(self, member, primitive, params, count_index=None):
        unit = "{}/{}".format(member, count_index or 0)
        self.calls.append((primitive, unit, dict(params or {})))
        if member == "spgwu" and count_index and self.fail_next:
            self.fail_next -= 1
            raise RuntimeError("ssh-hostname is not set")
        endpoints = list(HUBS) if member == "spgwu" else [rp for rp, hub in HUBS.items() if hub == member]
        if primitive == "tunnel-status":
            return {"tunnels": json.dumps([e for e in (self._entry(unit, ep) for ep in endpoints) if e])}
        if primitive == "add-peer":
            self.peers.setdefault((unit, params["device"]), {})[params["public-key"]] = params
            return {"tunnel": json.dumps(self._entry(unit, params["device"]))}
        if primitive == "remove-peer":
            held = self.peers.get((unit, params["device"]), {})
            if held.get(params["public-key"], {}).get("allowed-ips") != params["allowed-ips"]:
                raise RuntimeError("action remove-peer failed: no manual peer with that key on wg-sxab")
            if held.pop(params["public-key"], None) is None:
                raise RuntimeError("action remove-peer failed: no manual peer with that key on wg-sxab")
            return {}
        raise AssertionError(primitive)


def scaler(vnfm, lines=None):
    spec = scale.ScaleSpec.for_component("spgwu", MEMBERS)
    return scale.Scaler(vnfm, spec, progress=(lines if lines is not None else []).append, timeout=5,
                        clock=iter(range(1000)).__next__, sleep=lambda s: None)


def test_the_hubs_come_from_the_registry():
    """Each reference point of the SPGW-U whose other end is a member, that end its hub."""
    spec = scale.ScaleSpec.for_component("spgwu", MEMBERS)
    want = {rp.name: rp.requirer if rp.provider == "spgwu" else rp.provider
            for rp in registry.load().endpoints_of("spgwu")}
    assert {"sxab", "s1u"} <= set(want)
    assert (spec.hubs, spec.vdu, spec.aspect) == ({k: v for k, v in want.items() if v in MEMBERS}, "spgwu",
                                                  "spgwu-scale")
    assert scale.ScaleSpec.for_component("spgwu", ["spgwu", "spgwc"]).hubs == {
        k: v for k, v in want.items() if v == "spgwc"}
    with pytest.raises(scale.ScaleError):
        scale.ScaleSpec.for_component("spgwu", ["spgwu"])


def test_scale_out_peers_the_new_instance_both_ways():
    vnfm = FakeVnfm()
    vnfm.fail_next = 2       # its day-1 has not ended when vnf-scale returns: retried
    assert scaler(vnfm).scale_out() == 1
    on_hub = vnfm.peers[("spgwc/0", "sxab")]
    (key, params), = on_hub.items()
    assert params == {"device": "sxab", "public-key": key, "endpoint": "192.168.16.103:51824",
                      "allowed-ips": "10.250.4.5/32,172.55.55.103/32"}
    assert list(vnfm.peers[("spgwu/1", "sxab")]) == [KEYS["spgwc"]]
    assert vnfm.peers[("spgwu/1", "sxab")][KEYS["spgwc"]]["allowed-ips"] == "10.250.4.2/32,172.55.55.101/32"
    assert list(vnfm.peers[("enb/0", "s1u")]) and list(vnfm.peers[("spgwu/1", "s1u")]) == [KEYS["enb"]]


def test_peering_again_changes_nothing():
    vnfm = FakeVnfm()
    sc = scaler(vnfm)
    sc.scale_out()
    before = repr(sorted(vnfm.peers.items()))
    sc.peer_all()
    assert repr(sorted(vnfm.peers.items())) == before
    with pytest.raises(scale.ScaleError, match="instance 0 is related"):
        sc.peer(0)


def test_scale_in_removes_the_highest_instance_from_the_hubs_first_and_is_repeatable():
    vnfm = FakeVnfm()
    sc = scaler(vnfm)
    sc.scale_out()
    sc.scale_out()
    assert sc.scale_in() == 2
    order = [c for c in vnfm.calls if c[0] in ("remove-peer", "scale")]
    assert [c[0] for c in order] == ["scale", "scale"] + ["remove-peer"] * len(HUBS) + ["scale"]
    assert all(len(v) == 1 for (unit, _ep), v in vnfm.peers.items() if unit in HUB_UNITS)
    # a run that removed the peers and then stopped: the next run finds them gone and goes on
    (key, params), = vnfm.peers[("spgwc/0", "sxab")].items()
    vnfm.action("spgwc", "remove-peer", {"device": "sxab", "public-key": key, "allowed-ips": params["allowed-ips"]})
    lines = []
    assert scale.Scaler(vnfm, sc.spec, progress=lines.append, timeout=5).scale_in() == 1
    assert any("removed before" in line for line in lines)
    with pytest.raises(scale.ScaleError, match="no scaled instance"):
        sc.scale_in()


def test_peer_params_refuse_a_device_without_key():
    with pytest.raises(scale.ScaleError):
        scale.peer_params({"public-key": "", "address": "10.250.4.1/30"}, "sxab")
    with pytest.raises(scale.ScaleError, match="upgrade-charm first"):
        scale.peer_params({"public-key": "K", "address": "10.250.4.2/30", "listen-port": 5}, "sxab")
    v6 = scale.peer_params({"public-key": "K", "address": "fd00::1/126", "listen-port": 5,
                            "endpoint-address": "fd01::1", "service-addresses": []}, "sxab")
    assert (v6["endpoint"], v6["allowed-ips"]) == ("[fd01::1]:5", "fd00::1/128")


class RecordingOsm(Osm):
    """The osm CLI boundary replaced: what Osm would run, recorded."""

    def __init__(self):
        self.argv = []
        self.vdu_members = {}

    def run(self, *args, timeout=None, check=True):
        self.argv.append(list(args))

    def show_literal(self, kind, name):
        if kind == "ns":
            return {"constituent-vnfr-ref": ["a", "b"]}
        if name == "a":
            return {"member-vnf-index-ref": "spgwc", "vdur": [{"vdu-id-ref": "spgwc", "count-index": 0}]}
        return {"member-vnf-index-ref": "spgwu", "vdur": [
            {"vdu-id-ref": "spgwu", "count-index": 0}, {"vdu-id-ref": "spgwu", "count-index": 1},
            {"vdu-id-ref": "spgwu", "count-index": 2, "status": "DELETING"}]}

    def read(self, *args, dry_present=False, timeout=None):
        self.argv.append(list(args))

        class R:
            ok, stdout, stderr = False, "", "stop here"
        return R()

    runner = type("Runner", (), {"dry_run": False, "redact": staticmethod(lambda s: s)})()
    cfg = type("Cfg", (), {"seconds": staticmethod(lambda k: 60)})()


def test_the_osm_cli_is_asked_for_the_vdu_instance():
    osm = RecordingOsm()
    vnfm = scale.OsmVnfm(osm, "ns1", "spgwu", "spgwu", 600)
    assert vnfm.instances("spgwu") == [0, 1]
    vnfm.scale("spgwu", "spgwu-scale", True)
    assert osm.argv[-1] == ["vnf-scale", "ns1", "spgwu", "--scaling-group", "spgwu-scale", "--scale-out", "--wait",
                            "--timeout", "600"]
    with pytest.raises(OsmError, match="stop here"):
        vnfm.action("spgwu", "tunnel-status", {}, count_index=1)
    assert osm.argv[-1][:9] == ["ns-action", "ns1", "--vnf_name", "spgwu", "--action_name", "tunnel-status",
                                "--vdu_id", "spgwu", "--vdu_count"] and osm.argv[-1][9] == "1"
    with pytest.raises(OsmError, match="stop here"):
        vnfm.action("spgwc", "tunnel-status", {})
    assert "--vdu_id" not in osm.argv[-1]


class InterruptedVnfm(FakeVnfm):
    """Each action named in ``interrupt`` fails once as Juju fails an action whose unit agent
    restarted while it ran, after it was done on the VNF or before (``done``)."""

    def __init__(self, interrupt, done):
        super().__init__()
        self.interrupt, self.done = set(interrupt), done

    def action(self, member, primitive, params, count_index=None):
        if (member, primitive) in self.interrupt:
            self.interrupt.discard((member, primitive))
            if self.done:
                super().action(member, primitive, params, count_index)
            raise RuntimeError("{} on {} failed: action terminated".format(primitive, member))
        return super().action(member, primitive, params, count_index)


@pytest.mark.parametrize("done", [False, True])
@pytest.mark.parametrize("interrupted", [("spgwc", "add-peer"), ("enb", "add-peer"), ("spgwu", "tunnel-status"),
                                         ("spgwc", "remove-peer")])
def test_a_step_whose_action_was_interrupted_is_run_again(interrupted, done):
    """Juju fails an action whose unit agent restarted and never runs it again; nor does OSM
    (docs/lifecycle.md): deploy scale runs the step again itself, and ends as if nothing happened."""
    vnfm, lines = InterruptedVnfm([interrupted], done), []
    sc = scaler(vnfm, lines)
    assert sc.scale_out() == 1
    assert sc.scale_in() == 1
    assert any("action terminated" in line and "running it again" in line for line in lines), lines
    assert all(not v for (unit, _ep), v in vnfm.peers.items() if unit in HUB_UNITS)
