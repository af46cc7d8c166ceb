"""The UE in the testbed: a stand-in, and reported as one.

The real UE (OAI's lte-uesoftmodem or nr-uesoftmodem, built by the eNB's or the gNB's
oai-install) cannot exist here: the OAI builds need the internet and are SKIPPED. What can run is
the eNB's (gNB's) charm's own code:
1. its real ``ue-attach`` action, which must refuse with its own message (no lte-uesoftmodem,
   nr-uesoftmodem); an attach is never claimed;
2. its real ``ue-iperf`` action (ping and iperf3 -J from the UE's address, the charm parsing the
   result), from a stand-in "UE interface": a veth device named like OAI's (oaitun_ue1) holding
   the RAN's own S1-U (N3) service address, to an iperf3 server on the gateway's S1-U (N3) service
   address. That path is the RAN's end of S1-U (N3) through wg-s1u (wg-n3), or the plain link in
   the NS without WireGuard, to the SPGW-U (UPF) -- no radio, no GTP-U, no SGi or N6 -- and the
   report says so.
The stand-in interface is removed again afterwards.
"""
import subprocess

import measure_parse

from testbed.measurement import traffic
from vpnaas.core import registry

LABEL = "stand-in (no OAI build here)"
UE_IF = "oaitun_ue1"  # the name the eNB charm's ue-iperf reads the UE's address from


def _failed_or_results(result):
    if result.status == "completed":
        return {"status": "completed", "results": dict(result.results)}
    return {"status": "failed", "message": result.message}


#: The user-plane reference points (registry ``plane: user``): between the RAN and its gateway,
#: the EPS's S1-U, the 5G SA's N3.
USER_PLANE = tuple(rp.name for rp in registry.load().reference_points.values() if rp.plane == "user")


def run(tb, r, seconds, progress):
    """The stand-in UE of one instance (None when it has no RAN and gateway on S1-U or N3)."""
    inst, model = r["inst"], r["model"]
    s1u = next((rp for rp in inst.refpoints if rp.name in USER_PLANE), None)
    if s1u is None:
        return None
    enb, spgwu = s1u.requirer, s1u.provider
    ue_addr, server = s1u.service[enb], s1u.service[spgwu]
    out = {"ue": LABEL, "path": "{} {} -> {} {} ({})".format(
        enb, ue_addr, spgwu, server, "through wg-" + s1u.name if inst.tunnelled else "plain {} link".format(
            {"s1u": "S1-U", "n3": "N3"}[s1u.name]))}
    progress("UE {}: ue-attach on {} (the charm's action; no OAI build here, so it must refuse)".format(LABEL, enb))
    out["ue-attach"] = _failed_or_results(model.run_action(enb + "/0", "ue-attach"))
    vnf = tb.vnfs[enb]
    # A veth pair inside the eNB's namespace (the testbed's kernel may lack the dummy module; a
    # TUN device without its program has no carrier): oaitun_ue1 is up and holds the address.
    vnf.exec(["ip", "link", "add", UE_IF, "type", "veth", "peer", "name", UE_IF + "p"])
    srv = None
    try:
        vnf.exec(["ip", "addr", "add", ue_addr + "/32", "dev", UE_IF])
        vnf.exec(["ip", "link", "set", UE_IF + "p", "up"])
        vnf.exec(["ip", "link", "set", UE_IF, "up"])
        srv = tb.vnfs[spgwu].popen(measure_parse.iperf3_server_cmd(server, one_off=True),
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        traffic._wait_listening(tb.vnfs[spgwu], traffic.IPERF_PORT)
        progress("UE {}: ue-iperf on {} from {} ({}) to {} for {} s".format(LABEL, enb, UE_IF, ue_addr, server,
                                                                         seconds))
        out["ue-iperf"] = _failed_or_results(model.run_action(enb + "/0", "ue-iperf",
                                                              {"server": server, "seconds": seconds}))
    finally:
        if srv is not None:
            traffic.stop(srv)
        vnf.exec(["ip", "link", "del", UE_IF], check=False)
    return out


def describe(ue):
    """One line for the terminal."""
    attach = ue["ue-attach"]
    said = attach.get("message") if attach["status"] == "failed" else "completed (unexpected here)"
    line = "UE: {}; ue-attach: {}".format(LABEL, said)
    iperf = ue.get("ue-iperf") or {}
    if iperf.get("status") == "completed":
        res = iperf["results"]
        line += "; ue-iperf over {}: {} Mbit/s sent, {} received, RTT {} ms".format(
            ue["path"], res.get("sent-mbps"), res.get("received-mbps"), res.get("rtt-ms"))
    else:
        line += "; ue-iperf failed: {}".format(iperf.get("message"))
    return line
