"""The spoke-join probe: do the spokes already up lose a packet while more spokes join the hub?

On a converged star (convergence.Star), spoke ``s1`` pings the hub's service address through its
tunnel at 1,000 echoes a second (probe.py: every sequence number up to the last reply that got no
reply is lost) while ``n`` more spokes are created, deployed, related to the hub and configured
as OSM does (lcm.configure), until every new tunnel has a handshake. Each new spoke changes the
hub's device: the hub's step must add that peer without touching the others (vnf/tunnels.sh,
device_sync); a whole ``wg syncconf`` re-inserts every peer's allowed IPs, and an echo of s1 in
between is lost.
"""
import concurrent.futures
import time

from testbed import convergence, lcm, probe

#: Seconds between the probe's echoes (root may ping this fast).
INTERVAL = 0.001


def _address(prefix):
    return prefix.split("/")[0]


def join(star, n, interval=INTERVAL, progress=None):
    """Add ``n`` spokes to the converged ``star`` while s1 pings the hub; returns {"joined",
    "seconds" (from the first new VNF to the last new handshake), "probe": probe.Probe.stop()'s
    counts, "lost"}."""
    tb, model, k = star.tb, star.model, star.k
    specs = [convergence.spoke_spec(star.runner.charms_dir, i) for i in range(k + 1, k + n + 1)]
    watch = probe.Probe(tb.vnfs["s1"], _address(convergence.SPOKE_SVC.format(1)), _address(convergence.HUB_SVC),
                        "s1 -> hub", interval).start()
    try:
        deadline = time.monotonic() + 10
        while not watch.answering():
            if time.monotonic() > deadline:
                raise convergence.ConvergenceError("the probe on s1 gets no reply from the hub")
            time.sleep(0.05)
        if progress:
            progress("spoke join: {} spokes join a hub of {} while s1 pings the hub".format(n, k))
        t0 = time.monotonic()
        for spec in specs:
            tb.add_vnf(spec.name, spec.links, spec.env)
            model.deploy(spec.name, spec.charm_dir, wait=False)
        for spec in specs:
            model.relate("hub:vpn", "{}:vpn-peer".format(spec.name), wait=False)
        model.settle()
        report = lcm.Report()
        if model.jobs.parallel == 1:       # a serial VCA runs everything in this thread (the e2e tests)
            for spec in specs:
                lcm.configure(tb, model, spec, tb.vnfs[spec.name], report)
        else:                              # one LCM task per VNF, as OSM's
            with concurrent.futures.ThreadPoolExecutor(max_workers=n) as pool:
                futures = [pool.submit(lcm.configure, tb, model, spec, tb.vnfs[spec.name], report) for spec in specs]
            for future in futures:
                future.result()
        convergence.wait_handshakes([(tb.vnfs["hub"], "wg-vpn", k + n)]
                                    + [(tb.vnfs[s.name], "wg-vpn-peer", 1) for s in specs])
        seconds = time.monotonic() - t0
        model.settle()
        time.sleep(1.0)     # the last echoes' replies
    finally:
        counts = watch.stop()
    star.k = k + n
    return {"joined": n, "existing": k, "seconds": seconds, "probe": counts, "lost": counts["lost"],
            "interval": interval}
