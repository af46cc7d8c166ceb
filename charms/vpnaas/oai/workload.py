"""The workload of the five OAI component charms: the oai-* actions and the start gate.

Each step validates its inputs first (bad input fails the action and nothing is changed on the
VNF), sends one step over SSH (``oai``: files shipped in vnf/oai, values as arguments), reports
progress in the unit status as the step runs, and ends with a reconcile like every other action.
Starting is a wish recorded in StoredState: the reconcile's component part starts the service once
every tunnel of the component has a handshake, so a start that has to wait completes later from
relation-changed or update-status, never by sleeping in the charm. A component charm composes it
(``workload_type``, see workload.py); its state lives in the charm's stored state under oai_*
keys (where the earlier revisions kept it, so an upgrade keeps it too).
"""

import logging
from typing import Any, Callable, Dict, List, Optional

from ops.charm import ActionEvent
from ops.model import BlockedStatus, MaintenanceStatus, StatusBase

from vpnaas.charm.base import ReconcileFailed, VpnaasCharm
from vpnaas.charm.workload import Workload
from vpnaas.core import model
from vpnaas.core.validation import InvalidValue
from vpnaas.oai import component as oai
from vpnaas.oai import ue_report
from vpnaas.oai import validation as oai_validation
from vpnaas.vnf import remote, ssh, vnfscript

logger = logging.getLogger(__name__)

PRESTART_LIMIT = 300
#: The options that hold secrets (the EPS's and the 5G SA's subscriber keys, the MySQL password).
SECRET_OPTIONS = ("lte-k", "lte-op", "db-password", "subscriber-k", "subscriber-op")


