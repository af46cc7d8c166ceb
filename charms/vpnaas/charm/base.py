"""The ops glue shared by every VPNaaS proxy charm.

One ``reconcile`` turns charm config + relation data into state on the VNF. Every event the
charm observes (config-changed, each tunnel relation event, update-status, upgrade-charm) and
the end of every action run it. It never polls and never sleeps waiting for the other side:
when this unit's key is published, Juju wakes the peer with relation-changed, and vice versa.

Written against the ops API that ops 1.5.4 (Python 3.6, OSM's proxy machine) and later share.
"""
import json
import logging
import os
import sys
import time
from typing import Any, Dict, Iterable, List, Optional, Tuple, Type

from ops.charm import (
    CharmBase,
    RelationBrokenEvent,
    RelationChangedEvent,
    RelationCreatedEvent,
    RelationEvent,
    RelationJoinedEvent,
)
from ops.framework import StoredState
from ops.model import BlockedStatus, MaintenanceStatus, StatusBase, WaitingStatus

from vpnaas.charm import published_peers, relation_cache, relation_memory, status
from vpnaas.charm.proxy_actions import ProxyActions
from vpnaas.charm.tunnel_relation import EVERY_UNIT, TunnelRelations, tunnel_endpoints
from vpnaas.charm.workload import Workload
from vpnaas.core import hookclock, model, policy, relation_data, rotation, unitstate, validation, wgconfig
from vpnaas.core import plan as planning
from vpnaas.core.facts import Facts
from vpnaas.core.hookclock import CLOCK
from vpnaas.vnf import dataplane, remote, ssh, vnfscript, vnfsession

logger = logging.getLogger(__name__)

REMOTE_TIMEOUT = vnfsession.REMOTE_TIMEOUT
#: The log lines of every SSH session the charm opens on its own (the bench counts them against
#: the VNF's sshd logins): one per reconcile that contacts the VNF, one per credential check.
RECONCILE_SESSION = "reconcile: ssh session to"
#: Events after which the VNF is checked even when the plan did not change: they are the
#: repair path (a killed wireguard-go, a rebooted VNF) and the operator's explicit requests.
#: config-changed is one of them only when the config (or the charm's SSH key) is not the one
#: the last session used: see ``_config_is_new``.
_FORCING_EVENTS = ("update_status", "upgrade_charm", "start")
#: The hooks that import the SSH library although they open no session (ssh.load_library): the
#: first after Juju unpacked the charm's files, long before the first session.
_LIBRARY_LOADING_EVENTS = ("install", "upgrade_charm")
#: The relation hooks that may find nothing to do (relation_cache), by their kind there.
_ARRIVING = ((RelationCreatedEvent, "created"), (RelationJoinedEvent, "joined"), (RelationChangedEvent, "changed"))
#: What the planning and the step builder may raise on values that passed the grammar but do not
#: fit (a step over its size bound, a value the renderer refuses): a Blocked status, never a hook
#: that fails and is retried for ever.
_UNFIT: Tuple[Type[Exception], ...] = (vnfscript.ScriptError, validation.InvalidValue, wgconfig.RenderError)


class ReconcileFailed(Exception):
    pass


