"""Fixtures of these tests; the helpers live in harness_helpers (a unique module name, so that no
test imports another folder's conftest by accident)."""
import pytest
from harness_helpers import *  # noqa: F401,F403

from vpnaas.charm import relation_lookup


@pytest.fixture(autouse=True)
def _unit_state_outside_the_checkout(in_tmp_dir):
    """Harness charms write their unit state beside the working directory (see in_tmp_dir)."""


@pytest.fixture(autouse=True)
def _relations_looked_up_by_id():
    """ops' model as in a charm's own process (charm_base.main installs it before ops starts): a
    relation looked up by id is built alone (relation_lookup)."""
    relation_lookup.install()
    yield
    relation_lookup.uninstall()
