"""The command corpus of `make osm-conformance`: every command line `python -m deploy` prints or
runs, for every variant of the package catalog and every subcommand, each tagged with where it
came from.

    python -m bundle.osm_conformance.corpus [--packages build/packages] [--out corpus.json]

Two kinds of run, both in-process and in a throw-away project root (its `params/` and
`build/packages/` are the project's; what deploy writes stays there):

* dry runs (DRY_RUN=1): the commands as printed (`+ ` and `+ [read] ` lines), for `deploy`,
  `undeploy`, `measure`, `onboard`, `prepare`, `scale` and `upgrade` of each variant, and
  `onboard`/`prepare` of the whole catalog;
* live runs against the stand-in clouds (deploy.standin): `deploy` twice (the second takes the
  branches for what exists: `vim-update`, `nfpkg-update`, ...), `measure`, `scale --scale-out`,
  `--peer-only` and `--scale-in` where the NS scales, `upgrade` and `undeploy`: the commands as
  executed, argument by argument.

The corpus is the input of the parsers (bundle.osm_conformance.cli_parse): nothing here judges a
command. It needs no upstream code, so the tests run it too (tests/packages/test_cli_corpus.py).
"""
import argparse
import json
import os
import shlex
import sys
import tempfile

from bundle import BUILD_DIR

#: The client a command line is for, by the base name of its program.
PROGRAMS = {"osm": "osm", "openstack": "openstack", "microstack.openstack": "openstack", "juju": "juju"}


def subcommands(variant, scales):
    """[(argv, live?)] of one variant, in the order a live run needs them; ``scales``: its NS has
    a VDU-level member (`deploy scale` works on it)."""
    out = [(["deploy", "--ns", variant.name], live) for live in (False, True)]
    out.append((["deploy", "--ns", variant.name], True))
    out += [([cmd, "--ns", variant.name], False) for cmd in ("onboard", "prepare", "measure", "upgrade")]
    out.append((["measure", "--ns", variant.name], True))
    if scales:
        out.append((["scale", "--ns", variant.name, "--scale-out"], True))
        out.append((["upgrade", "--ns", variant.name], True))      # with a scaled instance: two EEs
        for way in ("--scale-out", "--peer-only", "--scale-in"):
            out += [(["scale", "--ns", variant.name, way], live) for live in (False, True)]
        out.append((["scale", "--ns", variant.name, "--scale-in"], True))
    else:
        out.append((["upgrade", "--ns", variant.name], True))
    out += [(["undeploy", "--ns", variant.name], live) for live in (False, True)]
    return out


def strip_env(argv):
    """Drop a leading `env -u X A=B` (site 2's commands as printed)."""
    if not argv or argv[0] != "env":
        return argv
    i = 1
    while i < len(argv) and (argv[i] == "-u" or "=" in argv[i]):
        i += 2 if argv[i] == "-u" else 1
    return argv[i:]


def printed_commands(text):
    """The argv of every command a run printed (`+ ` and `+ [read] ` lines)."""
    out = []
    for line in text.splitlines():
        if line.startswith("+ [read] "):
            out.append(strip_env(shlex.split(line[len("+ [read] "):])))
        elif line.startswith("+ ") and not line.startswith("+ download "):
            out.append(strip_env(shlex.split(line[2:])))
    return out


