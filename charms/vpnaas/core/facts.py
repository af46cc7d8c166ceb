"""What a VNF reports about itself, for the route policy and the operator-mistake checks.

Pure module (no ops, no SSH). The VNF prints ``FACT <kind> <value>`` lines (``facts_guard`` in
``vnf/tunnels.sh``): every address that is not the charm's own, the gateways of its default routes,
the SSH client's address as it sees it, whether IPv6 is on, and the addresses each WireGuard
endpoint name of the plan resolves to on the VNF. Those lines only ever make the policy
stricter, and every value is checked by the grammar before it is used; a malformed line is
skipped. The VNF also prints a digest of the lines (``FACTS <digest>``): the charm hands it back
with the next tunnel step, and the VNF applies nothing unless its facts still have that digest
(a rebuilt VNF at the same address, a new gateway: the plan is made again first).
"""
import ipaddress
from typing import Any, Dict, Iterable, List, Optional, Tuple

from vpnaas.core import validation
from vpnaas.core.validation import Address, Interface, Network

Forbidden = List[Tuple[Network, str]]


def host_prefix(address: Any) -> Network:
    """The /32 or /128 of an address."""
    address = ipaddress.ip_address(str(address))
    return ipaddress.ip_network("{}/{}".format(address, address.max_prefixlen))


class Facts(object):
    """What the VNF reported (``known`` is False until one has)."""

    def __init__(self, addresses: Iterable[Interface] = (), gateways: Iterable[Address] = (), client: str = "",
                 ipv6: bool = True, known: bool = False, resolved: Optional[Dict[str, List[Address]]] = None,
                 digest: str = "") -> None:
        self.addresses = list(addresses)   # every address not owned by the charm
        self.gateways = list(gateways)     # of the default routes
        self.client = client               # the SSH client's address as the VNF sees it, or ""
        self.ipv6 = ipv6
        self.known = known
        #: endpoint name -> the addresses it resolves to on the VNF ([]: it does not resolve)
        self.resolved: Dict[str, List[Address]] = dict(resolved or {})
        self.digest = digest               # the VNF's digest of its FACT lines ("" unknown)

    @classmethod
    def from_lines(cls, lines: Iterable[str], digest: str = "") -> "Facts":
        """From ``<kind> <value>`` lines; values are checked, unknown or malformed lines skipped."""
        facts = cls(known=True, digest=digest if _is_digest(digest) else "")
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
                elif kind == "resolve":
                    name, _, address = value.partition(" ")
                    name = validation.host(name, "endpoint name")
                    ip = validation.ip_address(address, "resolved address") if address != "-" else None
                    found = facts.resolved.setdefault(name, [])
                    if ip is not None and ip not in found:
                        found.append(ip)
            except validation.InvalidValue:
                continue
        return facts

    def as_dict(self) -> Dict[str, Any]:
        return {"addresses": [str(a) for a in self.addresses], "gateways": [str(g) for g in self.gateways],
                "client": self.client, "ipv6": self.ipv6, "digest": self.digest,
                "resolved": {n: [str(a) for a in addrs] for n, addrs in sorted(self.resolved.items())}}

    @classmethod
    def from_dict(cls, doc: Optional[Dict[str, Any]]) -> "Facts":
        """From ``as_dict``'s form (state on the proxy machine: checked again like the VNF's lines;
        what is not of as_dict's shape is skipped like a malformed line)."""
        if not doc or not isinstance(doc, dict):
            return cls()
        client = doc.get("client")
        lines = (["addr " + a for a in _texts(doc.get("addresses"))]
                 + ["gateway " + g for g in _texts(doc.get("gateways"))]
                 + (["client " + client] if client and isinstance(client, str) else [])
                 + ["ipv6 " + ("on" if doc.get("ipv6", True) else "off")])
        resolved = doc.get("resolved")
        for name, addrs in sorted((resolved if isinstance(resolved, dict) else {}).items()):
            if isinstance(name, str):
                lines += ["resolve {} {}".format(name, a) for a in _texts(addrs)] or ["resolve {} -".format(name)]
        digest = doc.get("digest")
        return cls.from_lines(lines, digest=digest if isinstance(digest, str) else "")

    def connected(self) -> List[Network]:
        """The networks of this VNF's interfaces (addresses with a prefix shorter than a host's)."""
        return [iface.network for iface in self.addresses if iface.network.prefixlen < iface.network.max_prefixlen]

    def forbidden(self) -> Forbidden:
        """(network, reason) pairs a peer prefix must not overlap."""
        # Most precise reason first: a prefix may overlap several of these.
        out: Forbidden = []
        if self.client:
            out.append((host_prefix(self.client), "the management path to the charm ({})".format(self.client)))
        out += [(host_prefix(g), "this VNF's default gateway {}".format(g)) for g in self.gateways]
        out += [(host_prefix(iface.ip), "this VNF's address {}".format(iface.ip)) for iface in self.addresses]
        out += [(net, "this VNF's connected network {}".format(net)) for net in self.connected()]
        return out


def _texts(value: Any) -> List[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _is_digest(text: str) -> bool:
    return len(text) == 64 and all(c in "0123456789abcdef" for c in text)
