"""The descriptor sources and every variant generated from them.

Sources: vnf/<c>/<c>_vnfd.yaml, the NSD sources ns/variants.yaml names (ns/eps_wg_nsd.yaml for
LTE, ns/sa_wg_nsd.yaml for 5G SA), nst/*_nst.yaml; ns/variants.yaml says how the other NS and VNF
variants are derived. Both the package builder and the validator take their
descriptors from ``load_bundle()``, so what is validated is exactly what is packaged.
"""

import copy
import os

import yaml

from bundle import ROOT, membership
from bundle.yamlfile import SAFE_LOADER, load_mapping
from vpnaas.core import registry

#: The components with a VNF package, in the registry's order.
VNF_NAMES = tuple(c.name for c in registry.load().with_vnfd())
VARIANTS_FILE = "ns/variants.yaml"
KINDS = ("vnfd", "nsd", "nst")


class DescriptorError(Exception):
    pass


class Descriptor:
    """One descriptor document (with its envelope) and where it comes from."""

    def __init__(self, kind, data, file, source, variant=None):
        self.kind = kind
        self.data = data
        self.file = file  # what error messages name
        self.source = source  # the source file it comes from (relative to ROOT)
        self.variant = variant  # None for a source, else the variant name

    @property
    def body(self):
        return body(self.kind, self.data)

    @property
    def id(self):
        return self.body.get("id")

    @property
    def package(self):
        """Package folder name (VNF/NS) or NST file name."""
        return {"vnfd": "{}_vnf", "nsd": "{}_ns", "nst": "{}_nst.yaml"}[self.kind].format(self.id)

    @property
    def descriptor_name(self):
        return {"vnfd": "{}_vnfd.yaml", "nsd": "{}_nsd.yaml", "nst": "{}_nst.yaml"}[self.kind].format(self.id)

    def __repr__(self):
        return "Descriptor({}, {})".format(self.kind, self.file)


def body(kind, data):
    """The descriptor inside its envelope. Raises KeyError/IndexError/TypeError."""
    if kind == "vnfd":
        return data["vnfd"]
    if kind == "nsd":
        return data["nsd"]["nsd"][0]
    return data["nst"][0]


def path_prefix(kind):
    return {"vnfd": ["vnfd"], "nsd": ["nsd", "nsd", 0], "nst": ["nst", 0]}[kind]


def load_yaml(relpath):
    return load_mapping(os.path.join(ROOT, relpath), relpath, DescriptorError)


def load_yaml_text(text):
    return yaml.load(text, Loader=SAFE_LOADER)


def day12(vnfd):
    """The day1-2 entry of the VNF's execution environment, or None: the VNF-level one (id ==
    vnfd id), else a VDU-level one (id == a vdu id; a VDU that scales has its EE there, one per
    instance: docs/lifecycle.md)."""
    try:
        entries = vnfd["df"][0]["lcm-operations-configuration"]["operate-vnf-op-config"]["day1-2"]
    except (KeyError, IndexError, TypeError):
        return None
    entries = [e for e in entries or [] if isinstance(e, dict)]
    for entry in entries:
        if entry.get("id") == vnfd.get("id"):
            return entry
    vdus = {v.get("id") for v in vnfd.get("vdu") or [] if isinstance(v, dict)}
    return next((e for e in entries if e.get("id") in vdus), None)


def vdu_level(vnfd):
    """The VDU id whose day1-2 entry holds the VNF's execution environment, or None (VNF-level)."""
    entry = day12(vnfd)
    return entry["id"] if entry is not None and entry.get("id") != vnfd.get("id") else None


def charm_of(vnfd):
    """Charm file name (e.g. hss.charm) of the first juju EE of the VNF, or None."""
    entry = day12(vnfd) or {}
    for ee in entry.get("execution-environment-list") or []:
        if isinstance(ee, dict) and isinstance(ee.get("juju"), dict):
            return ee["juju"].get("charm")
    return None


def cloud_init_files(vnfd):
    return [
        v["cloud-init-file"]
        for v in vnfd.get("vdu") or []
        if isinstance(v, dict) and v.get("cloud-init-file")
    ]


# --- VNF variants -------------------------------------------------------------------------------


