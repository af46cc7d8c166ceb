"""The route policy: which of a peer's prefixes may become AllowedIPs and routes on this VNF.

Pure functions, no ops and no SSH. A related unit's relation data is not trusted (see
docs/security.md). First each peer is judged on its own; a prefix is admitted only when

* it lies inside what the operator allowed for that endpoint: ``<endpoint>-peer-prefixes``, or,
  when that option is empty, it is a single address (/32, /128) inside the reference point's
  service network (``<endpoint>-service-network``, the NS's IP plan): with neither set, a peer
  gets nothing but its tunnel address. A peer can never claim a network the operator did not
  name, nor a host outside the service network (a DNS server, the cloud's metadata service);
* it is not a special-purpose address that no tunnel may carry, whatever the allowance says:
  "this network", loopback, link-local (169.254.169.254 is the metadata service), multicast,
  reserved and limited broadcast, IPv4-mapped IPv6;
* it does not overlap anything of this VNF: its own addresses (tunnel, service, management,
  endpoint), its connected networks, its default gateway, the management path to the charm (the
  SSH client's address), nor the tunnel network of another device; it is never a default route;
* it does not contain the peer's own WireGuard endpoint (that would route its tunnel into itself);
* it is not IPv6 on a VNF whose IPv6 is off.

A peer whose tunnel address or public key is refused, whose endpoint name does not resolve on
the VNF, or that announces this VNF's own key is dropped whole. Only then, among the peers so
admitted, are claims compared: a public key (on the whole VNF), a prefix, and the addresses of a
peer's WireGuard endpoint (an IP, or what its DNS name resolves to on the VNF) each belong to one
peer. Ownership rule: the operator's manual peers win over related units; otherwise the peer
that already held the claim keeps it; between newcomers neither gets it. A peer that loses its
endpoint (it lies inside a prefix another peer holds) is dropped whole; a lost prefix is dropped
from its peer. A peer's endpoint protects nothing before that peer is admitted, so a refused
unit can never evict anybody.

What a related unit held stays its own while it is related, even through a publication that is
refused or incomplete: its claims are *retained* (``Plan.retained``) and keep newcomers off until
the unit publishes good data again or departs.

A refused prefix is reported as a problem naming the unit, the device and the prefix, and the
rest of the tunnel keeps working. Manual peers (add-peer) obey the same rules except the
allowance, which the operator sets for related units only.
"""
import ipaddress
from typing import Any, Dict, Iterable, List, Mapping, Optional, Set, Tuple

from vpnaas.facts import Facts, Forbidden, host_prefix
from vpnaas.model import MANUAL, Device, Peer, Plan
from vpnaas.validation import Network

#: Ranges no tunnel may carry (IANA's special-purpose registries, RFC 6890: not forwardable, or
#: only meaningful on one link or host), with the reason shown in the status.
SPECIAL_PURPOSE: List[Tuple[Network, str]] = [
    (ipaddress.ip_network(net), why) for net, why in (
        ("0.0.0.0/8", "'this network' (0.0.0.0/8)"),
        ("127.0.0.0/8", "loopback (127.0.0.0/8)"),
        ("169.254.0.0/16", "link-local (169.254.0.0/16, the cloud's metadata service)"),
        ("224.0.0.0/4", "multicast (224.0.0.0/4)"),
        ("240.0.0.0/4", "reserved and limited broadcast (240.0.0.0/4)"),
        ("::/128", "the unspecified address (::)"),
        ("::1/128", "loopback (::1)"),
        ("::ffff:0:0/96", "IPv4-mapped IPv6 (::ffff:0:0/96)"),
        ("fe80::/10", "link-local (fe80::/10)"),
        ("ff00::/8", "multicast (ff00::/8)"),
    )
]


def _inside(inner: Network, outer: Network) -> bool:
    """inner is a subnet of outer (``subnet_of`` only exists from Python 3.7)."""
    return (inner.version == outer.version and inner.network_address in outer
            and inner.prefixlen >= outer.prefixlen)


def _overlap(a: Network, b: Network) -> bool:
    return a.version == b.version and a.overlaps(b)


