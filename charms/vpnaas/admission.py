"""The route policy (policy.py) computed incrementally: the same decisions as ``policy.admit``,
with the work of a hook proportional to what changed since the last plan.

``policy.admit`` is the definition; ``admit`` here takes a memo of the last computation (kept in
the unit's relation memory) and gives exactly the same plan (peers, prefixes, endpoint
addresses, problems in the same order, refused prefixes, retained claims):

1. **Each peer on its own** (``policy.judge``) depends only on the peer's data and on what the
   VNF and the configuration say (the devices, what no prefix may overlap, the facts, this VNF's
   keys). Its verdict is kept, keyed by a digest of the peer's data, while a digest of the rest
   (the *context*) stays the same; a new context judges every peer again.
2. **Conflicts between peers** (a key, a prefix or an endpoint address claimed twice) are settled
   per claim: a claim keeps its value only when its rank (manual peers first, then whoever held it
   before) is better than every rival's. So a claim's fate depends on its own rank and on its
   rivals' ranks, and nothing else. The memo keeps every owner's claims with their ranks, and each
   owner's outcome. An owner whose claims or ranks changed (new data, a departure, a claim that
   became or stopped being held) is *changed*; an owner is *affected* when it is changed or one
   of its claims meets (equal key, overlapping addresses) a claim a changed owner has now or had
   before. Only affected owners are settled again; every other owner's rivals are what they were,
   and so is its outcome. Keys are settled before addresses (a peer that loses its key has no
   address claims), so the owners whose key outcome changed are changed owners of the address step.

Any memo that is missing, malformed or of another shape means a full computation (every owner
affected). ``tests/unit/test_admission.py`` holds this module to ``policy.admit`` over random
sequences of hooks.
"""
import hashlib
import ipaddress
import json
from typing import Any, Dict, Iterable, List, Mapping, Optional, Set, Tuple

from vpnaas import policy
from vpnaas.facts import Facts
from vpnaas.hookclock import CLOCK
from vpnaas.model import MANUAL, Device, Peer, Plan

MEMO_FORMAT = 1
#: A claim as the memo keeps it: [kind, value, version, network as an integer, prefix length, rank]
#: (keys: version 0); rank = 2 * (not manual) + (not held): lower wins.
Claim = List[Any]
_HELD = " (held; its data is not usable now)"


def _digest(doc: Any) -> str:
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:32]


def _context(plan: Plan, facts: Facts, forbidden: policy.Forbidden, own: Set[str]) -> str:
    """Everything a peer's verdict depends on besides the peer itself."""
    devices = [[d.name, d.endpoint, str(d.address), [str(a) for a in d.allowance],
                str(d.service_network) if d.service_network is not None else ""] for d in plan.devices]
    return _digest({"devices": devices, "forbidden": [[str(n), why] for n, why in forbidden],
                    "facts": dict(facts.as_dict(), known=facts.known), "own": sorted(own)})


def _peer_key(dev: Device, peer: Peer) -> str:
    rot = peer.rotation
    return _digest([dev.name, peer.source, peer.public_key, peer.endpoint, [str(p) for p in peer.allowed_ips],
                    str(peer.tunnel) if peer.tunnel is not None else "", rot.protocol, rot.next_key])


def _verdict_doc(v: policy.Verdict) -> Dict[str, Any]:
    return {"kept": v.kept, "allowed": [str(p) for p in v.allowed], "hosts": [str(h) for h in v.hosts],
            "problems": v.problems, "waiting": v.waiting, "refused": [list(r) for r in v.refused]}


def _verdict(doc: Any, peer: Peer) -> Optional[policy.Verdict]:
    """A kept verdict for ``peer`` (None: not one ``_verdict_doc`` wrote for a peer with this data)."""
    try:
        v = policy.Verdict()
        v.kept = doc["kept"] is True
        allowed = set(doc["allowed"])
        v.allowed = [p for p in peer.allowed_ips if str(p) in allowed]
        if len(v.allowed) != len(allowed):
            return None
        v.hosts = [ipaddress.ip_network(h) for h in doc["hosts"]]
        v.problems, v.waiting = [str(p) for p in doc["problems"]], [str(w) for w in doc["waiting"]]
        v.refused = [(str(a), str(b)) for a, b in doc["refused"]]
        return v
    except (KeyError, TypeError, ValueError):
        return None


