"""Lay out OAI_SRC for `make oai-conformance` from git repositories (mirrors or clones).

    python -m oai_conformance.layout OUT hss=PATH mme=PATH spgwc=PATH spgwu=PATH enb=PATH \
        sub:c-ares=PATH sub:spdlog=PATH ... reader:upf=PATH@COMMIT:FOLDER ...

Each component becomes OUT/<name>, a clone sharing the given repository's objects whose HEAD is the
commit the charm's ref names (no work tree is written); ``sub:<name>`` becomes
OUT/submodules/<name> (a link to the repository: only its commits and branches are read).
``reader:<nf>=PATH@COMMIT[:FOLDER]`` names the tree a CN5G NF's configuration reader is built from
when OUT/<nf> cannot serve (no tree at the pin, or an empty common-src submodule:
``reader:<nf>-common-src=...``); it becomes OUT/readers/<nf>.source (nfreader.py).
``mysql-server=DIR`` links a MySQL 8.0 tree (at least its sql/sql_bootstrap.h and .cc) for the
init-file check (mysqlinit.py).
"""
import os
import subprocess
import sys

from oai_conformance.source import Tree
from vpnaas.charm import entry
from vpnaas.core import registry

#: The OAI components and their pinned sources, from the registry.
PINNED = {c.name: entry.description(c) for c in registry.load().of_workload("oai")}


def layout(out, pairs):
    os.makedirs(os.path.join(out, "submodules"), exist_ok=True)
    for pair in pairs:
        key, _, path = pair.partition("=")
        path = os.path.abspath(path)
        if key.startswith("reader:"):
            where, _, folder = path.partition(":")
            repo, _, commit = where.rpartition("@")
            commit = Tree(repo, commit).commit
            os.makedirs(os.path.join(out, "readers"), exist_ok=True)
            with open(os.path.join(out, "readers", key[7:] + ".source"), "w") as f:
                f.write("{} {} {}\n".format(Tree(repo).path, commit, folder).strip() + "\n")
            print("{}: {} @ {} {}".format(key, repo, commit, folder))
            continue
        if key == "mysql-server":      # a MySQL 8.0 tree (or its sql/sql_bootstrap.{h,cc}): mysqlinit.py
            if not os.path.lexists(os.path.join(out, key)):
                os.symlink(path, os.path.join(out, key))
            continue
        if key.startswith("sub:"):
            link = os.path.join(out, "submodules", key[4:])
            if not os.path.lexists(link):
                os.symlink(Tree(path).path, link)
            continue
        comp = PINNED[key]
        tree = Tree(path, comp.ref)
        target = os.path.join(out, key)
        if not os.path.exists(target):
            subprocess.run(["git", "clone", "-q", "--shared", "--no-checkout", tree.path, target], check=True)
        # HEAD at the pinned commit, without writing a work tree: the check reads git objects only
        # (and mirrors may lack some large binary blobs that a checkout would need).
        subprocess.run(["git", "-C", target, "update-ref", "--no-deref", "HEAD", tree.commit], check=True)
        print("{}: {} @ {} = {}".format(key, path, comp.ref, tree.commit))


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    layout(sys.argv[1], sys.argv[2:])
