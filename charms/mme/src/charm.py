#!/usr/bin/env python3
"""Proxy charm of the OAI MME VNF: the generic VPNaaS charm composed with the OAI workload of
vpnaas.oai.lte.mme."""
from vpnaas.charm.base import VpnaasCharm, main
from vpnaas.oai.lte import mme as oai_mme
from vpnaas.oai.workload import OaiWorkload


class MmeWorkload(OaiWorkload):
    component = oai_mme.COMPONENT


class MmeCharm(VpnaasCharm):
    workload_type = MmeWorkload


if __name__ == "__main__":
    main(MmeCharm)
