#!/usr/bin/env python3
"""Proxy charm of the OAI eNB (RF simulator) VNF: the VPNaaS core plus the oai-* steps of vpnaas.oai_enb."""
from ops.main import main

from vpnaas import oai_enb
from vpnaas.oai_charm import OaiCharm


class EnbCharm(OaiCharm):
    component = oai_enb.COMPONENT


if __name__ == "__main__":
    main(EnbCharm)
