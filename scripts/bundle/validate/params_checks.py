"""Checks of the instantiation parameters (params/*.yaml) against the descriptors they feed."""

import ipaddress
import os
import re

from bundle import descriptors, params
from bundle.validate.charms import PLACEHOLDER_RE
from bundle.validate.problems import Problem

# OSM renders cloud-init as Jinja2 with StrictUndefined. The bundle allows only plain variable
# references in it; anything else that Jinja would parse is refused.
JINJA_VAR_RE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
JINJA_ANY_RE = re.compile(r"\{\{|\{%|\{#")
# LCM fills these itself (osm-facts §2.1).
BUILTIN = {"rw_mgmt_ip"}
SECRET_KEYS = {"lte_k", "lte_op"}


def placeholders(vnfd):
    """{name: path} of every <placeholder> an initial-config-primitive of the VNF needs."""
    found = {}
    entry = descriptors.day12(vnfd)
    if not entry:
        return found
    lst = vnfd["df"][0]["lcm-operations-configuration"]["operate-vnf-op-config"]["day1-2"]
    base = descriptors.path_prefix("vnfd") + [
        "df",
        0,
        "lcm-operations-configuration",
        "operate-vnf-op-config",
        "day1-2",
        lst.index(entry),
        "initial-config-primitive",
    ]
    for i, prim in enumerate(entry.get("initial-config-primitive", [])):
        for j, param in enumerate(prim.get("parameter", [])):
            value = param.get("value")
            m = PLACEHOLDER_RE.match(value) if isinstance(value, str) else None
            if m and m.group(1) not in BUILTIN:
                found.setdefault(m.group(1), base + [i, "parameter", j, "value"])
    return found


def cloud_init_vars(text, file):
    """(variables referenced, problems) for a cloud-init file."""
    names, problems = set(), []
    for lineno, line in enumerate(text.splitlines(), 1):
        rest = JINJA_VAR_RE.sub(lambda m: names.add(m.group(1)) or "", line)
        if JINJA_ANY_RE.search(rest):
            problems.append(
                Problem(
                    file,
                    "line {}".format(lineno),
                    "Jinja2 syntax OSM would try to render (escape it or remove it): {!r}".format(
                        line.strip()
                    ),
                )
            )
    return names, problems


def check_secrets(template, file):
    """Secrets must be ${VAR} references in the template, never values (checked before rendering)."""
    out = []

    def walk(node, path):
        if isinstance(node, dict):
            for key, value in node.items():
                if key in SECRET_KEYS and not (isinstance(value, str) and params.VAR_RE.fullmatch(value)):
                    out.append(
                        Problem(
                            file,
                            path + [key],
                            "a secret must be a ${VAR} reference, not a value in the repository",
                        )
                    )
                walk(value, path + [key])
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, path + [i])

    walk(template, [])
    return out


def _vl_cidrs(nsd):
    cidrs = {}
    for vlp in nsd["df"][0].get("virtual-link-profile", []):
        l3 = vlp.get("virtual-link-protocol-data", {}).get("l3-protocol-data")
        if l3:
            cidrs[vlp["virtual-link-desc-id"]] = (ipaddress.ip_network(l3["cidr"]), l3.get("gateway-ip"))
    return cidrs


