"""The cross-checks OSM's NBI and osmclient make at onboarding (NBI's descriptor_topics, osmclient's
package build).

Each function takes descriptors that already passed the schema, so it may rely on their shape.
"""

import os

from bundle import descriptors
from bundle.validate.problems import Problem

SUFFIX = {"vnfd": "nfd.yaml", "nsd": "nsd.yaml"}


def _dupes(items, key="id"):
    seen, out = set(), []
    for i, item in enumerate(items):
        value = item.get(key)
        if value in seen:
            out.append((i, value))
        seen.add(value)
    return out


def check_file_name(desc):
    """osmclient builds only descriptors named *nfd.yaml / *nsd.yaml."""
    problems = []
    suffix = SUFFIX.get(desc.kind)
    names = {desc.descriptor_name}
    if desc.variant is None:
        names.add(os.path.basename(desc.source))
    for name in sorted(names):
        if suffix and not name.endswith("_" + desc.kind + ".yaml"):
            problems.append(
                Problem(
                    desc.file,
                    "(file name)",
                    "descriptor file {!r} must end in _{}.yaml".format(name, desc.kind),
                )
            )
    return problems


def check_vnfd(desc, cloud_init_dir):
    """NBI's VNFD cross-checks: connection points, VDU references, deployment flavour, day1-2."""
    return (
        _check_connection_points(desc)
        + _check_vdus(desc, cloud_init_dir)
        + _check_flavours(desc)
        + _check_day12(desc)
    )


def _check_connection_points(desc):
    """mgmt-cp names an ext-cpd; ext-cpd ids are unique and point to an existing vdu int-cpd."""
    v, pre, out = desc.body, descriptors.path_prefix("vnfd"), []
    ext_ids = [c["id"] for c in v["ext-cpd"]]
    if v["mgmt-cp"] not in ext_ids:
        msg = "mgmt-cp={!r} must match an existing ext-cpd ({})".format(v["mgmt-cp"], ", ".join(ext_ids))
        out.append(Problem(desc.file, pre + ["mgmt-cp"], msg))
    for i, dup in _dupes(v["ext-cpd"]):
        out.append(Problem(desc.file, pre + ["ext-cpd", i, "id"], "duplicate ext-cpd id {!r}".format(dup)))
    vdus = {vdu["id"]: vdu for vdu in v["vdu"]}
    for i, cp in enumerate(v["ext-cpd"]):
        ref = cp.get("int-cpd")
        if ref is None:
            continue
        at = pre + ["ext-cpd", i, "int-cpd"]
        vdu = vdus.get(ref["vdu-id"])
        if vdu is None:
            out.append(Problem(desc.file, at + ["vdu-id"], "no vdu {!r}".format(ref["vdu-id"])))
        elif ref["cpd"] not in [c["id"] for c in vdu["int-cpd"]]:
            msg = "vdu {!r} has no int-cpd {!r}".format(ref["vdu-id"], ref["cpd"])
            out.append(Problem(desc.file, at + ["cpd"], msg))
    return out


def _check_vdus(desc, cloud_init_dir):
    """Unique vdu/int-cpd ids; every compute, storage, image and cloud-init reference exists."""
    v, pre, out = desc.body, descriptors.path_prefix("vnfd"), []
    for i, dup in _dupes(v["vdu"]):
        out.append(Problem(desc.file, pre + ["vdu", i, "id"], "duplicate vdu id {!r}".format(dup)))
    compute = {c["id"] for c in v["virtual-compute-desc"]}
    storage = {s["id"] for s in v["virtual-storage-desc"]}
    images = {s["id"] for s in v["sw-image-desc"]}
    for i, vdu in enumerate(v["vdu"]):
        at = pre + ["vdu", i]
        for j, dup in _dupes(vdu["int-cpd"]):
            out.append(Problem(desc.file, at + ["int-cpd", j, "id"], "duplicate int-cpd id {!r}".format(dup)))
        if vdu["virtual-compute-desc"] not in compute:
            msg = "no virtual-compute-desc {!r}".format(vdu["virtual-compute-desc"])
            out.append(Problem(desc.file, at + ["virtual-compute-desc"], msg))
        for j, sid in enumerate(vdu["virtual-storage-desc"]):
            if sid not in storage:
                msg = "no virtual-storage-desc {!r}".format(sid)
                out.append(Problem(desc.file, at + ["virtual-storage-desc", j], msg))
        if vdu["sw-image-desc"] not in images:
            msg = "no sw-image-desc {!r}".format(vdu["sw-image-desc"])
            out.append(Problem(desc.file, at + ["sw-image-desc"], msg))
        cif = vdu.get("cloud-init-file")
        if cif and not os.path.isfile(os.path.join(cloud_init_dir, cif)):
            msg = "cloud-init file {!r} not found in {}/".format(cif, os.path.basename(cloud_init_dir))
            out.append(Problem(desc.file, at + ["cloud-init-file"], msg))
    return out


