"""`make lifecycle` runs ``python -m testbed.lifecycle``: that file is then ``__main__``, and a
module of its operations that imported ``testbed.lifecycle`` back would load it a second time,
half-way through the first (lifecycle_faults did: the command failed before parsing its
arguments, while the e2e test, which imports the module, passed)."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_the_lifecycle_command_starts_and_offers_every_operation():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "scripts"), os.path.join(ROOT, "charms")]))
    proc = subprocess.run([sys.executable, "-m", "testbed.lifecycle", "--help"], cwd=ROOT, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    for operation in ("rotate-keys", "hook-error-retry", "downgrade-mid-rotation", "action-interrupted", "scale-in"):
        assert operation in proc.stdout
