"""Runs OAI's data_provisioning_users with its arguments read from stdin (on the VNF, Python 3.6).

The arguments hold the LTE key K: on a command line it would be visible in ``ps``. The script's
own output lists the keys it wrote, so it goes to /dev/null.
"""
import json
import os
import runpy
import sys


def main() -> None:
    spec = json.load(sys.stdin)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    sys.argv = [spec["script"]] + spec["args"]
    runpy.run_path(spec["script"], run_name="__main__")


if __name__ == "__main__":
    main()
