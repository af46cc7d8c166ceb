"""Lay out OAI_SRC for `make oai-conformance` from git repositories (mirrors or clones).

    python -m oai_conformance.layout OUT hss=PATH mme=PATH spgwc=PATH spgwu=PATH enb=PATH \
        sub:c-ares=PATH sub:spdlog=PATH ...

Each component becomes OUT/<name>, a clone sharing the given repository's objects whose HEAD is the
commit the charm's ref names (no work tree is written); ``sub:<name>`` becomes
OUT/submodules/<name> (a link to the repository: only its commits and branches are read).
"""
import os
import subprocess
import sys

from oai_conformance.source import Tree
from vpnaas import registry

#: The OAI components and their pinned sources, from the registry.
PINNED = {c.name: c.description() for c in registry.load().of_workload("oai")}


def layout(out, pairs):
    os.makedirs(os.path.join(out, "submodules"), exist_ok=True)
    for pair in pairs:
        key, _, path = pair.partition("=")
        path = os.path.abspath(path)
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
