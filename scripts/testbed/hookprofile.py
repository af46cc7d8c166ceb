"""Where a hook's time goes: interpreter start, ``import ops``, paramiko, an SSH connection.

From the hook log of the convergence runs (hooks that opened an SSH session and hooks that
did not) and from timing each piece alone.
"""
import os
import subprocess
import sys
import time

from testbed import benchstats, toolserver, vca, vim


def _timed(argv, cwd=None, env=None, repeat=3):
    """Median wall time of running argv ``repeat`` times."""
    times = []
    for _ in range(repeat):
        t0 = time.monotonic()
        subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.monotonic() - t0)
    return benchstats.summarize(times)["median"]


def _tool_call_seconds(workdir):
    """One hook tool call as a hook makes it: the client's start and the round trip to the
    model (a model without units answers "unknown unit": the same path, the same cost)."""
    with vca.Model(os.path.join(workdir, "vca-profile")) as model:
        env = dict(os.environ, VPNAAS_VCA_SOCKET=model.socket_path, JUJU_UNIT_NAME="profile/0")
        return _timed([os.path.join(model.bin, "is-leader")], env=env, repeat=10)


SSH_PROBE = r"""
import sys, time
t0 = time.monotonic()
import paramiko
t1 = time.monotonic()
c = paramiko.SSHClient(); c.set_missing_host_key_policy(paramiko.AutoAddPolicy())
c.connect(sys.argv[1], username="root", key_filename=sys.argv[2], timeout=10, allow_agent=False, look_for_keys=False)
t2 = time.monotonic()
_, out, _ = c.exec_command("true"); out.channel.recv_exit_status()
t3 = time.monotonic(); tr = c.get_transport(); c.close(); tr.join(5)   # as ssh.Session closes
print(t1 - t0, t2 - t1, t3 - t2)
"""


def profile_hooks(runner, records):
    """Where a hook's time goes: interpreter start, ops import, paramiko import, SSH connect and
    the remote script (the remainder), from the hook log and from timing each piece alone."""
    charm = os.path.join(runner.charms_dir, "wireguard-proxy")
    env = dict(toolserver.hook_base_env(os.environ), PYTHONPATH="lib:venv")   # as the hooks ran
    out = {"python_start_s": _timed([sys.executable, "-c", "pass"]),
           "python_import_ops_s": _timed([sys.executable, "-c", "import ops.main"], cwd=charm, env=env),
           "python_import_ops_charm_s": _timed([sys.executable, "-c", "import ops.main, vpnaas.charm_base"],
                                               cwd=charm, env=env),
           "python_import_paramiko_s": _timed([sys.executable, "-c", "import paramiko"], cwd=charm, env=env),
           "hook_tool_call_s": _tool_call_seconds(runner.workdir)}
    by_kind = {"gate": [], "charm": [], "session": [], "verify": []}
    for rec in records:
        for took, kind in zip(rec["hook_seconds"], rec["hook_kinds"]):
            by_kind[kind].append(took)
    out["hook_in_gate_s"] = benchstats.summarize(by_kind["gate"])
    out["hook_without_ssh_s"] = benchstats.summarize(by_kind["charm"])
    out["hook_verify_login_s"] = benchstats.summarize(by_kind["verify"])
    out["hook_with_ssh_s"] = benchstats.summarize(by_kind["session"])
    out.update(_ssh_timing(charm, runner))
    wo, w = out["hook_without_ssh_s"]["median"], out["hook_with_ssh_s"]["median"]
    if wo is not None and w is not None and out.get("ssh_connect_s") is not None:
        out["remote_script_and_rest_s"] = w - wo - out["ssh_connect_s"] - out["python_import_paramiko_s"]
    return out


def _ssh_timing(charm, runner):
    """paramiko connect + auth and one command to a fresh VNF (same path the charm takes)."""
    tb = runner.testbed("tb-profile")
    try:
        vnf = tb.add_vnf("p")
        key = os.path.join(runner.workdir, "profile_key")
        for path in (key, key + ".pub"):
            if os.path.exists(path):
                os.remove(path)
        vim.sh(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key])
        tb.authorize(vnf, open(key + ".pub").read())
        samples = []
        for _ in range(3):
            proc = vim.sh(tb.runner() + [sys.executable, "-c", SSH_PROBE, vnf.mgmt_ip, key], cwd=charm,
                          env=dict(toolserver.hook_base_env(os.environ), PYTHONPATH="lib:venv"), timeout=60)
            samples.append([float(x) for x in proc.stdout.split()])
        med = [benchstats.summarize([s[i] for s in samples])["median"] for i in range(3)]
        return {"ssh_connect_s": med[1], "ssh_exec_true_s": med[2]}
    finally:
        tb.teardown()
