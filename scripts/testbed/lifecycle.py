"""`sudo make lifecycle`: the EPS's tunnels through what operators do to them for months.

On the local testbed (VIM and VCA emulation, ``demo.bring_up``), with a continuous probe at 100
packets a second across every tunnel an operation touches (``probe.py``), each operation is run
the way OSM and Juju run it, and measured:

  rotate-keys-previous-peers
                  the MME alone upgraded to this checkout's build, then its rotate-keys action:
                  its peers run the previous revision (no make-before-break), so the key is
                  rotated in place and they follow it as before
  upgrade-charm   every charm replaced by this checkout's build from the previous revision's
                  (``--upgrade-from``, default: charms/ as it was before its last change),
                  through ``osm ns-update --updatetype CHANGE_VNFPKG`` as LCM 19 runs it
                  (lcm_upgrade.py) and ``juju upgrade-charm`` where LCM 19 upgrades nothing (the
                  SPGW-U): upgrade-charm then config-changed; no WireGuard device may be
                  re-created (interface index unchanged)
  rotate-keys     the MME's rotate-keys action on all its devices, make-before-break: its peers
                  follow through temporary devices; nothing may be lost
  commit-failure  the eNB rotates its keys while the SPGW-U's next relation-changed commit does
                  not reach the controller: Juju drops its publication and runs it again; it
                  must be published without update-status
  agent-restart   the same with the SPGW-U's unit agent restarted in the middle of that hook
  heal            ``osm ns-heal --run-day1`` of the SPGW-C as LCM 19 runs it (lifecycle_heal.py):
                  the VM re-created (new disk, new host key), the same unit kept, its SSH key
                  injected again, day-1 run again (it fails mapping config with the bundle's
                  descriptors); then the operator's documented step where no day-1 reached the
                  charm; its peers follow on relation-changed, without update-status
  heal-without-day1
                  the same for the SPGW-U (a VDU-level execution environment) without day-1
  scale-out       a second SPGW-U instance: LCM's scale-out (new VM with fixed IPs + 1, new
                  application, its day-1 with <OSM> count_index 1, no relation), then the deploy
                  tool's peering (deploy/scale.py) with the SPGW-C and the eNB; converged when
                  both new tunnels have handshaken, from the end of the new charm's day-1
  scale-in        that instance removed: remove-peer on the hubs, then LCM's scale-in; nothing
                  of it may stay on the hubs (peers, routes) or in the model
  terminate       every application removed: nothing of the tunnels may stay on any VNF and
                  nothing in relation data

After agent-restart run the faults of Juju's unit agent and a downgrade in the middle of a
rotation (lifecycle_faults.py: hook-error-retry, downgrade-mid-rotation, action-interrupted).

Writes ``build/lifecycle/report.json``: ``{"operations": [{"name", "seconds_to_converge",
"packets_lost", "tunnels_up_after", "leftovers", ...}]}`` and prints a table.
"""
import json
import os
import shutil
import subprocess
import sys
import time

from bundle import BUILD_DIR, build_charms, descriptors
from testbed import cli, demo, lifecycle_faults, lifecycle_heal, lifecycle_scale
from testbed.emulators import lcm, lcm_upgrade, vim
from testbed.lifecycle_base import (  # noqa: F401 - the helpers' home; kept importable from here
    CONVERGE_TIMEOUT,
    Context,
    LifecycleError,
    device_key,
    interface_indexes,
    leftovers,
    peer_keys_published,
    start_probes,
    stop_probes,
    strict_rp_filter,
    temporary_devices,
    tunnel_ok,
    wait_converged,
)
from testbed.lifecycle_base import record as _record
from testbed.lifecycle_base import rotate as _rotate

OUT_DIR = os.path.join(BUILD_DIR, "lifecycle")
OPERATIONS = ("rotate-keys-previous-peers", "upgrade-charm", "rotate-keys", "commit-failure", "agent-restart", "heal",
              "heal-without-day1", "scale-out", "scale-in", "terminate")
#: The operations that need the previous revision's charms (built from a git worktree).
NEEDS_PREVIOUS = ("rotate-keys-previous-peers", "upgrade-charm")
REPO_DIR = vim.REPO_DIR


