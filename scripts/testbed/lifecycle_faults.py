"""`make lifecycle`'s faults of Juju 2.9's unit agent and a downgrade mid-rotation (lifecycle.py
runs them after agent-restart; ``register`` adds them to its tables):

  hook-error-retry  the eNB rotates its keys while the SPGW-U's relation-changed fails twice (a
                    hook tool answers an error and the charm's hook exits 1): Juju retries it
                    after 5 s, then 10 s (the uniter's retry timer; testbed knob
                    VPNAAS_VCA_HOOK_RETRY_MIN), and meanwhile runs the SPGW-U's actions (a
                    get-ssh-public-key, asked the moment the hook failed: before the retry, even
                    when its timer fired while other units' hooks ran) but none of its other hooks
  downgrade-mid-rotation
                    the MME rotates its keys and the HSS, right after it followed, is downgraded
                    to the previous revision (``juju upgrade-charm`` to it: upgrade-charm, then
                    config-changed): the rotation finishes with the previous revision following
                    it, nothing lost, no temporary device left; the HSS is upgraded back after
  action-interrupted
                    the MME's unit agent restarts while rotate-keys runs, after its step on the
                    VNF: Juju fails the action ("action terminated") and never runs it again, and
                    neither does OSM; the operator runs it again, which finishes the rotation.
                    A measurement (``run``) interrupted the same way is run again. Then a second
                    SPGW-U instance is scaled out and in (lifecycle_scale) with the hubs'
                    add-peer and remove-peer and the instance's tunnel-status interrupted the
                    same way: ``deploy scale`` runs each step again itself

Every one converges without update-status.
"""
import os
import time

from testbed import lifecycle_base as lc
from testbed import lifecycle_scale
from testbed.emulators import vca
from vpnaas.charm.base import RECONCILE_SESSION

OPERATIONS = ("hook-error-retry", "downgrade-mid-rotation", "action-interrupted")
#: The operation after which these run (the EPS up, every charm this checkout's).
AFTER = "agent-restart"


def register(operations, needs_previous, functions):
    """These operations in lifecycle.py's tables: their functions in ``functions``, their names
    in the run order after AFTER; returns (operations, needs_previous)."""
    functions.update({"hook-error-retry": op_hook_error_retry, "downgrade-mid-rotation": op_downgrade_mid_rotation,
                      "action-interrupted": op_action_interrupted})
    at = operations.index(AFTER) + 1 if AFTER in operations else len(operations)
    return operations[:at] + OPERATIONS + operations[at:], needs_previous + ("downgrade-mid-rotation",)


def _current(ctx, *apps):
    """``apps`` on this checkout's charms (a run of some operations only starts on the previous
    revision's when one of them needs it)."""
    lifecycle_scale.current_charms(ctx, list(apps))


