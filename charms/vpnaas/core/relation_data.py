"""The tunnel relation interface ``wireguard[-<reference point>]``: its version, its fields and
their schema, and its codec (a unit's own databag encoded, a remote unit's decoded through the
strict grammar: nothing from a related unit is trusted). The one module of the interface, after
the charm libraries' shape (``LIBAPI``/``LIBPATCH``, ``Provider``/``Requirer``, a schema).

Versions. ``LIBAPI`` is the schema version on the wire (``vpnaas-schema``: a reader refuses
another). ``LIBPATCH`` counts the optional fields added to it (``FIELDS``: each names the patch
that added it); a unit of a lower patch ignores the fields it does not know, and its peers treat
the absence of one as that unit's old behaviour. A change that a unit of the previous patch
cannot read is a new ``LIBAPI``, never a patch.

Usage (both sides publish and read the same fields; ``charm/tunnel_relation.py`` does this on
ops' model)::

    from vpnaas.core import relation_data
    side = relation_data.side(endpoint.role)            # Provider() or Requirer()
    address = side.default_tunnel_address(network)      # first or second host
    bag = relation_data.publication(device, public_key, units, wants_peer_keys, rotation, temp_key)
    reading = relation_data.read(unit, remote_bag)       # .info, or why not: .incomplete, .invalid
    relation_data.json_schema()                          # the databag as JSON Schema (draft 7)

Interface (schema version 1, ``vpnaas-schema``). Each unit writes its publication into its own
unit databag, one per relation; an application's databag holds only the mirror (below). Both sides publish the same
fields, so the interface is symmetric; provider and requirer differ only in the default tunnel
address (first and second host of the reference point's tunnel network).

| field               | written by      | meaning                                                         |
|---------------------|-----------------|-----------------------------------------------------------------|
| `vpnaas-schema`     | each unit       | "1"; a reader refuses data of another version (Blocked)         |
| `public-key`        | each unit       | WireGuard public key of its device for this endpoint            |
| `endpoint`          | each unit       | underlay `host:port` the peer sends to                          |
| `tunnel-address`    | each unit       | its device's address/prefix inside the tunnel                   |
| `service-prefixes`  | each unit       | comma-separated prefixes behind it (subject to the peer's policy) |
| `wants-peer-keys`   | waiting units   | "yes" when its component waits for its tunnels; absent otherwise |
| `peer-keys`         | each unit       | keys of that relation's units it has configured as peers, written |
|                     |                 | only for units that published `wants-peer-keys` or `next-key`   |
| `rotation-protocol` | each unit       | "1": it rotates and follows rotations make-before-break; absent |
|                     |                 | (an earlier release): its peers rotate in place                 |
| `next-key`          | rotating units  | the new key, on its temporary device, while its rotation runs   |
| `next-endpoint`     | rotating and    | `host:port` of its temporary device (same host as `endpoint`),  |
|                     | following units | while it runs one                                               |
| `next-peer-keys`    | rotating and    | keys of that relation's units its temporary device accepts and  |
|                     | following units | that may route to it through that device                       |
| `pq-psk`            | each unit       | "1": its VNF runs the pq-psk daemon on this device (a post-     |
|                     |                 | quantum PSK, exchanged over the tunnel itself); absent: an      |
|                     |                 | earlier release or pq-psk off, the tunnel stays classical       |
| `generation`        | each unit       | a number that grows with every change of its other fields       |
|                     |                 | (patch 4); absent: an earlier release (generation 0)            |

Mirror (patch 4; docs/architecture.md, "The hub's application-data mirror"). Juju 2.9's unit agent
hands a hook a remote unit's data as it cached it at its first read (refreshed only by a hook about
that unit), but a remote application's data afresh in every hook. A unit with several relations on
one endpoint (a hub), as its application's leader, writes ``mirror-request: "1"`` in its
application's bag on each of them; the leader of a remote application that reads it writes, in
its own application's bag on that relation, its unit's publication as Juju holds it (generation
included) and ``mirror-of: <unit>``. The reader takes a mirror through this grammar, only where
the remote application has one unit on that relation and the mirror names it, complete and of a
newer generation than what it has (``read_mirror``), and never plans with an older publication of
a unit than one it planned with (``newest``), except in a hook about that unit, whose data Juju
hands afresh. A generation above the reader's clock plus a day is not trusted
(``generation_limit``). Nobody else writes an application bag: a unit with one relation per
endpoint writes none, and its peers see no application-data hook.

A unit publishes all fields at once, when its key exists on the VNF. A reader validates every
value of a remote unit (``decode``: nothing from a related unit is trusted, see
docs/security.md) and reports what is missing (Waiting, naming the unit) or invalid (Blocked).
``peer-keys`` wakes the peer (Juju runs its relation-changed) the moment the tunnel can
handshake. A unit asks for it with ``wants-peer-keys`` when its
charm has a component that waits for its tunnels (the OAI charms: a service starts once its
tunnels have a handshake); a plain tunnel charm does not, and gets no such hook, so that a hub
related to k spokes runs k fewer hooks, and so does each spoke. A unit of an earlier charm
revision, which never asks, still gets its peers' tunnels; only a start waiting for them
happens at the next update-status instead.

Key rotation (core/rotation.py; the phases: docs/lifecycle.md). ``rotate-keys`` on a unit whose
related units publish ``rotation-protocol`` makes the new key on a temporary device ``wr-<ep>``
(a second listen port) and publishes it as ``next-key``; each such unit follows with a
temporary device of its own that accepts the new key, and both move their routes onto that
path (``next-peer-keys`` says it is accepted), the rotating unit's main device takes the new key,
``public-key`` becomes it, the peers put it on their main devices (``peer-keys`` says so), the
routes move back, and the temporary devices go. The ``rotation-*`` and ``next-*`` fields are
optional additions, not a new schema: a unit of an earlier release ignores them and rotates in
place, and its peers follow it the way they always did (a break of one relation round trip).
No unit holds another up for long: a unit follows a rotation, and waits for its partners in its
own, for a bounded time kept in its own state (rotation.py, ``DEADLINE``), after which the unit
that did not finish is followed in place. The acknowledgements (``next-peer-keys``,
``peer-keys``) name the rotation's new key, a fresh key per rotation: one cannot acknowledge
another rotation, and every release that speaks ``rotation-protocol`` rewrites them whenever it
publishes (docs/lifecycle.md, "Version skew").
They are hostile input like every other field: a key or an endpoint that does not pass the
grammar refuses the unit (Blocked), and a ``next-key`` is a key the unit claims on this VNF like
its ``public-key`` (it may be neither this VNF's nor another unit's).
"""

