"""Checks OSM does not make: descriptors against the charms (bundle.charmspec.charm_spec).

OSM only notices a wrong primitive or relation endpoint at instantiation time, or never
(a misspelt relation endpoint is a Juju warning only).
"""

import re

from bundle import charmspec, descriptors
from bundle.validate.problems import Problem
from vpnaas.vnf import metrics

PLACEHOLDER_RE = re.compile(r"^<([A-Za-z_][A-Za-z0-9_-]*)>$")
OPTION_TYPES = {"string": "STRING", "int": "INTEGER", "boolean": "BOOLEAN", "float": "STRING"}
ACTION_TYPES = {"string": "STRING", "integer": "INTEGER", "boolean": "BOOLEAN", "number": "STRING"}
# OSM runs verify-ssh-credentials itself after `config` (up to 20 tries).
AUTOMATIC = {"verify-ssh-credentials"}


def charm_name(charm_file):
    """hss.charm -> hss; None if the name does not have the packed-charm form."""
    if charm_file and charm_file.endswith(".charm"):
        return charm_file[: -len(".charm")]
    return None


# charm_spec() parses a dozen YAML files; the spec does not change while one process runs.
_SPECS = {}


def _spec(name, cache=_SPECS):
    cache = _SPECS  # shared across calls on purpose (see above)
    if name not in cache:
        try:
            cache[name] = charmspec.charm_spec(name)
        except charmspec.SpecError:
            cache[name] = None
    return cache[name]


def _day12_path(vnfd, entry):
    lst = vnfd["df"][0]["lcm-operations-configuration"]["operate-vnf-op-config"]["day1-2"]
    return descriptors.path_prefix("vnfd") + [
        "df",
        0,
        "lcm-operations-configuration",
        "operate-vnf-op-config",
        "day1-2",
        lst.index(entry),
    ]


def check_vnfd(desc, cache):
    v = desc.body
    entry = descriptors.day12(v)
    if entry is None:
        return [Problem(desc.file, descriptors.path_prefix("vnfd") + ["df", 0, "lcm-operations-configuration"],
                        "no day1-2 entry with the vnfd id {!r} or a vdu id: the proxy charm would never be "
                        "deployed".format(
                            v["id"]))]
    at = _day12_path(v, entry)
    ees = entry.get("execution-environment-list", [])
    if not ees:
        return [Problem(desc.file, at + ["execution-environment-list"],
                        "missing: OSM 11+ resolves relations and primitives only through execution-environment-list")]
    name = charm_name(ees[0]["juju"]["charm"])
    spec = _spec(name, cache) if name else None
    if spec is None:
        return [Problem(desc.file, at + ["execution-environment-list", 0, "juju", "charm"],
                        "{!r} is not <charm>.charm for a charm of the bundle ({})".format(
                            ees[0]["juju"]["charm"], ", ".join(charmspec.charm_names())))]
    out = []
    if ees[0]["juju"].get("proxy") is not True:
        out.append(Problem(desc.file, at + ["execution-environment-list", 0, "juju", "proxy"],
                           "the bundle's charms are proxy charms: set proxy: true"))
    if entry.get("config-access", {}).get("ssh-access", {}).get("required") is not True:
        out.append(Problem(desc.file, at + ["config-access", "ssh-access", "required"],
                           "must be true, so that OSM injects the charm's SSH key into the VNF"))
    ee_ids = [ee["id"] for ee in ees]
    out += _check_exporter(desc, spec)
    out += _check_initial_primitives(desc, at, entry, ee_ids, spec, name)
    for i, p in enumerate(entry.get("config-primitive", [])):
        pat = at + ["config-primitive", i]
        out.extend(_check_ee_ref(desc, pat, p, ee_ids))
        action = p.get("execution-environment-primitive", p["name"])
        out.extend(_check_action(desc, pat, action, p, spec["actions"], name, initial=False))
    return out


