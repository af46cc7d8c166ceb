#!/usr/bin/env python3
"""Proxy charm of the UPF VNF of the 5G core: the generic VPNaaS charm composed with the OAI workload
of vpnaas.oai.cn5g.upf."""
from vpnaas.charm.base import VpnaasCharm, main
from vpnaas.oai.cn5g import upf as oai_upf
from vpnaas.oai.workload import OaiWorkload


class UpfWorkload(OaiWorkload):
    component = oai_upf.COMPONENT


class UpfCharm(VpnaasCharm):
    workload_type = UpfWorkload


if __name__ == "__main__":
    main(UpfCharm)
