"""Fixtures of these tests; the helpers live in harness_helpers (a unique module name, so that no
test imports another folder's conftest by accident)."""
import pytest
from harness_helpers import *  # noqa: F401,F403


@pytest.fixture(autouse=True)
def _unit_state_outside_the_checkout(in_tmp_dir):
    """Harness charms write their unit state beside the working directory (see in_tmp_dir)."""
