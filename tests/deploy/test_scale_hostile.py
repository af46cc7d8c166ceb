"""`python -m deploy scale` on the REAL packages against the stand-in OSM (deploy.standin), with a
compromised scaled instance: what it reports about itself is not trusted, a key belongs to the
one peer that held it first, and an operation on one instance never changes another's peer
(issue 36 item 3). The charm side of the same rule: tests/harness/test_manual_peer_trust.py."""
import json

import pytest

from bundle import membership
from deploy.standin import Clock, StandInClouds, project_root, run_env, run_tool
from vpnaas.core import registry


@pytest.fixture
def bed(tmp_path, shipped_packages):
    out, _catalog = shipped_packages
    root = str(tmp_path / "root")
    bindir = project_root(root, out)
    clouds = StandInClouds(root)

    def run(*argv, **extra):
        return run_tool(root, list(argv), run_env(root, bindir, UE="0", **extra), execute=clouds, clock=Clock())

    code, _out, err = run("deploy", "--ns", "eps_wg")
    assert code == 0, err
    return clouds, run


def hub_peers(clouds, hub, endpoint):
    """{key: sorted allowed-ips} of the hub's wg-<endpoint>, as its tunnel-status shows it."""
    (ns,) = clouds.osm.ns.values()
    eps = ns.endpoints(hub)
    provider, other = next((p, o) for e, p, o in eps if e == endpoint), next(o for e, _, o in eps if e == endpoint)
    dev = clouds.osm.device(ns, hub, 0, endpoint, provider, other)
    return {p["public-key"]: sorted(p["allowed-ips"]) for p in dev["peers"]}


def allowed_of(clouds, k, endpoint="sxab"):
    """The allowed-ips a hub gives SPGW-U instance k: its own tunnel and service addresses."""
    (ns,) = clouds.osm.ns.values()
    entry = ns.entry("spgwu", k, endpoint, True)
    return sorted([entry["address"].split("/")[0] + "/32"] + entry["service-addresses"])


def key_of(clouds, member, k, endpoint):
    from deploy.standin_osm import wg_key
    (ns,) = clouds.osm.ns.values()
    return wg_key(ns.id, member, k, endpoint)


def test_scale_out_and_in_peer_the_instance_by_its_own_addresses(bed):
    clouds, run = bed
    clouds.osm.unready[("spgwu", 1)] = 2      # its day-1 has not ended when vnf-scale returns
    code, out, err = run("scale", "--ns", "eps_wg", "--scale-out")
    assert code == 0, err
    one = key_of(clouds, "spgwu", 1, "sxab")
    assert hub_peers(clouds, "spgwc", "sxab")[one] == allowed_of(clouds, 1)
    actions = [c for c in clouds.calls if c[1] == "ns-action" and "--vdu_count" in c]
    assert actions and all(c[c.index("--vdu_count") + 1] in ("0", "1") for c in actions)
    code, out, err = run("scale", "--ns", "eps_wg", "--scale-in")
    assert code == 0, err
    assert one not in hub_peers(clouds, "spgwc", "sxab") and clouds.osm.ns and \
        list(clouds.osm.ns.values())[0].instances["spgwu"] == [0]


