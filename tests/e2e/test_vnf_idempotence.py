"""A reconcile that changes nothing writes nothing on the VNF (issue 36: every update-status touched
/etc/wireguard/vpnaas-service-addresses). The tunnel step exactly as the charm sends it
(remote.tunnel_step: the facts guard, the data plane, the service addresses, every route list,
the device on wireguard-go, the metrics exporter, an OAI component's start gate) runs in a fresh
network and mount namespace, once to apply and then twice more: after the first run, no file or
folder the step writes -- under /etc/wireguard, the data plane's folder, /run/wireguard and the
OAI component's folders -- changes its bytes, mode, inode or mtime, and nothing is created or
removed beside them. Every line each run printed is a line of the report protocol
(vpnaas/vnf/report.py): the conformance of the real shell to the one specification."""
import hashlib
import ipaddress
import os
import subprocess

import pytest

from vpnaas.charm import entry
from vpnaas.core import model, registry, relation_data
from vpnaas.core import plan as planning
from vpnaas.oai import component as oai
from vpnaas.vnf import dataplane, remote
from vpnaas.vnf import report as vnf_report

#: Run inside the namespace: learn the VNF's facts digest as the charm does (a first step stops
#: after the facts), then run the step three times with it, listing every file after each run.
OUTER = r"""
set -e
root=$1 n=$2; shift 2             # n: the step's arguments before the facts digest (programs_check's)
pre=("${@:1:n}") post=("${@:n+2}")  # the facts digest the charm would pass comes below
mount -t tmpfs tmpfs /etc/wireguard
mkdir -p /run/wireguard /usr/local/lib/vpnaas
mount -t tmpfs tmpfs /run/wireguard
mount -t tmpfs tmpfs /usr/local/lib/vpnaas
if [ -n "${PQ_PROGRAM:-}" ]; then install -m 755 "$PQ_PROGRAM" /usr/local/lib/vpnaas/pq-psk; fi
ip link set lo up
ip link add mgmt type veth peer name mgmt-p
ip addr add 10.77.0.5/24 dev mgmt
ip link set mgmt up
sysctl -q -w net.ipv6.conf.all.disable_ipv6=0 net.ipv6.conf.lo.disable_ipv6=0
export VPNAAS_SSH_CONNECTION="10.77.0.1 40000 10.77.0.5 22" OAI_INIT=direct
export OAI_STATE_DIR=$root/state OAI_LOG_DIR=$root/log OAI_SBIN=$root/sbin OAI_RUN_DIR=$root/run \
  OAI_UNIT_DIR=$root/units
mkdir -p "$OAI_STATE_DIR" "$OAI_RUN_DIR" "$OAI_UNIT_DIR"
date > "$OAI_STATE_DIR/spgwu.configured"
f=$(mktemp)
cat > "$f"
digest=$(bash "$f" "${pre[@]}" - "${post[@]}" | sed -n 's/^FACTS \([0-9a-f]\{64\}\)$/\1/p')
listing() {
  find /etc/wireguard /usr/local/lib/vpnaas /run/wireguard "$root" -printf '%p %y %m %i %s %T@\n' | sort
  find /etc/wireguard /usr/local/lib/vpnaas "$root" -type f -exec md5sum {} + | sort
}
for run in 1 2 3; do
  echo "---RUN $run"
  bash "$f" "${pre[@]}" "$digest" "${post[@]}" || echo "EXIT $?"
  echo "---FILES $run"
  listing
  sleep 0.05       # a rewrite in the next run would show a later mtime
done
echo "---MODES"
stat -c '%n %a' /etc/wireguard/wg-vpn.key /etc/wireguard/wg-vpn.conf /etc/wireguard/vpnaas-service-addresses.owned
kill "$(cat /run/wireguard/vpnaas-metrics-exporter.pid)" 2>/dev/null || true
kill "$(cat /run/wireguard/vpnaas-pq-psk.pid)" 2>/dev/null || true
ip link del wg-vpn 2>/dev/null || true
rm -f "$f"
"""

KEY = "BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBA="


