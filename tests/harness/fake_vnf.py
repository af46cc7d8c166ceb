"""A fake VNF behind a fake SSH server, for Harness tests that need no root.

Where the fake sits, and why there: at paramiko's network edge (``SSHClient.connect`` and the
transport's channels), not at ``vpnaas.vnf.ssh.Session``. So everything the charm ships runs for
real in these tests -- the reconcile, the route policy, the step builder (``vnfscript``), the
report parser, and ``ssh.py`` itself: trust-on-first-use pinning with paramiko's own host-key
store and policies, key or password login, the mapping of every connection fault to a transient
(Waiting) or operator (Blocked) error, the read loop and its deadline, sudo detection. Only the
wire and the machine behind it are modelled.

Why a Python model of the VNF instead of running ``vnf/tunnels.sh`` against stub ``wg``/``ip``
executables: the step writes /etc/wireguard and needs root, and stubs good enough for it would
be a second, untested model of iproute2 anyway. The model reads what the charm really sends -- the
command line (parsed with shlex: the values after ``vpnaas`` are the step's arguments) and the
call lines at the end of the program (``apply_device "${2}" ...``) -- checks that the program is
the shipped library and step file byte for byte, and answers in the report format of
``vnf/tunnels.sh``, through the one specification of that protocol (``vpnaas.vnf.report``: every
line it writes is checked there).
What ``vnf/tunnels.sh`` does on a real machine is covered by the root end-to-end tests.

Keys are real X25519 key pairs (cryptography); the model holds the private halves the way a VNF
does, and only public keys ever leave it.
"""
import base64
import hashlib
import json
import shlex
import socket
import threading

import paramiko
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import x25519

from vpnaas.vnf import report, vnfscript

STEP_PREFIX = (vnfscript.load(vnfscript.LIBRARY) + "\n" + vnfscript.load("tunnels.sh") + "\n"
               + vnfscript.load("metrics.sh") + "\n")
STEP_CALLS = ("programs_check", "facts_guard", "tunnels_prepare", "service_addresses", "stage_routes", "apply_device",
              "remove_stale_devices", "qos_step", "pq_psk_apply", "metrics_apply", "report", "teardown")


def keypair():
    """(private, public) WireGuard keys as base64, from a real X25519 key."""
    key = x25519.X25519PrivateKey.generate()
    private = key.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw,
                                serialization.NoEncryption())
    public = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return base64.b64encode(private).decode(), base64.b64encode(public).decode()


class Device(object):
    """A WireGuard device the charm manages on the fake VNF."""

    def __init__(self, name):
        self.name = name
        self.private_key, self.public_key = keypair()
        self.interface = {}     # [Interface] settings of the config file (without PrivateKey)
        self.peers = []         # [{"public-key", "endpoint", "allowed-ips", "keepalive"}]
        self.up = False
        self.starts = 0         # how often the device was (re)started, as by wg-quick up
        self.syncs = 0          # how often peers were applied to the running device
        self.implementation = ""   # what it was brought up on: kernel, wireguard-go, boringtun

    def signature(self):
        return sorted((k, v) for k, v in self.interface.items() if k in ("Address", "MTU", "Table", "PreUp",
                                                                           "PreDown", "PostUp", "PostDown"))


def parse_wg_quick(body):
    """The [Interface] settings and [Peer] sections of a wg-quick file."""
    interface, peers, section = {}, [], None
    for line in body.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line in ("[Interface]", "[Peer]"):
            section = line
            if line == "[Peer]":
                peers.append({"public-key": "", "endpoint": "", "allowed-ips": [], "keepalive": "off"})
            continue
        key, _, value = (part.strip() for part in line.partition("="))
        if section == "[Interface]":
            interface[key] = value
        elif section == "[Peer]":
            peer = peers[-1]
            if key == "PublicKey":
                peer["public-key"] = value
            elif key == "Endpoint":
                peer["endpoint"] = value
            elif key == "AllowedIPs":
                peer["allowed-ips"] = [p.strip() for p in value.split(",") if p.strip()]
            elif key == "PersistentKeepalive":
                peer["keepalive"] = value
            else:
                raise ValueError("unknown peer setting " + key)
        else:
            raise ValueError("setting outside a section: " + line)
    return interface, peers


