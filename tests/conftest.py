"""Shared fixtures. Paths come from pyproject (pythonpath = scripts, charms)."""
import base64
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: Fixtures that build the shipped charms and packages into the project's build/ folder.
SHIPPED_BUILDS = ("shipped_charms", "shipped_packages")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    """`make unit` runs on several pytest-xdist workers with ``--dist loadgroup``: every test that
    uses a shipped build goes to one worker, so the build runs once and no two workers write
    build/charms at the same time. (tryfirst: xdist reads the marker in the same hook.)"""
    for item in items:
        if any(name in getattr(item, "fixturenames", ()) for name in SHIPPED_BUILDS):
            item.add_marker(pytest.mark.xdist_group("shipped-builds"))


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
def shipped_charms():
    """{name: path of the .charm} as `make charms` builds them (ubuntu@18.04), built once per
    session for every test that reads the built charms: a build takes seconds, mostly deflate."""
    from bundle import build_charms

    return build_charms.build_all("ubuntu@18.04")


@pytest.fixture(scope="session")
def shipped_packages(tmp_path_factory, shipped_charms):
    """(folder, catalog) of `make packages`, built once per session from ``shipped_charms``."""
    from bundle import packages

    out = str(tmp_path_factory.mktemp("pkgs") / "packages")
    return out, packages.build(out, os.path.dirname(next(iter(shipped_charms.values()))))