def special_purpose(prefix: Network) -> Optional[str]:
    """Why ``prefix`` may never be carried by a tunnel (None: it may)."""
    for net, why in SPECIAL_PURPOSE:
        if _overlap(prefix, net):
            return why
    return None


def _own_forbidden(plan: Plan) -> Forbidden:
    out: Forbidden = []
    for dev in plan.devices:
        out.append((dev.address.network, "the tunnel network of {}".format(dev.name)))
        out += [(host_prefix(a.ip), "this VNF's service address {}".format(a.ip)) for a in dev.service_addresses]
        if is_ip(dev.publish_host):
            out.append((host_prefix(dev.publish_host), "this VNF's endpoint address {}".format(dev.publish_host)))
    if is_ip(plan.ssh_host):
        out.append((host_prefix(plan.ssh_host), "this VNF's management address {}".format(plan.ssh_host)))
    return out


def is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
        return True
    except ValueError:
        return False


def endpoint_host(endpoint: str) -> str:
    """The host part of ``host:port`` / ``[v6]:port`` ("" for a peer without an endpoint)."""
    return endpoint.rsplit(":", 1)[0].strip("[]") if endpoint else ""


def _allowance_refusal(dev: Device, prefix: Network) -> Optional[str]:
    """Why a related unit may not announce ``prefix`` on ``dev`` (None: the operator allows it)."""
    if dev.allowance:
        if any(_inside(prefix, a) for a in dev.allowance):
            return None
        return "outside {}-peer-prefixes".format(dev.endpoint)
    if dev.service_network is None:
        return ("only the peer's tunnel address is admitted: set {0}-service-network (the IP plan's "
                "network of this reference point) or {0}-peer-prefixes".format(dev.endpoint))
    if not _inside(prefix, dev.service_network):
        return "outside {}-service-network {} (set {}-peer-prefixes to allow more)".format(
            dev.endpoint, dev.service_network, dev.endpoint)
    if prefix.prefixlen != prefix.max_prefixlen:
        return "a network; only single addresses unless {}-peer-prefixes allows it".format(dev.endpoint)
    return None


def prefix_refusal(dev: Device, peer: Peer, prefix: Network, forbidden: Forbidden,
                   facts: Facts) -> Optional[str]:
    """Why ``prefix`` of ``peer`` on ``dev`` must not be routed, judged on its own (None: it may)."""
    tunnel_net = dev.address.network
    if _inside(prefix, tunnel_net):
        if dev.address.ip in prefix:
            return "it contains this device's own tunnel address {}".format(dev.address.ip)
        return None
    if prefix.prefixlen == 0:
        return "a default route"
    special = special_purpose(prefix)
    if special:
        return "it overlaps {}".format(special)
    if peer.source != MANUAL:
        why = _allowance_refusal(dev, prefix)
        if why:
            return why
    if prefix.version == 6 and facts.known and not facts.ipv6:
        return "IPv6 is disabled on this VNF"
    for net, reason in forbidden:
        if _overlap(prefix, net):
            return "it overlaps {}".format(reason)
    for host in peer.endpoint_hosts:
        if _overlap(prefix, host):
            return "it contains the peer's own WireGuard endpoint {}".format(host.network_address)
    return None


def endpoint_hosts(peer: Peer, facts: Facts) -> Tuple[List[Network], Optional[str]]:
    """(host prefixes of ``peer``'s WireGuard endpoint, why the peer cannot be admitted or None).
    A DNS name counts as what it resolves to on the VNF; one the VNF has not resolved yet (the
    tunnel step resolves every name first) or that does not resolve is no endpoint to admit."""
    host = endpoint_host(peer.endpoint)
    if not host:
        return [], None
    if is_ip(host):
        return [host_prefix(host)], None
    if host not in facts.resolved:
        return [], "waiting for this VNF to resolve its endpoint name {}".format(host)
    addresses = facts.resolved[host]
    if not addresses:
        return [], "its endpoint name {} does not resolve on this VNF".format(host)
    return [host_prefix(a) for a in addresses], None


