"""Shared fixtures. Paths come from pyproject (pythonpath = scripts, charms)."""
import base64
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


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
    """The charms as `make charms` builds them (Ubuntu 18.04 / Python 3.6), built once per session:
    {name: path of the .charm}. Tests that build again compare against these."""
    from bundle import build_charms

    return build_charms.build_all("ubuntu@18.04")
