"""Shared fixtures. Paths come from pyproject (pythonpath = scripts, charms)."""
import base64
import fcntl
import json
import os

import kept_builds
import pytest
from kept_builds import kept

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


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


#: Fixtures whose first use builds something for the whole run (seconds of CPU each).
BUILDS = ("shipped_packages", "shipped_charms", "charm_dependencies")


def pytest_collection_modifyitems(config, items):
    """The order pytest-xdist hands tests out in (``--dist loadgroup`` keeps it, after the groups):
    one test that needs the package build first, so that one worker builds while the others run
    tests that need nothing built, and the other tests that need a build last, when it is there.
    Within each part, the longest first by the last run's times (``pytest_configure_node``): a
    test that mostly waits (time-outs, its own processes) starts while the others use the cores,
    and no long one is left to start at the end, when the other workers have nothing left."""
    items[:] = kept_builds.run_order(items, BUILDS, getattr(config, "workerinput", {}).get("vpnaas_durations") or {})


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """pytest-xdist's controller: every worker orders its collection by the same times (read here
    once for all of them: the workers' collections must be identical, and another run in this
    checkout may replace the file between two workers' configurations)."""
    if "last" not in _controller_durations:
        _controller_durations["last"] = kept_builds.last_durations()
    node.workerinput["vpnaas_durations"] = _controller_durations["last"]


_controller_durations = {}


_durations = {}


def pytest_runtest_logreport(report):
    _durations[report.nodeid] = _durations.get(report.nodeid, 0.0) + report.duration


def pytest_sessionfinish(session):
    """The controller of an xdist run keeps each test's time for the next run's order."""
    if getattr(session.config.option, "dist", "no") != "no" and not hasattr(session.config, "workerinput"):
        if _durations:
            kept_builds.record_durations(_durations)


def pytest_terminal_summary(terminalreporter):
    """Name what a test changed in a kept build (tests/kept_builds.py): it is built again by the next
    run, and a test that writes into a build every test reads is a bug to fix."""
    for kind, paths in kept_builds.changed():
        terminalreporter.write_line("a test changed the kept build {} (the next run builds it again): {}".format(
            kind, ", ".join(paths[:5])), yellow=True)


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
    same sources reads the last run's (``kept``: tests/kept_builds.py)."""
    from bundle import build_charms

    def build(out):
        return build_charms.build_all("ubuntu@18.04", out_dir=str(out))
    return once_per_run("charms-ubuntu-18.04", kept("charms-ubuntu-18.04", build))


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
    the last run's, from the same sources: ``kept``)."""
    from bundle import packages

    def build(out):
        return [str(out), packages.build(str(out), os.path.dirname(next(iter(shipped_charms.values()))))]
    out, catalog = once_per_run("packages", kept("packages", build))
    return out, catalog
