"""The generic charm (wireguard-proxy) under ops' Harness, logged in over SSH to a fake VNF.

``proxy`` is the unit: ``proxy.act(name, **params)`` runs an action the way Juju does (parameter
defaults from actions.yaml, JUJU_ACTION_NAME, results checked against Juju's key rules), and
``proxy.relate(...)`` adds a related unit with its databag. ``vnf`` is the machine behind
10.0.0.5 (see fake_vnf). After every test: nothing the model did not understand was sent, and
no private WireGuard key of the VNF appears in a status, an action result, relation data or a log.
"""
import hashlib
import json
import logging
import os
import re
import sys

import ops.testing
import paramiko
import pytest
from fake_vnf import CLOCK, FakeNetwork, FakeVnf, keypair

from vpnaas.charm import relation_cache
from vpnaas.core import unitstate
from vpnaas.vnf import dataplane, ssh

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "charms"))
from charms_helpers import harness_for  # noqa: E402

#: A configuration OSM's config primitive would set (the two endpoints are not reference
#: points, so their tunnel addresses must be given).
CONFIG = {
    "ssh-hostname": "10.0.0.5",
    "ssh-username": "ubuntu",
    "vpn-tunnel-address": "10.9.0.1/30",
    "vpn-service-addresses": "172.16.0.1/32",
    "vpn-service-network": "172.16.0.0/16",
    "vpn-peer-tunnel-address": "10.9.1.2/30",
    "vpn-peer-service-addresses": "172.16.1.2/32",
    "vpn-peer-service-network": "172.16.0.0/16",
    "vpn-peer-listen-port": 51821,
}
#: What Juju's action-set accepts as a key (and the keys it reserves for itself).
_RESULT_KEY = re.compile(r"[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?")
_RESERVED = {"stdout", "stderr", "stdout-encoding", "stderr-encoding"}


class ActionRun(object):
    def __init__(self, name, params):
        self.name, self.params = name, params
        self.results, self.failed, self.logs = {}, None, []

    def set_results(self, results):
        for key, value in results.items():
            assert _RESULT_KEY.fullmatch(key) and key not in _RESERVED, "action-set refuses key " + key
            assert isinstance(value, str), (key, value)
        self.results.update(results)

    def fail(self, message=""):
        self.failed = message

    def __repr__(self):
        return "ActionRun({}, results={}, failed={!r})".format(self.name, self.results, self.failed)


class Proxy(object):
    """One unit of wireguard-proxy under Harness."""

    def __init__(self, harness, monkeypatch):
        self.harness = harness
        self.monkeypatch = monkeypatch
        self.statuses = []
        self.runs = []
        backend = harness._backend
        status_set = backend.status_set

        def record(status, message="", **kwargs):
            if not kwargs.get("is_app"):
                self.statuses.append((status, message))
            return status_set(status, message, **kwargs)
        backend.status_set = record

    @property
    def charm(self):
        return self.harness.charm

    @property
    def status(self):
        return self.charm.unit.status

    def configure(self, **options):
        self.harness.update_config(options)

    def act(self, name, **params):
        """Run an action as Juju does: defaults filled in, then the charm's handler by dispatch."""
        spec = self.charm.meta.actions[name]
        full = {k: v["default"] for k, v in spec.parameters.items() if "default" in v}
        full.update(params)
        run = ActionRun(name, full)
        backend = self.harness._backend
        backend.action_get = lambda: dict(full)
        backend.action_set = run.set_results
        backend.action_fail = run.fail
        backend.action_log = run.logs.append
        self.monkeypatch.setenv("JUJU_ACTION_NAME", name)
        getattr(self.charm.on, name.replace("-", "_") + "_action").emit()
        self.monkeypatch.delenv("JUJU_ACTION_NAME")
        self.runs.append(run)
        return run

    def relate(self, endpoint, unit, data):
        """A related unit on ``endpoint`` that published ``data``; returns the relation id."""
        rel = self.harness.add_relation(endpoint, unit.split("/")[0])
        self.harness.add_relation_unit(rel, unit)
        self.harness.update_relation_data(rel, unit, data)
        return rel

    def published(self, rel):
        return dict(self.harness.get_relation_data(rel, self.charm.unit.name))

    def content(self, rel):
        """What this unit published on ``rel`` but its generation (which each write renews)."""
        return {k: v for k, v in self.published(rel).items() if k != "generation"}

    def texts(self):
        """Everything the unit showed to the outside: statuses, action output, relation data."""
        out = [m for _s, m in self.statuses]
        out += [repr(r) for r in self.runs]
        for ep in ("vpn", "vpn-peer"):
            for rel in self.harness.model.relations[ep]:
                out.append(repr(dict(rel.data[self.charm.unit])))
        return out