def make_vnf_variant(src, name, spec):
    data = copy.deepcopy(src.data)
    vnfd = data["vnfd"]
    entry = day12(vnfd)  # looked up by the old id, before it changes
    new_id = vnfd["id"] + spec["suffix"]
    vnfd["id"] = vnfd["product-name"] = new_id
    vnfd["description"] = "{} Variant {}: {}.".format(
        vnfd.get("description", ""), name, spec["description"]
    ).strip()
    if entry is not None and entry.get("id") == src.data["vnfd"]["id"]:
        entry["id"] = new_id            # a VNF-level entry follows the vnfd id; a VDU-level one stays
    factor = spec.get("scale-compute")
    if factor:
        for vcd in vnfd.get("virtual-compute-desc", []):
            vcd["virtual-cpu"]["num-virtual-cpu"] *= factor
            vcd["virtual-memory"]["size"] = float(vcd["virtual-memory"]["size"]) * factor
    for link in spec.get("drop-links", []):
        _drop_link(vnfd, link)
    desc = Descriptor("vnfd", data, "", src.source, variant=name)
    desc.file = "{}/{} (generated from {})".format(desc.package, desc.descriptor_name, src.source)
    return desc


def _drop_link(vnfd, link):
    """Remove the connection point of reference point ``link`` and its endpoint-address option."""
    dropped_int = set()
    keep = []
    for cp in vnfd.get("ext-cpd", []):
        if cp["id"].endswith("-{}-ext".format(link)):
            dropped_int.add(cp.get("int-cpd", {}).get("cpd"))
        else:
            keep.append(cp)
    vnfd["ext-cpd"] = keep
    for vdu in vnfd.get("vdu", []):
        vdu["int-cpd"] = [cp for cp in vdu.get("int-cpd", []) if cp["id"] not in dropped_int]
    entry = day12(vnfd) or {}
    for prim in entry.get("initial-config-primitive", []):
        if prim.get("name") == "config":
            prim["parameter"] = [
                p for p in prim.get("parameter", []) if p.get("name") != "{}-endpoint-address".format(link)
            ]


# --- NS variants --------------------------------------------------------------------------------


def make_ns_variant(src, name, spec, vnf_ids, vnfd_bodies=None):
    """vnf_ids: {(vnf name, vnf variant or None): vnfd id}; vnfd_bodies: {vnfd id: vnfd}."""
    data = copy.deepcopy(src.data)
    nsd = data["nsd"]["nsd"][0]
    nsd["id"] = nsd["name"] = spec["id"]
    nsd["description"] = spec.get("description", nsd.get("description", ""))
    df = nsd["df"][0]
    gone_profiles = set(spec.get("remove-vnf-profiles", []))
    df["vnf-profile"] = [p for p in df["vnf-profile"] if p["id"] not in gone_profiles]
    for vnf, variant in spec.get("vnf-variants", {}).items():
        for prof in df["vnf-profile"]:
            if prof["vnfd-id"] == vnf_ids[(vnf, None)]:
                prof["vnfd-id"] = vnf_ids[(vnf, variant)]
    gone_vls = set(spec.get("remove-virtual-links", []))
    for prof in df["vnf-profile"]:
        prof["virtual-link-connectivity"] = [
            c for c in prof["virtual-link-connectivity"] if c["virtual-link-profile-id"] not in gone_vls
        ]
    # A link that no member connects to any more is dropped too (uu once the eNB is gone).
    used = {c["virtual-link-profile-id"] for p in df["vnf-profile"] for c in p["virtual-link-connectivity"]}
    nsd["virtual-link-desc"] = [vl for vl in nsd["virtual-link-desc"] if vl["id"] in used]
    df["virtual-link-profile"] = [
        p for p in df.get("virtual-link-profile", []) if p["virtual-link-desc-id"] in used
    ]
    nsd["sapd"] = [s for s in nsd.get("sapd", []) if s["virtual-link-desc"] in used]
    cidrs = spec.get("cidrs") or {}
    if cidrs == "service-networks":
        cidrs = {rp.name: rp.service_network for rp in registry.load().reference_points.values()}
    for vlp in df["virtual-link-profile"]:
        cidr = cidrs.get(vlp["virtual-link-desc-id"])
        if cidr:
            vlp["virtual-link-protocol-data"]["l3-protocol-data"]["cidr"] = cidr
    component_of = {v: k[0] for k, v in vnf_ids.items()}
    nsd["vnfd-id"] = sorted({p["vnfd-id"] for p in df["vnf-profile"]},
                            key=lambda v: (_vnfd_order(component_of.get(v)), v))
    if spec.get("relations", True) is False:
        nsd.pop("ns-configuration", None)
    else:
        rels = nsd.setdefault("ns-configuration", {}).setdefault("relation", [])
        rels[:] = [
            r
            for r in rels
            if r["provider"]["vnf-profile-id"] not in gone_profiles
            and r["requirer"]["vnf-profile-id"] not in gone_profiles
        ]
        bodies = vnfd_bodies or {}
        vdu_of = {p["id"]: vdu_level(bodies[p["vnfd-id"]]) for p in df["vnf-profile"] if p["vnfd-id"] in bodies}
        rels += registry_relations(df, {v: k[0] for k, v in vnf_ids.items()}, {r["name"] for r in rels}, vdu_of)
    desc = Descriptor("nsd", data, "", src.source, variant=name)
    desc.file = "{}/{} (generated from {})".format(desc.package, desc.descriptor_name, src.source)
    return desc


