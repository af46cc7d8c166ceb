"""What `deploy scale` believes of an instance's `tunnel-status`: nothing it can check elsewhere.

A scaled instance is never related, so its peering rests on what it reports about itself; an
instance is a VNF, and a VNF may be compromised. So (docs/deploy.md, "Scaling"):

* instance k's addresses are not taken from its report but derived from instance 0's, the way
  the charm derives them from ``<OSM>`` (vpnaas.core.instance: the tunnel address k blocks on, the
  service and endpoint addresses + k); its report must name exactly those;
* instance 0's report is checked against what each hub holds for it through the relation (the
  peer with its key routes its tunnel and service addresses);
* a public key belongs to the one peer that holds it first, as on relations: instance k's key
  may be on a hub only as the peer with instance k's addresses; a key the hub holds for any other
  peer (instance 0 through the relation, another scaled instance, an operator's manual peer), or
  the hub's own, is refused; so are addresses another peer of the hub holds;
* a hub's peer of instance k is the one whose allowed-ips are exactly instance k's derived
  addresses: scale-in removes that one, whatever key instance k claims now.

An operation on one instance therefore never adds, replaces or removes another's peer.
"""
import ipaddress

from vpnaas.core import instance
from vpnaas.core.validation import InvalidValue


class TrustError(Exception):
    pass


def prefixes(value):
    """A set of networks from a list or a comma-separated text of prefixes/addresses."""
    items = value.split(",") if isinstance(value, str) else list(value or [])
    try:
        return {ipaddress.ip_network(str(p).strip(), strict=False) for p in items if str(p).strip()}
    except ValueError as e:
        raise TrustError("not a prefix list: {!r} ({})".format(value, e)) from None


def allowed_of(entry):
    """The allowed-ips a hub gives the peer of a tunnel-status entry: its tunnel address and its
    service addresses, each as a host prefix."""
    ips = [ipaddress.ip_interface(entry["address"]).ip] + [
        ipaddress.ip_interface(a).ip for a in entry.get("service-addresses") or []]
    return {ipaddress.ip_network(ip) for ip in ips}


def expected_entry(base, k, endpoint, member):
    """Instance k's wg-<endpoint> addresses, from instance 0's entry ``base`` (vpnaas.core.instance)."""
    what = "{} instance {} wg-{}".format(member, k, endpoint)
    try:
        address = instance.tunnel_address(ipaddress.ip_interface(base["address"]), k, what)
        service = instance.service_addresses([ipaddress.ip_interface(a) for a in base.get("service-addresses") or []],
                                             k, None, what)
        host = instance.endpoint_host(base.get("endpoint-address") or "", k, what) if base.get("endpoint-address") \
            else ""
    except (InvalidValue, ValueError, KeyError) as e:
        raise TrustError("{}: {}".format(what, e)) from None
    return {"endpoint": endpoint, "address": str(address), "service-addresses": [str(a) for a in service],
            "endpoint-address": host, "listen-port": base.get("listen-port")}


def check_base(base, hub_dev, endpoint, member, hub):
    """Instance 0's report against its hub: the hub's related peer with instance 0's key routes
    instance 0's tunnel address and every service address it reports."""
    held = [p for p in hub_dev.get("peers") or [] if p.get("public-key") == base.get("public-key")]
    routed = prefixes(held[0].get("allowed-ips")) if held else set()
    if not all(any(a.subnet_of(r) for r in routed if a.version == r.version) for a in allowed_of(base)):
        raise TrustError("{} instance 0 reports wg-{} with key {} and addresses {}, but {} holds {} for that key: "
                         "its report is not trusted; nothing was peered".format(
                             member, endpoint, _short(base.get("public-key")), _text(allowed_of(base)), hub,
                             _text(routed) if held else "no peer"))


def check_claim(own, expected, hub_dev, endpoint, who, hub):
    """Instance k's report ``own`` may become a peer of ``hub_dev``: its addresses are instance
    k's, its key is not the hub's own nor held by another peer, and nobody else holds its
    addresses. Returns the hub's peers that are instance k's earlier entries under another key
    (a key k had before a heal or rebuild): those are replaced."""
    for field in ("address", "service-addresses", "endpoint-address"):
        if _norm(own.get(field)) != _norm(expected.get(field)):
            raise TrustError("{} reports wg-{} {} {!r}, but instance k's is {!r}: refused (an instance takes "
                             "only its own addresses)".format(who, endpoint, field, own.get(field),
                                                              expected.get(field)))
    key, mine = own.get("public-key"), allowed_of(expected)
    if key == hub_dev.get("public-key"):
        raise TrustError("{} reports {}'s own key on wg-{}: refused".format(who, hub, endpoint))
    stale = []
    for peer in hub_dev.get("peers") or []:
        theirs = prefixes(peer.get("allowed-ips"))
        if peer.get("public-key") == key and theirs != mine:
            raise TrustError("{} reports the public key {} that {} holds for another peer of wg-{} ({}): refused; "
                             "a key belongs to the peer that held it first".format(
                                 who, _short(key), hub, endpoint, _text(theirs)))
        if peer.get("public-key") != key and theirs == mine:
            stale.append(peer)
        elif peer.get("public-key") != key and any(a.overlaps(b) for a in mine for b in theirs):
            raise TrustError("{}'s addresses {} overlap {} of another peer of {} wg-{}: refused".format(
                who, _text(mine), _text(theirs), hub, endpoint))
    return stale


def peers_of_instance(hub_dev, expected):
    """The hub's peers that are instance k: exactly instance k's addresses as allowed-ips."""
    mine = allowed_of(expected)
    return [p for p in hub_dev.get("peers") or [] if prefixes(p.get("allowed-ips")) == mine]


def allowed_text(expected):
    return ",".join(str(n) for n in sorted(allowed_of(expected), key=lambda n: (n.version, n)))


def _norm(value):
    if isinstance(value, list):
        return sorted(str(ipaddress.ip_interface(v)) for v in value)
    return str(value or "")


def _short(key):
    return (key or "")[:8] + "…" if key else "(none)"


def _text(nets):
    return ",".join(str(n) for n in sorted(nets, key=lambda n: (n.version, n))) or "(none)"
