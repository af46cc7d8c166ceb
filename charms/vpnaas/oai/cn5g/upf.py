"""The OAI UPF of the 5G core (CN5G v2.0.0): build, configuration and service.

The simple-switch datapath (``enable_bpf_datapath: no``). It binds N3 (GTP-U, UDP 2152) to its
n3 service address and N4 (PFCP, UDP 8805) to its n4 address, associates with the SMF at the
SMF's n4 address (``smfs``, a list of maps with ``host``: with ``register_nf: no`` it learns the
SMF from here and initiates the PFCP association itself), and sends the
UEs' traffic out of N6: ``n6-interface``, or the interface of the default route when that is
empty. The UE pool leaves N6 masqueraded by the charm's own rule (``oai-service setup``, as the
SPGW-U's SGi), so the UPF's own SNAT is off. Its SBI, unused without an NRF, sits on its n4
address: the one SBI peer it could have is the SMF.
"""

from typing import Any, Dict, List, NamedTuple, Optional, Tuple

from vpnaas.core import model
from vpnaas.oai import component as oai
from vpnaas.oai import validation as oai_validation
from vpnaas.oai.cn5g import common as cn5g_common
from vpnaas.oai.cn5g.common import NO


class UpfValues(NamedTuple):
    common: oai.Common
    slice: cn5g_common.Slice
    session: cn5g_common.Session
    addresses: oai.Addresses   # own: n3, n4; peer: the SMF's n4
    n6: str        # N6's interface name, "" for the default route's


class Upf(cn5g_common.Cn5gComponent[UpfValues]):
    name = "upf"
    title = "UPF"
    prerequisites = oai.Component.prerequisites + ("iptables",)

    def config_values(self, config: oai.Options, plan: Optional[model.Plan]) -> UpfValues:
        return UpfValues(
            common=oai.common_values(config),
            slice=cn5g_common.slice_values(config),
            session=cn5g_common.session_values(config),
            addresses=self.addresses(config, plan),
            n6=oai_validation.interface_name(config.get("n6-interface"), "n6-interface"),
        )

    def n6(self, values: UpfValues) -> str:
        return values.n6

    def setup_settings(self, values: UpfValues) -> List[Tuple[str, str]]:
        # The UE pool leaves N6 with the VNF's address (n6-interface, or the default route's).
        return [("nat", "{} {}".format(values.session.pool, values.n6).strip())]

    def document(self, v: UpfValues) -> Dict[str, Any]:
        doc = cn5g_common.header()
        gtpu = {"interface_name": cn5g_common.iface("n3"), "port": cn5g_common.GTPU_PORT}
        doc["nfs"] = {"upf": {
            "host": v.addresses.ip("n4"), "sbi": cn5g_common.sbi("n4"), "n3": gtpu,
            "n4": {"interface_name": cn5g_common.iface("n4"), "port": cn5g_common.N4_PORT},
            "n6": {"interface_name": cn5g_common.iface("n6")}, "n9": dict(gtpu)}}
        doc["upf"] = {
            "support_features": {"enable_bpf_datapath": NO, "enable_snat": NO},
            "remote_n6_gw": "localhost",  # OAI's own value: the simple switch uses no N6 gateway
            # Each entry a map with ``host``: the UPF reads ``smfs[i]["host"]`` (upf_config_yaml.cpp);
            # a bare address makes yaml-cpp throw there, the UPF loses smfs and upf_info and never
            # associates (docs/cn5g.md).
            "smfs": [{"host": v.addresses.peers["n4"]}],
            "upf_info": cn5g_common.served(v.slice, v.session, "Upf"),
        }
        doc["dnns"] = cn5g_common.dnns(v.session)
        return doc


COMPONENT = Upf()
