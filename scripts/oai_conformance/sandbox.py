"""A sandbox VNF for the executed conformance run: the testbed's VNF (network namespace, private mount
namespace, a real sshd; scripts/testbed/emulators/vim.py) made to look like a fresh Ubuntu 18.04 VM.

Inside the VNF's mount namespace only: writable overlays over /usr, /etc, /opt and /var (their
changes land in the run's work folder, never on this machine), an empty /root, a fresh /run, the
/etc/os-release of Ubuntu 18.04, an SGi-like interface ens3 with a default route (to nowhere: the
VNF has no internet), and recording stand-ins at the real paths of the commands that cannot run
here (standins/: apt-get, apt, dpkg, cloud-init, curl, systemctl, service, cqlsh, the Python
Cassandra driver, OAI's build scripts and programs). lib.sh sets PATH itself, so stand-ins must be
at the real paths; the overlays put them there.

git is real. The repositories the charms name are served from OAI_SRC: one bare repository per
repository with exactly the refs the run needs, found through ``url.<served>.insteadOf`` in the
VNF's /etc/gitconfig. The mirrors lack files of 4 MiB and more; those few paths are left out of
every checkout (sparse checkout from git's template folder), the serving side packs without them
(``uploadpack.packObjectsHook`` adds ``--missing=allow-any``) and the VNF's repositories treat
origin as a partial-clone promisor, so the rest is checked out by git as on a real VNF. The report
names every such path.
"""
import ctypes
import os
import re
import shutil
import subprocess
import threading

from oai_conformance.source import Tree
from testbed.emulators import vim
from vpnaas.vnf import ssh

HERE = os.path.dirname(os.path.abspath(__file__))
STANDINS = os.path.join(HERE, "standins")
LAYERS = ("usr", "etc", "opt", "var")
#: Stand-ins at the real paths (lib.sh's PATH: /usr/local/sbin ... /bin, merged into /usr).
COMMANDS = {"apt-get": "/usr/bin/apt-get", "apt": "/usr/bin/apt", "dpkg": "/usr/bin/dpkg",
            "cloud-init": "/usr/bin/cloud-init", "curl": "/usr/bin/curl", "systemctl": "/usr/bin/systemctl",
            "service": "/usr/sbin/service", "cqlsh": "/usr/bin/cqlsh", "iptables": "/usr/sbin/iptables",
            "python2": "/usr/bin/python"}
COMPILERS = ("/usr/bin/cmake", "/usr/bin/make", "/usr/bin/gcc", "/usr/bin/g++", "/usr/bin/cc", "/usr/bin/c++",
             "/usr/sbin/ldconfig")
#: /etc/os-release of the Ubuntu release each component's VNF runs (OAI's scripts check it).
OS_RELEASE = {
    "18.04": ('NAME="Ubuntu"\nVERSION="18.04.6 LTS (Bionic Beaver)"\nID=ubuntu\nID_LIKE=debian\n'
              'VERSION_ID="18.04"\nVERSION_CODENAME=bionic\nUBUNTU_CODENAME=bionic\n'),
    "22.04": ('NAME="Ubuntu"\nVERSION="22.04.4 LTS (Jammy Jellyfish)"\nID=ubuntu\nID_LIKE=debian\n'
              'VERSION_ID="22.04"\nVERSION_CODENAME=jammy\nUBUNTU_CODENAME=jammy\n'),
}
CLONE_NEWNET = 0x40000000
#: No step of the sandbox needs long (nothing is compiled): a hanging one fails after this.
WAIT_LIMIT = 600


class SandboxError(Exception):
    pass


def missing_paths(tree, commit):
    """Paths of ``commit`` whose blobs the repository lacks (the mirrors keep no file of 4 MiB+)."""
    listing = subprocess.run(["git", "-C", tree.path, "ls-tree", "-r", commit], stdout=subprocess.PIPE,
                             check=True).stdout.decode()
    blobs = {}
    for line in listing.splitlines():
        meta, _, path = line.partition("\t")
        _, kind, sha = meta.split()
        if kind == "blob":
            blobs.setdefault(sha, []).append(path)
    check = subprocess.run(["git", "-C", tree.path, "cat-file", "--batch-check"], input="\n".join(blobs).encode(),
                           stdout=subprocess.PIPE, check=True).stdout.decode()
    return sorted(p for line in check.splitlines() if line.endswith(" missing")
                  for p in blobs.get(line.split()[0], []))