@pytest.mark.parametrize("victim", [0, 1])
@pytest.mark.parametrize("charm_guard", [True, False])
def test_an_instance_reporting_another_instances_key_is_refused_and_changes_nothing(bed, victim, charm_guard):
    """Instance 2 reports instance 1's key (a scaled peer) or instance 0's (the related one) with
    its own addresses: refused before any add-peer on a hub, with this release's charm and with
    one that would replace a manual peer with the same key."""
    clouds, run = bed
    clouds.osm.charm_guard = charm_guard
    assert run("scale", "--ns", "eps_wg", "--scale-out")[0] == 0
    before = {ep: hub_peers(clouds, hub, ep) for hub, ep in (("spgwc", "sxab"), ("enb", "s1u"))}
    clouds.osm.lies[("spgwu", 2)] = {"key": victim}
    first = len(clouds.calls)
    code, out, err = run("scale", "--ns", "eps_wg", "--scale-out")
    assert code == 1
    assert "reports the public key" in err and "a key belongs to the peer that held it first" in err
    assert {ep: hub_peers(clouds, hub, ep) for hub, ep in (("spgwc", "sxab"), ("enb", "s1u"))} == before
    on_hubs = [c for c in clouds.calls[first:] if c[1] == "ns-action" and c[c.index("--vnf_name") + 1] != "spgwu"
               and c[c.index("--action_name") + 1] in ("add-peer", "remove-peer")]
    assert on_hubs == []


def test_an_instance_reporting_another_instances_addresses_is_refused(bed):
    clouds, run = bed
    assert run("scale", "--ns", "eps_wg", "--scale-out")[0] == 0
    before = hub_peers(clouds, "spgwc", "sxab")
    clouds.osm.lies[("spgwu", 2)] = {"addresses": 1}
    code, out, err = run("scale", "--ns", "eps_wg", "--scale-out")
    assert code == 1 and "an instance takes only its own addresses" in err
    assert hub_peers(clouds, "spgwc", "sxab") == before


def test_scale_in_removes_the_instances_own_peer_whatever_key_it_claims(bed):
    """Instance 2 is peered, then claims instance 1's key: scale-in removes instance 2's peer
    (found by instance 2's addresses) and instance 1's stays."""
    clouds, run = bed
    assert run("scale", "--ns", "eps_wg", "--scale-out")[0] == 0
    assert run("scale", "--ns", "eps_wg", "--scale-out")[0] == 0
    one, two = (key_of(clouds, "spgwu", k, "sxab") for k in (1, 2))
    assert {one, two} <= set(hub_peers(clouds, "spgwc", "sxab"))
    clouds.osm.lies[("spgwu", 2)] = {"key": 1}
    code, out, err = run("scale", "--ns", "eps_wg", "--scale-in")
    assert code == 0, err
    left = hub_peers(clouds, "spgwc", "sxab")
    assert one in left and two not in left
    assert left[one] == allowed_of(clouds, 1)
    removes = [json.loads(c[c.index("--params") + 1]) for c in clouds.calls if "remove-peer" in c]
    eps_tunnels = membership.of_variant("eps_wg")[1]
    spgwu_tunnels = [rp.name for rp in registry.load().endpoints_of("spgwu") if rp.name in eps_tunnels]
    assert {r["public-key"] for r in removes} == {key_of(clouds, "spgwu", 2, ep) for ep in spgwu_tunnels}
    assert all(r["allowed-ips"] for r in removes)


def test_a_related_instance_0_whose_report_its_hub_contradicts_stops_the_peering(bed):
    clouds, run = bed
    clouds.osm.lies[("spgwu", 0)] = {"key": 7}     # not the key the hubs hold for it
    code, out, err = run("scale", "--ns", "eps_wg", "--scale-out")
    assert code == 1 and "instance 0 reports wg-" in err and "its report is not trusted" in err


def test_an_instance_rebuilt_with_a_new_key_replaces_only_its_own_entry(bed):
    clouds, run = bed
    assert run("scale", "--ns", "eps_wg", "--scale-out")[0] == 0
    old = key_of(clouds, "spgwu", 1, "sxab")
    clouds.osm.lies[("spgwu", 1)] = {"key": 5}      # a heal gave instance 1 a new key pair
    code, out, err = run("scale", "--ns", "eps_wg", "--peer-only")
    assert code == 0, err
    peers = hub_peers(clouds, "spgwc", "sxab")
    assert old not in peers and peers[key_of(clouds, "spgwu", 5, "sxab")] == allowed_of(clouds, 1)
    assert "under an older key: replacing it" in out
