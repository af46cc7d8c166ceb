"""The UE at the end of `make deploy`: the proof that the EPS attaches a subscriber and moves data
(and, in the 5G SA NS, that the gNB's nrUE registers and moves data: the same steps with the gNB,
the AMF and the UPF's N6 address, see ``RANS``).

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
from typing import NamedTuple

import measure_parse as mp

from deploy.osm import OsmError
from deploy.runner import quote_argv


class Ran(NamedTuple):
    """The members a UE of the NS involves: the RAN VNF with the UE, the core function that logs the
    UE's attach, the user-plane gateway with its data-network link (where the iperf3 server runs)."""
    ran: str
    core: str
    gateway: str
    link: str
    ran_name: str
    core_name: str
    gateway_name: str
    link_name: str


#: The EPS's (the eNB's UE attaches; the MME logs it; SGi of the SPGW-U) and the 5G SA's.
RANS = (Ran("enb", "mme", "spgwu", "sgi", "eNB", "MME", "SPGW-U", "SGi"),
        Ran("gnb", "amf", "upf", "n6", "gNB", "AMF", "UPF", "N6"))
ENB, MME, SPGWU = "enb", "mme", "spgwu"
SGI_LINK = "sgi"


def core_view_script(core):
    """Read on the core function through `run` (a shell command line): its log, from journald
    (systemd) or the charm's log file (no init system); only lines naming the IMSI ($1) and the
    MME's statistics."""
    return ('{{ sudo -n journalctl -u oai-{0} --no-pager -o cat 2>/dev/null || journalctl -u oai-{0} --no-pager '
            '-o cat 2>/dev/null; sudo -n cat /var/log/vpnaas/oai-{0}.log 2>/dev/null; }} '
            '| grep -a -e "$1" -e "Attached UEs" | tail -n 20').format(core)


MME_VIEW_SCRIPT = core_view_script(MME)


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


def ran_of(rendered):
    """The Ran of the NS (the first whose RAN member has parameters), or None."""
    return next((r for r in RANS if member_params(rendered, r.ran)), None)


def sgi_address(rendered, ran=RANS[0]):
    """The gateway's address on its data-network link of the params' IP plan (the iperf3 server)."""
    vlds = rendered.get("vld")
    if vlds is None:
        vlds = ((rendered.get("netslice-subnet") or [{}])[0]).get("vld")
    for vld in vlds or []:
        if vld.get("name") != ran.link:
            continue
        for ref in vld.get("vnfd-connection-point-ref") or []:
            if str(ref.get("member-vnf-index-ref")) == ran.gateway and ref.get("ip-address"):
                return str(ipaddress.ip_address(str(ref["ip-address"])))
    return None


def plan(rendered):
    """(imsi, server) for the UE of this NS, or (None, reason) when it has none."""
    ran = ran_of(rendered)
    if ran is None:
        return None, "no eNB or gNB in this NS"
    imsi = str(member_params(rendered, ran.ran).get("ue_imsi") or "").strip()
    if not imsi:
        return None, "the {}'s ue_imsi is empty in the params: no UE".format(ran.ran_name)
    if not imsi.isdigit() or not 6 <= len(imsi) <= 15:
        raise UeError("ue_imsi in the params is not an IMSI (6-15 digits)")
    server = sgi_address(rendered, ran)
    if not server:
        return None, "the params give the {} no address on the {} link (no iperf3 server)".format(
            ran.gateway_name, ran.link)
    return imsi, server


def mme_view(text, imsi, core_name="MME"):
    """A short account of what the core function (the MME, the AMF) logged about the IMSI."""
    lines = [" ".join(line.split()) for line in (text or "").splitlines() if line.strip()]
    named = [line for line in lines if imsi in line]
    stats = [line for line in lines if line.startswith("Attached UEs")]
    parts = []
    if named:
        parts.append("IMSI {} in the {}'s log ({} lines), last: {}".format(imsi, core_name, len(named),
                                                                          named[-1][:200]))
    else:
        parts.append("IMSI {} not in the {}'s log".format(imsi, core_name))
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
    ran = ran_of(rendered)
    seconds = int(cfg.seconds("UE_IPERF_SECONDS"))
    out = {"imsi": imsi, "server": server, "core": ran.core_name}
    try:
        progress.note("{}: iperf3 server on the {}'s {} address {}".format(ns, ran.gateway_name, ran.link_name,
                                                                            server))
        osm.action(ns, ran.gateway, "run", {"command": quote_argv(mp.iperf3_server_cmd(server, one_off=True,
                                                                                       daemon=True))}, timeout=120)
        progress.note("{}: ue-attach on the {} (IMSI {})".format(ns, ran.ran_name, imsi))
        attach = osm.action(ns, ran.ran, "ue-attach", timeout=cfg.seconds("UE_ATTACH_TIMEOUT"))
        if attach is not None:
            out.update(ip=attach.get("ip"), attach_seconds=attach.get("seconds"))
            if str(attach.get("imsi") or imsi) != imsi:
                raise UeError("ue-attach reports IMSI {}, the params say {}".format(attach.get("imsi"), imsi))
        progress.note("{}: the {}'s view of IMSI {}".format(ns, ran.core_name, imsi))
        view = osm.action(ns, ran.core, "run", {"command": quote_argv(
            ["sh", "-c", core_view_script(ran.core), ran.core + "-view", imsi])}, timeout=120)
        if view is not None:
            out["mme_view"] = mme_view(str(view.get("output", "")), imsi, ran.core_name)
        progress.note("{}: ue-iperf on the {} ({} s to {})".format(ns, ran.ran_name, seconds, server))
        iperf = osm.action(ns, ran.ran, "ue-iperf", {"server": server, "seconds": seconds}, timeout=seconds + 420)
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
    user_plane = "N3" if result.get("core") == "AMF" else "S1-U"
    path = "with WireGuard on {}".format(user_plane) if wireguard else "without WireGuard (baseline)"
    return [
        "  {} UE: IMSI {} attached, address {} ({} s)".format(ns, result["imsi"], result.get("ip"),
                                                            result.get("attach_seconds")),
        "  {} UE: {}: {}".format(ns, result.get("core", "MME"), result.get("mme_view", "not read")),
        "  {} UE: {}: throughput {} Mbit/s sent, {} Mbit/s received; RTT {} ms (server {})".format(
            ns, path, result.get("sent_mbps"), result.get("received_mbps"), result.get("rtt_ms"), result["server"]),
    ]
