"""`make osm-conformance OSM_SRC=<dir>`: the built packages, params files and the deploy tool's
command lines against OSM's, osmclient's and openstackclient's own code.

    python -m bundle.osm_conformance --osm-src DIR [--packages build/packages] [--part nbi|cli]

OSM_SRC layout (prepare it with scripts/bundle/osm_conformance/prepare-osm-src.sh):

    OSM_SRC/NBI         osm/NBI          (osm_nbi/: descriptor_topics, instance_topics, validation)
    OSM_SRC/IM          osm/IM, newest   (models/ and the Makefile's patches)
    OSM_SRC/IM-osm10    osm/IM as of OSM 10 (before the provider/requirer relation rework)
    OSM_SRC/SOL006      ETSI NFV-SOL006 at the branch the IM's Makefile clones (v2.6.1)
    OSM_SRC/osm-common  osm/common       (DbMemory, FsLocal)
    OSM_SRC/osmclient   osm/osmclient v8 (how --config becomes the instantiate body; its `osm` CLI)
    OSM_SRC/osmclient-newest  the newest osm/osmclient at hand (its `osm` CLI)
    OSM_SRC/openstack-requirements  openstack/requirements at ussuri-eol (upper-constraints.txt)
    OSM_SRC/LCM         osm/LCM (osm_lcm/), optional: the metrics path (metrics_path.py); without
                        it that part is reported NOT RUN and the exit status is 2. With it, LCM's
                        day-1 mapping also runs over NBI's VNF records (lcm_day1.py: slice-5qi)
    OSM_SRC/LCM-2020    optional, osm/LCM of 2020 (before OSM 10): the same mapping, its own functions
    OSM_SRC/COMMITS     optional, written by prepare-osm-src.sh; printed in the report

For each IM (newest, osm10) a virtualenv with the pyang/pyangbind the IM needs is made under
build/osm-conformance/, the IM's bindings are built there (bundle.osm_conformance.bindings) and
runner.py loads every package and every params file through NBI. Expected on OSM 10: every VNF
package and every `-osm10` NSD/NST and its params load; the others are reported for information.

Part `cli`: every command line `python -m deploy` prints or runs (bundle.osm_conformance.corpus)
is parsed by both osmclient trees' click command trees and by python-openstackclient, newest and
MicroStack Ussuri's (bundle.osm_conformance.cli_parse, in the clients' own virtualenvs:
bundle.osm_conformance.clients). Expected: 0 rejected.

Part `juju` (with --juju-src, repeatable; `make ... JUJU_SRC="<dir> ..."`): every `juju` command
line of the same corpus through Juju's own command parsing at each tree's version
(bundle.osm_conformance.juju_cli, our juju_parse.go built against the tree). With part cli it is
reported with the other clients; alone (`--part juju`, `make juju-conformance`) it needs no
OSM_SRC. Without a Juju tree the report says the juju lines were not parsed.

Without OSM_SRC (and not `--part juju` alone) it prints `not run: no OSM sources` and exits 2.
Exit 1 if any expected load
fails or any command line is rejected.
"""

import argparse
import json
import os
import subprocess
import sys

import yaml

from bundle import BUILD_DIR, ROOT, params
from bundle.osm_conformance import bindings, cli_report, clients, corpus, juju_cli, metrics_path, report

LAYOUT = ["NBI", "IM", "IM-osm10", "SOL006", "osm-common", "osmclient", "osmclient-newest",
          "openstack-requirements"]
# name -> (IM folder in OSM_SRC, pins: pyang, pyangbind; from the IM's and NBI's requirements)
FLAVOURS = {
    "newest": ("IM", ["pyang==2.7.1", "pyangbind==0.8.6"]),
    "osm10": ("IM-osm10", ["pyang==2.4.0", "pyangbind==0.8.1"]),
}
# What NBI's and osm_common's imports need besides the IM (NBI's requirements.txt names them).
RUNTIME = ["deepdiff", "jsonschema", "pyyaml", "six", "cefevent", "pymongo", "pycryptodome"]
WORK_DIR = os.path.join(BUILD_DIR, "osm-conformance")
NOT_RUN = "not run: no OSM sources"


def missing_layout(osm_src):
    return [name for name in LAYOUT if not os.path.isdir(os.path.join(osm_src, name))]


