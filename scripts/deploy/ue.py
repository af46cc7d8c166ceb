"""The UE at the end of `make deploy`: the proof that the EPS attaches a subscriber and moves data.

Everything runs through OSM's day-2 primitives (`osm ns-action`, results read with `osm ns-op-show`):
1. `run` on the SPGW-U: a one-off iperf3 server (``iperf3 -s -1 -D``) on its SGi address;
2. `ue-attach` on the eNB: the eNB charm starts OAI's lte-uesoftmodem with the SIM of its
   ue-imsi/ue-lte-k/ue-lte-op options and waits for the attach (IMSI, UE address);
3. `run` on the MME: the MME's view of that IMSI (the last lines of its log naming it, and its
   "Attached UEs" statistics line when the log level prints it);
4. `ue-iperf` on the eNB: RTT (ping) and throughput (iperf3) from the UE's address through the eNB,
   S1-U and the SPGW-U to the server of step 1.
The NS with WireGuard (NS=eps_wg) gives the encrypted column of the thesis's Table F.4, the NS
without (NS=eps) the baseline. Skipped with UE=0, or where the params leave the eNB's ue_imsi empty.
Every step is idempotent: ue-attach restarts the UE, the server exits after one test. The IMSI is
the only value from the params that reaches a command, and only after it is checked to be digits.
"""

import ipaddress

import measure_parse as mp

from deploy.osm import OsmError
from deploy.runner import quote_argv

ENB, MME, SPGWU = "enb", "mme", "spgwu"
SGI_LINK = "sgi"

#: Read on the MME through `run` (a shell command line): its log, from journald (systemd) or
#: the charm's log file (no init system); only lines naming the IMSI ($1) and the statistics.
MME_VIEW_SCRIPT = (
    '{ sudo -n journalctl -u oai-mme --no-pager -o cat 2>/dev/null || journalctl -u oai-mme --no-pager '
    '-o cat 2>/dev/null; sudo -n cat /var/log/vpnaas/oai-mme.log 2>/dev/null; } '
    '| grep -a -e "$1" -e "Attached UEs" | tail -n 20'
)


class UeError(Exception):
    pass


def member_params(rendered, member):
    items = rendered.get("additionalParamsForVnf")
    if items is None:  # nsi-create: the subnet's own list
        items = ((rendered.get("netslice-subnet") or [{}])[0]).get("additionalParamsForVnf")
    for item in items or []:
        if str(item.get("member-vnf-index")) == member:
            return item.get("additionalParams") or {}
    return {}


def sgi_address(rendered):
    """The SPGW-U's address on the SGi link of the params' IP plan (the iperf3 server)."""
    vlds = rendered.get("vld")
    if vlds is None:
        vlds = ((rendered.get("netslice-subnet") or [{}])[0]).get("vld")
    for vld in vlds or []:
        if vld.get("name") != SGI_LINK:
            continue
        for ref in vld.get("vnfd-connection-point-ref") or []:
            if str(ref.get("member-vnf-index-ref")) == SPGWU and ref.get("ip-address"):
                return str(ipaddress.ip_address(str(ref["ip-address"])))
    return None


def plan(rendered):
    """(imsi, server) for the UE of this NS, or (None, reason) when it has none."""
    enb = member_params(rendered, ENB)
    if not enb:
        return None, "no eNB in this NS"
    imsi = str(enb.get("ue_imsi") or "").strip()
    if not imsi:
        return None, "the eNB's ue_imsi is empty in the params: no UE"
    if not imsi.isdigit() or not 6 <= len(imsi) <= 15:
        raise UeError("ue_imsi in the params is not an IMSI (6-15 digits)")
    server = sgi_address(rendered)
    if not server:
        return None, "the params give the SPGW-U no address on the {} link (no iperf3 server)".format(SGI_LINK)
    return imsi, server


