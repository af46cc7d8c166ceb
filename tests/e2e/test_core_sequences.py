"""The VPNaaS core end to end: event orders that need a fresh pair of VNFs each."""
import hashlib
import json
import os
import threading
import time

import e2e_pairs as pairs

from testbed.emulators import lcm


def state_of(vnf):
    """Everything the charms manage on a VNF, as a digest (private keys included, never shown)."""
    parts = []
    for argv in (["wg", "showconf", "wg-vpn"], ["wg", "showconf", "wg-vpn-peer"], ["ip", "-o", "route", "show"],
                 ["ip", "-o", "addr", "show", "scope", "global"], ["ls", "-l", "/etc/wireguard"]):
        out = vnf.exec(argv, check=False).stdout
        if argv[0] == "ls":
            out = "\n".join(line.split(None, 5)[-1] for line in out.splitlines()[1:])  # names, no times
        parts.append(out)
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def sessions(model, unit):
    return lcm.ssh_sessions(model, unit)


def test_figures_from_both_configured_to_handshake(testbed, model, local_charms):
    """Issue targets: <= 3 hook runs per unit, 1 SSH session per reconcile, < 5 s to handshake
    (the figures are written to build/figures/core-convergence.json)."""
    a_spec, b_spec = pairs.specs(local_charms)
    cfg_a, cfg_b = a_spec.config, b_spec.config
    a_spec.config, b_spec.config = {}, {}
    lcm.instantiate(testbed, model, {pairs.LINK: pairs.CIDR}, [a_spec, b_spec], [("a:vpn", "b:vpn-peer")])
    a, b = testbed.vnfs["a"], testbed.vnfs["b"]
    t_first = time.monotonic()
    model.set_config("a", dict(cfg_a, **{"ssh-hostname": a.mgmt_ip}))
    # From here on both units are configured: the second config primitive is the last input.
    hooks0 = dict(model.hook_runs)
    sess0 = {u: sessions(model, u) for u in ("a/0", "b/0")}
    t0 = time.monotonic()
    # The VCA delivers the resulting hooks until nothing changes; the handshake is watched
    # meanwhile, so the figure is the moment it happens, not the end of the hook cascade.
    errors = []

    def configure_b():
        try:
            model.set_config("b", dict(cfg_b, **{"ssh-hostname": b.mgmt_ip}))
        except Exception as e:  # noqa: BLE001 -- re-raised in the test thread below
            errors.append(e)

    configuring = threading.Thread(target=configure_b)
    configuring.start()
    deadline = time.monotonic() + 30
    while not (pairs.handshakes(a, "wg-vpn") and all(pairs.handshakes(a, "wg-vpn"))):
        assert time.monotonic() < deadline, "no handshake within 30 s"
        time.sleep(0.02)
    seconds = time.monotonic() - t0
    configuring.join(60)
    settled = time.monotonic() - t0
    assert not configuring.is_alive() and not errors, errors
    hooks = {u: model.hook_runs[u] - hooks0.get(u, 0) for u in ("a/0", "b/0")}
    sess = {u: sessions(model, u) - sess0[u] for u in ("a/0", "b/0")}
    figures = {"seconds_to_handshake": round(seconds, 2), "hook_runs": hooks, "ssh_sessions": sess,
               "seconds_until_settled": round(settled, 2),
               "seconds_from_first_config": round(time.monotonic() - t_first, 2)}
    print("FIGURES " + json.dumps(figures, sort_keys=True))
    out = os.path.join(os.environ.get("VPNAAS_FIGURES_DIR", "build/figures"))
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "core-convergence.json"), "w") as f:
        json.dump(figures, f, indent=1, sort_keys=True)
    assert all(n <= 3 for n in hooks.values()), figures
    assert all(sess[u] <= hooks[u] for u in sess), figures   # at most one session per hook
    # The target is < 5 s (measured 3.5-4.5 s here, see the README); this bound only
    # catches a regression by a wide margin, so a busy machine cannot fail the suite.
    assert seconds < 10, figures


def test_config_before_relations_also_converges(testbed, model, local_charms):
    pairs.bring_up(testbed, model, local_charms, relate_first=False)
    a, b = testbed.vnfs["a"], testbed.vnfs["b"]
    assert pairs.handshakes(a, "wg-vpn") and all(pairs.handshakes(a, "wg-vpn"))
    assert pairs.ping(b, pairs.B_SVC, pairs.A_SVC).returncode == 0


def test_peer_data_arriving_in_pieces(testbed, model, local_charms):
    a_spec, b_spec = pairs.specs(local_charms)
    b_spec.config = {}                                     # b never publishes by itself
    lcm.instantiate(testbed, model, {pairs.LINK: pairs.CIDR}, [a_spec, b_spec], [("a:vpn", "b:vpn-peer")])
    a, b = testbed.vnfs["a"], testbed.vnfs["b"]
    b.exec(["sh", "-c", "umask 077; wg genkey > /etc/wireguard/manual.key"])
    pub = b.exec(["sh", "-c", "wg pubkey < /etc/wireguard/manual.key"]).stdout.strip()
    pieces = [("vpnaas-schema", "1"), ("public-key", pub), ("tunnel-address", "10.250.9.2/30"),
              ("service-prefixes", pairs.B_SVC + "/32")]
    for key, value in pieces:
        model.set_relation_data(0, "b/0", {key: value})
        status, message = model.status("a/0")
        assert status == "waiting" and "b/0 has not published" in message, message
        assert a.exec(["wg", "show", "wg-vpn", "peers"]).stdout.strip() == ""
    model.set_relation_data(0, "b/0", {"endpoint": pairs.B_ADDR.split("/")[0] + ":51820"})
    assert pub in a.exec(["wg", "show", "wg-vpn", "peers"]).stdout
    allowed = a.exec(["wg", "show", "wg-vpn", "allowed-ips"]).stdout
    assert "10.250.9.2/32" in allowed and pairs.B_SVC + "/32" in allowed
    model.set_relation_data(0, "b/0", {"public-key": "AAAA"})     # broken data: refused, peer kept out
    status, message = model.status("a/0")
    assert status == "blocked" and "invalid data from b/0" in message
    assert pub not in a.exec(["wg", "show", "wg-vpn", "peers"]).stdout
