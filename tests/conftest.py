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