def _check_flavours(desc):
    """Every vdu-profile and instantiation-level vdu-level names an existing vdu."""
    v, pre, out = desc.body, descriptors.path_prefix("vnfd"), []
    vdus = {vdu["id"] for vdu in v["vdu"]}
    for i, df in enumerate(v["df"]):
        for j, prof in enumerate(df["vdu-profile"]):
            if prof["id"] not in vdus:
                at = pre + ["df", i, "vdu-profile", j, "id"]
                out.append(Problem(desc.file, at, "no vdu {!r}".format(prof["id"])))
        for j, lvl in enumerate(df.get("instantiation-level", [])):
            for k, vl in enumerate(lvl["vdu-level"]):
                if vl["vdu-id"] not in vdus:
                    at = pre + ["df", i, "instantiation-level", j, "vdu-level", k, "vdu-id"]
                    out.append(Problem(desc.file, at, "no vdu {!r}".format(vl["vdu-id"])))
    return out


def _check_day12(desc):
    """day1-2 ids are the vnfd id or a vdu id (others are ignored by OSM); the EE's
    external-connection-point-ref names an ext-cpd."""
    v, out = desc.body, []
    at = descriptors.path_prefix("vnfd") + ["df", 0, "lcm-operations-configuration", "operate-vnf-op-config", "day1-2"]
    vdus = {vdu["id"] for vdu in v["vdu"]}
    day12_list = (
        v["df"][0].get("lcm-operations-configuration", {}).get("operate-vnf-op-config", {}).get("day1-2", [])
    )
    for i, e in enumerate(day12_list):
        if e["id"] != v["id"] and e["id"] not in vdus:
            msg = "day1-2 id {!r} is neither the vnfd id nor a vdu id, so OSM ignores it".format(e["id"])
            out.append(Problem(desc.file, at + [i, "id"], msg))
        elif e["id"] == v["id"] and e["id"] in vdus:
            # LCM's instantiate looks the entry up for the VNF (get_configuration(vnfd, vnfd["id"]))
            # and again for each VDU (get_configuration(vnfd, vdu_id)), calling _deploy_n2vc for
            # each it finds (osm_lcm/ns.py): an id that is both deploys its EEs twice.
            msg = "day1-2 id {!r} is both the vnfd id and a vdu id: OSM deploys its execution environments " \
                  "twice (rename the VDU or the VNFD)".format(e["id"])
            out.append(Problem(desc.file, at + [i, "id"], msg))
    entry = descriptors.day12(v)
    ext_ids = [c["id"] for c in v["ext-cpd"]]
    for i, ee in enumerate((entry or {}).get("execution-environment-list", [])):
        ref = ee.get("external-connection-point-ref")
        if ref and ref not in ext_ids:
            where = at + [day12_list.index(entry), "execution-environment-list", i, "external-connection-point-ref"]
            out.append(Problem(desc.file, where, "no ext-cpd {!r}".format(ref)))
    return out


def check_nsd(desc, vnfds):
    """vnfds: {vnfd id: Descriptor} of every schema-valid VNFD the bundle onboards."""
    n = desc.body
    pre = descriptors.path_prefix("nsd")
    out = []

    def problem(path, text):
        out.append(Problem(desc.file, pre + path, text))

    vl_ids = [vl["id"] for vl in n["virtual-link-desc"]]
    for i, dup in _dupes(n["virtual-link-desc"]):
        problem(["virtual-link-desc", i, "id"], "duplicate virtual-link-desc {!r}".format(dup))
    for i, vnfd_id in enumerate(n["vnfd-id"]):
        if vnfd_id not in vnfds:
            problem(["vnfd-id", i],
                    "vnfd {!r} is not a VNFD of the bundle (OSM needs it onboarded first)".format(vnfd_id))
    for i, sap in enumerate(n.get("sapd", [])):
        if sap["virtual-link-desc"] not in vl_ids:
            problem(["sapd", i, "virtual-link-desc"], "no virtual-link-desc {!r}".format(sap["virtual-link-desc"]))
    mgmt = {vl["id"] for vl in n["virtual-link-desc"] if vl.get("mgmt-network")}
    for i, df in enumerate(n["df"]):
        _check_link_profiles(problem, ["df", i], df, vl_ids, mgmt)
        for j, dup in _dupes(df["vnf-profile"]):
            problem(["df", i, "vnf-profile", j, "id"], "duplicate vnf-profile {!r}".format(dup))
        for j, prof in enumerate(df["vnf-profile"]):
            _check_vnf_profile(problem, ["df", i, "vnf-profile", j], prof, n["vnfd-id"], vnfds, vl_ids)
    return out


