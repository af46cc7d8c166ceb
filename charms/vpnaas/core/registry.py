"""The bundle's registry (``registry.yaml`` beside this module): components, the reference points
between them, and the code each component ships. Read once, checked, and handed out as plain
values; nothing else in the bundle spells these facts out.

Pure (PyYAML only, which every charm carries as a dependency of ops): the names an entry gives of
code (``describe``, ``ue``, a workload's ``class``) are resolved where the class is composed,
vpnaas/charm/entry.py, never here.
"""
import ipaddress
import os
import re
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

import yaml

PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "registry.yaml")
_NAME = re.compile(r"[a-z][a-z0-9-]{0,11}")
#: A labelled reference point's name must fit an address label: IFNAMSIZ leaves 15 bytes, and the
#: longer of the two label prefixes (vnf/tunnels.sh) is "lo:vpnaas-" (10), so 5 are left.
LABEL_MAX = 5


class RegistryError(ValueError):
    pass

#: The planes a reference point can belong to (registry ``plane``; default control).
PLANES = ("control", "user")
#: Which ends' network functions bind their service address on a reference point by interface
#: name (registry ``binds``; default none): they read the address of a labelled interface.
BINDS = ("none", "provider", "requirer", "both")
#: The name of an option in which one end's charm names the other end's service address.
_OPTION = re.compile(r"[a-z][a-z0-9-]{0,62}")


class ReferencePoint(NamedTuple):
    name: str
    provider: str
    requirer: str
    listen_port: int
    tunnel_network: str
    service_network: str
    carries: str
    #: Each service address on this reference point gets an address label of its own (``label``):
    #: for network functions that bind by interface name (SIOCGIFADDR reads one address per name).
    labelled: bool = False
    #: ``user`` for a user-plane reference point (subscribers' traffic: GTP-U), else ``control``:
    #: a tunnel of the user plane that is down is a critical alert (monitoring/, docs/metrics.md).
    plane: str = "control"
    #: The side that is the client of the measurements (iperf3 -c, ping: make deploy's measure,
    #: the testbed): ``requirer`` unless the registry says ``provider``.
    client: str = "requirer"
    #: The ends whose network function binds its service address here by interface name (the
    #: address label's placeholder in its configuration; oai/cn5g), of ``BINDS``.
    binds: str = "none"
    #: (side, option): the ends whose network function is configured with the other end's service
    #: address (registry ``peer-option``), and the option in which that end's charm may name it
    #: (a variant without tunnels sets it; otherwise the related peer's published address is used).
    peer_options: Tuple[Tuple[str, str], ...] = ()

    def peer_option(self, component: str) -> str:
        """The option in which ``component``'s end names the other end's service address; "" when
        its network function does not need it."""
        for side, option in self.peer_options:
            if component == (self.provider if side == "provider" else self.requirer):
                return option
        return ""

    def bound_by(self, component: str) -> bool:
        """Whether ``component``'s network function binds its service address here by interface name."""
        return ((self.binds in ("provider", "both") and component == self.provider)
                or (self.binds in ("requirer", "both") and component == self.requirer))

    def default_service_address(self, component: str) -> str:
        """``component``'s service address on this reference point when the IP plan names none
        (a params file's ``<name>_service_addresses``, a charm's ``<name>-service-addresses``): the
        service network's first host for the provider, the first host of its upper half for the
        requirer, so that the instances a scaled VDU adds (+k: vpnaas/core/instance.py) stay on
        their side. "" when the component is no end or the network has no room for both halves."""
        if component not in (self.provider, self.requirer) or not self.service_network:
            return ""
        net = ipaddress.ip_network(self.service_network)
        if net.num_addresses < 8:
            return ""
        offset = 1 if component == self.provider else net.num_addresses // 2 + 1
        return "{}/{}".format(net.network_address + offset, net.max_prefixlen)

    @property
    def label(self) -> str:
        """The label suffix of its service addresses ("" when not labelled; see vnf/tunnels.sh)."""
        return self.name if self.labelled else ""


class Component(NamedTuple):
    name: str
    workload: str
    modules: List[str]       # the shared package's modules it ships besides the core and its workload's
    #                          (dotted below vpnaas: "oai.lte.hss")
    vnfd: Optional[str]      # path of its VNFD source (None: no VNF package)
    describe: str            # "module.attribute" of its description (an oai.Component), or ""
    ue: str = ""             # "module.attribute" of the UE its VNF can run (an oai.Ue), or ""

    @property
    def title(self) -> str:
        """Its name as a class name stem: ``wireguard-proxy`` -> ``WireguardProxy``."""
        return "".join(part.capitalize() for part in self.name.split("-"))


class Workload(NamedTuple):
    name: str
    modules: List[str]
    vnf: List[str]
    fragments: List[str]
    #: "module.class" of its workload class (a charm.workload.Workload whose ``of(...)`` gives a
    #: component's own; the glue's charm.workload.Workload, or one of ``modules``).
    cls: str = "charm.workload.Workload"


class Registry(NamedTuple):
    reference_points: Dict[str, ReferencePoint]
    components: Dict[str, Component]
    workloads: Dict[str, Workload]

    def endpoints_of(self, component: str) -> List[ReferencePoint]:
        """The reference points ``component`` provides or requires, in the registry's order."""
        return [rp for rp in self.reference_points.values() if component in (rp.provider, rp.requirer)]

    def default_service_addresses(self, component: str) -> Dict[str, str]:
        """{reference point: ``component``'s default service address there} for each reference point
        it is an end of that has one (``ReferencePoint.default_service_address``), in the registry's
        order: what an IP plan that names no address gives it (bundle.params, the test fixtures)."""
        out = {rp.name: rp.default_service_address(component) for rp in self.endpoints_of(component)}
        return {name: addr for name, addr in out.items() if addr}

    def with_vnfd(self) -> List[Component]:
        return [c for c in self.components.values() if c.vnfd]

    def of_workload(self, workload: str) -> List[Component]:
        return [c for c in self.components.values() if c.workload == workload]

    def shipped_modules(self, component: str) -> List[str]:
        """The modules of the shared package that belong to a component or workload: a charm ships
        the others (the core) plus only its own."""
        comp = self.components[component]
        return self.workloads[comp.workload].modules + comp.modules

    def all_component_modules(self) -> List[str]:
        out = []
        for w in self.workloads.values():
            out += w.modules
        for c in self.components.values():
            out += c.modules
        return sorted(set(out))