class Claim(object):
    """One thing a peer holds: a public key, a prefix or an endpoint address."""
    __slots__ = ("dev", "source", "peer", "kind", "value", "net")

    def __init__(self, dev: str, source: str, peer: Optional[Peer], kind: str, value: str,
                 net: Optional[Network] = None) -> None:
        self.dev = dev          # device name
        self.source = source    # remote unit or MANUAL
        self.peer = peer        # None: retained for a related unit that is not admitted now
        self.kind = kind        # "key", "prefix", "endpoint"
        self.value = value
        self.net = net

    @property
    def record(self) -> str:
        """How the claim is kept between reconciles (``claims``)."""
        what = {"key": "key:", "endpoint": "endpoint:", "prefix": ""}[self.kind] + self.value
        return "{}|{}|{}".format(self.dev, self.source, what)

    def owner(self) -> str:
        return "{} on {}".format(self.source, self.dev)


def parse_record(record: str) -> Optional[Claim]:
    """A kept claim, or None for text this code did not write (state is re-checked when read)."""
    parts = record.split("|")
    if len(parts) != 3:
        return None
    dev, source, what = parts
    try:
        if what.startswith("key:"):
            return Claim(dev, source, None, "key", what[4:])
        if what.startswith("endpoint:"):
            net = host_prefix(what[9:])
            return Claim(dev, source, None, "endpoint", str(net.network_address), net)
        net = ipaddress.ip_network(what)
        return Claim(dev, source, None, "prefix", str(net), net)
    except ValueError:
        return None


def admit(plan: Plan, facts: Facts, incumbents: Iterable[str] = (), own_keys: Iterable[str] = (),
          related: Optional[Mapping[str, Iterable[str]]] = None) -> None:
    """Apply the policy to every device of ``plan`` in place.

    ``incumbents`` are the claims kept from before (``claims``); ``own_keys`` are this VNF's own
    public keys; ``related`` names, per device, the units related on its endpoint now (their
    claims are retained while they are not admitted; None: nobody's).

    This is the policy's definition, computed whole; the charm computes the same incrementally
    (admission.py: each peer judged once while its data and the VNF's do not change, conflicts
    settled again only where a change can reach), and a test holds the two to the same answer."""
    held = set(incumbents)
    _admit_each(plan, facts, set(own_keys))
    retained = retained_claims(plan, held, related)
    _resolve(plan, [c for c in retained if c.kind == "key"], held, _key_claims, "its public key")
    _resolve(plan, [c for c in retained if c.kind != "key"], held, _address_claims, "")
    keep_routable(plan)


def keep_routable(plan: Plan) -> None:
    """The last step: a peer keeps its place only with prefixes left, its tunnel address among them."""
    for dev in plan.devices:
        dev.peers = [p for p in dev.peers if p.allowed_ips and (p.tunnel is None or p.tunnel in p.allowed_ips)]


def retained_claims(plan: Plan, held: Set[str], related: Optional[Mapping[str, Iterable[str]]]) -> List["Claim"]:
    """The kept claims of the units related now that are not admitted (``plan.retained`` is set)."""
    admitted = {(dev.name, peer.source) for dev in plan.devices for peer in dev.peers}
    related_now = {dev: set(units) for dev, units in (related or {}).items()}
    retained = [c for c in (parse_record(r) for r in sorted(held)) if c is not None and c.source != MANUAL
                and (c.dev, c.source) not in admitted and c.source in related_now.get(c.dev, ())]
    plan.retained = sorted(c.record for c in retained)
    return retained


class Verdict(object):
    """A peer judged on its own (``judge``): whether it stays, with which prefixes and endpoint
    addresses, and what is said about it (in the device's problems, waiting, refused prefixes)."""
    __slots__ = ("kept", "allowed", "hosts", "problems", "waiting", "refused")

    def __init__(self) -> None:
        self.kept = False
        self.allowed: List[Network] = []
        self.hosts: List[Network] = []
        self.problems: List[str] = []
        self.waiting: List[str] = []
        self.refused: List[Tuple[str, str]] = []


def own_forbidden(plan: Plan, facts: Facts) -> Forbidden:
    """Everything of this VNF no peer prefix may overlap."""
    return _own_forbidden(plan) + facts.forbidden()


