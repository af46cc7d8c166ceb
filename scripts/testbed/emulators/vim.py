"""VIM emulation: VNFs as network namespaces, virtual links as bridges, a real sshd per VNF.

Layout for a testbed with id ``tb``:
  netns ``<tb>-infra``  the bridges (one per virtual link, ``br-<link>``), the management bridge
                        with the VCA's address, and every VNF's veth peer; the emulated VCA runs
                        its hooks here, so the charms reach the VNFs exactly as OSM's LXD proxy
                        machine would: over the management network.
  netns ``<tb>-<vnf>``  eth0 on the management network, eth1... on the links, and sshd in a
                        private mount and UTS namespace with its own /etc/wireguard and
                        /run/wireguard (userspace WireGuard keeps its UAPI sockets there), so two
                        VNFs can both have a device ``wg-s6a``; its sshd: vnf_login.
Nothing is created in the host's own network namespace. ``teardown`` removes everything, and
``cleanup_stale`` removes what an interrupted earlier run left.
"""
import ipaddress
import json
import os
import secrets
import shutil
import signal
import subprocess
import time

from testbed.emulators import vnf_login

NETNS_PREFIX = "vpnaas-tb"
#: One file per live testbed, naming the process that owns it: cleanup_stale leaves those alone.
OWNERS_DIR = "/run/vpnaas-testbed"
MGMT_CIDR = "198.18.0.0/24"   # RFC 2544 benchmarking range: never a real network
#: Where the charms install the userspace WireGuard programs they ship (vpnaas/vnf/dataplane.py).
DATAPLANE_DIR = "/usr/local/lib/vpnaas"
REPO_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


class VimError(Exception):
    pass


def sh(argv, check=True, **kw):
    kw.setdefault("stdout", subprocess.PIPE)
    kw.setdefault("stderr", subprocess.PIPE)
    proc = subprocess.run(argv, universal_newlines=True, **kw)
    if check and proc.returncode != 0:
        raise VimError("{} failed ({}): {}".format(" ".join(argv), proc.returncode, (proc.stderr or "").strip()))
    return proc


def list_testbed_netns():
    out = sh(["ip", "netns", "list"], check=False).stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith(NETNS_PREFIX)]


def kill_netns_processes(ns):
    pids = sh(["ip", "netns", "pids", ns], check=False).stdout.split()
    for sig in (signal.SIGTERM, signal.SIGKILL):
        alive = []
        for pid in pids:
            try:
                os.kill(int(pid), sig)
                alive.append(pid)
            except (ProcessLookupError, ValueError):
                pass
        if not alive:
            return
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline and any(_alive(p) for p in alive):
            time.sleep(0.05)
        pids = [p for p in alive if _alive(p)]


def _alive(pid):
    """False once ``pid`` has exited. A process of ours that exited stays a zombie until reaped
    (the VNFs' anchors and sshd are this process's children): reap it, else every teardown
    would wait out its whole deadline per VNF."""
    try:
        with open("/proc/{}/stat".format(pid)) as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    if state != "Z":
        return True
    try:
        os.waitpid(int(pid), os.WNOHANG)
    except ChildProcessError:
        pass      # another process's zombie: its parent reaps it
    return False


def userspace_wireguard():
    """The newest wireguard-go built by `make wireguard-go` (several times faster than the 2022
    distribution build, see the README), else the distribution's, else None."""
    built = os.path.join(REPO_DIR, "build", "tools", "wireguard-go")
    if os.access(built, os.X_OK):
        return built
    return shutil.which("wireguard-go")


def _ipv4_only(ns):
    """The testbed's IP plan is IPv4; without IPv6, no neighbour discovery or MLD chatter
    appears in the captures that prove the links carry only WireGuard."""
    sh(["ip", "netns", "exec", ns, "sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1",
        "net.ipv6.conf.default.disable_ipv6=1"])


def _comm(pid):
    try:
        with open("/proc/{}/comm".format(pid)) as f:
            return f.read().strip()
    except OSError:
        return ""


