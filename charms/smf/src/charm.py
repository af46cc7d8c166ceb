#!/usr/bin/env python3
"""Proxy charm of the SMF VNF of the 5G core: the generic VPNaaS charm composed with the OAI workload
of vpnaas.oai_smf."""
from vpnaas import oai_smf
from vpnaas.charm_base import VpnaasCharm, main
from vpnaas.oai_workload import OaiWorkload


class SmfWorkload(OaiWorkload):
    component = oai_smf.COMPONENT


class SmfCharm(VpnaasCharm):
    workload_type = SmfWorkload


if __name__ == "__main__":
    main(SmfCharm)
