"""Count the processes one tunnel step starts on the VNF, per kind of session (issue 37).

The hub's step exactly as the charm sends it (``remote.tunnel_step``: the facts guard, the data
plane, the service addresses, the route lists, wg-vpn on the shipped wireguard-go, pq-psk, the
metrics exporter) runs in a fresh network and mount namespace under ``strace -f``, for these
sessions in order:

- ``first``: the hub's first session that applies, with N peers (the device made);
- ``nochange``: the same plan again (a hook that changes nothing on the VNF);
- ``add``: the plan with one more peer (a spoke joins: one ``wg set``);
- ``nochange-after-add``: that plan again.

A process is a fork (clone without CLONE_THREAD, fork, vfork) of the step's tree; the daemons
the step starts (wireguard-go, pq-psk, the exporter) are counted at their start only (their
threads are no processes, and the trace ends when the step does). Programs are counted by the
name they execute. Counts are what this reports; times under load are not claims.

    sudo PYTHONPATH=scripts:charms .venv/bin/python -m testbed.vnfcount --sizes 8,32 [--cpu] [--json FILE]
"""
import argparse
import base64
import collections
import hashlib
import ipaddress
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import yaml

from vpnaas.core import model, relation_data
from vpnaas.core import plan as planning
from vpnaas.vnf import dataplane, remote

HUB_CONFIG = {"ssh-hostname": "10.77.0.5", "ssh-username": "root", "vpn-endpoint-address": "192.168.64.1",
              "vpn-tunnel-address": "10.251.0.1/24", "vpn-service-addresses": "172.17.0.1/32",
              "vpn-service-network": "172.17.0.0/16", "vpn-listen-port": 51820,
              "vpn-implementation": "auto", "vpn-peer-prefixes": ""}

#: In the namespace: the VNF's mounts and management link, then each session's program run under
#: strace until its report ends ("DONE"), the trace kept per session.
OUTER = r"""
set -e
out=$1; shift
mount -t tmpfs tmpfs /etc/wireguard
mkdir -p /run/wireguard /usr/local/lib/vpnaas
mount -t tmpfs tmpfs /run/wireguard
mount -t tmpfs tmpfs /usr/local/lib/vpnaas
for p in $PROGRAMS; do install -m 755 "${p#*=}" "/usr/local/lib/vpnaas/${p%%=*}"; done
# The step keeps a program's digest once the file is PROGRAMS_SETTLED (2) s old (dataplane.sh): wait
# until it is, so that every size's first session records it and the later ones read it.
for p in $PROGRAMS; do
  until [ $(( $(date +%s) - $(stat -c %Z "/usr/local/lib/vpnaas/${p%%=*}") )) -ge 3 ]; do sleep 0.2; done
done
ip link set lo up
ip link add mgmt type veth peer name mgmt-p
ip addr add 10.77.0.5/24 dev mgmt
ip link set mgmt up
ip link add star type veth peer name star-p
ip addr add 192.168.64.1/24 dev star
ip link set star up
export VPNAAS_SSH_CONNECTION="10.77.0.1 40000 10.77.0.5 22"
for s in "$out"/*.session; do
  name=${s%.session}
  mapfile -t args < "$name.args"
  export N=$name
  if [ "$MODE" = cpu ]; then
    # The CPU of the step and of every process it waited for (the daemons it starts are not).
    TIMEFORMAT='%R %U %S'
    { time bash "$s" "${args[@]}" > "$name.out" 2> "$name.err" || echo "EXIT $?" >> "$name.out"; } 2> "$name.cpu"
    continue
  fi
  # The step's shell is strace's child: once it ends, strace is told to let go of the daemons
  # the step started (they run on) and ends too.
  # shellcheck disable=SC2016
  strace -I1 -f -qq --seccomp-bpf -ttt -e trace=execve,clone,clone3,fork,vfork -o "$name.trace" \
    bash -c 'bash "$@" > "$N.out" 2> "$N.err" || echo "EXIT $?" >> "$N.out"; kill -INT "$PPID"' \
    step "$s" "${args[@]}" || true
done
for pid in $(cat /run/wireguard/vpnaas-metrics-exporter.pid /run/wireguard/vpnaas-pq-psk.pid 2>/dev/null); do
  kill "$pid" 2>/dev/null || true
done
ip link del wg-vpn 2>/dev/null || true
"""


