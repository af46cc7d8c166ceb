"""The builds the tests read (the shipped charms, the packages), kept in build/test-builds from one
test run to the next and read again while what they are built from is unchanged (``kept``)."""
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: Where the builds are kept.
KEPT = os.path.join(ROOT, "build", "test-builds")
#: How many builds of each kind are kept (the newest): one for the tree as it is, one for another
#: run in the same checkout that started from other sources.
KEEP = 2
#: The files under tests/ that decide what is built: they are in the digest.
CALLERS = ("tests/conftest.py", "tests/kept_builds.py")


def inputs_digest():
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
        if rel.startswith(("tests/", "docs/")) and rel not in CALLERS:
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


def kept(name, build):
    """``build`` as ``_once_per_run`` calls it, whose result and files are kept in build/test-builds
    for the next test run: when that run's sources and tools are the same (``inputs_digest``)
    and the files are as the build left them, it reads them instead of building again. Sound
    because the builds are reproducible, byte for byte (tests/packages/test_charm_build.py and
    test_packages.py build again in every run and compare), and their inputs are in the digest."""
    def run(_folder):
        key = inputs_digest()
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


def changed():
    """[(kind, [paths])]: the newest kept build of each kind whose files are no longer as its build
    left them (a test wrote into it; the next run builds it again)."""
    out = []
    kinds = sorted(os.listdir(KEPT)) if os.path.isdir(KEPT) else []
    for kind in kinds:
        entries = [os.path.join(KEPT, kind, e) for e in os.listdir(os.path.join(KEPT, kind)) if not e.startswith(".")]
        if not entries:
            continue
        newest = max(entries, key=os.path.getmtime)
        try:
            with open(os.path.join(newest, "kept.json")) as f:
                files = json.load(f)["files"]
        except (OSError, ValueError, KeyError):
            continue
        now = _listing(os.path.join(newest, "out"))
        differ = sorted(p for p in set(files) | set(now) if files.get(p) != now.get(p))
        if differ:
            out.append((kind, differ))
    return out


#: Each test's time in the last xdist run that ran it (setup, call and teardown, seconds): the order
#: the next run hands the tests out in (tests/conftest.py), the longest first.
DURATIONS = os.path.join(ROOT, "build", "test-durations.json")


def last_durations():
    """{node id: seconds} of the runs before, or {} (none yet, or unreadable)."""
    try:
        with open(DURATIONS) as f:
            doc = json.load(f)
        return {str(k): float(v) for k, v in doc.items()}
    except (OSError, ValueError, TypeError, AttributeError):
        return {}


def record_durations(durations):
    """Keep ``durations`` ({node id: seconds}) over the runs before's (a run of some files keeps the
    others' times), replaced whole at once."""
    merged = last_durations()
    merged.update(durations)
    os.makedirs(os.path.dirname(DURATIONS), exist_ok=True)
    tmp = "{}.{}.tmp".format(DURATIONS, os.getpid())
    with open(tmp, "w") as f:
        json.dump(merged, f, sort_keys=True)
    os.replace(tmp, DURATIONS)


def run_order(items, builds, last):
    """``items`` (pytest's) in the order to hand them out: the first that uses the fixture
    ``shipped_packages`` (else any of ``builds``), then every item that uses none of ``builds``,
    then the other items that use one; within each part the longest first by ``last`` ({node id:
    seconds}; an item it lacks counts 0), else in the order given."""
    needs_build = [i for i in items if set(builds) & set(getattr(i, "fixturenames", ()))]
    first = [i for i in needs_build if "shipped_packages" in i.fixturenames][:1] or needs_build[:1]
    built = set(needs_build)

    def longest_first(part):
        return sorted(part, key=lambda i: -last.get(i.nodeid, 0.0))
    return (first + longest_first([i for i in items if i not in built])
            + longest_first([i for i in needs_build if i not in first]))
