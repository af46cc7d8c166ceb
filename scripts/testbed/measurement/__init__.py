"""What the testbed measures and how it reports: traffic and captures (``traffic``, ``capture``,
``probe``), the load check, convergence and the spoke join (``loadcheck``, ``convergence``,
``spokejoin``), Prometheus and the dashboard (``monitor``, ``prometheus``, ``dashboard``), and
the statistics and reports (``benchstats``, ``benchreport``, ``report``, ``thesis``)."""
