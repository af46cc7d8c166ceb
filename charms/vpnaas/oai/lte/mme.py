"""The OAI MME: build, configuration and service.

The MME binds S1-C, S11 and S6a to its service addresses (on the dummy device the tunnel reconcile
manages); the HSS and SPGW-C addresses come from explicit options or from the s6a/s11 relations.
TAC_0 is the configured TAC (the one the eNB announces), TAC_1/TAC_2 the next two.
"""

from typing import Dict, List, NamedTuple, Optional, Tuple

from vpnaas.core import model
from vpnaas.oai import component as oai
from vpnaas.oai import validation as oai_validation
from vpnaas.vnf import vnfscript

PREFIX = oai.PREFIX


#: The placeholders of mme_fd.sprint.conf besides @PREFIX@ and @REALM@ (mme.conf has the others).
FD_TOKENS = ("@MME_S6A_IP_ADDR@", "@MME_FQDN@", "@HSS_FQDN@", "@HSS_IP_ADDR@")


def tac_bytes(tac: int) -> Tuple[str, str]:
    """(low byte, high byte) in hex, as the MME's TAI lists want them."""
    return "{:02x}".format(tac % 256), "{:02x}".format(tac // 256)


class MmeValues(NamedTuple):
    common: oai.Common
    addresses: oai.Addresses  # own: s6a, s11, s1c; peers: the HSS's s6a, the SPGW-C's s11
    gid: int
    code: int


class Mme(oai.Component[MmeValues]):
    name = "mme"
    title = "MME"
    repository = "https://github.com/simula/openairinterface-openair-mme.git"
    ref = "dreibh/asn1c-url-fix-14Oct2020"
    program = "mme"
    option_sources = ("src/mme_app",)
    workdir = PREFIX

    def binary_candidates(self) -> List[str]:
        return ["/usr/local/bin/mme", self.source_dir + "/build/mme/build/mme"]

    build_labels = ("installing the MME build dependencies", "building the MME")
    #: The MME builds only freeDiameter of its submodules; its helper (build_helper.fd) pulls
    #: master inside it, which on 14 Oct 2020 was the commit the HSS pins too.
    submodule_pins = (oai.FREEDIAMETER_PIN,)

    def config_values(self, config: oai.Options, plan: Optional[model.Plan]) -> MmeValues:
        return MmeValues(
            common=oai.common_values(config),
            addresses=self.addresses(config, plan),
            gid=oai_validation.integer(config.get("mme-gid"), "mme-gid", 0, 65535),
            code=oai_validation.integer(config.get("mme-code"), "mme-code", 0, 255),
        )

    def run_argv(self, values: MmeValues) -> List[str]:
        return [self.binary, "-c", PREFIX + "/mme.conf"]

    def setup_settings(self, values: MmeValues) -> List[Tuple[str, str]]:
        realm, at = values.common.realm, values.addresses
        return [("host", "{} mme.{} mme".format(at.ip("s6a"), realm)),
                ("host", "{} hss.{} hss".format(at.peers["s6a"], realm))]

    def tokens(self, values: MmeValues) -> Dict[str, oai.Token]:
        common = values.common
        realm, mcc, mnc, tac = common.realm, common.mcc, common.mnc, common.tac
        mnc3 = "{:03d}".format(int(mnc))
        at = values.addresses
        s1c, s11 = at.own["s1c"], at.own["s11"]
        tokens: Dict[str, oai.Token] = {
            "@MME_S6A_IP_ADDR@": at.ip("s6a"),
            "@INSTANCE@": "1",
            "@PREFIX@": PREFIX,
            "@REALM@": realm,
            "@PID_DIRECTORY@": "/var/run",
            "@MME_FQDN@": "mme." + realm,
            "@HSS_HOSTNAME@": "hss",
            "@HSS_FQDN@": "hss." + realm,
            "@HSS_IP_ADDR@": at.peers["s6a"],
            "@MCC@": mcc,
            "@MNC@": mnc,
            "@MME_GID@": str(values.gid),
            "@MME_CODE@": str(values.code),
            "@TAC_0@": str(tac),
            "@TAC_1@": str(tac + 1),
            "@TAC_2@": str(tac + 2),
            "@MME_INTERFACE_NAME_FOR_S1_MME@": {"iface_of": str(s1c.ip)},
            "@MME_IPV4_ADDRESS_FOR_S1_MME@": str(s1c),
            "@MME_INTERFACE_NAME_FOR_S11@": {"iface_of": str(s11.ip)},
            "@MME_IPV4_ADDRESS_FOR_S11@": str(s11),
            # S10 (MME-MME) is not used: loopback, as OAI's own CI does.
            "@MME_INTERFACE_NAME_FOR_S10@": "lo",
            "@MME_IPV4_ADDRESS_FOR_S10@": "127.0.0.10/8",
            "@OUTPUT@": "CONSOLE",
            "@SGW_IPV4_ADDRESS_FOR_S11_0@": at.peers["s11"],
            "@SGW_IPV4_ADDRESS_FOR_S11_TEST_0@": at.peers["s11"],
            "@PEER_MME_IPV4_ADDRESS_FOR_S10_0@": "0.0.0.0/24",
            "@PEER_MME_IPV4_ADDRESS_FOR_S10_1@": "0.0.0.0/24",
        }
        for key, value in (("SGW_TEST_0", 7), ("SGW_0", tac), ("MME_0", tac + 1), ("MME_1", tac + 2)):
            low, high = tac_bytes(value)
            tokens["@TAC-LB_{}@".format(key)] = low
            tokens["@TAC-HB_{}@".format(key)] = high
        for key in ("SGW_0", "MME_0", "MME_1"):
            tokens["@MCC_{}@".format(key)] = mcc
            tokens["@MNC3_{}@".format(key)] = mnc3
        return tokens

    def render_spec(self, values: MmeValues) -> oai.RenderSpec:
        tokens = self.tokens(values)
        src = self.source_dir + "/etc/"
        fd = {k: tokens.pop(k) for k in FD_TOKENS}
        fd["@PREFIX@"] = tokens["@PREFIX@"]
        fd["@REALM@"] = tokens["@REALM@"]
        return {
            "files": [
                {"src": src + "mme_fd.sprint.conf", "dst": PREFIX + "/freeDiameter/mme_fd.conf", "tokens": fd},
                {"src": src + "mme.conf", "dst": PREFIX + "/mme.conf", "tokens": tokens},
            ]
        }

    def configure_calls(self, step: vnfscript.Step, values: MmeValues) -> None:
        step.call(
            "oai_configure_mme",
            oai.b64_json(self.render_spec(values)),
            self.source_dir,
            PREFIX + "/freeDiameter",
            "mme." + values.common.realm,
        )


COMPONENT = Mme()
