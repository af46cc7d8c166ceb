#!/usr/bin/env python3
"""Generic WireGuard proxy charm: the VPNaaS core with no component of its own."""
from vpnaas.charm.base import VpnaasCharm, main


class WireguardProxyCharm(VpnaasCharm):
    pass


if __name__ == "__main__":
    main(WireguardProxyCharm)
