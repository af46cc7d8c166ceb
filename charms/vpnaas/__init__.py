"""Shared code of the VPNaaS proxy charms.

Pure modules (no ops import): refpoints, validation, wgconfig, relation_data, plan, remote, ssh,
unitstate, relation_cache, hookgate (the last three also run before ops, from the charm's dispatch).
The ops glue lives in ``charm_base``. This package is copied into every built charm under
``lib/vpnaas``; it must stay importable on Python 3.6 (OSM's bionic proxy machine).
"""

SCHEMA_VERSION = "1"
#: The make-before-break key rotation this release speaks (``rotation-protocol``; rotation.py).
#: Optional fields an earlier release ignores: a peer without them rotates in place, as before.
ROTATION_PROTOCOL = "1"
