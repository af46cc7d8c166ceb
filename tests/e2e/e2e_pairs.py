"""Two VNFs joined by one link, each with the generic wireguard-proxy charm (issue: VPNaaS core)."""
from testbed.emulators import lcm
from testbed.pair import A_ADDR, A_SVC, B_ADDR, B_SVC, CIDR, LINK, specs  # noqa: F401 (used by the tests)


def bring_up(testbed, model, charms_dir, relate_first=True):
    a, b = specs(charms_dir)
    if relate_first:
        return lcm.instantiate(testbed, model, {LINK: CIDR}, [a, b], [("a:vpn", "b:vpn-peer")])
    # Config before relations: OSM never does this, but a mature charm must not care.
    report = lcm.instantiate(testbed, model, {LINK: CIDR}, [a, b], [])
    model.relate("a:vpn", "b:vpn-peer")
    return report


def handshakes(vnf, device):
    out = vnf.wg_show(device, "latest-handshakes").split()
    return [int(x) for x in out[1::2]]


def ping(vnf, source, destination, count=3, deadline=20):
    """``count`` echo replies within ``deadline`` seconds (exit 0), else exit 1. The first packet
    to a peer the charm has just (re)configured starts a handshake; WireGuard queues the packets
    meanwhile, and under CPU starvation (another run's iperf3 on the same two cores) that
    handshake has taken more than 2 s. What the callers assert is reachability, not how fast a
    handshake completes (the bench measures that), so a deadline, not a per-reply wait."""
    return vnf.exec(["ping", "-n", "-q", "-c", str(count), "-i", "0.2", "-w", str(deadline), "-I", source,
                     destination], check=False)
