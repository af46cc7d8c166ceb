"""Which instance of a scaled VDU this unit serves, and the addresses that follow from it (pure).

OSM's LCM (19) deploys one execution environment per VDU instance when a VDU scales out, and
hands each one ``<OSM>``: a YAML flow mapping with its ``count_index`` (0 for the VDU's first
instance, then 1, 2, ... in the order of scaling). The VNFD's ``config`` primitive passes it as
the option ``osm-instance``. Every instance of the VDU gets the same other parameters
(additionalParams), so instance *k* derives its own addresses from them:

* its tunnel address: the same host in the *k*-th block after the configured tunnel network
  (``10.250.4.1/30`` -> ``10.250.4.5/30`` for k = 1), inside the /24 that holds the configured
  block (the hub keeps its address; it reaches every instance's /32 through that peer);
* its service addresses and its endpoint address (an IP): the configured address + k, as OSM
  gives a scaled VDU's fixed IPs (the base + count-index), inside the service network.

Instance 0, and a unit without ``osm-instance``, uses the configured addresses unchanged. An
address that would leave its range is refused (the unit is Blocked, nothing applied).

``osm-instance`` is an action parameter like any other: hostile until checked. Only a mapping
is accepted, only ``count_index`` is read, and it must be a plain integer in range.
"""
import ipaddress
import re
from typing import Any, Dict, List, Mapping, Optional, Tuple

import yaml

from vpnaas import validation
from vpnaas.validation import Interface, InvalidValue, Network

OPTION = "osm-instance"
#: Highest count index accepted (the VNFD's max-number-of-instances is far below).
MAX_INDEX = 63
#: OSM's <OSM> of a VDU with a few interfaces is well under 2 kB; refuse anything absurd.
MAX_TEXT = 16384
#: An OSM identifier as a metric label may carry it: NBI's ids (uuids, member indexes, VDU ids).
OSM_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
#: The range a scaled tunnel block stays in: the /24 around the configured block.
TUNNEL_POOL_PREFIX = 24


def _mapping(config: Mapping[str, Any]) -> Optional[Dict[Any, Any]]:
    """OSM's <OSM> mapping from ``osm-instance`` (None when the option is empty)."""
    text = config.get(OPTION)
    if text is None or (isinstance(text, str) and not text.strip()):
        return None
    if not isinstance(text, str):
        raise InvalidValue("{}: expected OSM's <OSM> mapping as text".format(OPTION))
    if len(text) > MAX_TEXT:
        raise InvalidValue("{}: value is {} characters long (at most {})".format(OPTION, len(text), MAX_TEXT))
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError:
        raise InvalidValue("{}: {} is not OSM's <OSM> mapping (not YAML)".format(
            OPTION, validation.excerpt(text))) from None
    if not isinstance(doc, dict):
        raise InvalidValue("{}: {} is not a mapping".format(OPTION, validation.excerpt(text)))
    return doc


def index(config: Mapping[str, Any]) -> int:
    """The count index of this unit's VDU instance (0 when the option is empty)."""
    doc = _mapping(config)
    if doc is None:
        return 0
    if "count_index" not in doc:
        return 0     # a VNF-level execution environment's <OSM>: one instance
    value = doc["count_index"]
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidValue("{}: count_index {} is not an integer".format(OPTION, validation.excerpt(value)))
    if not 0 <= value <= MAX_INDEX:
        raise InvalidValue("{}: count_index {} is outside 0-{}".format(OPTION, value, MAX_INDEX))
    return value


def osm_labels(config: Mapping[str, Any]) -> Tuple[Tuple[str, str], ...]:
    """What OSM names this VNF instance by, as the labels its alarms select on (LCM 19, ns.py
    _gather_vnfr_alarm_alerts: ``ns_id``, ``vnf_member_index``, ``vdu_id``), from <OSM>'s
    ``ns_id``, ``member_vnf_index`` and ``vdu_id`` (a VNF-level execution environment's <OSM> has
    no ``vdu_id``: that of its one VDU in ``vdu``). Empty when a value is missing or not an
    identifier (``OSM_ID``): the metrics then carry no OSM labels; nothing else
    depends on them."""
    doc = _mapping(config) or {}
    vdu = doc.get("vdu_id")
    vdus = doc.get("vdu")
    if vdu is None and isinstance(vdus, dict) and len(vdus) == 1:
        only = next(iter(vdus.values()))
        vdu = only.get("vdu_id") if isinstance(only, dict) else None
    out = (("ns_id", doc.get("ns_id")), ("vnf_member_index", doc.get("member_vnf_index")), ("vdu_id", vdu))
    if all(isinstance(v, str) and OSM_ID.fullmatch(v) for _, v in out):
        return tuple((k, str(v)) for k, v in out)
    return ()


def tunnel_address(address: Interface, k: int, what: str) -> Interface:
    """The same host in the k-th block of the same size after ``address``'s network."""
    if k == 0:
        return address
    net = address.network
    size = net.num_addresses
    pool_len = min(TUNNEL_POOL_PREFIX, net.prefixlen) if address.version == 4 else min(120, net.prefixlen)
    pool = net.supernet(new_prefix=pool_len)
    offset = int(address.ip) - int(net.network_address)
    fit = (int(pool.broadcast_address) - int(net.network_address) + 1) // size
    if k >= fit:
        raise InvalidValue("{}: instance {} would need the tunnel network {} block(s) after {}, outside {}: "
                           "{} instance(s) fit; scale in or widen the plan".format(what, k, k, net, pool, fit))
    shifted = type(address.ip)(int(net.network_address) + k * size + offset)
    return ipaddress.ip_interface("{}/{}".format(shifted, net.prefixlen))


def service_addresses(addresses: List[Interface], k: int, network: Optional[Network], what: str) -> List[Interface]:
    """Each address + k, inside ``network`` (else inside the address's own /24 or /120), never its
    network or broadcast address."""
    if k == 0:
        return addresses
    out = []
    for addr in addresses:
        within = network if network is not None and network.version == addr.version else _around(addr.ip)
        shifted = _plus(addr.ip, k, within, what)
        out.append(ipaddress.ip_interface("{}/{}".format(shifted, addr.network.prefixlen)))
    return out


def endpoint_host(host: str, k: int, what: str) -> str:
    """An endpoint address + k (OSM's fixed IPs of a scaled VDU); a DNS name is left as it is."""
    if k == 0:
        return host
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return host
    return str(_plus(ip, k, _around(ip), what))


def _around(ip: Any) -> Network:
    """The /24 (IPv6: /120) that holds ``ip``: OSM's +k never carries past the last octet."""
    return ipaddress.ip_network("{}/{}".format(ip, 24 if ip.version == 4 else 120), strict=False)


def _plus(ip: Any, k: int, within: Network, what: str) -> Any:
    shifted = type(ip)(int(ip) + k) if int(ip) + k <= int(within.broadcast_address) else None
    if shifted is None or shifted not in within or (within.num_addresses > 2 and shifted == within.broadcast_address):
        raise InvalidValue("{}: instance {} would get {} + {}, outside {}; scale in or widen the plan".format(
            what, k, ip, k, within))
    return shifted
