"""A component's service addresses by reference point: its own on each reference point the
registry makes it an end of, and its peer's where the registry's ``peer-option`` says its network
function is configured with the other end's address. The one place an OAI component's addresses
are derived: its module only reads them by reference point, so a new reference point between
existing components is its registry entry and the configuration line that uses it.

Pure module (the core and the OAI grammar only).
"""
import ipaddress
from typing import Any, Mapping, NamedTuple, Optional

from vpnaas.core import config as charm_config
from vpnaas.core import model, registry
from vpnaas.core.validation import InvalidValue
from vpnaas.oai import validation as oai_validation

#: The charm's options as Juju hands them over (oai.component.Options).
Options = Mapping[str, Any]


class Addresses(NamedTuple):
    """A component's service addresses by reference point, from the registry alone (``of``):
    its own on every reference point it is an end of, and the peer's on those where the registry's
    ``peer-option`` says its network function is configured with the other end's address. Every
    component's values carry them as their field ``addresses``; its configuration reads them by
    reference point (``own["s1c"]``, ``ip("n11")``, ``peers["n11"]``)."""
    own: Mapping[str, ipaddress.IPv4Interface]
    peers: Mapping[str, str]

    def ip(self, endpoint: str) -> str:
        """Its own service address on ``endpoint``, without the prefix length."""
        return str(self.own[endpoint].ip)


def own_address(config: Options, endpoint: str, title: str) -> ipaddress.IPv4Interface:
    """This VNF's service address on a reference point: the first of <ep>-service-addresses."""
    key = endpoint + "-service-addresses"
    addrs = charm_config.own_service_addresses(config, endpoint)   # this VDU instance's (instance.py)
    v4 = [a for a in addrs if isinstance(a, ipaddress.IPv4Interface)]
    if not v4:
        raise InvalidValue(
            "{}: not set; the {} needs its {} service address (IPv4), e.g. 172.16.6.2/32".format(
                key, title, endpoint.upper()
            )
        )
    return v4[0]


def peer_address(config: Options, plan: Optional[model.Plan], endpoint: str, option: str) -> str:
    """The peer's service address on ``endpoint``: the explicit option wins (variants without
    tunnels set it), otherwise the first service prefix the related peer published."""
    explicit = (config.get(option) or "").strip()
    if explicit:
        return oai_validation.ipv4(explicit, option)
    dev = plan.device(endpoint) if plan is not None else None
    for peer in dev.peers if dev is not None else []:
        for net in peer.allowed_ips[1:]:
            if net.version == 4 and net.prefixlen == 32:
                return str(net.network_address)
    raise InvalidValue(
        "{}: not set and the {} relation has no peer service address yet (set {} or "
        "relate {} and wait for the peer to publish)".format(option, endpoint, option, endpoint)
    )


def of(component: str, title: str, config: Options, plan: Optional[model.Plan],
       reg: Optional[registry.Registry] = None) -> Addresses:
    """``component``'s own and peer service addresses (``title``: its name in messages), one for
    each of its reference points in the registry (``reg``, default the shipped one), in the
    registry's order: each own address is the first IPv4 of ``<ep>-service-addresses``
    (``own_address``), each peer's the registry's ``peer-option`` or else the related peer's
    published address (``peer_address``); the first value that fails the grammar raises
    InvalidValue."""
    points = (reg or registry.load()).endpoints_of(component)
    own = {rp.name: own_address(config, rp.name, title) for rp in points}
    peers = {rp.name: peer_address(config, plan, rp.name, rp.peer_option(component))
             for rp in points if rp.peer_option(component)}
    return Addresses(own, peers)