def _check_link_profiles(problem, at, df, vl_ids, mgmt):
    for j, vlp in enumerate(df.get("virtual-link-profile", [])):
        here = at + ["virtual-link-profile", j]
        if vlp["virtual-link-desc-id"] not in vl_ids:
            problem(here + ["virtual-link-desc-id"], "no virtual-link-desc {!r}".format(vlp["virtual-link-desc-id"]))
        if vlp["id"] != vlp["virtual-link-desc-id"]:
            problem(here + ["id"], "virtual-link-profile id must equal its virtual-link-desc-id")
        if vlp["virtual-link-desc-id"] in mgmt and "virtual-link-protocol-data" in vlp:
            problem(here + ["virtual-link-protocol-data"],
                    "a mgmt-network virtual link may not have virtual-link-protocol-data")


def _check_vnf_profile(problem, at, prof, vnfd_ids, vnfds, vl_ids):
    if prof["vnfd-id"] not in vnfd_ids:
        problem(at + ["vnfd-id"], "vnfd-id {!r} does not match any vnfd-id of the NSD".format(prof["vnfd-id"]))
    vnfd = vnfds.get(prof["vnfd-id"])
    ext = {c["id"] for c in vnfd.body["ext-cpd"]} if vnfd else None
    for k, conn in enumerate(prof["virtual-link-connectivity"]):
        cat = at + ["virtual-link-connectivity", k]
        if conn["virtual-link-profile-id"] not in vl_ids:
            problem(cat + ["virtual-link-profile-id"],
                    "no virtual-link-desc {!r}".format(conn["virtual-link-profile-id"]))
        for m, cpd in enumerate(conn["constituent-cpd-id"]):
            if cpd["constituent-base-element-id"] != prof["id"]:
                problem(cat + ["constituent-cpd-id", m, "constituent-base-element-id"],
                        "must be the vnf-profile id {!r}, not {!r}".format(
                            prof["id"], cpd["constituent-base-element-id"]))
            if ext is not None and cpd["constituent-cpd-id"] not in ext:
                problem(cat + ["constituent-cpd-id", m, "constituent-cpd-id"],
                        "{!r} is not an ext-cpd of vnfd {!r}".format(cpd["constituent-cpd-id"], prof["vnfd-id"]))


def check_nst(desc, nsds):
    """nsds: {nsd id: Descriptor} of every schema-valid NSD the bundle onboards."""
    t = desc.body
    pre = descriptors.path_prefix("nst")
    out = []
    subnets = {}
    for i, sub in enumerate(t["netslice-subnet"]):
        subnets[sub["id"]] = sub
        if sub["nsd-ref"] not in nsds:
            out.append(
                Problem(
                    desc.file,
                    pre + ["netslice-subnet", i, "nsd-ref"],
                    "nsd-ref {!r} is not an NSD of the bundle".format(sub["nsd-ref"]),
                )
            )
    for i, vld in enumerate(t.get("netslice-vld", [])):
        for j, ref in enumerate(vld.get("nss-connection-point-ref", [])):
            at = pre + ["netslice-vld", i, "nss-connection-point-ref", j]
            sub = subnets.get(ref["nss-ref"])
            if sub is None:
                out.append(
                    Problem(
                        desc.file,
                        at + ["nss-ref"],
                        "nss-ref {!r} must be a netslice-subnet id ({})".format(
                            ref["nss-ref"], ", ".join(sorted(subnets))
                        ),
                    )
                )
                continue
            nsd = nsds.get(sub["nsd-ref"])
            if nsd is None:
                continue
            saps = [s["id"] for s in nsd.body.get("sapd", [])]
            if ref["nsd-connection-point-ref"] not in saps:
                out.append(
                    Problem(
                        desc.file,
                        at + ["nsd-connection-point-ref"],
                        "{!r} is not a sapd of nsd {!r} ({})".format(
                            ref["nsd-connection-point-ref"], nsd.id, ", ".join(saps) or "none"
                        ),
                    )
                )
    return out
