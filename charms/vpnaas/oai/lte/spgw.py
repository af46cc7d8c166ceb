"""The OAI SPGW-C and SPGW-U (CUPS): build, configuration and services.

Both bind by interface name and read the address from the interface ("read"). Their service
addresses share one dummy device, so "read" would give every interface the device's first
address: where that is ambiguous the address is written into the file explicitly (the edit is
then required; a template without the IPV4_ADDRESS line fails loudly instead of binding wrongly).
"""

import ipaddress
from typing import Dict, List, NamedTuple, Optional, Tuple

from vpnaas.core import model
from vpnaas.oai import component as oai
from vpnaas.oai import validation as oai_validation
from vpnaas.vnf import vnfscript

PREFIX = oai.PREFIX
#: S5/S8 between the S-GW and P-GW halves of the SPGW-C stays inside the VNF (OAI's own setup).
S5_SGW, S5_PGW = "127.0.0.15", "127.0.0.16"


def explicit_address(token: str, address: ipaddress.IPv4Interface) -> oai.JsonObject:
    """Edit: the IPV4_ADDRESS line right after INTERFACE_NAME = "<token>" gets ``address`` (CIDR)."""
    return {
        "pattern": r'(INTERFACE_NAME\s*=\s*"{}"\s*;[^\n]*\n\s*IPV4_ADDRESS\s*=\s*")read(")'.format(token),
        "repl": r"\g<1>{}\g<2>".format(address),
        "count": 1,
        "required_if_shared": str(address.ip),
        "what": "the address of " + token.strip("@"),
    }


def ue_ranges(pool: ipaddress.IPv4Network) -> Tuple[str, str]:
    """The two halves of the UE pool, for the SPGW-C's first two IPv4 pools (APN default.<realm>
    and internet.<realm>): ('12.1.1.2 - 12.1.1.127', '12.1.1.128 - 12.1.1.254') for 12.1.1.0/24.
    The first host is left out: OAI's own setups give it to the SPGW-U's GTP side."""
    low, high = list(pool.subnets(prefixlen_diff=1))
    return (
        "{} - {}".format(pool.network_address + 2, low.broadcast_address),
        "{} - {}".format(high.network_address, pool.broadcast_address - 1),
    )


def ue_pool_edit(pool: ipaddress.IPv4Network) -> oai.JsonObject:
    """At the pinned SPGW-C the UE pools are fixed lines (RANGE = "12.1.1.2 - 12.1.1.128"), not a
    placeholder: the first two RANGE entries of IP_ADDRESS_POOL get the two halves of the pool."""
    first, second = ue_ranges(pool)
    return {
        "pattern": (r'(IPV4_LIST\s*=\s*\(\s*\{\s*RANGE\s*=\s*")[^"]*'
                    r'(";\s*\}[^\n]*\n\s*\{\s*RANGE\s*=\s*")[^"]*(";\s*\})'),
        "repl": r"\g<1>{}\g<2>{}\g<3>".format(first, second),
        "count": 1,
        "what": "the UE pool (the first two RANGE entries of IP_ADDRESS_POOL)",
    }


def pdn_network_edit(pool: ipaddress.IPv4Network) -> oai.JsonObject:
    """At the pinned SPGW-U the UE network is a fixed line (NETWORK_IPV4 = "12.1.1.0/24"; ...;
    SNAT = "yes"), not a placeholder: the first PDN_NETWORK_LIST entry gets the pool, and SNAT
    "no" because the charm's setup masquerades the pool out of SGi itself."""
    return {
        "pattern": r'(PDN_NETWORK_LIST\s*=\s*\(\s*\{\s*NETWORK_IPV4\s*=\s*")[^"]*("[^}\n]*?SNAT\s*=\s*")[^"]*(")',
        "repl": r"\g<1>{}\g<2>no\g<3>".format(pool),
        "count": 1,
        "what": "the UE network (NETWORK_IPV4 and SNAT of the first PDN_NETWORK_LIST entry)",
    }


class SpgwcValues(NamedTuple):
    common: oai.Common
    addresses: oai.Addresses  # own: s11, sxab; peers: the MME's s11, the SPGW-U's sxab
    pool: ipaddress.IPv4Network  # the UE pool
    dns1: str
    dns2: str


