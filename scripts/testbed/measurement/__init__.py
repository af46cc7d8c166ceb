"""What the testbed measures and how it reports, on testbeds others bring up: traffic and
captures (``traffic``, ``capture``, ``probe``), the load check (``loadcheck``), Prometheus and
the dashboard (``prometheus``, ``dashboard``), the statistics and reports (``benchstats``,
``benchreport``, ``report``, ``thesis``). It imports the emulators and itself only."""
