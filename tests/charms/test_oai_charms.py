
"""The five charms under Harness (ops 1.5.4) with the SSH layer replaced by a fake VNF."""

import base64
import hashlib
import ipaddress
import logging
import re
import shlex

import pytest
from charms_helpers import (
    COMPONENTS,
    DB_PASSWORD,
    LTE_K,
    LTE_OP,
    NR_K,
    NR_OP,
    OWN_KEY,
    PEER_KEY,
    SECRETS,
    config_for,
    harness_for,
)

from vpnaas.charm import relation_cache
from vpnaas.core import refpoints
from vpnaas.vnf import ssh

ENDPOINTS = {
    "hss": ("s6a", "mme"),
    "mme": ("s1c", "enb"),
    "spgwc": ("s11", "mme"),
    "spgwu": ("s1u", "enb"),
    "enb": ("s1c", "mme"),
    "mysql": ("db", "amf"),
    "amf": ("n2", "gnb"),
    "smf": ("n4", "upf"),
    "upf": ("n3", "gnb"),
    "gnb": ("n2", "amf"),
}


def called(program):
    """{function: [index of its first argument]} of the calls at the end of a step's program."""
    out = {}
    for name, first in re.findall(r'^([a-z_]+) "\$\{(\d+)\}"', program, re.M):
        out.setdefault(name, []).append(int(first))
    for name in re.findall(r"^([a-z_]+)$", program, re.M):
        out.setdefault(name, [])
    return out


def peer_tunnel_address(charm, endpoint):
    """The other host of the endpoint's default tunnel network: the peer's side."""
    import ipaddress

    from vpnaas.core import refpoints

    net = ipaddress.ip_network(refpoints.default_tunnel_network(endpoint))
    role = next(e.role for e in charm.endpoints if e.name == endpoint)
    return "{}/{}".format(list(net.hosts())[1 if role == "provider" else 0], net.prefixlen)


def peer_service_address(endpoint):
    """A related unit's service address inside the reference point's service network (what an
    empty <ep>-peer-prefixes admits)."""
    return "{}/32".format(ipaddress.ip_network(refpoints.SERVICE_NETWORKS[endpoint])[200])


def step_args(command):
    """The positional arguments of a step's command line (... bash -c <runner> vpnaas <args>)."""
    words = shlex.split(command)
    return words[words.index("vpnaas") + 1:]


class FakeEvent(object):
    def __init__(self, params=None):
        self.params = params or {}
        self.results = None
        self.failed = None

    def set_results(self, results):
        self.results = dict(results)

    def fail(self, message=""):
        self.failed = message