def admit(plan: Plan, facts: Facts, incumbents: Iterable[str] = (), own_keys: Iterable[str] = (),
          related: Optional[Mapping[str, Iterable[str]]] = None, memo: Optional[Dict[str, Any]] = None) -> None:
    """``policy.admit(plan, facts, incumbents, own_keys, related)``, reusing ``memo`` (a dict this
    function filled before; it is updated in place for the next call)."""
    memo = memo if memo is not None else {}
    if memo.get("format") != MEMO_FORMAT:
        memo.clear()
    held, own = set(incumbents), set(own_keys)
    forbidden = policy.own_forbidden(plan, facts)
    context = _context(plan, facts, forbidden, own)
    kept_verdicts = memo.get("verdicts") if memo.get("context") == context else None
    verdicts: Dict[str, Any] = {}
    for dev in plan.devices:
        stays = []
        for peer in dev.peers:
            key = _peer_key(dev, peer)
            v = _verdict(kept_verdicts.get(key), peer) if isinstance(kept_verdicts, dict) and key in kept_verdicts \
                else None
            if v is None:
                CLOCK.count("peers_judged")
                v = policy.judge(dev, peer, forbidden, facts, own)
            verdicts[key] = _verdict_doc(v)
            if policy.apply_verdict(dev, peer, v):
                stays.append(peer)
        dev.peers = stays
    retained = policy.retained_claims(plan, held, related)
    owners = _owners(plan)
    key_claims = {oid: [_key_claim(dev, peer, k, held) for k in policy.keys_of(peer)]
                  for oid, (dev, peer) in owners.items()}
    _add_retained(key_claims, [c for c in retained if c.kind == "key"])
    key_out = _settle(key_claims, memo.get("keys"), _same_key, _key_rivals)
    lost = {oid for oid, out in key_out.items() if out}
    addr_claims = {oid: _address_claims(dev, peer, held) for oid, (dev, peer) in owners.items() if oid not in lost}
    _add_retained(addr_claims, [c for c in retained if c.kind != "key"])
    addr_out = _settle(addr_claims, memo.get("addresses"), _overlap, _address_rivals)
    _apply(plan, owners, key_claims, key_out, addr_claims, addr_out)
    policy.keep_routable(plan)
    memo.clear()
    memo.update({"format": MEMO_FORMAT, "context": context, "verdicts": verdicts,
                 "keys": {"claims": key_claims, "out": key_out}, "addresses": {"claims": addr_claims, "out": addr_out}})


# --------------------------------------------------------------------------- owners and claims


def _owners(plan: Plan) -> Dict[str, Tuple[Device, Peer]]:
    """Every admitted peer by a name of its own: ``dev|unit``, or ``dev|manual#i`` (manual peers are
    told apart by their place: two of them may conflict with each other)."""
    out: Dict[str, Tuple[Device, Peer]] = {}
    for dev in plan.devices:
        manual = 0
        for peer in dev.peers:
            if peer.source == MANUAL:
                oid = "{}|{}#{}".format(dev.name, MANUAL, manual)
                manual += 1
            else:
                oid = "{}|{}".format(dev.name, peer.source)
            while oid in out:
                oid += "+"
            out[oid] = (dev, peer)
    return out


def _rank(source: str, record: str, held: Set[str]) -> int:
    return 2 * (source != MANUAL) + (record not in held)


def _key_claim(dev: Device, peer: Peer, key: str, held: Set[str]) -> Claim:
    return ["key", key, 0, 0, 0, _rank(peer.source, "{}|{}|key:{}".format(dev.name, peer.source, key), held)]


def _net_claim(kind: str, value: str, net: Any, rank: int) -> Claim:
    return [kind, value, net.version, int(net.network_address), net.prefixlen, rank]


def _address_claims(dev: Device, peer: Peer, held: Set[str]) -> List[Claim]:
    out = [_net_claim("prefix", str(p), p, _rank(peer.source, "{}|{}|{}".format(dev.name, peer.source, p), held))
           for p in peer.allowed_ips]
    for h in peer.endpoint_hosts:
        value = str(h.network_address)
        out.append(_net_claim("endpoint", value, h,
                              _rank(peer.source, "{}|{}|endpoint:{}".format(dev.name, peer.source, value), held)))
    return out


def _add_retained(claims: Dict[str, List[Claim]], retained: List[policy.Claim]) -> None:
    """Retained claims (held for a related unit that is not admitted now: rank held, never lost)."""
    for c in retained:
        oid = "{}|{}|held".format(c.dev, c.source)
        if c.net is None:
            claim = ["key", c.value, 0, 0, 0, 2]
        else:
            claim = _net_claim(c.kind, c.value, c.net, 2)
        claims.setdefault(oid, []).append(claim)