def judge(dev: Device, peer: Peer, forbidden: Forbidden, facts: Facts, own: Set[str]) -> Verdict:
    """``peer`` of ``dev`` judged on its own: refused prefixes dropped, a peer that cannot be kept
    dropped whole (its tunnel address or key refused, its endpoint unusable)."""
    v = Verdict()
    if peer.tunnel is not None and not _inside(peer.tunnel, dev.address.network):
        v.problems.append("refused {} from {}: its tunnel address {} is outside {}'s tunnel network {}"
                          .format(dev.name, peer.source, peer.tunnel.network_address, dev.name, dev.address.network))
        return v
    if own.intersection(keys_of(peer)):
        v.problems.append("refused {} on {}: it announces this VNF's own key".format(peer.source, dev.name))
        return v
    hosts, unusable = endpoint_hosts(peer, facts)
    if unusable:
        if unusable.startswith("waiting"):
            v.waiting.append("{}: {}".format(peer.source, unusable))
        else:
            v.problems.append("refused {} on {}: {}".format(peer.source, dev.name, unusable))
        return v
    probe = Peer(peer.public_key, peer.endpoint, peer.allowed_ips, peer.source, peer.tunnel)
    probe.endpoint_hosts = hosts
    refusals = [(p, prefix_refusal(dev, probe, p, forbidden, facts)) for p in peer.allowed_ips]
    bad = [(p, why) for p, why in refusals if why]
    for p, why in bad:
        v.problems.append("refused {} from {} on {}: {}".format(p, peer.source, dev.name, why))
        v.refused.append((peer.source, str(p)))
    if peer.tunnel is not None and any(p == peer.tunnel for p, _ in bad):
        return v
    v.allowed = [p for p, why in refusals if not why]
    v.hosts = hosts
    v.kept = bool(v.allowed)
    return v


def apply_verdict(dev: Device, peer: Peer, v: Verdict) -> bool:
    """Record ``v`` on ``dev`` and ``peer``; True when the peer stays."""
    dev.problems += v.problems
    dev.waiting += v.waiting
    dev.refused_prefixes += v.refused
    if v.kept:
        peer.allowed_ips = list(v.allowed)
        peer.endpoint_hosts = list(v.hosts)
    return v.kept


def _admit_each(plan: Plan, facts: Facts, own: Set[str]) -> None:
    """Each peer judged on its own: refused prefixes dropped, peers that cannot be kept dropped."""
    forbidden = own_forbidden(plan, facts)
    for dev in plan.devices:
        dev.peers = [peer for peer in dev.peers if apply_verdict(dev, peer, judge(dev, peer, forbidden, facts, own))]


def keys_of(peer: Peer) -> List[str]:
    """A peer's public key, and the new key it rotates to (it holds both, on this whole VNF)."""
    nxt = peer.rotation.next_key if peer.rotation.protocol else ""
    return [peer.public_key] + ([nxt] if nxt and nxt != peer.public_key else [])


def _key_claims(plan: Plan) -> List[Claim]:
    return [Claim(dev.name, peer.source, peer, "key", key) for dev in plan.devices for peer in dev.peers
            for key in keys_of(peer)]


def _address_claims(plan: Plan) -> List[Claim]:
    out = []
    for dev in plan.devices:
        for peer in dev.peers:
            out += [Claim(dev.name, peer.source, peer, "prefix", str(p), p) for p in peer.allowed_ips]
            out += [Claim(dev.name, peer.source, peer, "endpoint", str(h.network_address), h)
                    for h in peer.endpoint_hosts]
    return out


def _rank(claim: Claim, incumbents: Set[str]) -> Tuple[int, int]:
    """Lower wins: manual peers first, then whoever held the claim before (retained claims did)."""
    held = claim.peer is None or claim.record in incumbents
    return (0 if claim.source == MANUAL else 1, 0 if held else 1)


def _winner(group: List[Claim], incumbents: Set[str]) -> Optional[Claim]:
    """The one claim of a conflicting group that keeps its value, or None when the best rank is shared."""
    ranks = [_rank(c, incumbents) for c in group]
    best = min(ranks)
    top = [c for c, r in zip(group, ranks) if r == best]
    return top[0] if len(top) == 1 else None


