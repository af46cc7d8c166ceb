"""SSH from the proxy machine to the VNF, on paramiko.

Why not charms.osm's SSHProxy: it passes the password on the command line (sshpass) and never
checks host keys. Here the host key is trusted on first use and pinned afterwards (a changed key
is refused with a message that says what to do), every connection and command has a deadline,
and each call is one session: the caller decides how many round trips a reconcile costs (one).

A VNF that OSM re-provisions at the same address (heal) has a new host key. The charm accepts it
only after an instruction that comes through Juju, never from the network: ``expect_new_host_key``
(OSM's generate-ssh-key on a unit that already pinned its VNF: docs/security.md) lets the next
login that succeeds pin whatever key the VNF presents, once.
"""
import base64
import hashlib
import logging
import os
import socket
import threading
import time
import warnings
from typing import Any, Callable, List, Optional, Tuple

from vpnaas.core import unitstate

logger = logging.getLogger(__name__)
# paramiko logs every protocol step at DEBUG; in a charm that would flood juju-log.
logging.getLogger("paramiko").setLevel(logging.WARNING)
# cryptography warns about Python 3.6 on every import: on OSM's proxy machine (Python 3.6) that is
# every hook that opens a session or makes a key, and the warning lands in the hook's stderr.
warnings.filterwarnings("ignore", message=".*Python 3.6 is no longer supported.*")


def _paramiko() -> Any:
    """paramiko (and cryptography below it) take most of a hook's start-up time; only the
    hooks that really open a session pay for it."""
    import paramiko
    return paramiko

def load_library() -> None:
    """Import paramiko (and cryptography below it) in a hook that opens no session: install and
    upgrade-charm, the first hooks after Juju unpacked the charm. Juju 2.9 writes the charm's
    files without the archive's times (juju/utils zip ``ExtractAll``), so bytecode shipped in the
    charm would not carry its source's time and be compiled again anyway (Python 3.6 has no
    hash-checked bytecode), and a unit's first import compiles it: without this, in the unit's
    first session, which for the VNF configured last is on the path to its tunnels (about a
    tenth of a CPU-second; docs/figures.md, hook6). Python writes the bytecode into the charm's
    directory (the unit agent's, written by the hooks' user), for every later hook. A warm-up only:
    a library that cannot be imported is logged here and fails the first session's hook, as it
    did before, never the install."""
    try:
        _paramiko()
    except ImportError as error:
        logger.warning("the SSH library cannot be imported (a session will fail): %s", error)


KEY_FILE = unitstate.KEY_FILE
KNOWN_HOSTS = "known_hosts"
#: The pinned hosts whose next successful login may present a new host key (one entry a line).
REPROVISIONED = "known_hosts.reprovisioned"
CLOSE_JOIN_TIMEOUT = 5.0   # s; the transport thread ends at once on the shut-down socket (``_close``)
#: The most a command may print on stdout: a step's report is at most 4 MiB (vnf/report.py) and
#: nothing else the charm runs prints more, so a VNF that prints more is stopped, not buffered.
MAX_OUTPUT = 8 * 1024 * 1024
#: Of stderr only the last bytes are kept: it is read for the last line of an error.
MAX_STDERR_KEPT = 64 * 1024
#: A progress line longer than this is handed on cut (a VNF printing no newline at all).
MAX_LINE = 64 * 1024


class SshError(Exception):
    """Connection, authentication or command failure, with a message fit for a unit status.

    ``transient`` is true for what fixes itself (a VNF still booting), false for what needs
    the operator (refused login, changed host key)."""

    def __init__(self, message: str, transient: bool = False) -> None:
        super(SshError, self).__init__(message)
        self.transient = transient


class HostKeyChanged(SshError):
    pass