import ipaddress
import re
import time
from typing import Any, Dict, List, NamedTuple, Optional, Set, Tuple

from vpnaas.core import config, validation
from vpnaas.core.model import MANUAL, Device, PeerRotation, Rotation
from vpnaas.core.validation import Interface, Network

#: The schema version: ``vpnaas-schema`` on the wire.
LIBAPI = 1
#: The optional additions to it so far (see ``FIELDS``).
LIBPATCH = 4
SCHEMA_VERSION = str(LIBAPI)
#: The make-before-break key rotation this release speaks (``rotation-protocol``; rotation.py).
#: Optional fields an earlier release ignores: a peer without them rotates in place, as before.
ROTATION_PROTOCOL = "1"
#: The post-quantum PSK protocol this release speaks (``pq-psk``; the pq-psk daemon, docs/security.md).
PQ_PSK_PROTOCOL = "1"


class Field(NamedTuple):
    """One field of a unit's databag: its name, whether a reader needs it, the patch of
    ``LIBAPI`` that added it, the grammar its value passes (``validation``; for JSON Schema: the
    largest length and the values it takes, where they are few)."""
    name: str
    required: bool
    patch: int
    grammar: str
    max_length: int
    values: Tuple[str, ...] = ()


_KEY = 44            # a WireGuard public key: 32 bytes in base64
_ENDPOINT = 255 + 8  # a host (name or address) and ":port", IPv6 in brackets
_KEYS = 1024 * (_KEY + 1)
#: The interface's schema, in the order a unit writes the fields (which is also the order of the
#: digests the relation cache keeps: never reorder).
FIELDS = (
    Field("vpnaas-schema", True, 0, "the schema version", 8, (SCHEMA_VERSION,)),
    Field("public-key", True, 0, "validation.public_key", _KEY),
    Field("endpoint", True, 0, "validation.endpoint", _ENDPOINT),
    Field("tunnel-address", True, 0, "validation.interface_address", 64),
    Field("service-prefixes", False, 0, "validation.prefix_list", 64 * 1024),
    Field("wants-peer-keys", False, 1, "'yes' or absent", 3, ("yes", "")),
    Field("peer-keys", False, 1, "validation.public_key_list", _KEYS),
    Field("rotation-protocol", False, 2, "validation.protocol_version", 8),
    Field("next-key", False, 2, "validation.public_key", _KEY),
    Field("next-endpoint", False, 2, "validation.endpoint, on the host of endpoint", _ENDPOINT),
    Field("next-peer-keys", False, 2, "validation.public_key_list", _KEYS),
    Field("pq-psk", False, 3, "validation.protocol_version", 8),
    Field("generation", False, 4, "a decimal number, 1 to 20 digits", 20),
)
KEYS = tuple(f.name for f in FIELDS if f.patch == 0)
WANTS_PEER_KEYS = "wants-peer-keys"
PEER_KEYS = "peer-keys"
ROTATION_PROTOCOL_KEY = "rotation-protocol"
NEXT_KEY = "next-key"
NEXT_ENDPOINT = "next-endpoint"
NEXT_PEER_KEYS = "next-peer-keys"
PQ_PSK_KEY = "pq-psk"
GENERATION = "generation"
#: The fields of make-before-break key rotation (optional: an earlier release neither writes
#: nor reads them, and its peers rotate in place).
ROTATION_KEYS = tuple(f.name for f in FIELDS if f.patch == 2)
#: Every field a unit writes but its generation, which it writes with any change of them (what a
#: dropped hook commit can lose, and what a unit reads back of its own: relation_cache).
PUBLISHED = tuple(f.name for f in FIELDS if f.name != GENERATION)
#: Every field a reading depends on (``read``).
READ = tuple(f.name for f in FIELDS)
_YES = "yes"


