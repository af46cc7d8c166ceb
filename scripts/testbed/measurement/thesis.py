"""The published numbers the testbed reports beside its own: Tables 5.1 and 5.2 ("OAI EPS NS
with/without WireGuard") of Sondre Sørensen Kielland, "Secure communication with WireGuard —
VPN-as-a-Service in beyond 5G", master's thesis, NTNU, February 2022. The thesis measured S6a,
S1-C and S1-U only; S11 and SXab have no published value (None)."""

THROUGHPUT_BPS = {
    # reference point: (with WireGuard, without WireGuard)
    "s6a": (918e6, 21.7e9),
    "s1c": (1.02e9, None),
    "s1u": (1.435e9, None),   # (1.43, 1.44) G, two -M settings
    "s11": (None, None),
    "sxab": (None, None),
}
RTT_AVG_MS = {
    "s6a": (0.805, 0.379),
    "s1c": (0.881, 0.416),
    "s1u": (0.784, 0.631),
    "s11": (None, None),
    "sxab": (None, None),
}
SOURCE = "thesis Tables 5.1/5.2 (OAI EPS NS, OSM 10 + MicroStack, 600 s iperf3, 1000 pings)"


def values(refpoint):
    wg_t, plain_t = THROUGHPUT_BPS.get(refpoint, (None, None))
    wg_r, plain_r = RTT_AVG_MS.get(refpoint, (None, None))
    return {"wg_throughput_bps": wg_t, "plain_throughput_bps": plain_t,
            "wg_rtt_avg_ms": wg_r, "plain_rtt_avg_ms": plain_r}
