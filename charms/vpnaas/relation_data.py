"""The relation data codec: a unit's own fields encoded for its databag, and a remote unit's
decoded through the strict grammar (nothing from a related unit is trusted). The interface
itself (the fields, who writes them, what they mean) is specified in tunnel_relation.py's
docstring, and only there.
"""
import ipaddress
from typing import Any, Dict, List, Optional, Set, Tuple

from vpnaas import ROTATION_PROTOCOL, SCHEMA_VERSION, validation
from vpnaas.model import MANUAL, Device, PeerRotation, Rotation
from vpnaas.validation import Interface, Network

KEYS = ("vpnaas-schema", "public-key", "endpoint", "tunnel-address", "service-prefixes")
WANTS_PEER_KEYS = "wants-peer-keys"
PEER_KEYS = "peer-keys"
ROTATION_PROTOCOL_KEY = "rotation-protocol"
NEXT_KEY = "next-key"
NEXT_ENDPOINT = "next-endpoint"
NEXT_PEER_KEYS = "next-peer-keys"
#: The fields of make-before-break key rotation (optional: an earlier release neither writes
#: nor reads them, and its peers rotate in place).
ROTATION_KEYS = (ROTATION_PROTOCOL_KEY, NEXT_KEY, NEXT_ENDPOINT, NEXT_PEER_KEYS)
#: Every field a unit writes (what a dropped hook commit can lose: relation_cache).
PUBLISHED = KEYS + (WANTS_PEER_KEYS, PEER_KEYS) + ROTATION_KEYS
_YES = "yes"


class PeerInfo(object):
    __slots__ = ("unit", "public_key", "endpoint", "tunnel_address", "service_prefixes", "wants_peer_keys",
                 "rotation")

    def __init__(self, unit: str, public_key: str, endpoint: Tuple[str, int], tunnel_address: Interface,
                 service_prefixes: List[Network], wants_peer_keys: bool = False,
                 rotation: Optional[PeerRotation] = None) -> None:
        self.unit = unit
        self.public_key = public_key
        self.endpoint = endpoint              # (host, port)
        self.tunnel_address = tunnel_address  # ipaddress interface
        self.service_prefixes = service_prefixes  # list of networks
        self.wants_peer_keys = wants_peer_keys
        self.rotation = rotation or PeerRotation()

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
        raise validation.InvalidValue("{} speaks relation schema {}; this charm speaks '{}' (upgrade both charms)"
                                      .format(unit, validation.excerpt(schema), SCHEMA_VERSION))
    endpoint = validation.endpoint(data["endpoint"], "{} endpoint".format(unit))
    return PeerInfo(
        unit=unit,
        public_key=validation.public_key(data["public-key"], "{} public-key".format(unit)),
        endpoint=endpoint,
        tunnel_address=validation.interface_address(data["tunnel-address"], "{} tunnel-address".format(unit)),
        service_prefixes=validation.prefix_list(data.get("service-prefixes", ""),
                                                "{} service-prefixes".format(unit)),
        wants_peer_keys=_flag(data.get(WANTS_PEER_KEYS, ""), "{} {}".format(unit, WANTS_PEER_KEYS)),
        rotation=_rotation(unit, data, endpoint[0]),
    )


class Reading(object):
    """What ``decode`` made of one remote unit's databag: its data, or why there is none
    (``incomplete``: it has not published everything yet; ``invalid``: the grammar refused it).
    A reading can be kept (``as_dict``) and restored (``from_dict``) without the databag: the
    unit's relation memory keeps it across hooks, keyed by the digest of the databag it came from."""
    __slots__ = ("unit", "info", "incomplete", "invalid")

    def __init__(self, unit: str, info: Optional[PeerInfo] = None, incomplete: str = "", invalid: str = "") -> None:
        self.unit, self.info, self.incomplete, self.invalid = unit, info, incomplete, invalid

    def as_dict(self) -> Dict[str, Any]:
        info = self.info
        if info is None:
            return {"incomplete": self.incomplete} if self.incomplete else {"invalid": self.invalid}
        rot = info.rotation
        return {"public-key": info.public_key, "endpoint": [info.endpoint[0], info.endpoint[1]],
                "tunnel-address": str(info.tunnel_address),
                "service-prefixes": [str(p) for p in info.service_prefixes], "wants-peer-keys": info.wants_peer_keys,
                "rotation": {"protocol": rot.protocol, "next-key": rot.next_key, "next-endpoint": rot.next_endpoint,
                             "next-peer-keys": sorted(rot.next_peer_keys), "peer-keys": sorted(rot.peer_keys)}}

    @classmethod
    def from_dict(cls, unit: str, doc: Any) -> "Reading":
        """A kept reading, rebuilt; ValueError (KeyError, TypeError) when ``doc`` is not one that
        ``as_dict`` wrote. The values were the grammar's output when kept: only their types are
        rebuilt here (the memory is the unit's own state, and is dropped whole when it was made by
        another grammar: relation_memory)."""
        if not isinstance(doc, dict):
            raise ValueError("not a reading")
        for kind in ("incomplete", "invalid"):
            if kind in doc:
                if not isinstance(doc[kind], str):
                    raise ValueError("not a reading")
                return cls(unit, **{kind: doc[kind]})
        host, port = doc["endpoint"]
        rot = doc["rotation"]
        strings = [doc["public-key"], host, rot["next-key"], rot["next-endpoint"]] + list(rot["next-peer-keys"]) \
            + list(rot["peer-keys"])
        if not all(isinstance(v, str) for v in strings) or not isinstance(port, int) or \
                not all(isinstance(v, bool) for v in (doc["wants-peer-keys"], rot["protocol"])):
            raise ValueError("not a reading")
        return cls(unit, PeerInfo(
            unit, doc["public-key"], (host, port), ipaddress.ip_interface(doc["tunnel-address"]),
            [ipaddress.ip_network(p) for p in doc["service-prefixes"]], doc["wants-peer-keys"],
            PeerRotation(rot["protocol"], rot["next-key"], rot["next-endpoint"], rot["next-peer-keys"],
                         rot["peer-keys"])))