def collect(packages_dir, variants=None):
    """{"commands": [{"program", "argv", "where": [...]}], "runs": [{"variant", "argv", "mode",
    "exit", "error", "count"}], "root": the throw-away project root the runs used (gone
    afterwards; juju_cli puts charms where its paths pointed)}: every distinct command line once,
    with every run that made it.
    ``variants``: only these (default: every variant of the catalog, and the whole catalog's
    onboard and prepare)."""
    from deploy.catalog import Catalog, vdu_members
    from deploy.standin import Clock, StandInClouds, project_root, run_env, run_tool

    index, commands, runs = {}, [], []

    def add(argvs, where):
        for argv in argvs:
            key = json.dumps(argv)
            if key not in index:
                index[key] = len(commands)
                commands.append({"program": PROGRAMS.get(os.path.basename(argv[0]), argv[0]),
                                 "argv": list(argv[1:]), "where": []})
            if where not in commands[index[key]]["where"]:
                commands[index[key]]["where"].append(where)

    with tempfile.TemporaryDirectory(prefix="osm-conformance-corpus-") as tmp:
        bindir = project_root(tmp, packages_dir)
        env = run_env(tmp, bindir)
        catalog = Catalog.load(tmp)
        plan = [] if variants else [("(all)", ["onboard"], False), ("(all)", ["prepare"], False),
                                    ("(all)", ["onboard"], True), ("(all)", ["prepare"], True)]
        for name in sorted(variants or catalog.variants):
            variant = catalog.variant(name)
            scales = variant.kind == "ns" and bool(vdu_members(catalog.nsd(variant.descriptor_ids[0])))
            plan += [(name, argv, live) for argv, live in subcommands(variant, scales)]
        stand_in = {}
        for variant, argv, live in plan:
            where = "{} {} ({})".format(variant, " ".join(argv[:1] + argv[3:]), "live" if live else "dry run")
            if live:
                clouds = stand_in.setdefault(variant, StandInClouds(tmp))
                before = len(clouds.calls)
                code, _out, err = run_tool(tmp, argv, env, execute=clouds, clock=Clock())
                made = clouds.calls[before:]
            else:
                code, out, err = run_tool(tmp, argv, dict(env, DRY_RUN="1"))
                made = printed_commands(out)
            add(made, where)
            runs.append({"variant": variant, "argv": argv, "mode": "live" if live else "dry run", "exit": code,
                         "error": err.strip()[-500:], "count": len(made)})
        if not variants:
            for where, argvs in slice_commands(catalog).items():
                add(argvs, where)
    return {"commands": commands, "runs": runs, "root": tmp}


#: The doc whose `osm nsi-create` lines are part of the corpus.
SLICES_DOC = "docs/slices.md"


def doc_commands(path):
    """The argv of every `osm ...` line (with its continuation lines) in the doc's code blocks."""
    out, block, pending = [], False, ""
    with open(path) as f:
        for line in f:
            if line.startswith("```"):
                block, pending = not block, ""
                continue
            text = line.split(" #")[0].rstrip() if block else ""
            if pending or text.startswith("osm "):
                pending += " " + text.rstrip("\\")
                if not text.endswith("\\"):
                    out.append(shlex.split(pending))
                    pending = ""
    return out


def slice_commands(catalog):
    """{where: [argv]}: the nsi-create lines of docs/slices.md, and for every NST of the catalog
    `osm nsi-create --config '<the whole config, with its 5QI>'`, once with the NST's 5QI and once
    with the largest the grammar accepts (the NST's -q90 twin of the NBI part)."""
    from bundle import ROOT, params

    out = {SLICES_DOC: doc_commands(os.path.join(ROOT, SLICES_DOC))}
    inline = out.setdefault("nsi-create-config (every NST: its 5QI, and 90)", [])
    top = max(params.STANDARDIZED_5QI)
    for name in sorted(catalog.variants):
        variant = catalog.variant(name)
        if variant.kind != "nsi":
            continue
        for index, nst_id in enumerate(variant.descriptor_ids):
            nst = catalog.nst_doc(nst_id)
            template = params.load(variant.params_for(index))
            config = params.substitute(template, params.dummy_env(template))
            for body, nst_name in ((nst, nst_id), (dict(nst, **{"quality-of-service": {"id": top}}),
                                                   "{}-q{}".format(nst_id, top))):
                text = json.dumps(params.with_slice_5qi(config, body), sort_keys=False)
                argv = ["osm", "nsi-create", "--nsi_name", nst_name, "--nst_name", nst_name,
                        "--vim_account", "site1", "--config", text]
                if argv not in inline:
                    inline.append(argv)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m bundle.osm_conformance.corpus")
    ap.add_argument("--packages", default=os.path.join(BUILD_DIR, "packages"))
    ap.add_argument("--out", default="-")
    args = ap.parse_args(argv)
    corpus = collect(args.packages)
    text = json.dumps(corpus, indent=1)
    if args.out == "-":
        print(text)
    else:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    failed = [r for r in corpus["runs"] if r["exit"] != 0]
    for r in failed:
        print("corpus: {} {} ({}) exited {}: {}".format(r["variant"], " ".join(r["argv"]), r["mode"], r["exit"],
                                                      r["error"]), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
