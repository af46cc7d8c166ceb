#!/usr/bin/env python3
"""Proxy charm of the OAI SPGW-U VNF: the generic VPNaaS charm composed with the OAI workload of
vpnaas.oai.lte.spgw."""
from vpnaas.charm.base import VpnaasCharm, main
from vpnaas.oai.lte import spgw as oai_spgw
from vpnaas.oai.workload import OaiWorkload


class SpgwuWorkload(OaiWorkload):
    component = oai_spgw.SPGWU


class SpgwuCharm(VpnaasCharm):
    workload_type = SpgwuWorkload


if __name__ == "__main__":
    main(SpgwuCharm)
