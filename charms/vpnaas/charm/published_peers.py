"""Which related units had published their tunnel data when a hook about them ran before this
unit was configured: the units its first session may read at once.

A unit that asks its peers for ``peer-keys`` leaves unread, in its first session, the related
units it never read (``VpnaasCharm.defers_unread``): Juju 2.9's unit agent would keep what a read
returns now until the next hook about that unit, and when OSM configures every VNF at once the
peers have not published yet. But a VNF configured after its peers (OSM's LCM with one VNF after
another, a VNF added to a running NS, the testbed's serial VCA) finds them published, and
deferring them costs that unit a second session after the first (the first hook about a peer
reads them) and its peers' handshakes wait for it.

The sign that a peer published is in a hook about that very peer: Juju runs relation-changed on
this unit whenever the peer commits a change of its settings, and that hook may read the peer as
fresh as Juju holds it (the agent refreshes the hook's own remote unit:
worker/uniter/runner/context/contextfactory.go ``HookContext``, ``InvalidateMember``). So a
relation-changed that ends because ``ssh-hostname`` is not set yet (in the hook gate, or in the
charm) reads its remote unit's data, and when the peer's key is there it records the unit's slot
here. The first session then reads every related unit at once when each of them is recorded: none
of those reads can leave a keyless copy in the agent's cache. A record is only a hint: reading a
unit is never wrong, only possibly a session more, and a unit whose data changes (a rotated key,
a departure) brings a hook about it anyway. Nothing is ever decided on the record alone.

Pure standard library and the unit state directory (``hookgate`` imports this before ops).
"""
import json
import os
from typing import Any, Callable, Iterable, List, Mapping, Optional

from vpnaas.core import unitstate

FILE_NAME = "published-peers.json"
#: The field whose presence says that a unit published its tunnel data (it writes every required
#: field of the interface in one commit: relation_data.KEYS; a test holds the two together).
KEY_FIELD = "public-key"
#: At most this many slots are kept (a hub's relations are bounded far below; beyond, no hint).
MAX_SLOTS = 1024


def path(directory: str) -> str:
    return os.path.join(directory, FILE_NAME)


def load(directory: str) -> List[str]:
    """The recorded slots ([] when there is no readable record: then nothing is read early)."""
    try:
        with open(path(directory)) as f:
            slots = json.load(f)
    except (OSError, ValueError):
        return []
    if not isinstance(slots, list) or not all(isinstance(s, str) for s in slots):
        return []
    return slots


def note(directory: str, slot: str, databag: Optional[Mapping[str, Any]]) -> None:
    """Record ``slot`` when ``databag`` (the remote unit's data, read in a hook about it) holds its
    key; a failure to write loses only the hint."""
    if not isinstance(databag, Mapping) or not databag.get(KEY_FIELD):
        return
    slots = load(directory)
    if slot in slots or len(slots) >= MAX_SLOTS:
        return
    try:
        unitstate.write_atomic(path(directory), json.dumps(sorted(slots + [slot])).encode(), 0o600)
    except OSError:
        pass


def all_recorded(directory: str, slots: Iterable[str]) -> bool:
    """Whether every one of ``slots`` (the related units now) was seen published."""
    wanted = set(slots)
    return wanted <= set(load(directory)) if wanted else True


class UnconfiguredChanged(object):
    """``ssh_hostname`` (a callable) as a hook decision asks it (relation_cache.nothing_to_do):
    answers the same, and ``record`` says afterwards whether the hook was a relation-changed about
    ``unit`` that came while ``ssh-hostname`` was unset (its remote unit is then worth a look)."""

    def __init__(self, kind: str, unit: Optional[str], ssh_hostname: Callable[[], Any]) -> None:
        self.kind, self.unit, self.ssh_hostname = kind, unit, ssh_hostname
        self.record = False

    def __call__(self) -> Any:
        value = self.ssh_hostname()
        self.record = self.kind == "changed" and bool(self.unit) and not value
        return value
