"""The VNF side: what talks to the VNF's machine. SSH sessions (``ssh``), the steps shipped as
shell programs and how they are sent and read back (``vnfscript``, ``vnfsession``), the tunnel
step and its report (``remote``), the data plane programs (``dataplane``) and the exporter's
labels (``metrics``). The shell tree the steps are made of lies beside them: ``lib.sh``,
``tunnels.sh``, ``metrics.sh``, the exporter, and each workload's folder (``oai/``).

Imports the core and nothing of ops, the charm glue or the workloads
(tests/unit/test_import_graph.py).
"""