@pytest.fixture(autouse=True)
def _root(environment_ready):
    return environment_ready


def a_plan():
    bag = relation_data.encode(KEY, "192.0.2.2", 51820, ipaddress.ip_interface("10.9.0.2/30"), [])
    bag["service-prefixes"] = "172.16.0.2/32"
    config = {"ssh-hostname": "10.77.0.5", "tunnel-mtu": 1420, "persistent-keepalive": 25, "vpn-listen-port": 51999,
              "vpn-tunnel-address": "10.9.0.1/30", "vpn-service-addresses": "172.16.0.1/32,172.16.0.3/32",
              "vpn-service-network": "172.16.0.0/16", "vpn-peer-prefixes": "172.16.0.0/16"}
    return planning.build_plan(config, [model.TunnelEndpoint("vpn", "provider")], {"vpn": [{"b/0": bag}]}, {})


def sections(text, name):
    """{run: text} of the '---<name> <run>' sections."""
    out = {}
    for chunk in text.split("---" + name + " ")[1:]:
        run, _, rest = chunk.partition("\n")
        out[run] = rest.split("\n---")[0]
    return out


def run_three_times(tmp_path, program=None):
    """The step of a_plan run three times in a fresh namespace; ``program``: the pq-psk program
    the charm ships (installed on the VNF beforehand, as the charm's NEED would), or none."""
    plan = a_plan()
    assert plan.errors == [] and [p.source for p in plan.devices[0].peers] == ["b/0"]
    spgwu = next(entry.description(c) for c in registry.load().of_workload("oai") if c.name == "spgwu")
    programs = {}
    if program is not None:
        with open(program, "rb") as f:
            programs["pq-psk"] = dataplane.Program("pq-psk", program, hashlib.sha256(f.read()).hexdigest(), "1")
    step = remote.tunnel_step(plan, component=lambda s: oai.add_gate(s, spgwu, ["wg-vpn"], "none", 300, wait=0),
                              programs=programs)
    before = len(dataplane.prepare_args(plan, programs))     # programs_check's, then facts_guard's digest
    assert step.args[before] == "-"
    proc = subprocess.run(["unshare", "--net", "--mount", "--propagation", "private", "bash", "-c", OUTER, "step",
                           str(tmp_path), str(before)] + step.args, input=step.program(), universal_newlines=True,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120,
                          env=dict(os.environ, PQ_PROGRAM=program or ""))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def test_a_step_that_changes_nothing_touches_no_file(tmp_path):
    proc = run_three_times(tmp_path)
    runs, files = sections(proc.stdout, "RUN"), sections(proc.stdout, "FILES")
    assert sorted(runs) == ["1", "2", "3"], proc.stdout[-3000:]
    for run in ("1", "2", "3"):
        report = runs[run]
        assert "ERROR" not in report and "FAILED" not in report and "EXIT" not in report, report
        assert "FACTS changed" not in report and "UP wg-vpn" in report and "METRICS up 10.77.0.5:9586" in report
        assert "COMPONENT configured yes" in report
        # The real shell speaks the report protocol (vpnaas/vnf/report.py), line by line.
        assert vnf_report.problems(report) == [], report
    assert "APPLIED wg-vpn up" in runs["1"]
    # The step carries no pq-psk program (as from a charm built without it): the pq part is a no-op
    # that succeeds and leaves nothing, not even its folder.
    assert all(runs[run].splitlines().count("PQPSK off") == 2 for run in runs), runs["1"]
    assert not [line for run in files for line in files[run].splitlines() if "pq-psk" in line], files["1"]
    assert "APPLIED wg-vpn unchanged" in runs["2"] and "APPLIED wg-vpn unchanged" in runs["3"]
    written = [line for line in files["1"].splitlines() if " f " in line]
    for path in ("/etc/wireguard/vpnaas-service-addresses ", "/etc/wireguard/vpnaas-service-addresses.owned ",
                 "/etc/wireguard/wg-vpn.conf ", "/etc/wireguard/wg-vpn.routes ", "/etc/wireguard/wg-vpn.impl ",
                 "/etc/wireguard/vpnaas-routes.sh ", "/etc/wireguard/vpnaas-metrics.json ",
                 "/etc/wireguard/vpnaas-metrics-exporter.py ", "/usr/local/lib/vpnaas/wg-quick-userspace ",
                 str(tmp_path / "state" / "spgwu.tunnels") + " ", str(tmp_path / "sbin" / "oai-service") + " "):
        assert any(line.startswith(path) for line in written), (path, files["1"])
    # wireguard-go's and the exporter's own logs are theirs to write; everything else is the step's.
    def steady(listing):
        return [line for line in listing.splitlines() if not line.split(" ")[0].endswith(".log")]
    assert steady(files["2"]) == steady(files["1"]), "the second run changed a file"
    assert steady(files["3"]) == steady(files["1"]), "the third run changed a file"
    modes = dict(line.split() for line in proc.stdout.split("---MODES\n")[1].splitlines()[:3])
    assert set(modes.values()) == {"600"}, modes


