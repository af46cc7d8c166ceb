"""`make deploy` / `onboard` / `undeploy` / `measure-remote`: MicroStack + OSM through their CLIs.

Everything is driven by the `openstack` and `osm` command-line clients, built as argument lists
and run without a shell (runner.py). With DRY_RUN=1 the exact commands are printed instead.
"""

import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
