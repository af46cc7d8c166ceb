"""The charm glue: the generic VPNaaS charm on ops (``base.VpnaasCharm``: events, the one
reconcile, actions, status), the tunnel relations as a unit reads and writes them, what the unit
keeps across hooks (``relation_cache``, ``relation_memory``) and the hook gate a charm run asks
before ops is imported (``hookgate``: this package's ``__init__`` must stay standard library).

Imports the core and the VNF side, never a workload (tests/unit/test_import_graph.py).
"""
