"""The submodule checks of `make oai-conformance`: every submodule of a component's ref exists
upstream at the commit the charm pins (else the one the ref records), every pull of OAI's build
helpers names a branch that exists or is one the charm replaces, and OAI's patches apply to the
pinned commits. A submodule whose repository OAI_SRC lacks is a mismatch when the charm pins it,
and reported as not checked when it is OAI's own choice (the charm does not pin it)."""
import os
import re
import subprocess
import tempfile

from oai_conformance import checks
from oai_conformance.source import Tree
from vpnaas.vnf import vnfscript

#: Helpers that may pull submodules.
HELPER_FOLDERS = ("build/tools", "scripts", "cmake_targets/tools")


def submodule_tree(src_root, url):
    name = url.rstrip("/").rsplit("/", 1)[-1]
    name = name[:-4] if name.endswith(".git") else name
    path = os.path.join(src_root, "submodules", name)
    return Tree(path) if os.path.exists(path) else None


def check_submodules(report, comp, tree, src_root):
    modules = tree.read(".gitmodules")
    if not modules:
        return
    urls = dict(re.findall(r"path\s*=\s*(\S+)\s*\n\s*url\s*=\s*(\S+)", modules))
    links = tree.gitlinks()
    pins = {path: commit for path, commit, _ in comp.submodule_pins}
    for path in sorted(set(pins) - set(links)):
        report.line("MISMATCH", "submodule pin {}: not a submodule of the ref".format(path))
    subs = {}
    for path, recorded in sorted(links.items()):
        sub = submodule_tree(src_root, urls.get(path, ""))
        name = path.rsplit("/", 1)[-1]
        sha = pins.get(path, recorded)
        subs[name] = (sub, sha, path)
        what = "pinned by the charm at" if path in pins else "at the recorded commit"
        if sub is None:
            report.line("MISMATCH" if path in pins else "UNCHECKED", "submodule {} ({}): no repository in "
                        "OAI_SRC/submodules".format(path, urls.get(path)))
        elif sub.has_commit(sha):
            report.line("ok", "submodule {} {} {}: exists upstream".format(path, what, sha[:12]))
        else:
            report.line("MISMATCH", "submodule {}: the commit {} is not upstream".format(path, sha))
    pattern = checks.pull_pattern(vnfscript.load("oai/oai-lib.sh"))
    patches = set()
    for rel in tree.files(*HELPER_FOLDERS):
        text = tree.read(rel) or ""
        for _, line_no, which, branch, line in checks.submodule_pulls(rel, text):
            targets = list(subs) if which == "*" else [which]
            missing = [t for t in targets if t in subs and subs[t][0] is not None and not subs[t][0].has_branch(branch)]
            neutral = pattern is not None and pattern.search(line) is not None
            where = "{}:{} `{}`".format(rel, line_no, line)
            if missing and not neutral:
                report.line("MISMATCH", "{}: no branch {} in {}".format(where, branch, ", ".join(missing)))
            elif missing:
                report.line("ok", "{}: needs branch {} that {} lack(s); the charm replaces this pull with its "
                                  "pinned commits".format(where, branch, ", ".join(missing)))
            elif neutral:
                report.line("ok", "{}: replaced by the charm with its pinned commits".format(where))
            else:
                report.line("ok", "{}: branch {} exists in {}".format(where, branch, ", ".join(targets)))
        for name, patch in checks.patch_applications(rel, text):
            if (name, patch) not in patches:
                patches.add((name, patch))
                check_patch(report, tree, subs.get(name), name, patch, rel)


def check_patch(report, tree, sub, name, patch, helper):
    if sub is None or sub[0] is None:
        report.line("MISMATCH", "{}: patch {} for unknown submodule {}".format(helper, patch, name))
        return
    text = tree.read(patch)
    if text is None:
        report.line("MISMATCH", "{}: patch {} does not exist".format(helper, patch))
        return
    with tempfile.TemporaryDirectory() as tmp:
        sub[0].extract(sub[1], tmp)
        with open(os.path.join(tmp, ".oai.patch"), "w") as f:
            f.write(text)
        result = subprocess.run(["git", "apply", "--check", "-p1", ".oai.patch"], cwd=tmp,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if result.returncode == 0:
        report.line("ok", "{} applies to {} at {}".format(patch, name, sub[1][:12]))
    else:
        report.line("MISMATCH", "{} does not apply to {} at {}: {}".format(
            patch, name, sub[1][:12], result.stderr.decode().strip()[:200]))
