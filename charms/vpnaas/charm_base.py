"""The ops glue shared by every VPNaaS proxy charm.

One ``reconcile`` turns charm config + relation data into state on the VNF. Every event the
charm observes (config-changed, each tunnel relation event, update-status, upgrade-charm) and
the end of every action run it. It never polls and never sleeps waiting for the other side:
when this unit's key is published, Juju wakes the peer with relation-changed, and vice versa.

Written against the ops API that ops 1.5.4 (Python 3.6, OSM's proxy machine) and later share.
"""
import ipaddress
import json
import logging
import os

from ops.charm import CharmBase, RelationBrokenEvent
from ops.framework import StoredState
from ops.model import ActiveStatus, BlockedStatus, MaintenanceStatus, WaitingStatus

from vpnaas import plan as planning
from vpnaas import refpoints, relation_cache, remote, ssh, validation

logger = logging.getLogger(__name__)

REMOTE_TIMEOUT = 120
RUN_TIMEOUT = 600
#: Events after which the VNF is checked even when the plan did not change: they are the
#: repair path (a killed wireguard-go, a rebooted VNF) and the operator's explicit requests.
_FORCING_EVENTS = ("config_changed", "update_status", "upgrade_charm", "start")


class ReconcileFailed(Exception):
    pass


def _is_ip(text):
    try:
        ipaddress.ip_address(text)
        return True
    except ValueError:
        return False


