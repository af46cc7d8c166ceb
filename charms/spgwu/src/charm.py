#!/usr/bin/env python3
"""Proxy charm of the OAI SPGW-U VNF: the generic VPNaaS charm composed with the OAI workload of
vpnaas.oai_spgw."""
from vpnaas import oai_spgw
from vpnaas.charm_base import VpnaasCharm, main
from vpnaas.oai_workload import OaiWorkload


class SpgwuWorkload(OaiWorkload):
    component = oai_spgw.SPGWU


class SpgwuCharm(VpnaasCharm):
    workload_type = SpgwuWorkload


if __name__ == "__main__":
    main(SpgwuCharm)
