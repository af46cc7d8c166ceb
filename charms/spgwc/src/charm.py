#!/usr/bin/env python3
"""Proxy charm of the OAI SPGW-C VNF: the generic VPNaaS charm composed with the OAI workload of
vpnaas.oai_spgw."""
from vpnaas import oai_spgw
from vpnaas.charm_base import VpnaasCharm, main
from vpnaas.oai_workload import OaiWorkload


class SpgwcWorkload(OaiWorkload):
    component = oai_spgw.SPGWC


class SpgwcCharm(VpnaasCharm):
    workload_type = SpgwcWorkload


if __name__ == "__main__":
    main(SpgwcCharm)
