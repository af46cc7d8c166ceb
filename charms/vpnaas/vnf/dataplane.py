"""The data plane of each tunnel device: which WireGuard implementation runs it, and the userspace
programs the charm ships for it.

An endpoint's ``<ep>-implementation`` is ``auto`` (the kernel module where the VNF has one, else
wireguard-go), ``kernel``, ``wireguard-go`` or ``boringtun``; a temporary device of a key
rotation runs on its main device's choice. The VNF side (``vnf/tunnels.sh``) resolves ``auto``,
brings each device up with its implementation, records it beside the device and re-creates a
device only when its implementation changes.

Shipping, offline: the charm carries the userspace programs (``dataplane/`` in the built charm,
with ``manifest.json`` naming each one's file, sha256 and version; scripts/bundle/build_charms.py
puts them there from build/tools). A VNF gets a program only when one of its devices needs it:
the tunnel step is told each program's digest, checks the installed copy under ``VNF_DIR`` and,
when it is missing or differs, reports ``NEED <name>`` and stops before applying anything (as
it does when its facts changed). The charm then sends the program in the same login, on a second
channel: ``install_command`` is a fixed shell program on the command line, the binary comes on
stdin, and the VNF installs it only if its sha256 is the one the charm names, through a private
temporary file in the same directory renamed over the target (atomic: a running daemon keeps
its old inode). Then the step runs again. So a reconcile whose binaries are in place costs
nothing more, and multi-megabyte programs never travel inside the step's base64 data section.

A charm built without a program (no Rust toolchain for boringtun) still deploys: an endpoint set
to that implementation is refused in the charm (Blocked "... not shipped"), nothing applied;
``wireguard-go`` not shipped falls back to a wireguard-go the VNF has on its PATH, as releases
before this one did. Pure but for ``upload`` (an open ssh.Session) and the manifest file.
"""
import hashlib
import json
import os
import shlex
from typing import Any, Dict, List, NamedTuple, Optional

from vpnaas.core import validation
from vpnaas.core.model import Plan

#: Where the charm installs the programs on the VNF (the charm's own directory: removed whole at
#: teardown; the wg-quick shim that starts a userspace device lives beside them, tunnels.sh).
VNF_DIR = "/usr/local/lib/vpnaas"
#: The folder of the built charm that holds the programs and their manifest.
CHARM_FOLDER = "dataplane"
MANIFEST = "manifest.json"
#: implementation -> the program's file in the charm (the name it has upstream).
PROGRAMS = {"wireguard-go": "wireguard-go", "boringtun": "boringtun-cli", "pq-psk": "pq-psk"}
#: The step's deadline for one program on the VNF's side (a few MB over the management network).
INSTALL_TIMEOUT = 120
#: Fixed: names and digests are checked by the VNF too, values travel as "$1" "$2" only.
_INSTALL = r"""set -euo pipefail
umask 022
name=$1 want=$2 dir=%(dir)s
case "$name" in wireguard-go|boringtun|pq-psk) ;; *) echo "ERROR not a shipped program: $name"; exit 3 ;; esac
case "$want" in *[!0-9a-f]*|'') echo "ERROR not a sha256: $want"; exit 3 ;; esac
mkdir -p "$dir"
chmod 755 "$dir"
tmp=$(mktemp "$dir/.$name.XXXXXX")
trap 'rm -f "$tmp"' EXIT
cat > "$tmp"
got=$(sha256sum "$tmp" | cut -d' ' -f1)
if [ "$got" != "$want" ]; then echo "ERROR $name arrived with sha256 $got, not $want"; exit 3; fi
chmod 755 "$tmp"
mv -f "$tmp" "$dir/$name"
trap - EXIT
echo "INSTALLED $name $got"
echo DONE
""" % {"dir": VNF_DIR}


class DataplaneError(Exception):
    """A shipped program could not be read or installed."""


class Program(NamedTuple):
    name: str       # the implementation: wireguard-go, boringtun
    path: str       # its file in the charm
    sha256: str
    version: str


def charm_folder(charm_dir: str) -> str:
    return os.path.join(charm_dir, CHARM_FOLDER)


