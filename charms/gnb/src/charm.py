#!/usr/bin/env python3
"""Proxy charm of the OAI gNB VNF (5G SA): the generic VPNaaS charm composed with the OAI workload
of vpnaas.oai_gnb, which adds the optional nrUE of vpnaas.oai_nrue (actions ue-attach and ue-iperf)."""
from vpnaas import oai, oai_gnb, oai_nrue, vnfscript
from vpnaas.charm_base import VpnaasCharm, main
from vpnaas.oai_workload import UeWorkload


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
