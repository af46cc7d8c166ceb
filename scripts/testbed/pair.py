"""Two VNFs joined by one link, each with the generic wireguard-proxy charm: the smallest
topology of the VPNaaS core (end-to-end tests and the data-plane bench)."""
import os

from testbed.emulators import lcm

LINK, CIDR = "link", "192.168.8.0/24"
A_ADDR, B_ADDR = "192.168.8.2/24", "192.168.8.129/24"
A_SVC, B_SVC = "172.16.6.2", "172.16.6.129"
SERVICE_NET = "172.16.6.0/24"
RELATION = ("a:vpn", "b:vpn-peer")


def specs(charms_dir):
    charm = os.path.join(charms_dir, "wireguard-proxy")
    a = lcm.VnfSpec("a", charm, {LINK: A_ADDR}, {
        "ssh-hostname": "<rw_mgmt_ip>", "ssh-username": "root", "vpn-endpoint-address": A_ADDR.split("/")[0],
        "vpn-tunnel-address": "10.250.9.1/30", "vpn-service-addresses": A_SVC + "/32",
        "vpn-service-network": SERVICE_NET})
    b = lcm.VnfSpec("b", charm, {LINK: B_ADDR}, {
        "ssh-hostname": "<rw_mgmt_ip>", "ssh-username": "root", "vpn-peer-endpoint-address": B_ADDR.split("/")[0],
        "vpn-peer-tunnel-address": "10.250.9.2/30", "vpn-peer-service-addresses": B_SVC + "/32",
        "vpn-peer-service-network": SERVICE_NET})
    return a, b
