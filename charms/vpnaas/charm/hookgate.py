"""The first thing a charm's ``dispatch`` runs: end a relation hook, or a config-changed, that can
change nothing before ops is imported.

Why before ops, and by hand: to restore a relation event, ops 1.5.4 (the last for Python 3.6,
OSM's proxy machine) builds every relation of the hook's endpoint, one ``relation-list`` call per
relation, and importing ops alone costs a tenth of a second or more. A hub related to k spokes
runs about 3k relation hooks (created, joined, one changed per data change of each spoke), most
of which can change nothing (``relation_cache``): through ops each costs O(k) hook-tool calls,
O(k^2) in all, and the hub's hooks run one at a time. Here such a hook costs an interpreter
start, a few hook-tool calls and a small file read, whatever k is; a relation-joined, whose
relation-changed Juju runs next (``relation_cache.nothing_to_do``), not even a tool call. No
library offers a decision made before the framework starts; the decision itself is ``relation_cache``'s, the
same function the charm applies inside ops.

OSM's ``get-ssh-public-key`` action (run once per VNF before its ``config``, and again by heal
and scale) is answered here too (``answered``): it only reads the charm's public key
(``ProxyActions._on_get_ssh_public_key``: no reconcile), so ops' start, a charm run, costs
nothing here but the same ``action-set``. A unit without a whole key pair reaches the charm, which
fails the action or repairs the pair.

An application-data relation-changed (``JUJU_REMOTE_APP``, no ``JUJU_REMOTE_UNIT``: the remote
application's bag changed, the hub's mirror of relation_data) ends here when that bag, read with
``relation-get -r <id> --app - <app>``, still has the digest the charm recorded when it last read it.

Asked by ``vpnaas.charm.entry.main`` (``dispatch`` runs ``python3 -S ./src/charm.py``) in the charm's
own process before ops is imported, or run as ``python3 -S -m vpnaas.charm.hookgate`` from the charm
directory, with the hook's environment (``JUJU_UNIT_NAME`` names this unit: its own data on the
relation is read back as Juju holds it, so that a hook whose earlier run's publication Juju dropped
is never skipped). ``main()`` (and the exit status) 0: nothing to do, the hook ends (successfully)
here. 1: run the charm. Anything
unexpected (a value of the wrong shape, a failing or slow tool call, an unreadable cache) means
"run the charm": this gate can only ever skip what the charm would have skipped. It writes
nothing but that action's result and, for a relation-changed that came before ``ssh-hostname``
was set, one more count for its remote unit (``published_peers``: a hint for the first session,
read from no relation), logs nothing, and passes values only as separate arguments (never
through a shell).
"""
import json
import os
import re
import subprocess
import sys
from typing import Any, List, Mapping, Optional, Sequence

from vpnaas.charm import published_peers, relation_cache
from vpnaas.core import unitstate

_HOOK = re.compile(r"hooks/([a-z][a-z0-9-]{0,62})-relation-(created|joined|changed)")
_CONFIG_CHANGED = "hooks/config-changed"
_RELATION_ID = re.compile(r"(?:[a-z][a-z0-9-]{0,62}:)?([0-9]{1,9})")
_UNIT = re.compile(r"[a-z][a-z0-9-]{0,62}/[0-9]{1,9}")
_APP = re.compile(r"[a-z][a-z0-9-]{0,62}")
TOOL_TIMEOUT = 30
#: What a tool call that failed, timed out or answered no JSON returns.
FAILED = object()


