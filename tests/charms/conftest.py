"""Fixtures of these tests; the helpers live in charms_helpers (a unique module name, so that no
test imports another folder's conftest by accident)."""
from charms_helpers import *  # noqa: F401,F403