class Killed(Exception):
    """The step was killed part-way (the VNF ran out of memory, the step's timeout fired)."""


class Stopped(Exception):
    """The step ended early on purpose (facts_guard: the VNF's facts are not the plan's)."""


class FakeVnf(object):
    """The machine: its network facts, its WireGuard devices and routes, what it was sent."""

    def __init__(self, host="10.0.0.5", port=22):
        self.host, self.port = host, port
        self.metrics_labels = None   # the labels document the last step gave the exporter
        self.qos_args = None   # what the last step asked of the slice marking and queuing (qos_step)
        self.hostname = "vnf-a"
        self.host_key = paramiko.ECDSAKey.generate()
        self.users = {"ubuntu": "secret"}  # login -> password
        self.authorized_keys = set()       # base64 blobs of public keys allowed to log in
        self.sudo_needs_password = False
        self.client_address = "10.20.0.9"  # the charm's address as the VNF sees it (SSH_CONNECTION)
        # What facts_guard sees that the charm does not own.
        self.interfaces = [("lo", "127.0.0.1/8"), ("lo", "::1/128"), ("eth0", "10.0.0.5/24"),
                           ("eth1", "192.168.8.10/24")]
        self.gateways = ["10.0.0.254"]
        self.ipv6 = True
        self.dns = {}                      # endpoint name -> addresses it resolves to here
        self.init = "systemd"
        self.kernel_wireguard = True       # the kernel has the WireGuard module (auto: kernel)
        self.programs = {}                 # shipped program -> sha256 of the copy installed (dataplane.py)
        self.installs = []                 # every program the charm sent, in order
        self.foreign_routes = {}           # prefix -> route line the charm did not create
        # Faults.
        self.fault = None                  # see FakeNetwork.connect, and "channel": sessions break after login
        self.broken_devices = {}           # device -> why `wg-quick up` fails
        self.kill_at = None                # a step call at which the step is killed
        self.hang = False                  # steps never finish (the SSH deadline must stop them)
        self.answers = {}                  # plain command -> (rc, out, err)
        # State.
        self.devices = {}                  # name -> Device
        self.routes = {}                   # prefix -> (device, preferred source)
        self.routes_ever = set()           # every prefix ever routed into a device
        self.routes_files = {}             # device -> its route list ("prefix src" lines), as stage_routes wrote it
        self.pq_files = {}                 # device -> the pq-psk daemon file (tunnels/pqpsk.sh)
        self.pq_psk_fails = ""             # why the pq-psk daemon exits at its start ("": it runs)
        self.pq_report = []                # the PQPEER lines the step's report gives (tunnels/pqpsk.sh pq_psk_report)
        self.route_moves = []              # (prefix, from device, to device) of every route a device took over
        self.service_addresses = []
        self.handshakes = {}               # peer public key -> epoch of its latest handshake
        self.now = 1700000000
        # What happened.
        self.logins = 0
        self.steps = []                    # [[call name, ...]] per step run
        self.commands = []                 # every command line received
        self.unexpected = []               # anything the model did not understand (a test failure)
        self.retired_keys = []             # private keys of rotated or removed devices

    # ------------------------------------------------------------------ the SSH server's side
    def authorize(self, openssh_public_key):
        self.authorized_keys.add(openssh_public_key.split()[1])

    def rebuild(self):
        """The VNF was rebuilt from its image (OSM's heal): a new host key and a new disk, so
        nothing of the charm's is left -- not even its SSH key, until OSM injects it again."""
        self.host_key = paramiko.ECDSAKey.generate()
        self.retired_keys += [d.private_key for d in self.devices.values()]
        self.devices, self.routes, self.service_addresses = {}, {}, []
        self.routes_files, self.programs, self.handshakes = {}, {}, {}
        self.authorized_keys = set()

    def login(self, username, password, pkey):
        if password is not None:
            return self.users.get(username) == password
        return pkey is not None and pkey.get_base64() in self.authorized_keys and username in self.users

    def private_keys(self):
        """Every private key this VNF ever held (none of them may leave it)."""
        return [d.private_key for d in self.devices.values()] + self.retired_keys

    def execute(self, command, stdin, username):
        """Run what the charm sent: (rc, stdout, stderr), or None when it never finishes."""
        self.commands.append(command)
        if self.hang:
            return None
        words = shlex.split(command)
        if "vpnaas-install" in words:
            return self.install(words[words.index("vpnaas-install") + 1:], stdin)
        if "vpnaas" not in words:
            rc_out_err = self.answers.get(command)
            if rc_out_err is None and command == "hostname":
                rc_out_err = (0, self.hostname + "\n", "")
            return rc_out_err or (127, "", "bash: line 1: {}: command not found\n".format(words[0]))
        if username != "root":
            if words[:2] != ["sudo", "-n"]:
                self.unexpected.append("a step without sudo -n for " + username)
            if self.sudo_needs_password:
                return 1, "", "sudo: a password is required\n"
        return self.run_step(words[words.index("vpnaas") + 1:], stdin.decode())

    def install(self, args, data):
        """dataplane.install_command: the program on stdin, kept only with the digest it was named by."""
        name, want = args
        if hashlib.sha256(data).hexdigest() != want:
            return 3, "ERROR {} arrived with another sha256\n".format(name), ""
        self.programs[name] = want
        self.installs.append(name)
        return 0, "\n".join([report.line("INSTALLED", name, want), report.line("DONE")]) + "\n", ""

    # ------------------------------------------------------------------ the step
    def run_step(self, args, program):
        if not program.startswith(STEP_PREFIX):
            self.unexpected.append("a program that is not lib.sh + tunnels.sh + metrics.sh")
            return 2, "", "unexpected program\n"
        calls = []
        code, _, section = program[len(STEP_PREFIX):].partition("\n" + vnfscript.DATA_MARKER + "\n")
        # as lib.sh reads it: values and texts by name (vnfscript.Step.text)
        self.data = vnfscript.data_section(program)
        for line in code.splitlines():
            if line in ("out DONE", "exit 0"):
                continue
            words = shlex.split(line)
            values = []
            for ref in words[1:]:
                if not (ref.startswith("${") and ref.endswith("}")):
                    self.unexpected.append("a call with a literal value: " + line)
                    return 2, "", "unexpected call\n"
                values.append(args[int(ref[2:-1]) - 1])
            if words[0] not in STEP_CALLS:
                self.unexpected.append("an unknown call: " + words[0])
                return 2, "", "unexpected call\n"
            calls.append((words[0], values))
        ran = []   # the calls that ran (a guard may end the step early)
        self.steps.append(ran)
        self.missing = False   # a shipped program missing (programs_check), per step
        self.usable = {"wireguard-go"} if not self.kernel_wireguard else set()   # the VNF's own on PATH
        out = []
        try:
            for name, values in calls:
                if name == self.kill_at:
                    raise Killed()
                ran.append(name)
                getattr(self, "step_" + name)(out, *values)
        except Killed:
            return 137, "\n".join(out) + "\n", "bash: line 1: 4242 Killed\n"
        except Stopped:
            pass
        out.append(report.line("DONE"))
        # The model speaks the report protocol (vpnaas/vnf/report.py) as tunnels.sh does.
        self.unexpected += ["the fake VNF's report: " + p for p in report.problems("\n".join(out))]
        return 0, "\n".join(out) + "\n", ""

    def step_programs_check(self, out, *shipped):
        """tunnels/dataplane.sh: NEED each shipped program that is not here, before the facts guard."""
        for name, digest, when in zip(shipped[0::3], shipped[1::3], shipped[2::3]):
            if when == "nokernel" and self.kernel_wireguard:
                continue
            if self.programs.get(name) == digest:
                self.usable.add(name)
            else:
                out.append(report.line("NEED", name))
                self.missing = True

    def step_tunnels_prepare(self, out, *shipped):
        out.append(report.line("INIT", self.init))
        if shipped:
            self.step_programs_check(out, *shipped)
        if self.missing:
            raise Stopped()
        out.append("IMPL kernel" if self.kernel_wireguard else "IMPL userspace /usr/local/lib/vpnaas/wireguard-go v1")

    def step_service_addresses(self, out, *addresses):
        self.service_addresses = list(addresses)

    def step_stage_routes(self, out, *pairs):
        planned = dict(zip(pairs[0::2], pairs[1::2]))
        for name, data in planned.items():
            self.routes_files[name] = self.data[data + "_ROUTES"]
        for name in self.routes_files:
            if name not in planned:
                self.routes_files[name] = ""

    def step_apply_device(self, out, name, mode, source, restart, data, implementation):
        body = self.data[data + "_BODY"]
        impl = implementation
        if impl == "auto":
            impl = "kernel" if self.kernel_wireguard else "wireguard-go"
        if (impl == "kernel" and not self.kernel_wireguard) or (impl != "kernel" and impl not in self.usable):
            out.append("FAILED {} {} is not available on the VNF".format(name, impl))
            return
        dev = self.devices.get(name)
        if dev is None:
            dev = self.devices[name] = Device(name)
        if mode not in ("keep", "fresh", "copy") or (mode == "copy") == (source == "-"):
            self.unexpected.append("apply_device with key mode {} {}".format(mode, source))
        if mode == "fresh" or (mode == "copy" and source in self.devices
                               and self.devices[source].private_key != dev.private_key):
            self.retired_keys.append(dev.private_key)
            if mode == "fresh":
                dev.private_key, dev.public_key = keypair()
            else:
                dev.private_key, dev.public_key = self.devices[source].private_key, self.devices[source].public_key
            for peer in dev.peers:   # a new private key drops the device's sessions
                self.handshakes.pop(peer["public-key"], None)
        out.append(report.line("PUBKEY", name, dev.public_key))
        interface, peers = parse_wg_quick("[Interface]\n" + body)
        old_signature = dev.signature()
        dev.interface = interface
        if name in self.broken_devices:
            dev.up = False
            out.append("FAILED {} {}".format(name, self.broken_devices[name]))
            return
        if restart == "0" and dev.up and old_signature == dev.signature() and dev.implementation == impl:
            dev.syncs += 1
            how = "syncconf"
        else:
            dev.up, how = True, "up"
            dev.starts += 1
            dev.implementation = impl
            for peer in peers:   # a restarted device starts without sessions
                self.handshakes.pop(peer["public-key"], None)
        dev.peers = peers
        self._apply_routes(out, name, self.routes_files.get(name, ""))
        out.append("DATAPLANE {} {} {}".format(name, impl, "1.0" if impl == "kernel" else "v1"))
        out.append("APPLIED {} {}".format(name, how))

    def _apply_routes(self, out, name, text):
        wanted = []
        for line in text.splitlines():
            prefix, src = line.split(" ")
            if prefix in self.foreign_routes:
                out.append("REFUSED {} {} a route this charm did not create is in the way: {}"
                           .format(name, prefix, self.foreign_routes[prefix]))
                continue
            held = self.routes.get(prefix)
            if held is not None and held[0] != name:
                self.route_moves.append((prefix, held[0], name))
            self.routes[prefix] = (name, "" if src == "-" else src)
            self.routes_ever.add(prefix)
            wanted.append(prefix)
        # As tunnels.sh: a prefix another device's route list holds is left for that device to
        # take over (replace), never deleted in between.
        elsewhere = {line.split(" ")[0] for other, text in self.routes_files.items() if other != name
                     for line in text.splitlines()}
        for prefix in [p for p, (dev, _) in self.routes.items() if dev == name and p not in wanted
                       and p not in elsewhere]:
            del self.routes[prefix]

    def step_pq_psk_apply(self, out, *pairs):
        """tunnels/pqpsk.sh: one daemon file per device with pq-psk peers (the device's public key
        added), the daemon running exactly when there is one."""
        files = {}
        for name, data in zip(pairs[0::2], pairs[1::2]):
            body = self.data[data + "_PQ"]
            if body and name in self.devices:
                files[name] = body + "public {}\n".format(self.devices[name].public_key)
        self.pq_files = files
        if files and "pq-psk" not in self.usable:
            out.append("FAILED pq-psk pq-psk is not installed on the VNF and the charm does not ship it")
            return
        if files and self.pq_psk_fails:   # a daemon that exits at its start (tunnels/pqpsk.sh)
            out.append("FAILED pq-psk the pq-psk daemon exited at its start: " + self.pq_psk_fails)
            return
        out.append("PQPSK " + ("up" if files else "off"))

    def step_remove_stale_devices(self, out, *wanted):
        for name in sorted(self.devices):
            if name not in wanted:
                self.retired_keys.append(self.devices.pop(name).private_key)
                self.routes_files.pop(name, None)
                for prefix in [p for p, (dev, _) in self.routes.items() if dev == name]:
                    del self.routes[prefix]
                out.append("REMOVED " + name)

    def step_qos_step(self, out, *args):
        """The slice's marking and queuing as the charm asked (vnf/tunnels/qos.sh), kept for the
        tests; reported as the VNF reports them (the queue's devices are the VNF's: none here)."""
        self.qos_args = list(args)
        marks = list(args[:args.index("--")]) if "--" in args else list(args)
        out.extend("QOS mark {} {}".format(*m.split(":", 1)) for m in marks)
        if not marks:
            out.append("QOS off")

    def step_metrics_apply(self, out, port):
        """What the exporter would be given: the labels document (None: no exporter)."""
        labels = self.data.get("METRICS_LABELS")
        self.metrics_labels = json.loads(labels) if labels and port != "0" else None
        out.append("METRICS off" if port == "0" else "METRICS up {}:{}".format(self.host, port))

    def step_teardown(self, out):
        self.step_remove_stale_devices(out)
        self.service_addresses = []
        out.append("TORNDOWN")

    def fact_lines(self, names):
        lines = ["addr " + cidr for _ifname, cidr in self.interfaces]
        lines += ["gateway " + g for g in self.gateways]
        lines += ["client " + self.client_address, "ipv6 " + ("on" if self.ipv6 else "off")]
        for name in names:
            lines += ["resolve {} {}".format(name, a) for a in self.dns.get(name, [])] or ["resolve {} -".format(name)]
        return sorted(lines)

    def step_facts_guard(self, out, expected, *names):
        lines = self.fact_lines(names)
        digest = hashlib.sha256(("\n".join(lines) + "\n").encode()).hexdigest()
        out += [report.line("FACT", line) for line in lines] + [report.line("FACTS", digest)]
        if expected != digest:
            out.append(report.line("FACTS", "changed"))
            raise Stopped()

    def step_report(self, out, *names):
        out += [report.line("HOST", self.hostname), report.line("NOW", str(self.now))]
        for name in names:
            dev = self.devices.get(name)
            if dev is None or not dev.up:
                out.append(report.line("DOWN", name))
                continue
            out.append(report.line("UP", name))
            for p in dev.peers:
                fields = [p["public-key"], "(none)", p["endpoint"] or "(none)", ",".join(p["allowed-ips"]) or "(none)",
                          str(self.handshakes.get(p["public-key"], 0)), "1024", "2048", p["keepalive"]]
                out.append(report.line("PEER", name, "\t".join(fields)))
        out += self.pq_report

    # ------------------------------------------------------------------ what tests look at
    def peer_keys(self, name):
        return [p["public-key"] for p in self.devices[name].peers]

    def allowed_ips(self, name):
        return {p["public-key"]: p["allowed-ips"] for p in self.devices[name].peers}