def _tool(*args: str) -> Any:
    """A hook tool's JSON answer (the format ops asks for), or FAILED."""
    try:
        proc = subprocess.run(list(args) + ["--format=json"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, universal_newlines=True, timeout=TOOL_TIMEOUT)
    except (OSError, subprocess.SubprocessError):
        return FAILED
    if proc.returncode != 0:
        return FAILED
    try:
        return json.loads(proc.stdout)
    except ValueError:
        return FAILED


def _databag(relation_id: int, unit: str) -> Optional[Mapping[str, Any]]:
    bag = _tool("relation-get", "-r", str(relation_id), "-", unit)
    return bag if isinstance(bag, dict) and all(isinstance(v, str) for v in bag.values()) else None


def _app_databag(relation_id: int, app: str) -> Optional[Mapping[str, Any]]:
    """An application's bag (``relation-get --app``: an application-data relation-changed's)."""
    bag = _tool("relation-get", "-r", str(relation_id), "--app", "-", app)
    return bag if isinstance(bag, dict) and all(isinstance(v, str) for v in bag.values()) else None


def _ssh_hostname() -> Any:
    value = _tool("config-get", "ssh-hostname")
    # Unset is null or ""; anything unreadable counts as set, so that the charm decides.
    return value if value is None or isinstance(value, str) else "unreadable"


def _public_key(directory: str) -> Optional[str]:
    """The charm's SSH public key as the charm reads it ("" without a key; None: a half-written
    pair, which the charm repairs)."""
    if not os.path.exists(os.path.join(directory, unitstate.KEY_FILE)):
        return ""
    try:
        with open(os.path.join(directory, unitstate.KEY_FILE + ".pub")) as f:
            key = f.read().strip()
    except OSError:
        return None
    return key or None


def _members(endpoints: Sequence[str]) -> Optional[List[str]]:
    """The slots (relation_cache.slot) of every unit related on ``endpoints`` now; None if a tool
    call failed or answered something of the wrong shape."""
    out = []
    for endpoint in endpoints:
        ids = _tool("relation-ids", endpoint)
        if not isinstance(ids, list):
            return None
        for rid in ids:
            m = _RELATION_ID.fullmatch(rid) if isinstance(rid, str) else None
            units = _tool("relation-list", "-r", rid) if m else None
            if not m or not isinstance(units, list) or not all(isinstance(u, str) and _UNIT.fullmatch(u)
                                                               for u in units):
                return None
            out += [relation_cache.slot(int(m.group(1)), u) for u in units]
    return out


def _config_nothing_to_do(charm_dir: str, me: str) -> bool:
    directory = unitstate.unit_state_dir(charm_dir)
    if os.path.exists(os.path.join(directory, unitstate.UNCONFIRMED)):
        return False     # a run stepped the VNF and died before its commit: the charm contacts it
    state = relation_cache.load(directory)
    key = _public_key(directory)
    if state is None or not state.get("config") or key is None:
        return False     # no tool call: this cache cannot end a config-changed

    def config(salt: str) -> Optional[str]:
        options = _tool("config-get", "--all")
        return relation_cache.config_digest(salt, options, key) if isinstance(options, dict) else None
    return relation_cache.config_nothing_to_do(state, config, _members, _databag, lambda rid: _databag(rid, me))


def nothing_to_do(environ: Mapping[str, str]) -> bool:
    """True when the hook ``environ`` describes can change nothing (see the module's docstring)."""
    if environ.get("JUJU_DISPATCH_PATH", "") == _CONFIG_CHANGED:
        me, charm_dir = environ.get("JUJU_UNIT_NAME", ""), environ.get("JUJU_CHARM_DIR", "")
        return bool(charm_dir) and bool(_UNIT.fullmatch(me)) and _config_nothing_to_do(charm_dir, me)
    hook = _HOOK.fullmatch(environ.get("JUJU_DISPATCH_PATH", ""))
    rid = _RELATION_ID.fullmatch(environ.get("JUJU_RELATION_ID", ""))
    charm_dir = environ.get("JUJU_CHARM_DIR", "")
    if not hook or not rid or not charm_dir or environ.get("JUJU_RELATION", "") != hook.group(1):
        return False
    unit = environ.get("JUJU_REMOTE_UNIT", "")
    me = environ.get("JUJU_UNIT_NAME", "")
    # No remote unit: an application-data relation-changed, about JUJU_REMOTE_APP's bag.
    app = environ.get("JUJU_REMOTE_APP", "") if not unit else ""
    if (unit and not _UNIT.fullmatch(unit)) or not _UNIT.fullmatch(me) or (app and not _APP.fullmatch(app)):
        return False
    relation_id = int(rid.group(1))
    directory = unitstate.unit_state_dir(charm_dir)
    if os.path.exists(os.path.join(directory, unitstate.UNCONFIRMED)):
        return False     # a run stepped the VNF and died before its commit: the charm contacts it
    state = relation_cache.load(directory)
    hostname = published_peers.UnconfiguredChanged(hook.group(2), unit, _ssh_hostname)
    ended = relation_cache.nothing_to_do(state, hook.group(2), hook.group(1), relation_id, unit or None,
                                         lambda: _databag(relation_id, unit) if unit else
                                         _app_databag(relation_id, app) if app else None, hostname,
                                         lambda rid: _databag(rid, me))
    if ended and hostname.record:
        published_peers.note(directory, relation_cache.slot(relation_id, unit))
    return ended


_PUBLIC_KEY_ACTION = "actions/get-ssh-public-key"
#: An OpenSSH public key line as ``ssh.KeyStore`` writes it: printable ASCII, one line.
_PUBLIC_KEY = re.compile(r"ssh-[a-z0-9-]{1,40} [A-Za-z0-9+/]{1,1000}={0,2}( [\x21-\x7e]{1,200})?")


def answered(environ: Mapping[str, str]) -> bool:
    """True when ``environ`` is OSM's get-ssh-public-key and its result was set here, as the
    charm sets it (``action-set pubkey=<the public key>``); False: run the charm."""
    charm_dir = environ.get("JUJU_CHARM_DIR", "")
    if environ.get("JUJU_DISPATCH_PATH", "") != _PUBLIC_KEY_ACTION or not charm_dir:
        return False
    key = _public_key(unitstate.unit_state_dir(charm_dir))
    if not key or not _PUBLIC_KEY.fullmatch(key):
        return False
    try:
        return subprocess.run(["action-set", "pubkey=" + key], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=TOOL_TIMEOUT).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def main() -> int:
    return 0 if answered(os.environ) or nothing_to_do(os.environ) else 1


if __name__ == "__main__":
    sys.exit(main())
