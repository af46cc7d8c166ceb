"""Offline, reproducible build of every charm (``make charms``).

No charmcraft and no LXD: a charm is a directory Juju can deploy (metadata.yaml, config.yaml,
actions.yaml, manifest.yaml, dispatch, src/, lib/ with the shared package, venv/ with the pinned
dependencies) and the same tree zipped as ``<name>.charm``. For the default base the wheels are
the cp36 manylinux builds that run on OSM's Ubuntu 18.04 proxy machine, fetched with pip's
platform options; ``--base local`` builds for this machine's Python (tests and the testbed).
The zip has fixed timestamps and modes and a fixed order (the trees every charm of a base shares
first, then the charm's own entries, each sorted), so the same sources give the same bytes.
"""
import argparse
import ast
import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile

import glibc_check
import yaml

from bundle import BUILD_DIR, CHARMS_DIR, charmspec
from vpnaas.core import registry
from vpnaas.vnf import dataplane

SHARED_PACKAGE = "vpnaas"
REQUIREMENTS = os.path.join(CHARMS_DIR, "requirements.txt")
BASES = {
    "ubuntu@18.04": {"channel": "18.04", "python": "3.6", "abi": "cp36m", "platform": "manylinux2014_x86_64"},
    "ubuntu@20.04": {"channel": "20.04", "python": "3.8", "abi": "cp38", "platform": "manylinux2014_x86_64"},
    "local": None,
}
# The one series each build runs on: the compiled wheels (cffi, bcrypt, pynacl) are built for that
# series' Python only, so declaring another series would deploy a charm whose imports fail there.
SERIES = {"ubuntu@18.04": "bionic", "ubuntu@20.04": "focal", "local": "jammy"}
# A relation hook that can change nothing ends in vpnaas.charm.hookgate, before ops is imported (its
# docstring says why): src/charm.py asks it first, in the same process (vpnaas.charm.entry.main), so a
# hook that runs the charm starts one interpreter, not two. Without site (-S), as the gate always
# ran: every module the charm imports is in lib/ and venv/, none in the machine's site-packages.
# Without site nothing makes sys.path absolute, so the paths are made absolute here (Juju 2.9 runs
# a hook in the charm's directory and names it in JUJU_CHARM_DIR: worker/uniter/runner/runner.go):
# an import made late in a hook (paramiko at the first session, ops.pebble's lazy load) must not
# depend on the working directory.
DISPATCH = """#!/bin/sh
JUJU_DISPATCH_PATH="${JUJU_DISPATCH_PATH:-$0}"
CHARM_DIR="${JUJU_CHARM_DIR:-$PWD}"
PYTHONPATH="$CHARM_DIR/lib:$CHARM_DIR/venv"
export JUJU_DISPATCH_PATH PYTHONPATH
exec python3 -S "$CHARM_DIR/src/charm.py"
"""
ZIP_DATE = (1980, 1, 1, 0, 0, 0)
#: Where `make wireguard-go` and `make boringtun` put the userspace WireGuard programs.
TOOLS_DIR = os.path.join(BUILD_DIR, "tools")
#: The newest glibc of the VNFs' Ubuntu 18.04: a shipped program must run there.
VNF_GLIBC = "2.27"
EXCLUDE = {"__pycache__", ".unit-state.db"}
#: The trees that are the same in every charm of one base (the pinned dependencies and the userspace
#: WireGuard programs, about 95% of a charm's bytes): deflated once per build, not once per charm.
SHARED_TREES = ("venv", dataplane.CHARM_FOLDER)


class BuildError(Exception):
    pass


def output_dir(base):
    return os.path.join(BUILD_DIR, "charms-local" if base == "local" else "charms")


def _pip(args):
    cmd = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"] + args
    result = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    if result.returncode != 0:
        raise BuildError("pip failed ({}):\n{}".format(" ".join(cmd[3:6]), result.stdout[-3000:]))


def _requirements_digest():
    with open(REQUIREMENTS, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:16]