class FakeVnf(object):
    """Answers the charm's scripts like a VNF would; records everything sent to it."""

    def __init__(self):
        self.scripts, self.commands, self.statuses = [], [], []
        self.handshake = False
        self.installed = self.configured = False
        self.started = False
        self.remote_error = ""
        self.harness = None

    def session(self, target, keystore):
        vnf = self

        class Session(object):
            def __init__(self):
                self.target = target

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                return False

            def run(self, command, stdin=b"", timeout=120, on_line=None):
                return vnf.run(command, stdin.decode(), on_line)

        return Session()

    def _emit(self, lines, on_line):
        for line in lines:
            if on_line is not None:
                on_line(line)
                self.statuses.append(self.harness.charm.unit.status.message)
        return 0, "\n".join(lines) + "\n", ""

    def run(self, command, script, on_line):
        self.commands.append(command)
        self.scripts.append(script)
        args = step_args(command)
        calls = called(script)
        if "facts_guard" in calls:  # what must never be routed; nothing applied unless as planned
            facts = sorted(["addr 10.0.0.5/24", "gateway 10.0.0.1", "client 10.0.0.9", "ipv6 on"])
            digest = hashlib.sha256(("\n".join(facts) + "\n").encode()).hexdigest()
            report = "".join("FACT {}\n".format(f) for f in facts) + "FACTS {}\n".format(digest)
            if args[calls["facts_guard"][0] - 1] != digest:
                return 0, report + "FACTS changed\nDONE\n", ""
        if "remove_stale_devices" in calls:
            return 0, report + self._reconcile(calls, args), ""
        if "oai_install" in calls:
            self.installed = True
            return self._emit(
                [
                    "PROGRESS 1/6 waiting for cloud-init",
                    "PROGRESS 3/6 fetching HSS v1",
                    "RESULT state built",
                    "RESULT commit 0123abc",
                    "DONE",
                ],
                on_line,
            )
        if "oai_configure_begin" in calls:
            if self.remote_error:
                return self._emit(["PROGRESS 1/2 rendering", "ERROR " + self.remote_error], on_line)
            self.configured = True
            return self._emit(
                ["PROGRESS 1/2 rendering", "RESULT changed /usr/local/etc/oai/x.conf", "DONE"], on_line
            )
        if "oai_ue_attach" in calls:
            self.ue_args = args
            return self._emit(["PROGRESS 1/3 writing the UE's SIM", "RESULT imsi " + args[2], "RESULT ip 12.1.1.2",
                               "RESULT interface oaitun_ue1", "RESULT seconds 7", "DONE"], on_line)
        if "oai_ue_iperf" in calls:
            doc = {"end": {"sum_sent": {"bits_per_second": 8.5e6}, "sum_received": {"bits_per_second": 8.4e6}}}
            encoded = base64.b64encode(__import__("json").dumps(doc).encode()).decode()
            return self._emit(["RESULT ip 12.1.1.2", "RESULT rtt-ms 21.4", "RESULT iperf3 " + encoded, "DONE"], on_line)
        raise AssertionError("unexpected script")

    def _reconcile(self, calls, args, report=""):
        devices = [args[i - 1] for i in calls.get("apply_device", [])]
        gate = calls["oai_gate"]
        wanted = args[gate[0] + 2]
        lines = ["INIT systemd", "IMPL kernel"]
        for dev in devices:
            lines += ["PUBKEY {} {}".format(dev, OWN_KEY), "APPLIED {} up".format(dev), "UP {}".format(dev)]
        lines.append("COMPONENT installed {}".format("yes" if self.installed else "no"))
        if not self.configured:
            lines += ["COMPONENT configured no", "COMPONENT service absent"]
        else:
            lines += ["COMPONENT configured yes", "COMPONENT mode systemd"]
            # The gate's contract (executed for real in test_oai_gate): start only on handshake.
            if wanted == "started" and (self.handshake or not devices):
                self.started = True
                lines.append("COMPONENT service running")
            elif wanted == "started":
                lines += ["COMPONENT service pending", "COMPONENT pending " + " ".join(devices)]
            else:
                self.started = False
                lines.append("COMPONENT service stopped")
        lines += ["HOST vnf", "NOW 1000"]
        for dev in devices:
            lines.append(
                "PEER {} {}\t(none)\t192.168.8.2:51821\t10.250.1.1/32,172.16.6.2/32\t{}\t10\t20\t25".format(
                    dev, PEER_KEY, 990 if self.handshake else 0
                )
            )
        lines.append("DONE")
        return "\n".join(lines) + "\n"


@pytest.fixture
def charm_env(monkeypatch, caplog):
    caplog.set_level(logging.DEBUG)
    vnf = FakeVnf()
    monkeypatch.setattr(ssh, "Session", vnf.session)

    def make(name, relate=True, **overrides):
        harness = harness_for(name)
        vnf.harness = harness
        harness.set_leader(True)
        harness.begin()
        harness.update_config(config_for(name, **overrides))
        if relate:
            endpoint, remote_app = ENDPOINTS[name]
            rel = harness.add_relation(endpoint, remote_app)
            harness.add_relation_unit(rel, remote_app + "/0")
            harness.update_relation_data(
                rel,
                remote_app + "/0",
                {
                    "vpnaas-schema": "1",
                    "public-key": PEER_KEY,
                    "endpoint": "192.168.8.2:51821",
                    "tunnel-address": peer_tunnel_address(harness.charm, endpoint),
                    "service-prefixes": peer_service_address(endpoint),
                },
            )
        return harness

    return make, vnf


def act(harness, name, params=None):
    event = FakeEvent(params)
    getattr(harness.charm.workload, "_on_" + name.replace("-", "_"))(event)
    return event


