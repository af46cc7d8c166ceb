"""`make validate`: the project's SOL006-subset schema, OSM's own onboarding cross-checks and the
checks OSM does not make, over the descriptor sources AND every generated variant.

``validate_bundle()`` returns a list of Problems (empty = valid); each names the file and the
path inside it.
"""

import os

from bundle import ROOT, descriptors, params
from bundle.validate import charms, osm, params_checks, schema
from bundle.validate.problems import Problem, fmt_path

__all__ = ["Problem", "fmt_path", "validate_bundle", "validate_descriptors", "validate_params", "Summary"]

CLOUD_INIT_DIR = os.path.join(ROOT, "cloud-init")


class Summary:
    def __init__(self):
        self.counts = {}

    def add(self, what, n=1):
        self.counts[what] = self.counts.get(what, 0) + n

    def __str__(self):
        return ", ".join("{} {}".format(n, what) for what, n in self.counts.items())


def validate_descriptors(bundle, cloud_init_dir=CLOUD_INIT_DIR, summary=None):
    """Schema, OSM cross-checks and charm checks of every descriptor.

    Returns (problems, valid) where valid maps kind -> {id: Descriptor} of schema-valid ones.
    """
    summary = summary or Summary()
    problems = []
    valid = {"vnfd": {}, "nsd": {}, "nst": {}}
    everything = list(bundle.vnfs) + list(bundle.nss) + list(bundle.nsts)
    # The NSD source is not itself packaged (its eps_wg variant is), so it is checked on its own.
    everything += [d for d in bundle.sources if d not in everything]
    for desc in everything:
        found = schema.check(desc.kind, desc.data, desc.file) + osm.check_file_name(desc)
        problems.extend(found)
        if not found:
            if desc in bundle.sources and desc.kind == "nsd" and desc.id in valid["nsd"]:
                continue
            valid[desc.kind].setdefault(desc.id, desc)
        summary.add(desc.kind)
    # unique ids across everything onboarded side by side
    for kind, items in (("vnfd", bundle.vnfs), ("nsd", bundle.nss), ("nst", bundle.nsts)):
        seen = {}
        for desc in items:
            if desc.id in seen:
                problems.append(
                    Problem(
                        desc.file,
                        descriptors.path_prefix(kind) + ["id"],
                        "id {!r} is also used by {}".format(desc.id, seen[desc.id]),
                    )
                )
            seen[desc.id] = desc.file
    cache = {}
    for desc in [d for d in everything if d.kind == "vnfd"]:
        if desc.id in valid["vnfd"] and valid["vnfd"][desc.id] is desc:
            problems.extend(osm.check_vnfd(desc, cloud_init_dir))
            problems.extend(charms.check_vnfd(desc, cache))
    for desc in [d for d in everything if d.kind == "nsd"]:
        if not schema.check("nsd", desc.data, desc.file):
            problems.extend(osm.check_nsd(desc, valid["vnfd"]))
            problems.extend(charms.check_relations(desc, valid["vnfd"], cache))
    for desc in bundle.nsts:
        if desc.id in valid["nst"]:
            problems.extend(osm.check_nst(desc, valid["nsd"]))
    problems.extend(_vnf_readmes(bundle))
    return problems, valid


def _vnf_readmes(bundle):
    """Every VNF package carries the README.md beside its VNFD source (packages.py copies it)."""
    out = []
    for desc in bundle.sources:
        readme = os.path.join(os.path.dirname(desc.source), "README.md")
        if desc.kind == "vnfd" and not os.path.isfile(os.path.join(ROOT, readme)):
            out.append(Problem(desc.file, "(file)", "{} is missing: the package's README".format(readme)))
    return out


def validate_cloud_init(bundle, cloud_init_dir=CLOUD_INIT_DIR, summary=None):
    problems = []
    files = sorted({f for d in bundle.vnfs for f in descriptors.cloud_init_files(d.body)})
    for name in files:
        path = os.path.join(cloud_init_dir, name)
        if not os.path.isfile(path):
            continue  # reported by the VNFD check
        with open(path) as f:
            text = f.read()
        shown = "cloud-init/" + name
        if not text.startswith("#cloud-config"):
            problems.append(Problem(shown, "line 1", "must start with #cloud-config"))
        _, found = params_checks.cloud_init_vars(text, shown)
        problems.extend(found)
        if summary:
            summary.add("cloud-init files")
    return problems


