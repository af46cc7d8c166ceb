"""The unit's own state directory: beside the unit's charm directory, so that it survives a charm
upgrade (Juju replaces the charm directory). It holds the charm's SSH identity (``ssh.KeyStore``)
and the relation cache (``relation_cache``), 0700, readable by root only; and whether the VNF
may hold what no committed state of this unit knows (``mark_vnf_unconfirmed``).

Pure standard library: ``hookgate`` imports this before ops (see there why).
"""
import os

DIRECTORY = "vpnaas"
#: The charm's SSH private key in the state directory (``ssh.KeyStore``); its public half beside it
#: with ``.pub``. Named here because ``hookgate`` reads the public half into the config digest.
KEY_FILE = "id_vpnaas"


def unit_state_dir(charm_dir: str) -> str:
    """The state directory of the unit whose charm directory is ``charm_dir`` (resolved as ops
    resolves JUJU_CHARM_DIR, so that the hook gate and the charm name the same place)."""
    return os.path.join(os.path.dirname(os.path.realpath(charm_dir)), DIRECTORY)


def write_atomic(path: str, data: bytes, mode: int) -> None:
    """Write ``path`` whole or not at all: a crash leaves the old file or none, never a torn one."""
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(tmp, mode)
    os.rename(tmp, path)


# ---------------------------------------------------------------------- the VNF's unconfirmed step
#: Written before a session applies a step on the VNF; removed once a run that applied one has
#: ended normally (ops committed what it learnt and Juju what it published). Found by a later
#: run, it says that a run changed the VNF and died before that: an agent restart in the middle
#: of a hook or an action (Juju fails the action, "action terminated", and never runs it again).
#: What the VNF then holds (a device on a key nobody was told, a peer the charm does not list)
#: is in no stored state and in no publication, and no plan shows it: the next run of any kind
#: contacts the VNF, learns it and publishes (docs/lifecycle.md).
UNCONFIRMED = "vnf-unconfirmed"
#: Written by a run whose session ended and whose state is to be committed; promoted by
#: ``confirm_vnf`` after the commit, discarded at the start of the next run if it never was.
CONFIRMED_PENDING = "vnf-confirmed.pending"


def mark_vnf_unconfirmed(directory: str) -> None:
    """Before a session applies a step: until a run ends normally, the VNF may be ahead."""
    if not os.path.exists(os.path.join(directory, UNCONFIRMED)):
        write_atomic(os.path.join(directory, UNCONFIRMED), b"", 0o600)


def vnf_confirmed_pending(directory: str) -> None:
    """This run's session ended and its outcome is in the state ops is about to commit."""
    write_atomic(os.path.join(directory, CONFIRMED_PENDING), b"", 0o600)


def vnf_unconfirmed(directory: str) -> bool:
    """A run stepped the VNF and did not end normally since (this run's own finished session
    does not count: it is pending its commit)."""
    return (os.path.exists(os.path.join(directory, UNCONFIRMED))
            and not os.path.exists(os.path.join(directory, CONFIRMED_PENDING)))


def discard_vnf_confirmation(directory: str) -> None:
    """At the start of a run: a confirmation left by a run that died before its commit."""
    _remove(os.path.join(directory, CONFIRMED_PENDING))


def confirm_vnf(directory: str) -> None:
    """After ops committed the run's state: a session of this run confirmed the VNF."""
    if os.path.exists(os.path.join(directory, CONFIRMED_PENDING)):
        _remove(os.path.join(directory, UNCONFIRMED))
        _remove(os.path.join(directory, CONFIRMED_PENDING))


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except FileNotFoundError:
        pass
