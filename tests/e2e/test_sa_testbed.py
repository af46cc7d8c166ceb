"""The 5G standalone network with WireGuard on the local testbed (issue 28): MySQL, AMF, SMF, UPF
and gNB from the bundle's own NSD (oai-sa-wg) and params, the built charms in OSM's order, five
tunnels (N2, N3, N4, N11, db). The tests share one instantiation and run in file order."""
import os

import pytest

from bundle import membership
from testbed import demo, ue_standin
from testbed.emulators import vim
from testbed.measurement import capture
from vpnaas.core import refpoints

#: Its tunnels: the registry's reference points between its members (pinned: tests/pins.yaml).
REFPOINTS = tuple(membership.of_variant("sa_wg")[1])
#: The NFs bind by interface name: each service address is found by its own label (SIOCGIFADDR).
SIOCGIFADDR = ("import fcntl, socket, struct, sys\n"
               "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
               "r = fcntl.ioctl(s.fileno(), 0x8915, struct.pack('256s', sys.argv[1].encode()))\n"
               "print(socket.inet_ntoa(r[20:24]))\n")


@pytest.fixture(scope="module")
def sa(environment_ready, local_charms, tmp_path_factory):
    out = str(tmp_path_factory.mktemp("sa"))
    tb = vim.Testbed(os.path.join(out, "tb"), userspace_wireguard=vim.userspace_wireguard())
    tb.create()
    try:
        instances = demo.load_instances("sa_wg")
        steps = []
        results = demo.bring_up(tb, instances, out, steps.append)
        yield tb, results["sa_wg"], out, steps
    finally:
        tb.teardown()
    left = [ns for ns in vim.list_testbed_netns() if ns.startswith(tb.id)]
    assert not left, "teardown left namespaces: {}".format(left)


def test_all_five_tunnels_handshake_after_osm_order(sa):
    tb, r, _out, steps = sa
    inst = r["inst"]
    assert sorted(rp.name for rp in inst.refpoints) == sorted(REFPOINTS)
    assert {rp.name: (rp.provider, rp.requirer) for rp in inst.refpoints} == {
        "n2": ("amf", "gnb"), "n3": ("upf", "gnb"), "n4": ("upf", "smf"), "n11": ("amf", "smf"), "db": ("mysql", "amf")}
    assert all(r["timing"]["state"].values()), r["timing"]["state"]
    assert demo.handshakes_up(tb, inst) == {rp: True for rp in REFPOINTS}
    first_config = next(i for i, s in enumerate(steps) if s.startswith("config primitive"))
    assert max(i for i, s in enumerate(steps) if "relation" in s) < first_config
    skipped = {(v, p) for v, p, _ in r["lcm"].skipped}
    assert ("mysql", "oai-install") in skipped and ("gnb", "oai-configure") in skipped


def test_no_plaintext_on_any_underlay_link(sa):
    tb, r, out, _steps = sa
    for rp in r["inst"].refpoints:
        judged = demo.verdict(tb, r["inst"], rp, out, lambda _t: None)
        assert judged["packets"] >= 2, rp.name
        assert not judged["plaintext_seen"], rp.name
        assert judged["non_wireguard"] == [], (rp.name, judged["non_wireguard"][:3])
    rp = next(p for p in r["inst"].refpoints if p.name == "db")
    path = os.path.join(out, "control.pcap")
    a = tb.vnfs[rp.provider]
    with capture.Capture(tb.infra, tb.port(a, rp.link), path):
        capture.send_probe(a, rp.underlay[rp.provider], rp.underlay[rp.requirer], "CONTROL-PROBE")
    assert capture.judge(path, "CONTROL-PROBE", rp.ports)["plaintext_seen"]


def test_each_service_address_has_its_own_label_an_nf_binds_by(sa):
    """The AMF binds N2 and its SBI by interface name: its n2, n11 and db addresses each carry the
    label of their reference point, and SIOCGIFADDR on that name returns exactly that address."""
    tb, r, _out, _steps = sa
    for rp in r["inst"].refpoints:
        for app in (rp.provider, rp.requirer):
            vnf, address = tb.vnfs[app], rp.service[app]
            listing = vnf.exec(["ip", "-o", "-4", "addr", "show", "to", address + "/32"]).stdout
            labels = [w for w in listing.replace("\\", " ").split() if w.startswith(("lo:vpnaas-", "vpnaas0:"))]
            assert labels and labels[0].endswith(refpoints.address_label(rp.name)), (app, rp.name, listing)
            got = vnf.exec(["python3", "-c", SIOCGIFADDR, labels[0]]).stdout.strip()
            assert got == address, (app, rp.name, labels[0], got)


def test_services_start_after_the_handshake_and_answer_through_the_tunnels(sa):
    tb, r, _out, _steps = sa
    for rp in r["inst"].refpoints:
        assert demo.standin_reachable(tb, rp) == "oai-{} stand-in".format(rp.requirer), rp.name
    model = r["model"]
    model.update_status()
    for unit in model.units():
        status, message = model.status(unit)
        assert status == "active" and "running" in message, (unit, message)
    note = demo.standin_note(r["inst"])
    assert "TCP port 47100" in note
    if not demo.kernel_has_sctp():
        assert "N2 runs over SCTP in OAI (NGAP)" in note


def test_the_nrue_is_a_stand_in_and_no_secret_leaks(sa):
    """The gNB charm's real UE actions: ue-attach refuses without the OAI build (never a claimed
    registration); ue-iperf measures from the stand-in UE interface through wg-n3 to the UPF."""
    tb, r, _out, _steps = sa
    n3 = next(rp for rp in r["inst"].refpoints if rp.name == "n3")
    ue = ue_standin.run(tb, r, 2, lambda _t: None)
    assert ue["ue"] == "stand-in (no OAI build here)" and "through wg-n3" in ue["path"]
    assert ue["ue-attach"]["status"] == "failed"
    assert "nr-uesoftmodem: run oai-install on the gNB first" in ue["ue-attach"]["message"]
    assert ue["ue-iperf"]["status"] == "completed", ue["ue-iperf"]
    res = ue["ue-iperf"]["results"]
    assert res["ip"] == n3.service["gnb"] and res["server"] == n3.service["upf"]
    assert float(res["sent-mbps"]) > 0 and float(res["rtt-ms"]) > 0
    specs = {v.name: v for v in r["inst"].vnfs}
    secrets = [specs["gnb"].config["ue-k"], specs["gnb"].config["ue-op"], specs["mysql"].config["db-password"],
               specs["mysql"].config["subscriber-k"], specs["amf"].config["db-password"]]
    assert all(secrets)
    seen = repr(ue) + "".join(repr(r["model"].logs(u)) + repr(r["model"].status(u)) for u in r["model"].units())
    for secret in secrets:
        assert secret not in seen