def registry_relations(df, component_of, named, vdu_of=None):
    """One relation per reference point of the registry whose provider and requirer are both
    members of the NS (``component_of``: vnfd id -> component), in the registry's order; a
    reference point the NSD source relates itself (``named``) is left to it. Which side provides
    is the registry's fact, so the NSD source does not repeat it. ``vdu_of``: member -> the VDU
    whose day1-2 entry holds its EE (VDU-level EEs)."""
    vdu_of = vdu_of or {}
    members = {}
    for prof in df["vnf-profile"]:
        members.setdefault(component_of.get(prof["vnfd-id"]), []).append(prof["id"])
    out = []
    for rp in registry.load().reference_points.values():
        ends = members.get(rp.provider, []), members.get(rp.requirer, [])
        if rp.name in named or not all(ends):
            continue
        if len(ends[0]) > 1 or len(ends[1]) > 1:
            raise DescriptorError(
                "reference point {}: more than one member for {} or {} ({}, {}); relate them in the NSD "
                "source".format(rp.name, rp.provider, rp.requirer, ends[0], ends[1]))
        out.append({"name": rp.name, "provider": _relation_end(ends[0][0], rp.name, vdu_of),
                    "requirer": _relation_end(ends[1][0], rp.name, vdu_of)})
    return out


def _relation_end(member, endpoint, vdu_of):
    """A member's end of a relation; a member whose EE is VDU-level is named by its vdu-profile
    too (IM of OSM 11+, ``relations-ee``): else LCM looks for a VNF-level EE it never deployed."""
    end = {"vnf-profile-id": member, "endpoint": endpoint}
    if vdu_of.get(member):
        end["vdu-profile-id"] = vdu_of[member]
    return end


def _vnfd_order(component):
    """A VNFD's place in an NSD's vnfd-id list: its component's in the registry (whatever its id)."""
    return VNF_NAMES.index(component) if component in VNF_NAMES else len(VNF_NAMES)


def make_vnf_osm10(src, spec):
    """The same VNFD without what OSM 10 does not know (``vnfd-drop-df``: df leaves such as
    ``exporters-endpoints``, which OSM's NBI refuses before IM feature 10945, OSM 14)."""
    data = copy.deepcopy(src.data)
    vnfd = data["vnfd"]
    entry = day12(vnfd)
    new_id = vnfd["id"] + spec["suffix"]
    vnfd["id"] = vnfd["product-name"] = new_id
    vnfd["description"] = "{} For OSM 10 to 13 (no {}).".format(
        vnfd.get("description", ""), ", ".join(spec.get("vnfd-drop-df", []) + spec.get("vnfd-drop-vdu", []))).strip()
    if entry is not None:
        # OSM 10's IM cannot name a VDU-level EE in an NS relation (vdu-profile-id came with
        # OSM 11), and its LCM's scale-out is not known: the EE goes back to VNF level, and the
        # VDU does not scale there (docs/lifecycle.md).
        entry["id"] = new_id
        for prim in entry.get("initial-config-primitive", []):
            prim["parameter"] = [p for p in prim.get("parameter", []) if p.get("value") != "<OSM>"]
    for df in vnfd.get("df", []):
        for key in spec.get("vnfd-drop-df", []) + ["scaling-aspect"]:
            df.pop(key, None)
    for vdu in vnfd.get("vdu", []):
        for key in spec.get("vnfd-drop-vdu", []):
            vdu.pop(key, None)
        for prof in df.get("vdu-profile", []):
            prof.pop("max-number-of-instances", None)
    desc = Descriptor("vnfd", data, "", src.source, variant=((src.variant + "_") if src.variant else "") + "osm10")
    desc.file = "{}/{} (generated from {})".format(desc.package, desc.descriptor_name, src.source)
    return desc


