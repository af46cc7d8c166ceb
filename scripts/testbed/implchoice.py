"""`make demo IMPL=...`: which WireGuard implementation each reference point runs on, set through
the charms' own option ``<rp>-implementation`` (what an NS's params file sets through OSM's
config primitive), and what the demo reports about it.

IMPL is a comma-separated list of ``[who=]implementation``:
  boringtun                       every interface
  signalling=boringtun            the signalling interfaces (every reference point of the control
                                  plane: the registry's `plane`)
  userplane=wireguard-go          the user-plane ones (registry `plane: user`)
  s6a=boringtun,s1u=kernel        one interface each
Later items win: ``boringtun,s1u=wireguard-go``. Empty: the charms' default (auto).
"""
from vpnaas.core import refpoints, registry, validation

GROUPS = ("signalling", "userplane")
#: The demo's yardstick for the signalling interfaces (issue 30): added RTT at most this.
SIGNALLING_BUDGET_MS = 0.2


class ChoiceError(ValueError):
    pass


def is_user_plane(rp_name):
    rp = registry.load().reference_points.get(rp_name)
    return bool(rp and rp.plane == "user")


def parse(text, rp_names):
    """{reference point: implementation} for the interfaces ``text`` names (see the module)."""
    out = {}
    for item in [i.strip() for i in (text or "").split(",") if i.strip()]:
        who, _, impl = item.rpartition("=")
        try:
            impl = validation.implementation(impl, "IMPL")
        except validation.InvalidValue as e:
            raise ChoiceError(str(e)) from None
        if who in ("", "all"):
            names = list(rp_names)
        elif who == "signalling":
            names = [n for n in rp_names if not is_user_plane(n)]
        elif who == "userplane":
            names = [n for n in rp_names if is_user_plane(n)]
        elif who in rp_names:
            names = [who]
        else:
            raise ChoiceError("IMPL: {!r} is neither an interface of this NS ({}) nor one of all, {}".format(
                who, ", ".join(rp_names), ", ".join(GROUPS)))
        out.update({n: impl for n in names})
    return out


def apply(instances, text):
    """Set ``<rp>-implementation`` in the config of both VNFs of every chosen reference point;
    returns {instance: {rp: implementation}} (what was asked)."""
    asked = {}
    for inst in instances:
        if not inst.tunnelled:
            continue
        choice = parse(text, [rp.name for rp in inst.refpoints])
        members = {spec.name: spec for spec in inst.vnfs}
        for rp in inst.refpoints:
            if rp.name not in choice:
                continue
            for member in (rp.provider, rp.requirer):
                members[member].config[rp.name + "-implementation"] = choice[rp.name]
        asked[inst.name] = choice
    return asked


def observed(testbed, rp):
    """{vnf: implementation} of the reference point's device on each end, as the charm recorded
    it on the VNF when it brought the device up (tunnels.sh); "" when it has none."""
    dev = refpoints.device_name(rp.name)
    out = {}
    for member in (rp.provider, rp.requirer):
        res = testbed.vnfs[member].exec(["cat", "/etc/wireguard/{}.impl".format(dev)], check=False)
        out[member] = res.stdout.strip()
    return out


def summary(testbed, inst, entries):
    """{rp: {implementation, added_rtt_ms (median, min, max), signalling, within_budget}} for
    report.json and the terminal."""
    out = {}
    for rp in inst.refpoints:
        spread = (entries.get(rp.name) or {}).get("spread") or {}
        added = spread.get("added_rtt_ms") or {}
        signalling = not is_user_plane(rp.name)
        median = added.get("median")
        out[rp.name] = {"implementation": observed(testbed, rp), "added_rtt_ms": added,
                        "signalling": signalling,
                        "within_budget": (median is not None and median <= SIGNALLING_BUDGET_MS) if signalling
                        else None}
    return out


def lines(summaries):
    """Terminal lines: per interface the implementation of both ends and the added RTT."""
    out = []
    for rp, s in summaries.items():
        impls = sorted(set(s["implementation"].values()))
        added = s["added_rtt_ms"]
        rtt = ("{:+.3f} ms ({:+.3f} .. {:+.3f}, n={})".format(added["median"], added["min"], added["max"], added["n"])
               if added.get("median") is not None else "not measured")
        verdict = ""
        if s["signalling"]:
            verdict = "  <= {} ms: {}".format(SIGNALLING_BUDGET_MS, "yes" if s["within_budget"] else "NO")
        out.append("{:5} {:12} added RTT {}{}".format(rp, "/".join(impls) or "?", rtt, verdict))
    return out
