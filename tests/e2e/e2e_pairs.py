"""Two VNFs joined by one link, each with the generic wireguard-proxy charm (issue: VPNaaS core)."""
from testbed import lcm
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


def ping(vnf, source, destination, count=3):
    return vnf.exec(["ping", "-n", "-q", "-c", str(count), "-i", "0.2", "-W", "2", "-I", source, destination],
                    check=False)