def make_osm10(ns_desc, suffix, vnfd_ids=None):
    """The same NS with OSM 10 relation syntax: `entities`, first = provider; its members are
    the VNFDs ``vnfd_ids`` maps them to (their OSM 10 variants)."""
    data = copy.deepcopy(ns_desc.data)
    nsd = data["nsd"]["nsd"][0]
    nsd["id"] = nsd["name"] = nsd["id"] + suffix
    nsd["description"] = nsd.get("description", "") + " OSM 10 relation syntax."
    vnfd_ids = vnfd_ids or {}
    for prof in nsd["df"][0]["vnf-profile"]:
        prof["vnfd-id"] = vnfd_ids.get(prof["vnfd-id"], prof["vnfd-id"])
    nsd["vnfd-id"] = [vnfd_ids.get(v, v) for v in nsd["vnfd-id"]]
    for rel in nsd.get("ns-configuration", {}).get("relation", []):
        prov, req = rel.pop("provider"), rel.pop("requirer")
        rel["entities"] = [
            {"id": prov["vnf-profile-id"], "endpoint": prov["endpoint"]},
            {"id": req["vnf-profile-id"], "endpoint": req["endpoint"]},
        ]
    desc = Descriptor("nsd", data, "", ns_desc.source, variant=ns_desc.variant + "_osm10")
    desc.file = "{}/{} (generated from {})".format(desc.package, desc.descriptor_name, ns_desc.source)
    return desc


def make_nst_osm10(nst_desc, suffix):
    """The same NST over the OSM 10 NSDs: OSM 10 cannot load the NSDs with provider/requirer
    relations, so an NST naming them cannot load there either."""
    data = copy.deepcopy(nst_desc.data)
    nst = data["nst"][0]
    nst["id"] = nst["name"] = nst["id"] + suffix
    for sub in nst.get("netslice-subnet", []):
        sub["nsd-ref"] = sub["nsd-ref"] + suffix
    desc = Descriptor("nst", data, "", nst_desc.source, variant=nst_desc.variant + "_osm10")
    desc.file = "{} (generated from {})".format(desc.package, nst_desc.source)
    return desc


# --- the whole bundle ---------------------------------------------------------------------------


class Bundle:
    def __init__(self, vnfs, nss, nsts, variants, sources):
        self.vnfs = vnfs  # [Descriptor] sources first, then generated
        self.nss = nss
        self.nsts = nsts
        self.variants = variants  # {key: {"kind", "descriptor_ids", "params", "vnfd_ids"}}
        self.sources = sources  # [Descriptor] the source descriptors only

    def vnfd(self, vnfd_id):
        return next((d for d in self.vnfs if d.id == vnfd_id), None)

    def nsd(self, nsd_id):
        return next((d for d in self.nss if d.id == nsd_id), None)


#: The parameter of every VNF's day-1 `config` primitive that carries the slice's 5QI into the
#: charm option of the same name: LCM replaces <slice_5qi> with the member's additionalParamsForVnf
#: value (NsLcm._map_primitive_params), which bundle.params derives from the NST (0 outside a slice).
SLICE_5QI_PARAMETER = {"name": "slice-5qi", "data-type": "INTEGER", "value": "<slice_5qi>"}