def dependency_tree(base):
    """Install the pinned dependencies once per base into build/venvs/<base>/ and return it."""
    target = os.path.join(BUILD_DIR, "venvs", base.replace("@", "-") + "-" + _requirements_digest())
    if os.path.exists(os.path.join(target, ".complete")):
        return target
    shutil.rmtree(target, ignore_errors=True)
    spec = BASES[base]
    requirements = REQUIREMENTS if spec is not None else _without_hashes(target + ".requirements.txt")
    args = ["install", "--no-deps", "--no-compile", "--target", target, "-r", requirements]
    if spec is not None:
        # The shipped bases are hash-checked (pip enforces the --hash lines of the file).
        args += ["--only-binary", ":all:", "--implementation", "cp", "--platform", spec["platform"],
                 "--python-version", spec["python"], "--abi", spec["abi"]]
    print("  fetching pinned dependencies for {}".format(base), flush=True)
    _pip(args)
    # pip records where a wheel came from; that would put this machine's paths into the charm.
    for root, _dirs, files in os.walk(target):
        for name in files:
            if name == "direct_url.json":
                os.remove(os.path.join(root, name))
    shutil.rmtree(os.path.join(target, "bin"), ignore_errors=True)
    open(os.path.join(target, ".complete"), "w").close()
    return target


def _without_hashes(path):
    """The pins without their hashes, for the local build: this machine's Python may need wheels
    the file does not list (the local build only serves tests and the testbed, never OSM)."""
    with open(REQUIREMENTS) as f:
        lines = [line.split(" \\")[0] for line in f if not line.lstrip().startswith("--hash")]
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("".join(line if line.endswith("\n") else line + "\n" for line in lines))
    return path


def _copy_tree(src, dst):
    shutil.copytree(src, dst, ignore=lambda _d, names: [n for n in names if n in EXCLUDE or n.endswith(".pyc")])


def package_modules_of(root):
    """{dotted module name below the package: its path} of every module under ``root``."""
    out = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in EXCLUDE)
        rel = os.path.relpath(folder, root)
        prefix = "" if rel == "." else rel.replace(os.sep, ".") + "."
        for name in files:
            if name.endswith(".py") and name != "__init__.py":
                out[prefix + name[:-3]] = os.path.join(folder, name)
            elif name == "__init__.py" and prefix:
                out[prefix[:-1]] = os.path.join(folder, name)
    return out


def copy_shared_package(name, target):
    """The shared package as charm ``name`` needs it: the core, and of the component code (the
    modules and VNF-side folders the registry assigns to workloads and components) only its own
    workload's and its own; a generic charm carries no OAI code (a subpackage left with nothing
    but its ``__init__.py`` is not shipped)."""
    reg = registry.load()
    own_modules = set(reg.shipped_modules(name))
    foreign_modules = set(reg.all_component_modules()) - own_modules
    own_vnf = set(reg.workloads[reg.components[name].workload].vnf)
    foreign_vnf = {v for w in reg.workloads.values() for v in w.vnf} - own_vnf
    src = os.path.join(CHARMS_DIR, SHARED_PACKAGE)

    def ignore(directory, names):
        skip = [n for n in names if n in EXCLUDE or n.endswith(".pyc")]
        rel = os.path.relpath(directory, src)
        prefix = "" if rel == "." else rel.replace(os.sep, ".") + "."
        skip += [n for n in names if n.endswith(".py") and prefix + n[:-3] in foreign_modules]
        if os.path.abspath(directory) == os.path.abspath(os.path.join(src, "vnf")):
            skip += [n for n in names if n in foreign_vnf]
        return skip
    shutil.copytree(src, target, ignore=ignore)
    for folder, _dirs, _files in os.walk(target, topdown=False):  # the deepest first
        if folder != target and os.listdir(folder) == ["__init__.py"]:
            shutil.rmtree(folder)
    missing = missing_imports(src, target)
    if missing:
        raise BuildError("charm {}: {} (add the module to its entry in charms/vpnaas/core/registry.yaml, or move "
                         "what it needs into a module the charm ships)".format(name, "; ".join(missing)))