class OaiWorkload(Workload):
    """Subclasses set ``component`` (an oai.Component)."""

    # Any component's values: they only go from its config_values to its own steps.
    component: oai.Component[Any]
    # Workload's charm is Any: workload.py cannot import charm_base (charm_base imports it).
    charm: VpnaasCharm
    waits_for_tunnels = True

    @classmethod
    def of(cls, component: Any, description: Any = None, ue: Any = None) -> Any:
        """The workload of an OAI component (a registry.Component): its description (the object
        its ``describe`` names, resolved by charm/entry.py) as ``component``, and with a UE (``ue``)
        a UeWorkload."""
        if ue is not None:
            return type(component.title + "Workload", (UeWorkload,), {
                "component": description, "ue": ue, "__module__": __name__})
        return type(component.title + "Workload", (OaiWorkload,), {"component": description, "__module__": __name__})

    def __init__(self, charm: VpnaasCharm) -> None:
        super().__init__(charm)
        self._stored = charm._stored
        self._stored.set_default(oai_wanted="", oai_error="", oai_service="")
        self.config = charm.config
        for name, handler in (
            ("oai_install", self._on_oai_install),
            ("oai_configure", self._on_oai_configure),
            ("oai_start", self._on_oai_start),
            ("oai_stop", self._on_oai_stop),
        ):
            charm.framework.observe(getattr(charm.on, name + "_action"), handler)

    # ------------------------------------------------------------------ the charm's calls
    def step(self, plan: model.Plan, step: vnfscript.Step) -> None:
        devices = [d.name for d in plan.devices]
        # No handshake is "about to happen" on a device whose peers are all the operator's
        # (add-peer): the other end learns this unit's key only after this action returns (a
        # scaled instance being peered, deploy/scale.py). Waiting would only delay the action.
        manual_only = bool(plan.devices) and all(p.source == model.MANUAL for d in plan.devices for p in d.peers)
        oai.add_gate(step, self.component, devices, self._stored.oai_wanted, self._prestart_limit(),
                     wait=0 if manual_only else oai.GATE_HANDSHAKE_WAIT)

    def teardown(self, step: vnfscript.Step) -> None:
        oai.add_teardown(step, self.component)

    def _prestart_limit(self) -> int:
        try:
            return oai_validation.integer(
                self.config.get("oai-handshake-timeout", PRESTART_LIMIT), "oai-handshake-timeout", 10, 3600
            )
        except InvalidValue:
            return PRESTART_LIMIT

    def wants_session(self, plan: model.Plan) -> bool:
        # A start waiting for a handshake: the relation-changed that says the peer configured our
        # key (its peer-keys) is the moment to look again, even though the tunnels did not change.
        return self.awaits_peer_keys()

    def awaits_peer_keys(self) -> bool:
        # Only such a start uses the wake-up. Otherwise (no start wanted yet, as while OSM's config
        # primitives run, or the service runs) a hook for a peer's peer-keys alone would be a charm
        # run for nothing, in the queue of a unit whose other relations wait for their sessions.
        return self._stored.oai_service not in ("running", "starting") and self._stored.oai_wanted == "started"

    def observed(self, plan: model.Plan, obs: remote.Observation) -> None:
        # What the gate saw decides whether the next reconcile needs a session.
        self._stored.oai_service = obs.component.get("service", "")

    def status(self, plan: model.Plan, obs: remote.Observation, tunnel_status: StatusBase) -> StatusBase:
        text = self.service_text(obs.component)
        if self._stored.oai_error:
            text = "{}; {}".format(self._stored.oai_error, text)
        message = "{}; {}".format(text, tunnel_status.message) if tunnel_status.message else text
        if obs.component.get("service", "").startswith("failed") or self._stored.oai_error:
            return BlockedStatus(message)
        return type(tunnel_status)(message)

    def service_text(self, comp: Dict[str, str]) -> str:
        """What the service is doing, for the unit status."""
        prefix = self.component.service
        if comp.get("installed") != "yes":
            return "{}: not installed".format(prefix)
        if comp.get("configured") != "yes":
            return "{}: installed, not configured".format(prefix)
        service = comp.get("service", "")
        direct = " (no systemd: started directly, not persistent)" if comp.get("mode") == "direct" else ""
        if service == "running":
            return "{}: running{}".format(prefix, direct)
        if service == "starting":
            return "{}: starting{}".format(prefix, direct)
        if service == "pending":
            devs = comp.get("pending", "").split()
            return "oai-start pending: {} {} no handshake yet".format(
                ", ".join(d[3:] if d.startswith("wg-") else d for d in devs),
                "has" if len(devs) == 1 else "have",
            )
        if service.startswith("failed"):
            return "{}: {}".format(prefix, service)
        return "{}: configured, not started".format(prefix)

    # ------------------------------------------------------------------ helpers
    def _secrets(self) -> List[str]:
        """Every secret option's value (and the OPc derived from the subscribers' K and OP): what
        must never leave the charm in an action result, a status or a log."""
        out = [str(self.config.get(k) or "").strip() for k in SECRET_OPTIONS if self.config.get(k)]
        try:
            out.append(oai.opc(str(self.config.get("subscriber-k") or ""), str(self.config.get("subscriber-op") or "")))
        except ValueError:
            pass
        return out

    def _fail_action_and_reconcile(self, event: ActionEvent, step: str, message: str) -> None:
        """Fail the action (secrets redacted), keep the error for the status, and reconcile: every
        action ends with a reconcile, a failed one too."""
        message = oai.redact(message, self._secrets())
        self._stored.oai_error = "{} failed: {}".format(step, message)[:300]
        event.fail("{} failed: {}".format(step, message))
        self.charm.after_action()

    def _run_oai_step(self, step_name: str, step: vnfscript.Step, timeout: int) -> oai.StepResults:
        """Run ``step`` in one SSH session with progress in the unit status; returns step_results()."""
        self.charm.unit.status = MaintenanceStatus("{}: connecting to the VNF".format(step_name))

        def on_line(line: str) -> None:
            progress = oai.progress_text(line)
            if progress:
                self.charm.unit.status = MaintenanceStatus(
                    "{}: {} (step {})".format(step_name, progress[1], progress[0])
                )

        with self.charm.open_session() as session:
            rc, out, err = session.run(
                step.command(session.target.username, timeout - 10),
                step.program().encode(),
                timeout=timeout,
                on_line=on_line,
            )
        try:
            report = vnfscript.parse(out, rc, err)
        except vnfscript.StepError:
            if err.strip():
                logger.warning("%s stderr: %s", step_name, oai.redact(err.strip()[-500:], self._secrets()))
            raise
        return oai.step_results(report)

    # ------------------------------------------------------------------ actions
    def _on_oai_install(self, event: ActionEvent) -> None:
        step = "oai-install"
        try:
            inputs = oai.install_plan(self.component, dict(self.config))
        except InvalidValue as e:
            self._fail_action_and_reconcile(event, step, str(e))
            return
        try:
            report = self._run_oai_step(step, oai.install_step(self.component, inputs), inputs.timeout + 120)
        except (ssh.SshError, vnfscript.StepError, vnfscript.ScriptError) as e:
            self._fail_action_and_reconcile(event, step, str(e))
            return
        self._stored.oai_error = ""
        results = report.results
        event.set_results(
            {
                "result": "already built" if results.get("state") == "unchanged" else "built",
                "repository": inputs.repository,
                "ref": inputs.ref,
                "commit": results.get("commit", ""),
                "notes": "; ".join(report.notes),
                "log": "{}/oai-install-{}.log".format(oai.LOG_DIR, self.component.name),
            }
        )
        self.charm.after_action()

    def _on_oai_configure(self, event: ActionEvent) -> None:
        step = "oai-configure"
        try:
            values = self.component.config_values(dict(self.config), self.charm.build_plan())
            configure = oai.configure_step(self.component, values)
        except (InvalidValue, vnfscript.ScriptError) as e:
            self._fail_action_and_reconcile(event, step, str(e))
            return
        # The service addresses must be on the VNF before OAI is configured to bind to them: an
        # unchanged plan costs no SSH round trip here.
        try:
            self.charm.reconcile()
        except ReconcileFailed as e:  # the configure script's address check says what is missing
            logger.info("reconcile before configure failed: %s", e)
        try:
            report = self._run_oai_step(step, configure, self.component.configure_timeout(values))
        except (ssh.SshError, vnfscript.StepError, vnfscript.ScriptError) as e:
            self._fail_action_and_reconcile(event, step, str(e))
            return
        self._stored.oai_error = ""
        results = report.results
        if results.get("restart") == "needed" and not self._stored.oai_wanted:
            self._stored.oai_wanted = "started"  # it was running: the gate brings it back
        event.set_results(
            {
                "result": "configured",
                "changed": oai.redact(results.get("changed", "none"), self._secrets()).strip(),
                "restart": "yes" if results.get("restart") == "needed" else "no",
            }
        )
        self.charm.after_action()

    def _want(self, event: ActionEvent, wanted: str, verb: str) -> Optional[remote.Observation]:
        """Record the service state the operator wants and reconcile now: what the VNF then
        reported, or None (the action failed: the wish stays recorded for the next reconcile)."""
        self._stored.oai_wanted = wanted
        outcome = self.charm.after_action()
        if outcome.obs is None:
            event.fail("{} recorded, but the VNF could not be reached: {}".format(
                verb, outcome.error or "see the unit status"))
        return outcome.obs

    def _on_oai_start(self, event: ActionEvent) -> None:
        obs = self._want(event, "started", "start")
        if obs is None:
            return
        comp = obs.component
        service = comp.get("service", "")
        if comp.get("configured") != "yes":
            self._stored.oai_wanted = ""
            event.fail(
                "{} is not configured on the VNF: run oai-install and oai-configure first".format(
                    self.component.service
                )
            )
            return
        if service in ("running", "starting"):
            result = "started"
        elif service == "pending":
            result = "start pending: waiting for {} handshake".format(comp.get("pending", "tunnel"))
        else:
            event.fail("{} did not start: {}".format(self.component.service, service))
            return
        if comp.get("mode") == "direct":
            result += (
                " (no systemd on the VNF: started directly with a pid file, not persistent across reboot)"
            )
        event.set_results({"result": result, "service": self.component.service})

    def _on_oai_stop(self, event: ActionEvent) -> None:
        obs = self._want(event, "stopped", "stop")
        if obs is None:
            return
        event.set_results(
            {
                "result": "stopped"
                if obs.component.get("service") in ("stopped", "absent")
                else obs.component.get("service", "unknown"),
                "service": self.component.service,
            }
        )


