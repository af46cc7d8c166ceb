"""The OAI SMF of the 5G core (CN5G v2.0.0): build, configuration and service.

It binds its SBI (HTTP/1, port 80) to its n11 service address, where the AMF reaches it, and N4
(PFCP, UDP 8805) to its n4 address, from which it associates with the UPF. With local
subscription data and local PCC rules it asks no UDM and no PCF. Its ``host`` is an IP literal,
so its PFCP node id is its N4 address. The v2.0.0 SMF resolves the UPF when it starts; the
service's restart (systemd ``Restart=on-failure``) covers a UPF that is not up yet.

The UE's MTU (``ue-mtu``) is signalled to the UE: a full-size UE packet plus GTP-U's 44 bytes of
outer IPv4, UDP, GTP-U and its PDU session container must fit the N3 tunnel's MTU (1420 by
default), so the default is 1376 rather than OAI's 1500 (docs/cn5g.md).
"""

from typing import Any, Dict, NamedTuple, Optional

from vpnaas.core import model
from vpnaas.oai import component as oai
from vpnaas.oai import validation as oai_validation
from vpnaas.oai.cn5g import common as cn5g_common
from vpnaas.oai.cn5g.common import NO, YES


class SmfValues(NamedTuple):
    common: oai.Common
    slice: cn5g_common.Slice
    session: cn5g_common.Session
    addresses: oai.Addresses   # own: n4, n11; peers: the UPF's n4, the AMF's n11
    dns1: str
    dns2: str
    ue_mtu: int
    five_qi: int
    ambr_ul: str
    ambr_dl: str


class Smf(cn5g_common.Cn5gComponent[SmfValues]):
    name = "smf"
    title = "SMF"

    def config_values(self, config: oai.Options, plan: Optional[model.Plan]) -> SmfValues:
        return SmfValues(
            common=oai.common_values(config),
            slice=cn5g_common.slice_values(config),
            session=cn5g_common.session_values(config),
            addresses=self.addresses(config, plan),
            dns1=oai_validation.ipv4(config.get("dns-primary"), "dns-primary"),
            dns2=oai_validation.ipv4(config.get("dns-secondary"), "dns-secondary"),
            ue_mtu=oai_validation.integer(config.get("ue-mtu", 1376), "ue-mtu", 1280, 1500),
            # 1-254: the SMF's reader refuses 255 (qos_profile_config_value, smf_config_types.cpp).
            five_qi=oai_validation.integer(config.get("qos-5qi", 9), "qos-5qi", 1, 254),
            ambr_ul=cn5g_common.ambr(config.get("session-ambr-ul"), "session-ambr-ul"),
            ambr_dl=cn5g_common.ambr(config.get("session-ambr-dl"), "session-ambr-dl"),
        )

    def document(self, v: SmfValues) -> Dict[str, Any]:
        at = v.addresses
        doc = cn5g_common.header()
        doc["nfs"] = {
            "amf": cn5g_common.peer(at.peers["n11"]),
            "smf": {"host": at.ip("n11"), "sbi": cn5g_common.sbi("n11"),
                    "n4": {"interface_name": cn5g_common.iface("n4"), "port": cn5g_common.N4_PORT}},
        }
        doc["smf"] = {
            "ue_mtu": v.ue_mtu,
            "support_features": {"use_local_subscription_info": YES, "use_local_pcc_rules": YES},
            "upfs": [{"host": at.peers["n4"], "port": cn5g_common.N4_PORT, "config": {"enable_usage_reporting": NO},
                      "upf_info": {"interfaceUpfInfoList": [
                          {"interfaceType": "N3", "networkInstance": "access.oai.org"},
                          {"interfaceType": "N6", "networkInstance": "core.oai.org"}]}}],
            "ue_dns": {"primary_ipv4": v.dns1, "secondary_ipv4": v.dns2},
            "ims": {"pcscf_ipv4": "127.0.0.1"},
            "smf_info": cn5g_common.served(v.slice, v.session, "Smf"),
            "local_subscription_infos": [{
                "single_nssai": v.slice.as_dict(), "dnn": v.session.dnn,
                "qos_profile": {"5qi": v.five_qi, "session_ambr_ul": v.ambr_ul, "session_ambr_dl": v.ambr_dl}}],
        }
        doc["dnns"] = cn5g_common.dnns(v.session)
        return doc


COMPONENT = Smf()