@pytest.mark.parametrize("name", sorted(COMPONENTS))
def test_day1_sequence_start_waits_for_the_handshake(charm_env, name):
    make, vnf = charm_env
    harness = make(name)
    install = act(harness, "oai-install")
    assert install.failed is None and install.results["result"] == "built"
    assert install.results["commit"] == "0123abc"
    assert "oai-install: waiting for cloud-init (step 1/6)" in vnf.statuses
    configure = act(harness, "oai-configure")
    assert configure.failed is None, configure.failed
    assert configure.results["result"] == "configured"
    dev = "wg-" + ENDPOINTS[name][0]
    start = act(harness, "oai-start")
    assert start.failed is None
    assert start.results["result"] == "start pending: waiting for {} handshake".format(dev)
    assert not vnf.started
    status = harness.charm.unit.status
    assert status.message.startswith("oai-start pending: {} has no handshake yet".format(ENDPOINTS[name][0]))
    # The peer completes its side; the next reconcile (update-status here) starts the service.
    vnf.handshake = True
    harness.charm.on.update_status.emit()
    assert vnf.started
    assert harness.charm.unit.status.message.startswith("oai-{}: running".format(name))
    assert harness.charm.unit.status.name == "active", harness.charm.unit.status.message
    stop = act(harness, "oai-stop")
    assert stop.results["result"] == "stopped" and not vnf.started


def test_peer_keys_wake_a_component_only_while_its_start_waits_for_them(charm_env):
    """While OSM's config primitives run no start is wanted: a peer's peer-keys alone then ends in
    the hook gate. The start that waits for its handshake drops the cache taken without them, and
    from then on they wake the unit, until its service runs."""
    make, vnf = charm_env
    harness = make("mme")
    charm = harness.charm
    assert "peer-keys" not in charm.cache_fields()
    relation_cache.save(charm.state_dir, relation_cache.make(["s6a"], charm.cache_fields(), "fp", {}))
    relation_cache.promote(charm.state_dir)
    assert act(harness, "oai-install").failed is None and act(harness, "oai-configure").failed is None
    assert relation_cache.load(charm.state_dir) is not None       # nothing waits yet: the cache holds
    assert act(harness, "oai-start").results["result"].startswith("start pending")
    assert "peer-keys" in charm.cache_fields()
    assert relation_cache.load(charm.state_dir) is None
    vnf.handshake = True
    harness.charm.on.update_status.emit()
    assert vnf.started and "peer-keys" not in charm.cache_fields()


@pytest.mark.parametrize("name", sorted(COMPONENTS))
def test_each_component_asks_its_peers_for_peer_keys(charm_env, name):
    make, _vnf = charm_env
    harness = make(name)
    rel = harness.model.relations[ENDPOINTS[name][0]][0]
    mine = harness.get_relation_data(rel.id, harness.charm.unit.name)
    # Its start waits for the tunnel: the peer's peer-keys is the wake-up (none asked here).
    assert mine["wants-peer-keys"] == "yes" and "peer-keys" not in mine


def test_start_without_configuration_fails_clearly(charm_env):
    make, vnf = charm_env
    harness = make("mme")
    start = act(harness, "oai-start")
    assert "not configured on the VNF: run oai-install and oai-configure first" in start.failed
    assert harness.charm._stored.oai_wanted == ""


def test_bad_input_fails_the_action_without_touching_the_vnf(charm_env):
    make, vnf = charm_env
    harness = make("hss", **{"lte-k": "not-a-key", "realm": "ntnu.no"})
    sent = len(vnf.scripts)
    configure = act(harness, "oai-configure")
    assert configure.failed.startswith("oai-configure failed: lte-k: must be 32 hex digits")
    assert not any("oai_configure_begin" in called(s) for s in vnf.scripts[sent:]), "nothing may be sent"
    harness.update_config({"lte-k": LTE_K, "realm": "ntnu.no'; reboot; '"})
    sent = len(vnf.scripts)
    configure = act(harness, "oai-configure")
    assert "realm" in configure.failed
    assert not any("oai_configure_begin" in called(s) for s in vnf.scripts[sent:])
    assert harness.charm.unit.status.name == "blocked"
    assert "oai-configure failed" in harness.charm.unit.status.message


