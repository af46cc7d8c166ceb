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
from vpnaas.oai import validation as ov
from vpnaas.oai.cn5g import common as oai_cn5g
from vpnaas.oai.cn5g.common import NO


class UpfValues(NamedTuple):
    common: oai.Common
    slice: oai_cn5g.Slice
    session: oai_cn5g.Session
    n3: str        # own service addresses
    n4: str
    smf_ip: str    # the SMF's n4 address
    n6: str        # N6's interface name, "" for the default route's


class Upf(oai_cn5g.Cn5gComponent[UpfValues]):
    name = "upf"
    title = "UPF"
    repository = oai_cn5g.repository("upf")
    ref = oai_cn5g.COMMITS["upf"]
    program = "upf"
    option_sources = ("src/oai_upf",)
    build_labels = oai_cn5g.build_labels("UPF")
    interfaces = ("n3", "n4")
    prerequisites = oai.Component.prerequisites + ("iptables",)

    def config_values(self, config: oai.Options, plan: Optional[model.Plan]) -> UpfValues:
        return UpfValues(
            common=oai.common_values(config),
            slice=oai_cn5g.slice_values(config),
            session=oai_cn5g.session_values(config),
            n3=oai_cn5g.address_of(config, "n3", self.title),
            n4=oai_cn5g.address_of(config, "n4", self.title),
            smf_ip=oai.peer_address(config, plan, "n4", "smf-address"),
            n6=ov.interface_name(config.get("n6-interface"), "n6-interface"),
        )

    def n6(self, values: UpfValues) -> str:
        return values.n6

    def setup_settings(self, values: UpfValues) -> List[Tuple[str, str]]:
        # The UE pool leaves N6 with the VNF's address (n6-interface, or the default route's).
        return [("nat", "{} {}".format(values.session.pool, values.n6).strip())]

    def document(self, v: UpfValues) -> Dict[str, Any]:
        doc = oai_cn5g.header()
        gtpu = {"interface_name": oai_cn5g.iface("n3"), "port": oai_cn5g.GTPU_PORT}
        doc["nfs"] = {"upf": {
            "host": v.n4, "sbi": oai_cn5g.sbi("n4"), "n3": gtpu,
            "n4": {"interface_name": oai_cn5g.iface("n4"), "port": oai_cn5g.N4_PORT},
            "n6": {"interface_name": oai_cn5g.iface("n6")}, "n9": dict(gtpu)}}
        doc["upf"] = {
            "support_features": {"enable_bpf_datapath": NO, "enable_snat": NO},
            "remote_n6_gw": "localhost",  # OAI's own value: the simple switch uses no N6 gateway
            # Each entry a map with ``host``: the UPF reads ``smfs[i]["host"]`` (upf_config_yaml.cpp);
            # a bare address makes yaml-cpp throw there, the UPF loses smfs and upf_info and never
            # associates (docs/cn5g.md).
            "smfs": [{"host": v.smf_ip}],
            "upf_info": oai_cn5g.served(v.slice, v.session, "Upf"),
        }
        doc["dnns"] = oai_cn5g.dnns(v.session)
        return doc


COMPONENT = Upf()