class Served(object):
    """Bare repositories with exactly the refs the run needs, sharing OAI_SRC's objects."""

    def __init__(self, root):
        self.root = root
        self.urls = {}          # URL the charm or .gitmodules names -> served path
        self.missing = {}       # served name -> [(commit, paths)]
        self.unmirrored = {}    # nested submodule name -> URL without a repository in OAI_SRC

    def serve(self, name, tree, refs, urls):
        """refs: {ref name: object}; every URL in ``urls`` is rewritten to this repository."""
        path = os.path.join(self.root, name + ".git")
        if not os.path.exists(path):
            subprocess.run(["git", "init", "-q", "--bare", path], check=True)
            objects = os.path.join(tree.path if tree.path.endswith(".git") or os.path.isdir(
                os.path.join(tree.path, "objects")) else os.path.join(tree.path, ".git"), "objects")
            with open(os.path.join(path, "objects", "info", "alternates"), "w") as f:
                f.write(os.path.realpath(objects) + "\n")
        for ref, obj in refs.items():
            subprocess.run(["git", "-C", path, "update-ref", ref, obj], check=True)
            commit = subprocess.run(["git", "-C", path, "rev-parse", obj + "^{commit}"], stdout=subprocess.PIPE,
                                    check=True).stdout.decode().strip()
            nested = subprocess.run(["git", "-C", tree.path, "show", commit + ":.gitmodules"],
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout.decode()
            for sub, url in re.findall(r'\[submodule "([^"]+)"\][^\[]*?url\s*=\s*(\S+)', nested):
                self.unmirrored.setdefault(sub, url)
            lacking = missing_paths(tree, commit)
            if lacking:
                self.missing.setdefault(name, []).append((commit, lacking))
        for url in urls:
            self.urls[url] = path
            self.unmirrored = {k: v for k, v in self.unmirrored.items() if v != url}
        return path

    def finish(self):
        """Nested submodules whose repository OAI_SRC does not hold (e.g. rapidjson's googletest)."""
        self.unmirrored = {k: v for k, v in self.unmirrored.items() if v not in self.urls}
        return self

    def sparse_patterns(self):
        paths = sorted({p for entries in self.missing.values() for _, ps in entries for p in ps})
        return "/*\n" + "".join("!/{}\n".format(p) for p in paths)


def _setns_thread(netns, target):
    """Run ``target`` in a thread that joined network namespace ``netns``: a socket belongs to the
    namespace of the thread that creates it, so the SSH client connects from there (the emulated
    VCA's network) while this process stays where it is."""
    result = {}

    def run():
        libc = ctypes.CDLL(None, use_errno=True)
        fd = os.open("/run/netns/" + netns, os.O_RDONLY)
        try:
            if libc.setns(fd, CLONE_NEWNET) != 0:
                result["error"] = OSError(ctypes.get_errno(), "setns " + netns)
                return
        finally:
            os.close(fd)
        try:
            result["value"] = target()
        except Exception as e:  # noqa: BLE001  (handed to the caller, re-raised there)
            result["error"] = e

    t = threading.Thread(target=run)
    t.start()
    t.join()
    if "error" in result:
        raise result["error"]
    return result.get("value")


class Sandbox(object):
    """One sandbox VNF. ``builds``: {build script name: [program paths relative to the tree]} for
    the build stand-in."""

    def __init__(self, workdir, served, builds, ubuntu="18.04"):
        self.workdir = os.path.abspath(workdir)
        self.served = served
        self.builds = builds
        self.ubuntu = ubuntu
        self.testbed = None
        self.vnf = None
        self.session = None

    def __enter__(self):
        shutil.rmtree(os.path.join(self.workdir, "layers"), ignore_errors=True)
        self.testbed = vim.Testbed(os.path.join(self.workdir, "tb"), tb_id=None).create()
        try:
            self.vnf = self.testbed.add_vnf("oai")
            self._prepare()
            self._connect()
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc):
        if self.session is not None:
            self.session.close()
            self.session = None
        if self.testbed is not None:
            self.testbed.teardown()
            self.testbed = None

    def layer(self, name):
        return os.path.join(self.workdir, "layers", name)

    def _prepare(self):
        lines = ["set -e"]
        for name in LAYERS:
            upper, work = os.path.join(self.layer(name), "upper"), os.path.join(self.layer(name), "work")
            os.makedirs(upper)
            os.makedirs(work)
            lines.append("mount -t overlay overlay -o lowerdir=/{0},upperdir={1},workdir={2} /{0}".format(
                name, upper, work))
        # root's home as on a new VM: empty (this machine's shell start-up files and git
        # configuration would otherwise run in every SSH session of the steps).
        lines += ["mount -t tmpfs -o mode=0700 tmpfs /root", "mount -t tmpfs -o mode=0755 tmpfs /run",
                  "mkdir -p /run/sshd /run/systemd/system /run/netns",
                  "rm -f /etc/os-release /etc/hosts /etc/resolv.conf",
                  "mkdir -p /usr/lib/oai-standin /var/lib/oai-standin/builds "
                  "/var/log/oai-standin /usr/share/oai-standin/git-template/info "
                  "/usr/share/oai-standin/git-template/hooks /etc/systemd/system /usr/lib/python3/dist-packages",
                  "cp -r {}/. /usr/lib/oai-standin/".format(STANDINS),
                  "rm -rf /usr/lib/python3/dist-packages/cassandra",
                  "cp -r {}/cassandra /usr/lib/python3/dist-packages/cassandra".format(STANDINS),
                  "cp {}/post-checkout /usr/share/oai-standin/git-template/hooks/".format(STANDINS),
                  "ip link add ens3 type veth peer name ens3p", "ip link set ens3p up", "ip link set ens3 up",
                  "ip addr add 10.0.2.15/24 dev ens3", "ip route add default via 10.0.2.2 dev ens3",
                  "rm -rf /var/lib/vpnaas /var/log/vpnaas /opt/oai /usr/local/etc/oai"]
        for name, path in sorted(COMMANDS.items()):
            lines.append("rm -f {1}; cp /usr/lib/oai-standin/{0} {1}; chmod 755 {1}".format(
                "apt-get" if name == "apt" else name, path))
        for path in COMPILERS:
            lines.append("rm -f {0}; cp /usr/lib/oai-standin/compiler {0}; chmod 755 {0}".format(path))
        self.vnf.exec(["bash", "-c", "\n".join(lines)], timeout=60)
        self.write("/etc/os-release", OS_RELEASE[self.ubuntu])
        # As on an Ubuntu VM: its own name in /etc/hosts (git and sudo look it up); no name server,
        # so that nothing in the sandbox sends a DNS query anywhere.
        self.write("/etc/hosts", "127.0.0.1 localhost\n127.0.1.1 {}\n".format(self.vnf.name))
        self.write("/etc/resolv.conf", "# the sandbox VNF has no name server\n")
        for script, programs in self.builds.items():
            self.write("/var/lib/oai-standin/builds/" + script, "".join(p + "\n" for p in programs))
        self.write("/usr/share/oai-standin/git-template/info/sparse-checkout", self.served.sparse_patterns())
        # Nested submodules without a repository here (test frameworks of the libraries) are not
        # fetched: `update = none` in every repository's config, as git init reads the template.
        skip = "".join('[submodule "{}"]\n\tupdate = none\n'.format(n) for n in sorted(self.served.unmirrored))
        self.write("/usr/share/oai-standin/git-template/config",
                   "[core]\n\trepositoryformatversion = 1\n\tsparseCheckout = true\n"
                   "[extensions]\n\tpartialClone = origin\n" + skip)
        self.write("/usr/lib/oai-standin/pack-objects", '#!/bin/sh\nexec "$@" --missing=allow-any\n', 0o755)
        config = ["[init]", "\ttemplateDir = /usr/share/oai-standin/git-template",
                  "[uploadpack]", "\tpackObjectsHook = /usr/lib/oai-standin/pack-objects", "\tallowFilter = true",
                  '[remote "origin"]', "\tpartialclonefilter = blob:limit=1m",
                  '[protocol "file"]', "\tallow = always", "[safe]", "\tdirectory = *"]
        for url, path in sorted(self.served.urls.items()):
            config += ['[url "{}"]'.format(path), "\tinsteadOf = {}".format(url)]
        self.write("/etc/gitconfig", "\n".join(config) + "\n")

    def write(self, path, text, mode=0o644):
        """A file inside the VNF (through its mount namespace)."""
        self.vnf.exec(["bash", "-c", 'mkdir -p "$(dirname "$1")" && cat > "$1" && chmod {:o} "$1"'.format(mode),
                       "write", path], input=text, timeout=30)

    def read(self, path):
        result = self.vnf.exec(["cat", path], check=False, timeout=30)
        return result.stdout if result.returncode == 0 else None

    def _connect(self):
        keys = ssh.KeyStore(os.path.join(self.workdir, "keys"))
        keys.generate_key()
        self.testbed.authorize(self.vnf, keys.public_key())
        session = ssh.Session(ssh.Target(self.vnf.mgmt_ip, "root"), keys)
        _setns_thread(self.testbed.infra, session.connect)
        self.session = session

    def run(self, step, timeout):
        """One step exactly as the charm sends it (charm_base.run_vnf_step): its command line,
        the program on stdin, over SSH as root."""
        return self.session.run(step.command("root", timeout), step.program().encode(), min(timeout + 30, WAIT_LIMIT))


