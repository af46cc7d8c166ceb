"""instance.py: the count index from OSM's <OSM> (hostile until checked) and instance k's addresses."""
import ipaddress

import pytest

from vpnaas.core import config as charm_config
from vpnaas.core import instance
from vpnaas.core.model import TunnelEndpoint
from vpnaas.core.plan import build_plan
from vpnaas.core.validation import InvalidValue

#: What LCM 19 passes (yaml.safe_dump(..., default_flow_style=True, width=256): keys sorted).
OSM_1 = ("{count_index: 1, ip_address: 10.0.0.5, member_vnf_index: spgwu, "
         "ns_id: 0b7e0f7c-9a7e-4f0b-8a0e-1c2d3e4f5a6b, vdu: {spgwu-1: {count_index: 1, "
         "interfaces: {ens4: {ip_address: 192.168.16.103, name: ens4}}, vdu_id: spgwu}},"
         "\n  vdu_id: spgwu, vim_account_id: x, vnf_id: y, vnfd_id: z, vnfd_ref: oai-spgwu}")


def idx(value):
    return instance.index({"osm-instance": value})


def test_count_index_from_osm_parameter():
    assert idx(OSM_1) == 1
    assert idx("{count_index: 0, vdu_id: spgwu}") == 0
    assert idx("") == 0 and idx("   ") == 0 and instance.index({}) == 0
    # a VNF-level execution environment's <OSM> has no count_index: the one instance
    assert idx("{member_vnf_index: spgwu, ns_id: x}") == 0


@pytest.mark.parametrize("value", [
    "{count_index: -1}", "{count_index: 64}", "{count_index: '1'}", "{count_index: 1.0}", "{count_index: true}",
    "{count_index: [1]}", "{count_index: null}", "[1, 2]", "count_index", "1", "{count_index: 1", "{a: b}: c: d",
    "!!python/object/apply:os.system ['id']", "{count_index: 99999999999999999999}", "x" * 20000, 5, ["a"],
])
def test_hostile_values_are_refused(value):
    with pytest.raises(InvalidValue) as e:
        idx(value)
    assert "osm-instance" in str(e.value)


def test_tunnel_address_moves_to_the_kth_block():
    base = ipaddress.ip_interface("10.250.4.1/30")
    assert str(instance.tunnel_address(base, 0, "t")) == "10.250.4.1/30"
    assert str(instance.tunnel_address(base, 1, "t")) == "10.250.4.5/30"
    assert str(instance.tunnel_address(base, 63, "t")) == "10.250.4.253/30"
    with pytest.raises(InvalidValue, match="64 instance"):
        instance.tunnel_address(base, 64, "t")
    # a block near the end of its /24 leaves room for fewer
    with pytest.raises(InvalidValue, match="sxab-tunnel-address: instance 2 .* 2 instance"):
        instance.tunnel_address(ipaddress.ip_interface("10.250.4.249/30"), 2, "sxab-tunnel-address")
    v6 = ipaddress.ip_interface("fd00::1/126")
    assert str(instance.tunnel_address(v6, 2, "t")) == "fd00::9/126"


def test_service_and_endpoint_addresses_plus_k_inside_their_range():
    net = ipaddress.ip_network("172.55.55.0/24")
    addrs = [ipaddress.ip_interface("172.55.55.102/32")]
    assert [str(a) for a in instance.service_addresses(addrs, 2, net, "s")] == ["172.55.55.104/32"]
    with pytest.raises(InvalidValue, match="outside 172.55.55.0/24"):
        instance.service_addresses([ipaddress.ip_interface("172.55.55.254/32")], 1, net, "s")
    assert instance.endpoint_host("192.168.16.102", 1, "e") == "192.168.16.103"
    assert instance.endpoint_host("spgwu.example", 1, "e") == "spgwu.example"
    with pytest.raises(InvalidValue):
        instance.endpoint_host("192.168.16.255", 1, "e")      # OSM's +k would give .256


CONFIG = {"ssh-hostname": "10.0.0.5", "tunnel-mtu": 1420, "persistent-keepalive": 25,
          "sxab-listen-port": 51824, "sxab-endpoint-address": "192.168.16.102",
          "sxab-service-addresses": "172.55.55.102/32"}


def test_plan_of_instance_two():
    peers = {"sxab": [{"public-key": "A" * 43 + "=", "endpoint": "192.168.16.101:51824",
                       "allowed-ips": ["10.250.4.2/32", "172.55.55.101/32"]}]}
    config = dict(CONFIG, **{"osm-instance": "{count_index: 2, vdu_id: spgwu}"})
    plan = build_plan(config, [TunnelEndpoint("sxab", "provider")], {}, peers)
    assert plan.errors == []
    dev = plan.devices[0]
    assert (str(dev.address), dev.publish_host, [str(a) for a in dev.service_addresses]) == (
        "10.250.4.9/30", "192.168.16.104", ["172.55.55.104/32"])
    assert charm_config.own_service_addresses(config, "sxab")[0].ip == ipaddress.ip_address("172.55.55.104")


def test_overflow_blocks_the_plan_with_a_clear_message():
    peers = {"sxab": [{"public-key": "A" * 43 + "=", "endpoint": "", "allowed-ips": ["10.250.4.2/32"]}]}
    config = dict(CONFIG, **{"sxab-service-addresses": "172.55.55.250/32", "osm-instance": "{count_index: 5}"})
    plan = build_plan(config, [TunnelEndpoint("sxab", "provider")], {}, peers)
    assert plan.devices == [] and "instance 5" in plan.errors[0] and "sxab-service-addresses" in plan.errors[0]