def _owner_alive(tb_id):
    try:
        with open(os.path.join(OWNERS_DIR, tb_id)) as f:
            pid = int(f.read().strip())
    except (OSError, ValueError):
        return False
    return os.path.exists("/proc/{}".format(pid))


def cleanup_stale():
    """Remove the testbed namespaces (and their processes) left by interrupted runs; those of a
    testbed whose owning process is still alive (another test or demo running now) stay."""
    removed = []
    for ns in list_testbed_netns():
        if any(_owner_alive(ns[:i]) for i in _id_cuts(ns)):
            continue
        kill_netns_processes(ns)
        sh(["ip", "netns", "del", ns], check=False)
        removed.append(ns)
    return removed


def _id_cuts(ns):
    """Every prefix of ``ns`` ending before a '-' (a testbed id is one of them)."""
    return [i for i, ch in enumerate(ns) if ch == "-"] + [len(ns)]


class Vnf(object):
    def __init__(self, testbed, name, index, mgmt_ip):
        self.testbed = testbed
        self.name = name
        self.index = index
        self.mgmt_ip = mgmt_ip
        self.netns = "{}-{}".format(testbed.id, name)
        self.state_dir = os.path.join(testbed.workdir, "vnf", name)
        self.links = {}       # link name -> (interface, address/prefix)
        self.sshd = None
        self.anchor = None
        self.env = {}
        self.link_plan = {}   # link name -> "address/prefix", as created (a rebuild keeps it)
        self.macs = {}        # port number -> MAC address: a port keeps its MAC through a rebuild

    @property
    def ns_pid(self):
        return self.anchor.pid

    def exec(self, argv, check=True, timeout=60, **kw):
        """Run argv inside this VNF: its network, mount (own /etc/wireguard) and UTS namespaces."""
        return sh(["nsenter", "-t", str(self.ns_pid), "-m", "-n", "-u", "--"] + list(argv), check=check,
                  timeout=timeout, **kw)

    def popen(self, argv, **kw):
        return subprocess.Popen(["nsenter", "-t", str(self.ns_pid), "-m", "-n", "-u", "--"] + list(argv), **kw)

    def uapi_listening(self, device):
        """True once a userspace WireGuard daemon listens on ``device``'s UAPI socket. Read from
        the kernel's table of this VNF's Unix sockets, so nothing connects to the socket."""
        paths = {"{}/{}.sock".format(d, device) for d in ("/var/run/wireguard", "/run/wireguard")}
        with open("/proc/{}/net/unix".format(self.ns_pid)) as table:
            for line in table:
                f = line.split()
                # Num RefCount Protocol Flags Type St Inode Path; Flags 00010000 is __SO_ACCEPTCON.
                # boringtun binds "/var/run/wireguard//<device>.sock".
                if len(f) >= 8 and os.path.normpath(f[7]) in paths and f[3] == "00010000":
                    return True
        return False

    def wg_show(self, device, *fields):
        """stdout of `wg show device fields...` inside this VNF; "" while ``device``'s userspace
        daemon is still starting.

        Not plain `wg show`: when connecting to a UAPI socket is refused, `wg` deletes the
        socket as stale, and a daemon's socket refuses connections in the instant between its
        bind() and listen(); the daemon then exits ("Failed to listen on uapi socket"). Polling
        with `wg show` while the charms start wireguard-go killed 4 of 300 starts under load,
        so `wg` is asked only once the socket listens, or for a kernel device (no socket)."""
        if not self.uapi_listening(device):
            link = self.exec(["ip", "-d", "-o", "link", "show", "dev", device], check=False).stdout
            if " wireguard " not in link:
                return ""
        return self.exec(["wg", "show", device] + list(fields), check=False).stdout

    def address(self, link):
        return self.links[link][1]

    def pids(self, comm):
        """This VNF's processes named ``comm`` (only this VNF's: the namespaces share the machine's
        process table)."""
        pids = sh(["ip", "netns", "pids", self.netns], check=False).stdout.split()
        return [p for p in pids if _comm(p) == comm]

    def kill(self, comm):
        """Kill this VNF's processes named ``comm`` -- only this VNF's: the namespaces share the
        machine's process table, so `pkill` inside a VNF would reach every testbed."""
        killed = self.pids(comm)
        for pid in killed:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass
        return killed


