"""The optional 5G UE of the gNB charm: OAI's nr-uesoftmodem on the gNB VNF, registered through
the gNB's RF simulator on loopback, with the actions ``ue-attach`` (waits for registration and
the PDU session: an address on ``oaitun_ue1``) and ``ue-iperf`` (throughput and RTT through N3
and N6 to an iperf3 server; the eNB's UE step, vnf/oai/ue.sh).

The SIM comes from OAI's UE template (targets/PROJECTS/GENERIC-NR-5GC/CONF/ue.conf) with edits
that must match exactly once: IMSI, K, OPc, DNN and the slice. The nrUE takes K and OPc itself
(no conf2uedata step as for LTE), so OPc = AES-128_K(OP) xor OP is computed here, and the file
is written 0600 in the state folder; K and OPc travel in the step's data section only. The radio
settings are those of the gNB's template (band 78, 106 PRB, numerology 1, SSB at 3619.2 MHz);
the conformance check holds them to the template.
"""
from typing import List, NamedTuple

from vpnaas.oai import component as oai
from vpnaas.oai import validation as oai_validation
from vpnaas.oai.cn5g import common as cn5g_common
from vpnaas.oai.cn5g.gnb import BUILD
from vpnaas.oai.cn5g.gnb import COMPONENT as GNB
from vpnaas.vnf import vnfscript

TEMPLATE = "targets/PROJECTS/GENERIC-NR-5GC/CONF/ue.conf"
SIM_FILE = oai.STATE_DIR + "/nrue.conf"
#: The radio of the gNB's template: band, PRBs, numerology, SSB frequency (Hz).
BAND, PRB, NUMEROLOGY, SSB_HZ = 78, 106, 1, 3619200000
#: "No SD" (3GPP TS 23.003): what the UE asks for when the slice has no differentiator.
NO_SD = "ffffff"


class NrUeValues(NamedTuple):
    common: oai.Common
    imsi: str
    k: str
    opc: str
    dnn: str
    sst: int
    sd: str
    timeout: int


def values(config: oai.Options) -> NrUeValues:
    """Validated UE values (raises InvalidValue); the UE is off while ue-imsi is empty."""
    common = oai.common_values(config)
    oai_validation.nrue_mnc(common.mnc)
    imsi = (config.get("ue-imsi") or "").strip()
    if not imsi:
        raise oai_validation.InvalidValue("ue-imsi: not set; the UE needs an IMSI MySQL provisions (imsi-first ...)")
    imsi = oai_validation.digits(imsi, "ue-imsi", 6, 15)
    if not imsi.startswith(common.mcc + common.mnc):
        raise oai_validation.InvalidValue(
            "ue-imsi: {} does not start with MCC+MNC {}".format(imsi, common.mcc + common.mnc))
    k = oai_validation.secret_hex32(config.get("ue-k"), "ue-k")
    op = oai_validation.secret_hex32(config.get("ue-op"), "ue-op")
    slice_ = cn5g_common.slice_values(config)
    return NrUeValues(common=common, imsi=imsi, k=k, opc=oai.opc(k, op), dnn=cn5g_common.dnn(config.get("ue-dnn"),
                                                                                          "ue-dnn"),
                      sst=slice_.sst, sd=slice_.sd,
                      timeout=oai_validation.integer(config.get("ue-attach-timeout", 120), "ue-attach-timeout",
                                                     10, 1800))


def _field(key: str, value: str, quoted: bool = True) -> oai.JsonObject:
    """Edit inside uicc0: ``key = <value>;`` (spaces around = as the template has them or not)."""
    rhs = '"{}"'.format(value) if quoted else value
    return {"pattern": r"\b{}(\s*)=\s*[^;\n]*;".format(key), "repl": r"{}\g<1>= {};".format(key, rhs),
            "count": 1, "what": key + " (uicc0)"}


def sim_spec(v: NrUeValues) -> oai.RenderSpec:
    edits: List[oai.JsonObject] = [
        _field("imsi", v.imsi), _field("key", v.k), _field("opc", v.opc.upper()), _field("dnn", v.dnn),
        _field("nssai_sst", str(v.sst), quoted=False), _field("nssai_sd", "0x" + (v.sd or NO_SD), quoted=False),
    ]
    return {"files": [{"src": "{}/{}".format(GNB.source_dir, TEMPLATE), "dst": SIM_FILE, "mode": "600",
                       "edits": edits}]}


def argv() -> List[str]:
    """nr-uesoftmodem's options after ``-O <SIM file>`` (its radio: the gNB template's)."""
    return ["-r", str(PRB), "--numerology", str(NUMEROLOGY), "--band", str(BAND), "-C", str(SSB_HZ),
            "--sa", "--rfsim"]


def attach_step(v: NrUeValues) -> vnfscript.Step:
    step = vnfscript.Step([oai.LIB, "oai/ue.sh", "oai/nrue.sh"])
    step.secret("UE_SPEC", oai.b64_json(sim_spec(v)))
    return step.call("oai_nrue_attach", oai.shipped_b64("oai/render.py"), "{}/{}".format(GNB.source_dir, BUILD),
                     SIM_FILE, v.imsi, v.timeout, *argv())


def iperf_step(server: str, seconds: int) -> vnfscript.Step:
    return vnfscript.Step([oai.LIB, "oai/ue.sh"]).call("oai_ue_iperf", server, seconds)


def _attach(config: oai.Options) -> vnfscript.Step:
    return attach_step(values(config))


#: The gNB's nrUE (registry.yaml: the gNB's ``ue``).
UE = oai.Ue(keys=("ue-k", "ue-op"),
            core_view=("amf-view", "not read from the gNB VNF: the AMF logs the registration of this IMSI and the "
                       "SMF its PDU session (journalctl -u oai-amf / oai-smf, or {}/oai-amf.log without "
                       "systemd)".format(oai.LOG_DIR)),
            attach=_attach, iperf=iperf_step)