def add_slice_5qi(desc):
    """Add SLICE_5QI_PARAMETER to the VNFD's day-1 `config` primitive (generated here, once for every
    component, so that no VNFD source spells it); a source that has it already is refused."""
    for prim in (day12(desc.body) or {}).get("initial-config-primitive") or []:
        if isinstance(prim, dict) and prim.get("name") == "config":
            names = [p.get("name") for p in prim.get("parameter") or [] if isinstance(p, dict)]
            if SLICE_5QI_PARAMETER["name"] in names:
                raise DescriptorError("{}: the config primitive's slice-5qi parameter is generated "
                                      "(scripts/bundle/descriptors.py); remove it from the source".format(desc.file))
            prim.setdefault("parameter", []).append(dict(SLICE_5QI_PARAMETER))
    return desc


def service_address_parameters(component):
    """The day-1 `config` parameters that carry ``component``'s own service address on each
    reference point the registry makes it an end of (``<rp>-service-addresses`` <- the params
    file's ``<rp>_service_addresses``, or the IP plan's default: bundle.params), in the registry's
    order: generated here so that a reference point is its registry entry, never a VNFD edit."""
    return [{"name": "{}-service-addresses".format(rp.name), "value": "<{}_service_addresses>".format(rp.name)}
            for rp in registry.load().endpoints_of(component)]


def add_service_addresses(desc, component):
    """Add ``service_address_parameters(component)`` to the VNFD's day-1 `config` primitive, each
    right after its reference point's ``<rp>-endpoint-address`` where the VNFD has one (a link of
    its own), else at the end. A source that spells one is refused (the registry is its one
    source); a VNFD of a component with reference points but no `config` primitive is refused
    (OSM would never hand the charm its addresses)."""
    wanted = service_address_parameters(component)
    config = [prim for prim in (day12(desc.body) or {}).get("initial-config-primitive") or []
              if isinstance(prim, dict) and prim.get("name") == "config"]
    if wanted and not config:
        raise DescriptorError("{}: no day-1 `config` initial-config-primitive to carry {} (generated from "
                              "the registry)".format(desc.file, ", ".join(p["name"] for p in wanted)))
    for prim in config:
        params = prim.setdefault("parameter", [])
        names = [p.get("name") if isinstance(p, dict) else None for p in params]
        spelled = [p["name"] for p in wanted if p["name"] in names]
        if spelled:
            raise DescriptorError("{}: the config primitive's {} is generated from the registry "
                                  "(scripts/bundle/descriptors.py); remove it from the source".format(
                                      desc.file, ", ".join(spelled)))
        for param in wanted:
            after = param["name"].replace("-service-addresses", "-endpoint-address")
            names = [p.get("name") if isinstance(p, dict) else None for p in params]
            at = names.index(after) + 1 if after in names else len(params)
            params.insert(at, dict(param))
    return desc


def load_sources():
    """({component: VNFD}, {source name: NSD source}, {slice: NST}, variants.yaml); each NSD source
    with a member profile for every component its ``members`` line names (membership.py); every
    VNFD's `config` primitive with its component's service addresses (add_service_addresses) and the
    slice's 5QI (add_slice_5qi)."""
    vnfs = {c.name: add_slice_5qi(add_service_addresses(Descriptor("vnfd", load_yaml(c.vnfd), c.vnfd, c.vnfd), c.name))
            for c in registry.load().with_vnfd()}
    spec = load_yaml(VARIANTS_FILE)
    ns_srcs = {name: Descriptor("nsd", load_yaml(path), path, path) for name, path in spec["sources"].items()}
    for name, src in ns_srcs.items():
        membership.add_members(src, name, (spec.get("members") or {}).get(name), vnfs, DescriptorError)
    for key, nspec in spec["ns-variants"].items():
        if nspec.get("source") not in ns_srcs:
            raise DescriptorError("{}: ns-variant {} names source {!r}, not one of {}".format(
                VARIANTS_FILE, key, nspec.get("source"), ", ".join(ns_srcs)))
    nsts = {}
    for name, s in spec.get("slices", {}).items():
        nsts[name] = Descriptor("nst", load_yaml(s["file"]), s["file"], s["file"], variant=name)
    return vnfs, ns_srcs, nsts, spec