def parse(doc: Any) -> Registry:
    """Check a registry document and return it as values (RegistryError names what is wrong)."""
    if not isinstance(doc, dict):
        raise RegistryError("the registry is not a mapping")
    workloads = {}
    for name, w in (doc.get("workloads") or {}).items():
        workloads[name] = Workload(name, list(w.get("modules") or []), list(w.get("vnf") or []),
                                   list(w.get("fragments") or ["_common"]),
                                   str(w.get("class") or "charm.workload.Workload"))
    components = {}
    for name, c in (doc.get("components") or {}).items():
        if c.get("workload") not in workloads:
            raise RegistryError("component {}: unknown workload {!r}".format(name, c.get("workload")))
        components[name] = Component(name, c["workload"], list(c.get("modules") or []), c.get("vnfd"),
                                     str(c.get("describe") or ""), str(c.get("ue") or ""))
        for key in ("describe", "ue"):
            module = str(c.get(key) or "").rpartition(".")[0]
            if module and module not in components[name].modules:
                raise RegistryError("component {}: {} {} is not one of its modules".format(name, key, module))
    rps: Dict[str, ReferencePoint] = {}
    ports: Dict[int, str] = {}
    for name, r in (doc.get("reference-points") or {}).items():
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise RegistryError("reference point {!r}: 1-12 lower-case letters, digits or '-'".format(name))
        try:
            rps[name] = _reference_point(name, r, components, ports)
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            if isinstance(e, RegistryError):
                raise
            raise RegistryError("reference point {}: {}: {}".format(name, type(e).__name__, e)) from None
    return Registry(rps, components, workloads)


def _reference_point(name: str, r: Dict[str, Any], components: Dict[str, Component],
                     ports: Dict[int, str]) -> ReferencePoint:
    for side in ("provider", "requirer"):
        if r.get(side) not in components:
            raise RegistryError("reference point {}: {} {!r} is not a component".format(name, side, r.get(side)))
    port = int(r["listen-port"])
    if not 1 <= port <= 65535:
        raise RegistryError("reference point {}: listen port {} is out of range".format(name, port))
    if port in ports:
        raise RegistryError("reference point {}: listen port {} is {}'s".format(name, port, ports[port]))
    ports[port] = name
    tunnel = ipaddress.ip_network(r["tunnel-network"])
    if tunnel.num_addresses < 4:
        raise RegistryError("reference point {}: the tunnel network needs two hosts".format(name))
    service = str(ipaddress.ip_network(r["service-network"])) if r.get("service-network") else ""
    labelled = r.get("labelled", False)
    if not isinstance(labelled, bool):
        raise RegistryError("reference point {}: labelled must be true or false".format(name))
    if labelled and len(name) > LABEL_MAX:
        raise RegistryError("reference point {}: a labelled name has at most {} characters (the address label "
                            "lo:vpnaas-<name> must fit 15 bytes)".format(name, LABEL_MAX))
    plane = r.get("plane", "control")
    if plane not in PLANES:
        raise RegistryError("reference point {}: plane must be one of {}".format(name, ", ".join(PLANES)))
    client = r.get("client", "requirer")
    if client not in ("provider", "requirer"):
        raise RegistryError("reference point {}: client must be provider or requirer".format(name))
    binds = r.get("binds", "none")
    if binds not in BINDS:
        raise RegistryError("reference point {}: binds must be one of {}".format(name, ", ".join(BINDS)))
    if binds != "none" and not labelled:
        raise RegistryError("reference point {}: a network function that binds by interface name needs the address "
                            "label (labelled: true)".format(name))
    return ReferencePoint(name, r["provider"], r["requirer"], port, str(tunnel), service, str(r.get("carries") or ""),
                          labelled, plane, client, binds, _peer_options(name, r.get("peer-option") or {}))


def _peer_options(name: str, entry: Any) -> Tuple[Tuple[str, str], ...]:
    """The ``peer-option`` entry: {provider|requirer: option name}, in that order of sides."""
    if not isinstance(entry, dict) or set(entry) - {"provider", "requirer"}:
        raise RegistryError("reference point {}: peer-option maps provider and/or requirer to an option name".format(
            name))
    out = []
    for side in ("provider", "requirer"):
        option = entry.get(side)
        if option is None:
            continue
        if not isinstance(option, str) or not _OPTION.fullmatch(option):
            raise RegistryError("reference point {}: peer-option {}: {!r} is not an option name".format(
                name, side, option))
        out.append((side, option))
    return tuple(out)


_CACHE: Dict[str, Registry] = {}
#: libyaml's parser under PyYAML's safe constructor where the wheel has it (every charm's pinned
#: PyYAML does: the same values as SafeLoader, tests/unit/test_registry.py): the registry is
#: parsed on every charm run, and the pure-Python parser takes most of a charm's own import time.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load(path: str = PATH) -> Registry:
    if path not in _CACHE:
        with open(path) as f:
            _CACHE[path] = parse(yaml.load(f, Loader=_LOADER))  # a safe loader, either way
    return _CACHE[path]
