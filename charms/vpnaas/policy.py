"""The route policy: which of a peer's prefixes may become AllowedIPs and routes on this VNF.

Pure functions, no ops and no SSH. A related unit's relation data is not trusted (see
docs/security.md): whatever prefixes it announces, a prefix is admitted only when

* it lies inside what the operator allowed for that endpoint: ``<endpoint>-peer-prefixes``, or,
  when that option is empty, it is a single address (/32, /128) -- a peer can never claim a
  network the operator did not name;
* it does not overlap anything of this VNF: its own addresses (tunnel, service, management,
  endpoint), its connected networks, its default gateway, the management path to the charm (the
  SSH client's address), nor the tunnel network of another device; it is never a default route;
* it does not contain a WireGuard endpoint (that would route the tunnel into itself);
* it is not IPv6 on a VNF whose IPv6 is off;
* no other peer, on this device or another one, claims an overlapping prefix. Ownership rule:
  the operator's manual peers win over related units; otherwise the peer that already had the
  prefix (applied in an earlier reconcile) keeps it; between newcomers neither gets it. The same
  rule applies to public keys across all devices of the VNF, so a related unit can neither
  displace a manual peer nor take another unit's place by publishing that unit's key.

A refused prefix is dropped from the peer (the rest of the tunnel keeps working) and reported
as a problem naming the unit, the device and the prefix; a peer whose own tunnel address or key
is refused is dropped whole. Manual peers (add-peer) obey the same rules except the allowance,
which the operator sets for related units only.
"""
import ipaddress
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Optional, Set, Tuple

from vpnaas import validation
from vpnaas.relation_data import MANUAL
from vpnaas.validation import Address, Interface, Network

if TYPE_CHECKING:   # plan imports this module; the annotations only need the names
    from vpnaas.plan import Device, Peer, Plan

Forbidden = List[Tuple[Network, str]]
Claim = Tuple["Device", "Peer", str]



def _inside(inner: Network, outer: Network) -> bool:
    """inner is a subnet of outer (``subnet_of`` only exists from Python 3.7)."""
    return (inner.version == outer.version and inner.network_address in outer
            and inner.prefixlen >= outer.prefixlen)


def _overlap(a: Network, b: Network) -> bool:
    return a.version == b.version and a.overlaps(b)


def _host(address: Any) -> Network:
    address = ipaddress.ip_address(str(address))
    return ipaddress.ip_network("{}/{}".format(address, address.max_prefixlen))


class Facts(object):
    """What the VNF reported about itself (``report_facts`` in vnf/tunnels.sh)."""

    def __init__(self, addresses: Iterable[Interface] = (), gateways: Iterable[Address] = (), client: str = "",
                 ipv6: bool = True, known: bool = False) -> None:
        self.addresses = list(addresses)   # every address not owned by the charm
        self.gateways = list(gateways)     # of the default routes
        self.client = client               # the SSH client's address as the VNF sees it, or ""
        self.ipv6 = ipv6
        self.known = known                 # False until a VNF has reported

    @classmethod
    def from_lines(cls, lines: Iterable[str]) -> "Facts":
        """From ``<kind> <value>`` lines; values are checked, unknown or malformed lines skipped."""
        facts = cls(known=True)
        for line in lines:
            kind, _, value = line.partition(" ")
            try:
                if kind == "addr":
                    facts.addresses.append(validation.interface_address(value, "address"))
                elif kind == "gateway":
                    facts.gateways.append(validation.ip_address(value, "gateway"))
                elif kind == "client":
                    facts.client = str(validation.ip_address(value, "client"))
                elif kind == "ipv6":
                    facts.ipv6 = value == "on"
            except validation.InvalidValue:
                continue
        return facts

    def as_dict(self) -> Dict[str, Any]:
        return {"addresses": [str(a) for a in self.addresses], "gateways": [str(g) for g in self.gateways],
                "client": self.client, "ipv6": self.ipv6}

    @classmethod
    def from_dict(cls, doc: Optional[Dict[str, Any]]) -> "Facts":
        if not doc:
            return cls()
        return cls.from_lines(["addr " + a for a in doc.get("addresses", [])]
                              + ["gateway " + g for g in doc.get("gateways", [])]
                              + (["client " + doc["client"]] if doc.get("client") else [])
                              + ["ipv6 " + ("on" if doc.get("ipv6", True) else "off")])

    def forbidden(self) -> Forbidden:
        """(network, reason) pairs a peer prefix must not overlap."""
        # Most precise reason first: a prefix may overlap several of these.
        out: Forbidden = []
        if self.client:
            out.append((_host(self.client), "the management path to the charm ({})".format(self.client)))
        out += [(_host(g), "this VNF's default gateway {}".format(g)) for g in self.gateways]
        out += [(_host(iface.ip), "this VNF's address {}".format(iface.ip)) for iface in self.addresses]
        out += [(iface.network, "this VNF's connected network {}".format(iface.network))
                for iface in self.addresses if iface.network.prefixlen < iface.network.max_prefixlen]
        return out