def check_ns_params(data, file, nsd_desc, vnfds, cloud_init_dir, where=None):
    """data: a rendered ns-create config for nsd_desc (keys vld, vnf, additionalParamsForVnf).

    where: {section: path of that list in the file}, for configs (nsi-create) that keep the
    sections elsewhere; default: the top-level keys of the same name.
    """
    where = dict(where or {})
    at_vld = where.get("vld", ["vld"])
    at_vnf = where.get("vnf", ["vnf"])
    at_apv = where.get("additionalParamsForVnf", ["additionalParamsForVnf"])
    nsd = nsd_desc.body
    out = []
    profiles = {p["id"]: p for p in nsd["df"][0]["vnf-profile"]}
    vl_ids = {vl["id"] for vl in nsd["virtual-link-desc"]}
    cidrs = _vl_cidrs(nsd)
    connected = {}  # (member, vl) -> set of cpd ids
    for prof in profiles.values():
        for conn in prof["virtual-link-connectivity"]:
            for cpd in conn["constituent-cpd-id"]:
                connected.setdefault((prof["id"], conn["virtual-link-profile-id"]), set()).add(
                    cpd["constituent-cpd-id"]
                )
    ips = {}  # (member, vl) -> ip
    for i, vld in enumerate(data.get("vld", []) or []):
        at = at_vld + [i]
        if vld["name"] not in vl_ids:
            out.append(
                Problem(
                    file,
                    at + ["name"],
                    "{!r} is not a virtual-link-desc of nsd {} ({})".format(
                        vld["name"], nsd["id"], ", ".join(sorted(vl_ids))
                    ),
                )
            )
            continue
        seen = {}
        for j, ref in enumerate(vld.get("vnfd-connection-point-ref", []) or []):
            rat = at + ["vnfd-connection-point-ref", j]
            member = ref["member-vnf-index-ref"]
            if member not in profiles:
                out.append(
                    Problem(
                        file,
                        rat + ["member-vnf-index-ref"],
                        "no member-vnf-index {!r} in nsd {} ({})".format(
                            member, nsd["id"], ", ".join(profiles)
                        ),
                    )
                )
                continue
            if ref["vnfd-connection-point-ref"] not in connected.get((member, vld["name"]), set()):
                out.append(
                    Problem(
                        file,
                        rat + ["vnfd-connection-point-ref"],
                        "{!r} of member {} is not connected to {} in nsd {}".format(
                            ref["vnfd-connection-point-ref"], member, vld["name"], nsd["id"]
                        ),
                    )
                )
                continue
            ip = ipaddress.ip_address(ref["ip-address"])
            if vld["name"] not in cidrs:
                out.append(
                    Problem(
                        file,
                        rat + ["ip-address"],
                        "link {} has no cidr in nsd {}, so no fixed address can be checked".format(
                            vld["name"], nsd["id"]
                        ),
                    )
                )
                continue
            net, gateway = cidrs[vld["name"]]
            if ip not in net or (
                net.num_addresses > 2 and ip in (net.network_address, net.broadcast_address)
            ):
                out.append(
                    Problem(
                        file,
                        rat + ["ip-address"],
                        "{} is not a host address of {} (link {})".format(ip, net, vld["name"]),
                    )
                )
            elif gateway and ip == ipaddress.ip_address(gateway):
                out.append(
                    Problem(
                        file, rat + ["ip-address"], "{} is the gateway of link {}".format(ip, vld["name"])
                    )
                )
            if ip in seen:
                out.append(
                    Problem(
                        file,
                        rat + ["ip-address"],
                        "{} is already used on link {} ({})".format(ip, vld["name"], seen[ip]),
                    )
                )
            seen[ip] = "vnfd-connection-point-ref[{}]".format(j)
            ips[(member, vld["name"])] = str(ip)
    for i, vnf in enumerate(data.get("vnf", []) or []):
        if vnf["member-vnf-index"] not in profiles:
            out.append(
                Problem(
                    file,
                    at_vnf + [i, "member-vnf-index"],
                    "no member-vnf-index {!r} in nsd {}".format(vnf["member-vnf-index"], nsd["id"]),
                )
            )
    given = {}
    for i, item in enumerate(data.get("additionalParamsForVnf", []) or []):
        member = item["member-vnf-index"]
        if member not in profiles:
            out.append(
                Problem(
                    file,
                    at_apv + [i, "member-vnf-index"],
                    "no member-vnf-index {!r} in nsd {}".format(member, nsd["id"]),
                )
            )
            continue
        if member in given:
            out.append(
                Problem(file, at_apv + [i, "member-vnf-index"], "member {} is given twice".format(member))
            )
        given[member] = (i, item.get("additionalParams") or {})
    for member, prof in profiles.items():
        vnfd = vnfds.get(prof["vnfd-id"])
        if vnfd is None:
            continue
        needed = dict(placeholders(vnfd.body))
        for cif in descriptors.cloud_init_files(vnfd.body):
            path = os.path.join(cloud_init_dir, cif)
            if os.path.isfile(path):
                with open(path) as f:
                    names, _ = cloud_init_vars(f.read(), cif)
                for name in names:
                    needed.setdefault(name, "cloud-init/" + cif)
        idx, supplied = given.get(member, (None, {}))
        for name, where in sorted(needed.items()):
            if name not in supplied:
                where_s = where if isinstance(where, str) else "{} {}".format(vnfd.file, _fmt(where))
                out.append(
                    Problem(
                        file,
                        at_apv + ([idx, "additionalParams"] if idx is not None else []),
                        "member {}: parameter {!r} is not supplied (needed by {})".format(
                            member, name, where_s
                        ),
                    )
                )
        for name, value in sorted(supplied.items()):
            at = at_apv + [idx, "additionalParams", name]
            if name not in needed:
                out.append(
                    Problem(
                        file, at, "not used by any primitive or cloud-init of vnfd {}".format(prof["vnfd-id"])
                    )
                )
            m = re.match(r"^(.+)_endpoint_address$", name)
            if m and (member, m.group(1)) in ips and str(value) != ips[(member, m.group(1))]:
                out.append(
                    Problem(
                        file,
                        at,
                        "{} but member {} has {} on link {}".format(
                            value, member, ips[(member, m.group(1))], m.group(1)
                        ),
                    )
                )
    return out


