"""From an NS/NSI variant of the bundle to what the testbed instantiates.

Reads the same descriptors and params files that are packaged for OSM (``bundle.descriptors``,
``bundle.params``) and resolves what OSM would: the virtual links and their CIDRs, each VNF's
addresses from the params' IP plan, the ``config`` primitive with its ``<placeholders>`` filled
from ``additionalParamsForVnf``, the remaining initial primitives in ``seq`` order, and the NSD
relations. An NSI becomes one instance per NST, each in its own Juju model, as OSM does.
"""
import ipaddress
import os

from bundle import descriptors, params
from testbed.emulators import lcm
from vpnaas.core import refpoints, registry

#: Primitives that need the internet (OAI sources and the builds made from them): never run here,
#: reported SKIPPED by name.
NEEDS_INTERNET = ("oai-install", "oai-configure")
#: What the emulated VMs let the charms log in as (the cloud images' "ubuntu" user does not exist
#: on the testbed's machine, and its namespaces share the machine's users).
TESTBED_LOGIN = "root"
#: Placeholders LCM fills itself, per execution environment (lcm.fill_placeholders).
LCM_BUILTIN = ("<rw_mgmt_ip>", "<OSM>")


class NsModelError(Exception):
    pass


class RefPoint(object):
    """One tunnelled (or, without WireGuard, plain) interface between two VNFs."""

    def __init__(self, name, link, provider, requirer, underlay, service, ports=()):
        self.name = name                # s6a ...
        self.link = link                # virtual link id
        self.provider = provider        # application names
        self.requirer = requirer
        self.underlay = underlay        # {app: address on the link}
        self.service = service          # {app: service address} (equal to underlay without tunnels)
        self.ports = list(ports)        # WireGuard listen ports of both ends

    def __repr__(self):
        return "RefPoint({} {}<->{})".format(self.name, self.provider, self.requirer)


class Instance(object):
    def __init__(self, name, descriptor_id, prefix):
        self.name = name
        self.descriptor_id = descriptor_id
        self.prefix = prefix
        self.links = {}         # link name (prefixed) -> cidr
        self.vnfs = []          # lcm.VnfSpec
        self.relations = []     # (provider "app:ep", requirer "app:ep")
        self.refpoints = []     # RefPoint
        self.tunnelled = False


def _placeholder(value):
    return isinstance(value, str) and value.startswith("<") and value.endswith(">")


def _resolve_config(primitive, extra, member):
    out = {}
    for p in primitive.get("parameter") or []:
        value = p.get("value", p.get("default-value"))
        if _placeholder(value) and value not in LCM_BUILTIN:
            key = value[1:-1]
            if key not in extra:
                raise NsModelError("member {}: placeholder {} is not in additionalParamsForVnf".format(member, value))
            value = extra[key]
        if p.get("data-type") == "INTEGER" and not _placeholder(value):
            value = int(value)
        out[p["name"]] = value if not isinstance(value, (int, float)) or isinstance(value, bool) else value
    if "ssh-username" in out:
        out["ssh-username"] = TESTBED_LOGIN
    return out


def _scaling(vnfd):
    """The VNFD's first scaling aspect as LCM runs it (one VDU by vdu-delta), or None."""
    df = (vnfd.get("df") or [{}])[0]
    for aspect in df.get("scaling-aspect") or []:
        delta = aspect["aspect-delta-details"]["deltas"][0]["vdu-delta"][0]
        profile = next((p for p in df.get("vdu-profile") or [] if p["id"] == delta["id"]), {})
        actions = [(a["trigger"], a["vnf-config-primitive-name-ref"])
                   for a in aspect.get("scaling-config-action") or []]
        vdu = next((v for v in vnfd.get("vdu") or [] if v["id"] == delta["id"]), {})
        return lcm.ScalingAspect(aspect["name"], delta["id"], int(delta["number-of-instances"]),
                                 int(profile.get("max-number-of-instances", 10)), actions,
                                 cloud_init=bool(vdu.get("cloud-init-file") or vdu.get("cloud-init")))
    return None


def _first_address(text):
    first = (text or "").split(",")[0].strip()
    return str(ipaddress.ip_interface(first).ip) if first else ""