def load_bundle():
    vnf_src, ns_srcs, nst_src, spec = load_sources()
    vnf_ids = {}
    vnfs = []
    for name, desc in vnf_src.items():
        vnfs.append(desc)
        vnf_ids[(name, None)] = desc.id
    needed = set()
    for ns in spec["ns-variants"].values():
        needed.update(ns.get("vnf-variants", {}).items())
    for vname, vspec in spec.get("vnf-variants", {}).items():
        for name in VNF_NAMES:
            if (name, vname) in needed:
                desc = make_vnf_variant(vnf_src[name], vname, vspec)
                vnfs.append(desc)
                vnf_ids[(name, vname)] = desc.id
    nss, variants = [], {}
    osm10 = spec.get("osm10")
    for key, nspec in spec["ns-variants"].items():
        desc = make_ns_variant(ns_srcs[nspec["source"]], key, nspec, vnf_ids, {d.id: d.body for d in vnfs})
        nss.append(desc)
        variants[key] = _ns_variant_entry(desc, nspec["params"])
    if osm10:
        used = {v for d in nss for v in d.body["vnfd-id"]}
        osm10_vnfd = {}
        for desc in list(vnfs):
            if desc.id in used:
                gen = make_vnf_osm10(desc, osm10)
                vnfs.append(gen)
                osm10_vnfd[desc.id] = gen.id
        for key, nspec in spec["ns-variants"].items():
            desc = make_osm10(next(d for d in nss if d.variant == key), osm10["suffix"], osm10_vnfd)
            nss.append(desc)
            variants[key + "_osm10"] = _ns_variant_entry(desc, nspec["params"])
    nsts = list(nst_src.values())
    slice_sets = [("", nst_src)]
    if osm10 and nst_src:
        slice_sets.append(("_osm10", {k: make_nst_osm10(d, osm10["suffix"]) for k, d in nst_src.items()}))
        nsts += list(slice_sets[1][1].values())
    for tail, group in slice_sets:
        for name, desc in group.items():
            variants[name + tail] = _nsi_variant_entry([desc], spec["slices"][name]["params"], nss)
        for set_name, members in (spec.get("slice-sets") or {}).items():
            first = spec["slices"][members[0]]["params"]
            variants[set_name + tail] = _nsi_variant_entry([group[m] for m in members], first, nss)
    sources = list(vnf_src.values()) + list(ns_srcs.values()) + list(nst_src.values())
    return Bundle(vnfs, nss, nsts, variants, sources)


def _ns_variant_entry(desc, params):
    return {
        "kind": "ns",
        "descriptor_ids": [desc.id],
        "params": params,
        "nsd_ids": [desc.id],
        "vnfd_ids": list(desc.body["vnfd-id"]),
    }


def _nsi_variant_entry(nsts, params, nss):
    nsd_ids, vnfd_ids = [], []
    for nst in nsts:
        for sub in nst.body.get("netslice-subnet", []):
            if sub.get("nsd-ref") not in nsd_ids:
                nsd_ids.append(sub.get("nsd-ref"))
    for nsd_id in nsd_ids:
        ns = next((d for d in nss if d.id == nsd_id), None)
        for v in ns.body["vnfd-id"] if ns else []:
            if v not in vnfd_ids:
                vnfd_ids.append(v)
    return {
        "kind": "nsi",
        "descriptor_ids": [n.id for n in nsts],
        "params": params,
        "nsd_ids": nsd_ids,
        "vnfd_ids": vnfd_ids,
    }


def members_of(bundle, target_id):
    """{None: [member-vnf-index]} of an NSD, {subnet id: [...]} of an NST: whom a params file's
    additionalParamsForVnf must reach (bundle.params.with_slice_5qi)."""
    nsd = bundle.nsd(target_id)
    if nsd is not None:
        return {None: [p["id"] for p in nsd.body["df"][0]["vnf-profile"]]}
    nst = next((n for n in bundle.nsts if n.id == target_id), None)
    out = {}
    for sub in nst.body.get("netslice-subnet") or [] if nst is not None else []:
        ns = bundle.nsd(sub.get("nsd-ref"))
        if ns is not None:
            out[sub["id"]] = [p["id"] for p in ns.body["df"][0]["vnf-profile"]]
    return out


def dump(data):
    """Descriptor YAML as written into packages: stable key order, block style."""
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False, width=100)
