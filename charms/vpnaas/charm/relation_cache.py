"""Skip a relation hook that can change nothing, without reading every relation.

A hub related to k spokes gets about k relation-changed hooks per round of key exchange, and
each reconcile builds its plan from all k relations (O(k) hook-tool calls): O(k^2) in all.
Most of those hooks concern one relation whose tunnel data did not change (the spoke only
published its ``peer-keys`` notification to a unit that asked for it, or Juju ran a hook of
its own). This module remembers, after every successful reconcile, a digest of each remote
unit's tunnel data per relation; a later relation-changed whose remote unit's data has the
same digest, while the VNF still holds what that reconcile applied, can change nothing.

Before the ``config`` primitive has set ``ssh-hostname`` no relation hook can do anything (no
key is published before this unit has a key on its VNF, and there is no VNF to reach): those
hooks can change nothing either, so that a hub deployed and related to k spokes before its
configuration (OSM's order) runs O(k) cheap hooks instead of O(k) hooks that each read k
relations.

The reconcile still decides on the whole state whenever it runs: a change in another relation
comes with that relation's own relation-changed hook, which is not skipped. ``peer-keys`` is
part of the digest while this unit's component waits for it (``Workload.awaits_peer_keys``: an OAI
start waiting for its handshakes) or a key of its own rotates, so their wake-up is never lost; an
action that changes this drops the cache (``VpnaasCharm.after_action``). ``wants-peer-keys`` always
is, as it decides what this unit publishes.

The cache is a file in the unit's state directory (``unitstate``), not ops' stored state: the
charm's ``dispatch`` asks ``hookgate`` first, which decides with ``nothing_to_do`` below before
ops is imported (ops 1.5.4 builds every relation of the endpoint to restore one event). The file
holds the tunnel endpoints, the digested fields, the fingerprint of the plan the VNF held when
the digests were taken (``applied``), one digest per relation and remote unit, and one digest per
relation of what this unit itself published there (``own``), and the relations the last charm run
wrote (``written``).

It is only valid while three things hold, and each has its own guard:

* the VNF holds that plan: the charm removes the file (``forget``) whenever the plan the VNF
  holds changes or a reconcile fails;
* the charm's own state was committed: the file is written as a pending copy (``save``) and made
  the cache only after ops has committed its stored state, once the charm's process ends
  normally (``promote``, called by ``charm_base.main``). A hook that dies after a reconcile
  leaves its pending copy behind, which is never read and is removed by the next run;
* Juju holds what this unit published: Juju flushes a hook's ``relation-set`` only when the hook
  succeeded and its commit reached the controller, and retries it otherwise. So a hook is
  skipped only when this unit's own fields on that relation, and on every relation the last
  charm run wrote, as Juju hands them to the new hook, still have the digests recorded with the
  cache; a dropped commit always reaches the charm, which publishes again;
* no rotation deadline of that plan has run out (``until``, a time.time(); rotation.py): a hook
  after it reaches the charm, which plans without the rotation whose time is up.

A config-changed can change nothing too, and is skipped (``config_nothing_to_do``) when the
config and the charm's SSH key are those the last session ran with (``config``: their salted
digest, recorded only when that holds and the workload wants no session of its own), the related
units are those the cache was taken over (``members``) and each one's data, and this unit's own
on the relations written last, still have their digests. The charm would build the same plan from
the same inputs, find it on the VNF and open no session (``VpnaasCharm.reconcile`` unforced): a
config-changed that Juju runs after a relation hook already applied the new config (a busy unit:
OSM configures the VNFs while their relations' hooks run) costs a charm run otherwise.

A file that cannot be read, or of another format, is no cache: nothing is skipped. Pure
standard library (``hookgate`` imports it before ops).
"""
import hashlib
import json
import os
import time
from typing import Any, Callable, Dict, Iterable, Mapping, Optional, Sequence

from vpnaas.core import unitstate

FORMAT = 3
FILE_NAME = "relation-cache.json"
PENDING_NAME = "relation-cache.pending.json"
#: Relation hooks that may find nothing to do; departed and broken always reconcile.
ARRIVING = ("created", "joined", "changed")

State = Dict[str, Any]


def field_digest(value: Any) -> str:
    """The digest of one field's value."""
    return hashlib.sha256(json.dumps(value).encode()).hexdigest()[:32]


def combine(digests: Mapping[str, str], fields: Sequence[str]) -> Optional[str]:
    """One digest of ``fields`` made of their field digests (None when one of them is not known):
    so the charm's relation memory, which keeps the field digests of every databag it read, gives
    the digest over whichever fields matter without keeping the data (relation_memory)."""
    picked = {}
    for k in fields:
        if k not in digests:
            return None
        picked[k] = digests[k]
    return hashlib.sha256(json.dumps(picked, sort_keys=True).encode()).hexdigest()[:32]