def peer_data(public_key=None, endpoint="192.168.8.20:51821", tunnel="10.9.0.2/30", service="172.16.0.2/32",
              wants_peer_keys=False, pq_psk=True):
    """The databag a well-behaved related unit publishes (``wants_peer_keys``: a unit of a charm
    whose component waits for its tunnels; ``pq_psk``: of this release, running pq-psk)."""
    bag = {"vpnaas-schema": "1", "public-key": public_key or keypair()[1], "endpoint": endpoint,
           "tunnel-address": tunnel, "service-prefixes": service}
    if pq_psk:
        bag["pq-psk"] = "1"
    if wants_peer_keys:
        bag["wants-peer-keys"] = "yes"
    return bag


@pytest.fixture
def vnf(monkeypatch):
    net = FakeNetwork()
    machine = net.add(FakeVnf())
    monkeypatch.setattr(paramiko.SSHClient, "connect", lambda client, host, **kw: net.connect(client, host, **kw))
    monkeypatch.setattr(ssh, "time", CLOCK)
    return machine


def ship_pq_psk(tmp_path, monkeypatch):
    """The charm carries pq-psk, as `make charms` builds it where Go is (any bytes: the fake VNF
    checks only their digest); a test that ships other programs replaces the folder."""
    folder = tmp_path / "dataplane-pq"
    folder.mkdir(exist_ok=True)
    data = b"#!/bin/sh\necho pq-psk 1.0.0 ML-KEM-768\n"
    (folder / "pq-psk").write_bytes(data)
    doc = {"programs": {"pq-psk": {"sha256": hashlib.sha256(data).hexdigest(), "version": "1.0.0"}}}
    (folder / dataplane.MANIFEST).write_text(json.dumps(doc))
    monkeypatch.setattr(dataplane, "charm_folder", lambda _charm_dir: str(folder))


@pytest.fixture
def proxy(vnf, monkeypatch, tmp_path, caplog):
    """The unit, installed and leader, with no config yet; its SSH key store in tmp_path."""
    caplog.set_level(logging.DEBUG)
    monkeypatch.setattr(ops.testing, "SIMULATE_CAN_CONNECT", True)   # no containers; silences ops' warning
    # Harness runs every event in one process with no commit between them: each event's
    # relation cache becomes the cache at once (in a charm it does when ops has committed).
    save = relation_cache.save
    monkeypatch.setattr(relation_cache, "save", lambda d, state: (save(d, state), relation_cache.promote(d)))
    # ... and each finished session confirms the VNF at once (unitstate.confirm_vnf).
    pending = unitstate.vnf_confirmed_pending
    monkeypatch.setattr(unitstate, "vnf_confirmed_pending", lambda d: (pending(d), unitstate.confirm_vnf(d)))
    ship_pq_psk(tmp_path, monkeypatch)
    harness = harness_for("wireguard-proxy")
    harness.set_leader(True)
    harness.begin()
    harness.charm.keystore = ssh.KeyStore(str(tmp_path / "vpnaas"))
    unit = Proxy(harness, monkeypatch)
    yield unit
    assert vnf.unexpected == []
    seen = "\n".join(unit.texts() + [r.getMessage() for r in caplog.records])
    for private in vnf.private_keys():
        assert private not in seen, "a private key of the VNF left it"
    harness.cleanup()


@pytest.fixture
def ready(proxy, vnf):
    """The unit with its own SSH key, injected into the VNF (as OSM does), and configured."""
    assert proxy.act("generate-ssh-key").results == {"generated": "true"}
    vnf.authorize(proxy.charm.keystore.public_key())
    proxy.configure(**CONFIG)
    return proxy
