"""Checks of the instantiation parameters (params/*.yaml) against the descriptors they feed."""

import ipaddress
import os
import re

from bundle import descriptors, params
from bundle.validate.charms import PLACEHOLDER_RE
from bundle.validate.problems import Problem, fmt_path
from vpnaas.core import instance, registry

# OSM renders cloud-init as Jinja2 with StrictUndefined. The bundle allows only plain variable
# references in it; anything else that Jinja would parse is refused.
JINJA_VAR_RE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
JINJA_ANY_RE = re.compile(r"\{\{|\{%|\{#")
# LCM fills these itself (<OSM>: LCM 11+, its count_index, vdu_id, ns_id ...; NBI skips it).
BUILTIN = {"rw_mgmt_ip", "OSM"}
SECRET_KEYS = {"lte_k", "lte_op", "ue_lte_k", "ue_lte_op", "subscriber_k", "subscriber_op", "ue_k", "ue_op",
               "db_password"}


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


def _connections(nsd):
    """{(member, virtual link): {cpd ids}} of the NSD's vnf-profiles."""
    connected = {}
    for prof in nsd["df"][0]["vnf-profile"]:
        for conn in prof["virtual-link-connectivity"]:
            for cpd in conn["constituent-cpd-id"]:
                connected.setdefault((prof["id"], conn["virtual-link-profile-id"]), set()).add(
                    cpd["constituent-cpd-id"]
                )
    return connected


def _check_address(ip, link, cidrs, nsd_id):
    """The reason a fixed address is wrong on ``link``, or None."""
    if link not in cidrs:
        return "link {} has no cidr in nsd {}, so no fixed address can be checked".format(link, nsd_id)
    net, gateway = cidrs[link]
    if ip not in net or (net.num_addresses > 2 and ip in (net.network_address, net.broadcast_address)):
        return "{} is not a host address of {} (link {})".format(ip, net, link)
    if gateway and ip == ipaddress.ip_address(gateway):
        return "{} is the gateway of link {}".format(ip, link)
    return None


def _check_cp_refs(vld, at, nsd, connected, cidrs, file):
    """(problems, {(member, link): ip}) for one vld entry's vnfd-connection-point-ref list."""
    out, ips, seen = [], {}, {}
    members = sorted({m for m, _ in connected})
    for j, ref in enumerate(vld.get("vnfd-connection-point-ref", []) or []):
        rat = at + ["vnfd-connection-point-ref", j]
        member, link = ref["member-vnf-index-ref"], vld["name"]
        if member not in members:
            msg = "no member-vnf-index {!r} in nsd {} ({})".format(member, nsd["id"], ", ".join(members))
            out.append(Problem(file, rat + ["member-vnf-index-ref"], msg))
            continue
        if ref["vnfd-connection-point-ref"] not in connected.get((member, link), set()):
            msg = "{!r} of member {} is not connected to {} in nsd {}".format(
                ref["vnfd-connection-point-ref"], member, link, nsd["id"]
            )
            out.append(Problem(file, rat + ["vnfd-connection-point-ref"], msg))
            continue
        ip = ipaddress.ip_address(ref["ip-address"])
        wrong = _check_address(ip, link, cidrs, nsd["id"])
        if wrong:
            out.append(Problem(file, rat + ["ip-address"], wrong))
            if link not in cidrs:
                continue
        if ip in seen:
            msg = "{} is already used on link {} ({})".format(ip, link, seen[ip])
            out.append(Problem(file, rat + ["ip-address"], msg))
        seen[ip] = "vnfd-connection-point-ref[{}]".format(j)
        ips[(member, link)] = str(ip)
    return out, ips


def _check_vlds(vlds, at_vld, nsd, file):
    """(problems, {(member, link): ip}) for the vld section."""
    out, ips = [], {}
    vl_ids = {vl["id"] for vl in nsd["virtual-link-desc"]}
    connected, cidrs = _connections(nsd), _vl_cidrs(nsd)
    for i, vld in enumerate(vlds or []):
        if vld["name"] not in vl_ids:
            msg = "{!r} is not a virtual-link-desc of nsd {} ({})".format(
                vld["name"], nsd["id"], ", ".join(sorted(vl_ids))
            )
            out.append(Problem(file, at_vld + [i, "name"], msg))
            continue
        found, link_ips = _check_cp_refs(vld, at_vld + [i], nsd, connected, cidrs, file)
        out.extend(found)
        ips.update(link_ips)
    return out, ips