def key(i):
    """A distinct, valid public key per peer."""
    return base64.b64encode(hashlib.sha256("vnfcount {}".format(i).encode()).digest()).decode()


def defaults():
    """The wireguard-proxy charm's option defaults (what Juju gives the charm)."""
    path = os.path.join(os.path.dirname(__file__), "..", "..", "charms", "_common", "config.yaml")
    with open(path) as f:
        options = yaml.safe_load(f)["options"]
    return {k: v["default"] for k, v in options.items() if "default" in v}


def hub_plan(n, facts=None):
    relations = {"vpn": [{"s{}/0".format(i): relation_data.encode(
        key(i), "192.168.64.{}".format(i + 1), 51820, ipaddress.ip_interface("10.251.0.{}/24".format(i + 1)),
        [ipaddress.ip_network("172.17.1.{}/32".format(i))])} for i in range(1, n + 1)]}
    plan = planning.build_plan(dict(defaults(), **HUB_CONFIG), [model.TunnelEndpoint("vpn", "provider")], relations,
                               {}, facts)
    assert not plan.errors, plan.errors
    return plan


def programs():
    root = os.path.join(os.path.dirname(__file__), "..", "..", "build", "tools")
    out = {}
    for name in ("wireguard-go", "pq-psk"):
        path = os.path.abspath(os.path.join(root, name))
        with open(path, "rb") as f:
            out[name] = dataplane.Program(name, path, hashlib.sha256(f.read()).hexdigest(), "1")
    return out


_LINE = re.compile(r"^(\d+) +([0-9.]+) (\w+)\((.*)$")
_RESUMED = re.compile(r"^(\d+) +[0-9.]+ <\.\.\. execve resumed>.*= (-?\d+)")


def windows(report):
    """[(start, end, function)] of a timed step's TIMING lines."""
    out = []
    for line in report.splitlines():
        w = line.split(" ")
        if w[0] == "TIMING" and len(w) == 4:
            out.append((float(w[2]), float(w[3]), w[1]))
    return out


def count(trace, report=""):
    """{"processes": n, "programs": {name: n}, "by_function": {function: processes}} of one
    strace -f output (``report``: the step's, timed: forks attributed to its functions)."""
    forks, progs = 0, collections.Counter()
    spans, by = windows(report), collections.Counter()
    pending = {}   # pid -> the program of its execve that strace shows in two lines
    with open(trace) as f:
        for line in f:
            r = _RESUMED.match(line)
            if r:
                if r.group(1) in pending and r.group(2) == "0":
                    progs[pending.pop(r.group(1))] += 1
                continue
            m = _LINE.match(line)
            if not m:
                continue
            call, rest = m.group(3), m.group(4)
            if call in ("clone", "clone3", "fork", "vfork"):
                if "CLONE_THREAD" in rest or rest.rstrip().endswith("<unfinished ...>") and "CLONE_THREAD" in rest:
                    continue
                if re.search(r"= \d+$", rest.strip()) or "<unfinished" in rest:
                    forks += 1
                    t = float(m.group(2))
                    by[next((fn for a, b, fn in spans if a <= t <= b), "(between)")] += 1
            elif call == "execve" and re.search(r"= 0$", rest.strip()):
                progs[os.path.basename(rest.split('"')[1])] += 1
            elif call == "execve" and rest.rstrip().endswith("<unfinished ...>"):
                pending[m.group(1)] = os.path.basename(rest.split('"')[1])
    return {"processes": forks, "execs": sum(progs.values()), "programs": dict(progs.most_common()),
            "by_function": dict(by.most_common())}


