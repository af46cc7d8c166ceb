"""Build the IM's pyangbind bindings (the `osm_im` package NBI imports) from an IM source tree.

This repeats what the IM's own Makefile does for its `models` target, without its network steps:
the SOL006 yang comes from OSM_SRC/SOL006 instead of a `git clone`, and the two IETF modules
(ietf-yang-types, ietf-inet-types, both 2013-07-15) come from the copies pyang installs instead
of a `wget`. Steps: copy the IM tree, put SOL006 under `sol006_model/`, apply the IM's two patches
to it (`patch -p2`, as the Makefile does), then run `pyang -Werror -f pybind` per model with the
OSM augments for the ETSI models. The ETSI bindings are written under both names in use: the
Makefile's `etsi-nfv-vnfd.py` (which the 2021 IM's own validation.py imports with importlib) and
`etsi_nfv_vnfd.py` (which NBI imports; the newest Makefile renames them so).
"""

import glob
import os
import shutil
import subprocess

# The IM Makefile's YANG_DESC_MODELS.
MODELS = ["vnfd", "nsd", "nst", "nsi", "etsi-nfv-vnfd", "etsi-nfv-nsd"]
IETF = ["ietf-yang-types", "ietf-inet-types"]


class BindingsError(Exception):
    pass


def _run(cmd, cwd):
    done = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if done.returncode != 0:
        raise BindingsError("{} failed in {}:\n{}".format(" ".join(cmd), cwd, done.stdout[-4000:]))
    return done.stdout


def _ietf_dir(venv):
    found = glob.glob(os.path.join(venv, "share", "yang", "modules", "ietf"))
    if not found:
        raise BindingsError("pyang's IETF modules not found under {}/share/yang".format(venv))
    return found[0]


def build(im_src, sol006_src, venv, out_dir):
    """Build bindings of the IM at im_src into out_dir/osm_im (replaced). Returns out_dir.

    venv: the virtualenv with the pyang/pyangbind versions this IM needs.
    """
    im_src, sol006_src, venv, out_dir = (os.path.abspath(p) for p in (im_src, sol006_src, venv, out_dir))
    stamp = os.path.join(out_dir, ".built")
    if os.path.isfile(stamp):
        return out_dir
    if os.path.isdir(out_dir):
        shutil.rmtree(out_dir)
    shutil.copytree(im_src, out_dir)
    model_dir = os.path.join(out_dir, "models", "yang")
    sol_dir = os.path.join(out_dir, "sol006_model")
    shutil.copytree(sol006_src, sol_dir)
    for patch in sorted(glob.glob(os.path.join(out_dir, "patch", "*.patch"))):
        # The patches name /tmp/sol006_model/src/yang/...; -p2 makes that sol006_model/src/yang.
        _run(["patch", "-p2", "-i", patch], cwd=out_dir)
    sol_yang = os.path.join(sol_dir, "src", "yang")
    ietf = _ietf_dir(venv)
    for name in IETF:
        for dest in (model_dir, sol_yang):
            shutil.copy(os.path.join(ietf, name + ".yang"), os.path.join(dest, name + ".yang"))
    python = os.path.join(venv, "bin", "python")
    plugin = _run(
        [python, "-c", "import os, pyangbind; print(os.path.join(os.path.dirname(pyangbind.__file__), 'plugin'))"],
        cwd=out_dir,
    ).strip()
    pyang = os.path.join(venv, "bin", "pyang")
    augments = sorted(glob.glob(os.path.join(out_dir, "models", "augments", "*")))
    for model in MODELS:
        etsi = model.startswith("etsi")
        src_dir = sol_yang if etsi else model_dir
        target = os.path.join(out_dir, "osm_im", model.replace("-", "_") + ".py")
        cmd = [pyang, "-Werror", "--path", src_dir, "--plugindir", plugin, "-f", "pybind", "-o", target]
        cmd += augments if etsi else []
        cmd.append(os.path.join(src_dir, model + ".yang"))
        _run(cmd, cwd=out_dir)
        if etsi:
            shutil.copy(target, os.path.join(out_dir, "osm_im", model + ".py"))
    with open(stamp, "w") as f:
        f.write("ok\n")
    return out_dir