def ensure_venv(name, pins, work_dir=WORK_DIR):
    venv = os.path.join(work_dir, "venv-" + name)
    stamp = os.path.join(venv, ".done-" + "-".join(pins))
    if os.path.isfile(stamp):
        return venv
    print("osm-conformance: creating {} ({})".format(os.path.relpath(venv, ROOT), ", ".join(pins)), flush=True)
    subprocess.run([sys.executable, "-m", "venv", "--clear", venv], check=True)
    pip = [os.path.join(venv, "bin", "python"), "-m", "pip", "install", "-q"]
    subprocess.run(pip + pins + RUNTIME, check=True)
    _patch_pyangbind(venv)
    with open(stamp, "w") as f:
        f.write("ok\n")
    return venv


def _patch_pyangbind(venv):
    """pyangbind 0.8.1 uses collections.MutableMapping, gone in Python 3.10; NBI's tox patches it
    (its pyangbind.patch). The same one-word change is made here, only where it is needed."""
    py = os.path.join(venv, "bin", "python")
    code = (
        "import os, pyangbind.lib.yangtypes as y, sys; p = y.__file__; s = open(p).read(); "
        "n = s.replace('collections.MutableMapping', 'collections.abc.MutableMapping')"
        ".replace('collections.MutableSequence', 'collections.abc.MutableSequence'); "
        "n = n if 'import collections.abc' in n else n.replace('import collections\\n', "
        "'import collections\\nimport collections.abc\\n', 1); "
        "open(p, 'w').write(n) if n != s else None"
    )
    subprocess.run([py, "-c", code], check=True)


def build_job(packages_dir, osm_src=None, work_dir=WORK_DIR):
    """The packages (in onboarding order), the rendered params files of catalog.json (each target
    with its slice's 5QI), every NST again with the largest standardized 5QI (nst_twins), and the
    LCM trees whose day-1 mapping runs over NBI's records (lcm_trees)."""
    with open(os.path.join(packages_dir, "catalog.json")) as f:
        catalog = json.load(f)
    pkgs = []
    for kind, key in (("vnf", "package"), ("ns", "package"), ("nst", "file")):
        for entry in catalog[kind]:
            path = os.path.join(packages_dir, entry[key])
            pkgs.append({"kind": kind, "name": entry[key], "id": entry["id"], "path": path})
    nsts = {entry["id"]: _nst_body(os.path.join(packages_dir, entry["file"])) for entry in catalog["nst"]}
    twins = nst_twins(nsts, os.path.join(work_dir, "nst-5qi"))
    pkgs += [{"kind": "nst", "name": os.path.basename(path), "id": tid, "path": path}
             for tid, (_src, _body, path) in twins.items()]
    by_file = {}
    for variant in catalog["variants"].values():
        new = {"file": variant["params"], "kind": variant["kind"], "targets": []}
        item = by_file.setdefault(variant["params"], new)
        for target in variant["descriptor_ids"]:
            for t in [target] + [tid for tid, twin in twins.items() if twin[0] == target]:
                if t not in item["targets"]:
                    item["targets"].append(t)
    nsts.update({tid: twin[1] for tid, twin in twins.items()})
    from bundle import descriptors  # needs charms/ on the path; the not-run answers above do not

    bundle = descriptors.load_bundle()  # what was packaged: whom each config must reach
    for item in by_file.values():
        template = params.load(item["file"])
        config = params.substitute(template, params.dummy_env(template), where=item["file"])
        # what OSM gets for each target: an NSI's config with that NST's 5QI, an NS's with 0
        item["configs"] = {t: params.with_slice_5qi(
            config, nsts[t] if item["kind"] == "nsi" else None, where=item["file"],
            members=descriptors.members_of(bundle, twins[t][0] if t in twins else t)) for t in item["targets"]}
        item["slice_5qi"] = {t: params.nst_5qi(nsts[t]) if item["kind"] == "nsi" else params.NOT_A_SLICE
                             for t in item["targets"]}
    return {"packages": pkgs, "params": list(by_file.values()), "lcm": lcm_trees(osm_src)}


#: LCM trees in OSM_SRC whose day-1 mapping runs (lcm_day1.py): folder -> label. LCM is the newest
#: at hand; LCM-2020 optional (the LCM before OSM 10, whose mapping has no data-type conversion).
LCM_TREES = (("LCM", "LCM (newest)"), ("LCM-2020", "LCM (2020)"))


def lcm_trees(osm_src):
    return [{"label": label, "dir": os.path.join(osm_src, folder)} for folder, label in LCM_TREES
            if osm_src and os.path.isdir(os.path.join(osm_src, folder, "osm_lcm"))]