def _own_forbidden(plan: "Plan") -> Forbidden:
    out: Forbidden = []
    for dev in plan.devices:
        out.append((dev.address.network, "the tunnel network of {}".format(dev.name)))
        out += [(_host(a.ip), "this VNF's service address {}".format(a.ip)) for a in dev.service_addresses]
        if _is_ip(dev.publish_host):
            out.append((_host(dev.publish_host), "this VNF's endpoint address {}".format(dev.publish_host)))
    if _is_ip(plan.ssh_host):
        out.append((_host(plan.ssh_host), "this VNF's management address {}".format(plan.ssh_host)))
    return out


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
        return True
    except ValueError:
        return False


def _endpoint_hosts(plan: "Plan") -> Forbidden:
    out: Forbidden = []
    for dev in plan.devices:
        for peer in dev.peers:
            host = peer.endpoint.rsplit(":", 1)[0].strip("[]") if peer.endpoint else ""
            if _is_ip(host):
                out.append((_host(host), "the WireGuard endpoint of {}".format(peer.source)))
    return out


def prefix_refusal(dev: "Device", peer: "Peer", prefix: Network, forbidden: Forbidden,
                   facts: Facts) -> Optional[str]:
    """Why ``prefix`` of ``peer`` on ``dev`` must not be routed (None: it may)."""
    tunnel_net = dev.address.network
    if _inside(prefix, tunnel_net):
        if dev.address.ip in prefix:
            return "it contains this device's own tunnel address {}".format(dev.address.ip)
        return None
    if peer.source != MANUAL:
        if dev.allowance:
            if not any(_inside(prefix, a) for a in dev.allowance):
                return "outside {}-peer-prefixes".format(dev.endpoint)
        elif prefix.prefixlen != prefix.max_prefixlen:
            return "a network; only single addresses unless {}-peer-prefixes allows it".format(dev.endpoint)
    if prefix.prefixlen == 0:
        return "a default route"
    if prefix.version == 6 and facts.known and not facts.ipv6:
        return "IPv6 is disabled on this VNF"
    for net, reason in forbidden:
        if _overlap(prefix, net):
            return "it overlaps {}".format(reason)
    return None


def admit(plan: "Plan", facts: Facts, incumbents: Iterable[str] = (), own_keys: Iterable[str] = ()) -> None:
    """Apply the policy to every device of ``plan`` in place. ``incumbents`` are the claims
    applied before (see ``claims``); ``own_keys`` are this VNF's own public keys."""
    forbidden = _endpoint_hosts(plan) + _own_forbidden(plan) + facts.forbidden()
    held = set(incumbents)
    own = set(own_keys)
    for dev in plan.devices:
        kept = []
        for peer in dev.peers:
            refusals = [(p, prefix_refusal(dev, peer, p, forbidden, facts)) for p in peer.allowed_ips]
            if peer.tunnel is not None and not _inside(peer.tunnel, dev.address.network):
                dev.problems.append("refused {} from {}: its tunnel address {} is outside {}'s tunnel network {}"
                                    .format(dev.name, peer.source, peer.tunnel.network_address, dev.name,
                                            dev.address.network))
                continue
            bad = [(p, why) for p, why in refusals if why]
            for p, why in bad:
                dev.problems.append("refused {} from {} on {}: {}".format(p, peer.source, dev.name, why))
            if peer.tunnel is not None and any(p == peer.tunnel for p, _ in bad):
                continue
            if peer.public_key in own:
                dev.problems.append("refused {} on {}: it announces this VNF's own key".format(peer.source, dev.name))
                continue
            peer.allowed_ips = [p for p, why in refusals if not why]
            if peer.allowed_ips:
                kept.append(peer)
        dev.peers = kept
    _resolve_keys(plan, held)
    _resolve_prefixes(plan, held)


