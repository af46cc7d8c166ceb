"""Check the OAI charms against OAI's sources at the refs they pin.

    python -m oai_conformance --src OAI_SRC      (make oai-conformance OAI_SRC=<dir>)

OAI_SRC holds one git repository (checkout or bare mirror) per component -- hss, mme, spgwc,
spgwu, enb -- and submodules/<name> for the repositories the HSS's submodules come from (name =
the last part of the URL in .gitmodules, without .git); ``layout.py`` makes it from mirrors.
Without --src it clones the pinned repositories (this needs the internet); where neither works it
prints ``not run: no OAI sources`` and exits 2, so that it is never counted as passed.

For each component, at the commit its pinned ref names:
  * every file the charm renders, rendered with the charm's own spec and renderer (render.py) and a
    complete params file (params.yaml); placeholders left unfilled and values for placeholders
    that do not exist; edits that do not match exactly as often as declared;
  * the libconfig outputs parsed with libconfig's C library, the JSON outputs with json;
  * relative paths in the outputs against the folders the charm creates where the program starts;
  * every build-script flag and value of vnf/oai/install.sh against that script's case labels;
  * every program option the charms use against the program's getopt strings and option tables,
    and the provisioning scripts' options against their argparse definitions;
  * every submodule: the commit the charm pins (else the one the ref records) exists upstream and
    every pin names a submodule; every `git pull origin <branch>` of the build helpers: the branch
    exists, or the charm replaces the pull; OAI's patches apply to the pinned submodule commits.
Then, as root, it executes every component's shipped VNF programs as the charm sends them, twice,
in a fresh sandbox VNF (execute.py, sandbox.py; ``--only <component>`` to run fewer).
Exit status: 0 no mismatch and no executed failure, 1 a mismatch or a failure, 2 not run (no
sources, no libconfig, or the executed part without root): never counted as passed.
"""
import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
import time

import yaml

from oai_conformance import cases, checks, cn5g, libconfig, mysqlinit, nfreader
from oai_conformance.source import SourceError, Tree
from oai_conformance.submodules import check_submodules, submodule_tree  # noqa: F401  (the checks' API)
from vpnaas.charm import entry as charm_entry
from vpnaas.core import registry
from vpnaas.oai.lte import ue
from vpnaas.vnf import vnfscript

HERE = os.path.dirname(os.path.abspath(__file__))
#: (name, oai.Component) of every component with an OAI workload, from the registry.
COMPONENTS = [(c.name, charm_entry.description(c)) for c in registry.load().of_workload("oai")]
LIBCONFIG_OUTPUTS = ("mme.conf", "spgw_c.conf", "spgw_u.conf", "enb.conf", "hss_rel14.conf", "ue.conf", "gnb.conf",
                     "nrue.conf")
#: Exit status when everything that could be checked passed but something could not be checked.
PARTIAL = 3


class Report(object):
    """MISMATCH: the charm disagrees with OAI's source; UNCHECKED: no source here to check against
    (never counted as passed)."""

    def __init__(self):
        self.mismatches = 0
        self.unchecked = []

    def line(self, kind, text):
        if kind == "MISMATCH":
            self.mismatches += 1
        if kind == "UNCHECKED":
            self.unchecked.append(text)
        print("  {:9} {}".format(kind, text))