class UeWorkload(OaiWorkload):
    """An OAI workload with an optional UE on its VNF (the eNB's lte-uesoftmodem, the gNB's
    nr-uesoftmodem): the actions ``ue-attach`` and ``ue-iperf``. A UE's failures fail the action and
    leave the component's status alone. ``ue`` (an oai.Ue, the registry entry's ``ue``) gives the UE's
    keys and steps."""

    ue: oai.Ue

    def __init__(self, charm: VpnaasCharm) -> None:
        super().__init__(charm)
        charm.framework.observe(charm.on.ue_attach_action, self._on_ue_attach)
        charm.framework.observe(charm.on.ue_iperf_action, self._on_ue_iperf)

    def ue_attach_step(self) -> vnfscript.Step:
        """The attach step from the charm's options (raises InvalidValue)."""
        return self.ue.attach(dict(self.config))

    def ue_iperf_step(self, server: str, seconds: int) -> vnfscript.Step:
        return self.ue.iperf(server, seconds)

    def _secrets(self) -> List[str]:
        keys = [str(self.config.get(k) or "").strip() for k in self.ue.keys]
        try:
            keys.append(oai.opc(*keys))
        except ValueError:
            pass
        return super()._secrets() + [k for k in keys if k]

    def _ue_step(self, event: ActionEvent, name: str, build: Callable[[], vnfscript.Step], timeout: int,
                 read: Callable[[Dict[str, str]], Dict[str, str]]) -> Optional[Dict[str, str]]:
        """Build, run and reconcile: the VNF's results as ``read`` (ue_report) accepts them, or None
        when the action failed (a bad input, the step, or a report outside the grammar)."""
        try:
            step = build()
        except (InvalidValue, vnfscript.ScriptError) as e:
            event.fail("{} failed: {}".format(name, oai.redact(str(e), self._secrets())))
            return None
        try:
            report = self._run_oai_step(name, step, timeout)
        except (ssh.SshError, vnfscript.StepError) as e:
            event.fail("{} failed: {}".format(name, oai.redact(str(e), self._secrets())))
            self.charm.after_action()
            return None
        self.charm.after_action()
        try:
            return read(report.results)
        except InvalidValue as e:
            event.fail("{} failed: the VNF's report is unreadable ({})".format(name, e))
            return None

    def _on_ue_attach(self, event: ActionEvent) -> None:
        timeout = oai_validation.integer(self.config.get("ue-attach-timeout", 120), "ue-attach-timeout", 10, 1800) + 120
        attached = self._ue_step(event, "ue-attach", self.ue_attach_step, timeout, ue_report.attach_results)
        if attached is not None:
            event.set_results(dict(attached, result="attached", **{self.ue.core_view[0]: self.ue.core_view[1]}))

    def _on_ue_iperf(self, event: ActionEvent) -> None:
        params: Dict[str, str] = {}

        def build() -> vnfscript.Step:
            server = oai_validation.ipv4(event.params.get("server"), "server")
            seconds = oai_validation.integer(event.params.get("seconds", 10), "seconds", 1, 300)
            params["server"] = server
            return self.ue_iperf_step(server, seconds)

        measured = self._ue_step(event, "ue-iperf", build, 400, ue_report.iperf_results)
        if measured is not None:
            event.set_results(dict(measured, server=params["server"], tunnels=self._stored.last_status))