def digest(data: Mapping[str, Any], fields: Sequence[str]) -> str:
    """A short digest of ``fields`` of one databag (missing keys count as empty)."""
    return combine({k: field_digest(data.get(k, "")) for k in fields}, fields) or ""


def slot(relation_id: int, unit_name: str) -> str:
    return "{}/{}".format(relation_id, unit_name)


def path(directory: str) -> str:
    return os.path.join(directory, FILE_NAME)


def pending_path(directory: str) -> str:
    return os.path.join(directory, PENDING_NAME)


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def load(directory: str) -> Optional[State]:
    """The cache in ``directory``, or None when there is none or it is not one this code wrote."""
    try:
        with open(path(directory)) as f:
            state = json.load(f)
    except (OSError, ValueError):
        return None
    if not (isinstance(state, dict) and state.get("format") == FORMAT and isinstance(state.get("applied"), str)
            and _strings(state.get("endpoints")) and _strings(state.get("fields"))
            and _strings(state.get("own_fields")) and _digests(state.get("digests"))
            and _digests(state.get("own")) and _strings(state.get("written"))
            and isinstance(state.get("until", 0.0), (int, float))
            and isinstance(state.get("config", ""), str) and isinstance(state.get("salt", ""), str)
            and _strings(state.get("members", [])) and _digests(state.get("apps", {}))
            and _strings(state.get("app_fields", []))):
        return None
    return state


def _digests(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())


def make(endpoints: Iterable[str], fields: Sequence[str], applied: str,
         databags: Mapping[str, Mapping[str, Any]], own_fields: Sequence[str] = (),
         own: Optional[Mapping[int, Mapping[str, Any]]] = None, until: Optional[float] = None,
         digests: Optional[Mapping[str, str]] = None, own_digests: Optional[Mapping[str, str]] = None,
         written: Iterable[str] = (), config: str = "", salt: str = "", members: Optional[Iterable[str]] = None,
         apps: Optional[Mapping[str, str]] = None, app_fields: Sequence[str] = ()) -> State:
    """A cache of ``databags`` ({slot: remote unit's databag}; or their ``digests`` over ``fields``)
    taken while the VNF held ``applied``, with this unit's own databags as it published them
    ({relation id: databag}; or their ``own_digests`` over ``own_fields``), the relations the
    charm run wrote (``written``: a hook is skipped only once Juju holds those writes), valid until
    ``until`` (a time.time(); None: no deadline). ``config``: ``config_digest`` (with ``salt``) of
    the config and key the VNF's last session ran with, "" when a config-changed must reach the
    charm; ``members``: the slots of every related unit when the cache was taken (None: unknown);
    ``apps``: {relation id: digest over ``app_fields`` of the remote application's bag as the
    charm last read it} (an application-data relation-changed whose bag still has it is skipped)."""
    slots = {s: digest(bag, fields) for s, bag in databags.items()}
    slots.update(digests or {})
    mine = {str(rid): digest(bag, own_fields) for rid, bag in (own or {}).items()}
    mine.update(own_digests or {})
    state: State = {"format": FORMAT, "applied": applied, "endpoints": sorted(endpoints), "fields": list(fields),
                    "digests": slots, "own_fields": list(own_fields), "own": mine,
                    "written": sorted(set(str(r) for r in written))}
    if apps:
        state.update(apps=dict(apps), app_fields=list(app_fields))
    if until is not None:
        state["until"] = until
    if config and members is not None:
        state.update(config=config, salt=salt, members=sorted(set(members)))
    return state


def save(directory: str, state: State) -> None:
    """Write the cache as pending: it becomes the cache only when ``promote`` runs."""
    unitstate.write_atomic(pending_path(directory), json.dumps(state, sort_keys=True).encode(), 0o600)


def promote(directory: str) -> None:
    """After the charm's state was committed: the pending cache of this run becomes the cache."""
    try:
        os.rename(pending_path(directory), path(directory))
    except FileNotFoundError:
        pass


def discard_pending(directory: str) -> None:
    """At the start of a charm run: a pending cache left by a run that did not end normally."""
    try:
        os.remove(pending_path(directory))
    except FileNotFoundError:
        pass


def forget(directory: str) -> None:
    for name in (path(directory), pending_path(directory)):
        try:
            os.remove(name)
        except FileNotFoundError:
            pass


#: The most relations whose last writes the gate reads back; after more (a unit that published on
#: every relation: a new key), the charm does, once.
MAX_WRITTEN = 4


