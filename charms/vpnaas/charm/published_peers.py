"""Which related units published their tunnel data before this unit was configured: the units its
first session may read at once.

A unit that asks its peers for ``peer-keys`` leaves unread, in its first session, the related
units it never read (``VpnaasCharm.defers_unread``): Juju 2.9's unit agent keeps what a read
returns from then until the next hook about that unit, and when OSM configures every VNF at once
the peers have not published yet. But a VNF configured after its peers, related before they
published (OSM's order, relations first, with an LCM or VCA that configures one VNF after another:
the testbed's demo) finds them published, and deferring them costs that unit a second session
after the first, which its peers' handshakes wait for. (A unit related after its peers published,
as a scaled-out instance is, sees one relation-changed per peer and keeps the deferral.)

Whether a peer published is told by the hooks about it, without reading it: Juju runs one
relation-changed about a remote unit right after its relation-joined, whatever its data
(worker/uniter/relation/state.go ``UpdateStateForHook`` sets ``ChangedPending``), and one more for
each change of its settings after that; and a unit writes its tunnel data only together with its
key (``TunnelRelations.publish``: only devices whose key the VNF reported). So a second
relation-changed about a unit, while ``ssh-hostname`` is still unset here, means that the unit has
published its key. Such hooks end in the hook gate (or in the charm) and are counted here per
slot; a first session whose every related unit was counted twice reads them all and applies
their keys. Nothing is read to count (a read in that hook would stay in the agent's cache until
the next hook about the unit, and a later action would see it: the very thing the deferral
avoids). A count is only a hint: reading a unit is never wrong, only possibly a session more
(a hook Juju ran again after a refused commit counts twice; and Juju's own writes count too: a
peer's config-changed that ends successfully, as it does when its session failed, has its agent
update the unit's network fields on every relation where they changed,
worker/uniter/runner/context/context.go ``flush`` → ``UpdateNetworkInfo``, which bumps its settings
without a key: the first session then reads that peer keyless and takes its key one
relation-changed later).

Pure standard library and the unit state directory (``hookgate`` imports this before ops).
"""
import json
import os
from typing import Any, Callable, Dict, Iterable, Optional

from vpnaas.core import unitstate

FILE_NAME = "published-peers.json"
#: relation-changed hooks about a unit that mean it published: the one after joined, then a write.
PUBLISHED = 2
#: At most this many slots are counted (a hub's relations are bounded far below; beyond, no hint).
MAX_SLOTS = 1024


def path(directory: str) -> str:
    return os.path.join(directory, FILE_NAME)


def load(directory: str) -> Dict[str, int]:
    """{slot: relation-changed hooks counted before the config} ({} when there is no readable record:
    then nothing is read early)."""
    try:
        with open(path(directory)) as f:
            counts = json.load(f)
    except (OSError, ValueError):
        return {}
    if not isinstance(counts, dict) or not all(isinstance(k, str) and type(v) is int for k, v in counts.items()):
        return {}
    return counts


def note(directory: str, slot: str) -> None:
    """One more relation-changed about ``slot`` before the config; a failure to write loses only
    the hint."""
    counts = load(directory)
    if slot not in counts and len(counts) >= MAX_SLOTS:
        return
    counts[slot] = min(counts.get(slot, 0) + 1, PUBLISHED)
    try:
        unitstate.write_atomic(path(directory), json.dumps(counts, sort_keys=True).encode(), 0o600)
    except OSError:
        pass


def all_published(directory: str, slots: Iterable[str]) -> bool:
    """Whether every one of ``slots`` (the related units now; none: False) was seen publishing."""
    wanted = set(slots)
    counts = load(directory)
    return bool(wanted) and all(counts.get(s, 0) >= PUBLISHED for s in wanted)


class UnconfiguredChanged(object):
    """``ssh_hostname`` (a callable) as a hook decision asks it (relation_cache.nothing_to_do):
    answers the same, and ``record`` says afterwards whether the hook was a relation-changed about
    ``unit`` that came while ``ssh-hostname`` was unset (to be counted)."""

    def __init__(self, kind: str, unit: Optional[str], ssh_hostname: Callable[[], Any]) -> None:
        self.kind, self.unit, self.ssh_hostname = kind, unit, ssh_hostname
        self.record = False

    def __call__(self) -> Any:
        value = self.ssh_hostname()
        self.record = self.kind == "changed" and bool(self.unit) and not value
        return value
