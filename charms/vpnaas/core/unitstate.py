"""The unit's own state directory: beside the unit's charm directory, so that it survives a charm
upgrade (Juju replaces the charm directory). It holds the charm's SSH identity (``ssh.KeyStore``)
and the relation cache (``relation_cache``), 0700, readable by root only.

Pure standard library: ``hookgate`` imports this before ops (see there why).
"""
import os

DIRECTORY = "vpnaas"


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
