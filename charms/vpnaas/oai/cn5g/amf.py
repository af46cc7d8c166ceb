"""The OAI AMF of the 5G core (CN5G v2.0.0): build, configuration and service.

It binds N2 (NGAP, SCTP 38412) and its SBI (HTTP/1, port 80) to its service addresses on n2 and
n11, and reaches the SMF on n11 and MySQL on db. In the mini scenario
(``enable_simple_scenario: yes``) it authenticates the UE itself from MySQL's ``users`` table
(K, OPc, SQN), with no AUSF, UDM, UDR or NRF, and selects the one SMF from its ``nfs`` section.
The database password travels in the configure step's data section and lands only in the
generated file (mode 0600).
"""

from typing import Any, Dict, List, NamedTuple, Optional

from vpnaas.core import model
from vpnaas.oai import component as oai
from vpnaas.oai import validation as oai_validation
from vpnaas.oai.cn5g import common as cn5g_common
from vpnaas.oai.cn5g.common import NO, YES


class AmfValues(NamedTuple):
    common: oai.Common
    slice: cn5g_common.Slice
    addresses: oai.Addresses   # own: n2, n11, db; peers: the SMF's n11, MySQL's db
    db_user: str
    db_password: str
    region: str      # AMF region id (2 hex digits), set id (3), pointer (2)
    set_id: str
    pointer: str


class Amf(cn5g_common.Cn5gComponent[AmfValues]):
    name = "amf"
    title = "AMF"

    def config_values(self, config: oai.Options, plan: Optional[model.Plan]) -> AmfValues:
        return AmfValues(
            common=oai.common_values(config),
            slice=cn5g_common.slice_values(config),
            addresses=self.addresses(config, plan),
            db_user=oai_validation.db_name(config.get("db-user"), "db-user"),
            db_password=oai_validation.secret_password(config.get("db-password"), "db-password"),
            region=oai_validation.hex_digits(config.get("amf-region-id"), "amf-region-id", 2),
            set_id=oai_validation.hex_bits(config.get("amf-set-id"), "amf-set-id", 3, 10),
            pointer=oai_validation.hex_bits(config.get("amf-pointer"), "amf-pointer", 2, 6),
        )

    def secrets(self, values: AmfValues) -> List[str]:
        return [values.db_password]

    def document(self, v: AmfValues) -> Dict[str, Any]:
        plmn = {"mcc": v.common.mcc, "mnc": v.common.mnc}
        at = v.addresses
        doc = cn5g_common.header()
        doc["nfs"] = {
            "amf": {"host": at.ip("n11"), "sbi": cn5g_common.sbi("n11"),
                    "n2": {"interface_name": cn5g_common.iface("n2"), "port": cn5g_common.N2_PORT}},
            "smf": cn5g_common.peer(at.peers["n11"]),
        }
        doc["database"] = {"host": at.peers["db"], "user": v.db_user, "type": "mysql", "password": v.db_password,
                           "database_name": "oai_db", "generate_random": YES, "connection_timeout": 300}
        doc["amf"] = {
            "amf_name": "OAI-AMF",
            "support_features_options": {"enable_simple_scenario": YES, "enable_nssf": NO,
                                         "enable_smf_selection": NO},
            "relative_capacity": 30,
            "statistics_timer_interval": 20,
            "emergency_support": NO,
            "served_guami_list": [dict(plmn, amf_region_id=v.region, amf_set_id=v.set_id, amf_pointer=v.pointer)],
            "plmn_support_list": [dict(plmn, tac=v.common.tac, nssai=[v.slice.as_dict()])],
            "supported_integrity_algorithms": ["NIA0", "NIA1", "NIA2"],
            "supported_encryption_algorithms": ["NEA0", "NEA1", "NEA2"],
        }
        return doc


COMPONENT = Amf()