def _given_params(items, at_apv, profiles, nsd_id, file):
    """(problems, {member: (index, additionalParams)}) of additionalParamsForVnf."""
    out, given = [], {}
    for i, item in enumerate(items or []):
        member = item["member-vnf-index"]
        if member not in profiles:
            msg = "no member-vnf-index {!r} in nsd {}".format(member, nsd_id)
            out.append(Problem(file, at_apv + [i, "member-vnf-index"], msg))
            continue
        if member in given:
            out.append(Problem(file, at_apv + [i, "member-vnf-index"], "member {} is given twice".format(member)))
        given[member] = (i, item.get("additionalParams") or {})
    return out, given


def needed_params(vnfd, cloud_init_dir):
    """{name: where} of every parameter the VNF's initial primitives and cloud-init need."""
    needed = dict(placeholders(vnfd.body))
    for cif in descriptors.cloud_init_files(vnfd.body):
        path = os.path.join(cloud_init_dir, cif)
        if os.path.isfile(path):
            with open(path) as f:
                names, _ = cloud_init_vars(f.read(), cif)
            for name in names:
                needed.setdefault(name, "cloud-init/" + cif)
    return needed


def _check_service_addresses(name, value, vnfd, file, at):
    """``<rp>_service_addresses`` against the registry, the IP plan's one source: the VNF's
    component is an end of the reference point, and every address lies in its service network."""
    m = re.match(r"^(.+)_service_addresses$", name)
    rp = registry.load().reference_points.get(m.group(1)) if m else None
    if rp is None:
        return []
    component = next((c.name for c in registry.load().with_vnfd() if c.vnfd == vnfd.source), None)
    if component not in (rp.provider, rp.requirer):
        return [Problem(file, at, "{} is no end of reference point {} ({} provides, {} requires: "
                        "charms/vpnaas/registry.yaml)".format(component, rp.name, rp.provider, rp.requirer))]
    out = []
    for text in [t.strip() for t in str(value or "").split(",") if t.strip()]:
        try:
            inside = ipaddress.ip_interface(text).ip in ipaddress.ip_network(rp.service_network)
        except ValueError as e:
            out.append(Problem(file, at, "{}: {}".format(text, e)))
            continue
        if rp.service_network and not inside:
            out.append(Problem(file, at, "{} is outside {}'s service network {} (charms/vpnaas/registry.yaml)".format(
                text, rp.name, rp.service_network)))
    return out


def _check_member_params(member, vnfd, given, ips, at_apv, file, cloud_init_dir):
    """Every needed parameter supplied, none unused, endpoint addresses equal to the plan's."""
    out = []
    needed = needed_params(vnfd, cloud_init_dir)
    idx, supplied = given.get(member, (None, {}))
    for name, where in sorted(needed.items()):
        if name not in supplied:
            where_s = where if isinstance(where, str) else "{} {}".format(vnfd.file, fmt_path(where))
            at = at_apv + ([idx, "additionalParams"] if idx is not None else [])
            msg = "member {}: parameter {!r} is not supplied (needed by {})".format(member, name, where_s)
            out.append(Problem(file, at, msg))
    for name, value in sorted(supplied.items()):
        at = at_apv + [idx, "additionalParams", name]
        if name not in needed:
            out.append(Problem(file, at, "not used by any primitive or cloud-init of vnfd {}".format(vnfd.id)))
        out += _check_service_addresses(name, value, vnfd, file, at)
        m = re.match(r"^(.+)_endpoint_address$", name)
        if m and (member, m.group(1)) in ips and str(value) != ips[(member, m.group(1))]:
            msg = "{} but member {} has {} on link {}".format(value, member, ips[(member, m.group(1))], m.group(1))
            out.append(Problem(file, at, msg))
    return out


def check_ns_params(data, file, nsd_desc, vnfds, cloud_init_dir, where=None):
    """data: a rendered ns-create config for nsd_desc (keys vld, vnf, additionalParamsForVnf).

    where: {section: path of that list in the file}, for configs (nsi-create) that keep the
    sections elsewhere; default: the top-level keys of the same name.
    """
    where = dict(where or {})
    at_apv = where.get("additionalParamsForVnf", ["additionalParamsForVnf"])
    nsd = nsd_desc.body
    profiles = {p["id"]: p for p in nsd["df"][0]["vnf-profile"]}
    out, ips = _check_vlds(data.get("vld"), where.get("vld", ["vld"]), nsd, file)
    for i, vnf in enumerate(data.get("vnf", []) or []):
        if vnf["member-vnf-index"] not in profiles:
            msg = "no member-vnf-index {!r} in nsd {}".format(vnf["member-vnf-index"], nsd["id"])
            out.append(Problem(file, where.get("vnf", ["vnf"]) + [i, "member-vnf-index"], msg))
    found, given = _given_params(data.get("additionalParamsForVnf"), at_apv, profiles, nsd["id"], file)
    out.extend(found)
    for member, prof in profiles.items():
        vnfd = vnfds.get(prof["vnfd-id"])
        if vnfd is not None:
            out.extend(_check_member_params(member, vnfd, given, ips, at_apv, file, cloud_init_dir))
    instances = {member: max_instances(vnfds.get(prof["vnfd-id"])) for member, prof in profiles.items()}
    return out + _check_distinct_service_addresses(given, instances, at_apv, file)