def nothing_to_do(state: Optional[State], kind: str, endpoint: str, relation_id: int, unit: Optional[str],
                  remote_data: Callable[[], Optional[Mapping[str, Any]]], ssh_hostname: Callable[[], Any],
                  own_data: Callable[[int], Optional[Mapping[str, Any]]] = lambda rid: None) -> bool:
    """True when the relation hook ``kind`` (created, joined, changed ...) of ``endpoint`` can
    change nothing: a relation-joined of a remote unit (its relation-changed follows), a
    relation-changed whose remote ``unit``'s data (``remote_data()``, None if unreadable) has the
    digest the cache holds while this unit's own data (``own_data(rid)``, as Juju holds it) has the
    digest recorded with it on the relation and on every relation the last
    charm run wrote (a dropped commit lost those writes: the hook is run again, and must reach the
    charm), or any arriving hook while ``ssh_hostname()`` is empty. ``state`` is the loaded cache;
    without one nothing is skipped. The callables are only called when needed (each may be a
    hook-tool call)."""
    if state is None or kind not in ARRIVING or endpoint not in state["endpoints"]:
        return False
    if kind == "joined" and unit:
        # Juju 2.9 runs relation-changed for this unit next on this relation, whatever its data, and
        # keeps that promise across an agent restart (the joined hook's commit records it:
        # worker/uniter/relation/state.go UpdateStateForHook sets ChangedPending, which
        # relation/resolver.go nextHookForRelation returns before anything else of the relation).
        # That hook reads the unit's data as fresh as this one could: one reconcile, not two.
        return True
    if kind == "changed" and unit and state["applied"] and time.time() < state.get("until", float("inf")):
        known = state["digests"].get(slot(relation_id, unit))
        data = remote_data() if known is not None else None
        if data is not None and known == digest(data, state["fields"]) and _holds_own(state, relation_id, own_data):
            return True
    if kind == "changed" and not unit and state["applied"] and time.time() < state.get("until", float("inf")):
        # An application-data relation-changed (Juju 2.9 runs one for every change of the remote
        # application's bag): nothing new when that bag still has the digest the charm recorded
        # when it last read it (the mirror and its request: relation_data).
        known = state.get("apps", {}).get(str(relation_id))
        data = remote_data() if known is not None else None
        if data is not None and known == digest(data, state.get("app_fields", [])) \
                and _holds_own(state, relation_id, own_data):
            return True
    return not ssh_hostname()


def config_digest(salt: str, config: Mapping[str, Any], public_key: str) -> str:
    """Every option and the charm's SSH public key ("" without one), hashed with a salt of the
    unit's (the digest of a password or an LTE key must not be checkable against guesses)."""
    text = salt + json.dumps({"config": dict(config), "key": public_key}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


#: The most related units whose data the gate reads for a config-changed; beyond, the charm decides.
MAX_MEMBERS = 256


def config_nothing_to_do(state: Optional[State], config: Callable[[str], Optional[str]],
                         members: Callable[[Sequence[str]], Optional[Sequence[str]]],
                         remote_data: Callable[[int, str], Optional[Mapping[str, Any]]],
                         own_data: Callable[[int], Optional[Mapping[str, Any]]]) -> bool:
    """True when a config-changed can change nothing (see the module's docstring): ``config(salt)``
    gives the digest of the config and key this hook sees (None if unreadable), ``members(endpoints)``
    the slots of every unit related on them now (None if unreadable), ``remote_data(rid, unit)``
    and ``own_data(rid)`` the databags as Juju hands them to this hook. Called only as needed."""
    if state is None or not state.get("config") or not state["applied"]:
        return False
    if time.time() >= state.get("until", float("inf")) or config(state.get("salt", "")) != state["config"]:
        return False
    recorded = state.get("members", [])
    if len(recorded) > MAX_MEMBERS:
        return False
    now = members(state["endpoints"])
    if now is None or sorted(now) != sorted(recorded):
        return False
    for name in recorded:
        known = state["digests"].get(name)
        rid, _, unit = name.partition("/")
        data = remote_data(int(rid), unit) if known is not None else None
        if data is None or digest(data, state["fields"]) != known:
            return False
    return _holds_own(state, None, own_data)


def _holds_own(state: State, relation_id: Optional[int], own_data: Callable[[int], Optional[Mapping[str, Any]]]
               ) -> bool:
    """Juju holds what this unit published on ``relation_id`` (if any) and on every relation written last."""
    rids = sorted(({str(relation_id)} if relation_id is not None else set()) | set(state["written"]))
    if len(rids) > MAX_WRITTEN + 1:
        return False
    for rid in rids:
        recorded = state["own"].get(rid)
        mine = own_data(int(rid)) if recorded is not None else None
        if mine is None or recorded != digest(mine, state["own_fields"]):
            return False
    return True