class Testbed(object):
    def __init__(self, workdir, tb_id=None, userspace_wireguard=None):
        self.workdir = os.path.abspath(workdir)
        self.id = tb_id or "{}{:x}".format(NETNS_PREFIX, secrets.randbits(24))
        self.infra = self.id + "-infra"
        self.userspace_wireguard = userspace_wireguard
        self.vnfs = {}
        self.links = {}       # name -> ip_network
        self._mgmt_hosts = ipaddress.ip_network(MGMT_CIDR).hosts()
        self.vca_ip = str(next(self._mgmt_hosts))
        self.created = False

    # ------------------------------------------------------------------ lifecycle
    def create(self):
        if len(self.infra) > 32:
            raise VimError("testbed id too long")
        os.makedirs(self.workdir, exist_ok=True)
        os.makedirs(OWNERS_DIR, exist_ok=True)
        with open(os.path.join(OWNERS_DIR, self.id), "w") as f:
            f.write(str(os.getpid()))
        sh(["ip", "netns", "add", self.infra])
        self.created = True
        _ipv4_only(self.infra)
        self._infra(["link", "set", "lo", "up"])
        self._bridge("br-mgmt")
        self._infra(["addr", "add", "{}/{}".format(self.vca_ip, ipaddress.ip_network(MGMT_CIDR).prefixlen),
                     "dev", "br-mgmt"])
        return self

    def teardown(self):
        for vnf in list(self.vnfs.values()):
            kill_netns_processes(vnf.netns)
            sh(["ip", "netns", "del", vnf.netns], check=False)
        if self.created:
            kill_netns_processes(self.infra)
            sh(["ip", "netns", "del", self.infra], check=False)
        self.vnfs.clear()
        self.created = False
        try:
            os.remove(os.path.join(OWNERS_DIR, self.id))
        except OSError:
            pass
        shutil.rmtree(os.path.join(self.workdir, "vnf"), ignore_errors=True)

    def __enter__(self):
        return self.create()

    def __exit__(self, *exc):
        self.teardown()

    def runner(self):
        """Command prefix for processes of the emulated VCA (the proxy charms)."""
        return ["ip", "netns", "exec", self.infra]

    # ------------------------------------------------------------------ networks
    def _infra(self, args, check=True):
        return sh(["ip", "-n", self.infra] + args, check=check)

    def _bridge(self, name):
        self._infra(["link", "add", name, "type", "bridge"])
        # No STP and no forwarding delay: a VIM network is usable as soon as the port is up.
        self._infra(["link", "set", name, "type", "bridge", "forward_delay", "0", "stp_state", "0"])
        self._infra(["link", "set", name, "up"])

    def add_link(self, name, cidr):
        if name in self.links:
            raise VimError("link {} exists".format(name))
        self._bridge(self.bridge(name))
        self.links[name] = ipaddress.ip_network(cidr)
        return self.bridge(name)

    @staticmethod
    def bridge(link):
        return "br-" + link[:12]

    # ------------------------------------------------------------------ VNFs
    def add_vnf(self, name, links=None, env=None):
        """links: {link name: "address/prefix"}; env: variables every login session on the VNF
        gets ("{state}" is replaced by the VNF's state directory). Returns the Vnf, sshd running."""
        # Never an index in use (a scale-in deletes the highest VM; veth names carry the index).
        vnf = Vnf(self, name, max([v.index for v in self.vnfs.values()] + [0]) + 1, str(next(self._mgmt_hosts)))
        vnf.env = {k: v.replace("{state}", vnf.state_dir) for k, v in (env or {}).items()}
        vnf.link_plan = dict(links or {})
        self.vnfs[name] = vnf
        self._boot(vnf)
        return vnf

    def rebuild_vnf(self, name):
        """What OSM's heal does to a VM: deleted and created again from its image, with the same
        name, ports and addresses, and a new disk: nothing the charms put on it, a new SSH host
        key. Returns the new Vnf."""
        old = self.vnfs[name]
        self._unplug(old)
        vnf = Vnf(self, name, old.index, old.mgmt_ip)
        # The same ports, addresses and MACs (as OpenStack ports keep theirs): whoever talks to the
        # VM -- the proxy machine, its peers -- need not learn a new neighbour.
        vnf.env, vnf.link_plan, vnf.macs = old.env, old.link_plan, old.macs
        self.vnfs[name] = vnf
        self._boot(vnf)
        return vnf

    def delete_vnf(self, name):
        """A VM deleted (scale-in): its processes, namespace and disk go."""
        vnf = self.vnfs.pop(name)
        self._unplug(vnf)
        shutil.rmtree(vnf.state_dir, ignore_errors=True)

    def _unplug(self, vnf):
        """The VM's processes, ports and namespace go. The ports first, synchronously: deleting a
        namespace frees its veths only when the kernel's namespace cleanup runs (a work queue,
        seconds later on a busy machine), and a VM created next may take the same port names
        ("File exists")."""
        kill_netns_processes(vnf.netns)
        for n in range(len(vnf.link_plan) + 1):
            self._infra(["link", "del", "v{}-{}".format(vnf.index, n)], check=False)
        sh(["ip", "netns", "del", vnf.netns], check=False)

    def _boot(self, vnf):
        sh(["ip", "netns", "add", vnf.netns])
        _ipv4_only(vnf.netns)
        sh(["ip", "-n", vnf.netns, "link", "set", "lo", "up"])
        self._plug(vnf, "br-mgmt", "eth0", "{}/{}".format(vnf.mgmt_ip, ipaddress.ip_network(MGMT_CIDR).prefixlen), 0)
        for i, (link, address) in enumerate(sorted(vnf.link_plan.items()), 1):
            if link not in self.links:
                raise VimError("VNF {}: unknown link {}".format(vnf.name, link))
            iface = ipaddress.ip_interface(address)
            if iface.ip not in self.links[link]:
                raise VimError("VNF {}: {} is outside link {} ({})".format(vnf.name, address, link, self.links[link]))
            self._plug(vnf, self.bridge(link), "eth{}".format(i), address, i)
            vnf.links[link] = ("eth{}".format(i), str(iface.ip))
        self._start_sshd(vnf)

    @staticmethod
    def port(vnf, link):
        """The infra-side veth of ``vnf`` on ``link``: where a capture sees that VNF's traffic
        (a bridge device itself only sees frames addressed to it, not the ones it forwards)."""
        if link == "mgmt":
            return "v{}-0".format(vnf.index)
        names = sorted(vnf.links)
        return "v{}-{}".format(vnf.index, names.index(link) + 1)

    def _plug(self, vnf, bridge, ifname, address, n):
        outer = "v{}-{}".format(vnf.index, n)
        mac = ["address", vnf.macs[n]] if n in vnf.macs else []
        self._infra(["link", "add", outer, "type", "veth", "peer", "name", ifname] + mac + ["netns", vnf.netns])
        if n not in vnf.macs:
            vnf.macs[n] = json.loads(sh(["ip", "-j", "-n", vnf.netns, "link", "show", "dev", ifname]).stdout)[0][
                "address"]
        self._infra(["link", "set", outer, "master", bridge, "up"])
        sh(["ip", "-n", vnf.netns, "addr", "add", address, "dev", ifname])
        sh(["ip", "-n", vnf.netns, "link", "set", ifname, "up"])

    def _start_sshd(self, vnf):
        """Start the VNF's anchor (its "PID 1": holds the private mounts) and its sshd."""
        d = vnf.state_dir
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(os.path.join(d, "etc-wireguard"), mode=0o700)
        os.makedirs(os.path.join(d, "vpnaas-lib"), mode=0o755)
        # The programs the charms ship land in DATAPLANE_DIR on their VNF: a private directory per
        # VNF, as on a VM (the namespaces share this machine's file system), so that one VNF's
        # teardown never takes another's programs. The mount point itself stays, empty.
        os.makedirs(DATAPLANE_DIR, mode=0o755, exist_ok=True)
        vnf_login.new_host_key(vnf.state_dir)
        open(os.path.join(d, "authorized_keys"), "a").close()
        env = dict(vnf.env)
        if self.userspace_wireguard:
            env["WG_QUICK_USERSPACE_IMPLEMENTATION"] = self.userspace_wireguard
            if os.path.basename(self.userspace_wireguard).startswith("boringtun"):
                env["WG_SUDO"] = "true"   # boringtun as root keeps its privileges (clap takes true/false only)
        config = vnf_login.sshd_config(d, vnf.mgmt_ip, env)
        with open(os.path.join(d, "sshd_config"), "w") as f:
            f.write(config)
        os.makedirs("/run/sshd", exist_ok=True)
        os.makedirs("/run/wireguard", exist_ok=True)
        inner = ('hostname "$1" && mount -t tmpfs -o mode=0700 tmpfs /run/wireguard && '
                 'mount --bind "$2" /etc/wireguard && mount --bind "$3" "$4" && exec sleep infinity')
        vnf.anchor = subprocess.Popen(
            ["ip", "netns", "exec", vnf.netns, "unshare", "--mount", "--uts", "--propagation", "private", "--",
             "sh", "-c", inner, "sh", vnf.name, os.path.join(d, "etc-wireguard"), os.path.join(d, "vpnaas-lib"),
             DATAPLANE_DIR],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 10
        while _comm(vnf.anchor.pid) != "sleep":
            if vnf.anchor.poll() is not None or time.monotonic() > deadline:
                raise VimError("the namespace anchor of {} did not start".format(vnf.name))
            time.sleep(0.02)
        self.start_sshd(vnf)

    def start_sshd(self, vnf):
        d = vnf.state_dir
        pidfile = os.path.join(d, "sshd.pid")
        if os.path.exists(pidfile):
            os.remove(pidfile)
        log = open(os.path.join(d, "sshd.log"), "a")
        vnf.sshd = subprocess.Popen(
            ["nsenter", "-t", str(vnf.anchor.pid), "-m", "-n", "-u", "--", "/usr/sbin/sshd", "-D", "-e",
             "-f", os.path.join(d, "sshd_config")], stdout=log, stderr=log, start_new_session=True)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if vnf.sshd.poll() is not None:
                raise VimError("sshd of {} exited: see {}".format(vnf.name, os.path.join(d, "sshd.log")))
            out = sh(["ip", "netns", "exec", vnf.netns, "ss", "-Hltn", "sport", "= :22"], check=False).stdout
            if out.strip() and os.path.exists(pidfile):
                return
            time.sleep(0.05)
        raise VimError("sshd of {} did not start listening".format(vnf.name))

    def restart_sshd(self, vnf):
        """Stop sshd and start it again in the same VNF (its tunnels keep running)."""
        vnf.sshd.terminate()
        vnf.sshd.wait(10)
        self.start_sshd(vnf)

    def authorize(self, vnf, public_key):
        """What OSM does with get-ssh-public-key's result: put the key in the VNF user's authorized_keys."""
        path = os.path.join(vnf.state_dir, "authorized_keys")
        lines = open(path).read().splitlines()
        if public_key.strip() not in lines:
            lines.append(public_key.strip())
        with open(path + ".tmp", "w") as f:
            f.write("\n".join(lines) + "\n")
        os.replace(path + ".tmp", path)
