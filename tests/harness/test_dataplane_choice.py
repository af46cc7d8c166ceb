"""The data-plane choice (``<ep>-implementation``) under Harness: what is refused in the charm,
which shipped program the VNF is sent and when (once, only where a device needs it), and what
the status says (issue 30)."""
import hashlib
import json

import pytest
from harness_helpers import peer_data

from vpnaas.vnf import dataplane


@pytest.fixture
def programs(tmp_path, monkeypatch):
    """A charm folder with both programs (any bytes: the fake VNF checks only their digest)."""
    folder = tmp_path / "dataplane"
    folder.mkdir()
    doc = {"programs": {}}
    for impl, filename in dataplane.PROGRAMS.items():
        data = "#!/bin/sh\necho {} 9.9.{}\n".format(impl, len(impl)).encode()
        (folder / filename).write_bytes(data)
        doc["programs"][impl] = {"sha256": hashlib.sha256(data).hexdigest(), "version": "9.9"}
    (folder / dataplane.MANIFEST).write_text(json.dumps(doc))
    monkeypatch.setattr(dataplane, "charm_folder", lambda _charm_dir: str(folder))
    return doc["programs"]


def test_boringtun_not_shipped_blocks_and_applies_nothing(ready, vnf):
    ready.relate("vpn", "b/0", peer_data())
    starts = vnf.devices["wg-vpn"].starts
    steps = len(vnf.steps)
    ready.configure(**{"vpn-implementation": "boringtun"})
    assert ready.status.name == "blocked"
    assert "vpn-implementation: boringtun not shipped with this charm" in ready.status.message
    assert len(vnf.steps) == steps and vnf.devices["wg-vpn"].starts == starts


@pytest.mark.parametrize("value", ["boringtun\nkernel", "boringtun ", " auto", "BoringTun", "userspace",
                                   "wireguard-go;id", "kernel\x00", "x" * 2000])
def test_a_hostile_or_unknown_value_blocks_and_applies_nothing(ready, vnf, value):
    ready.relate("vpn", "b/0", peer_data())
    steps = len(vnf.steps)
    ready.configure(**{"vpn-implementation": value})
    assert ready.status.name == "blocked"
    assert "vpn-implementation: " in ready.status.message and "is not one of auto, kernel, wireguard-go, boringtun" \
        in ready.status.message
    assert all(" " <= ch <= "~" for ch in ready.status.message)
    assert len(vnf.steps) == steps


def test_a_shipped_program_is_installed_once_and_only_where_a_device_needs_it(ready, vnf, programs):
    ready.relate("vpn", "b/0", peer_data())
    # auto on a kernel with WireGuard: no WireGuard program; the pq-psk daemon for the pq-psk peer
    assert vnf.installs == ["pq-psk"]
    assert vnf.devices["wg-vpn"].implementation == "kernel"
    ready.configure(**{"vpn-implementation": "boringtun"})
    assert vnf.installs == ["pq-psk", "boringtun"]
    assert vnf.programs == {"boringtun": programs["boringtun"]["sha256"], "pq-psk": programs["pq-psk"]["sha256"]}
    assert vnf.devices["wg-vpn"].implementation == "boringtun"
    assert ready.status.name == "active"
    assert "data plane boringtun v1: vpn" in ready.status.message
    starts = vnf.devices["wg-vpn"].starts
    ready.harness.charm.on.update_status.emit()
    assert vnf.installs == ["pq-psk", "boringtun"] and vnf.devices["wg-vpn"].starts == starts


def test_switching_back_recreates_the_device_and_the_same_choice_never_does(ready, vnf, programs):
    ready.relate("vpn", "b/0", peer_data())
    ready.configure(**{"vpn-implementation": "boringtun"})
    starts = vnf.devices["wg-vpn"].starts
    ready.configure(**{"vpn-implementation": "boringtun", "persistent-keepalive": 15})
    assert vnf.devices["wg-vpn"].starts == starts           # a peer setting: syncconf, not a new device
    ready.configure(**{"vpn-implementation": "kernel"})
    assert vnf.devices["wg-vpn"].starts == starts + 1 and vnf.devices["wg-vpn"].implementation == "kernel"
    assert "data plane" not in ready.status.message          # the kernel module: nothing to say


def test_auto_on_a_vnf_without_the_kernel_module_gets_the_shipped_wireguard_go(ready, vnf, programs):
    vnf.kernel_wireguard = False
    ready.relate("vpn", "b/0", peer_data())
    assert vnf.installs == ["pq-psk", "wireguard-go"]
    assert vnf.devices["wg-vpn"].implementation == "wireguard-go"
    assert "data plane wireguard-go v1: vpn" in ready.status.message


def test_kernel_on_a_vnf_without_the_module_blocks_on_that_device(ready, vnf, programs):
    vnf.kernel_wireguard = False
    ready.relate("vpn", "b/0", peer_data())
    ready.configure(**{"vpn-implementation": "kernel"})
    assert ready.status.name == "blocked"
    assert "vpn: failed: kernel is not available on the VNF" in ready.status.message