def shipped(folder: str) -> Dict[str, Program]:
    """The programs this charm carries ({} for a charm built without any). A manifest entry whose
    file is missing is not shipped (the charm then says so instead of failing at upload)."""
    try:
        with open(os.path.join(folder, MANIFEST)) as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return {}
    out: Dict[str, Program] = {}
    for name, entry in sorted((doc.get("programs") or {}).items()):
        if name not in PROGRAMS or not isinstance(entry, dict):
            continue
        path = os.path.join(folder, PROGRAMS[name])
        digest = str(entry.get("sha256") or "")
        if os.path.isfile(path) and len(digest) == 64 and all(c in "0123456789abcdef" for c in digest):
            out[name] = Program(name, path, digest, str(entry.get("version") or "unknown"))
    return out


def plan_errors(plan: Plan, programs: Dict[str, Program]) -> List[str]:
    """Endpoints set to a program the charm does not carry (wireguard-go excepted: the VNF's own
    is used then). Configuration errors: the unit is Blocked and nothing is applied."""
    out = []
    for dev in plan.devices:
        if dev.implementation == "boringtun" and "boringtun" not in programs:
            out.append("{}-implementation: boringtun not shipped with this charm (it was built without "
                       "build/tools/boringtun-cli: run make boringtun, then make charms)".format(dev.endpoint))
    return out


def without_pq_psk(plan: Plan, programs: Dict[str, Program]) -> None:
    """A charm built without pq-psk (no Go toolchain) runs its tunnels classical only: it does not
    advertise the capability, and the status says why (``Device.pq_psk_classical``)."""
    if "pq-psk" in programs:
        return
    for dev in plan.devices:
        if dev.pq_psk:
            dev.pq_psk, dev.pq_psk_unshipped = False, True


def pq_psk_daemon(plan: Plan, up: bool) -> None:
    """Whether the VNF reported the pq-psk daemon running at its last session ("PQPSK up"): the
    devices publish the capability only then (relation_data.publication)."""
    for dev in plan.devices + plan.temp_devices:
        dev.pq_psk_daemon = up


def prepare_args(plan: Plan, programs: Dict[str, Program]) -> List[str]:
    """``tunnels_prepare``'s arguments: "name digest when" for each shipped program a device of the
    plan may run on; when is ``always`` (an endpoint chose it) or ``nokernel`` (an ``auto``
    endpoint: needed only on a VNF without the kernel module)."""
    wanted: Dict[str, str] = {}
    for dev in plan.devices + plan.temp_devices:
        if dev.implementation in PROGRAMS:
            wanted[dev.implementation] = "always"
        elif dev.implementation == "auto":
            wanted.setdefault("wireguard-go", "nokernel")
    if any(dev.pq_psk_runs() for dev in plan.devices):
        wanted["pq-psk"] = "always"   # the pq-psk daemon (tunnels/pqpsk.sh)
    args: List[str] = []
    for name in sorted(wanted):
        if name in programs:
            args += [name, programs[name].sha256, wanted[name]]
    return args


def install_command(name: str, digest: str, username: str) -> str:
    """The command line that installs one program from stdin (see the module's docstring)."""
    if name not in PROGRAMS:
        raise DataplaneError("not a shipped program: {}".format(validation.excerpt(name)))
    words = ["bash", "-c", shlex.quote(_INSTALL), "vpnaas-install", shlex.quote(name), shlex.quote(digest)]
    return ("" if username == "root" else "sudo -n ") + " ".join(words)


def upload(session: Any, username: str, program: Program) -> None:
    """Install ``program`` on the VNF of the open ``session`` (ssh.Session)."""
    try:
        with open(program.path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise DataplaneError("{} cannot be read from the charm: {}".format(program.name, e)) from None
    if hashlib.sha256(data).hexdigest() != program.sha256:
        raise DataplaneError("{} in the charm does not match its manifest's sha256 (a damaged charm: "
                             "deploy it again)".format(program.name))
    rc, out, err = session.run(install_command(program.name, program.sha256, username), data, INSTALL_TIMEOUT)
    if rc != 0 or "DONE" not in out.split():
        last = (out.strip().splitlines() or err.strip().splitlines() or ["no output"])[-1]
        raise DataplaneError("installing {} on the VNF failed (exit {}): {}".format(
            program.name, rc, validation.excerpt(last, 200)))


def needed(programs: Dict[str, Program], reported: List[str]) -> Optional[List[Program]]:
    """The programs the VNF asked for (``NEED`` lines), or None when it asked for one the charm
    does not carry (never from this charm's own step: a VNF that answers out of turn)."""
    out = []
    for name in reported:
        if name not in programs:
            return None
        out.append(programs[name])
    return out