# ---------------------------------------------------------------------- the wire (paramiko's edge)
class FakeNetwork(object):
    """The VNFs reachable from the proxy machine, by (host, port)."""

    def __init__(self):
        self.vnfs = {}

    def add(self, vnf):
        self.vnfs[(vnf.host, vnf.port)] = vnf
        return vnf

    def connect(self, client, hostname, port=22, username=None, password=None, pkey=None, **_options):
        """What paramiko.SSHClient.connect does, in the same order: TCP, banner, host key, login."""
        vnf = self.vnfs.get((hostname, port))
        if vnf is None or vnf.fault == "refused":
            raise ConnectionRefusedError(111, "Connection refused")
        if vnf.fault == "timeout":
            raise socket.timeout("timed out")
        if vnf.fault == "banner":
            raise paramiko.SSHException("Error reading SSH protocol banner")
        if vnf.fault == "incompatible":
            raise paramiko.SSHException("Incompatible ssh peer (no acceptable host key)")
        client._transport = transport = FakeTransport(vnf)   # paramiko's policies log through it
        name = hostname if port == 22 else "[{}]:{}".format(hostname, port)
        known = client._host_keys.get(name)   # as paramiko: the policy decides about unknown hosts
        if known is None:
            client._policy.missing_host_key(client, name, vnf.host_key)
        elif known.get(vnf.host_key.get_name()) != vnf.host_key:
            raise paramiko.BadHostKeyException(hostname, vnf.host_key, list(known.values())[0])
        if vnf.fault == "no-session":
            raise paramiko.SSHException("No existing session")
        if not vnf.login(username, password, pkey):
            raise paramiko.AuthenticationException("Authentication failed.")
        vnf.logins += 1
        transport.username = username


