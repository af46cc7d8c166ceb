"""Shared code of the VPNaaS proxy charms, in four layers, each importing only those below it
(tests/unit/test_import_graph.py; docs/architecture.md):

* ``oai``: the OAI workloads (``oai.lte``: the LTE EPS; ``oai.cn5g``: the 5G standalone core);
* ``charm``: the glue on ops (the generic charm, the tunnel relations, the hook gate);
* ``vnf``: what talks to the VNF's machine (SSH, the shell steps and their reports);
* ``core``: pure (the tunnel plan, policy, rotation, the relation data, the grammar, wg config).

This package is copied into every built charm under ``lib/vpnaas`` (of ``oai``, only the charm's
own component); it must stay importable on Python 3.6 (OSM's bionic proxy machine). This file and
every ``__init__`` below import nothing: ``dispatch`` runs ``vpnaas.charm.hookgate`` before ops.
"""