def _rank(dev: "Device", peer: "Peer", what: str, incumbents: Set[str]) -> Tuple[int, int]:
    """Lower wins: manual peers first, then whoever held ``what`` before."""
    held = "{}|{}|{}".format(dev.name, peer.source, what) in incumbents
    return (0 if peer.source == MANUAL else 1, 0 if held else 1)


def _winners(claims: List[Claim], incumbents: Set[str]) -> List[Claim]:
    """claims: [(dev, peer, what)] that conflict pairwise; returns the ones that keep ``what``."""
    ranked = sorted(claims, key=lambda c: _rank(c[0], c[1], c[2], incumbents))
    best = _rank(ranked[0][0], ranked[0][1], ranked[0][2], incumbents)
    top = [c for c in ranked if _rank(c[0], c[1], c[2], incumbents) == best]
    return top if len(top) == 1 else []


def _resolve_keys(plan: "Plan", incumbents: Set[str]) -> None:
    """A public key belongs to one peer on the whole VNF: whoever holds its private key would
    otherwise be accepted with the addresses of every peer that announced it."""
    by_key: Dict[str, List[Tuple[Device, Peer]]] = {}
    for dev in plan.devices:
        for peer in dev.peers:
            by_key.setdefault(peer.public_key, []).append((dev, peer))
    dropped: Set[int] = set()
    for key, claims_ in by_key.items():
        if len(claims_) < 2:
            continue
        winners = _winners([(d, p, "key:" + key) for d, p in claims_], incumbents)
        for dev, peer in claims_:
            if not any(w[1] is peer for w in winners):
                others = ", ".join("{} on {}".format(p.source, d.name) for d, p in claims_ if p is not peer)
                dev.problems.append("refused {} on {}: its public key is also announced by {}"
                                    .format(peer.source, dev.name, others))
                dropped.add(id(peer))
    for dev in plan.devices:
        dev.peers = [p for p in dev.peers if id(p) not in dropped]


def _resolve_prefixes(plan: "Plan", incumbents: Set[str]) -> None:
    claims = [(dev, peer, prefix) for dev in plan.devices for peer in dev.peers for prefix in peer.allowed_ips]
    lost: Set[int] = set()
    for i, claim in enumerate(claims):
        rivals = [c for j, c in enumerate(claims) if j != i and c[1] is not claim[1] and _overlap(c[2], claim[2])]
        if not rivals:
            continue
        group = [claim] + rivals
        winners = _winners([(d, p, str(x)) for d, p, x in group], incumbents)
        if not any(w[1] is claim[1] and w[2] == str(claim[2]) for w in winners):
            lost.add(i)
            dev, peer, prefix = claim
            dev.problems.append("refused {} from {} on {}: also claimed by {}".format(
                prefix, peer.source, dev.name, ", ".join("{} on {}".format(p.source, d.name) for d, p, _ in rivals)))
    for dev in plan.devices:
        for peer in dev.peers:
            peer.allowed_ips = [p for p in peer.allowed_ips
                                if not any(i in lost for i, c in enumerate(claims) if c[1] is peer and c[2] == p)]
        dev.peers = [p for p in dev.peers if p.allowed_ips and (p.tunnel is None or p.tunnel in p.allowed_ips)]


def claims(plan: "Plan") -> List[str]:
    """The claims of an applied plan, kept as the incumbents of the next one."""
    out: List[str] = []
    for dev in plan.devices:
        for peer in dev.peers:
            out.append("{}|{}|key:{}".format(dev.name, peer.source, peer.public_key))
            out += ["{}|{}|{}".format(dev.name, peer.source, p) for p in peer.allowed_ips]
    return sorted(out)