def _imported(node, package, modules):
    """The package modules an import statement names (dotted below the package)."""
    if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == package and not node.level:
        base = node.module[len(package) + 1:] if node.module != package else ""
        out = [base] if base else []
        return out + [(base + "." if base else "") + a.name for a in node.names
                      if (base + "." if base else "") + a.name in modules]
    if isinstance(node, ast.Import):
        return [a.name[len(package) + 1:] for a in node.names if a.name.startswith(package + ".")]
    return []


@functools.lru_cache(maxsize=None)
def _import_statements(source):
    """The import statements of a module's source. Every charm of a build ships the same core
    modules: each source is parsed once per build, not once per charm (its imports are the same)."""
    return tuple(node for node in ast.walk(ast.parse(source)) if isinstance(node, (ast.Import, ast.ImportFrom)))


def missing_imports(src, target):
    """The shipped modules' imports of package modules the charm does not carry: each would be an
    ImportError on the proxy machine at the first hook. Read from the syntax tree, so it holds
    whatever Python the build runs on."""
    package_modules = package_modules_of(src)
    shipped = package_modules_of(target)
    out = []
    for module, path in sorted(shipped.items()):
        with open(path) as f:
            statements = _import_statements(f.read())
        for node in statements:
            needed = _imported(node, SHARED_PACKAGE, package_modules)
            out += ["{} imports {}, which it does not ship".format(module, n) for n in needed if n not in shipped]
    return out


#: Every charm's src/charm.py: its class is composed from its registry entry, so no component
#: states its description, workload or UE anywhere but in registry.yaml.
ENTRY_POINT = """#!/usr/bin/env python3
\"\"\"The proxy charm of component {name}: written by scripts/bundle/build_charms.py; the charm
class is composed from the component's entry in vpnaas/core/registry.yaml (vpnaas/charm/entry.py).\"\"\"
from vpnaas.charm.entry import main

if __name__ == "__main__":
    main({name!r})
"""


def entry_point(name):
    return ENTRY_POINT.format(name=name)


def check_entry(name):
    """The component's entry names a description, UE and workload class its charm ships (read
    without importing ops), and its folder holds no code of its own: a charms/<name>/src would
    state a second time what the registry says."""
    reg = registry.load()
    comp = reg.components[name]
    if os.path.exists(os.path.join(CHARMS_DIR, name, "src")):
        raise BuildError("charms/{}/src: a charm's code is its registry entry (charms/vpnaas/core/registry.yaml); the "
                         "build writes src/charm.py".format(name))
    kind = reg.workloads[comp.workload]
    shipped = set(reg.shipped_modules(name)) | {"charm.workload"}
    for what, dotted in (("describe", comp.describe), ("ue", comp.ue), ("workload class", kind.cls)):
        module, _, attribute = dotted.rpartition(".")
        if not dotted:
            continue
        path = os.path.join(CHARMS_DIR, SHARED_PACKAGE, *module.split(".")) + ".py"
        if module not in shipped or not os.path.isfile(path):
            raise BuildError("charm {}: its {} {} is in no module it ships".format(name, what, dotted))
        with open(path) as f:
            tree = ast.parse(f.read())
        defined = {t.id for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign))
                   for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
                   if isinstance(t, ast.Name)}
        defined |= {node.name for node in tree.body if isinstance(node, (ast.ClassDef, ast.FunctionDef))}
        if attribute not in defined:
            raise BuildError("charm {}: its {} {}: {}.py defines no {}".format(name, what, dotted,
                                                                                module.replace(".", "/"), attribute))


def _dump(path, data):
    with open(path, "w") as f:
        yaml.safe_dump(data, f, sort_keys=True, default_flow_style=False)


def manifest(base):
    channel = BASES[base]["channel"] if BASES[base] else _local_channel()
    return {"charmcraft-version": "none (built by scripts/bundle/build_charms.py)",
            "bases": [{"name": "ubuntu", "channel": channel, "architectures": ["amd64"]}]}


def _local_channel():
    return "22.04"


