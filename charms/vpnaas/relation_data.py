"""The relation data codec: a unit's own fields encoded for its databag, and a remote unit's
decoded through the strict grammar (nothing from a related unit is trusted). The interface
itself (the fields, who writes them, what they mean) is specified in tunnel_relation.py's
docstring, and only there.
"""
from typing import Dict, List, Optional, Set, Tuple

from vpnaas import SCHEMA_VERSION, validation
from vpnaas.model import MANUAL, Device
from vpnaas.validation import Interface, Network

KEYS = ("vpnaas-schema", "public-key", "endpoint", "tunnel-address", "service-prefixes")
WANTS_PEER_KEYS = "wants-peer-keys"
PEER_KEYS = "peer-keys"
#: Every field a unit writes (what a dropped hook commit can lose: relation_cache).
PUBLISHED = KEYS + (WANTS_PEER_KEYS, PEER_KEYS)
_YES = "yes"


class PeerInfo(object):
    __slots__ = ("unit", "public_key", "endpoint", "tunnel_address", "service_prefixes", "wants_peer_keys")

    def __init__(self, unit: str, public_key: str, endpoint: Tuple[str, int], tunnel_address: Interface,
                 service_prefixes: List[Network], wants_peer_keys: bool = False) -> None:
        self.unit = unit
        self.public_key = public_key
        self.endpoint = endpoint              # (host, port)
        self.tunnel_address = tunnel_address  # ipaddress interface
        self.service_prefixes = service_prefixes  # list of networks
        self.wants_peer_keys = wants_peer_keys

    def allowed_ips(self) -> List[Network]:
        host = self.tunnel_address.ip
        own = validation.prefix("{}/{}".format(host, host.max_prefixlen))
        return [own] + [p for p in self.service_prefixes if p != own]


def encode(public_key: str, endpoint_host: str, endpoint_port: int, tunnel_address: Interface,
           service_prefixes: List[Network]) -> Dict[str, str]:
    """The databag content for one endpoint. Inputs are already validated values."""
    return {
        "vpnaas-schema": SCHEMA_VERSION,
        "public-key": public_key,
        "endpoint": validation.format_endpoint(endpoint_host, endpoint_port),
        "tunnel-address": str(tunnel_address),
        "service-prefixes": ",".join(str(p) for p in service_prefixes),
    }


class Incomplete(Exception):
    """The remote unit has not published everything yet (normal while it starts)."""


def decode(unit: str, data: Dict[str, str]) -> PeerInfo:
    """Validate a remote unit's databag. Raises Incomplete or validation.InvalidValue."""
    missing = [k for k in KEYS if k != "service-prefixes" and not data.get(k)]
    if missing:
        raise Incomplete("{} has not published {} yet".format(unit, ", ".join(missing)))
    schema = data["vpnaas-schema"]
    if schema != SCHEMA_VERSION:
        raise validation.InvalidValue("{} speaks relation schema {!r}; this charm speaks {!r} (upgrade both charms)"
                                      .format(unit, schema, SCHEMA_VERSION))
    return PeerInfo(
        unit=unit,
        public_key=validation.public_key(data["public-key"], "{} public-key".format(unit)),
        endpoint=validation.endpoint(data["endpoint"], "{} endpoint".format(unit)),
        tunnel_address=validation.interface_address(data["tunnel-address"], "{} tunnel-address".format(unit)),
        service_prefixes=validation.prefix_list(data.get("service-prefixes", ""),
                                                "{} service-prefixes".format(unit)),
        wants_peer_keys=_flag(data.get(WANTS_PEER_KEYS, ""), "{} {}".format(unit, WANTS_PEER_KEYS)),
    )


def _flag(value: str, what: str) -> bool:
    """``yes`` or absent: anything else is refused, not read as either."""
    if value in ("", _YES):
        return value == _YES
    raise validation.InvalidValue("{}: {} is not 'yes' (or absent)".format(what, validation.excerpt(value)))


def publication(device: Device, public_key: str, units: Optional[Set[str]] = None,
                wants_peer_keys: bool = False) -> Dict[str, str]:
    """This unit's databag for ``device`` on a relation whose remote units are ``units``
    (None: every related peer of the device); ``wants_peer_keys`` is this unit's own flag.
    An empty value means "not there": writing it removes the key (Juju's rule)."""
    bag = encode(public_key, device.publish_host, device.listen_port, device.address, device.service_prefixes())
    bag[WANTS_PEER_KEYS] = _YES if wants_peer_keys else ""
    # Tells a peer that waits for its tunnels that its key is configured here, so its charm wakes
    # up right when the tunnel can handshake (e.g. to start a service). Only the keys of that
    # relation's units (a hub with k spokes must not wake all k when one joins), and only to units
    # that asked: to any other unit it is one more relation-changed hook for nothing.
    bag[PEER_KEYS] = ",".join(sorted(p.public_key for p in device.peers if p.source != MANUAL and p.wants_peer_keys
                                     and (units is None or p.source in units)))
    return bag
