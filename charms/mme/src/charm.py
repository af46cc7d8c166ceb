#!/usr/bin/env python3
"""Proxy charm of the OAI MME VNF: the generic VPNaaS charm composed with the OAI workload of
vpnaas.oai_mme."""
from vpnaas import oai_mme
from vpnaas.charm_base import VpnaasCharm, main
from vpnaas.oai_workload import OaiWorkload


class MmeWorkload(OaiWorkload):
    component = oai_mme.COMPONENT


class MmeCharm(VpnaasCharm):
    workload_type = MmeWorkload


if __name__ == "__main__":
    main(MmeCharm)