class FakeTransport(object):
    def __init__(self, vnf):
        self.vnf, self.username = vnf, None

    def _log(self, level, message):
        pass

    def open_session(self, timeout=None):
        if self.vnf.fault == "channel":
            raise paramiko.SSHException("No existing session")
        return FakeChannel(self.vnf, self.username)

    def close(self):
        pass

    def join(self, timeout=None):
        """paramiko's Transport is a thread the session waits for after closing; this one has none."""


class _Clock(object):
    """Waiting on a channel that never finishes moves this clock (see ssh.Session._run's deadline)."""

    def __init__(self):
        self.now = 0.0

    def monotonic(self):
        return self.now


CLOCK = _Clock()


class _StatusEvent(object):
    def __init__(self):
        self.event = threading.Event()

    def set(self):
        self.event.set()

    def wait(self, timeout):
        CLOCK.now += timeout
        return self.event.is_set()


class FakeChannel(object):
    """The subset of paramiko.Channel that ssh.Session uses."""

    def __init__(self, vnf, username):
        self.vnf, self.username = vnf, username
        self.command, self.stdin = None, b""
        self.out, self.err, self.rc = b"", b"", None
        self.eof_received = self.closed = False
        self.status_event = _StatusEvent()

    def settimeout(self, timeout):
        pass

    def exec_command(self, command):
        self.command = command

    def sendall(self, data):
        self.stdin += data

    def shutdown_write(self):
        answer = self.vnf.execute(self.command, self.stdin, self.username)
        if answer is None:
            return
        rc, out, err = answer
        self.rc, self.out, self.err = rc, out.encode(), err.encode()
        self.eof_received = True
        self.status_event.set()

    def exit_status_ready(self):
        return self.rc is not None

    def recv_ready(self):
        return bool(self.out)

    def recv(self, size):
        chunk, self.out = self.out[:size], self.out[size:]
        return chunk

    def recv_stderr_ready(self):
        return bool(self.err)

    def recv_stderr(self, size):
        chunk, self.err = self.err[:size], self.err[size:]
        return chunk

    def recv_exit_status(self):
        return self.rc

    def close(self):
        self.closed = True