def read(unit: str, data: Dict[str, str]) -> Reading:
    """``decode``, with what it refused or misses as a value."""
    try:
        return Reading(unit, decode(unit, data))
    except Incomplete as e:
        return Reading(unit, incomplete=str(e))
    except validation.InvalidValue as e:
        return Reading(unit, invalid=str(e))


def _rotation(unit: str, data: Dict[str, str], host: str) -> PeerRotation:
    """The rotation fields, each through the grammar whatever the protocol version (a value that
    is not one of them is refused, not skipped). A protocol this release does not speak (a later
    one) counts as none: that peer is followed in place."""
    def what(key: str) -> str:
        return "{} {}".format(unit, key)
    version = validation.protocol_version(data.get(ROTATION_PROTOCOL_KEY, ""), what(ROTATION_PROTOCOL_KEY))
    next_key = data.get(NEXT_KEY, "")
    if next_key:
        next_key = validation.public_key(next_key, what(NEXT_KEY))
    next_endpoint = data.get(NEXT_ENDPOINT, "")
    if next_endpoint:
        next_host, port = validation.endpoint(next_endpoint, what(NEXT_ENDPOINT))
        # The same underlay address, another port: everything the policy checked about the
        # unit's endpoint holds for it too.
        if next_host != host:
            raise validation.InvalidValue("{}: {} is not on the host of its endpoint {}".format(
                what(NEXT_ENDPOINT), validation.excerpt(next_endpoint), host))
        next_endpoint = validation.format_endpoint(next_host, port)
    return PeerRotation(
        protocol=str(version) == ROTATION_PROTOCOL, next_key=next_key, next_endpoint=next_endpoint,
        next_peer_keys=validation.public_key_list(data.get(NEXT_PEER_KEYS, ""), what(NEXT_PEER_KEYS)),
        peer_keys=validation.public_key_list(data.get(PEER_KEYS, ""), what(PEER_KEYS)))


def _flag(value: str, what: str) -> bool:
    """``yes`` or absent: anything else is refused, not read as either."""
    if value in ("", _YES):
        return value == _YES
    raise validation.InvalidValue("{}: {} is not 'yes' (or absent)".format(what, validation.excerpt(value)))


def publication(device: Device, public_key: str, units: Optional[Set[str]] = None,
                wants_peer_keys: bool = False, rotation: Optional[Rotation] = None,
                temp_key: str = "") -> Dict[str, str]:
    """This unit's databag for ``device`` on a relation whose remote units are ``units``
    (None: every related peer of the device); ``wants_peer_keys`` is this unit's own flag;
    ``rotation`` the device's key rotation in the plan and ``temp_key`` the public key of its
    temporary device. An empty value means "not there": writing it removes the key (Juju's rule)."""
    bag = encode(public_key, device.publish_host, device.listen_port, device.address, device.service_prefixes())
    bag[WANTS_PEER_KEYS] = _YES if wants_peer_keys else ""

    def ours(p: Any) -> bool:
        return p.source != MANUAL and (units is None or p.source in units)
    # Tells a peer that waits for its tunnels that its key is configured here, so its charm wakes
    # up right when the tunnel can handshake (e.g. to start a service). Only the keys of that
    # relation's units (a hub with k spokes must not wake all k when one joins), and only to units
    # that asked: to any other unit it is one more relation-changed hook for nothing. A unit that
    # rotates its key is told the same way when its new key is in place here (rotation.py).
    bag[PEER_KEYS] = ",".join(sorted(p.public_key for p in device.peers if ours(p)
                                     and (p.wants_peer_keys or p.rotation.owner_stage(p.public_key))))
    rot = rotation or Rotation()
    # A temporary device is offered only once the VNF reported its key (it is up).
    temp = rot.temp if temp_key else None
    bag[ROTATION_PROTOCOL_KEY] = ROTATION_PROTOCOL if rot.available else ""
    bag[NEXT_KEY] = temp_key if rot.stage and temp is not None else ""
    bag[NEXT_ENDPOINT] = validation.format_endpoint(device.publish_host, temp.listen_port) if temp else ""
    bag[NEXT_PEER_KEYS] = ",".join(sorted(key for unit, key in rot.advertised.items()
                                          if temp is not None and (units is None or unit in units)))
    return bag