def build_charm(name, base, deps, out_dir=None, shared=None):
    """Build charm ``name`` into ``out_dir`` (default: ``output_dir(base)``) as a directory and a
    ``.charm``. ``shared``: a dict the caller keeps across the charms of one build (``build_all``),
    in which the zip of ``SHARED_TREES`` is made once."""
    spec = charmspec.charm_spec(name)
    check_entry(name)
    out = os.path.join(out_dir or output_dir(base), name)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    metadata = dict(spec["metadata"])
    metadata["series"] = [SERIES[base]]
    _dump(os.path.join(out, "metadata.yaml"), metadata)
    _dump(os.path.join(out, "config.yaml"), spec["config"])
    _dump(os.path.join(out, "actions.yaml"), spec["actions"])
    _dump(os.path.join(out, "manifest.yaml"), manifest(base))
    with open(os.path.join(out, "dispatch"), "w") as f:
        f.write(DISPATCH)
    os.chmod(os.path.join(out, "dispatch"), 0o755)
    os.makedirs(os.path.join(out, "src"))
    with open(os.path.join(out, "src", "charm.py"), "w") as f:
        f.write(entry_point(name))
    os.chmod(os.path.join(out, "src", "charm.py"), 0o755)
    copy_shared_package(name, os.path.join(out, "lib", SHARED_PACKAGE))
    ship_programs(os.path.join(out, dataplane.CHARM_FOLDER), base)
    _copy_tree(deps, os.path.join(out, "venv"))
    os.remove(os.path.join(out, "venv", ".complete"))
    charm_file = out + ".charm"
    if shared is not None and "zip" not in shared:
        shared["zip"] = os.path.join(os.path.dirname(out), ".shared-trees.zip")
        write_zip(_entries(out, SHARED_TREES), shared["zip"])
    pack(out, charm_file, shared["zip"] if shared else None)
    return charm_file