class Spgwc(oai.Component[SpgwcValues]):
    name = "spgwc"
    title = "SPGW-C"
    repository = "https://github.com/simula/openairinterface-openair-spgwc.git"
    ref = "2020.w36"
    program = "spgwc"
    option_sources = ("src/oai_spgwc",)
    workdir = PREFIX

    def binary_candidates(self) -> List[str]:
        return ["/usr/local/bin/spgwc", self.source_dir + "/build/spgw_c/build/spgwc"]

    build_labels = ("installing the SPGW-C build dependencies", "building the SPGW-C")

    def config_values(self, config: oai.Options, plan: Optional[model.Plan]) -> SpgwcValues:
        return SpgwcValues(
            common=oai.common_values(config),
            addresses=self.addresses(config, plan),
            pool=oai_validation.ipv4_pool(config.get("ue-ip-pool"), "ue-ip-pool"),
            dns1=oai_validation.ipv4(config.get("dns-primary"), "dns-primary"),
            dns2=oai_validation.ipv4(config.get("dns-secondary"), "dns-secondary"),
        )

    def run_argv(self, values: SpgwcValues) -> List[str]:
        return [self.binary, "-c", PREFIX + "/spgw_c.conf", "-o"]

    def setup_settings(self, values: SpgwcValues) -> List[Tuple[str, str]]:
        return [("loaddr", "{}/8 lo:s5c".format(S5_SGW)), ("loaddr", "{}/8 lo:p5c".format(S5_PGW))]

    def render_spec(self, values: SpgwcValues) -> oai.RenderSpec:
        realm, at = values.common.realm, values.addresses
        tokens: Dict[str, oai.Token] = {
            "@INSTANCE@": "0",
            "@PID_DIRECTORY@": "/var/run",
            "@SGW_INTERFACE_NAME_FOR_S11@": {"iface_of": at.ip("s11")},
            "@PGW_INTERFACE_NAME_FOR_SX@": {"iface_of": at.ip("sxab")},
            "@SGW_INTERFACE_NAME_FOR_S5_S8_CP@": "lo:s5c",
            "@PGW_INTERFACE_NAME_FOR_S5_S8_CP@": "lo:p5c",
            "@DEFAULT_DNS_IPV4_ADDRESS@": values.dns1,
            "@DEFAULT_DNS_SEC_IPV4_ADDRESS@": values.dns2,
            "@DEFAULT_APN@": "default." + realm,
        }
        edits = [
            explicit_address("@SGW_INTERFACE_NAME_FOR_S11@", at.own["s11"]),
            explicit_address("@PGW_INTERFACE_NAME_FOR_SX@", at.own["sxab"]),
            ue_pool_edit(values.pool),
            {
                "pattern": r'APN_NI\s*=\s*"apn1"',
                "repl": 'APN_NI = "internet.{}"'.format(realm),
                "count": 1,
                "what": "the second APN (apn1, IPv4 pool 1)",
            },
        ]
        return {
            "files": [
                {
                    "src": self.source_dir + "/etc/spgw_c.conf",
                    "dst": PREFIX + "/spgw_c.conf",
                    "tokens": tokens,
                    "edits": edits,
                }
            ]
        }

    def configure_calls(self, step: vnfscript.Step, values: SpgwcValues) -> None:
        step.call("oai_configure_spgwc", oai.b64_json(self.render_spec(values)))


class SpgwuValues(NamedTuple):
    common: oai.Common
    addresses: oai.Addresses  # own: sxab, s1u; peer: the SPGW-C's sxab
    pool: ipaddress.IPv4Network  # the UE pool
    sgi: str  # SGi's interface name, "" for the default route's


class Spgwu(oai.Component[SpgwuValues]):
    name = "spgwu"
    title = "SPGW-U"
    repository = "https://github.com/simula/openairinterface-openair-spgwu-tiny.git"
    ref = "dreibh/tx-checksum-ip-generic-off"
    program = "spgwu"
    option_sources = ("src/oai_spgwu",)
    workdir = PREFIX
    prerequisites = oai.Component.prerequisites + ("iptables",)

    def binary_candidates(self) -> List[str]:
        return ["/usr/local/bin/spgwu", self.source_dir + "/build/spgw_u/build/spgwu"]

    build_labels = ("installing the SPGW-U build dependencies", "building the SPGW-U")

    def config_values(self, config: oai.Options, plan: Optional[model.Plan]) -> SpgwuValues:
        return SpgwuValues(
            common=oai.common_values(config),
            addresses=self.addresses(config, plan),
            pool=oai_validation.ipv4_pool(config.get("ue-ip-pool"), "ue-ip-pool"),
            sgi=oai_validation.interface_name(config.get("sgi-interface"), "sgi-interface"),
        )

    def run_argv(self, values: SpgwuValues) -> List[str]:
        return [self.binary, "-c", PREFIX + "/spgw_u.conf", "-o"]

    def setup_settings(self, values: SpgwuValues) -> List[Tuple[str, str]]:
        # UE traffic leaves through SGi (sgi-interface, or the default route's) with NAT.
        return [("nat", "{} {}".format(values.pool, values.sgi).strip())]

    def render_spec(self, values: SpgwuValues) -> oai.RenderSpec:
        at = values.addresses
        tokens: Dict[str, oai.Token] = {
            "@INSTANCE@": "0",
            "@PID_DIRECTORY@": "/var/run",
            "@SGW_INTERFACE_NAME_FOR_S1U_S12_S4_UP@": {"iface_of": at.ip("s1u")},
            "@SGW_INTERFACE_NAME_FOR_SX@": {"iface_of": at.ip("sxab")},
            # Only known on the VNF (the default route's interface unless sgi-interface is set).
            "@SGW_INTERFACE_NAME_FOR_SGI@": {"var": "SGI"},
            "@SPGWC0_IP_ADDRESS@": at.peers["sxab"],
        }
        edits = [
            explicit_address("@SGW_INTERFACE_NAME_FOR_S1U_S12_S4_UP@", at.own["s1u"]),
            explicit_address("@SGW_INTERFACE_NAME_FOR_SX@", at.own["sxab"]),
            pdn_network_edit(values.pool),
        ]
        return {
            "files": [
                {
                    "src": self.source_dir + "/etc/spgw_u.conf",
                    "dst": PREFIX + "/spgw_u.conf",
                    "tokens": tokens,
                    "edits": edits,
                }
            ]
        }

    def configure_calls(self, step: vnfscript.Step, values: SpgwuValues) -> None:
        step.call(
            "oai_configure_spgwu",
            oai.b64_json(self.render_spec(values)),
            values.sgi,
        )


SPGWC = Spgwc()
SPGWU = Spgwu()
