"""The charm's configuration, parsed once into typed values (pure: no ops).

Juju hands the charm a dict of strings and numbers; everything downstream (the plan, the SSH
target) works on the values below, each already checked by ``validation``. A bad option raises
``validation.InvalidValue`` naming the option; an option that is still empty but will be set
later by OSM's ``config`` primitive raises ``MissingOption`` (the unit waits, it is not an error).
"""
import ipaddress
import itertools
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Tuple

from vpnaas.core import instance, qos, refpoints, validation
from vpnaas.core.facts import Facts
from vpnaas.core.validation import Interface, Network

#: pq-psk-renewal-seconds: default and bounds (the pq-psk daemon refuses the same outside them).
PQ_PSK_RENEWAL, PQ_PSK_MIN, PQ_PSK_MAX = 120, 10, 86400


class MissingOption(Exception):
    """A required option that is still empty: the unit waits for it, it is not an error."""


class CharmConfig(NamedTuple):
    """The options every VPNaaS charm has."""
    ssh_host: str            # "" until OSM's config primitive sets it
    ssh_port: int
    ssh_username: str
    ssh_password: str
    connect_timeout: int
    mtu: int
    keepalive: int
    metrics_port: int = 9586     # the WireGuard metrics exporter on the management address; 0: none
    osm_labels: Tuple[Tuple[str, str], ...] = ()   # OSM's ns_id, vnf_member_index, vdu_id (osm-instance)
    slice_qos: qos.QosConfig = qos.QosConfig()    # slice-5qi, slice-dscp-map, slice-egress-mbit (core/qos.py)
    pq_psk_renewal: int = 120    # pq-psk-renewal-seconds: how often each tunnel's post-quantum PSK is renewed

    def __repr__(self) -> str:   # the password must never reach a log through a repr
        return "CharmConfig(ssh_host={!r}, ssh_username={!r}, ...)".format(self.ssh_host, self.ssh_username)


class EndpointConfig(NamedTuple):
    """The options of one tunnel endpoint ``<ep>-*``."""
    listen_port: int
    address: Interface             # this device's address inside the tunnel
    service_addresses: List[Interface]
    publish_host: str              # the underlay host the peer sends to
    allowance: List[Network]       # <ep>-peer-prefixes: what a related peer may announce
    service_network: Optional[Network]  # <ep>-service-network: the IP plan's network of this endpoint
    implementation: str = "auto"   # <ep>-implementation: the data plane of its device (dataplane.py)
    pq_psk: bool = True            # <ep>-pq-psk: a post-quantum PSK per tunnel (the pq-psk daemon)


def parse(config: Dict[str, Any]) -> CharmConfig:
    return CharmConfig(
        ssh_host=validation.ssh_hostname(config.get("ssh-hostname") or ""),
        ssh_port=validation.port(config.get("ssh-port", 22), "ssh-port"),
        ssh_username=validation.login_name(config.get("ssh-username") or "ubuntu", "ssh-username"),
        ssh_password=_password(config.get("ssh-password")),
        connect_timeout=(validation.integer(config["ssh-connect-timeout"], "ssh-connect-timeout", 1, 600)
                         if config.get("ssh-connect-timeout") is not None else 10),
        mtu=validation.integer(config.get("tunnel-mtu"), "tunnel-mtu", 1280, 9000),
        keepalive=validation.integer(config.get("persistent-keepalive"), "persistent-keepalive", 0, 65535),
        metrics_port=_metrics_port(config.get("metrics-port", 9586)),
        osm_labels=instance.osm_labels(config),
        slice_qos=qos.parse(config),
        pq_psk_renewal=validation.integer(config.get("pq-psk-renewal-seconds", PQ_PSK_RENEWAL),
                                          "pq-psk-renewal-seconds", PQ_PSK_MIN, PQ_PSK_MAX),
    )


def _option(config: Mapping[str, Any], key: str) -> str:
    """A text option ("" when unset). Juju hands text options as str; anything else is refused
    here, before a method of str is called on it. Only spaces count as empty (the grammar's rule):
    a line break or a tab is a character the grammar refuses, not nothing."""
    value = config.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise validation.InvalidValue("{}: expected text, got {}".format(key, type(value).__name__))
    return value


def _password(value: Any) -> str:
    """``ssh-password``: text of at most MAX_VALUE_LEN characters. It goes to the SSH server as it
    is, so nothing else is checked, and it is never part of a message."""
    if value is None:
        return ""
    if not isinstance(value, str) or len(value) > validation.MAX_VALUE_LEN:
        raise validation.InvalidValue("ssh-password: expected text of at most {} characters".format(
            validation.MAX_VALUE_LEN))
    return value


def _metrics_port(value: Any) -> int:
    """``metrics-port``: 0 (no exporter) or a port."""
    if value in (0, "0"):
        return 0
    return validation.port(value, "metrics-port")