def shipped_programs(tools_dir=TOOLS_DIR):
    """{implementation: (path, sha256, version)} of the userspace WireGuard programs built into
    ``tools_dir``. One that is not there is left out: the charm then ships without it and an
    endpoint set to it is Blocked ("not shipped"; vpnaas/vnf/dataplane.py), so a machine without Rust
    still builds working charms. For the VNFs' base every program must run on glibc 2.27: one
    that needs a newer symbol fails the build (a host build instead of `make boringtun`'s)."""
    out = {}
    for impl, filename in sorted(dataplane.PROGRAMS.items()):
        path = os.path.join(tools_dir, filename)
        if not os.access(path, os.X_OK):
            continue
        with open(path, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        try:
            first = subprocess.run([path, "--version"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                   universal_newlines=True, timeout=10).stdout.split("\n")[0].split()
        except (OSError, subprocess.SubprocessError):
            first = []
        out[impl] = (path, digest, first[1] if len(first) > 1 else "unknown")
    return out


def check_programs(programs, base):
    """Refuse a program the base's VNFs cannot load (glibc symbol versions)."""
    if base == "local":
        return
    for impl, (path, _digest, _version) in sorted(programs.items()):
        newest = glibc_check.newest(path)
        limit = tuple(int(x) for x in VNF_GLIBC.split("."))
        if newest is not None and newest > limit:
            raise BuildError("{} needs GLIBC_{}, above Ubuntu 18.04's {}: build it with make {} (cargo-zigbuild, "
                             "glibc 2.17) or remove it to ship without".format(
                                 os.path.relpath(path), ".".join(map(str, newest)), VNF_GLIBC,
                                 "boringtun" if impl == "boringtun" else "wireguard-go"))


def ship_programs(target, base, programs=None):
    """Copy the programs and write their manifest into the charm's dataplane/ folder."""
    programs = shipped_programs() if programs is None else programs
    check_programs(programs, base)
    os.makedirs(target)
    manifest_doc = {"programs": {}}
    for impl, (path, digest, version) in sorted(programs.items()):
        shutil.copyfile(path, os.path.join(target, dataplane.PROGRAMS[impl]))
        os.chmod(os.path.join(target, dataplane.PROGRAMS[impl]), 0o755)
        manifest_doc["programs"][impl] = {"sha256": digest, "version": version}
    with open(os.path.join(target, dataplane.MANIFEST), "w") as f:
        json.dump(manifest_doc, f, indent=1, sort_keys=True)
        f.write("\n")


def _entries(directory, trees=None):
    """[(name in the zip, path)] of ``directory``'s files, sorted: only those under ``trees``
    (top-level folder names) when given."""
    entries = []
    for root, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if d not in EXCLUDE)
        for name in files:
            if name in EXCLUDE or name.endswith(".pyc"):
                continue
            path = os.path.join(root, name)
            arcname = os.path.relpath(path, directory)
            if trees is None or arcname.split(os.sep)[0] in trees:
                entries.append((arcname.replace(os.sep, "/"), path))
    return sorted(entries)


def write_zip(entries, zip_file, mode="w"):
    """Write (or with ``mode="a"`` append) the entries, deflated, with fixed dates and modes."""
    with zipfile.ZipFile(zip_file, mode, zipfile.ZIP_DEFLATED) as zf:
        for arcname, path in entries:
            info = zipfile.ZipInfo(arcname, ZIP_DATE)
            mode_bits = 0o755 if os.access(path, os.X_OK) else 0o644
            info.external_attr = (0o100000 | mode_bits) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            with open(path, "rb") as f:
                zf.writestr(info, f.read())


def pack(directory, charm_file, shared_zip=None):
    """Zip ``directory`` deterministically (what charmcraft pack would upload). ``shared_zip``: the
    zip of its ``SHARED_TREES`` already written (for another charm of the same build, whose trees
    are the same files); the charm's zip starts as a copy of it and gets the charm's own entries
    appended. Without it the trees are zipped here: the bytes are the same either way."""
    tmp = charm_file + ".tmp"
    if shared_zip is None:
        write_zip(_entries(directory, SHARED_TREES), tmp)
    else:
        shutil.copyfile(shared_zip, tmp)
    own = [(n, p) for n, p in _entries(directory) if n.split("/")[0] not in SHARED_TREES]
    write_zip(own, tmp, mode="a")
    os.replace(tmp, charm_file)


def build_all(base="ubuntu@18.04", names=None, out_dir=None):
    """Build ``names`` (default: every charm) for ``base`` into ``out_dir`` (default:
    ``output_dir(base)``); returns {name: path of the .charm}."""
    if base not in BASES:
        raise BuildError("unknown base {!r}; choose one of {}".format(base, ", ".join(BASES)))
    names = names or charmspec.charm_names()
    deps = dependency_tree(base)
    programs = shipped_programs()
    check_programs(programs, base)
    missing = sorted(set(dataplane.PROGRAMS) - set(programs))
    listed = ", ".join("{} {}".format(k, v[2]) for k, v in sorted(programs.items())) or "no program"
    absent = "; NOT shipped: {} (make {}; an endpoint set to it is Blocked)".format(
        ", ".join(missing), " ".join(missing)) if missing else ""
    print("  shipping {}{}".format(listed, absent), flush=True)
    built, shared = {}, {}
    try:
        for i, name in enumerate(names, 1):
            print("  [{}/{}] {} ({})".format(i, len(names), name, base), flush=True)
            built[name] = build_charm(name, base, deps, out_dir, shared)
    finally:
        if "zip" in shared and os.path.exists(shared["zip"]):
            os.remove(shared["zip"])
    return built


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="ubuntu@18.04", choices=sorted(BASES))
    parser.add_argument("names", nargs="*", help="charms to build (default: all)")
    args = parser.parse_args(argv)
    try:
        built = build_all(args.base, args.names or None)
    except (BuildError, charmspec.SpecError) as e:
        print("error: {}".format(e), file=sys.stderr)
        return 1
    for name, path in sorted(built.items()):
        with open(path, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()[:16]
        print("{:16} {}  sha256:{}".format(name, os.path.relpath(path), digest))
    return 0


if __name__ == "__main__":
    sys.exit(main())
