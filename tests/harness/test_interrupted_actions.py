"""Actions whose unit agent restarted after their step on the VNF (Juju fails them, "action
terminated", and never runs them again; docs/lifecycle.md): nothing the action stored or
published is kept, while the VNF holds what its step applied. The next hook of any kind must
contact the VNF and bring it and what the unit published back together, without update-status
(which comes every five minutes) and without the operator running the action again."""
import pytest
from harness_helpers import peer_data

from vpnaas.core import unitstate


def interrupted(proxy, name, **params):
    """``name`` run to the end of its step, then rolled back as an agent restart at its action-set
    leaves it: the charm's stored state and the unit's own relation data as before, and no
    commit (the run never ended: ``unitstate.confirm_vnf`` is never reached)."""
    stored = dict(proxy.charm._stored._data._cache)
    published = {rel.id: dict(rel.data[proxy.charm.unit]) for ep in ("vpn", "vpn-peer")
                 for rel in proxy.harness.model.relations[ep]}
    with pytest.MonkeyPatch.context() as m:
        m.setattr(unitstate, "vnf_confirmed_pending", lambda directory: None)
        run = proxy.act(name, **params)
    for key, value in stored.items():
        setattr(proxy.charm._stored, key, value)
    for rel, bag in published.items():
        now = proxy.published(rel)
        proxy.harness.update_relation_data(rel, proxy.charm.unit.name,
                                           dict({k: "" for k in now if k not in bag}, **bag))
    return run


def test_a_key_rotated_in_place_by_an_interrupted_rotate_keys_is_published_by_the_next_hook(ready, vnf):
    """A peer of an earlier release: the key is replaced in place. The interrupted action left the
    device on a key nobody was told (the tunnel is down): the next hook, here the peer's
    relation-changed with nothing new in it, learns it and publishes it."""
    rel = ready.relate("vpn", "b/0", peer_data())
    old = ready.published(rel)["public-key"]
    run = interrupted(ready, "rotate-keys", device="vpn")
    assert run.results["rotation-wg-vpn"].startswith("in place")
    new = vnf.devices["wg-vpn"].public_key
    assert new != old and ready.published(rel)["public-key"] == old
    ready.harness.update_relation_data(rel, "b/0", {"unrelated": "x"})
    assert ready.published(rel)["public-key"] == vnf.devices["wg-vpn"].public_key == new
    # Once a run ended normally, nothing is unconfirmed: the next hook is left alone again.
    logins = vnf.logins
    ready.harness.update_relation_data(rel, "b/0", {"unrelated": "y"})
    assert vnf.logins == logins


def test_the_temporary_device_of_an_interrupted_rotation_goes_at_the_next_hook(ready, vnf):
    rel = ready.relate("vpn", "b/0", dict(peer_data(), **{"rotation-protocol": "1"}))
    interrupted(ready, "rotate-keys")
    assert "wr-vpn" in vnf.devices and "next-key" not in ready.published(rel)
    ready.harness.update_relation_data(rel, "b/0", {"unrelated": "x"})
    assert "wr-vpn" not in vnf.devices and ready.charm._stored.rotating == "[]"


def test_a_peer_an_interrupted_add_peer_put_on_the_vnf_goes_at_the_next_hook(ready, vnf):
    """The charm lists no such peer (the action's stored state was lost): the VNF holds exactly
    what the charm knows again, until the operator's (or deploy scale's) add-peer runs again."""
    rel = ready.relate("vpn", "b/0", peer_data())
    before = sorted(p["public-key"] for p in vnf.devices["wg-vpn"].peers)
    key = peer_data()["public-key"]
    run = interrupted(ready, "add-peer", device="vpn", **{"public-key": key, "allowed-ips": "172.16.9.9/32",
                                                           "endpoint": "192.168.8.99:51820"})
    assert run.failed is None and key in [p["public-key"] for p in vnf.devices["wg-vpn"].peers]
    ready.harness.update_relation_data(rel, "b/0", {"unrelated": "x"})
    assert sorted(p["public-key"] for p in vnf.devices["wg-vpn"].peers) == before