def op_hook_error_retry(ctx):
    model = ctx.model
    _current(ctx, "enb", "spgwu")
    unit = "spgwu/0"
    hooks, errors = len(model.hook_log), len(model.hook_errors)
    asked = []

    def fault(m):
        m.faults.fail_hooks(unit, 2, hook="relation-changed", tool="relation-set")
        # The moment it first fails, an action is asked for on the unit in error (one that does not
        # reconcile: tunnel-status would do the failed hook's work and publish, and the retry would
        # then find nothing to do).
        m.when(unit, "relation-changed", lambda: asked.append(m.queue_action(unit, "get-ssh-public-key")),
               failed=True)
    rec = lc.rotate(ctx, "hook-error-retry", "enb", fault, lambda c: lc.peer_keys_published(c, "spgwu", "enb", "s1u"))
    failed = model.hook_errors[errors:]
    runs = [r for r in model.hook_log[hooks:] if r.unit == unit]

    def next_run(error):
        return next(r for r in runs if "hooks/" + error.hook == r.hook and r.started > error.at)
    # The retry timers the unit's failures started (faults.HookRetry.given), in order.
    timers = [seconds for u, seconds in model.hook_retry.given if u == unit][-len(failed):] if failed else []

    def slot_free(i):
        """When the retry of failure ``i`` could start: its timer fired (it starts as the failure
        is recorded, or once the unit's actions pending then have run: ``scheduler``
        ``timers_started``) and every run that ended before the retry had ended. A bounded VCA
        (the e2e's ``--parallel 1``) runs the retry after another unit's hook, however long that
        took on a loaded machine (13.5 s once, against a 5 s timer)."""
        retry = next_run(failed[i])
        started = next(t for u, t in model.jobs.timers_started if u == unit and t >= failed[i].at)
        return max([started + timers[i]] +
                   [r.ended for r in model.hook_log[hooks:] if r is not retry and r.ended <= retry.started])
    first = failed[0] if failed else None
    rec.update(hook_errors=["{} {}".format(e.hook, e.why) for e in failed],
               retry_delays=[round(next_run(e).started - e.at, 2) for e in failed],
               retry_timers=[round(t, 3) for t in timers],
               retry_late_after_slot_free=[round(next_run(e).started - slot_free(i), 2) for i, e in enumerate(failed)],
               retry_minimum=model.hook_retry.minimum,
               action_during_error=asked[0].result.status if asked and asked[0].done else None,
               ran_while_in_error=[r.hook for r in runs if first and first.at < r.started < next_run(first).started],
               unit_runs=[[r.hook, round(r.started - runs[0].started, 2), round(r.ended - runs[0].started, 2),
                           "failed" if any(0 <= e.at - r.ended < 0.5 for e in failed) else "ok",
                           sum(1 for line in r.log if line.startswith(RECONCILE_SESSION))] for r in runs])
    return rec


def op_downgrade_mid_rotation(ctx):
    """The HSS downgraded to the previous revision right after it followed the MME's rotation."""
    model, spec = ctx.model, ctx.spec("hss")
    _current(ctx, "mme", "hss", "spgwc", "enb")
    current = spec.charm_dir
    previous = os.path.join(ctx.previous_charms, os.path.basename(current))
    hooks = len(model.hook_log)
    downgraded = []

    def fault(m):
        def downgrade():
            m.upgrade_charm("hss", previous, wait=False)
            downgraded.append(len(m.hook_log))
        m.when("hss/0", "relation-changed", downgrade, failed=False)
    rec = lc.rotate(ctx, "downgrade-mid-rotation", "mme", fault)
    after = [r.hook for r in model.hook_log[downgraded[0]:] if r.unit == "hss/0"] if downgraded else []
    rec.update(downgraded="hss/0 to the previous revision's charm" if downgraded else None,
               hss_hooks_after_downgrade=after,
               hss_hooks_before_downgrade=[r.hook for r in model.hook_log[hooks:downgraded[0] if downgraded else None]
                                           if r.unit == "hss/0"])
    # Back to this checkout's charm for the operations after this one.
    model.upgrade_charm("hss", current)
    rec["upgraded_back"] = lc.wait_converged(ctx.tb, ctx.refpoints("hss")) is not None
    return rec


def _interrupted_then_again(ctx, unit, action, params, meanwhile=lambda: None, tool="action-set"):
    """``action`` on ``unit`` with its unit agent restarted at its ``tool`` call (the step on the
    VNF done, nothing of it committed): failed, and run again by the operator after
    ``meanwhile()``. Returns the second result."""
    ctx.model.faults.interrupt_actions(unit, action, tool=tool)
    first = ctx.model.run_action(unit, action, params, wait=False)
    if (first.status, first.message) != ("failed", vca.INTERRUPTED):
        raise lc.LifecycleError("{} on {} was not interrupted: {} {}".format(action, unit, first.status, first.message))
    ctx.model.settle()
    meanwhile()
    again = ctx.model.run_action(unit, action, params, wait=False)
    if again.status != "completed":
        raise lc.LifecycleError("{} on {} run again failed: {}".format(action, unit, again.message))
    return again


