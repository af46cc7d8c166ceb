"""`make lifecycle`'s heal operations: a VNF healed as OSM 19's LCM heals it (``lcm_heal``), and
what brings its tunnels back.

  heal               ``osm ns-heal <ns> --vnf spgwc --run-day1``: the SPGW-C (a VNF-level
                     execution environment). LCM re-creates the VM, keeps the unit, re-injects
                     its SSH key and runs the day-1 primitives again -- with the bundle's
                     descriptors the heal fails mapping ``config`` (heal passes no
                     additionalParams), and nothing reaches the charm after the key injection
  heal-without-day1  ``osm ns-heal <ns> --vnf spgwu``: the SPGW-U (a VDU-level execution
                     environment), no day-1: the key injection is the last thing LCM does

Where no day-1 reached the charm after the key injection, the operator's documented step follows
(``DOCUMENTED_STEP``, one action on the healed unit, as `osm ns-action` runs it): the charm's
reconcile at its end pins the new VM's host key (generate-ssh-key announced it), makes new
WireGuard keys there and publishes them; the peers follow on relation-changed. No update-status
is run (``update_status_runs`` counts them: 0). Converged when every tunnel of the healed VNF is
up with its current keys, measured from the end of LCM's operation.
"""
import time

from testbed import demo
from testbed.emulators import lcm_heal
from testbed.lifecycle_base import record, start_probes, stop_probes, wait_converged

#: The one action the docs give for a heal after which OSM ran nothing on the unit (no day-1, or a
#: day-1 that failed): any action ends with a reconcile; this one changes nothing on a VNF that
#: is already right and answers with the tunnels' state (docs/lifecycle.md, "Heal").
DOCUMENTED_STEP = "tunnel-status"


def op_heal(ctx):
    return _heal(ctx, "heal", "spgwc", run_day1=True)


def op_heal_without_day1(ctx):
    return _heal(ctx, "heal-without-day1", "spgwu", run_day1=False)


def _heal(ctx, name, app, run_day1):
    rps = ctx.refpoints(app)
    others = [rp for rp in ctx.refpoints() if rp not in rps]
    probes = start_probes(ctx.tb, others + rps)
    hooks, relations = len(ctx.model.hook_log), _relations(ctx.model)
    started = time.monotonic()
    report = lcm_heal.heal(ctx.tb, ctx.model, [ctx.spec(app)], run_day1=run_day1, progress=ctx.progress,
                           before_primitives=demo.prepare_standin)
    ctx.progress("{}: LCM {} in {:.1f} s{}".format(name, report.state, report.config_done_at - started,
                                                    ": " + report.detail if report.errors else ""))
    day1_reached_the_charm = any(prim == "config" for _app, prim in report.day1)
    step = None
    if not day1_reached_the_charm:
        step = {"action": DOCUMENTED_STEP, "unit": app + "/0"}
        result = ctx.model.run_action(app + "/0", DOCUMENTED_STEP, {}, wait=False)
        step["status"] = result.status
        ctx.progress("{}: the operator's step: {} on {}: {}".format(name, DOCUMENTED_STEP, app, result.status))
    ctx.model.settle()      # the peers' relation-changed; never update-status
    converged = wait_converged(ctx.tb, rps, since=report.config_done_at)
    results = stop_probes(probes)
    ran = ctx.model.hook_log[hooks:]
    unaffected = [r for r in results if r["label"] not in {rp.name for rp in rps}]
    return record(name, started, converged, results, ctx.tb, ctx.refpoints(),
                  lcm_state=report.state, lcm_detail=report.detail, run_day1=run_day1,
                  seconds_lcm=round(report.config_done_at - started, 3),
                  healed=["{} ({}, count {})".format(a, "VDU " + v if v else "VNF-level", k)
                          for a, v, k in report.healed],
                  day1_run=["{} {}".format(a, p) for a, p in report.day1], operator_step=step,
                  update_status_runs=sum(1 for h in ran if h.hook == "hooks/update-status"),
                  relations_added=sorted(_relations(ctx.model) - relations), hooks_run=len(ran),
                  packets_lost_on_other_tunnels=sum(r["lost"] for r in unaffected),
                  unit_status=" ".join(ctx.model.status(app + "/0")),
                  note="seconds_to_converge: from the end of LCM's heal operation; the healed VNF's own "
                       "tunnels are down while its VM is re-created")


def _relations(model):
    """The ids of the model's relations (a relation added again gets a new one): LCM 19's heal adds none."""
    with model._lock:
        return {rid for rid, rel in model._state["relations"].items() if not rel.get("broken")}