def _rivals(claims: List[Claim]) -> Dict[int, List[int]]:
    """{i: indices of the claims that conflict with claims[i]}: the same key, or overlapping
    addresses of another peer (two endpoints never conflict: peers may share a host).

    Prefixes overlap only by containment, so each claim looks up its supernets at the prefix
    lengths that occur: O(n * lengths) instead of comparing every pair (a hub with hundreds of
    spokes runs this in every reconcile)."""
    out: Dict[int, List[int]] = {i: [] for i in range(len(claims))}
    by_value: Dict[Tuple[Any, ...], List[int]] = {}
    lengths: Dict[int, Set[int]] = {}
    for i, c in enumerate(claims):
        if c.net is None:
            by_value.setdefault(("key", c.value), []).append(i)
        else:
            by_value.setdefault((c.net.version, c.net.prefixlen, int(c.net.network_address)), []).append(i)
            lengths.setdefault(c.net.version, set()).add(c.net.prefixlen)
    for i, c in enumerate(claims):
        if c.net is None:
            found = by_value[("key", c.value)]
        else:
            found = []
            for length in sorted(lengths[c.net.version]):
                if length > c.net.prefixlen:
                    break
                sup = c.net.supernet(new_prefix=length) if length < c.net.prefixlen else c.net
                found += by_value.get((sup.version, length, int(sup.network_address)), [])
        for j in found:
            if j == i or _same_owner(c, claims[j]):
                continue
            if c.kind == "endpoint" and claims[j].kind == "endpoint":
                continue
            out[i].append(j)
            out[j].append(i)
    return {i: sorted(set(js)) for i, js in out.items()}


def _same_owner(a: Claim, b: Claim) -> bool:
    """Claims of one peer never conflict (manual peers share their source: compare the peers)."""
    if a.peer is not None and b.peer is not None:
        return a.peer is b.peer
    return (a.dev, a.source) == (b.dev, b.source)


def _resolve(plan: Plan, retained: List[Claim], incumbents: Set[str], collect: Any, subject: str) -> None:
    """Settle the conflicts among the admitted peers' claims (``collect(plan)``) and the retained
    ones: every claim that is not the single best of itself and its rivals is lost."""
    claims = collect(plan) + retained
    rivals = _rivals(claims)
    lost_peers: Set[int] = set()
    lost_prefixes: Dict[int, Set[str]] = {}
    for i, claim in enumerate(claims):
        if claim.peer is None or not rivals[i]:
            continue
        group = [claim] + [claims[j] for j in rivals[i]]
        if _winner(group, incumbents) is claim:
            continue
        others = ", ".join(sorted({c.owner() + ("" if c.peer is not None else " (held; its data is not usable now)")
                                   for c in group[1:]}))
        dev = plan.device_by_name(claim.dev)
        if claim.kind == "key":
            dev.problems.append("refused {} on {}: {} is also announced by {}".format(
                claim.source, claim.dev, subject, others))
            lost_peers.add(id(claim.peer))
        elif claim.kind == "endpoint":
            dev.problems.append("refused {} on {}: its endpoint {} lies inside what {} holds".format(
                claim.source, claim.dev, claim.value, others))
            lost_peers.add(id(claim.peer))
        else:
            dev.problems.append("refused {} from {} on {}: also claimed by {}".format(
                claim.value, claim.source, claim.dev, others))
            dev.refused_prefixes.append((claim.source, claim.value))
            lost_prefixes.setdefault(id(claim.peer), set()).add(claim.value)
    for dev in plan.devices:
        dev.peers = [p for p in dev.peers if id(p) not in lost_peers]
        for peer in dev.peers:
            gone = lost_prefixes.get(id(peer))
            if gone:
                peer.allowed_ips = [p for p in peer.allowed_ips if str(p) not in gone]


def claims(plan: Plan) -> List[str]:
    """The claims of an applied plan and the retained ones: the incumbents of the next plan."""
    out = set(plan.retained)
    for dev in plan.devices:
        for peer in dev.peers:
            out.update("{}|{}|key:{}".format(dev.name, peer.source, key) for key in keys_of(peer))
            out.update("{}|{}|{}".format(dev.name, peer.source, p) for p in peer.allowed_ips)
            out.update("{}|{}|endpoint:{}".format(dev.name, peer.source, h.network_address)
                       for h in peer.endpoint_hosts)
    return sorted(out)