def sessions(n, progs):
    """[(name, step)] of the hub with ``n`` peers (its facts learnt first, as the charm does)."""
    first = remote.tunnel_step(hub_plan(n), "", programs=progs)
    return first


def run(sizes, keep=None, cpu=False):
    """{size: {session kind: counts}}; ``cpu``: no strace, the CPU seconds of each session
    instead (the step's shell and every program it waited for)."""
    progs = programs()
    results = {}
    for n in sizes:
        with tempfile.TemporaryDirectory(prefix="vnfcount-") as tmp:
            # the facts: one step without a digest stops after them (as the charm's first contact)
            probe = os.path.join(tmp, "0-facts")
            write(probe, remote.tunnel_step(hub_plan(n), "", programs=progs))
            namespace(tmp, progs, "count")
            facts = remote.parse_report(open(probe + ".out").read()).facts
            digest = facts.digest
            for f in os.listdir(tmp):
                os.unlink(os.path.join(tmp, f))
            order = [("1-first", n), ("2-nochange", n), ("3-add", n + 1), ("4-nochange-after-add", n + 1)]
            for name, k in order:
                step = remote.tunnel_step(hub_plan(k, facts), digest, programs=progs)
                step.timed = True
                write(os.path.join(tmp, name), step)
            t0 = time.monotonic()
            namespace(tmp, progs, "cpu" if cpu else "count")
            res = {}
            for name, k in order:
                path = os.path.join(tmp, name)
                text = open(path + ".out").read()
                obs = remote.parse_report(text)
                assert not obs.facts_changed and not obs.failed, (name, text[-2000:])
                applied = [line for line in text.splitlines() if line.startswith("APPLIED ")]
                if cpu:
                    wall, user, sys_ = (float(x) for x in open(path + ".cpu").read().split()[-3:])
                    res[name.split("-", 1)[1]] = dict(cpu_seconds=round(user + sys_, 3), seconds=wall, peers=k,
                                                      applied=applied)
                else:
                    res[name.split("-", 1)[1]] = dict(count(path + ".trace", text), peers=k, applied=applied)
            res["seconds_all_sessions_under_strace"] = round(time.monotonic() - t0, 2)
            if keep:
                subprocess.run(["cp", "-r", tmp, "{}-{}".format(keep, n)], check=True)
            results[n] = res
    return results


def write(path, step):
    with open(path + ".session", "w") as f:
        f.write(step.program())
    with open(path + ".args", "w") as f:
        f.write("".join(a + "\n" for a in step.args))


def namespace(tmp, progs, mode):
    env = dict(os.environ, MODE=mode, PROGRAMS=" ".join("{}={}".format(k, p.path) for k, p in progs.items()))
    proc = subprocess.run(["unshare", "--net", "--mount", "--propagation", "private", "bash", "-c", OUTER, "ns", tmp],
                          env=env, universal_newlines=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=900)
    if proc.returncode != 0:
        raise SystemExit("namespace failed: " + proc.stderr[-3000:])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="8,32")
    ap.add_argument("--json")
    ap.add_argument("--keep", help="copy each size's traces to <keep>-<size>")
    ap.add_argument("--cpu", action="store_true", help="CPU seconds per session instead of counts (no strace)")
    args = ap.parse_args(argv)
    results = run([int(s) for s in args.sizes.split(",")], args.keep, args.cpu)
    for n, res in results.items():
        for kind, r in res.items():
            if isinstance(r, dict) and args.cpu:
                print("{:>3} peers {:<20} cpu {:.3f} s, {:.3f} s wall | {}".format(
                    n, kind, r["cpu_seconds"], r["seconds"], " ".join(r["applied"])))
            elif isinstance(r, dict):
                top = ", ".join("{} {}".format(k, v) for k, v in list(r["programs"].items())[:8])
                print("{:>3} peers {:<20} processes {:>4} execs {:>4}  {} | {}".format(
                    n, kind, r["processes"], r["execs"], top, " ".join(r["applied"])))
                print("      by function: " + ", ".join("{} {}".format(k, v) for k, v in r["by_function"].items()))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