def _check_exporter(desc, spec):
    """``exporters-endpoints`` (OSM 14+ scrapes the charm's metrics exporter): in df[0], the only
    df LCM reads it from; its port the charm's ``metrics-port`` default and its path /metrics, so
    OSM scrapes what the charm serves; its connection point the management one (the exporter
    listens on the management address only)."""
    v = desc.body
    at = descriptors.path_prefix("vnfd") + ["df"]
    out = [Problem(desc.file, at + [i, "exporters-endpoints"], "only df[0] is read by OSM's LCM")
           for i, df in enumerate(v.get("df", [])) if i and "exporters-endpoints" in df]
    exp = v["df"][0].get("exporters-endpoints")
    if exp is None:
        return out
    default = spec["config"]["options"].get("metrics-port", {}).get("default")
    if exp.get("metric-port") != default:
        out.append(Problem(desc.file, at + [0, "exporters-endpoints", "metric-port"],
                           "{} is not the charm's metrics-port ({})".format(exp.get("metric-port"), default)))
    if exp.get("metric-path") != metrics.METRIC_PATH:
        out.append(Problem(desc.file, at + [0, "exporters-endpoints", "metric-path"],
                           "the exporter serves {}".format(metrics.METRIC_PATH)))
    ref = exp.get("external-connection-point-ref")
    if ref is not None and ref != v.get("mgmt-cp"):
        out.append(Problem(desc.file, at + [0, "exporters-endpoints", "external-connection-point-ref"],
                           "{} is not the management connection point {} (the exporter listens there only)"
                           .format(ref, v.get("mgmt-cp"))))
    return out


def _check_initial_primitives(desc, at, entry, ee_ids, spec, name):
    """config first, then actions of the charm in seq order; never what OSM runs by itself."""
    out = []
    prims = entry.get("initial-config-primitive", [])
    seqs = [p["seq"] for p in prims]
    for i, p in enumerate(prims):
        pat = at + ["initial-config-primitive", i]
        if seqs.count(p["seq"]) > 1:
            out.append(Problem(desc.file, pat + ["seq"], "seq {} is used twice".format(p["seq"])))
        out.extend(_check_ee_ref(desc, pat, p, ee_ids))
        if p["name"] == "config":
            if p["seq"] != min(seqs):
                out.append(Problem(desc.file, pat + ["seq"], "config must run first (lowest seq)"))
            out.extend(_check_config(desc, pat, p, spec["config"]["options"], name))
        elif p["name"] in AUTOMATIC:
            out.append(Problem(desc.file, pat + ["name"],
                               "{!r} is run by OSM itself after config; do not list it".format(p["name"])))
        else:
            out.extend(_check_action(desc, pat, p["name"], p, spec["actions"], name, initial=True))
    if "config" not in [p["name"] for p in prims]:
        out.append(Problem(desc.file, at + ["initial-config-primitive"],
                           "no config primitive: the charm would never learn ssh-hostname"))
    return out


def _check_ee_ref(desc, pat, prim, ee_ids):
    ref = prim.get("execution-environment-ref")
    if ref is None:
        # the 2020 LCM filters primitives strictly by EE
        return [Problem(desc.file, pat, "execution-environment-ref missing")]
    if ref not in ee_ids:
        return [
            Problem(
                desc.file,
                pat + ["execution-environment-ref"],
                "{!r} is not in execution-environment-list ({})".format(ref, ", ".join(ee_ids)),
            )
        ]
    return []


def _check_config(desc, pat, prim, options, charm):
    out = []
    names = [p["name"] for p in prim.get("parameter", [])]
    for req in ("ssh-hostname", "ssh-username"):
        if req not in names:
            out.append(Problem(desc.file, pat + ["parameter"], "config must set {}".format(req)))
    for j, param in enumerate(prim.get("parameter", [])):
        ppat = pat + ["parameter", j]
        if names.count(param["name"]) > 1:
            out.append(Problem(desc.file, ppat + ["name"], "{!r} is set twice".format(param["name"])))
        opt = options.get(param["name"])
        if opt is None:
            out.append(
                Problem(
                    desc.file,
                    ppat + ["name"],
                    "{!r} is not a config option of charm {}".format(param["name"], charm),
                )
            )
            continue
        want = OPTION_TYPES.get(opt.get("type", "string"), "STRING")
        got = param.get("data-type", "STRING")
        if got != want:
            out.append(
                Problem(
                    desc.file,
                    ppat + ["data-type"],
                    "{} but option {!r} of charm {} is {} (use data-type: {})".format(
                        got, param["name"], charm, opt.get("type"), want
                    ),
                )
            )
        value = param["value"]
        if isinstance(value, str) and PLACEHOLDER_RE.match(value):
            continue
        if want == "INTEGER" and (isinstance(value, bool) or not isinstance(value, int)):
            out.append(Problem(desc.file, ppat + ["value"], "{!r} is not an integer".format(value)))
        if want == "STRING" and not isinstance(value, str):
            out.append(Problem(desc.file, ppat + ["value"], "{!r} is not a string".format(value)))
    return out


