"""The bench's one-pass namespace scan (loadcheck.namespace_pids) answers what iproute2's own
`ip netns pids` answers, for namespaces this test makes (as root)."""
import os
import subprocess
import time
import uuid

from testbed.measurement import loadcheck


def _ip(*args, **kw):
    return subprocess.run(["ip"] + list(args), check=True, stdout=subprocess.PIPE, universal_newlines=True, **kw)


def test_the_pids_of_two_namespaces_are_iproute2s_and_a_missing_name_adds_none():
    names = ["np-{}-{}".format(os.getpid(), uuid.uuid4().hex[:8]) for _ in range(2)]
    procs = []
    try:
        for name in names:
            _ip("netns", "add", name)
            for _ in range(2):
                procs.append(subprocess.Popen(["ip", "netns", "exec", name, "sleep", "600"]))
        want = set()
        for name in names:
            # `ip netns exec` becomes sleep (exec) in the namespace: wait until iproute2 sees both.
            deadline = time.monotonic() + 60
            while True:
                listed = _ip("netns", "pids", name).stdout.split()
                if len(listed) == 2 or time.monotonic() > deadline:
                    break
                time.sleep(0.01)
            assert len(listed) == 2, (name, listed)
            want |= set(listed)
        assert set(loadcheck.namespace_pids(names + ["np-no-such-namespace"])) == want
        assert want == {str(p.pid) for p in procs}
        assert loadcheck.namespace_pids(["np-no-such-namespace"]) == []
    finally:
        for p in procs:
            p.kill()
            p.wait()
        for name in names:
            subprocess.run(["ip", "netns", "delete", name], check=False)
