"""The start gate, executed: the service starts only once has_handshake holds (fake `wg` on PATH)."""

import os
import subprocess
import textwrap

import pytest
from charms_helpers import COMPONENTS, run_step

from vpnaas.oai import component as oai
from vpnaas.vnf import remote, vnfscript

FAKE_WG = textwrap.dedent("""\
    #!/bin/bash
    # fake wg: state in $WG_STATE/<dev> = latest handshake timestamp (0: none yet)
    dev=$2
    [ -f "$WG_STATE/$dev" ] || exit 1
    case "${3:-}" in
      latest-handshakes) printf 'PEERKEY\\t%s\\n' "$(cat "$WG_STATE/$dev")" ;;
      peers) echo PEERKEY ;;
      *) echo "interface: $dev" ;;
    esac
    """)


def kernel_devices(root, *names):
    """Stand-in sysfs (VPNAAS_SYSFS) where the named devices are the kernel's WireGuard devices:
    the handshake tests ask `wg` only for those, or for a userspace daemon whose socket listens."""
    for name in names:
        (root / "class" / "net" / name).mkdir(parents=True)
        (root / "class" / "net" / name / "uevent").write_text("DEVTYPE=wireguard\nINTERFACE={}\n".format(name))
    return str(root)


@pytest.fixture
def vnf(tmp_path):
    """A fake VNF in a temp dir: state dirs, a configured 'mme' and a fake wg."""
    bindir = tmp_path / "bin"
    for d in ("bin", "state", "sbin", "run", "log", "wg"):
        (tmp_path / d).mkdir()
    (bindir / "wg").write_text(FAKE_WG)
    os.chmod(str(bindir / "wg"), 0o755)
    (tmp_path / "state" / "mme.built").write_text("repo ref commit\n")
    (tmp_path / "state" / "mme.configured").write_text("now\n")
    # The run script the configure step writes: a stand-in process named like the binary.
    run = tmp_path / "sbin" / "oai-mme-run"
    run.write_text("#!/bin/bash\nexec -a mme sleep 30\n")
    os.chmod(str(run), 0o755)
    env = dict(
        os.environ,
        PATH="{}:{}".format(bindir, os.environ["PATH"]),
        WG_STATE=str(tmp_path / "wg"),
        VPNAAS_SYSFS=kernel_devices(tmp_path / "sys", "wg-s6a", "wg-s11"),
        OAI_INIT="direct",
        OAI_STATE_DIR=str(tmp_path / "state"),
        OAI_SBIN=str(tmp_path / "sbin"),
        OAI_RUN_DIR=str(tmp_path / "run"),
        OAI_LOG_DIR=str(tmp_path / "log"),
        OAI_GATE_WAIT="1",
    )
    started = []

    def gate(wanted, devices=("wg-s6a", "wg-s11")):
        # The component part exactly as the reconcile's step carries it (after tunnels.sh).
        step = oai.add_gate(vnfscript.Step(remote.TUNNEL_FILES), COMPONENTS["mme"], list(devices), wanted, 30)
        rc, stdout, stderr = run_step(step, env=env, timeout=30, stubs=bindir)
        assert rc == 0, stderr + stdout
        lines = dict(line.split(" ", 2)[1:] for line in stdout.splitlines() if line.startswith("COMPONENT "))
        pidfile = tmp_path / "run" / "oai-mme.pid"
        if pidfile.exists():
            started.append(pidfile.read_text().strip())
        return lines

    def handshake(dev, ts):
        (tmp_path / "wg" / dev).write_text(str(ts))

    yield gate, handshake, tmp_path
    for pid in started:
        subprocess.run(["kill", "--", "-" + pid], stderr=subprocess.DEVNULL)
        subprocess.run(["kill", pid], stderr=subprocess.DEVNULL)


def test_service_waits_for_every_handshake_then_starts(vnf):
    gate, handshake, tmp = vnf
    handshake("wg-s6a", 1700000000)
    handshake("wg-s11", 0)  # peer configured, no handshake yet
    out = gate("started")
    assert out["service"] == "pending"
    assert out["pending"] == "wg-s11"
    assert not (tmp / "run" / "oai-mme.pid").exists(), "must not start before the handshake"
    assert os.access(str(tmp / "sbin" / "oai-service"), os.X_OK)
    assert (tmp / "state" / "mme.tunnels").read_text().splitlines()[1:] == ["limit 30", "dev wg-s6a", "dev wg-s11"]
    # Later reconcile (relation-changed / update-status): the handshake happened -> started.
    handshake("wg-s11", 1700000050)
    out = gate("started")
    assert out["service"] == "starting"
    assert out["mode"] == "direct"
    pidfile = tmp / "run" / "oai-mme.pid"
    for _ in range(100):  # the background start writes its pid file at once
        if pidfile.exists() and pidfile.read_text().strip():
            break
        subprocess.run(["sleep", "0.05"])
    assert pidfile.read_text().strip().isdigit()
    for _ in range(100):
        out = gate("started")
        if out["service"] == "running":
            break
    assert out["service"] == "running"
    # Stop: the process goes and the pid file with it.
    out = gate("stopped")
    assert out["service"] == "stopped"
    assert not pidfile.exists()


def test_missing_device_counts_as_no_handshake(vnf):
    gate, handshake, tmp = vnf
    handshake("wg-s6a", 1700000000)  # wg-s11 does not exist at all
    out = gate("started")
    assert out["service"] == "pending" and out["pending"] == "wg-s11"


def test_without_a_start_request_nothing_is_started(vnf):
    gate, handshake, tmp = vnf
    handshake("wg-s6a", 1700000000)
    handshake("wg-s11", 1700000000)
    out = gate("")
    assert out["service"] == "stopped"
    assert not (tmp / "run" / "oai-mme.pid").exists()


def test_unconfigured_component_reports_and_touches_nothing(vnf):
    gate, handshake, tmp = vnf
    (tmp / "state" / "mme.configured").unlink()
    out = gate("started")
    assert out == {"installed": "yes", "configured": "no", "service": "absent"}
    assert not (tmp / "sbin" / "oai-service").exists()


def test_no_tunnels_starts_at_once(vnf):
    gate, handshake, tmp = vnf
    out = gate("started", devices=())
    assert out["service"] == "starting"
    gate("stopped", devices=())


def test_prestart_waits_bounded_for_handshakes(tmp_path):
    """oai-service prestart (the unit's ExecStartPre) with a stand-in wg."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "wg").write_text(FAKE_WG)
    os.chmod(str(bindir / "wg"), 0o755)
    (tmp_path / "wg-s6a").write_text("0")
    (tmp_path / "mme.tunnels").write_text(oai.tunnel_settings(["wg-s6a"], 1))
    service = tmp_path / "oai-service"
    service.write_text(vnfscript.load("oai/service.sh"))
    env = dict(os.environ, PATH="{}:{}".format(bindir, os.environ["PATH"]), WG_STATE=str(tmp_path),
               OAI_STATE_DIR=str(tmp_path), OAI_PREFIX=str(tmp_path / "etc"),
               VPNAAS_SYSFS=kernel_devices(tmp_path / "sys", "wg-s6a"))
    result = subprocess.run(["bash", str(service), "prestart", "mme"], env=env, stderr=subprocess.PIPE, timeout=20)
    assert result.returncode == 1
    assert b"no WireGuard handshake on wg-s6a after 1s" in result.stderr
    (tmp_path / "wg-s6a").write_text("1700000000")
    result = subprocess.run(["bash", str(service), "prestart", "mme"], env=env, stderr=subprocess.PIPE, timeout=20)
    assert result.returncode == 0, result.stderr