def _label(oid: str) -> str:
    """``unit on dev`` as the problems name an owner (a retained one: with why it holds)."""
    dev, source = oid.split("|")[:2]
    source = source.split("#")[0].rstrip("+")
    return "{} on {}".format(source, dev) + (_HELD if oid.endswith("|held") else "")


def _same_key(a: Claim, b: Claim) -> bool:
    return a[1] == b[1]


def _overlap(a: Claim, b: Claim) -> bool:
    if a[2] != b[2]:
        return False
    shift = (32 if a[2] == 4 else 128) - min(a[4], b[4])
    return (a[3] >> shift) == (b[3] >> shift)


def _key_rivals(a: Claim, b: Claim) -> bool:
    return _same_key(a, b)


def _address_rivals(a: Claim, b: Claim) -> bool:
    """Overlapping addresses of two owners; two endpoints never conflict (peers may share a host)."""
    return not (a[0] == "endpoint" and b[0] == "endpoint") and _overlap(a, b)


# --------------------------------------------------------------------------- settling


def _settle(claims: Dict[str, List[Claim]], kept: Any, touches: Any, rivals: Any) -> Dict[str, List[Any]]:
    """{owner: [[claim index, rival labels], ...] of the claims it loses} for every owner that is
    not retained, settled again only where a change can reach (see the module's docstring)."""
    live = [oid for oid in claims if not oid.endswith("|held")]
    prev_claims, prev_out = _stage_memo(kept)
    if prev_claims is None:
        affected = set(live)
    else:
        changed = {oid for oid in set(claims) | set(prev_claims) if claims.get(oid) != prev_claims.get(oid)}
        moved = [c for oid in changed for c in claims.get(oid, []) + prev_claims.get(oid, [])]
        affected = {oid for oid in live if oid in changed or oid not in prev_out
                    or any(touches(c, m) for c in claims[oid] for m in moved)}
    out = {oid: prev_out[oid] for oid in live if oid not in affected}
    if affected:
        CLOCK.count("owners_settled", len(affected))
        every = [(oid, c) for oid, cs in claims.items() for c in cs]
        for oid in affected:
            out[oid] = _losses(oid, claims[oid], every, rivals)
    return {oid: out[oid] for oid in live}


def _losses(oid: str, mine: List[Claim], every: List[Tuple[str, Claim]], rivals: Any) -> List[Any]:
    lost = []
    for i, c in enumerate(mine):
        others = [(o, r) for o, r in every if o != oid and rivals(c, r)]
        if others and not all(c[5] < r[5] for _, r in others):
            lost.append([i, sorted({_label(o) for o, _ in others})])
    return lost


def _stage_memo(kept: Any) -> Tuple[Optional[Dict[str, List[Claim]]], Dict[str, Any]]:
    if not (isinstance(kept, dict) and isinstance(kept.get("claims"), dict) and isinstance(kept.get("out"), dict)):
        return None, {}
    return kept["claims"], kept["out"]


def _apply(plan: Plan, owners: Dict[str, Tuple[Device, Peer]], key_claims: Dict[str, List[Claim]],
           key_out: Dict[str, List[Any]], addr_claims: Dict[str, List[Claim]],
           addr_out: Dict[str, List[Any]]) -> None:
    """The outcomes into the plan, in policy._resolve's order: per device, each peer's lost keys,
    then each remaining peer's lost addresses."""
    gone: Set[str] = set()
    for oid, (dev, peer) in owners.items():
        for _i, labels in key_out.get(oid, []):
            dev.problems.append("refused {} on {}: its public key is also announced by {}".format(
                peer.source, dev.name, ", ".join(labels)))
            gone.add(oid)
    for oid, (dev, peer) in owners.items():
        lost_prefixes = set()
        for i, labels in addr_out.get(oid, []) if oid not in gone else []:
            kind, value = addr_claims[oid][i][0], addr_claims[oid][i][1]
            others = ", ".join(labels)
            if kind == "endpoint":
                dev.problems.append("refused {} on {}: its endpoint {} lies inside what {} holds".format(
                    peer.source, dev.name, value, others))
                gone.add(oid)
            else:
                dev.problems.append("refused {} from {} on {}: also claimed by {}".format(
                    value, peer.source, dev.name, others))
                dev.refused_prefixes.append((peer.source, value))
                lost_prefixes.add(value)
        if lost_prefixes:
            peer.allowed_ips = [p for p in peer.allowed_ips if str(p) not in lost_prefixes]
    for dev in plan.devices:
        dev.peers = [p for p in dev.peers if not any(owners[o][1] is p for o in gone)]
