"""The actions of every VPNaaS charm: the SSH proxy contract OSM relies on (generate-ssh-key,
get-ssh-public-key, verify-ssh-credentials, run), reset-ssh-host-key, and the tunnel actions
(tunnel-status, add-peer, remove-peer, restart-tunnels, rotate-keys). An object the charm
composes; every action ends with the charm's reconcile (``after_action``).
"""
import json
import logging
from typing import Any, Dict, FrozenSet, Optional, Tuple

from ops.charm import ActionEvent
from ops.framework import Object

from vpnaas.core import model, refpoints, rotation, validation
from vpnaas.core import plan as planning
from vpnaas.vnf import remote, ssh

logger = logging.getLogger(__name__)

RUN_TIMEOUT = 600
#: The log line of a credential check's own session (the bench counts sessions by it).
VERIFY_SESSION = "verify: ssh session to"


class ProxyActions(Object):
    def __init__(self, charm: Any) -> None:
        super().__init__(charm, "proxy-actions")
        self.charm = charm
        handlers = {
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
        for name, handler in handlers.items():
            charm.framework.observe(getattr(charm.on, name.replace("-", "_") + "_action"), handler)

    def _on_generate_ssh_key(self, event: ActionEvent) -> None:
        """OSM's first step for an execution environment whose VM it has just created: at
        instantiation and scale-out (a new unit: nothing pinned yet) and at heal (LCM 19's
        heal_N2VC keeps the unit and re-creates the VM behind ``ssh-hostname``). On a unit that
        has pinned its VNF this is the one signal of a heal that comes through Juju, never from
        the network: the VNF's next successful login may present a new host key (docs/security.md)."""
        try:
            created = self.charm.keystore.generate_key()
        except ssh.SshError as e:
            event.fail(str(e))
            return
        results: Dict[str, Any] = {"generated": "true" if created else "false (a key already exists)"}
        host = self._expect_reprovisioned_vnf()
        if host:
            results["host-key"] = ("{} is being re-provisioned: its next successful login pins the host key it "
                                   "presents".format(host))
        event.set_results(results)
        self.charm.after_action()

    def _expect_reprovisioned_vnf(self) -> str:
        """The VNF at ``ssh-hostname`` (pinned) is being re-provisioned: a fresh disk, a new host
        key, no keys or tunnels. Nothing the old VM reported or held is the new one's: its facts
        are learnt again, the whole plan is applied at the next login (whichever event brings
        it), and no key rotation of the old disk goes on. Returns the host ("" if none pinned)."""
        config = self.charm.config
        try:
            port = validation.port(config.get("ssh-port", 22), "ssh-port")
            host = validation.ssh_hostname((config.get("ssh-hostname") or "").strip())
        except validation.InvalidValue:
            return ""
        if not host or not self.charm.keystore.expect_new_host_key(host, port):
            return ""
        self.charm._stored.facts = "{}"
        self.charm._set_applied("")
        self.charm._stored.session_config = ""
        self.charm.set_rotating([])
        logger.warning("generate-ssh-key on a unit whose VNF %s is pinned: OSM re-provisions it; its next "
                       "successful login pins the host key it presents", host)
        return host

    def _on_get_ssh_public_key(self, event: ActionEvent) -> None:
        try:
            event.set_results({"pubkey": self.charm.keystore.public_key()})
        except ssh.SshError as e:
            event.fail(str(e))

    def _on_verify_ssh_credentials(self, event: ActionEvent) -> None:
        """OSM's question after ``config`` (asked again while it fails): can the charm log in to
        the VNF? A reconcile runs first, as after every action, but opens a session only when
        the VNF must change (OSM asks right after the config-changed that already applied the
        config: a second full session per VNF would check nothing new). When it opened none,
        one login runs ``hostname``: the answer always comes from a login made now."""
        outcome = self.charm.after_action(force=False)
        if outcome.obs is not None:
            event.set_results({"verified": "true", "hostname": outcome.obs.hostname})
            return
        # Nothing to change, or the plan is blocked for a config reason: answer the question asked.
        try:
            plan = outcome.plan
            if not plan.ssh_host:
                raise ssh.SshError("ssh-hostname is not set")
            target = self.charm._ssh_target(plan)
            logger.info("%s %s", VERIFY_SESSION, target.host)
            with ssh.Session(target, self.charm.keystore) as session:
                rc, out, _err = session.run("hostname", timeout=30)
            if rc != 0:
                raise ssh.SshError("'hostname' exited with {}".format(rc))
            event.set_results({"verified": "true", "hostname": validation.excerpt(out.strip(), 64).strip("'")})
        except (ssh.SshError, validation.InvalidValue) as e:
            event.fail("not verified: {}".format(e))

    def _on_run(self, event: ActionEvent) -> None:
        command = event.params.get("command") or ""
        if not isinstance(command, str) or not command.strip():
            event.fail("command is empty")
            return
        plan = self.charm.build_plan()
        if not plan.ssh_host:
            event.fail("ssh-hostname is not set")
            return
        try:
            with ssh.Session(self.charm._ssh_target(plan), self.charm.keystore) as session:
                rc, out, err = session.run(command, timeout=RUN_TIMEOUT)
        except ssh.SshError as e:
            event.fail(str(e))
            return
        # "stdout"/"stderr" are reserved action keys in Juju: action-set refuses them.
        event.set_results({"output": out, "errors": err, "return-code": str(rc)})
        if rc != 0:
            event.fail("command exited with {}: {}".format(
                rc, remote.scrub((err.strip().splitlines() or [""])[-1][-200:])))
        self.charm.after_action()

    def _on_reset_ssh_host_key(self, event: ActionEvent) -> None:
        plan = self.charm.build_plan()
        forgotten = bool(plan.ssh_host) and self.charm.keystore.forget_host(plan.ssh_host, plan.ssh_port)
        # Whatever the old VNF reported about itself is not the new one's, nor what it held.
        self.charm._stored.facts = "{}"
        self.charm._set_applied("")
        event.set_results({"forgotten": "true" if forgotten else "false (no pinned key)"})
        self.charm.after_action()

    def _on_tunnel_status(self, event: ActionEvent) -> None:
        outcome = self.charm.after_action()
        if outcome.obs is None:
            event.fail(outcome.error or self.charm._stored.last_status)
            return
        event.set_results({"tunnels": json.dumps(outcome.obs.as_tunnels(outcome.plan), sort_keys=True),
                           "implementation": self.charm._stored.implementation or "unknown",
                           "status": self.charm._stored.last_status})

    def _on_add_peer(self, event: ActionEvent) -> None:
        try:
            endpoint, entry = planning.validate_manual_peer(event.params, self.charm.endpoints)
        except validation.InvalidValue as e:
            event.fail(str(e))
            return
        peers = self.charm._manual_peers()
        held = [p for p in peers.get(endpoint, []) if p["public-key"] == entry["public-key"]]
        if held and _identity(held[0]) != _identity(entry):
            # A key belongs to one peer, the first that held it (as on relations): a second
            # add-peer with it never takes over the first one's addresses or endpoint (deploy
            # scale with an instance that reports another's key, or an operator's mistake).
            event.fail("public-key: {} already has a manual peer with that key (allowed-ips {}{}): a key belongs "
                       "to one peer; remove-peer it first to give it other addresses".format(
                           refpoints.device_name(endpoint), ",".join(held[0]["allowed-ips"]),
                           ", endpoint " + held[0]["endpoint"] if held[0].get("endpoint") else ""))
            return
        if not held:         # the same peer again is kept as it was stored
            peers[endpoint] = peers.get(endpoint, []) + [entry]
        refusal = self._refuse_manual_peer(endpoint, peers)
        if refusal:
            event.fail(refusal)
            return
        self.charm._stored.manual_peers = json.dumps(peers, sort_keys=True)
        self._finish_tunnel_action(event, {"device": refpoints.device_name(endpoint)}, entry_of=endpoint)

    def _refuse_manual_peer(self, endpoint: str, peers: model.ManualPeers) -> Optional[str]:
        """Why the candidate peer must not be stored (None if it may): it obeys the same route
        policy as a related unit's data (except the allowance), so nothing is stored for a peer
        the plan would refuse in whole or in part. Nor for one that would take a prefix from a
        peer of another device: every device's problems count, not only its own."""
        before = [p for dev in self.charm.build_plan().devices for p in dev.problems]
        candidate = self.charm.build_plan(manual_peers=peers)
        if candidate.errors or candidate.missing:
            return "the tunnel configuration is incomplete: {}".format("; ".join(candidate.errors + candidate.missing))
        new = [p for dev in candidate.devices for p in dev.problems if p not in before]
        return "; ".join(new) if new else None

    def _on_remove_peer(self, event: ActionEvent) -> None:
        try:
            endpoint, _ = planning.validate_manual_peer(dict(event.params, **{"allowed-ips": "0.0.0.0/32"}),
                                                        self.charm.endpoints)
            key = validation.public_key(event.params.get("public-key", ""), "public-key")
            named = validation.prefix_list(event.params.get("allowed-ips") or "", "allowed-ips")
        except validation.InvalidValue as e:
            event.fail(str(e))
            return
        peers = self.charm._manual_peers()
        kept = [p for p in peers.get(endpoint, []) if p["public-key"] != key]
        if len(kept) == len(peers.get(endpoint, [])):
            event.fail("no manual peer with that key on {}".format(refpoints.device_name(endpoint)))
            return
        held = [p for p in peers[endpoint] if p["public-key"] == key][0]
        if named and _identity(held)[0] != frozenset(str(p) for p in named):
            # The caller names whose peer it removes (deploy scale: instance k's addresses): a key
            # another peer holds is not removed because somebody reported it.
            event.fail("the manual peer with that key on {} has allowed-ips {}, not {}: not removed".format(
                refpoints.device_name(endpoint), ",".join(held["allowed-ips"]), ",".join(str(p) for p in named)))
            return
        peers[endpoint] = kept
        self.charm._stored.manual_peers = json.dumps(peers, sort_keys=True)
        self._finish_tunnel_action(event, {"device": refpoints.device_name(endpoint)})

    def _on_restart_tunnels(self, event: ActionEvent) -> None:
        self._finish_tunnel_action(event, {}, restart=True)

    def _on_rotate_keys(self, event: ActionEvent) -> None:
        wanted = event.params.get("device") or ""
        plan = self.charm.build_plan()
        if plan.errors:
            event.fail("config: " + "; ".join(plan.errors))
            return
        names = [d.name for d in plan.devices]
        if wanted:
            try:
                name = validation.endpoint_name(wanted[3:] if wanted.startswith("wg-") else wanted)
            except validation.InvalidValue as e:
                event.fail(str(e))
                return
            wanted = refpoints.device_name(name)
            if wanted not in names:
                event.fail("{} is not an active tunnel device here ({})".format(wanted, ", ".join(names) or "none"))
                return
        devices = [wanted] if wanted else names
        # One rotation at a time per device: a second one would change the key of a temporary
        # device that a peer's routes may be using.
        busy = ["{} ({})".format(d, rotation.describe(plan.rotation[d])) for d in devices if plan.rotation[d].busy]
        if busy:
            ends = [plan.rotation[d].expires for d in devices if plan.rotation[d].expires is not None]
            event.fail("a key rotation is under way on {}; run rotate-keys again when it has finished{}".format(
                ", ".join(busy), " (its deadline: {})".format(rotation.utc(max(ends))) if ends else ""))
            return
        # Make-before-break where a related unit speaks the protocol; in place (a break of one
        # relation round trip, as before) where none does.
        staged = [d for d in devices if rotation.can_start(plan.rotation[d])]
        own = self.charm.own_rotation()
        self.charm.set_rotating(own.rotating | set(staged))
        outcome = self.charm.after_action(rotate=[d for d in devices if d not in staged], fresh_next=staged)
        failed = ["{}: {}".format(rotation.temp_name(d), outcome.obs.failed[rotation.temp_name(d)])
                  for d in staged if outcome.obs is not None and rotation.temp_name(d) in outcome.obs.failed]
        if outcome.obs is None or failed:
            # Not started: nothing was published, and the next reconcile removes what was made.
            self.charm.set_rotating(own.rotating)
            event.fail("not rotated: {}".format("; ".join(failed) or outcome.error or self.charm._stored.last_status))
            return
        results = {"status": self.charm._stored.last_status}
        for dev in devices:
            key = outcome.obs.public_keys.get(rotation.temp_name(dev) if dev in staged else dev, "")
            results["public-key-" + dev] = key
            results["rotation-" + dev] = (
                "make-before-break: the peers follow, then this key replaces the old one" if dev in staged
                else "in place ({}): the peers follow the new key".format(rotation.why_in_place(plan.rotation[dev])))
        event.set_results(results)

    def _finish_tunnel_action(self, event: ActionEvent, results: Dict[str, Any], entry_of: str = "",
                              **kwargs: Any) -> None:
        outcome = self.charm.after_action(**kwargs)
        if outcome.obs is None:
            event.fail("stored; not applied on the VNF yet: {}".format(outcome.error or self.charm._stored.last_status))
            return
        results = dict(results)
        if entry_of:
            # The device's tunnel-status entry: what the other end's add-peer needs, without a
            # second action (deploy scale peers a new instance with it).
            entry = [t for t in outcome.obs.as_tunnels(outcome.plan)
                     if t["endpoint"] == entry_of and not t["temporary"]]
            if entry:
                results["tunnel"] = json.dumps(entry[0], sort_keys=True)
        for dev, key in sorted(outcome.obs.public_keys.items()):
            results["public-key-" + dev] = key
        results["status"] = self.charm._stored.last_status
        event.set_results(results)


def _identity(entry: Dict[str, Any]) -> Tuple[FrozenSet[str], str]:
    """What makes a stored manual peer the one it is besides its key: its allowed-ips (as
    normalized prefixes) and its endpoint."""
    return (frozenset(str(validation.prefix(p, "allowed-ips")) for p in entry.get("allowed-ips") or []),
            entry.get("endpoint") or "")