def parse_endpoint(config: Dict[str, Any], name: str, role: str, ssh_host: str) -> EndpointConfig:
    """The endpoint's options; for instance k of a scaled VDU (``osm-instance``) its tunnel,
    service and endpoint addresses are the configured ones shifted by k (instance.py)."""
    k = instance.index(config)
    publish = _option(config, name + "-endpoint-address")
    service = own_service_addresses(config, name, k)
    host = validation.host(publish, name + "-endpoint-address") if publish.strip(" ") else ""
    return EndpointConfig(
        listen_port=validation.port(config.get(name + "-listen-port"), name + "-listen-port"),
        address=instance.tunnel_address(_tunnel_address(config, name, role), k, name + "-tunnel-address"),
        service_addresses=service,
        # Without an endpoint address the management address is this instance's own already.
        publish_host=instance.endpoint_host(host, k, name + "-endpoint-address") if host else ssh_host,
        allowance=validation.prefix_list(_option(config, name + "-peer-prefixes"), name + "-peer-prefixes"),
        service_network=_service_network(config, name, service),
        implementation=validation.implementation(config.get(name + "-implementation"), name + "-implementation"),
        pq_psk=validation.boolean(config.get(name + "-pq-psk", True), name + "-pq-psk"),
    )


def own_service_addresses(config: Mapping[str, Any], name: str, k: Optional[int] = None) -> List[Interface]:
    """``<ep>-service-addresses`` as this VDU instance has them (+ k, inside the service network)."""
    key = name + "-service-addresses"
    service = validation.service_address_list(_option(config, key), key)
    k = instance.index(config) if k is None else k
    if not k:
        return service
    text = _option(config, name + "-service-network").strip(" ") or refpoints.default_service_network(name)
    network = validation.prefix(text, name + "-service-network") if text else None
    return instance.service_addresses(service, k, network, key)


def _service_network(config: Dict[str, Any], name: str, service: List[Interface]) -> Optional[Network]:
    """``<ep>-service-network``, else the reference point's network of the bundle's IP plan, else
    None. This VNF's own service addresses must lie inside it: an address outside is a plan that
    differs from the default, and the default would then refuse the peer's address too."""
    key = name + "-service-network"
    given = _option(config, key).strip(" ")
    text = given or refpoints.default_service_network(name)
    if not text:
        return None
    net = validation.prefix(text, key)
    outside = [str(a) for a in service if not (a.version == net.version and a.ip in net)]
    if outside:
        origin = "" if given else " (the bundle's IP plan)"
        raise validation.InvalidValue("{}-service-addresses: {} outside {} {}{}; set {} to your plan's network".format(
            name, ", ".join(outside), key, net, origin, key))
    return net


def check_against_vnf(epc: EndpointConfig, name: str, facts: Facts) -> None:
    """Refuse an endpoint's own addresses that would cut the VNF off once applied: a service or
    tunnel address that equals or contains the SSH client (the charm's management path) or a
    default gateway, or that lies in or spans one of the VNF's connected networks (its address
    would become local there: traffic to that network's hosts would never leave the VNF).
    Needs what the VNF reported about itself; without that, nothing to check yet."""
    if not facts.known:
        return
    connected = facts.connected()
    for key, iface in ([(name + "-service-addresses", a) for a in epc.service_addresses]
                       + [(name + "-tunnel-address", epc.address)]):
        net = iface.network
        why = None
        if facts.client and _contains(net, facts.client):
            why = "contains the SSH client {}, the charm's management path".format(facts.client)
        for gateway in facts.gateways:
            if why is None and _contains(net, gateway):
                why = "contains this VNF's default gateway {}".format(gateway)
        for cnet in connected:
            if why is None and cnet.version == net.version and (iface.ip in cnet or net.overlaps(cnet)):
                why = "lies in this VNF's connected network {}".format(cnet)
        if why:
            raise validation.InvalidValue("{}: {} {}; nothing was applied (choose an address outside "
                                          "the VNF's own networks)".format(key, iface, why))


def _contains(net: Network, address: Any) -> bool:
    ip = ipaddress.ip_address(str(address))
    return ip.version == net.version and ip in net


def _tunnel_address(config: Dict[str, Any], name: str, role: str) -> Interface:
    key = name + "-tunnel-address"
    value = _option(config, key)
    if value.strip(" "):
        return validation.interface_address(value, key)
    net = refpoints.default_tunnel_network(name)
    if not net:
        raise MissingOption(key)
    return default_tunnel_address(ipaddress.ip_network(net), 0 if role == "provider" else 1)


def default_tunnel_address(network: Network, host_index: int) -> Interface:
    """Host ``host_index`` of a tunnel network (the provider's is the first, the requirer's the
    second: ``relation_data.Provider``/``Requirer``), with the network's prefix."""
    host = next(itertools.islice(network.hosts(), host_index, None))
    return ipaddress.ip_interface("{}/{}".format(host, network.prefixlen))