def json_schema() -> Dict[str, Any]:
    """A unit's databag as JSON Schema (draft 7): every value a string; what a reader needs is
    required; the bounds and the few fixed values of ``FIELDS``. Other keys are allowed (Juju
    puts its own, e.g. ``ingress-address``, into every unit databag). The grammar itself is
    ``decode``'s: the schema states the shape, the grammar decides."""
    props = {}  # type: Dict[str, Any]
    for f in FIELDS:
        prop = {"type": "string", "maxLength": f.max_length,
                "description": "{} (patch {})".format(f.grammar, f.patch)}  # type: Dict[str, Any]
        if f.values:
            prop["enum"] = list(f.values)
        props[f.name] = prop
    return {"$schema": "http://json-schema.org/draft-07/schema#",
            "title": "wireguard tunnel relation, unit databag, schema {} patch {}".format(LIBAPI, LIBPATCH),
            "type": "object", "properties": props,
            "required": [f.name for f in FIELDS if f.required], "additionalProperties": True}


class Side(object):
    """One side of a tunnel relation. Both publish and read the same fields (``publication``,
    ``read``); they differ only in their default tunnel address."""
    role = ""
    #: Which host of the reference point's tunnel network is its default tunnel address.
    host_index = 0

    def default_tunnel_address(self, network: Network) -> Interface:
        return config.default_tunnel_address(network, self.host_index)


class Provider(Side):
    """The charm whose metadata ``provides`` the endpoint (the registry's ``provider``)."""
    role = "provider"
    host_index = 0


class Requirer(Side):
    """The charm whose metadata ``requires`` the endpoint: at most one related unit there."""
    role = "requirer"
    host_index = 1


def side(role: str) -> Side:
    """The side of ``role`` ("provider" or "requirer")."""
    return {"provider": Provider, "requirer": Requirer}[role]()


class PeerInfo(object):
    __slots__ = ("unit", "public_key", "endpoint", "tunnel_address", "service_prefixes", "wants_peer_keys",
                 "rotation", "pq_psk")

    def __init__(self, unit: str, public_key: str, endpoint: Tuple[str, int], tunnel_address: Interface,
                 service_prefixes: List[Network], wants_peer_keys: bool = False,
                 rotation: Optional[PeerRotation] = None, pq_psk: bool = False) -> None:
        self.unit = unit
        self.public_key = public_key
        self.endpoint = endpoint              # (host, port)
        self.tunnel_address = tunnel_address  # ipaddress interface
        self.service_prefixes = service_prefixes  # list of networks
        self.wants_peer_keys = wants_peer_keys
        self.rotation = rotation or PeerRotation()
        self.pq_psk = pq_psk  # it runs pq-psk (a protocol this release speaks)

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
        # A protocol this release does not speak (a later one) counts as none: classical only.
        pq_psk=str(validation.protocol_version(data.get(PQ_PSK_KEY, ""), "{} {}".format(unit, PQ_PSK_KEY)))
        == PQ_PSK_PROTOCOL,
    )


