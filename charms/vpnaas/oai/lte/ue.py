"""The optional UE of the eNB charm: OAI's lte-uesoftmodem on the eNB VNF, attached through the
eNB's RF simulator (what the thesis did by hand on a separate VM), with the actions ``ue-attach``
(waits for the attach, reports IMSI and address) and ``ue-iperf`` (throughput and RTT through
S1-U and SGi to an iperf3 server).

The SIM comes from OAI's UE template (openair3/NAS/TOOLS/ue_eurecom_test_sfr.conf) with edits
that must match exactly once: the PLMN entry "OAI LTEBOX" becomes the EPC's PLMN (a home PLMN
must be listed there, or conf2uedata refuses it), the UE0 block gets MSIN, K, OPc, MSISDN, home
PLMN and operator PLMN list. K and OPc travel in the step's data section and are written only to
a 0600 file in the state folder. OPc = AES-128_K(OP) xor OP (3GPP TS 35.206), computed here.
"""
from typing import List, NamedTuple

from vpnaas.oai import component as oai
from vpnaas.oai import validation as oai_validation
from vpnaas.oai.lte.enb import COMPONENT as ENB
from vpnaas.vnf import vnfscript

TEMPLATE = "openair3/NAS/TOOLS/ue_eurecom_test_sfr.conf"
SIM_FILE = oai.STATE_DIR + "/ue.conf"


class UeValues(NamedTuple):
    common: oai.Common
    imsi: str
    k: str
    opc: str
    msisdn: str
    dl_freq: int
    prb: int
    timeout: int  # seconds the attach may take


#: OPc from K and OP, as the HSS derives it from the OP in hss_rel14.json (oai.opc).
opc = oai.opc


def values(config: oai.Options) -> UeValues:
    """Validated UE values (raises InvalidValue); the UE is off while ue-imsi is empty."""
    common = oai.common_values(config)
    imsi = (config.get("ue-imsi") or "").strip()
    if not imsi:
        raise oai_validation.InvalidValue("ue-imsi: not set; the UE needs an IMSI the HSS provisions (imsi-first ...)")
    imsi = oai_validation.digits(imsi, "ue-imsi", 6, 15)
    plmn = common.mcc + common.mnc
    if not imsi.startswith(plmn):
        raise oai_validation.InvalidValue("ue-imsi: {} does not start with MCC+MNC {}".format(imsi, plmn))
    k = oai_validation.secret_hex32(config.get("ue-lte-k"), "ue-lte-k")
    op = oai_validation.secret_hex32(config.get("ue-lte-op"), "ue-lte-op")
    return UeValues(common=common, imsi=imsi, k=k, opc=opc(k, op),
                    msisdn=oai_validation.digits(config.get("ue-msisdn") or "33611123456", "ue-msisdn", 5, 15),
                    dl_freq=oai_validation.integer(config.get("downlink-frequency"), "downlink-frequency",
                                                   400000000, 6000000000),
                    prb=oai_validation.integer(config.get("prb"), "prb", 6, 100),
                    timeout=oai_validation.integer(config.get("ue-attach-timeout", 120), "ue-attach-timeout", 10, 1800))


def _field(key: str, value: str, what: str) -> oai.JsonObject:
    """Edit inside the UE0 block: ``KEY="..."`` (the first after "UE0:") becomes ``value``."""
    return {"pattern": r'(UE0:\s*\{{.*?\b{}\s*=\s*")[^"]*(")'.format(key), "repl": r"\g<1>{}\g<2>".format(value),
            "count": 1, "what": what}


def sim_spec(v: UeValues) -> oai.RenderSpec:
    plmn = v.common.mcc + v.common.mnc
    edits: List[oai.JsonObject] = [
        {"pattern": r'(PLMN4:\s*\{[^}]*?MNC=")[^"]*(";\s*MCC=")[^"]*(")',
         "repl": r"\g<1>{}\g<2>{}\g<3>".format(v.common.mnc, v.common.mcc), "count": 1,
         "what": "the PLMN entry PLMN4 (the EPC's MCC/MNC)"},
        _field("MSIN", v.imsi[len(plmn):], "MSIN (UE0)"),
        _field("USIM_API_K", v.k, "USIM_API_K (UE0)"),
        _field("OPC", v.opc, "OPC (UE0)"),
        _field("MSISDN", v.msisdn, "MSISDN (UE0)"),
        _field("HPLMN", plmn, "HPLMN (UE0)"),
        {"pattern": r'(UE0:\s*\{.*?\bOPLMN_LIST\s*=\s*\()[^)]*(\))', "repl": r'\g<1>"{}"\g<2>'.format(plmn),
         "count": 1, "what": "OPLMN_LIST (UE0)"},
    ]
    for edit in edits:
        edit["flags"] = "s"
    return {"files": [{"src": "{}/{}".format(ENB.source_dir, TEMPLATE), "dst": SIM_FILE, "mode": "600",
                       "edits": edits}]}


def attach_step(v: UeValues) -> vnfscript.Step:
    step = vnfscript.Step([oai.LIB, "oai/ue.sh"])
    step.secret("UE_SPEC", oai.b64_json(sim_spec(v)))
    return step.call("oai_ue_attach", oai.shipped_b64("oai/render.py"), ENB.source_dir, v.imsi, v.dl_freq,
                     v.prb, v.timeout)


def iperf_step(server: str, seconds: int) -> vnfscript.Step:
    return vnfscript.Step([oai.LIB, "oai/ue.sh"]).call("oai_ue_iperf", server, seconds)


def _attach(config: oai.Options) -> vnfscript.Step:
    return attach_step(values(config))


#: The eNB's UE (registry.yaml: the eNB's ``ue``).
UE = oai.Ue(keys=("ue-lte-k", "ue-lte-op"),
            core_view=("mme-view", "not read from the eNB VNF: the MME logs the attach of this IMSI "
                       "(journalctl -u oai-mme, or {}/oai-mme.log without systemd)".format(oai.LOG_DIR)),
            attach=_attach, iperf=iperf_step)