def op_action_interrupted(ctx):
    model, tb = ctx.model, ctx.tb
    _current(ctx, "mme", "hss", "spgwc", "enb")
    rps = ctx.refpoints("mme")
    apps = sorted({"mme"} | {rp.provider for rp in rps} | {rp.requirer for rp in rps})
    old = {rp.name: lc.device_key(tb.vnfs["mme"], "wg-" + rp.name) for rp in rps}
    hooks, injected = len(model.hook_log), model.faults.injected["action-interrupted"]
    probes = lc.start_probes(tb, rps)
    started = time.monotonic()
    events = []

    def event(text):
        events.append([round(time.monotonic() - started, 2), text])
    left = []
    again = _interrupted_then_again(ctx, "mme/0", "rotate-keys", {},
                                    lambda: left.extend(lc.temporary_devices(tb, apps)))
    event("rotate-keys interrupted, then run again")
    model.settle()

    def rotated():
        return (all(lc.device_key(tb.vnfs["mme"], "wg-" + rp.name) != old[rp.name] for rp in rps)
                and not lc.temporary_devices(tb, apps))
    converged = lc.wait_converged(tb, rps, since=started, extra=rotated)
    event("rotation converged")
    results = lc.stop_probes(probes)
    hss = next(rp for rp in rps if "hss" in (rp.provider, rp.requirer))
    measured = _interrupted_then_again(ctx, "mme/0", "run", {
        "command": "ping -n -q -c 3 -i 0.2 -I {} {}".format(hss.service["mme"], hss.service["hss"])})
    sc = lifecycle_scale.scaler(ctx)
    k = max(sc.vnfm.instances(lifecycle_scale.SCALED)) + 1
    for hub in sorted(set(sc.spec.hubs.values())):
        model.faults.interrupt_actions(hub + "/0", "add-peer")
    model.faults.interrupt_actions("{}-z{}/0".format(lifecycle_scale.SCALED, k), "tunnel-status")
    event("run interrupted, then run again; scale-out")
    out = lifecycle_scale.op_scale_out(ctx)
    event("scale-out done; scale-in")
    model.faults.interrupt_actions(sc.spec.hubs["sxab"] + "/0", "remove-peer")
    back = lifecycle_scale.op_scale_in(ctx)
    event("scale-in done")
    update_status = sum(1 for r in model.hook_log[hooks:] if r.hook == "hooks/update-status")
    for part, part_results in (("rotation", results), ("scale-out", out["probes"]), ("scale-in", back["probes"])):
        for r in part_results:
            r["part"] = part      # the labels repeat between the parts
    rec = lc.record("action-interrupted", started, converged, results + out["probes"] + back["probes"], tb, rps,
                     actions_interrupted=model.faults.injected["action-interrupted"] - injected,
                     rotate_keys_run_again=again.status, rotation=again.results.get("rotation-wg-" + rps[0].name, ""),
                     left_by_the_interrupted_action=left,
                     measurement_run_again=measured.status, measurement_return_code=measured.results.get("return-code"),
                     temporary_devices_after=lc.temporary_devices(tb, apps), update_status_runs=update_status,
                     events=events,
                     # Every hook and action of the operation, to place a loss (its probes' gaps).
                     hooks=[[round(r.started - started, 2), round(r.ended - started, 2), r.unit, r.hook]
                            for r in model.hook_log[hooks:]],
                     scale_out={key: out.get(key) for key in ("instance", "seconds_to_converge", "tunnels_up_after",
                                                              "tunnels", "packets_lost", "seconds_total")},
                     scale_in={key: back.get(key) for key in ("instance", "seconds_to_converge", "leftovers",
                                                              "packets_lost", "seconds_total")},
                     note="seconds_to_converge: the rotation, from the interrupted rotate-keys to every tunnel on "
                          "the new keys; scale_out/scale_in: their own figures (lifecycle_scale)")
    return rec