def test_bad_source_fails_install_without_ssh(charm_env):
    make, vnf = charm_env
    harness = make("enb", **{"oai-ref": "master;id"})
    sent = len(vnf.scripts)
    install = act(harness, "oai-install")
    assert "oai-ref" in install.failed
    assert not any("oai_install" in called(s) for s in vnf.scripts[sent:])


def test_secrets_never_logged_returned_or_on_a_command_line(charm_env, caplog):
    make, vnf = charm_env
    harness = make("hss")
    events = [act(harness, "oai-install"), act(harness, "oai-configure"), act(harness, "oai-start")]
    vnf.remote_error = "cannot load key {} into {}".format(LTE_OP, LTE_K.upper())
    events.append(act(harness, "oai-configure"))
    assert events[-1].failed and "***" in events[-1].failed
    seen = [str(e.results) + str(e.failed) for e in events]
    seen += vnf.statuses + [harness.charm.unit.status.message] + vnf.commands
    seen += [r.getMessage() for r in caplog.records]
    for rel in harness.model.relations["s6a"]:
        seen.append(str(dict(rel.data[harness.charm.unit])))
    text = "\n".join(seen)
    for secret in SECRETS:
        assert secret not in text.lower()
    # The keys travel only in the data section after the program's exit (base64 of NAME=value).
    data = []
    for script in vnf.scripts:
        program, _, section = script.partition("__VPNAAS_DATA__\n")
        for secret in SECRETS:
            assert secret not in program
        if section:
            data.append(base64.b64decode("".join(section.split())).decode())
    assert any("HSS_PROVISION=" in d for d in data)
    assert any(LTE_OP in base64.b64decode(line.partition("=")[2]).decode() for d in data
               for line in d.splitlines() if line.startswith("HSS_SPEC="))


def test_configure_uses_the_relation_when_no_explicit_peer_address(charm_env):
    make, vnf = charm_env
    harness = make("hss", **{"mme-address": ""})
    act(harness, "oai-install")
    configure = act(harness, "oai-configure")
    assert configure.failed is None, configure.failed
    i = max(i for i, s in enumerate(vnf.scripts) if "oai_configure_begin" in called(s))
    args = step_args(vnf.commands[i])
    settings = base64.b64decode(args[called(vnf.scripts[i])["oai_configure_begin"][0] + 2]).decode()
    assert "host {} mme.ntnu.no mme\n".format(peer_service_address("s6a").split("/")[0]) in settings
    assert LTE_OP not in vnf.commands[i]


@pytest.mark.parametrize("name", ["mysql", "amf"])
def test_5g_secrets_never_logged_returned_or_on_a_command_line(charm_env, caplog, name):
    """The MySQL password and the subscribers' keys: in the data section only, redacted from what
    the VNF reports back."""
    from vpnaas.oai import component as oai

    make, vnf = charm_env
    harness = make(name)
    events = [act(harness, "oai-install"), act(harness, "oai-configure"), act(harness, "oai-start")]
    # (the AMF knows no subscriber key: only the password is in its report)
    vnf.remote_error = "cannot use {} for {}".format(DB_PASSWORD, NR_K.upper() if name == "mysql" else "x")
    events.append(act(harness, "oai-configure"))
    assert events[-1].failed and "***" in events[-1].failed
    seen = [str(e.results) + str(e.failed) for e in events] + vnf.statuses + vnf.commands
    seen += [harness.charm.unit.status.message] + [r.getMessage() for r in caplog.records]
    for rel in harness.model.relations[ENDPOINTS[name][0]]:
        seen.append(str(dict(rel.data[harness.charm.unit])))
    text = "\n".join(seen)
    for secret in (DB_PASSWORD, NR_K, NR_OP, oai.opc(NR_K, NR_OP)):
        assert secret not in text and secret.upper() not in text
    for script in vnf.scripts:
        program = script.partition("__VPNAAS_DATA__\n")[0]
        assert DB_PASSWORD not in program and NR_K not in program
