"""Fixtures of the deploy tests; the helpers live in deploy_helpers (a unique module name, so
that no test imports another folder's conftest by accident)."""
from deploy_helpers import *  # noqa: F401,F403
