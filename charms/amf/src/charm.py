#!/usr/bin/env python3
"""Proxy charm of the AMF VNF of the 5G core: the generic VPNaaS charm composed with the OAI workload
of vpnaas.oai.cn5g.amf."""
from vpnaas.charm.base import VpnaasCharm, main
from vpnaas.oai.cn5g import amf as oai_amf
from vpnaas.oai.workload import OaiWorkload


class AmfWorkload(OaiWorkload):
    component = oai_amf.COMPONENT


class AmfCharm(VpnaasCharm):
    workload_type = AmfWorkload


if __name__ == "__main__":
    main(AmfCharm)