def max_instances(vnfd):
    """The most instances of any VDU the VNFD's deployment flavour allows (1 when it names none):
    instance k of a scaled VDU takes each service address + k (vpnaas.core.instance)."""
    if vnfd is None:
        return 1
    df = (vnfd.body.get("df") or [{}])[0]
    counts = [p.get("max-number-of-instances", 1) for p in df.get("vdu-profile") or []]
    return max([c for c in counts if isinstance(c, int) and c >= 1] or [1])


def _instance_ips(rp_name, text, count):
    """[(k, ip)] of one named service address for instances 0 .. count-1, shifted inside the
    reference point's service network as the charm shifts it; [] for an address
    _check_service_addresses refuses; none past an instance whose +k leaves the network (the charm
    refuses that instance's config)."""
    try:
        iface = ipaddress.ip_interface(text)
    except ValueError:
        return []
    rp = registry.load().reference_points.get(rp_name)
    net = ipaddress.ip_network(rp.service_network) if rp is not None and rp.service_network else None
    out = [(0, iface.ip)]
    for k in range(1, count):
        try:
            (shifted,) = instance.service_addresses([iface], k, net, rp_name)
        except ValueError:
            break
        out.append((k, shifted.ip))
    return out


def _check_distinct_service_addresses(given, instances, at_apv, file):
    """No two members share a service address on a reference point, counting every instance a
    scaled VDU may have (+k; ``instances``: {member: how many}): the file's plan and the registry's
    defaults (bundle.params.with_service_addresses) must not collide."""
    out, seen = [], {}
    for member, (idx, supplied) in sorted(given.items(), key=lambda kv: kv[1][0]):   # the file's order
        for name, value in sorted(supplied.items()):
            m = re.match(r"^(.+)_service_addresses$", name)
            if not m:
                continue
            named = set()
            for text in [t.strip() for t in str(value or "").split(",") if t.strip()]:
                for k, ip in _instance_ips(m.group(1), text, instances.get(member, 1)):
                    other = seen.setdefault((m.group(1), ip), (member, k))
                    if other[0] == member or ip in named:
                        continue
                    named.add(ip)
                    mine = " (this member's instance +{})".format(k) if k else ""
                    theirs = "member {}'s".format(other[0]) + (" instance +{}'s".format(other[1]) if other[1] else "")
                    out.append(Problem(file, at_apv + [idx, "additionalParams", name],
                                       "{}{} is {} service address on {} too: give each end its own (an address "
                                       "the file names may be the registry's default for the other end, and a "
                                       "scaled VDU's instance k takes each address + k: docs/bundle.md)".format(
                                           ip, mine, theirs, m.group(1))))
    return out


def check_nsi_params(data, file, nsts, nsds, vnfds, cloud_init_dir):
    """One nsi-create config used for every NST in ``nsts``: NBI's form, where each netslice-subnet
    item carries its own vld, vnf and additionalParamsForVnf."""
    out = []
    for nst in nsts:
        subnets = {s["id"]: s for s in nst.body["netslice-subnet"]}
        slice_vlds = {v["name"] for v in nst.body.get("netslice-vld", [])}
        for i, vld in enumerate(data.get("netslice-vld", []) or []):
            if vld["name"] not in slice_vlds:
                msg = "{!r} is not a netslice-vld of nst {}".format(vld["name"], nst.id)
                out.append(Problem(file, ["netslice-vld", i, "name"], msg))
        given = {}
        for i, sub in enumerate(data.get("netslice-subnet", []) or []):
            if sub["id"] not in subnets:
                msg = "{!r} is not a netslice-subnet of nst {}".format(sub["id"], nst.id)
                out.append(Problem(file, ["netslice-subnet", i, "id"], msg))
                continue
            given[sub["id"]] = (i, sub)
        for sid, sub in subnets.items():
            nsd = nsds.get(sub["nsd-ref"])
            if nsd is None:
                continue
            si, s = given.get(sid, (None, {}))
            at = ["netslice-subnet", si] if si is not None else ["netslice-subnet"]
            where = {key: at + [key] for key in ("vld", "vnf", "additionalParamsForVnf")}
            out.extend(check_ns_params(s, file, nsd, vnfds, cloud_init_dir, where=where))
    return _dedupe(out)


def _dedupe(problems):
    seen, out = set(), []
    for p in problems:
        if str(p) not in seen:
            seen.add(str(p))
            out.append(p)
    return out
