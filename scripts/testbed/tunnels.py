"""Tunnels set up by hand between two VNFs, beside the charms' tunnel, for the bench.

- ``WireGuardPair``: a bare WireGuard pair -- the same userspace implementation the charms use
  (or boringtun), the same MTU, one peer each, no wg-quick, no routes, no service addresses:
  what the charms' tunnel is compared with to tell the product's cost from WireGuard's own.
- ``OpenVpnPair``: OpenVPN in userspace over UDP (Debian's ``openvpn``, data-channel offload
  off), TLS mode with a throwaway PKI made with openssl at run time (static-key mode has no
  AEAD ciphers), one data cipher per pair: AES-256-GCM or CHACHA20-POLY1305.

Each pair lives inside the VNFs' namespaces (their own /run/wireguard), on the VNFs' underlay
link, with its own tunnel addresses; ``down`` stops the daemons it started and nothing else.
"""
import os
import shutil
import subprocess
import tempfile
import time

from testbed.emulators import vim


class TunnelError(Exception):
    pass


def boringtun_path():
    """build/tools/boringtun-cli (``make boringtun``), else one on PATH, else None."""
    built = os.path.join(vim.REPO_DIR, "build", "tools", "boringtun-cli")
    if os.access(built, os.X_OK):
        return built
    return shutil.which("boringtun-cli")


def impl_of(path):
    """"boringtun" or "wireguard-go", from the executable's name."""
    return "boringtun" if os.path.basename(path).startswith("boringtun") else "wireguard-go"


def version_of(path):
    out = vim.sh([path, "--version"], check=False).stdout.split()
    return out[1] if len(out) > 1 else "unknown"


def _wait(predicate, what, timeout=10.0, proc=None, log=None):
    """Poll ``predicate``; give up after ``timeout`` or as soon as ``proc`` (the daemon that should
    make it true) has exited, naming its exit code and the end of its ``log``."""
    deadline = time.monotonic() + timeout
    while not predicate():
        died = proc is not None and proc.poll() is not None
        if died or time.monotonic() > deadline:
            why = "exited with {}".format(proc.returncode) if died else "after {:.0f} s".format(timeout)
            raise TunnelError("{} ({}){}".format(what, why, _tail(log)))
        time.sleep(0.05)


def _tail(log, lines=5):
    try:
        with open(log) as f:
            text = f.read().strip().splitlines()[-lines:]
    except (TypeError, OSError):
        return ""
    return "; its log ends: " + " | ".join(text) if text else "; its log is empty"


class _Pair(object):
    """Two daemons, one in each VNF; ``addresses`` are (a's, b's) tunnel addresses."""
    label = "pair"

    def __init__(self, a, b, a_underlay, b_underlay, net_index):
        self.a, self.b = a, b
        self.underlay = (a_underlay, b_underlay)
        self.addresses = ("10.{}.0.1".format(200 + net_index), "10.{}.0.2".format(200 + net_index))
        self.procs = []

    def up(self):
        """Start both daemons and wait until traffic passes; if that fails, stop what was started."""
        try:
            self._start()
        except BaseException:
            self.down()
            raise
        return self

    def pids(self):
        return [str(p.pid) for p in self.procs if p.poll() is None]

    def alive(self):
        return all(p.poll() is None for p in self.procs)

    def down(self):
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.procs = []

    def reachable(self):
        out = self.a.exec(["ping", "-c", "1", "-W", "1", "-I", self.addresses[0], self.addresses[1]], check=False)
        return out.returncode == 0


class WireGuardPair(_Pair):
    """``impl`` is "wireguard-go" or "boringtun"; ``path`` its binary. ``wrappers`` (one argv
    prefix per side, e.g. ``["taskset", "-c", "0"]``), ``env`` and ``options`` (extra daemon
    arguments) serve the latency probe."""

    def __init__(self, a, b, a_underlay, b_underlay, net_index, impl, path, mtu=1420, port=51900,
                 wrappers=((), ()), env=None, options=()):
        super().__init__(a, b, a_underlay, b_underlay, net_index)
        self.impl, self.path, self.mtu, self.port = impl, path, mtu, port + net_index
        self.wrappers, self.env, self.options = wrappers, dict(env or {}), list(options)
        self.device = "wgb{}".format(net_index)
        self.logs = []
        self.label = "{} {} (bare pair, MTU {})".format(impl, version_of(path), mtu)

    def _argv(self, side):
        env = ["env"] + ["{}={}".format(k, v) for k, v in sorted(self.env.items())]
        if self.impl == "boringtun":
            # As root it must keep its privileges, else it fails and leaves a stale socket.
            daemon = [self.path, "--foreground", "--disable-drop-privileges"] + self.options + [self.device]
        else:
            daemon = ["WG_PROCESS_FOREGROUND=1", self.path, "-f"] + self.options + [self.device]
        return list(self.wrappers[side]) + env + daemon

    def _start(self):
        keys = []
        for side, vnf in enumerate((self.a, self.b)):
            key = os.path.join(vnf.state_dir, self.device + ".key")
            priv = vim.sh(["wg", "genkey"]).stdout.strip()
            fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(priv + "\n")
            pub = vim.sh(["wg", "pubkey"], input=priv + "\n").stdout.strip()
            keys.append((key, pub))
            log = os.path.join(vnf.state_dir, self.device + ".log")
            self.logs.append(log)
            with open(log, "w") as f:
                self.procs.append(vnf.popen(self._argv(side), stdout=f, stderr=subprocess.STDOUT,
                                            start_new_session=True))
        for i, vnf in enumerate((self.a, self.b)):
            # Not `wg show`: polled while the daemon starts, it can delete the socket (Vnf.wg_show).
            _wait(lambda vnf=vnf: vnf.uapi_listening(self.device),
                  "{} did not create {} in {}".format(self.impl, self.device, vnf.name),
                  proc=self.procs[i], log=self.logs[i])
            other = 1 - i
            vnf.exec(["wg", "set", self.device, "listen-port", str(self.port), "private-key", keys[i][0],
                      "peer", keys[other][1], "endpoint", "{}:{}".format(self.underlay[other], self.port),
                      "allowed-ips", self.addresses[other] + "/32"])
            vnf.exec(["ip", "addr", "add", self.addresses[i] + "/30", "dev", self.device])
            vnf.exec(["ip", "link", "set", "dev", self.device, "mtu", str(self.mtu), "up"])
        _wait(self.reachable, "no traffic through the bare {} pair".format(self.impl))


