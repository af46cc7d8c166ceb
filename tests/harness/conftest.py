"""Fixtures of these tests; the helpers live in harness_helpers (a unique module name, so that no
test imports another folder's conftest by accident)."""
from harness_helpers import *  # noqa: F401,F403
