#!/usr/bin/env python3
"""Proxy charm of the OAI HSS VNF: the generic VPNaaS charm composed with the OAI workload of
vpnaas.oai.lte.hss."""
from vpnaas.charm.base import VpnaasCharm, main
from vpnaas.oai.lte import hss as oai_hss
from vpnaas.oai.workload import OaiWorkload


class HssWorkload(OaiWorkload):
    component = oai_hss.COMPONENT


class HssCharm(VpnaasCharm):
    workload_type = HssWorkload


if __name__ == "__main__":
    main(HssCharm)
