#!/usr/bin/env python3
"""Proxy charm of the OAI MME VNF: the VPNaaS core plus the oai-* steps of vpnaas.oai_mme."""
from vpnaas import oai_mme
from vpnaas.charm_base import main
from vpnaas.oai_charm import OaiCharm


class MmeCharm(OaiCharm):
    component = oai_mme.COMPONENT


if __name__ == "__main__":
    main(MmeCharm)
