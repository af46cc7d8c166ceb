#!/usr/bin/env python3
"""Proxy charm of the OAI eNB VNF: the generic VPNaaS charm composed with the OAI workload of
vpnaas.oai_enb, which adds the optional UE of vpnaas.oai_ue (actions ue-attach and ue-iperf)."""
from typing import Callable, Dict, List, Optional

from ops.charm import ActionEvent

from vpnaas import oai, oai_enb, oai_ue, ssh, vnfscript
from vpnaas import oai_validation as ov
from vpnaas.charm_base import VpnaasCharm, main
from vpnaas.oai_workload import OaiWorkload
from vpnaas.validation import InvalidValue


class EnbWorkload(OaiWorkload):
    component = oai_enb.COMPONENT

    def __init__(self, charm: VpnaasCharm) -> None:
        super().__init__(charm)
        charm.framework.observe(charm.on.ue_attach_action, self._on_ue_attach)
        charm.framework.observe(charm.on.ue_iperf_action, self._on_ue_iperf)

    def _secrets(self) -> List[str]:
        keys = [str(self.config.get(k) or "").strip() for k in ("ue-lte-k", "ue-lte-op")]
        try:
            keys.append(oai_ue.opc(*keys))
        except ValueError:
            pass
        return super()._secrets() + [k for k in keys if k]

    def _ue_step(self, event: ActionEvent, name: str, build: Callable[[], vnfscript.Step],
                 timeout: int) -> Optional[Dict[str, str]]:
        """Run a UE step; the UE's failures fail the action but leave the eNB's status alone."""
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
        return report.results

    def _on_ue_attach(self, event: ActionEvent) -> None:
        holder: Dict[str, oai_ue.UeValues] = {}

        def build() -> vnfscript.Step:
            holder["v"] = oai_ue.values(dict(self.config))
            return oai_ue.attach_step(holder["v"])

        timeout = ov.integer(self.config.get("ue-attach-timeout", 120), "ue-attach-timeout", 10, 1800) + 120
        results = self._ue_step(event, "ue-attach", build, timeout)
        if results is not None:
            event.set_results({
                "result": "attached", "imsi": results.get("imsi", ""), "ip": results.get("ip", ""),
                "interface": results.get("interface", ""), "seconds": results.get("seconds", ""),
                "mme-view": "not read from the eNB VNF: the MME logs the attach of this IMSI "
                            "(journalctl -u oai-mme, or {}/oai-mme.log without systemd)".format(oai.LOG_DIR),
            })

    def _on_ue_iperf(self, event: ActionEvent) -> None:
        params: Dict[str, str] = {}

        def build() -> vnfscript.Step:
            server = ov.ipv4(event.params.get("server"), "server")
            seconds = ov.integer(event.params.get("seconds", 10), "seconds", 1, 300)
            params["server"] = server
            return oai_ue.iperf_step(server, seconds)

        results = self._ue_step(event, "ue-iperf", build, 400)
        if results is None:
            return
        try:
            figures = oai_ue.iperf_figures(results.get("iperf3", ""))
        except (ValueError, TypeError) as e:
            event.fail("ue-iperf failed: unreadable iperf3 output ({})".format(str(e)[:100]))
            return
        event.set_results({
            "ip": results.get("ip", ""), "server": params["server"], "rtt-ms": results.get("rtt-ms", ""),
            "sent-mbps": str(figures["sent-mbps"]), "received-mbps": str(figures["received-mbps"]),
            "tunnels": self._stored.last_status,
        })


class EnbCharm(VpnaasCharm):
    workload_type = EnbWorkload


if __name__ == "__main__":
    main(EnbCharm)