def _check_action(desc, pat, action, prim, actions, charm, initial):
    if action not in actions:
        return [Problem(desc.file, pat + ["name"], "{!r} is not an action of charm {}".format(action, charm))]
    out = []
    declared = actions[action] or {}
    aparams = declared.get("params", {}) or {}
    given = {}
    for j, param in enumerate(prim.get("parameter", [])):
        given[param["name"]] = param
        if param["name"] not in aparams:
            out.append(
                Problem(
                    desc.file,
                    pat + ["parameter", j, "name"],
                    "{!r} is not a parameter of action {} of charm {} ({})".format(
                        param["name"], action, charm, ", ".join(sorted(aparams)) or "none"
                    ),
                )
            )
            continue
        want = ACTION_TYPES.get(aparams[param["name"]].get("type", "string"), "STRING")
        if param.get("data-type", "STRING") != want:
            out.append(
                Problem(
                    desc.file,
                    pat + ["parameter", j, "data-type"],
                    "{} but parameter {!r} of action {} is {}".format(
                        param.get("data-type", "STRING"), param["name"], action, want
                    ),
                )
            )
    for req in declared.get("required", []) or []:
        p = given.get(req)
        if p is None:
            out.append(
                Problem(
                    desc.file,
                    pat + ["parameter"],
                    "required parameter {!r} of action {} (charm {}) is not given".format(req, action, charm),
                )
            )
        elif not initial and not p.get("mandatory") and "default-value" not in p:
            out.append(
                Problem(
                    desc.file,
                    pat + ["parameter"],
                    "required parameter {!r} of action {} must be mandatory: true".format(req, action),
                )
            )
    return out


def relation_sides(rel):
    """(provider, requirer) as {"vnf-profile-id", "endpoint"} for either relation syntax."""
    if "entities" in rel:
        a, b = rel["entities"]
        return (
            (
                {"vnf-profile-id": a["id"], "endpoint": a["endpoint"]},
                {"vnf-profile-id": b["id"], "endpoint": b["endpoint"]},
            ),
            ("entities", 0),
            ("entities", 1),
        )
    return (rel["provider"], rel["requirer"]), ("provider",), ("requirer",)


def check_relations(desc, vnfds, cache):
    n = desc.body
    pre = descriptors.path_prefix("nsd") + ["ns-configuration", "relation"]
    profiles = {p["id"]: p for p in n["df"][0]["vnf-profile"]}
    out = []
    seen = set()
    for i, rel in enumerate(n.get("ns-configuration", {}).get("relation", [])):
        (prov, req), ppath, rpath = relation_sides(rel)
        if rel["name"] in seen:
            out.append(
                Problem(desc.file, pre + [i, "name"], "duplicate relation name {!r}".format(rel["name"]))
            )
        seen.add(rel["name"])
        ends = []
        for side, section, path in ((prov, "provides", ppath), (req, "requires", rpath)):
            prof = profiles.get(side["vnf-profile-id"])
            at = pre + [i] + list(path)
            if prof is None:
                out.append(
                    Problem(
                        desc.file,
                        at + ["vnf-profile-id" if path[0] != "entities" else "id"],
                        "no vnf-profile {!r}".format(side["vnf-profile-id"]),
                    )
                )
                continue
            vnfd = vnfds.get(prof["vnfd-id"])
            cname = charm_name(descriptors.charm_of(vnfd.body)) if vnfd else None
            spec = _spec(cname, cache) if cname else None
            if spec is None:
                continue
            meta = spec["metadata"]
            ep = (meta.get(section) or {}).get(side["endpoint"])
            if ep is None:
                other = "requires" if section == "provides" else "provides"
                hint = (
                    " (it is under {})".format(other) if side["endpoint"] in (meta.get(other) or {}) else ""
                )
                out.append(
                    Problem(
                        desc.file,
                        at + ["endpoint"],
                        "charm {} {} no endpoint {!r}{}".format(
                            cname, section[:-1] + "s", side["endpoint"], hint
                        ),
                    )
                )
                continue
            ends.append((cname, ep.get("interface"), at))
        if len(ends) == 2 and ends[0][1] != ends[1][1]:
            out.append(
                Problem(
                    desc.file,
                    pre + [i],
                    "interfaces differ: {} has {!r}, {} has {!r}".format(
                        ends[0][0], ends[0][1], ends[1][0], ends[1][1]
                    ),
                )
            )
    return out