class VpnaasCharm(CharmBase):
    """The generic VPNaaS charm; a component charm sets ``workload_type`` (workload.py), it
    overrides nothing."""
    _stored: Any = StoredState()
    workload_type = Workload

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._stored.set_default(manual_peers="{}", public_keys="{}", applied="", last_status="",
                                 implementation="", facts="{}", claims="[]", session_config="", config_salt="",
                                 torn_down=False, rotating="[]", rotation_started="{}", rotation_followed="{}",
                                 pq_psk_daemon=False, newest="{}", generation=0)
        if not self._stored.config_salt:
            self._stored.config_salt = os.urandom(16).hex()
        #: This hook's clock, one reading for every plan it makes (the rotation deadlines), and when
        #: the first of them runs out (the relation cache is not used after it).
        self.hook_time, self._rotation_expires = time.time(), None  # type: float, Optional[float]
        self.workload = self.workload_type(self)
        self.endpoints = tunnel_endpoints(self.meta)
        self.state_dir = unitstate.unit_state_dir(str(self.charm_dir))
        #: What earlier hooks read and wrote on the tunnel relations (relation_memory): saved when
        #: ops commits this run (a run that fails leaves the memory of the run before).
        self.memory = relation_memory.load(self.state_dir)
        self.tunnels = TunnelRelations(self.model, self.endpoints, wants_peer_keys=self.workload.waits_for_tunnels,
                                       memory=self.memory)
        # Which publication of each remote unit is the newest, and this unit's own last generation:
        # stored state, committed with the run (relation_data.newest).
        self.tunnels.newest = json.loads(self._stored.newest)
        self.tunnels.last_generation = int(self._stored.generation)
        self.tunnels.is_leader = self.unit.is_leader
        self.framework.observe(self.framework.on.pre_commit, self._on_pre_commit)
        # Left by a run that did not end normally (its state was never committed): never a cache.
        relation_cache.discard_pending(self.state_dir)
        unitstate.discard_vnf_confirmation(self.state_dir)
        self.keystore = ssh.KeyStore(self.state_dir)
        on = self.on
        for event in (on.install, on.start, on.config_changed, on.upgrade_charm, on.update_status,
                      on.leader_elected):
            self.framework.observe(event, self._on_event)
        for event in (on.stop, on.remove):
            self.framework.observe(event, self._on_teardown)
        for ep in self.endpoints:
            rel = on[ep.name]
            for event in (rel.relation_created, rel.relation_joined, rel.relation_changed,
                          rel.relation_departed, rel.relation_broken):
                self.framework.observe(event, self._on_event)
        self.actions = ProxyActions(self)

    # ------------------------------------------------------------------ model access
    def _manual_peers(self) -> model.ManualPeers:
        return json.loads(self._stored.manual_peers)

    def _ssh_target(self, plan: model.Plan) -> ssh.Target:
        cfg = plan.config
        if cfg is None:
            raise ssh.SshError("the charm configuration is invalid: " + "; ".join(plan.errors))
        return ssh.Target(cfg.ssh_host, cfg.ssh_username, cfg.ssh_password, cfg.ssh_port, cfg.connect_timeout)

    def build_plan(self, manual_peers: Optional[model.ManualPeers] = None) -> model.Plan:
        """The plan from config, relation data (without a relation being broken in this hook),
        the manual peers and what this very VNF reported about itself last time."""
        with CLOCK.phase("plan"):
            # No relation is read before ssh-hostname is set: nothing can be applied yet, and a read
            # would leave the unit agent's cache holding the peers' keyless data until each one's
            # next relation-changed (Juju 2.9 keeps related units' settings across hooks and
            # actions, worker/uniter/runner/context/contextfactory.go getContextRelations), so the
            # first session could not take the keys they publish meanwhile: one session each.
            self.tunnels.defer_unread = self.defers_unread()
            relations = (self.tunnels.snapshot() if (self.config.get("ssh-hostname") or "").strip()
                         else {ep.name: [] for ep in self.endpoints})
            plan = planning.build_plan(dict(self.config), self.endpoints, relations,
                                       self._manual_peers() if manual_peers is None else manual_peers,
                                       facts=self.known_facts(), incumbents=json.loads(self._stored.claims),
                                       own_keys=set(json.loads(self._stored.public_keys).values()),
                                       own=self.own_rotation(), memo=self.memory.admission)
            programs = self.programs
            plan.errors += dataplane.plan_errors(plan, programs)
            dataplane.without_pq_psk(plan, programs)
            dataplane.pq_psk_daemon(plan, bool(self._stored.pq_psk_daemon))
        return plan

    def defers_unread(self) -> bool:
        """Whether this run leaves unread the remote units it never read, but for the hook's own.

        Juju 2.9's unit agent keeps a related unit's settings from the first read until a hook
        about that unit (worker/uniter/runner/context/cache.go ``RelationCache.Settings``; only the
        hook's own remote unit is refreshed: contextfactory.go ``HookContext``,
        ``InvalidateMember``). OSM configures every VNF at once, so a unit's first session (its
        config-changed) would read peers that have not published yet and keep them empty: each
        peer's key then needs a hook, and a session, of its own on this unit. Left unread, the
        first hook about any peer reads all those that have published by then, in one session.

        Only while this unit has no key of its own (its first session has not succeeded: the VNF
        holds no tunnel of it, so nothing is removed) and only for a unit that asks its peers for
        ``peer-keys``: every peer that configures this unit's key then writes it, which is a hook
        about that peer here, so no peer is left unread for good (relation_data.publication).

        Nor when every related unit was seen publishing, by the hooks about it, before this unit
        was configured (``published_peers``: a VNF configured after its peers): reading them all
        now leaves no keyless copy, and the first session takes every key."""
        if not self.workload.waits_for_tunnels or json.loads(self._stored.public_keys):
            return False
        related = [relation_cache.slot(rel.id, unit.name)
                   for ep in self.endpoints for rel in self.tunnels.live(ep.name) for unit in rel.units]
        return not published_peers.all_published(self.state_dir, related)

    @property
    def programs(self) -> Dict[str, dataplane.Program]:
        """The userspace WireGuard programs this charm carries (dataplane.py)."""
        return dataplane.shipped(dataplane.charm_folder(str(self.charm_dir)))

    def own_rotation(self) -> rotation.Own:
        """The devices whose key rotation this unit runs, its devices' keys as last reported, and
        the times its rotation deadlines count from (rotation.py)."""
        return rotation.Own(json.loads(self._stored.rotating), json.loads(self._stored.public_keys), self.unit.name,
                            now=self.hook_time, started=json.loads(self._stored.rotation_started),
                            followed=json.loads(self._stored.rotation_followed))

    def set_rotating(self, devices: Iterable[str], started: Optional[Dict[str, float]] = None) -> None:
        """The devices whose rotation this unit runs; one that starts counts its deadline from now."""
        wanted = sorted(set(devices))
        known = dict(json.loads(self._stored.rotation_started), **(started or {}))
        self._stored.rotating = json.dumps(wanted)
        self._stored.rotation_started = json.dumps({d: known.get(d, self.hook_time) for d in wanted}, sort_keys=True)

    def _vnf_identity(self) -> Dict[str, Any]:
        """Whose facts are valid: the VNF at ``ssh-hostname`` with the host key pinned for it now
        (a VNF rebuilt at the same address has another key, and ``reset-ssh-host-key`` unpins it)."""
        host = (self.config.get("ssh-hostname") or "").strip()
        try:
            port = validation.port(self.config.get("ssh-port", 22), "ssh-port")
            name = validation.ssh_hostname(host)
        except validation.InvalidValue:
            return {"host": host, "hostkey": ""}
        return {"host": host, "hostkey": self.keystore.pinned(name, port) if name else ""}

    def known_facts(self) -> Optional[Facts]:
        stored = json.loads(self._stored.facts)
        identity = self._vnf_identity()
        if any(stored.get(k) != v for k, v in identity.items()):
            return None
        return Facts.from_dict(stored.get("facts"))

    def remember_facts(self, facts: Facts) -> None:
        self._stored.facts = json.dumps(dict(self._vnf_identity(), facts=facts.as_dict()), sort_keys=True)

    # ------------------------------------------------------------------ reconcile
    def _on_event(self, event: Any) -> None:
        with CLOCK.phase("charm"):
            self._handle(event)

    def _handle(self, event: Any) -> None:
        if event.handle.kind in _LIBRARY_LOADING_EVENTS:
            ssh.load_library()
        kind = event.handle.kind
        # A relation hook reads its own relation and remote unit; the other relations' members and
        # data are what the memory kept (Juju changes them only with hooks of their own:
        # relation_memory). ops 1.5.4 still lists a relation in its own relation-broken hook (and
        # Juju refuses writes to it): it is left out of the plan and of publishing for this hook.
        # The checks of the VNF read back everything this unit published too.
        rid = event.relation.id if isinstance(event, RelationEvent) else None
        if unitstate.vnf_unconfirmed(self.state_dir):
            # A run stepped the VNF and died before its commit, which saves the memory: the memory
            # is behind the VNF, and behind Juju's record too when Juju was told to skip that hook
            # (`juju resolved --no-retry` commits it). Every relation is listed as Juju has it.
            self.memory.relations = None
        app = getattr(event, "app", None) if isinstance(event, RelationEvent) and event.unit is None else None
        self.tunnels.begin_run(
            fresh=(rid, event.unit.name if event.unit is not None else None) if rid is not None else EVERY_UNIT,
            breaking=rid if isinstance(event, RelationBrokenEvent) else None,
            check_own="all" if kind in _FORCING_EVENTS else "written",
            remote_app=app.name if app is not None else None,
            # The checks of the VNF, and a new leader, read every remote application's bag and write
            # this unit's application bags again where they differ (the mirror: relation_data).
            refresh_apps=kind in _FORCING_EVENTS or kind == "leader_elected")
        if self._nothing_to_do(event):
            return  # no VNF yet, or one relation's unchanged data: not worth reading all k relations
        force = kind in _FORCING_EVENTS or (kind == "config_changed" and self._config_is_new())
        try:
            plan, _ = self.reconcile(force=force)
            with CLOCK.phase("publish"):
                self.tunnels.sync_apps(plan)
            with CLOCK.phase("relation_cache"):
                self._remember_relations(plan)
        except ReconcileFailed:
            self.tunnels.sync_apps()   # the mirror request at least (a hub before its VNF is reached)
        finally:
            self.tunnels.begin_run()

    def _on_pre_commit(self, _event: Any) -> None:
        """ops is about to commit this run's state: the relation memory goes with it, and the
        generations (stored state)."""
        newest = json.dumps(self.tunnels.newest, sort_keys=True)
        if newest != self._stored.newest:
            self._stored.newest = newest
        if self.tunnels.last_generation != self._stored.generation:
            self._stored.generation = self.tunnels.last_generation
        try:
            self.memory.save(self.state_dir)
        except OSError as e:
            relation_memory.forget(self.state_dir)      # no memory is safe; a stale one would not be
            logger.warning("the relation memory was not saved: %s", e)

    # ------------------------------------------------------------------ relation cache
    def cache_fields(self) -> List[str]:
        """The relation fields whose change can matter to this unit (relation_cache)."""
        fields = list(relation_data.KEYS) + [relation_data.WANTS_PEER_KEYS] + list(relation_data.ROTATION_KEYS) \
            + [relation_data.PQ_PSK_KEY]   # the peer's pq-psk capability changes its tunnel's configuration
        # peer-keys only wakes a unit that waits for its tunnels, or that rotates a key (the
        # peers confirm the new key with it: rotation.py).
        waits = self.workload.awaits_peer_keys() or json.loads(self._stored.rotating)
        return fields + [relation_data.PEER_KEYS] if waits else fields

    def _nothing_to_do(self, event: Any) -> bool:
        """relation_cache's decision, inside ops (the charm's dispatch asked hookgate the same
        question before ops started; this covers what reaches the charm another way)."""
        kind = next((name for cls, name in _ARRIVING if isinstance(event, cls)), None)
        if kind is None or unitstate.vnf_unconfirmed(self.state_dir):
            return False
        state = relation_cache.load(self.state_dir) or relation_cache.make(
            (ep.name for ep in self.endpoints), self.cache_fields(), "", {})
        if state["applied"] != self._stored.applied:
            state = dict(state, applied="")     # taken for another plan: only the no-VNF rule holds
        unit = event.unit
        hostname = published_peers.UnconfiguredChanged(kind, unit.name if unit is not None else None,
                                                       lambda: self.config.get("ssh-hostname"))
        # An application-data relation-changed (no remote unit) is about the remote application's bag.
        whose = unit if unit is not None else getattr(event, "app", None)
        ended = relation_cache.nothing_to_do(state, kind, event.relation.name, event.relation.id,
                                             unit.name if unit is not None else None,
                                             lambda: _bag(event.relation, whose),
                                             hostname, self.tunnels.own_data)
        if ended and hostname.record:
            published_peers.note(self.state_dir, relation_cache.slot(event.relation.id, unit.name))
        return ended

    def _remember_relations(self, plan: model.Plan) -> None:
        """After a reconcile that did not fail: the digests of every remote unit's data as the plan
        took it (relation_memory), and of what this unit asked Juju to hold on each relation, for
        the plan the VNF holds now; and, when the last session ran with this very config and the
        workload wants no session of its own, that config's digest and who is related, so that a
        config-changed that can change nothing ends in the hook gate."""
        fields = self.cache_fields()
        config = self._stored.session_config
        quiet = config == self._config_digest() and not self.workload.wants_session(plan)
        members = [relation_cache.slot(rel.id, unit.name)
                   for ep in self.endpoints for rel in self.tunnels.live(ep.name) for unit in rel.units]
        relation_cache.save(self.state_dir, relation_cache.make(
            (ep.name for ep in self.endpoints), fields, self._stored.applied, {}, relation_data.PUBLISHED,
            until=self._rotation_expires, digests=self.memory.gate_digests(fields),
            own_digests=self.tunnels.own_digests(), written=self.memory.written,
            config=config if quiet else "", salt=self._stored.config_salt, members=members,
            apps=self.memory.apps, app_fields=relation_data.APP_FIELDS))

    def _set_applied(self, fingerprint: str) -> None:
        """Record the fingerprint of the plan the VNF holds ("": unknown). The relation cache is
        valid only for the plan it was taken with, and hookgate reads it without ops' stored
        state: it goes the moment that plan changes (written again by _remember_relations)."""
        if fingerprint != self._stored.applied:
            relation_cache.forget(self.state_dir)
        self._stored.applied = fingerprint

    def _config_digest(self) -> str:
        """Every option and the charm's SSH public key, hashed with a salt of this unit's (the
        digest of a password or an LTE key must not be checkable against guesses)."""
        return relation_cache.config_digest(self._stored.config_salt, self.config,
                                            self.keystore.public_key() if self.keystore.has_key() else "")

    def _config_is_new(self) -> bool:
        """True unless the last SSH session already ran with exactly this config and key. Juju hands a
        hook the current config, so a relation hook that runs between ``juju config`` and its
        config-changed (a busy unit: OSM configures the VNFs while their relations' hooks run) has
        already made the VNF match it: checking it again seconds later is an SSH session for nothing."""
        return self._config_digest() != self._stored.session_config

    def reconcile(self, force: bool = False, rotate: Iterable[str] = (), restart: bool = False,
                  fresh_next: Iterable[str] = ()) -> Tuple[model.Plan, Optional[remote.Observation]]:
        """Make the VNF match config + relations. Returns (plan, observation or None). ``rotate``:
        devices whose key is replaced in place; ``fresh_next``: devices whose make-before-break
        rotation starts (their temporary device gets the new key: rotation.py).

        Raises ReconcileFailed (after setting the status) when the VNF could not be brought to
        the plan; configuration that is incomplete is not a failure (WaitingStatus)."""
        if self._stored.torn_down:
            raise ReconcileFailed("the unit is being removed")
        plan = self.build_plan()
        # What the rotation deadlines need from this hook: how long each rotating unit was followed.
        self._stored.rotation_followed = json.dumps(rotation.followed(plan), sort_keys=True)
        self._rotation_expires = rotation.expires(plan)
        if plan.errors:
            self._blocked_by_config(plan)
        if not plan.ssh_host or plan.missing:
            missing = (["ssh-hostname"] if not plan.ssh_host else []) + plan.missing
            self._set_status(WaitingStatus("waiting for {} (set by the config primitive)".format(", ".join(missing))))
            return plan, None
        if not self.config.get("ssh-password") and not self.keystore.has_key():
            self._set_status(BlockedStatus("no SSH credentials: run generate-ssh-key or set ssh-password"))
            raise ReconcileFailed("no SSH credentials")
        keys = json.loads(self._stored.public_keys)
        options = {"rotate": list(rotate), "restart": restart, "fresh_next": list(fresh_next)}
        if (not force and not any(options.values()) and plan.fingerprint() == self._stored.applied
                and not self.workload.wants_session(plan) and not unitstate.vnf_unconfirmed(self.state_dir)):
            with CLOCK.phase("publish"):
                if not self.tunnels.published(plan, keys):
                    # The VNF holds the plan, but Juju dropped what this unit published (a hook whose
                    # commit failed, or one that died): publish again, no session needed.
                    self.tunnels.publish(plan, keys)
            logger.debug("reconcile: plan unchanged, VNF not contacted")
            return plan, None
        target = self._ssh_target(plan)
        if plan.devices:
            self.unit.status = MaintenanceStatus("applying {} tunnel(s) on {}".format(len(plan.devices), target.host))
        logger.info("%s %s (%d device(s))", RECONCILE_SESSION, target.host, len(plan.devices))
        unitstate.mark_vnf_unconfirmed(self.state_dir)
        try:
            with vnfsession.login(target, self.keystore) as session:
                plan, obs = vnfsession.apply(self, session, target, plan, options)
        except (ssh.SshError, remote.RemoteError) as e:
            self._set_applied("")
            self._stored.session_config = ""
            transient = isinstance(e, ssh.SshError) and e.transient
            self._set_status(WaitingStatus(str(e)) if transient else BlockedStatus(str(e)))
            raise ReconcileFailed(str(e)) from None
        except _UNFIT as e:
            self._set_applied("")
            self._set_status(BlockedStatus("cannot apply the plan: {}".format(e)))
            raise ReconcileFailed(str(e)) from None
        if plan.errors:
            self._set_applied("")
            self._blocked_by_config(plan)
        # pq-psk's capability is published once the VNF said its daemon runs, and withdrawn when it
        # did not (failed, or off): the peers then keep their tunnel classical and say so.
        self._stored.pq_psk_daemon = obs.pq_psk == "up"
        dataplane.pq_psk_daemon(plan, obs.pq_psk == "up")
        # A temporary device that failed offers no path: its key is not published (rotation.py).
        with CLOCK.phase("publish"):
            self.tunnels.publish(plan, {d: k for d, k in obs.public_keys.items()
                                        if d not in obs.failed or not d.startswith(rotation.TEMP_PREFIX)})
        qos_failed = any(q.startswith("failed") for q in obs.qos)   # the next hook tries it again
        qos_failed = qos_failed or obs.pq_psk.startswith("failed")  # so does a pq-psk daemon that did not start
        self._set_applied(plan.fingerprint() if not (obs.failed or obs.refused or qos_failed) else "")
        self._stored.session_config = self._config_digest()
        self._stored.claims = json.dumps(policy.claims(plan))
        self._stored.public_keys = json.dumps(obs.public_keys, sort_keys=True)
        own = self.own_rotation()
        self.set_rotating(own.rotating - {d for d in rotation.finished(plan, own) if d not in obs.failed},
                          rotation.started(plan, own))
        self._stored.implementation = (obs.implementation + " " + obs.implementation_detail).strip()
        self.workload.observed(plan, obs)
        self._set_status(self.workload.status(plan, obs, self._status_from(plan, obs)))
        unitstate.vnf_confirmed_pending(self.state_dir)
        return plan, obs

    def _blocked_by_config(self, plan: model.Plan) -> None:
        self._set_status(BlockedStatus("config: " + "; ".join(plan.errors)))
        raise ReconcileFailed("; ".join(plan.errors))

    def run_vnf_step(self, session: ssh.Session, target: ssh.Target, step: vnfscript.Step) -> remote.Observation:
        """Run one VNF-side step in an open session and read its report (vnfsession.run_step)."""
        return vnfsession.run_step(session, target, step)

    # ------------------------------------------------------------------ removal
    def _on_teardown(self, event: Any) -> None:
        """stop and remove (Juju runs them after every relation is broken, when the unit is
        removed: NS terminate, scale-in, heal): nothing of the tunnels may stay on the VNF. Done
        once (remove after stop changes nothing); a VNF that cannot be reached is said in the
        status and left (it is usually being deleted with the unit)."""
        if self._stored.torn_down:
            return
        self._stored.torn_down = True
        self._set_applied("")
        host = (self.config.get("ssh-hostname") or "").strip()
        if not host or not (self.config.get("ssh-password") or self.keystore.has_key()):
            return
        try:
            target = self._ssh_target(self.build_plan())
            logger.info("%s %s (teardown)", RECONCILE_SESSION, target.host)
            with ssh.Session(target, self.keystore) as session:
                self.run_vnf_step(session, target, remote.teardown_step(self.workload.teardown))
            self._set_status(MaintenanceStatus("removed: nothing of the tunnels is left on {}".format(target.host)))
        except (ssh.SshError, remote.RemoteError) + _UNFIT as e:
            self._set_status(WaitingStatus("removing: the VNF was not cleaned up: {}".format(e)))

    # ------------------------------------------------------------------ for workloads
    def open_session(self) -> ssh.Session:
        """A new SSH session to the VNF for component work (long builds, config files)."""
        plan = self.build_plan()
        if not plan.ssh_host:
            raise ssh.SshError("ssh-hostname is not set")
        return ssh.Session(self._ssh_target(plan), self.keystore)

    def _set_status(self, status: StatusBase) -> None:
        self.unit.status = status
        self._stored.last_status = status.message

    def _status_from(self, plan: model.Plan, obs: remote.Observation) -> StatusBase:
        return status.tunnel_status(plan, obs)

    # ------------------------------------------------------------------ actions
    def after_action(self, force: bool = True, **kwargs: Any) -> "Outcome":
        """Every action ends with a reconcile, which checks the VNF unless ``force`` is false;
        its outcome (plan, observation or None, error)."""
        self.tunnels.begin_run()
        try:
            plan, obs = self.reconcile(force=force, **kwargs)
            self.tunnels.sync_apps(plan)
            return Outcome(plan, obs, "")
        except ReconcileFailed as e:
            return Outcome(self.build_plan(), None, str(e))
        finally:
            # An action that changed which fields matter (a start that now waits for its peers'
            # peer-keys) leaves no cache taken over the others: the next hook reaches the charm.
            cached = relation_cache.load(self.state_dir)
            if cached is not None and cached["fields"] != self.cache_fields():
                relation_cache.forget(self.state_dir)