def mme_view(text, imsi):
    """A short account of what the MME logged about the IMSI."""
    lines = [" ".join(line.split()) for line in (text or "").splitlines() if line.strip()]
    named = [line for line in lines if imsi in line]
    stats = [line for line in lines if line.startswith("Attached UEs")]
    parts = []
    if named:
        parts.append("IMSI {} in the MME's log ({} lines), last: {}".format(imsi, len(named), named[-1][:200]))
    else:
        parts.append("IMSI {} not in the MME's log".format(imsi))
    if stats:
        cells = [c.strip() for c in stats[-1].split("|")[1:4]]
        if len(cells) == 3:
            parts.append("Attached UEs {} (+{} -{} since the last statistics)".format(*cells))
    return "; ".join(parts)


def run_ue(cfg, osm, ns, rendered, progress):
    """Attach the UE of NS ``ns`` and measure through it; returns a summary dict (``None`` values
    in a dry run). Raises UeError with OSM's message when a step fails."""
    imsi, server = plan(rendered)
    if imsi is None:
        progress.note("{}: UE skipped: {}".format(ns, server))
        return {"skipped": server}
    seconds = int(cfg.seconds("UE_IPERF_SECONDS"))
    out = {"imsi": imsi, "server": server}
    try:
        progress.note("{}: iperf3 server on the SPGW-U's SGi address {}".format(ns, server))
        osm.action(ns, SPGWU, "run", {"command": quote_argv(mp.iperf3_server_cmd(server, one_off=True,
                                                                                  daemon=True))}, timeout=120)
        progress.note("{}: ue-attach on the eNB (IMSI {})".format(ns, imsi))
        attach = osm.action(ns, ENB, "ue-attach", timeout=cfg.seconds("UE_ATTACH_TIMEOUT"))
        if attach is not None:
            out.update(ip=attach.get("ip"), attach_seconds=attach.get("seconds"))
            if str(attach.get("imsi") or imsi) != imsi:
                raise UeError("ue-attach reports IMSI {}, the params say {}".format(attach.get("imsi"), imsi))
        progress.note("{}: the MME's view of IMSI {}".format(ns, imsi))
        view = osm.action(ns, MME, "run", {"command": quote_argv(["sh", "-c", MME_VIEW_SCRIPT, "mme-view", imsi])},
                          timeout=120)
        if view is not None:
            out["mme_view"] = mme_view(str(view.get("output", "")), imsi)
        progress.note("{}: ue-iperf on the eNB ({} s to {})".format(ns, seconds, server))
        iperf = osm.action(ns, ENB, "ue-iperf", {"server": server, "seconds": seconds}, timeout=seconds + 420)
        if iperf is not None:
            out.update(rtt_ms=_number(iperf.get("rtt-ms")), sent_mbps=_number(iperf.get("sent-mbps")),
                       received_mbps=_number(iperf.get("received-mbps")))
    except OsmError as exc:
        raise UeError("{}: {}".format(ns, exc)) from None
    return out


def _number(value):
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def describe(ns, result, wireguard):
    """The lines `make deploy` prints for one NS's UE."""
    if "skipped" in result:
        return ["  {} UE: skipped ({})".format(ns, result["skipped"])]
    if "error" in result:
        return ["  {} UE: FAILED: {}".format(ns, result["error"])]
    if result.get("ip") is None and result.get("sent_mbps") is None:
        return ["  {} UE: dry run, IMSI {} to iperf3 server {}".format(ns, result["imsi"], result["server"])]
    path = "with WireGuard on S1-U" if wireguard else "without WireGuard (baseline)"
    return [
        "  {} UE: IMSI {} attached, address {} ({} s)".format(ns, result["imsi"], result.get("ip"),
                                                            result.get("attach_seconds")),
        "  {} UE: MME: {}".format(ns, result.get("mme_view", "not read")),
        "  {} UE: {}: throughput {} Mbit/s sent, {} Mbit/s received; RTT {} ms (server {})".format(
            ns, path, result.get("sent_mbps"), result.get("received_mbps"), result.get("rtt_ms"), result["server"]),
    ]