def build_instance(bundle, nsd_id, plan, charms_dir, name, prefix=""):
    """``plan`` is the ns-create config (rendered params) for this NS: vld + additionalParamsForVnf."""
    nsd = bundle.nsd(nsd_id)
    if nsd is None:
        raise NsModelError("no NSD {}".format(nsd_id))
    ns = nsd.body
    inst = Instance(name, nsd_id, prefix)
    df = ns["df"][0]
    cidrs = {}
    for vlp in df.get("virtual-link-profile") or []:
        l3 = ((vlp.get("virtual-link-protocol-data") or {}).get("l3-protocol-data") or {})
        if l3.get("cidr"):
            cidrs[vlp["virtual-link-desc-id"]] = l3["cidr"]
    mgmt = {v["id"] for v in ns["virtual-link-desc"] if v.get("mgmt-network")}
    addresses = {}      # (member, cp) -> ip
    for vld in plan.get("vld") or []:
        for ref in vld.get("vnfd-connection-point-ref") or []:
            key = (ref["member-vnf-index-ref"], ref["vnfd-connection-point-ref"])
            addresses[key] = (vld["name"], ref["ip-address"])
    extra = {a["member-vnf-index"]: a.get("additionalParams") or {} for a in plan.get("additionalParamsForVnf") or []}
    for link, cidr in cidrs.items():
        if link not in mgmt:
            inst.links[prefix + link] = cidr
    member_link_addr = {}
    for profile in df["vnf-profile"]:
        member = profile["id"]
        vnfd = bundle.vnfd(profile["vnfd-id"])
        if vnfd is None:
            raise NsModelError("NSD {} names VNFD {} which the bundle does not have".format(nsd_id, profile["vnfd-id"]))
        charm = descriptors.charm_of(vnfd.body)
        charm_name = charm[:-len(".charm")] if charm and charm.endswith(".charm") else charm
        links = {}
        for conn in profile.get("virtual-link-connectivity") or []:
            link = conn["virtual-link-profile-id"]
            if link in mgmt:
                continue
            for cp in conn.get("constituent-cpd-id") or []:
                key = (member, cp["constituent-cpd-id"])
                if key not in addresses:
                    raise NsModelError("params give no address for {} {}".format(*key))
                ip = addresses[key][1]
                links[prefix + link] = "{}/{}".format(ip, ipaddress.ip_network(cidrs[link]).prefixlen)
                member_link_addr[(member, link)] = ip
        entry = descriptors.day12(vnfd.body) or {}
        prims = sorted(entry.get("initial-config-primitive") or [], key=lambda p: int(p["seq"]))
        config, later = {}, []
        for prim in prims:
            if prim["name"] == "config":
                config = _resolve_config(prim, extra.get(member, {}), member)
            else:
                later.append((prim["name"], {p["name"]: p.get("value") for p in prim.get("parameter") or []}))
        inst.vnfs.append(lcm.VnfSpec(prefix + member, os.path.join(charms_dir, charm_name), links, config, later,
                                     skip=NEEDS_INTERNET, vdu=descriptors.vdu_level(vnfd.body),
                                     member=prefix + member, scaling=_scaling(vnfd.body), vnfd=vnfd.body))
    configs = {v.name: v.config for v in inst.vnfs}
    for rel in (ns.get("ns-configuration") or {}).get("relation") or []:
        prov, req = rel.get("provider"), rel.get("requirer")
        if prov is None and rel.get("entities"):
            prov, req = ({"vnf-profile-id": e["id"], "endpoint": e["endpoint"]} for e in rel["entities"])
        inst.relations.append(("{}{}:{}".format(prefix, prov["vnf-profile-id"], prov["endpoint"]),
                               "{}{}:{}".format(prefix, req["vnf-profile-id"], req["endpoint"])))
        ep = prov["endpoint"]
        pa, ra = prefix + prov["vnf-profile-id"], prefix + req["vnf-profile-id"]
        link = ep if (prov["vnf-profile-id"], ep) in member_link_addr else None
        underlay = {pa: member_link_addr.get((prov["vnf-profile-id"], ep), ""),
                    ra: member_link_addr.get((req["vnf-profile-id"], ep), "")}
        service = {pa: _first_address(configs[pa].get(ep + "-service-addresses")),
                   ra: _first_address(configs[ra].get(ep + "-service-addresses"))}
        ports = sorted({int(configs[a].get(ep + "-listen-port") or refpoints.default_port(ep)) for a in (pa, ra)})
        inst.refpoints.append(RefPoint(ep, prefix + link if link else None, pa, ra, underlay, service, ports))
    inst.tunnelled = bool(inst.relations)
    if not inst.tunnelled:
        inst.refpoints = _plain_refpoints(ns, prefix, member_link_addr)
    return inst


#: Which member provides and which requires each reference point (the registry's).
PROVIDERS = {rp.name: (rp.provider, rp.requirer) for rp in registry.load().reference_points.values()}


def _plain_refpoints(ns, prefix, member_link_addr):
    out = []
    for ep, (prov, req) in sorted(PROVIDERS.items()):
        if (prov, ep) in member_link_addr and (req, ep) in member_link_addr:
            addr = {prefix + prov: member_link_addr[(prov, ep)], prefix + req: member_link_addr[(req, ep)]}
            out.append(RefPoint(ep, prefix + ep, prefix + prov, prefix + req, addr, dict(addr)))
    return out


def load(variant, charms_dir, env):
    """The instances of ``variant`` (one for an NS, one per NST for an NSI)."""
    bundle = descriptors.load_bundle()
    if variant not in bundle.variants:
        raise NsModelError("unknown NS variant {!r}; choose one of: {}".format(
            variant, ", ".join(sorted(bundle.variants))))
    entry = bundle.variants[variant]
    members = descriptors.members_of(bundle, entry["descriptor_ids"][0]) if entry["kind"] == "ns" else None
    rendered = params.render(os.path.join(descriptors.ROOT, entry["params"]), env, members=members)
    if entry["kind"] == "ns":
        return [build_instance(bundle, entry["descriptor_ids"][0], rendered, charms_dir, variant)]
    instances = []
    for nst_id in entry["descriptor_ids"]:
        nst = next(n for n in bundle.nsts if n.id == nst_id)
        for subnet in nst.body.get("netslice-subnet") or []:
            config = params.with_slice_5qi(rendered, nst.body, members=descriptors.members_of(bundle, nst_id))
            plan = _subnet_plan(config, subnet["id"])  # with the NST's 5QI, as OSM gets it
            short = nst_id.rsplit("-", 1)[-1]          # embb / urllc
            instances.append(build_instance(bundle, subnet["nsd-ref"], plan, charms_dir, short, prefix=short + "-"))
    return instances


def _subnet_plan(nsi_params, subnet_id):
    sub = next((s for s in nsi_params.get("netslice-subnet") or [] if s.get("id") == subnet_id), {})
    # NBI's nsi_instantiate form: the subnet's VNF parameters are inside its netslice-subnet item
    if "additionalParamsForSubnet" in nsi_params:
        raise NsModelError("additionalParamsForSubnet is refused by OSM: put additionalParamsForVnf "
                           "inside the netslice-subnet item")
    return {"vld": sub.get("vld") or [], "additionalParamsForVnf": sub.get("additionalParamsForVnf") or []}
