#!/usr/bin/env python3
"""Proxy charm of the AMF VNF of the 5G core: the generic VPNaaS charm composed with the OAI workload
of vpnaas.oai_amf."""
from vpnaas import oai_amf
from vpnaas.charm_base import VpnaasCharm, main
from vpnaas.oai_workload import OaiWorkload


class AmfWorkload(OaiWorkload):
    component = oai_amf.COMPONENT


class AmfCharm(VpnaasCharm):
    workload_type = AmfWorkload


if __name__ == "__main__":
    main(AmfCharm)