def op_upgrade_charm(ctx):
    """``osm ns-update <ns> --updatetype CHANGE_VNFPKG`` of every VNF as LCM 19 runs it
    (lcm_upgrade): a new package revision carrying this checkout's build of its charm. Where LCM 19
    upgrades nothing (the SPGW-U: its VDU-level entry makes update() fail with a TypeError), the
    charm is replaced as N2VC would have replaced it, ``juju upgrade-charm`` on the VCA (the
    operator's path: docs/lifecycle.md), so that every unit runs this build afterwards;
    ``upgraded_by`` names the path each VNF took, ``lcm19`` LCM's outcome."""
    rps = ctx.refpoints()
    before = interface_indexes(ctx.tb, ctx.inst)
    probes = start_probes(ctx.tb, rps)
    started = time.monotonic()
    current = build_charms.output_dir("local")
    lcm19, upgraded_by = {}, {}
    for spec in ctx.inst.vnfs:
        new_dir = os.path.join(current, os.path.basename(spec.charm_dir))
        charm = descriptors.charm_of(spec.vnfd)
        report = lcm_upgrade.change_vnfpkg(ctx.model, spec.member, {spec.count_index: spec.name},
                                           lcm_upgrade.Package(spec.vnfd, 1, {charm: spec.charm_dir}),
                                           lcm_upgrade.Package(spec.vnfd, 2, {charm: new_dir}), ctx.progress)
        lcm19[spec.name] = report.detail if report.state == "FAILED" else report.state
        if report.state == "COMPLETED" and (spec.name, new_dir) in report.upgraded:
            upgraded_by[spec.name] = "osm ns-update (LCM 19)"
        elif report.state == "COMPLETED" and lcm_upgrade.artifact_hash(spec.charm_dir) == lcm_upgrade.artifact_hash(
                new_dir):
            upgraded_by[spec.name] = "nothing to upgrade (LCM 19: the charm is this revision already)"
        else:
            ctx.model.upgrade_charm(spec.name, new_dir)
            upgraded_by[spec.name] = "juju upgrade-charm (LCM 19 upgraded nothing: {})".format(lcm19[spec.name])
        spec.charm_dir = new_dir        # a later heal or scale-out runs this revision too
        ctx.progress("upgrade-charm: {} now runs this checkout's charm ({})".format(spec.name, upgraded_by[spec.name]))
    converged = wait_converged(ctx.tb, rps, since=started)
    results = stop_probes(probes)
    after = interface_indexes(ctx.tb, ctx.inst)
    recreated = sorted("{} {}".format(*k) for k in before if before[k] != after.get(k))
    return _record("upgrade-charm", started, converged, results, ctx.tb, rps, devices_recreated=recreated,
                   lcm19=lcm19, upgraded_by=upgraded_by)


def op_rotate_keys(ctx):
    return _rotate(ctx, "rotate-keys", "mme")


def op_rotate_keys_previous_peers(ctx):
    """The MME alone on this checkout's charm, its peers on the previous revision's."""
    spec = ctx.spec("mme")
    spec.charm_dir = os.path.join(build_charms.output_dir("local"), os.path.basename(spec.charm_dir))
    ctx.model.upgrade_charm("mme", spec.charm_dir)
    ctx.model.settle()
    if wait_converged(ctx.tb, ctx.refpoints("mme")) is None:
        raise LifecycleError("the MME's tunnels did not come back after its upgrade")
    return _rotate(ctx, "rotate-keys-previous-peers", "mme")


def op_commit_failure(ctx):
    return _rotate(ctx, "commit-failure", "enb",
                   lambda model: model.faults.fail_commits("spgwu/0", 1, hook="relation-changed"),
                   lambda c: peer_keys_published(c, "spgwu", "enb", "s1u"))


def op_agent_restart(ctx):
    return _rotate(ctx, "agent-restart", "enb",
                   lambda model: model.faults.kill_hooks("spgwu/0", tool="relation-set"),
                   lambda c: peer_keys_published(c, "spgwu", "enb", "s1u"))


def op_terminate(ctx):
    apps = [s.name for s in ctx.inst.vnfs]
    started = time.monotonic()
    for app in apps:
        ctx.model.remove_application(app)
        ctx.progress("terminate: {} removed".format(app))
    left = leftovers(ctx.tb, ctx.model, apps)
    return _record("terminate", started, time.monotonic() - started, [], ctx.tb, [], leftovers=left)


OPERATION_FUNCTIONS = {"rotate-keys-previous-peers": op_rotate_keys_previous_peers,
                       "upgrade-charm": op_upgrade_charm, "rotate-keys": op_rotate_keys,
                       "commit-failure": op_commit_failure, "agent-restart": op_agent_restart,
                       "heal": lifecycle_heal.op_heal, "heal-without-day1": lifecycle_heal.op_heal_without_day1,
                       "scale-out": lifecycle_scale.op_scale_out, "scale-in": lifecycle_scale.op_scale_in,
                       "terminate": op_terminate}