def nst_twins(nsts, out_dir):
    """{twin id: (NST id, body, file)}: every NST again with the largest 5QI the grammar accepts
    (the id gets -q<5QI> before an -osm10 suffix, so the twin is for the same OSM)."""
    top = max(params.STANDARDIZED_5QI)
    os.makedirs(out_dir, exist_ok=True)
    out = {}
    for nst_id, body in nsts.items():
        stem, osm10 = (nst_id[:-len(report.OSM10_SUFFIX)], report.OSM10_SUFFIX) \
            if nst_id.endswith(report.OSM10_SUFFIX) else (nst_id, "")
        twin = dict(body, id="{}-q{}{}".format(stem, top, osm10), name="{}-q{}{}".format(stem, top, osm10))
        twin["quality-of-service"] = dict(body.get("quality-of-service") or {}, id=top)
        path = os.path.join(out_dir, "{}_nst.yaml".format(twin["id"]))
        with open(path, "w") as f:
            yaml.safe_dump({"nst": [twin]}, f, sort_keys=False)
        out[twin["id"]] = (nst_id, twin, path)
    return out


def _nst_body(path):
    with open(path) as f:
        return yaml.safe_load(f)["nst"][0]


def run_flavour(name, osm_src, job_path, work_dir=WORK_DIR):
    im_dir, pins = FLAVOURS[name]
    venv = ensure_venv(name, pins, work_dir)
    print("osm-conformance: building the {} IM bindings".format(name), flush=True)
    out = bindings.build(
        os.path.join(osm_src, im_dir), os.path.join(osm_src, "SOL006"), venv, os.path.join(work_dir, "im-" + name)
    )
    result = os.path.join(work_dir, "result-{}.json".format(name))
    runner = os.path.join(os.path.dirname(os.path.abspath(__file__)), "runner.py")
    print("osm-conformance: loading through NBI with the {} IM".format(name), flush=True)
    subprocess.run(
        [os.path.join(venv, "bin", "python"), runner, "--osm-src", osm_src, "--im-bindings", out]
        + ["--job", job_path, "--out", result],
        check=True,
    )
    with open(result) as f:
        return json.load(f)


def im_bindings(name, osm_src, venv, work_dir=WORK_DIR):
    """The IM bindings of flavour ``name`` (built once; any venv with its pyang pins builds them)."""
    im_dir, _pins = FLAVOURS[name]
    return bindings.build(os.path.join(osm_src, im_dir), os.path.join(osm_src, "SOL006"), venv,
                          os.path.join(work_dir, "im-" + name))


def run_cli(osm_src, packages, commits, work_dir=WORK_DIR, juju_srcs=()):
    """Part `cli`: (text, ok) of the command-line check; with ``osm_src`` None only the juju lines
    (through each of ``juju_srcs``) are parsed."""
    print("osm-conformance: collecting the command lines of `python -m deploy` (dry runs and stand-in runs)",
          flush=True)
    collected = corpus.collect(packages)
    corpus_path = os.path.join(work_dir, "corpus.json")
    with open(corpus_path, "w") as f:
        json.dump(collected, f)
    parser = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cli_parse.py")
    results = []
    for juju_src in juju_srcs:
        results += juju_cli.run(juju_src, collected, work_dir, packages)
    if osm_src is None:
        return cli_report.render(collected, results, commits)
    for folder, label, flavour, default_click in clients.OSMCLIENTS:
        tree = os.path.join(osm_src, folder)
        venv = clients.osmclient_venv(work_dir, label, tree, FLAVOURS[flavour][1], default_click)
        _patch_pyangbind(venv)
        im = im_bindings(flavour, osm_src, venv, work_dir)
        out = os.path.join(work_dir, "cli-osmclient-{}.json".format(label))
        args = ["osmclient", "--tree", tree, "--im", im, "--nbi", os.path.join(osm_src, "NBI")]
        results.append((label, "osm", _parse(venv, parser, args, corpus_path, out)))
    for label, version, pin, constraints in clients.OPENSTACKCLIENTS:
        venv = clients.openstackclient_venv(work_dir, osm_src, label, version, pin, constraints)
        out = os.path.join(work_dir, "cli-openstackclient-{}.json".format(label))
        results.append((label, "openstack", _parse(venv, parser, ["openstackclient"], corpus_path, out)))
    return cli_report.render(collected, results, commits)