def _bag(relation: Any, whose: Any) -> Optional[Any]:
    """``whose`` (a unit or an application) databag on ``relation``; None when ops has none."""
    try:
        return relation.data[whose] if whose is not None else None
    except KeyError:
        return None


class Outcome(object):
    """What the reconcile at the end of an action did: ``obs`` is None when the VNF could not be
    brought to ``plan`` (``error`` says why)."""
    __slots__ = ("plan", "obs", "error")

    def __init__(self, plan: model.Plan, obs: Optional[remote.Observation], error: str) -> None:
        self.plan = plan
        self.obs = obs
        self.error = error


def _without_ops_debug(record: logging.LogRecord) -> bool:
    """ops' own DEBUG lines (it is up, which storage, the event it emits; ops.main and ops.storage
    log them on the root logger, where the charm logs nothing) cost a juju-log process each on
    every hook, and Juju keeps them only where the model's logging-config asks for DEBUG. They stay
    with JUJU_DEBUG (ops' own debug switch, set by `juju debug-hooks`); the charm's lines, and
    ops' from INFO up, are unchanged. A filter of the root logger sees only what is logged on it
    (the charm's named loggers' records reach its handlers without it)."""
    return record.levelno > logging.DEBUG


def main(charm_class: Any) -> None:
    """Run ``charm_class`` for this hook with ops, then let this run's relation cache become the
    cache and its finished session confirm the VNF (``unitstate``): only now, when ops has
    committed the charm's stored state. A run that raises or is killed leaves both unused."""
    CLOCK.since_start("imports")
    from ops.main import main as ops_main

    from vpnaas.charm import relation_lookup
    relation_lookup.install()   # a relation event restored without building its endpoint's relations

    if "JUJU_DEBUG" not in os.environ:     # ops 1.5.4's own test of its debug switch (ops/main.py)
        logging.getLogger().addFilter(_without_ops_debug)

    # What ops does itself: the event restored (a relation-list per relation of its endpoint, in
    # ops 1.5.4), the charm made, the handler called, the state committed.
    with CLOCK.phase("ops"):
        ops_main(charm_class)
    charm_dir = os.environ.get("JUJU_CHARM_DIR") or os.path.dirname(os.path.dirname(os.path.realpath(sys.argv[0])))
    relation_cache.promote(unitstate.unit_state_dir(charm_dir))
    unitstate.confirm_vnf(unitstate.unit_state_dir(charm_dir))
    if hookclock.enabled():
        # The run's CPU: this process and the hook tools it waited for (os.times; milliseconds).
        CLOCK.count("cpu_ms", int(round(1000 * sum(os.times()[:4]))))
    hookclock.dump()
