#!/usr/bin/env python3
"""Proxy charm of the OAI SPGW-C VNF: the generic VPNaaS charm composed with the OAI workload of
vpnaas.oai.lte.spgw."""
from vpnaas.charm.base import VpnaasCharm, main
from vpnaas.oai.lte import spgw as oai_spgw
from vpnaas.oai.workload import OaiWorkload


class SpgwcWorkload(OaiWorkload):
    component = oai_spgw.SPGWC


class SpgwcCharm(VpnaasCharm):
    workload_type = SpgwcWorkload


if __name__ == "__main__":
    main(SpgwcCharm)
