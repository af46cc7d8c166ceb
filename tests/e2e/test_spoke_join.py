"""Spokes join a hub while an existing spoke pings it at 1,000 echoes a second: not one echo is
lost, and the hub's steps add each new peer with `wg set` alone, never touching the peers it
had (a whole `wg syncconf` re-inserts every peer's allowed IPs; an echo in between is lost).
The built charms through the emulated OSM and Juju, real OpenSSH, real wireguard-go; `wg` is
traced inside the hub VNF's own mount namespace."""
import pytest

from testbed import convergence, spokejoin
from testbed.emulators import vim

pytestmark = pytest.mark.timeout(600)

TRACE = "/run/wireguard/wg-trace.log"
WRAPPER = "#!/bin/sh\necho \"$*\" >> " + TRACE + "\nexec /usr/bin/wg \"$@\"\n"


def _trace_wg(vnf):
    """Every `wg` the charm's steps run on ``vnf`` is logged first (PATH puts /usr/local/sbin
    before /usr/bin; the mount is the VNF's own)."""
    vnf.exec(["mount", "-t", "tmpfs", "tmpfs", "/usr/local/sbin"])
    vnf.exec(["sh", "-c", 'printf "%s" "$1" > /usr/local/sbin/wg && chmod 755 /usr/local/sbin/wg', "x", WRAPPER])


def test_no_echo_of_an_existing_spoke_is_lost_while_spokes_join(environment_ready, local_charms, tmp_path):
    runner = convergence.Runner(local_charms, str(tmp_path), vim.userspace_wireguard(), 1)
    star = convergence.Star(runner, 2)
    try:
        star.up()
        hub = star.tb.vnfs["hub"]
        before = {line.split("\t")[0] for line in hub.wg_show("wg-vpn", "dump").splitlines()[1:]}
        assert len(before) == 2
        _trace_wg(hub)
        result = spokejoin.join(star, 4)
        trace = hub.exec(["cat", TRACE]).stdout.splitlines()
        after = {line.split("\t")[0] for line in hub.wg_show("wg-vpn", "dump").splitlines()[1:]}
    finally:
        star.down()
    assert result["probe"]["sent"] > 1000 and result["lost"] == 0, result
    assert len(after) == 6 and before < after
    changes = [line for line in trace if line.split()[:1] in (["set"], ["syncconf"], ["setconf"], ["addconf"])]
    assert changes and all(line.startswith("set wg-vpn ") for line in changes), changes
    touched = {word for line in changes for word in line.split() if word in after}
    assert touched == after - before, "only the joining spokes' peers were set"