def load_renderer():
    path = os.path.join(vnfscript.VNF_DIR, "oai", "render.py")
    spec = importlib.util.spec_from_file_location("oai_vnf_render", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def component_config(name):
    from bundle.charmspec import charm_spec

    with open(os.path.join(HERE, "params.yaml")) as f:
        params = yaml.safe_load(f)
    options = charm_spec(name)["config"]["options"]
    config = {k: v.get("default") for k, v in options.items()}
    config.update(params["common"])
    config.update(params[name])
    return cases.with_registry_addresses(name, config)


def own_addresses(config):
    """The component's own service addresses (its ``*-service-addresses`` options), all on the dummy
    device as the reconcile puts them (so "read" is ambiguous and every explicit-address edit is
    required: the strictest case), each with its reference point's label where it has one."""
    from oai_conformance.execute import service_addresses

    out = []
    for arg in service_addresses(config, labels=True):
        address, _, label = arg.partition("=")
        out.append(("vpnaas0:" + label if label else "vpnaas0", address.split("/")[0]))
    return out + [("lo", "127.0.0.1")]


def check_render(report, name, comp, tree, renderer):
    values = comp.config_values(component_config(name), None)
    spec = comp.render_spec(values)
    addrs = own_addresses(component_config(name))
    for entry in spec["files"]:
        dst = entry["dst"]
        if "content" in entry:
            template = entry["content"]
        elif entry["src"].startswith(comp.source_dir + "/"):
            rel = entry["src"][len(comp.source_dir) + 1:]
            template = tree.read(rel)
            if template is None:
                report.line("MISMATCH", "{}: template {} does not exist".format(dst, rel))
                continue
        else:
            report.line("note", "{}: {} is not OAI's (installed by its package); not checked".format(
                dst, entry["src"]))
            continue
        for what, n, count in checks.edit_counts(template, entry.get("edits", [])):
            report.line("MISMATCH", "{}: edit '{}' matches {} time(s), declared {}".format(dst, what, n, count))
        edited = template
        for edit in entry.get("edits", []):
            edited = re.sub(edit["pattern"], edit["repl"], edited, count=edit.get("count", 0),
                            flags=renderer.edit_flags(edit))
        unfilled, absent = checks.placeholder_report(edited, entry.get("tokens", {}))
        for token in unfilled:
            report.line("MISMATCH", "{}: placeholder {} left unfilled".format(dst, token))
        for token in absent:
            report.line("MISMATCH", "{}: value for placeholder {} that the template does not have".format(
                dst, token))
        try:
            text = renderer.render_text(entry, template, addrs, {"SGI": "ens3", "N6": "ens3"})
        except renderer.RenderError as e:
            report.line("MISMATCH", "render: {}".format(e))
            continue
        check_output(report, comp, dst, text)


def check_output(report, comp, dst, text):
    base = os.path.basename(dst)
    if base in LIBCONFIG_OUTPUTS and "/freeDiameter/" not in dst:
        error = libconfig.parse(text)
        if error:
            report.line("MISMATCH", "{}: libconfig cannot parse it: {}".format(dst, error))
        else:
            report.line("ok", "{}: rendered, parsed by libconfig".format(dst))
    elif dst.endswith(".json"):
        try:
            json.loads(text)
            report.line("ok", "{}: rendered, valid JSON".format(dst))
        except ValueError as e:
            report.line("MISMATCH", "{}: not valid JSON: {}".format(dst, e))
    elif dst.endswith(".yaml"):
        try:
            yaml.safe_load(text)
            report.line("ok", "{}: rendered, valid YAML".format(dst))
        except yaml.YAMLError as e:
            report.line("MISMATCH", "{}: not valid YAML: {}".format(dst, e))
    else:
        report.line("ok", "{}: rendered (freeDiameter/plain format, not parsed)".format(dst))
    for path in checks.relative_paths(text):
        first = path.split("/")[0]
        if comp.workdir and first in comp.work_dirs:
            report.line("ok", "{}: relative path {} -> {}/{} (created by oai-configure, the program starts "
                              "there)".format(dst, path, comp.workdir, first))
        else:
            report.line("MISMATCH", "{}: relative path {} but {} does not start in a folder with {}/".format(
                dst, path, comp.service, first))


def check_build_flags(report, name, comp, tree):
    if not comp.oai_build_script:
        report.line("note", "{}: its build steps run no OAI build script (nothing to check)".format(name))
        return
    install_sh = vnfscript.load("oai/install.sh")
    commands = checks.build_commands(install_sh, name)
    if not commands:
        report.line("MISMATCH", "install.sh has no build commands for {}".format(name))
    for path, words in commands:
        text = tree.read(path)
        if text is None:
            report.line("MISMATCH", "build script {} does not exist".format(path))
            continue
        bad = checks.flag_findings(text, words)
        for b in bad:
            report.line("MISMATCH", "{} {}: {}".format(path, " ".join(words), b))
        if not bad:
            report.line("ok", "{} {}: every option handled".format(path, " ".join(words)))


def sources_text(tree, folders):
    texts = []
    for rel in tree.files(*folders):
        if rel.endswith((".c", ".cpp", ".h", ".hpp")):
            texts.append(tree.read(rel) or "")
    return "\n".join(texts)


def check_program_options(report, name, comp, tree):
    values = comp.config_values(component_config(name), None)
    used = [w for w in comp.run_argv(values)[1:] if w.startswith("-")]
    if name == "hss":
        used += checks.options_in(vnfscript.load("oai/configure-hss.sh"), '"$binary"')
    text = sources_text(tree, dict(COMPONENTS)[name].option_sources)
    for option in sorted(set(used)):
        if "." in option and cn5g.config_override_known(text, option):
            report.line("ok", "{} {}: overrides a parameter the program defines".format(comp.program, option))
        elif checks.option_known(text, option):
            report.line("ok", "{} {}: defined by the program".format(comp.program, option))
        else:
            report.line("MISMATCH", "{} {}: not an option of the program at this ref".format(comp.program, option))
    if name == "hss":
        provision = comp.provision_spec(values)["args"]
        scripts = [("scripts/data_provisioning_users", [a for a in provision if a.startswith("--")]),
                   ("scripts/data_provisioning_mme",
                    checks.options_in(vnfscript.load("oai/configure-hss.sh"), 'data_provisioning_mme"'))]
        for path, options in scripts:
            script = tree.read(path) or ""
            for option in options:
                if checks.argparse_known(script, option):
                    report.line("ok", "{} {}: defined".format(path, option))
                else:
                    report.line("MISMATCH", "{} {}: not an option of the script".format(path, option))


def check_component(report, name, comp, src_root, renderer):
    """The static checks of one component whose tree OAI_SRC holds; returns the commit checked."""
    tree = Tree(os.path.join(src_root, name), comp.ref)
    print("{} {} @ {} -> {}{}".format(name, comp.repository, comp.ref, tree.commit,
                                      "" if tree.resolved_from != "HEAD" else " (HEAD of the checkout)"))
    check_render(report, name, comp, tree, renderer)
    check_build_flags(report, name, comp, tree)
    check_program_options(report, name, comp, tree)
    if comp.fetch_submodules:
        check_submodules(report, comp, tree, src_root)
    else:
        report.line("note", "{}: oai-install fetches none of its submodules (not built)".format(name))
    if name == "enb":
        check_ue(report, comp, tree, renderer)
    if name == "gnb":
        cn5g.check_nrue(report, comp, tree, renderer, component_config(name), check_output, sources_text)
    if name == "mysql":
        cn5g.check_mysql(report, comp, component_config(name), tree)
    if name in ("amf", "smf", "upf"):
        cn5g.check_binary(report, name, tree)
    return tree.commit


def check_cn5g_files(report, src_root, work, yaml_cpp=None):
    """The AMF's, SMF's and UPF's generated files: their keys (cn5g.py), then the NFs' own readers
    run over every case (nfreader.py)."""
    trees = {n: Tree(os.path.join(src_root, n), c.ref) for n, c in COMPONENTS
             if n in ("smf", "mysql") and os.path.exists(os.path.join(src_root, n))}
    for name, comp in COMPONENTS:
        if name in ("amf", "smf", "upf"):
            print("{} generated configuration".format(name))
            cn5g.check_nf_files(report, name, comp, component_config(name), trees.get("smf"), trees.get("mysql"))
    print("CN5G configuration readers (the NFs' own code, executed)")
    nfreader.check_readers(report, dict(COMPONENTS), src_root, work, load_renderer(), yaml_cpp)
    print("MySQL's init-file reader (MySQL's own code, executed)")
    mysqlinit.check(report, dict(COMPONENTS)["mysql"], trees.get("mysql"), src_root, work)


def check_ue(report, comp, tree, renderer):
    """The eNB charm's optional UE: its SIM from OAI's UE template, the UE's and conf2uedata's options."""
    config = component_config("enb")
    values = ue.values(config)
    checks.check_sim_templates(report, comp, tree, renderer, ue.sim_spec(values)["files"], check_output, "UE")
    ue_sh = vnfscript.load("oai/ue.sh")
    text = sources_text(tree, dict(COMPONENTS)["enb"].option_sources)
    for option in sorted(set(checks.options_in(ue_sh, "./lte-uesoftmodem"))):
        kind = "ok" if checks.option_known(text, option) else "MISMATCH"
        report.line(kind, "lte-uesoftmodem {}: {}".format(option, "defined by the program" if kind == "ok"
                                                          else "not an option of the program at this ref"))
    tool = sources_text(tree, ["openair3/NAS/TOOLS"])
    for option in sorted(set(checks.options_in(ue_sh, 'conf2uedata"'))):
        kind = "ok" if checks.option_known(tool, option) else "MISMATCH"
        report.line(kind, "conf2uedata {}: {}".format(option, "defined" if kind == "ok" else "not an option"))


def clone_sources(dest):
    """Bare clones of the pinned repositories (and the HSS's submodules); None if impossible."""
    os.makedirs(os.path.join(dest, "submodules"), exist_ok=True)
    for name, comp in COMPONENTS:
        target = os.path.join(dest, name)
        if not os.path.exists(target):
            result = subprocess.run(["git", "clone", "-q", "--mirror", comp.repository, target],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=1800)
            if result.returncode != 0:
                return "cannot clone {}: {}".format(comp.repository, result.stderr.decode().strip()[-200:])
    modules = Tree(os.path.join(dest, "hss"), dict(COMPONENTS)["hss"].ref).read(".gitmodules") or ""
    for url in re.findall(r"url\s*=\s*(\S+)", modules):
        target = os.path.join(dest, "submodules", url.rstrip("/").rsplit("/", 1)[-1].replace(".git", ""))
        if not os.path.exists(target):
            result = subprocess.run(["git", "clone", "-q", "--mirror", url, target],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=1800)
            if result.returncode != 0:
                return "cannot clone {}: {}".format(url, result.stderr.decode().strip()[-200:])
    return None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--src", default="", help="OAI_SRC: one repository per component (see layout.py)")
    parser.add_argument("--clone-to", default="build/oai-src", help="where to clone when --src is not given")
    parser.add_argument("--only", action="append", default=[], help="execute only this component (repeatable)")
    parser.add_argument("--work", default="build/oai-conformance", help="where the CN5G readers are built")
    parser.add_argument("--yaml-cpp", default=None, help="install prefix of the yaml-cpp the CN5G readers link "
                                                         "(default: the system's libyaml-cpp-dev)")
    args = parser.parse_args(argv)
    src = args.src
    if not src:
        print("OAI_SRC not given: cloning the pinned repositories into {} (needs the internet)".format(args.clone_to))
        why = clone_sources(args.clone_to)
        if why:
            print("not run: no OAI sources ({})".format(why))
            return 2
        src = args.clone_to
    present = [(n, c) for n, c in COMPONENTS if os.path.exists(os.path.join(src, n))]
    if not present:
        print("not run: no OAI sources ({} has none of {})".format(src, ", ".join(n for n, _ in COMPONENTS)))
        return 2
    try:
        libconfig.parse("a = 1;")
    except libconfig.Unavailable as e:
        print("not run: {}".format(e))
        return 2
    renderer = load_renderer()
    report = Report()
    commits = {}
    try:
        for name, comp in present:
            commits[name] = check_component(report, name, comp, src, renderer)
        check_cn5g_files(report, src, os.path.abspath(args.work), args.yaml_cpp)
    except SourceError as e:
        print("not run: {}".format(e))
        return 2
    absent = [(n, c) for n, c in COMPONENTS if (n, c) not in present]
    for name, comp in absent:
        report.line("UNCHECKED", "{}: NOT CHECKED: no source tree in OAI_SRC ({} @ {}): its templates, build "
                                 "flags, options, submodules and steps".format(name, comp.repository, comp.ref))
    print("")
    print("commits: " + ", ".join("{} {}".format(n, c[:12]) for n, c in commits.items()))
    executed = run_executed(src, [n for n, _ in present if not args.only or n in args.only])
    print("")
    print("oai-conformance: {} static mismatch(es); not checked: {}; executed: {}".format(
        report.mismatches, ", ".join(n for n, _ in absent) or "none", executed[1]))
    if report.unchecked:
        print("NOT CHECKED ({}): {}".format(len(report.unchecked), " | ".join(report.unchecked)))
    if report.mismatches or executed[0] == 1:
        return 1
    if executed[0] == 2:
        return 2
    return PARTIAL if report.unchecked else 0


def run_executed(src, only):
    """(status, summary) of the executed chains (execute.py) of the components named in ``only``:
    0 passed, 1 failed, 2 not run."""
    if os.geteuid() != 0:
        return 2, "not run (needs root for the sandbox VNF's namespaces)"
    from oai_conformance import execute

    started = time.monotonic()
    chosen = [(n, c) for n, c in COMPONENTS if n in only]
    if not chosen:
        return 0, "none chosen"
    configs = {n: component_config(n) for n, _ in chosen}
    secrets = [v for cfg in configs.values() for k, v in cfg.items()
               if k.endswith(("lte-k", "lte-op", "-k", "-op", "db-password")) and v]
    outcomes = execute.execute(chosen, configs, src, secrets)
    checks = sum(o.checks for o in outcomes)
    failed = sum(o.failures for o in outcomes)
    summary = "{} component(s), {} checks, {} failed, {:.0f} s".format(len(outcomes), checks, failed,
                                                                       time.monotonic() - started)
    return (1 if failed else 0), summary


if __name__ == "__main__":
    sys.exit(main())
