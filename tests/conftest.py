"""Shared fixtures. Paths come from pyproject (pythonpath = scripts, charms)."""
import base64
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: Where the builds the tests read are kept from one test run to the next (``_kept``).
KEPT = os.path.join(ROOT, "build", "test-builds")
#: How many builds of each kind are kept (the newest): one for the tree as it is, one for another
#: run in the same checkout that started from other sources.
KEEP = 2


def _once_per_run(tmp_path_factory, name, build):
    """``build(folder)``'s result (JSON), computed once per test run however many pytest-xdist
    workers ask: the first takes a lock in the run's own temporary folder (the one every worker's
    folder is in) and builds (``folder``: a path there it may use); the others wait for it and read
    what it recorded. A build that fails records nothing, so the next worker that asks builds again
    (and reports the failure again)."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent
    done = root / (name + ".json")
    with open(str(root / (name + ".lock")), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.exists():
            return json.loads(done.read_text())
        result = build(root / name)
        done.write_text(json.dumps(result))
        return result


def _inputs_digest():
    """sha256 of everything a build of the charms or the packages reads, or None where it cannot be
    known (no git): every file git shows (tracked or not ignored, as the build sees the tree) but
    those under tests/ and docs/, which no build reads (this file excepted: it calls the builds),
    the programs in build/tools the charms ship, and the interpreter with the packages of its
    environment (PyYAML writes the charms' YAML)."""
    try:
        listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    digest = hashlib.sha256()
    rels = sorted(set(filter(None, listed.decode().split("\0"))))
    tools = os.path.join(ROOT, "build", "tools")
    rels += sorted(os.path.join("build", "tools", n) for n in os.listdir(tools)) if os.path.isdir(tools) else []
    for rel in rels:
        if rel.startswith(("tests/", "docs/")) and rel != "tests/conftest.py":
            continue
        path = os.path.join(ROOT, rel)
        digest.update(rel.encode() + b"\0")
        if os.path.isfile(path):
            with open(path, "rb") as f:
                digest.update(hashlib.sha256(f.read()).digest())
    digest.update(repr((sys.version, sys.executable)).encode())
    for folder in sorted(p for p in sys.path if p.endswith("-packages") and os.path.isdir(p)):
        digest.update(repr(sorted(n for n in os.listdir(folder) if n.endswith((".dist-info", ".egg-info")))).encode())
    return digest.hexdigest()


def _listing(folder):
    """{path: [size, mtime in ns]} of every file under ``folder``: what a test that wrote into a kept
    build would change."""
    out = {}
    for root, _dirs, files in os.walk(folder):
        for name in files:
            path = os.path.join(root, name)
            st = os.lstat(path)
            out[os.path.relpath(path, folder)] = [st.st_size, st.st_mtime_ns]
    return out


def _kept(name, build):
    """``build`` as ``_once_per_run`` calls it, whose result and files are kept in build/test-builds
    for the next test run: when that run's sources and tools are the same (``_inputs_digest``)
    and the files are as the build left them, it reads them instead of building again. Sound
    because the builds are reproducible, byte for byte (tests/packages/test_charm_build.py and
    test_packages.py build again in every run and compare), and their inputs are in the digest."""
    def run(_folder):
        key = _inputs_digest()
        if key is None:
            return build(_folder)
        kinds = os.path.join(KEPT, name)
        os.makedirs(kinds, exist_ok=True)
        entry = os.path.join(kinds, key[:24])
        with open(os.path.join(kinds, ".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                with open(os.path.join(entry, "kept.json")) as f:
                    kept = json.load(f)
                if kept["key"] == key and kept["files"] == _listing(os.path.join(entry, "out")):
                    os.utime(entry)
                    return kept["result"]
            except (OSError, ValueError, KeyError):
                pass
            shutil.rmtree(entry, ignore_errors=True)
            os.makedirs(entry)
            result = build(_path_of(_folder, os.path.join(entry, "out")))
            with open(os.path.join(entry, "kept.json.tmp"), "w") as f:
                json.dump({"key": key, "result": result, "files": _listing(os.path.join(entry, "out")),
                           "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}, f)
            os.replace(os.path.join(entry, "kept.json.tmp"), os.path.join(entry, "kept.json"))
            others = sorted((os.path.join(kinds, e) for e in os.listdir(kinds) if not e.startswith(".")),
                            key=os.path.getmtime)
            for old in others[:-KEEP]:
                shutil.rmtree(old, ignore_errors=True)
            return result
    return run


def _path_of(like, path):
    """``path`` as the type of ``like`` (the builds are handed a pathlib path)."""
    return type(like)(path)


#: Fixtures whose first use builds something for the whole run (seconds of CPU each).
BUILDS = ("shipped_packages", "shipped_charms", "charm_dependencies")


def pytest_collection_modifyitems(items):
    """The order pytest-xdist hands tests out in (``--dist loadgroup`` keeps it, after the groups):
    one test that needs the package build first, so that one worker builds while the others run
    tests that need nothing built, and the other tests that need a build last, when it is there."""
    needs_build = [i for i in items if set(BUILDS) & set(getattr(i, "fixturenames", ()))]
    if needs_build:
        first = next((i for i in needs_build if "shipped_packages" in i.fixturenames), needs_build[0])
        rest = [i for i in items if i not in set(needs_build)]
        items[:] = [first] + rest + [i for i in needs_build if i is not first]


@pytest.fixture(scope="session")
def once_per_run(tmp_path_factory):
    """once_per_run(name, build): ``build(folder)``'s result, once per test run (``_once_per_run``)."""
    return lambda name, build: _once_per_run(tmp_path_factory, name, build)


@pytest.fixture
def in_tmp_dir(tmp_path, monkeypatch):
    """Run the test in its own empty working directory. A charm under ops' Harness has no charm
    directory on disk ("no-disk-path", relative), so its unit state directory (the relation
    cache) lands beside the working directory: never in the checkout."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def wg_key():
    """A syntactically valid WireGuard public key (any 32 bytes, base64)."""
    counter = [0]

    def make():
        counter[0] += 1
        return base64.b64encode(bytes([counter[0]]) * 32).decode()
    return make


@pytest.fixture(scope="session")
def charm_dependencies(once_per_run):
    """The pinned dependencies of the shipped charms (build/venvs/...; fetched from PyPI by the first
    build on a machine), installed once per test run before anything builds charms."""
    from bundle import build_charms

    return once_per_run("charm-dependencies-18.04",
                        lambda _out: build_charms.dependency_tree("ubuntu@18.04"))


@pytest.fixture(scope="session")
def shipped_charms(once_per_run, charm_dependencies):
    """{name: path of the .charm} as `make charms` builds them (ubuntu@18.04), built once per test
    run (``once_per_run``) into build/test-builds, for every test that reads them; a run from the
    same sources reads the last run's (``_kept``)."""
    from bundle import build_charms

    def build(out):
        return build_charms.build_all("ubuntu@18.04", out_dir=str(out))
    return once_per_run("charms-ubuntu-18.04", _kept("charms-ubuntu-18.04", build))


@pytest.fixture(scope="session")
def local_charms_dir(once_per_run):
    """The folder of the charms `make charms-local` builds (this machine's Python: the testbed's),
    built once per test run like ``shipped_charms``, into build/charms-local as the testbed expects."""
    from bundle import build_charms

    def build(_out):
        build_charms.build_all("local")
        return build_charms.output_dir("local")
    return once_per_run("charms-local", build)


@pytest.fixture(scope="session")
def shipped_packages(once_per_run, shipped_charms):
    """(folder, catalog) of `make packages` from ``shipped_charms``, built once per test run (or
    the last run's, from the same sources: ``_kept``)."""
    from bundle import packages

    def build(out):
        return [str(out), packages.build(str(out), os.path.dirname(next(iter(shipped_charms.values()))))]
    out, catalog = once_per_run("packages", _kept("packages", build))
    return out, catalog
