"""An NS's membership: its line under ``members`` in ns/variants.yaml is the one list of its
components. The descriptors take their member profiles from it (``add_members``); the tests and
tools that need an NS variant's members and tunnels derive them from it and the registry
(``expected``), never from a list of their own. tests/pins.yaml pins the result for review.
"""
import os

from bundle import ROOT
from bundle.yamlfile import load_mapping
from vpnaas.core import registry

VARIANTS_FILE = "ns/variants.yaml"
#: The suffix of the OSM 10 form of every NS variant (``osm10`` in ns/variants.yaml).
OSM10 = "_osm10"


def variants():
    """ns/variants.yaml, read."""
    return load_mapping(os.path.join(ROOT, VARIANTS_FILE), VARIANTS_FILE, ValueError)


def of_variant(variant, spec=None):
    """(members, reference points) of variant ``variant`` (its -osm10 form too): ``expected``; of a
    slice or a set of slices, those of the NSs its netslice-subnets instantiate, each name once."""
    spec = spec or variants()
    base = variant[:-len(OSM10)] if variant.endswith(OSM10) else variant
    if base in spec["ns-variants"]:
        return expected(spec, base)
    by_id = {n["id"]: k for k, n in spec["ns-variants"].items()}
    members, tunnels = [], []
    for name in (spec.get("slice-sets") or {}).get(base) or [base]:
        path = spec["slices"][name]["file"]
        for sub in load_mapping(os.path.join(ROOT, path), path, ValueError)["nst"][0]["netslice-subnet"]:
            m, t = expected(spec, by_id[sub["nsd-ref"]])
            members += [x for x in m if x not in members]
            tunnels += [x for x in t if x not in tunnels]
    return members, tunnels


def expected(spec, variant):
    """(members, reference points) of NS variant ``variant`` of ns/variants.yaml (``spec``), from
    its source's members line and the registry alone: the members less those the variant removes;
    with relations, every reference point of the registry with both ends among them (its order)."""
    nspec = spec["ns-variants"][variant]
    gone = set(nspec.get("remove-vnf-profiles") or [])
    members = [m for m in (spec.get("members") or {}).get(nspec["source"]) or [] if m not in gone]
    if nspec.get("relations", True) is False:
        return members, []
    return members, [rp.name for rp in registry.load().reference_points.values()
                     if rp.provider in members and rp.requirer in members]


def add_members(src, source, names, vnfs, error):
    """The NS's membership is its line under ``members`` (ns/variants.yaml): a component named
    there that the NSD source has no vnf-profile for gets one, on the management network only
    (its tunnels run over it, as the multi-site S6a's; its relations follow from the registry);
    a profile of a component not named there is an error, so the line is the one list."""
    if names is None:
        raise error("{}: no members line for NSD source {}".format(VARIANTS_FILE, source))
    nsd = src.data["nsd"]["nsd"][0]
    df = nsd["df"][0]
    by_vnfd = {d.id: c for c, d in vnfs.items()}
    listed = [by_vnfd.get(p.get("vnfd-id")) for p in df.get("vnf-profile") or []]
    stray = [p["id"] for p, c in zip(df.get("vnf-profile") or [], listed) if c not in names]
    if stray:
        raise error("{}: vnf-profile {} is no member of {} (members: {} in {})".format(
            src.file, ", ".join(stray), source, ", ".join(names), VARIANTS_FILE))
    renamed = ["{} ({})".format(p["id"], c) for p, c in zip(df.get("vnf-profile") or [], listed) if p["id"] != c]
    if renamed:
        # The params, the deploy tool and the testbed know a member's component by its name.
        raise error("{}: vnf-profile {}: a member's id is its component's name (bundle.params derives its "
                    "service addresses by it)".format(src.file, ", ".join(renamed)))
    mgmt = next((vl["id"] for vl in nsd.get("virtual-link-desc") or [] if vl.get("mgmt-network")), None)
    for name in names:
        if name not in vnfs:
            raise error("{}: member {} of {} is no component with a VNFD (registry.yaml)".format(
                VARIANTS_FILE, name, source))
        if name in listed:
            continue
        vnfd = vnfs[name].body
        if mgmt is None or not vnfd.get("mgmt-cp"):
            raise error("{}: member {} needs a management network and its VNFD's mgmt-cp".format(
                src.file, name))
        df.setdefault("vnf-profile", []).append({"id": name, "vnfd-id": vnfd["id"], "virtual-link-connectivity": [
            {"virtual-link-profile-id": mgmt,
             "constituent-cpd-id": [{"constituent-base-element-id": name, "constituent-cpd-id": vnfd["mgmt-cp"]}]}]})
        nsd["vnfd-id"] = list(nsd.get("vnfd-id") or []) + [vnfd["id"]]
