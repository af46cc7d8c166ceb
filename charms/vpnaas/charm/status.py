"""The unit status of the tunnels, from the plan and what the VNF reported (ops' status types only)."""
from typing import Dict, List

from ops.model import ActiveStatus, BlockedStatus, StatusBase, WaitingStatus

from vpnaas.core import model, rotation
from vpnaas.vnf import remote


def tunnel_status(plan: model.Plan, obs: remote.Observation) -> StatusBase:
    """The unit status the tunnels alone give: per device, up with its handshake age, waiting for a
peer, or what is refused or failed (Blocked); then what the VNF runs (the userspace WireGuard
programs per endpoint, no boot persistence)."""
    parts, waiting, blocked = [], False, []
    refused: Dict[str, list] = {}
    for dev_name, prefix, reason in obs.refused:
        refused.setdefault(dev_name, []).append("route {} refused on the VNF: {}".format(prefix, reason))
    for dev in plan.devices:
        label = dev.endpoint
        if dev.name in obs.failed:
            parts.append("{}: failed: {}".format(label, obs.failed[dev.name][:120]))
            blocked.append(label)
            continue
        if not obs.up.get(dev.name):
            parts.append("{}: down".format(label))
            blocked.append(label)
            continue
        temp = rotation.temp_name(dev.name)
        if temp in obs.failed:
            # The key rotation cannot go on: its temporary device is offered to nobody.
            parts.append("{}: {} failed: {}".format(label, temp, obs.failed[temp][:120]))
            blocked.append(label)
        problems = dev.problems + refused.get(dev.name, [])
        if problems:
            blocked.append(label)
            more = "; and {} more".format(len(problems) - 3) if len(problems) > 3 else ""
            parts.append("{}: {}{}".format(label, "; ".join(problems[:3]), more))
        if not dev.peers:
            waiting = True
            parts.append("{}: {}".format(label, dev.waiting[0] if dev.waiting else "waiting for peer key"))
            continue
        ages = [p.get("latest-handshake-age") for p in obs.peers.get(dev.name, [])]
        known = [a for a in ages if a is not None]
        note = rotation.describe(plan.rotation[dev.name]) if dev.name in plan.rotation else ""
        note = " ({})".format(note) if note else ""
        if ages and len(known) == len(ages):
            parts.append("{}: up, handshake {}s ago{}".format(label, max(known), note))
        else:
            parts.append("{}: up, no handshake yet{}".format(label, note))
    if not plan.devices:
        parts.append("ready, no tunnel related")
    notes = [why for dev in plan.devices for why in dev.pq_psk_classical()] + pq_psk_notes(plan, obs)
    dataplane = dataplane_note(plan, obs)
    if dataplane:
        notes.append(dataplane)
    if obs.init != "systemd":
        notes.append("no boot persistence (no systemd)")
    if obs.metrics.startswith("failed"):
        notes.append("metrics exporter {}".format(obs.metrics[:120]))
    notes += ["slice QoS {}".format(q[:120]) for q in obs.qos if q.startswith("failed")]
    message = ", ".join(parts) + ("; " + "; ".join(notes) if notes else "")
    if blocked:
        return BlockedStatus(message)
    if waiting:
        return WaitingStatus(message)
    return ActiveStatus(message)


def dataplane_note(plan: model.Plan, obs: remote.Observation) -> str:
    """The data plane of the endpoints, grouped by implementation ("boringtun 0.7.1: s1c, s11;
    wireguard-go v0.0.20250522: s6a"); nothing when every device runs on the kernel module, the
    default that needs no mention."""
    groups: Dict[str, List[str]] = {}
    for dev in plan.devices:
        impl = obs.dataplane.get(dev.name)
        if impl is not None:
            groups.setdefault("{} {}".format(*impl), []).append(dev.endpoint)
    if all(key.startswith("kernel ") for key in groups):
        return ""
    return "data plane " + "; ".join("{}: {}".format(key, ", ".join(eps)) for key, eps in sorted(groups.items()))


def pq_psk_notes(plan: model.Plan, obs: remote.Observation) -> List[str]:
    """What is wrong with pq-psk: the daemon could not be started, or a peer that advertises it has
    not completed an exchange (its tunnel stays on the last agreed PSK, or classical before the
    first). Nothing while every exchange completes."""
    if obs.pq_psk.startswith("failed"):
        return ["pq-psk {}".format(obs.pq_psk[:120])]
    out = []
    for dev in plan.devices:
        for peer in dev.pq_psk_peers():
            st = obs.pq_peers.get((dev.name, peer.public_key))
            if st is not None and st["state"] == "failing":
                what = "classical only" if st["epoch"] == 0 else "on the PSK of epoch {}".format(st["epoch"])
                out.append("{}: pq-psk with {} does not complete ({})".format(dev.endpoint, peer.source, what))
    return out
