#!/usr/bin/env python3
"""Proxy charm of the OAI SPGW-C VNF: the VPNaaS core plus the oai-* steps of vpnaas.oai_spgw."""
from vpnaas import oai_spgw
from vpnaas.charm_base import main
from vpnaas.oai_charm import OaiCharm


class SpgwcCharm(OaiCharm):
    component = oai_spgw.SPGWC


if __name__ == "__main__":
    main(SpgwcCharm)
