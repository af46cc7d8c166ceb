#!/usr/bin/env python3
"""Proxy charm of the OAI gNB VNF (5G SA): the generic VPNaaS charm composed with the OAI workload
of vpnaas.oai.cn5g.gnb, which adds the optional nrUE of vpnaas.oai.cn5g.nrue (actions ue-attach and ue-iperf)."""
from vpnaas.charm.base import VpnaasCharm, main
from vpnaas.oai import component as oai
from vpnaas.oai.cn5g import gnb as oai_gnb
from vpnaas.oai.cn5g import nrue as oai_nrue
from vpnaas.oai.workload import UeWorkload
from vpnaas.vnf import vnfscript


class GnbWorkload(UeWorkload):
    component = oai_gnb.COMPONENT
    ue_keys = ("ue-k", "ue-op")
    core_view = ("amf-view", "not read from the gNB VNF: the AMF logs the registration of this IMSI and the "
                 "SMF its PDU session (journalctl -u oai-amf / oai-smf, or {}/oai-amf.log without systemd)".format(
                     oai.LOG_DIR))

    def ue_attach_step(self) -> vnfscript.Step:
        return oai_nrue.attach_step(oai_nrue.values(dict(self.config)))

    def ue_iperf_step(self, server: str, seconds: int) -> vnfscript.Step:
        return oai_nrue.iperf_step(server, seconds)


class GnbCharm(VpnaasCharm):
    workload_type = GnbWorkload


if __name__ == "__main__":
    main(GnbCharm)
