#!/usr/bin/env python3
"""Proxy charm of the OAI HSS VNF: the VPNaaS core plus the oai-* steps of vpnaas.oai_hss."""
from vpnaas import oai_hss
from vpnaas.charm_base import main
from vpnaas.oai_charm import OaiCharm


class HssCharm(OaiCharm):
    component = oai_hss.COMPONENT


if __name__ == "__main__":
    main(HssCharm)