#: OpenVPN's names of the two AEAD ciphers it offers for its data channel.
OPENVPN_CIPHERS = ("AES-256-GCM", "CHACHA20-POLY1305")


def make_pki(directory):
    """A throwaway CA, server and client certificate (ECDSA P-256, valid one day)."""
    def ossl(*args):
        vim.sh(["openssl"] + list(args), cwd=directory)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    ossl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-subj", "/CN=bench-ca", "-days", "1")
    for name, usage in (("server", "serverAuth"), ("client", "clientAuth")):
        with open(os.path.join(directory, name + ".ext"), "w") as f:
            f.write("extendedKeyUsage={}\nkeyUsage=digitalSignature,keyAgreement\n".format(usage))
        ossl("req", *ec, "-keyout", name + ".key", "-out", name + ".csr", "-subj", "/CN=" + name)
        ossl("x509", "-req", "-in", name + ".csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
             "-out", name + ".crt", "-days", "1", "-extfile", name + ".ext")
    return directory


class OpenVpnPair(_Pair):
    def __init__(self, a, b, a_underlay, b_underlay, net_index, cipher, pki_dir, mtu=1420, port=1194):
        super().__init__(a, b, a_underlay, b_underlay, net_index)
        self.cipher, self.pki, self.mtu, self.port = cipher, pki_dir, mtu, port + net_index
        self.device = "ovpn{}".format(net_index)
        self.label = "OpenVPN {} {} (userspace, UDP, MTU {})".format(openvpn_version(), cipher, mtu)
        self.logs = []

    def _argv(self, i):
        role, other = ("client", 1) if i == 0 else ("server", 0)
        p = self.pki
        return ["openvpn", "--dev", self.device, "--dev-type", "tun", "--proto", "udp",
                "--local", self.underlay[i], "--lport", str(self.port),
                "--remote", self.underlay[other], "--rport", str(self.port),
                "--ifconfig", self.addresses[i], self.addresses[other],
                "--tls-" + role, "--dh", "none", "--ca", os.path.join(p, "ca.crt"),
                "--cert", os.path.join(p, role + ".crt"), "--key", os.path.join(p, role + ".key"),
                "--remote-cert-tls", "server" if role == "client" else "client",
                "--data-ciphers", self.cipher, "--cipher", self.cipher,
                "--tun-mtu", str(self.mtu), "--disable-dco", "--verb", "3", "--script-security", "0"]

    def _start(self):
        for i, vnf in enumerate((self.a, self.b)):
            log = os.path.join(vnf.state_dir, "{}.log".format(self.device))
            self.logs.append(log)
            with open(log, "w") as f:
                self.procs.append(vnf.popen(self._argv(i), stdout=f, stderr=subprocess.STDOUT, start_new_session=True))
        _wait(self.reachable, "no traffic through OpenVPN {} (see {})".format(self.cipher, self.logs[0]), 30)
        text = open(self.logs[0]).read()
        if "'{}'".format(self.cipher) not in text:
            raise TunnelError("OpenVPN did not report data cipher {} (see {})".format(self.cipher, self.logs[0]))


def openvpn_version():
    out = vim.sh(["openvpn", "--version"], check=False).stdout.split()
    return out[1] if len(out) > 1 else "unknown"


class Pki(object):
    """Context manager: a PKI in a new temporary directory, removed afterwards."""

    def __enter__(self):
        self.dir = tempfile.mkdtemp(prefix="vpnaas-bench-pki-")
        return make_pki(self.dir)

    def __exit__(self, *exc):
        shutil.rmtree(self.dir, ignore_errors=True)
