"""The pure core: the tunnel model and plan, the route policy, key rotation, the relation data
codec, the strict grammar every outside value passes, wg-quick rendering, the registry of
components and reference points.

Imports nothing of the other layers, nor ops, paramiko, subprocess or socket
(tests/unit/test_import_graph.py). Its only file access: the registry reads its YAML beside it,
``unitstate`` writes the unit's own files atomically, ``hookclock`` dumps a profile when asked.
"""
