"""The clients whose own parsers judge the deploy tool's command lines, each in a virtualenv of
its own under build/osm-conformance/ (made once, then reused: a stamp names what it holds).

osmclient is not on PyPI: its trees come from OSM_SRC (`osmclient`: v8, the one OSM 8-10
installs; `osmclient-newest`: the newest osmclient at hand) and are imported from there. Their
virtualenvs get the click the tree pins in its requirements.txt (the newest pins one; v8 names
`Click` unpinned, and OSM's python3-osmclient package of that release runs on Ubuntu 18.04's
python3-click 6.7), osmclient's other imports, and the IM bindings (`osm_im`, which osmclient
imports) built from the IM flavour of its era.

python-openstackclient comes from PyPI: the newest release, and MicroStack Ussuri's with the
dependency versions of OpenStack's stable/ussuri upper-constraints (the file MicroStack's snap
builds its Python parts with; OSM_SRC/openstack-requirements is that repository) on a Python of
that release (3.8, MicroStack's core20).
"""
import os
import re
import shutil
import subprocess
import sys

from bundle import ROOT

#: osmclient's imports besides click (its requirements.txt, v8 and newest), unpinned.
OSMCLIENT_DEPS = ["prettytable", "pyyaml", "pycurl", "python-magic", "jinja2", "verboselogs", "packaging",
                  "ruamel.yaml", "requests", "jsonpath-ng",
                  "jsonschema"]   # NBI's validation.py, which judges osmclient's request bodies
#: (OSM_SRC folder, label, IM flavour of its era, click when the tree pins none)
OSMCLIENTS = [
    ("osmclient", "v8", "osm10", "click==6.7"),
    ("osmclient-newest", "newest", "newest", "click"),
]
#: (label, Python version or None for this one, pin, upper-constraints file in OSM_SRC or None)
OPENSTACKCLIENTS = [
    ("newest", None, "python-openstackclient==10.5.0", None),
    ("ussuri", "3.8", "python-openstackclient==5.2.1", "openstack-requirements/upper-constraints.txt"),
]


class ClientError(Exception):
    pass


def click_pin(tree, default):
    """The click requirement of an osmclient tree: its requirements.txt pin, else ``default``."""
    path = os.path.join(tree, "requirements.txt")
    if os.path.isfile(path):
        with open(path) as f:
            for line in f:
                m = re.match(r"\s*click\s*==\s*([0-9][0-9A-Za-z.]*)", line, re.IGNORECASE)
                if m:
                    return "click=={}".format(m.group(1))
    return default


def find_python(version):
    """A Python ``version`` interpreter ("3.8"): on PATH, else among pyenv's versions."""
    def works(candidate):
        if not candidate:
            return None
        done = subprocess.run([candidate, "-c", "import sys; print(sys.executable); "
                               "print('%d.%d' % sys.version_info[:2])"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, universal_newlines=True)
        lines = done.stdout.split()
        return lines[0] if done.returncode == 0 and lines[1:] == [version] else None

    found = works(shutil.which("python" + version))
    if found:
        return found
    pyenv = shutil.which("pyenv") or os.path.join(os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv")),
                                                  "bin", "pyenv")
    if os.path.isfile(pyenv):
        listed = subprocess.run([pyenv, "versions", "--bare"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                universal_newlines=True).stdout.split()
        for name in sorted((v for v in listed if v.startswith(version + ".")), reverse=True):
            prefix = subprocess.run([pyenv, "prefix", name], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                    universal_newlines=True).stdout.strip()
            found = works(os.path.join(prefix, "bin", "python" + version))
            if found:
                return found
    raise ClientError("no Python {} found (on PATH or in pyenv): it is needed for MicroStack Ussuri's "
                      "openstackclient".format(version))


def ensure_venv(path, python, requirements, constraints=None):
    """A virtualenv at ``path`` made with ``python`` holding ``requirements``; reused while its
    stamp names the same requirements and constraints file."""
    stamp = os.path.join(path, ".done")
    wanted = "\n".join([python] + list(requirements) + [constraints or ""]) + "\n"
    if os.path.isfile(stamp):
        with open(stamp) as f:
            if f.read() == wanted:
                return path
    print("osm-conformance: creating {} ({})".format(os.path.relpath(path, ROOT), ", ".join(requirements)),
          flush=True)
    subprocess.run([python, "-m", "venv", "--clear", path], check=True)
    pip = [os.path.join(path, "bin", "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run(pip + (["-c", constraints] if constraints else []) + list(requirements), check=True)
    with open(stamp, "w") as f:
        f.write(wanted)
    return path


def constraints_without(src, dest, pin):
    """``src`` (upper-constraints) without its own line for ``pin``'s distribution, so that the
    release asked for (5.2.1, where stable/ussuri pins 5.2.0) can be installed under it."""
    name = re.split(r"[=<>!~ ]", pin, maxsplit=1)[0].lower()
    with open(src) as f:
        kept = [line for line in f if re.split(r"[=<>!~; ]", line.strip(), maxsplit=1)[0].lower() != name]
    with open(dest, "w") as f:
        f.writelines(kept)
    return dest


def osmclient_venv(work_dir, label, tree, im_pins, default_click):
    requirements = [click_pin(tree, default_click)] + OSMCLIENT_DEPS + list(im_pins)
    return ensure_venv(os.path.join(work_dir, "venv-osmclient-" + label), sys.executable, requirements)


def openstackclient_venv(work_dir, osm_src, label, version, pin, constraints):
    python = find_python(version) if version else sys.executable
    cfile = None
    if constraints:
        cfile = constraints_without(os.path.join(osm_src, constraints),
                                    os.path.join(work_dir, "constraints-{}.txt".format(label)), pin)
    return ensure_venv(os.path.join(work_dir, "venv-openstackclient-" + label), python, [pin], cfile)