class Reading(object):
    """What ``decode`` made of one remote unit's databag: its data, or why there is none
    (``incomplete``: it has not published everything yet; ``invalid``: the grammar refused it).
    A reading can be kept (``as_dict``) and restored (``from_dict``) without the databag: the
    unit's relation memory keeps it across hooks, keyed by the digest of the databag it came from."""
    __slots__ = ("unit", "info", "incomplete", "invalid", "generation")

    def __init__(self, unit: str, info: Optional[PeerInfo] = None, incomplete: str = "", invalid: str = "",
                 generation: int = 0) -> None:
        self.unit, self.info, self.incomplete, self.invalid = unit, info, incomplete, invalid
        #: The publication's ``generation`` (0: none, an earlier release's or a refused one).
        self.generation = generation

    def as_dict(self) -> Dict[str, Any]:
        info = self.info
        if info is None:
            return dict({"incomplete": self.incomplete} if self.incomplete else {"invalid": self.invalid},
                        generation=self.generation)
        rot = info.rotation
        return {"generation": self.generation,
                "public-key": info.public_key, "endpoint": [info.endpoint[0], info.endpoint[1]],
                "tunnel-address": str(info.tunnel_address),
                "service-prefixes": [str(p) for p in info.service_prefixes], "wants-peer-keys": info.wants_peer_keys,
                "rotation": {"protocol": rot.protocol, "next-key": rot.next_key, "next-endpoint": rot.next_endpoint,
                             "next-peer-keys": sorted(rot.next_peer_keys), "peer-keys": sorted(rot.peer_keys)},
                "pq-psk": info.pq_psk}

    @classmethod
    def from_dict(cls, unit: str, doc: Any) -> "Reading":
        """A kept reading, rebuilt; ValueError (KeyError, TypeError) when ``doc`` is not one that
        ``as_dict`` wrote. The values were the grammar's output when kept: only their types are
        rebuilt here (the memory is the unit's own state, and is dropped whole when it was made by
        another grammar: relation_memory)."""
        if not isinstance(doc, dict):
            raise ValueError("not a reading")
        generation = doc.get("generation", 0)
        if type(generation) is not int or generation < 0:
            raise ValueError("not a reading")
        for kind in ("incomplete", "invalid"):
            if kind in doc:
                if not isinstance(doc[kind], str):
                    raise ValueError("not a reading")
                return cls(unit, generation=generation, **{kind: doc[kind]})
        host, port = doc["endpoint"]
        rot = doc["rotation"]
        strings = [doc["public-key"], host, rot["next-key"], rot["next-endpoint"]] + list(rot["next-peer-keys"]) \
            + list(rot["peer-keys"])
        pq = doc.get("pq-psk", False)   # a memory of the release before: no capability
        if not all(isinstance(v, str) for v in strings) or not isinstance(port, int) or \
                not all(isinstance(v, bool) for v in (doc["wants-peer-keys"], rot["protocol"], pq)):
            raise ValueError("not a reading")
        return cls(unit, PeerInfo(
            unit, doc["public-key"], (host, port), ipaddress.ip_interface(doc["tunnel-address"]),
            [ipaddress.ip_network(p) for p in doc["service-prefixes"]], doc["wants-peer-keys"],
            PeerRotation(rot["protocol"], rot["next-key"], rot["next-endpoint"], rot["next-peer-keys"],
                         rot["peer-keys"]), pq), generation=generation)


def read(unit: str, data: Dict[str, str], now: Optional[float] = None) -> Reading:
    """``decode``, with what it refused or misses as a value; and the publication's generation. A
    generation above ``generation_limit(now)`` (a clock far ahead, or a value made to pin the
    reader) is not trusted: the publication is still read, as one of no generation (0), so that it
    can never win over another copy of that unit's data (``newest``, ``read_mirror``)."""
    try:
        generation = parse_generation(data.get(GENERATION, ""), "{} {}".format(unit, GENERATION))
    except validation.InvalidValue as e:
        return Reading(unit, invalid=str(e))
    if generation > generation_limit(now):
        generation = 0
    try:
        return Reading(unit, decode(unit, data), generation=generation)
    except Incomplete as e:
        return Reading(unit, incomplete=str(e), generation=generation)
    except validation.InvalidValue as e:
        return Reading(unit, invalid=str(e), generation=generation)