def test_with_pq_psk_the_daemon_starts_once_and_a_step_that_changes_nothing_touches_no_file(tmp_path):
    """The charm ships pq-psk (the real program, make pq-psk): the daemon starts at the first run
    and reports up; the later runs write nothing of it (its file, its folder) and start no
    second daemon. The daemon's own state in /run is its to write, like the logs."""
    program = os.path.join(os.path.dirname(__file__), "..", "..", "build", "tools", "pq-psk")
    assert os.access(program, os.X_OK), "build/tools/pq-psk missing: make pq-psk"
    proc = run_three_times(tmp_path, os.path.abspath(program))
    runs, files = sections(proc.stdout, "RUN"), sections(proc.stdout, "FILES")
    for run in ("1", "2", "3"):
        assert "FAILED" not in runs[run] and runs[run].splitlines()[-1] == "DONE", runs[run]
        assert vnf_report.problems(runs[run]) == [], runs[run]
    assert [line for line in runs["1"].splitlines() if line.startswith("PQPSK")] == ["PQPSK off", "PQPSK up"]
    assert all([line for line in runs[r].splitlines() if line.startswith("PQPSK")] == ["PQPSK up"] * 2 for r in "23")

    # The programs' digests are recorded once, in the first run after pq-psk has been unchanged for
    # 2 s (tunnels/dataplane.sh): which run that is depends on the machine's speed, and so does the
    # size and mtime of their folder, which are left out (its type, mode and inode still count;
    # every other file in it is still listed on its own).
    def steady(listing):
        return [" ".join(line.split(" ")[:4]) if line.startswith("/usr/local/lib/vpnaas d ") else line
                for line in listing.splitlines() if not line.split(" ")[0].endswith(".log")
                and not line.startswith("/run/wireguard/vpnaas-pq-psk/") and "/.programs.sha256" not in line]
    assert any(line.startswith("/etc/wireguard/pq-psk/wg-vpn.conf f 600 ") for line in files["1"].splitlines())
    assert any(line.startswith("/etc/wireguard/pq-psk d 700 ") for line in files["1"].splitlines())
    assert steady(files["2"]) == steady(files["1"]) and steady(files["3"]) == steady(files["1"])


def test_a_pq_psk_daemon_that_exits_at_its_start_is_a_failure_said_not_a_capability(tmp_path):
    """A program that exits at once: each run reports FAILED pq-psk with its last log line (the
    charm then publishes no capability and says why), never PQPSK up; the tunnel is applied."""
    program = tmp_path / "pq-psk-broken"
    program.write_text("#!/bin/sh\necho 'config: no such device' >&2\nexit 1\n")
    program.chmod(0o755)
    proc = run_three_times(tmp_path, str(program))
    runs = sections(proc.stdout, "RUN")
    for run in ("2", "3"):
        assert "FAILED pq-psk the pq-psk daemon exited at its start: config: no such device" in runs[run], runs[run]
        assert "PQPSK up" not in runs[run] and "UP wg-vpn" in runs[run] and runs[run].splitlines()[-1] == "DONE"
        assert vnf_report.problems(runs[run]) == [], runs[run]