def serve_sources(root, src_root, components):
    """Serve every component at its pinned ref and its submodules at the recorded and pinned commits."""
    served = Served(root)
    os.makedirs(root, exist_ok=True)
    for name, comp in components:
        tree = Tree(os.path.join(src_root, name), comp.ref)
        ref_obj = comp.ref
        kind = "refs/heads/"
        for candidate in ("refs/tags/" + comp.ref, "refs/heads/" + comp.ref, "refs/remotes/origin/" + comp.ref):
            r = subprocess.run(["git", "-C", tree.path, "rev-parse", "-q", "--verify", candidate],
                               stdout=subprocess.PIPE)
            if r.returncode == 0:
                ref_obj = r.stdout.decode().strip()
                kind = "refs/tags/" if candidate.startswith("refs/tags/") else "refs/heads/"
                break
        else:
            ref_obj = tree.commit
        served.serve(name, tree, {kind + comp.ref: ref_obj, "HEAD": tree.commit}, [comp.repository])
        if not comp.fetch_submodules:
            continue   # oai-install fetches none of them (install.sh's oai_prepare_<c>)
        modules = tree.read(".gitmodules") or ""
        urls = dict(re.findall(r"path\s*=\s*(\S+)\s*\n\s*url\s*=\s*(\S+)", modules))
        pins = {p: c for p, c, _ in comp.submodule_pins}
        for path, recorded in sorted(tree.gitlinks().items()):
            url = urls.get(path, "")
            sub_name = url.rstrip("/").rsplit("/", 1)[-1]
            sub_name = sub_name[:-4] if sub_name.endswith(".git") else sub_name
            sub_path = os.path.join(src_root, "submodules", sub_name)
            if not os.path.exists(sub_path):
                if path in pins:
                    raise SandboxError("no repository for submodule {} in {}".format(path, sub_path))
                # OAI's own submodule, not pinned by the charm, that OAI_SRC has no repository for
                # (CN5G's common-src and common-build): not fetched (`update = none`), and reported.
                served.unmirrored[path] = url
                continue
            sub = Tree(sub_path)
            refs = {"refs/heads/recorded-" + recorded[:12]: recorded, "HEAD": pins.get(path, recorded)}
            if path in pins:
                refs["refs/heads/pinned-" + pins[path][:12]] = pins[path]
            for tag in _helper_tags(tree, sub):
                refs["refs/tags/" + tag[0]] = tag[1]
            served.serve("sub-" + sub_name, sub, refs, [url])
    return served.finish()


def _helper_tags(tree, sub):
    """Tags OAI's helpers check out in a submodule (``git checkout -f 2.15.0``) that exist there."""
    out = []
    for rel in tree.files("build/tools"):
        for tag in re.findall(r"git checkout -f ([0-9][\w.]*)\b", tree.read(rel) or ""):
            r = subprocess.run(["git", "-C", sub.path, "rev-parse", "-q", "--verify", "refs/tags/" + tag],
                               stdout=subprocess.PIPE)
            if r.returncode == 0:
                out.append((tag, r.stdout.decode().strip()))
    return out