_GENERATION = re.compile(r"[1-9][0-9]{0,19}")


def parse_generation(value: Any, what: str = GENERATION) -> int:
    """A publication's generation: a decimal number of 1 to 20 digits, no leading zero (0: absent)."""
    value = validation.word(value, what)
    if not value:
        return 0
    if not _GENERATION.fullmatch(value):
        raise validation.InvalidValue("{}: {} is not a generation (a number)".format(what, validation.excerpt(value)))
    return int(value)


#: How far ahead of the reader's clock a generation (milliseconds) may be and still be trusted: a
#: day, far more than any skew of the clocks of one deployment.
GENERATION_MARGIN_MS = 24 * 3600 * 1000


def generation_limit(now: Optional[float] = None) -> int:
    """The largest generation a reader trusts at ``now`` (seconds; None: this machine's clock)."""
    return int((time.time() if now is None else now) * 1000) + GENERATION_MARGIN_MS


def next_generation(last: int, now: float) -> int:
    """The generation of a unit's next publication: above its last one, and at least the time in
    milliseconds, so that it still grows if the unit's own record of the last one is ever lost."""
    return max(last + 1, int(now * 1000))


#: The application-data mirror (module docstring, "Mirror"): the request a unit with several relations
#: on one endpoint (a hub) writes, as its application's leader, in its application's bag on each of
#: them, and the name of the unit whose publication a leader mirrors in its own application's bag.
MIRROR_REQUEST = "mirror-request"
MIRROR_OF = "mirror-of"
MIRROR_PROTOCOL = "1"
#: The fields of a remote application's bag that a unit reads (its hook gate digests them).
APP_FIELDS = (MIRROR_REQUEST, MIRROR_OF) + READ


def requests_mirror(app_bag: Dict[str, Any]) -> bool:
    """Whether a remote application's bag asks this unit's leader to mirror (exactly "1")."""
    return app_bag.get(MIRROR_REQUEST) == MIRROR_PROTOCOL


def mirror(unit: str, bag: Dict[str, str]) -> Dict[str, str]:
    """The application bag that mirrors ``unit``'s publication ``bag`` (as Juju holds it: with
    its generation); every field is set, an empty one removed (Juju's rule)."""
    out = {k: bag.get(k, "") for k in READ}
    out[MIRROR_OF] = unit
    return out


def read_mirror(members: Set[str], bag: Dict[str, Any], now: Optional[float] = None) -> Optional[Reading]:
    """A remote application's mirror as a reading of the unit it names, through the grammar of
    unit data (``read``); None unless ``members`` (the units this unit's agent lists on that
    relation) is that one unit alone, and the mirror is complete, valid and of a trusted generation
    (``read``). One member only, the star's case: then the leader that wrote the mirror is the unit
    it names, so a unit's data can only be mirrored by that unit itself (a former leader that
    departed is no member; with two members, one could name the other)."""
    who = bag.get(MIRROR_OF)
    if not isinstance(who, str) or set(members) != {who}:
        return None
    reading = read(who, {k: bag[k] for k in READ if k in bag}, now)
    return reading if reading.info is not None and reading.generation > 0 else None


def newest(read_now: Reading, *others: Optional[Reading], now: Optional[float] = None) -> Reading:
    """The reading of one remote unit to plan with: ``read_now`` (its unit data as this hook
    sees it: Juju's agent may hand an older copy, cache.go) unless one of ``others`` (the newest
    applied before, a mirror) is a complete publication of a later generation that is still
    trusted (``generation_limit``: a kept one from before that bound existed). So a unit's data
    never goes back a generation, whichever source is read in which hook. In a hook about that
    unit its data is fresh and wins whatever its generation: the caller does not ask (Juju's
    agent refreshes it then: contextfactory.go, ``InvalidateMember``)."""
    limit = generation_limit(now)
    best = read_now
    for other in others:
        if other is not None and other.info is not None and best.generation < other.generation <= limit:
            best = other
    return best


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
    # The capability only once the VNF reported the daemon running (Device.pq_psk_daemon).
    bag[PQ_PSK_KEY] = PQ_PSK_PROTOCOL if device.pq_psk_runs() and device.pq_psk_daemon else ""
    return bag