class VpnaasCharm(CharmBase):
    _stored = StoredState()

    def __init__(self, *args):
        super().__init__(*args)
        self._stored.set_default(manual_peers="{}", public_keys="{}", applied="", last_status="",
                                 implementation="")
        self.endpoints = self._tunnel_endpoints()
        self._breaking = None
        self.keystore = ssh.KeyStore(os.path.join(os.path.dirname(str(self.charm_dir)), "vpnaas"))
        self.relation_cache = relation_cache.RelationCache(self)
        on = self.on
        for event in (on.install, on.start, on.config_changed, on.upgrade_charm, on.update_status,
                      on.leader_elected):
            self.framework.observe(event, self._on_event)
        for ep in self.endpoints:
            rel = on[ep.name]
            for event in (rel.relation_created, rel.relation_joined, rel.relation_changed,
                          rel.relation_departed, rel.relation_broken):
                self.framework.observe(event, self._on_event)
        actions = {
            "generate-ssh-key": self._on_generate_ssh_key,
            "get-ssh-public-key": self._on_get_ssh_public_key,
            "verify-ssh-credentials": self._on_verify_ssh_credentials,
            "run": self._on_run,
            "reset-ssh-host-key": self._on_reset_ssh_host_key,
            "tunnel-status": self._on_tunnel_status,
            "add-peer": self._on_add_peer,
            "remove-peer": self._on_remove_peer,
            "restart-tunnels": self._on_restart_tunnels,
            "rotate-keys": self._on_rotate_keys,
        }
        for name, handler in actions.items():
            self.framework.observe(getattr(on, name.replace("-", "_") + "_action"), handler)

    # ------------------------------------------------------------------ model access
    def _tunnel_endpoints(self):
        out = []
        for name, meta in sorted(self.meta.relations.items()):
            iface = meta.interface_name or ""
            if iface != refpoints.INTERFACE_PREFIX and not iface.startswith(refpoints.INTERFACE_PREFIX + "-"):
                continue
            out.append(planning.TunnelEndpoint(name, "provider" if meta.role.name == "provides" else "requirer"))
        return out

    def _relations_snapshot(self, skip=None):
        """{endpoint: [{remote unit: databag}]} -- the relation being broken is left out."""
        snapshot = {}
        for ep in self.endpoints:
            rels = []
            for rel in self.model.relations[ep.name]:
                if skip is not None and rel.id == skip.id:
                    continue
                rels.append({unit.name: dict(rel.data[unit]) for unit in rel.units})
            snapshot[ep.name] = rels
        return snapshot

    def _manual_peers(self):
        return json.loads(self._stored.manual_peers)

    def _ssh_target(self, plan):
        cfg = self.config
        return ssh.Target(plan.ssh_host, cfg.get("ssh-username") or "ubuntu", cfg.get("ssh-password") or "",
                          plan.ssh_port, plan.ssh_connect_timeout)

    def build_plan(self, event=None):
        skip = event.relation if isinstance(event, RelationBrokenEvent) else None
        self._breaking = skip.id if skip is not None else None
        return planning.build_plan(dict(self.config), self.endpoints, self._relations_snapshot(skip),
                                   self._manual_peers())

    # ------------------------------------------------------------------ reconcile
    def _on_event(self, event):
        if self.relation_cache.nothing_to_do(event, self._stored.applied):
            return  # no VNF yet, or one relation's unchanged data: not worth reading all k relations
        force = event.handle.kind in _FORCING_EVENTS
        try:
            self.reconcile(event, force=force)
            self.relation_cache.remember(event, self._stored.applied)
        except ReconcileFailed:
            pass  # status already says what is wrong; the next event retries

    def reconcile(self, event=None, force=False, rotate=(), restart=False):
        """Make the VNF match config + relations. Returns (plan, observation or None).

        Raises ReconcileFailed (after setting the status) when the VNF could not be brought to
        the plan; configuration that is incomplete is not a failure (WaitingStatus)."""
        plan = self.build_plan(event)
        if plan.errors:
            self._set_status(BlockedStatus("config: " + "; ".join(plan.errors)))
            raise ReconcileFailed("; ".join(plan.errors))
        if not plan.ssh_host or plan.missing:
            missing = (["ssh-hostname"] if not plan.ssh_host else []) + plan.missing
            self._set_status(WaitingStatus("waiting for {} (set by the config primitive)".format(", ".join(missing))))
            return plan, None
        if not self.config.get("ssh-password") and not self.keystore.has_key():
            self._set_status(BlockedStatus("no SSH credentials: run generate-ssh-key or set ssh-password"))
            raise ReconcileFailed("no SSH credentials")
        fingerprint = plan.fingerprint()
        if (not force and not rotate and not restart and fingerprint == self._stored.applied
                and self._published(plan) and not self.component_wants_session(plan)):
            logger.debug("reconcile: plan unchanged, VNF not contacted")
            return plan, None
        script = remote.build_script(plan, rotate=rotate, restart=restart, component=self.component_script(plan))
        target = self._ssh_target(plan)
        if plan.devices:
            self.unit.status = MaintenanceStatus("applying {} tunnel(s) on {}".format(len(plan.devices), target.host))
        logger.info("reconcile: ssh session to %s (%d device(s))", target.host, len(plan.devices))
        err = ""
        try:
            with ssh.Session(target, self.keystore) as session:
                rc, out, err = session.run(remote.remote_command(target.username, REMOTE_TIMEOUT - 10),
                                           script.encode(), REMOTE_TIMEOUT)
            if rc != 0 and "a password is required" in err:
                raise remote.RemoteError("{} cannot run sudo without a password".format(target.username))
            obs = remote.parse_report(out, rc, err)
        except (ssh.SshError, remote.RemoteError) as e:
            self._stored.applied = ""
            transient = isinstance(e, ssh.SshError) and e.transient
            self._set_status(WaitingStatus(str(e)) if transient else BlockedStatus(str(e)))
            if isinstance(e, remote.RemoteError) and err.strip():
                logger.warning("remote step stderr: %s", remote.scrub(err.strip()[-500:]))
            raise ReconcileFailed(str(e)) from None
        self._publish(plan, obs)
        self._stored.applied = fingerprint
        self._stored.public_keys = json.dumps(obs.public_keys, sort_keys=True)
        self._stored.implementation = (obs.implementation + " " + obs.implementation_detail).strip()
        self._set_status(self.component_status(plan, obs, self._status_from(plan, obs)))
        return plan, obs

    # ------------------------------------------------------------------ component extension points
    def component_script(self, plan):
        """Bash run at the end of every reconcile session (see remote.build_script)."""
        return ""

    def component_wants_session(self, plan):
        """True when the component has work on the VNF even though the tunnels did not change
        (e.g. a service waiting for a handshake): the reconcile then opens its session."""
        return False

    def component_status(self, plan, obs, tunnel_status):
        """The unit status after a reconcile; components may add their service state."""
        return tunnel_status

    def open_session(self):
        """A new SSH session to the VNF for component work (long builds, config files)."""
        plan = self.build_plan()
        if not plan.ssh_host:
            raise ssh.SshError("ssh-hostname is not set")
        return ssh.Session(self._ssh_target(plan), self.keystore)

    def _live_relations(self, endpoint):
        """The endpoint's relations, without one being broken in this hook (ops 1.5.4 still lists
        it, and Juju refuses writes to it)."""
        return [rel for rel in self.model.relations[endpoint] if rel.id != self._breaking]

    def _publish(self, plan, obs):
        for dev in plan.devices:
            key = obs.public_keys.get(dev.name)
            if not key:
                continue
            for rel in self._live_relations(dev.endpoint):
                bag = dev.publication(key, {u.name for u in rel.units})
                mine = rel.data[self.unit]
                for k, v in bag.items():
                    if mine.get(k) != v:
                        mine[k] = v

    def _published(self, plan):
        keys = json.loads(self._stored.public_keys)
        for dev in plan.devices:
            key = keys.get(dev.name)
            if not key:
                return False
            for rel in self._live_relations(dev.endpoint):
                bag = dev.publication(key, {u.name for u in rel.units})
                mine = rel.data[self.unit]
                if any(mine.get(k) != v for k, v in bag.items()):
                    return False
        return True

    def _set_status(self, status):
        self.unit.status = status
        self._stored.last_status = status.message

    def _status_from(self, plan, obs):
        parts, waiting, blocked = [], False, []
        for dev in plan.devices:
            label = dev.endpoint
            if not obs.up.get(dev.name):
                parts.append("{}: down".format(label))
                blocked.append(label)
                continue
            if dev.problems:
                blocked.append(label)
                parts.append("{}: {}".format(label, "; ".join(dev.problems)))
            if not dev.peers:
                waiting = True
                parts.append("{}: waiting for peer key".format(label))
                continue
            ages = [p.get("latest-handshake-age") for p in obs.peers.get(dev.name, [])]
            if ages and all(a is not None for a in ages):
                parts.append("{}: up, handshake {}s ago".format(label, max(ages)))
            else:
                parts.append("{}: up, no handshake yet".format(label))
        if not plan.devices:
            parts.append("ready, no tunnel related")
        notes = []
        if obs.implementation == "userspace":
            notes.append("userspace wireguard-go {}".format(obs.implementation_detail.split(" ")[-1]))
        if obs.init != "systemd":
            notes.append("no boot persistence (no systemd)")
        message = ", ".join(parts) + ("; " + "; ".join(notes) if notes else "")
        if blocked:
            return BlockedStatus(message)
        if waiting:
            return WaitingStatus(message)
        return ActiveStatus(message)

    # ------------------------------------------------------------------ actions
    def _after_action(self, event, **kwargs):
        """Every action ends with a reconcile; returns (plan, observation or None)."""
        try:
            return self.reconcile(event, force=True, **kwargs)
        except ReconcileFailed as e:
            return None, str(e)

    def _on_generate_ssh_key(self, event):
        created = self.keystore.generate_key()
        event.set_results({"generated": "true" if created else "false (a key already exists)"})
        self._after_action(event)

    def _on_get_ssh_public_key(self, event):
        try:
            event.set_results({"pubkey": self.keystore.public_key()})
        except ssh.SshError as e:
            event.fail(str(e))

    def _on_verify_ssh_credentials(self, event):
        plan, obs = self._after_action(event)
        if plan is not None and obs is not None:
            event.set_results({"verified": "true", "hostname": obs.hostname})
            return
        # The plan may be blocked for a config reason: still answer the question asked.
        try:
            plan = plan or self.build_plan(event)
            if not plan.ssh_host:
                raise ssh.SshError("ssh-hostname is not set")
            with ssh.Session(self._ssh_target(plan), self.keystore) as session:
                rc, out, _err = session.run("hostname", timeout=30)
            if rc != 0:
                raise ssh.SshError("'hostname' exited with {}".format(rc))
            event.set_results({"verified": "true", "hostname": out.strip()})
        except (ssh.SshError, validation.InvalidValue) as e:
            event.fail("not verified: {}".format(e))

    def _on_run(self, event):
        command = (event.params.get("command") or "").strip()
        if not command:
            event.fail("command is empty")
            return
        plan = self.build_plan(event)
        if not plan.ssh_host:
            event.fail("ssh-hostname is not set")
            return
        try:
            with ssh.Session(self._ssh_target(plan), self.keystore) as session:
                rc, out, err = session.run(command, timeout=RUN_TIMEOUT)
        except ssh.SshError as e:
            event.fail(str(e))
            return
        # "stdout"/"stderr" are reserved action keys in Juju: action-set refuses them.
        event.set_results({"output": out, "errors": err, "return-code": str(rc)})
        if rc != 0:
            event.fail("command exited with {}: {}".format(rc, (err.strip().splitlines() or [""])[-1][-200:]))
        self._after_action(event)

    def _on_reset_ssh_host_key(self, event):
        plan = self.build_plan(event)
        port = int(self.config.get("ssh-port") or 22)
        forgotten = bool(plan.ssh_host) and self.keystore.forget_host(plan.ssh_host, port)
        event.set_results({"forgotten": "true" if forgotten else "false (no pinned key)"})
        self._after_action(event)

    def _on_tunnel_status(self, event):
        plan, obs = self._after_action(event)
        if plan is None or obs is None:
            event.fail(obs if isinstance(obs, str) else self._stored.last_status)
            return
        event.set_results({"tunnels": json.dumps(obs.as_tunnels(plan), sort_keys=True),
                           "implementation": self._stored.implementation or "unknown",
                           "status": self._stored.last_status})

    def _on_add_peer(self, event):
        try:
            endpoint, entry = planning.validate_manual_peer(event.params, self.endpoints)
        except validation.InvalidValue as e:
            event.fail(str(e))
            return
        peers = self._manual_peers()
        peers[endpoint] = [p for p in peers.get(endpoint, []) if p["public-key"] != entry["public-key"]] + [entry]
        refusal = self._refuse_manual_peer(event, endpoint, entry, peers)
        if refusal:
            event.fail(refusal)
            return
        self._stored.manual_peers = json.dumps(peers, sort_keys=True)
        self._finish_tunnel_action(event, {"device": refpoints.device_name(endpoint)})

    def _refuse_manual_peer(self, event, endpoint, entry, peers):
        """Why the candidate peer must not be stored (None if it may): nothing is stored for a
        peer that the plan would ignore, or that would capture this VNF's own traffic."""
        before = self.build_plan(event).device(endpoint)
        candidate = planning.build_plan(dict(self.config), self.endpoints, self._relations_snapshot(), peers)
        if candidate.errors or candidate.missing:
            return "the tunnel configuration is incomplete: {}".format("; ".join(candidate.errors + candidate.missing))
        dev = candidate.device(endpoint)
        new = [p for p in dev.problems if p not in (before.problems if before else [])]
        if new:
            return "; ".join(new)
        own = [candidate.ssh_host] if candidate.ssh_host else []
        own += [str(a.ip) for d in candidate.devices for a in [d.address] + list(d.service_addresses)]
        for prefix in entry["allowed-ips"]:
            net = ipaddress.ip_network(prefix)
            covered = [a for a in own if _is_ip(a) and ipaddress.ip_address(a) in net]
            if covered:
                return "allowed-ips {} would route this VNF's own address {} into the tunnel".format(
                    prefix, covered[0])
        return None

    def _on_remove_peer(self, event):
        try:
            endpoint, _ = planning.validate_manual_peer(dict(event.params, **{"allowed-ips": "0.0.0.0/32"}),
                                                        self.endpoints)
            key = validation.public_key(event.params.get("public-key", ""), "public-key")
        except validation.InvalidValue as e:
            event.fail(str(e))
            return
        peers = self._manual_peers()
        kept = [p for p in peers.get(endpoint, []) if p["public-key"] != key]
        if len(kept) == len(peers.get(endpoint, [])):
            event.fail("no manual peer with that key on {}".format(refpoints.device_name(endpoint)))
            return
        peers[endpoint] = kept
        self._stored.manual_peers = json.dumps(peers, sort_keys=True)
        self._finish_tunnel_action(event, {"device": refpoints.device_name(endpoint)})

    def _on_restart_tunnels(self, event):
        self._finish_tunnel_action(event, {}, restart=True)

    def _on_rotate_keys(self, event):
        wanted = (event.params.get("device") or "").strip()
        plan = self.build_plan(event)
        names = [d.name for d in plan.devices]
        if wanted:
            try:
                name = wanted[3:] if wanted.startswith("wg-") else wanted
                wanted = refpoints.device_name(validation.endpoint_name(name))
            except validation.InvalidValue as e:
                event.fail(str(e))
                return
            if wanted not in names:
                event.fail("{} is not an active tunnel device here ({})".format(wanted, ", ".join(names) or "none"))
                return
        rotate = [wanted] if wanted else names
        self._finish_tunnel_action(event, {}, rotate=rotate)

    def _finish_tunnel_action(self, event, results, **kwargs):
        plan, obs = self._after_action(event, **kwargs)
        if plan is None or obs is None:
            event.fail("stored; not applied on the VNF yet: {}".format(
                obs if isinstance(obs, str) else self._stored.last_status))
            return
        results = dict(results)
        for dev, key in sorted(obs.public_keys.items()):
            results["public-key-" + dev] = key
        results["status"] = self._stored.last_status
        event.set_results(results)