def validate_params(bundle, valid, cloud_init_dir=CLOUD_INIT_DIR, summary=None, loader=params.load):
    """Every params template of every variant: secrets, schema (after rendering with dummy values),
    and the IP plan / placeholder checks against the variant's descriptors."""
    problems = []
    rendered = {}
    for variant in bundle.variants.values():
        file = variant["params"]
        if file not in rendered:
            try:
                template = loader(file)
            except params.ParamsError as e:
                problems.append(Problem(file, "(top level)", str(e)))
                rendered[file] = None
                continue
            problems.extend(params_checks.check_secrets(template, file))
            data = params.substitute(template, params.dummy_env(template), where=file)
            ref = "ns-params#/$defs/" + ("nsi" if variant["kind"] == "nsi" else "ns")
            found = schema.check(ref, data, file)
            problems.extend(found)
            rendered[file] = None if found else data
            if summary:
                summary.add("params files")
        data = rendered[file]
        if data is None:
            continue
        if variant["kind"] == "ns":
            nsd = valid["nsd"].get(variant["descriptor_ids"][0])
            if nsd is not None:
                problems.extend(_as_osm_gets_it((file, descriptors.members_of(bundle, nsd.id)), data, None,
                                                params_checks.check_ns_params, nsd, valid["vnfd"], cloud_init_dir))
        else:
            for nst in [valid["nst"][i] for i in variant["descriptor_ids"] if i in valid["nst"]]:
                problems.extend(_as_osm_gets_it((file, descriptors.members_of(bundle, nst.id)), data, nst,
                                                params_checks.check_nsi_params, [nst], valid["nsd"], valid["vnfd"],
                                                cloud_init_dir))
            problems.extend(_same_plan(data, file, bundle, rendered, valid))
    return params_checks._dedupe(problems)


def _as_osm_gets_it(file_members, data, nst, check, *args):
    """``check(config, file, *args)`` over the config as OSM gets it: with the slice's 5QI of
    ``nst`` (None: an NS, 0) for every member (bundle.params.with_slice_5qi)."""
    file, members = file_members
    try:
        config = params.with_slice_5qi(data, nst.body if nst is not None else None, where=file, members=members)
    except params.ParamsError as e:
        return [Problem(file, "(top level)", str(e))]
    return check(config, file, *args)


def _same_plan(nsi_data, file, bundle, rendered, valid):
    """An NSI subnet's plan must equal the plan of the NS variant with the same NSD (no drift)."""
    out = []
    for i, sub in enumerate(nsi_data.get("netslice-subnet", [])):
        nst = next(
            (t for t in valid["nst"].values() for s in t.body["netslice-subnet"] if s["id"] == sub["id"]),
            None,
        )
        if nst is None:
            continue
        nsd_id = next(s["nsd-ref"] for s in nst.body["netslice-subnet"] if s["id"] == sub["id"])
        twin = next(
            (v for v in bundle.variants.values() if v["kind"] == "ns" and v["descriptor_ids"] == [nsd_id]),
            None,
        )
        ns_data = rendered.get(twin["params"]) if twin else None
        if not ns_data:
            continue
        ns_vld = [v for v in ns_data.get("vld", []) if "vnfd-connection-point-ref" in v]
        if sub.get("vld", []) != ns_vld:
            out.append(
                Problem(
                    file,
                    ["netslice-subnet", i, "vld"],
                    "differs from the vld plan of {} (keep the two identical)".format(twin["params"]),
                )
            )
        if sub.get("additionalParamsForVnf") != ns_data.get("additionalParamsForVnf"):
            out.append(
                Problem(
                    file,
                    ["netslice-subnet", i, "additionalParamsForVnf"],
                    "additionalParamsForVnf of subnet {} differs from {}".format(sub["id"], twin["params"]),
                )
            )
    return out


def validate_bundle(bundle=None, cloud_init_dir=CLOUD_INIT_DIR, summary=None, loader=params.load):
    """loader(params path) -> template dict; tests pass one that returns mutated templates."""
    bundle = bundle or descriptors.load_bundle()
    problems, valid = validate_descriptors(bundle, cloud_init_dir, summary)
    problems += validate_cloud_init(bundle, cloud_init_dir, summary)
    problems += validate_params(bundle, valid, cloud_init_dir, summary, loader=loader)
    return problems
