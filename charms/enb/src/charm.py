#!/usr/bin/env python3
"""Proxy charm of the OAI eNB VNF: the generic VPNaaS charm composed with the OAI workload of
vpnaas.oai.lte.enb, which adds the optional UE of vpnaas.oai.lte.ue (actions ue-attach and ue-iperf)."""
from vpnaas.charm.base import VpnaasCharm, main
from vpnaas.oai import component as oai
from vpnaas.oai.lte import enb as oai_enb
from vpnaas.oai.lte import ue as oai_ue
from vpnaas.oai.workload import UeWorkload
from vpnaas.vnf import vnfscript


class EnbWorkload(UeWorkload):
    component = oai_enb.COMPONENT
    ue_keys = ("ue-lte-k", "ue-lte-op")
    core_view = ("mme-view", "not read from the eNB VNF: the MME logs the attach of this IMSI "
                 "(journalctl -u oai-mme, or {}/oai-mme.log without systemd)".format(oai.LOG_DIR))

    def ue_attach_step(self) -> vnfscript.Step:
        return oai_ue.attach_step(oai_ue.values(dict(self.config)))

    def ue_iperf_step(self, server: str, seconds: int) -> vnfscript.Step:
        return oai_ue.iperf_step(server, seconds)


class EnbCharm(VpnaasCharm):
    workload_type = EnbWorkload


if __name__ == "__main__":
    main(EnbCharm)
