"""The demo's pq-psk figures per reference point: the mechanism each tunnel runs (``pq_psk``),
the renewals both ends completed while a probe crossed the tunnel (``pq_psk_renewals``), and the
probe's lost packets (``pq_psk_packets_lost``). The renewal interval is shortened for the window
(``pq-psk-renewal-seconds``, the charms' option) so that at least one renewal falls inside it;
every probe runs at once, one per reference point, so the window is one interval long whatever
the NS's size. The daemon's state is read with its own ``pq-psk status`` on each VNF (public
values only: keys, counters, times)."""
import threading

from testbed.measurement import traffic

PQ_PSK = "/usr/local/lib/vpnaas/pq-psk"
#: The demo's renewal interval (s): the daemon's smallest.
DEMO_RENEWAL = 10


def peer_states(vnf, device):
    """[{field: value}] of ``device``'s peers as ``pq-psk status`` prints them ([] without it)."""
    out = vnf.exec([PQ_PSK, "status"], check=False)
    states = []
    for line in out.stdout.splitlines() if out.returncode == 0 else []:
        words = line.split()
        if len(words) == 21 and words[0] == "peer" and words[1] == device:
            states.append(dict(zip(words[3::2], words[4::2])))
    return states


def _renewals(testbed, rp):
    """(mechanism or None, renewals) of the tunnel, as its initiator's daemon counts them."""
    found = []
    for app in (rp.provider, rp.requirer):
        found += [s for s in peer_states(testbed.vnfs[app], "wg-" + rp.name) if s.get("role") == "initiator"]
    if len(found) != 1:
        return None, 0
    return found[0]["mechanism"], int(found[0]["renewals"])


def classical_reason(testbed, rp, model):
    """Why a tunnel runs classical only: the units' status lines that say so."""
    for unit in model.units():
        _state, message = model.status(unit)
        for part in message.replace("; ", ", ").split(", "):
            if part.startswith(rp.name + ": ") and "classical only" in part:
                return part.split(": ", 1)[1]
    return "no pq-psk daemon state on either VNF"


def measure(testbed, inst, model, progress, renewal=DEMO_RENEWAL):
    """{refpoint: {pq_psk, pq_psk_renewals, pq_psk_packets_lost}} over one window of a probe at
    20 packets/s through each tunnel, long enough for one renewal (1.5 intervals)."""
    apps = sorted({a for rp in inst.refpoints for a in (rp.provider, rp.requirer)})
    for app in apps:
        model.set_config(app, {"pq-psk-renewal-seconds": renewal})
    seconds = int(renewal * 1.5) + 2
    before = {rp.name: _renewals(testbed, rp) for rp in inst.refpoints}
    pings = {}

    def probe(rp):
        a = testbed.vnfs[rp.provider]
        pings[rp.name] = traffic.ping(a, rp.service[rp.provider], rp.service[rp.requirer],
                                      count=seconds * 20, interval=0.05)
    progress("pq-psk: renewal every {} s; a probe through every tunnel for {} s".format(renewal, seconds))
    threads = [threading.Thread(target=probe, args=(rp,)) for rp in inst.refpoints]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out = {}
    for rp in inst.refpoints:
        mech, after = _renewals(testbed, rp)
        ping = pings.get(rp.name) or {}
        lost = ping.get("transmitted", 0) - ping.get("received", 0) if ping else None
        out[rp.name] = {"pq_psk": mech if mech else "classical ({})".format(classical_reason(testbed, rp, model)),
                        "pq_psk_renewals": max(0, after - before[rp.name][1]) if mech else 0,
                        "pq_psk_packets_lost": lost}
        progress("pq-psk {}: {} renewal(s) of {} during the probe, {} of {} packets lost".format(
            rp.name, out[rp.name]["pq_psk_renewals"], out[rp.name]["pq_psk"], lost, ping.get("transmitted")))
    return out