def _fmt(path):
    from bundle.validate.problems import fmt_path

    return fmt_path(path)


def check_nsi_params(data, file, nsts, nsds, vnfds, cloud_init_dir):
    """One nsi-create config used for every NST in ``nsts``."""
    out = []
    for nst in nsts:
        subnets = {s["id"]: s for s in nst.body["netslice-subnet"]}
        slice_vlds = {v["name"] for v in nst.body.get("netslice-vld", [])}
        for i, vld in enumerate(data.get("netslice-vld", []) or []):
            if vld["name"] not in slice_vlds:
                out.append(
                    Problem(
                        file,
                        ["netslice-vld", i, "name"],
                        "{!r} is not a netslice-vld of nst {}".format(vld["name"], nst.id),
                    )
                )
        per_subnet = {}
        for i, sub in enumerate(data.get("netslice-subnet", []) or []):
            if sub["id"] not in subnets:
                out.append(
                    Problem(
                        file,
                        ["netslice-subnet", i, "id"],
                        "{!r} is not a netslice-subnet of nst {}".format(sub["id"], nst.id),
                    )
                )
                continue
            per_subnet.setdefault(sub["id"], {})["sub"] = (i, sub)
        for i, extra in enumerate(data.get("additionalParamsForSubnet", []) or []):
            if extra["id"] not in subnets:
                out.append(
                    Problem(
                        file,
                        ["additionalParamsForSubnet", i, "id"],
                        "{!r} is not a netslice-subnet of nst {}".format(extra["id"], nst.id),
                    )
                )
                continue
            per_subnet.setdefault(extra["id"], {})["extra"] = (i, extra)
        for sid, sub in subnets.items():
            nsd = nsds.get(sub["nsd-ref"])
            if nsd is None:
                continue
            got = per_subnet.get(sid, {})
            si, s = got.get("sub", (None, {}))
            ei, e = got.get("extra", (None, {}))
            merged = {
                "vld": s.get("vld", []),
                "vnf": s.get("vnf", []),
                "additionalParamsForVnf": e.get("additionalParamsForVnf", []),
            }
            where = {
                "vld": ["netslice-subnet", si, "vld"],
                "vnf": ["netslice-subnet", si, "vnf"],
                "additionalParamsForVnf": (
                    ["additionalParamsForSubnet", ei, "additionalParamsForVnf"]
                    if ei is not None
                    else ["additionalParamsForSubnet"]
                ),
            }
            out.extend(check_ns_params(merged, file, nsd, vnfds, cloud_init_dir, where=where))
    return _dedupe(out)


def _dedupe(problems):
    seen, out = set(), []
    for p in problems:
        if str(p) not in seen:
            seen.add(str(p))
            out.append(p)
    return out