def _parse(venv, parser, args, corpus_path, out):
    print("osm-conformance: parsing with {} ({})".format(" ".join(args[:1]), os.path.relpath(venv, ROOT)), flush=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OS_", "OSM_", "PYTHON"))}
    subprocess.run([os.path.join(venv, "bin", "python"), parser] + args + ["--corpus", corpus_path, "--out", out],
                   check=True, stdin=subprocess.DEVNULL, env=env)
    with open(out) as f:
        return json.load(f)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m bundle.osm_conformance")
    ap.add_argument("--osm-src", default=os.environ.get("OSM_SRC", ""))
    ap.add_argument("--packages", default=os.path.join(BUILD_DIR, "packages"))
    ap.add_argument("--flavour", choices=sorted(FLAVOURS), action="append")
    ap.add_argument("--juju-src", action="append", default=[],
                    help="a github.com/juju/juju source tree; its Juju parses the juju command lines (repeatable)")
    ap.add_argument("--part", choices=["nbi", "cli", "metrics", "juju"], action="append",
                    help="nbi: packages and params through NBI; cli: the deploy tool's command lines (with the "
                         "juju lines when --juju-src is given); metrics: the scrape job and VDU alarm through LCM's "
                         "own code (default these three); juju: only the juju lines, needs no OSM_SRC")
    args = ap.parse_args(argv)
    if args.part == ["juju"]:
        return run_juju_only(args.juju_src, args.packages)
    if not args.osm_src:
        print(NOT_RUN + " (give OSM_SRC=<dir>; see docs/bundle.md)")
        return 2
    osm_src = os.path.abspath(args.osm_src)
    missing = missing_layout(osm_src)
    if missing:
        print("{} ({} has no {})".format(NOT_RUN, osm_src, ", ".join(missing)))
        return 2
    os.makedirs(WORK_DIR, exist_ok=True)
    job = build_job(args.packages, osm_src)
    job_path = os.path.join(WORK_DIR, "job.json")
    with open(job_path, "w") as f:
        json.dump(job, f)
    commits = report.read_commits(os.path.join(osm_src, "COMMITS"))
    failed = False
    parts = args.part or ["nbi", "cli", "metrics"]
    for name in (args.flavour or ["newest", "osm10"]) if "nbi" in parts else []:
        results = run_flavour(name, osm_src, job_path)
        text, ok = report.render(name, results["results"], commits, results["notes"])
        print(text)
        failed = failed or not ok
    if "cli" in parts:
        text, ok = run_cli(osm_src, args.packages, commits, juju_srcs=args.juju_src)
        print(text)
        with open(os.path.join(WORK_DIR, "cli-report.txt"), "w") as f:
            f.write(text + "\n")
        failed = failed or not ok
    if "metrics" in parts:
        metrics = run_metrics_path(osm_src, args.packages)
        if metrics is None:
            print("== metrics path: NOT RUN (OSM_SRC has no LCM; prepare-osm-src.sh takes it as its last argument)")
            return 1 if failed else 2
        failed = failed or not metrics
    return 1 if failed else 0


def run_juju_only(juju_srcs, packages):
    """`--part juju`: exit 0 when every juju line is accepted by every tree, 1 when one is refused,
    2 when no tree was given (nothing parsed)."""
    if not juju_srcs:
        print("not run: no Juju source tree (give JUJU_SRC=<dir>; see docs/bundle.md)")
        return 2
    for juju_src in juju_srcs:
        juju_cli.check_tree(juju_src)
    os.makedirs(WORK_DIR, exist_ok=True)
    text, ok = run_cli(None, packages, [juju_cli.source_of(d) for d in juju_srcs], juju_srcs=juju_srcs)
    print(text)
    with open(os.path.join(WORK_DIR, "juju-report.txt"), "w") as f:
        f.write(text + "\n")
    return 0 if ok else 1


def run_metrics_path(osm_src, packages_dir, work_dir=WORK_DIR):
    """LCM's own code over the packages' scrape job and VDU alarm (metrics_path.py, in a venv with
    the Jinja2 LCM pins); None without OSM_SRC/LCM, else whether every check passed."""
    if not os.path.isdir(os.path.join(osm_src, "LCM", "osm_lcm")):
        return None
    venv = os.path.join(work_dir, "venv-lcm")
    if not os.path.isfile(os.path.join(venv, ".done")):
        subprocess.run([sys.executable, "-m", "venv", "--clear", venv], check=True)
        subprocess.run([os.path.join(venv, "bin", "python"), "-m", "pip", "install", "-q", "jinja2==3.1.6",
                        "pyyaml"], check=True)
        open(os.path.join(venv, ".done"), "w").close()
    out = os.path.join(work_dir, "result-metrics.json")
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "metrics_path.py")
    subprocess.run([os.path.join(venv, "bin", "python"), script, "--osm-src", osm_src, "--packages",
                    os.path.abspath(packages_dir), "--out", out], check=True)
    with open(out) as f:
        text, ok = metrics_path.render(json.load(f)["results"])
    print(text)
    return ok


if __name__ == "__main__":
    sys.exit(main())