# ---------------------------------------------------------------------- the previous revision
def previous_revision():
    """The charms as they were before their last change: the parent of the newest commit that
    changed charms/ (what an operator running the previous revision upgrades from). Along the
    first parents only: a merged branch's own commits were never a revision anyone ran."""
    out = subprocess.run(["git", "-C", REPO_DIR, "log", "--first-parent", "-n", "1", "--format=%H", "--", "charms"],
                         stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout.split()
    if not out:
        raise LifecycleError("no revision of charms/ in this checkout's history")
    return out[0] + "^"


def build_previous(ref, work):
    """Build the charms of ``ref`` (a detached worktree of this checkout) for this machine;
    returns their directory."""
    tree = os.path.join(work, "previous")
    if os.path.exists(tree):
        subprocess.run(["git", "-C", REPO_DIR, "worktree", "remove", "--force", tree], check=False)
        shutil.rmtree(tree, ignore_errors=True)
    subprocess.run(["git", "-C", REPO_DIR, "worktree", "add", "--detach", "-q", tree, ref], check=True)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(tree, "scripts"), os.path.join(tree, "charms")]))
    subprocess.run([sys.executable, "-m", "bundle.build_charms", "--base", "local"], cwd=tree, env=env, check=True,
                   stdout=subprocess.DEVNULL)
    return os.path.join(tree, "build", "charms-local")


def remove_previous(work):
    tree = os.path.join(work, "previous")
    subprocess.run(["git", "-C", REPO_DIR, "worktree", "remove", "--force", tree], check=False,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    shutil.rmtree(tree, ignore_errors=True)


# lifecycle_faults' operations in the tables above.
OPERATIONS, NEEDS_PREVIOUS = lifecycle_faults.register(OPERATIONS, NEEDS_PREVIOUS, OPERATION_FUNCTIONS)


# ---------------------------------------------------------------------- a run
def run(out_dir, operations, progress, upgrade_from=None):
    out_dir = os.path.abspath(out_dir)     # the previous revision is built with its own folder as cwd
    os.makedirs(out_dir, exist_ok=True)
    charms_dir = ref = None
    if set(NEEDS_PREVIOUS) & set(operations):
        ref = upgrade_from or previous_revision()
        progress("building the charms of {} (the revision upgraded from)".format(ref))
        try:
            charms_dir = build_previous(ref, out_dir)
        except subprocess.CalledProcessError:
            remove_previous(out_dir)
            raise
    instances = demo.load_instances("eps_wg", charms_dir)
    tb = vim.Testbed(os.path.join(out_dir, "tb"), userspace_wireguard=vim.userspace_wireguard())
    report = {"operations": [], "upgrade_from": ref}
    try:
        tb.create()
        results = demo.bring_up(tb, instances, out_dir, progress)["eps_wg"]
        strict_rp_filter(tb)
        ctx = Context(tb, results, out_dir, progress, charms_dir)
        if wait_converged(tb, ctx.refpoints()) is None:
            raise LifecycleError("the EPS's tunnels did not come up")
        for name in operations:
            progress("{} ...".format(name))
            rec = OPERATION_FUNCTIONS[name](ctx)
            report["operations"].append(rec)
            progress("{}: converged in {} s, {} packet(s) lost of {}, {}/{} tunnels up".format(
                name, rec["seconds_to_converge"], rec["packets_lost"], rec["packets_sent"], rec["tunnels_up_after"],
                rec["tunnels"]))
        return report
    finally:
        tb.teardown()
        if charms_dir:
            remove_previous(out_dir)
        with open(os.path.join(out_dir, "report.json"), "w") as f:
            json.dump(report, f, indent=1, sort_keys=True)


def table(report):
    rows = ["{:15} {:>10} {:>8} {:>9} {}".format("operation", "converge s", "lost", "tunnels", "leftovers")]
    for rec in report["operations"]:
        conv = "{:.2f}".format(rec["seconds_to_converge"]) if rec["seconds_to_converge"] is not None else "NO"
        rows.append("{:15} {:>10} {:>8} {:>9} {}".format(
            rec["name"], conv, "{}/{}".format(rec["packets_lost"], rec["packets_sent"]),
            "{}/{}".format(rec["tunnels_up_after"], rec["tunnels"]), len(rec["leftovers"]) or "none"))
    return "\n".join(rows)


def main(argv=None):
    parser = cli.OneLineParser(prog="testbed.lifecycle", description="Operate the testbed EPS's tunnels and measure.")
    parser.add_argument("--only", action="append", choices=OPERATIONS, help="run only these operations (repeatable)")
    parser.add_argument("--upgrade-from", help="git ref whose charms the upgrade starts from")
    parser.add_argument("--out", default=OUT_DIR)
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        print("make lifecycle needs root (network namespaces): run `sudo make lifecycle`", file=sys.stderr)
        return 2
    progress = demo.Progress()
    vim.cleanup_stale()
    operations = [op for op in OPERATIONS if not args.only or op in args.only]
    try:
        report = run(args.out, operations, progress, args.upgrade_from)
    except (LifecycleError, lcm.InstantiationFailed, vim.VimError, subprocess.CalledProcessError) as e:
        print("lifecycle failed: {}".format(e), file=sys.stderr)
        return 1
    print(table(report))
    print("report: {}".format(os.path.relpath(os.path.join(args.out, "report.json"))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
