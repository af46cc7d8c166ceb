"""The tunnels' metrics: what the charm tells the VNF's exporter (``vnf/wg-exporter.py``).

The exporter reads WireGuard's own counters on the VNF at scrape time; only the charm knows
which unit a peer's public key belongs to, which reference point a device serves and which
prefixes its route policy refused. ``labels_document`` is that knowledge, written by the tunnel
step (``vnf/metrics.sh``) to /etc/wireguard/vpnaas-metrics.json at every reconcile. Every value
in it passed the strict grammar: device and reference point names are the charm's own, public
keys were validated when the peer was read, and unit names -- they come with the relation, like
its data -- must be Juju unit names (``validation.unit_name``); one that is not becomes
``invalid:<digest>``, so it can neither forge another unit's series nor carry text into a label.
Nothing secret is in it (public keys and unit names only). Pure: no ops, no SSH.
"""
import hashlib
import json
from typing import Any, Dict, List

from vpnaas.core import refpoints, validation
from vpnaas.core.model import MANUAL, Plan
from vpnaas.vnf import vnfscript

#: The exporter's port: 9586 is the WireGuard exporter's entry in Prometheus' list of default
#: exporter ports. The VNFDs' ``exporters-endpoints.metric-port`` must be the same.
DEFAULT_PORT = 9586
METRIC_PATH = "/metrics"
EXPORTER = "wg-exporter.py"
#: What the exporter serves: read and rendered by this program, installed beside the exporter.
COLLECTOR = "wg-collect.py"
LABELS_SCHEMA = 1


def peer_label(source: str, public_key: str = "") -> str:
    """The ``peer`` label of a peer: its unit name; ``manual:<key start>`` for an operator's
    add-peer peer; ``invalid:<digest>`` for a unit name that is not one."""
    if source == MANUAL:
        return "manual:" + public_key[:8] if public_key else MANUAL
    try:
        return validation.unit_name(source, "remote unit")
    except validation.InvalidValue:
        return "invalid:" + hashlib.sha256(source.encode("utf-8", "replace")).hexdigest()[:12]


def labels_document(plan: Plan) -> Dict[str, Any]:
    """{"schema", "osm": {ns_id, vnf_member_index, vdu_id} (empty when OSM did not say),
    "devices": [{device, refpoint, plane, peers: [{public-key, peer, allowed-ips}],
    refused: [{peer, prefix}]}]} for the exporter. ``plane`` is the registry's (user, control; ""
    for a generic endpoint): a user-plane tunnel down is a critical alert."""
    devices: List[Dict[str, Any]] = []
    for dev in plan.devices:
        devices.append({
            "device": dev.name,
            "refpoint": dev.endpoint,
            "plane": refpoints.plane(dev.endpoint),
            "peers": [{"public-key": p.public_key, "peer": peer_label(p.source, p.public_key),
                       "allowed-ips": [str(n) for n in p.allowed_ips]} for p in dev.peers],
            "refused": [{"peer": peer_label(source), "prefix": prefix}
                        for source, prefix in sorted(set(dev.refused_prefixes))],
        })
    osm = dict(plan.config.osm_labels) if plan.config is not None else {}
    return {"schema": LABELS_SCHEMA, "osm": osm, "devices": devices}


def add_to_step(step: vnfscript.Step, plan: Plan) -> None:
    """The exporter, its labels and the call that keeps it running (port 0: removed)."""
    port = plan.config.metrics_port if plan.config is not None else DEFAULT_PORT
    if port:
        step.text("METRICS_EXPORTER", vnfscript.load(EXPORTER))
        step.text("METRICS_COLLECT", vnfscript.load(COLLECTOR))
        step.text("METRICS_LABELS", json.dumps(labels_document(plan), sort_keys=True))
    step.call("metrics_apply", port)
