#!/usr/bin/env python3
"""Proxy charm of the SMF VNF of the 5G core: the generic VPNaaS charm composed with the OAI workload
of vpnaas.oai.cn5g.smf."""
from vpnaas.charm.base import VpnaasCharm, main
from vpnaas.oai.cn5g import smf as oai_smf
from vpnaas.oai.workload import OaiWorkload


class SmfWorkload(OaiWorkload):
    component = oai_smf.COMPONENT


class SmfCharm(VpnaasCharm):
    workload_type = SmfWorkload


if __name__ == "__main__":
    main(SmfCharm)