class _Tail:
    """The last ``limit`` bytes of a stream, in bounded memory."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = b""
        self.dropped = False

    def add(self, chunk: bytes) -> None:
        self.data += chunk
        if len(self.data) > self.limit:
            self.data = self.data[-self.limit:]
            self.dropped = True

    def text(self) -> str:
        text = self.data.decode("utf-8", "replace")
        return "[...]" + text if self.dropped else text


def _lines(pending: bytes, on_line: Callable[[str], None]) -> bytes:
    """Hand each complete line of ``pending`` to ``on_line``; return the incomplete rest, cut
    (and handed on) once it is longer than MAX_LINE."""
    *lines, rest = pending.split(b"\n")
    if len(rest) > MAX_LINE:
        lines.append(rest[:MAX_LINE])
        rest = b""
    for line in lines:
        on_line(line[:MAX_LINE].decode("utf-8", "replace"))
    return rest


def _close(client: Any) -> None:
    """Close ``client`` and wait (bounded) for its transport thread to end. paramiko's close()
    does not join that thread (it stops waiting as soon as it has marked its packetizer closed;
    paramiko issue #799), so a hook that exits right after a session can finalize the interpreter
    while the thread still runs in OpenSSL: glibc then aborts it ("double free or corruption").

    The connection is shut down first: the thread waits in ``recv`` with a 0.1 s timeout and only
    then sees the close, so a session whose thread was in that wait ended up to 0.1 s late (most
    of the charm's sessions, hook6 measured; a hook's commit, which wakes its peers, waits for it;
    docs/figures.md, hook6). A shut-down socket wakes it at once with an end of
    file. What this side sent is already written (paramiko sends from the calling thread) and
    goes before the FIN, as it did before the close; the server sees the same end of the TCP
    connection, without an SSH disconnect message, as before."""
    transport = client.get_transport()
    sock = getattr(transport, "sock", None)
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass            # not connected (any more): the close below does the rest
    client.close()
    if transport is not None and transport is not threading.current_thread():
        transport.join(CLOSE_JOIN_TIMEOUT)


class Target(object):
    def __init__(self, host: str, username: str, password: str = "", port: int = 22,
                 connect_timeout: int = 10) -> None:
        self.host = host
        self.username = username
        self.password = password
        self.port = port
        self.connect_timeout = connect_timeout


class KeyStore(object):
    """The charm's own SSH identity and pinned host keys, kept beside the unit's charm directory."""

    def __init__(self, directory: str) -> None:
        self.directory = directory

    @property
    def key_path(self) -> str:
        return os.path.join(self.directory, KEY_FILE)

    @property
    def known_hosts_path(self) -> str:
        return os.path.join(self.directory, KNOWN_HOSTS)

    def has_key(self) -> bool:
        return os.path.exists(self.key_path)

    def generate_key(self) -> bool:
        """Create an Ed25519 key pair once; an existing key is kept (idempotent). A pair left
        half-written (private key without its public half) is repaired from the private key."""
        if self.has_key():
            self._repair_public_half()
            return False
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ed25519
        key = ed25519.Ed25519PrivateKey.generate()
        pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                                serialization.NoEncryption())
        # Public half first: a crash in between leaves no private key, and the next run starts over.
        unitstate.write_atomic(self.key_path + ".pub", _openssh_public(key), 0o644)
        unitstate.write_atomic(self.key_path, pem, 0o600)
        return True

    def _repair_public_half(self) -> None:
        pub_path = self.key_path + ".pub"
        if os.path.exists(pub_path) and os.path.getsize(pub_path) > 0:
            return
        from cryptography.hazmat.primitives import serialization
        try:
            with open(self.key_path, "rb") as f:
                key = serialization.load_ssh_private_key(f.read(), password=None)
        except (ValueError, OSError) as e:
            raise SshError("the charm's SSH key {} is unreadable ({}): remove it and run generate-ssh-key"
                           .format(self.key_path, str(e) or type(e).__name__)) from None
        unitstate.write_atomic(pub_path, _openssh_public(key), 0o644)

    def public_key(self) -> str:
        if not self.has_key():
            raise SshError("no SSH key yet: run the generate-ssh-key action")
        self._repair_public_half()
        with open(self.key_path + ".pub") as f:
            return f.read().strip()

    def private_key(self) -> Any:
        paramiko = _paramiko()
        try:
            return paramiko.Ed25519Key.from_private_key_file(self.key_path)
        except (paramiko.SSHException, OSError, ValueError) as e:
            raise SshError("the charm's SSH key {} is unreadable ({}): remove it and run generate-ssh-key"
                           .format(self.key_path, str(e) or type(e).__name__)) from None

    def pinned(self, host: str, port: int) -> str:
        """A digest of the host key pinned for ``host`` ("" when none is): what ties facts learnt
        in a session to the machine that reported them. Read as text, without paramiko (it runs in
        every plan): known_hosts lines are ``name[,name] type base64``, as paramiko writes them."""
        name = _host_entry(host, port)
        try:
            with open(self.known_hosts_path) as f:
                lines = f.read().splitlines()
        except OSError:
            return ""
        keys = sorted(" ".join(f[1:3]) for f in (line.split() for line in lines)
                      if len(f) >= 3 and name in f[0].split(","))
        return hashlib.sha256("\n".join(keys).encode()).hexdigest() if keys else ""

    def expect_new_host_key(self, host: str, port: int) -> bool:
        """The VNF pinned for ``host`` is being re-provisioned (its disk and host key replaced):
        the next login that succeeds pins the key it presents. Only callers acting on an
        instruction that came through Juju may call this (an action, never relation data or
        anything the VNF says). False, and nothing recorded, when no key is pinned for it."""
        if not self.pinned(host, port):
            return False
        entries = set(self._expected()) | {_host_entry(host, port)}
        os.makedirs(self.directory, mode=0o700, exist_ok=True)
        unitstate.write_atomic(os.path.join(self.directory, REPROVISIONED),
                               "".join(e + "\n" for e in sorted(entries)).encode(), 0o600)
        return True

    def expects_new_host_key(self, host: str, port: int) -> bool:
        return _host_entry(host, port) in self._expected()

    def _expected(self) -> List[str]:
        try:
            with open(os.path.join(self.directory, REPROVISIONED)) as f:
                return [line.strip() for line in f if line.strip()]
        except OSError:
            return []

    def clear_new_host_key(self, host: str, port: int) -> None:
        """The re-provisioned VNF's key is pinned (or the operator unpinned it): expect no other."""
        left = [e for e in self._expected() if e != _host_entry(host, port)]
        path = os.path.join(self.directory, REPROVISIONED)
        if left:
            unitstate.write_atomic(path, "".join(e + "\n" for e in left).encode(), 0o600)
        elif os.path.exists(path):
            os.remove(path)

    def forget_host(self, host: str, port: int) -> bool:
        self.clear_new_host_key(host, port)
        if not os.path.exists(self.known_hosts_path):
            return False
        keys = _paramiko().HostKeys(self.known_hosts_path)
        name = _host_entry(host, port)
        if name not in keys:
            return False
        while name in keys:
            del keys[name]
        tmp = self.known_hosts_path + ".tmp"
        keys.save(tmp)
        os.chmod(tmp, 0o600)
        os.replace(tmp, self.known_hosts_path)
        return True

    def pin(self, client: Any) -> None:
        """Save the host keys the client knows, atomically (a torn file would unpin the host)."""
        tmp = self.known_hosts_path + ".tmp"
        client.save_host_keys(tmp)
        os.chmod(tmp, 0o600)
        os.replace(tmp, self.known_hosts_path)


def _openssh_public(key: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization
    pub = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return pub + b" vpnaas-proxy\n"


def _host_entry(host: str, port: int) -> str:
    return host if port == 22 else "[{}]:{}".format(host, port)


def fingerprint(key: Any) -> str:
    """OpenSSH's SHA256 fingerprint of a paramiko key (``ssh-keygen -l``'s form)."""
    digest = hashlib.sha256(key.asbytes()).digest()
    return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


def _reason(error: BaseException) -> str:
    return (str(error) or type(error).__name__)[:160]


class Session(object):
    """One SSH connection. Use as a context manager; ``run`` may be called more than once."""

    def __init__(self, target: Target, keystore: KeyStore) -> None:
        self.target = target
        self.keystore = keystore
        self.client: Any = None
        #: stdout beyond this stops the command (MAX_OUTPUT; a test may lower it).
        self.max_output = MAX_OUTPUT

    def __enter__(self) -> "Session":
        self.connect()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def connect(self) -> None:
        paramiko = _paramiko()
        t = self.target
        client = paramiko.SSHClient()
        known = self.keystore.known_hosts_path
        entry = _host_entry(t.host, t.port)
        keys = client.get_host_keys()
        if os.path.exists(known):
            # Loaded as plain entries, not as the client's file: paramiko would save an added key
            # into that file before the login succeeded, and merge the file back into what it saves.
            keys.load(known)
        reprovisioned = self.keystore.expects_new_host_key(t.host, t.port)
        replaced = []
        if reprovisioned:
            while entry in keys:
                replaced += list(keys[entry].values())
                del keys[entry]
        first_contact = entry not in keys
        # Trust on first use: accept and pin the key the first time, refuse any other key later.
        client.set_missing_host_key_policy(paramiko.AutoAddPolicy() if first_contact else paramiko.RejectPolicy())
        pkey = self.keystore.private_key() if (self.keystore.has_key() and not t.password) else None
        try:
            client.connect(t.host, port=t.port, username=t.username, password=t.password or None, pkey=pkey,
                           timeout=t.connect_timeout, banner_timeout=t.connect_timeout,
                           auth_timeout=t.connect_timeout, allow_agent=False, look_for_keys=False)
        except paramiko.BadHostKeyException:
            _close(client)
            raise HostKeyChanged("host key of {} changed since it was pinned; if the VNF was rebuilt, "
                                 "run the reset-ssh-host-key action".format(t.host)) from None
        except paramiko.AuthenticationException:
            _close(client)
            if reprovisioned:
                raise SshError("the VNF at {} is being re-provisioned: waiting for OSM to inject this charm's SSH "
                               "key (get-ssh-public-key)".format(t.host), transient=True) from None
            raise SshError("SSH login as {} on {} refused (check ssh-username/ssh-password, or that OSM "
                           "injected the key from get-ssh-public-key)".format(t.username, t.host)) from None
        except paramiko.SSHException as e:
            _close(client)
            if "not found in known_hosts" in str(e):
                raise HostKeyChanged("host key of {} changed since it was pinned; if the VNF was rebuilt, "
                                     "run the reset-ssh-host-key action".format(t.host)) from None
            # Banner and handshake timeouts, resets and "No existing session" (an sshd that is
            # hung or still starting) fix themselves: Waiting, retried at the next event. Only a
            # server no algorithm can be agreed with needs the operator.
            operator_fault = any(w in str(e) for w in ("no acceptable", "Incompatible"))
            raise SshError("SSH to {}:{} failed: {}".format(t.host, t.port, _reason(e)),
                           transient=not operator_fault) from None
        except (socket.error, socket.timeout, EOFError) as e:
            _close(client)
            raise SshError("VNF {}:{} unreachable: {}".format(t.host, t.port, _reason(e)), transient=True) from None
        if first_contact:
            os.makedirs(self.keystore.directory, mode=0o700, exist_ok=True)
            self.keystore.pin(client)
        if reprovisioned:
            new = keys[entry].values() if entry in keys else []
            old_prints = sorted({fingerprint(k) for k in replaced})
            new_prints = sorted({fingerprint(k) for k in new})
            if old_prints != new_prints:
                logger.warning("host key of %s replaced after OSM re-provisioned the VNF: %s -> %s", t.host,
                               ", ".join(old_prints) or "none", ", ".join(new_prints))
            self.keystore.clear_new_host_key(t.host, t.port)
        self.client = client

    def run(self, command: str, stdin: bytes = b"", timeout: int = 120,
            on_line: Optional[Callable[[str], None]] = None) -> Tuple[int, str, str]:
        """Run ``command`` (a string for the remote shell) with ``stdin``; returns (rc, out, err).

        paramiko's exec timeout only bounds single reads, so the deadline is enforced here, on
        every pass (a command that never stops printing is stopped too), and both streams are
        drained while waiting so that a full window never blocks the exit. ``on_line`` is called
        with each complete stdout line as it arrives (progress display)."""
        paramiko = _paramiko()
        try:
            return self._run(command, stdin, timeout, on_line)
        except (paramiko.SSHException, socket.error, socket.timeout, EOFError) as e:
            raise SshError("SSH session to {} broke: {}".format(self.target.host, str(e) or type(e).__name__),
                           transient=True) from None

    def _run(self, command: str, stdin: bytes, timeout: int,
             on_line: Optional[Callable[[str], None]]) -> Tuple[int, str, str]:
        chan = self.client.get_transport().open_session(timeout=self.target.connect_timeout)
        chan.settimeout(self.target.connect_timeout)
        chan.exec_command(command)
        if stdin:
            chan.sendall(stdin)
        chan.shutdown_write()
        out: List[bytes] = []
        err = _Tail(MAX_STDERR_KEPT)
        size = 0
        pending = b""
        deadline = time.monotonic() + timeout
        while True:
            if time.monotonic() > deadline:
                chan.close()
                raise SshError("command on {} did not finish within {} s".format(self.target.host, timeout),
                               transient=True)
            # Read the end flag before the buffers: EOF comes after all the data (sshd may report
            # the exit status before the last output), so once EOF was seen and both buffers are
            # then found empty, nothing is left to read.
            finished = chan.eof_received and (chan.exit_status_ready() or chan.closed)
            got = False
            if chan.recv_ready():
                got = True
                chunk = chan.recv(65536)
                size += len(chunk)
                if size > self.max_output:
                    chan.close()
                    raise SshError("command on {} printed more than {} bytes: stopped".format(
                        self.target.host, self.max_output))
                out.append(chunk)
                if on_line is not None:
                    pending = _lines(pending + chunk, on_line)
            if chan.recv_stderr_ready():
                got = True
                err.add(chan.recv_stderr(65536))
            if got:
                continue
            if finished:
                break
            # Wakes as soon as the command exits; data arriving meanwhile waits at most 50 ms.
            chan.status_event.wait(0.05)
        rc = chan.recv_exit_status() if chan.exit_status_ready() else -1
        chan.close()
        return rc, b"".join(out).decode("utf-8", "replace"), err.text()

    def close(self) -> None:
        if self.client is not None:
            _close(self.client)
            self.client = None
