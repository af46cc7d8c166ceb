"""What the hub's tunnel step costs on the VNF does not grow with its peers (issue 37): the step
exactly as the charm sends it (remote.tunnel_step, wireguard-go and pq-psk as shipped, the
metrics exporter) runs in a fresh network and mount namespace under strace (testbed.vnfcount),
for a hub of 2 and of 12 spokes. A session that changes nothing and a session that adds one
spoke start exactly as many processes at both sizes (the metrics exporter's part left out: its
wait for a listener polls); a first session (the device made, every spoke's routes added) almost
as many (its daemons' starts may poll a few times more or fewer), and not two per spoke as one
`ip route` per route did. Counts, never times."""
import shutil

import pytest

from testbed import vnfcount

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(autouse=True)
def _root(environment_ready):
    if shutil.which("strace") is None:
        pytest.fail("strace is missing: install it (apt-get install strace)")
    return environment_ready


def test_the_steps_processes_do_not_grow_with_the_hubs_peers():
    small, large = 2, 12
    results = vnfcount.run([small, large])
    for n in (small, large):
        res = results[n]
        assert res["first"]["applied"] == ["APPLIED wg-vpn up"], res["first"]
        assert res["nochange"]["applied"] == ["APPLIED wg-vpn unchanged"], res["nochange"]
        assert res["add"]["applied"] == ["APPLIED wg-vpn set 1"], res["add"]   # one `wg set`, no resync
        assert res["nochange-after-add"]["applied"] == ["APPLIED wg-vpn unchanged"]
    a, b = results[small], results[large]
    for kind in ("nochange", "add", "nochange-after-add"):
        assert tunnels(a[kind]) == tunnels(b[kind]), (kind, a[kind], b[kind])
    # 10 more spokes: 20 more routes, which one `ip route replace` each would show as 20 processes
    first_a, first_b = tunnels(a["first"], "pq_psk_apply"), tunnels(b["first"], "pq_psk_apply")
    assert abs(first_b - first_a) < 10, (a["first"], b["first"])
    assert b["first"]["programs"].get("ip", 0) - a["first"]["programs"].get("ip", 0) < 5, (a["first"], b["first"])


def tunnels(counts, *also):
    """The processes of a session without the metrics exporter's part (and ``also``'s): its wait
    for the exporter's listener asks `ss` until it answers, as often as Python's start takes on
    a loaded machine (so does pq-psk's start for its daemon's ready line), whatever the peers."""
    return sum(n for function, n in counts["by_function"].items() if function not in ("metrics_apply",) + also)
