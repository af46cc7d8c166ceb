"""The OAI eNB with the RF simulator: build, configuration and service.

Pinned to the openairinterface5g release v1.2.2 (August 2020, "bug fix for supporting
multi-antennas in RF simulator"; the earlier charm built an unpinned master). The configuration is
OAI's band-7 template with every value set by an edit that must match exactly once, so that a
changed template fails the step instead of being left with the template's values (the earlier
whitespace-sensitive sed did nothing silently). At v1.2.2 build_oai builds into
cmake_targets/lte_build_oai/build (ran_build is the name of later releases).
"""

from typing import Dict, List, NamedTuple, Optional

from vpnaas.core import model
from vpnaas.oai import component as oai
from vpnaas.oai import validation as oai_validation
from vpnaas.vnf import vnfscript

PREFIX = oai.PREFIX
TEMPLATE = "targets/PROJECTS/GENERIC-LTE-EPC/CONF/enb.band7.tm1.50PRB.usrpb210.conf"
PRBS = (6, 15, 25, 50, 75, 100)


#: Edit: ``key = <anything>;`` becomes ``key = value;`` (exactly ``count`` times).
_set = oai.set_edit


class EnbValues(NamedTuple):
    common: oai.Common
    addresses: oai.Addresses  # own: s1c, s1u; peer: the MME's s1c
    dl_freq: int  # Hz
    prb: int  # one of PRBS


class Enb(oai.Component[EnbValues]):
    name = "enb"
    title = "eNB"
    repository = "https://gitlab.eurecom.fr/oai/openairinterface5g.git"
    ref = "v1.2.2"
    program = "lte-softmodem"
    option_sources = ("targets/RT/USER", "executables", "common/config")
    workdir = ""  # the build directory: lte-softmodem loads the RF simulator library from there
    env = {"RFSIMULATOR": "enb"}

    def binary_candidates(self) -> List[str]:
        return [
            self.source_dir + "/cmake_targets/lte_build_oai/build/lte-softmodem",
            self.source_dir + "/cmake_targets/ran_build/build/lte-softmodem",
        ]

    build_labels = ("installing the eNB build dependencies", "building the eNB and UE with the RF simulator")

    def config_values(self, config: oai.Options, plan: Optional[model.Plan]) -> EnbValues:
        values = EnbValues(
            common=oai.common_values(config),
            addresses=self.addresses(config, plan),
            dl_freq=oai_validation.integer(config.get("downlink-frequency"), "downlink-frequency",
                                           400000000, 6000000000),
            prb=oai_validation.integer(config.get("prb"), "prb", 6, 100),
        )
        if values.prb not in PRBS:
            raise oai_validation.InvalidValue(
                "prb: {} is not one of {}".format(values.prb, ", ".join(str(p) for p in PRBS))
            )
        return values

    def run_argv(self, values: EnbValues) -> List[str]:
        return [self.binary, "-O", PREFIX + "/enb.conf", "--rfsim"]

    def render_spec(self, values: EnbValues) -> oai.RenderSpec:
        at, common = values.addresses, values.common
        s1c, s1u = at.own["s1c"], at.own["s1u"]
        edits = [
            _set("tracking_area_code", common.tac),
            _set("mcc", common.mcc, "mcc (plmn_list)"),
            _set("mnc", common.mnc, "mnc (plmn_list)"),
            _set("mnc_length", len(common.mnc)),
            _set("N_RB_DL", values.prb),
            _set("downlink_frequency", "{}L".format(values.dl_freq)),
            {
                "pattern": r'(mme_ip_address\s*=\s*\(\s*\{\s*ipv4\s*=\s*")[^"]*(")',
                "repl": r"\g<1>{}\g<2>".format(at.peers["s1c"]),
                "count": 1,
                "what": "mme_ip_address",
            },
            _set("ENB_INTERFACE_NAME_FOR_S1_MME", "@S1C_IFACE@", quoted=True),
            _set("ENB_IPV4_ADDRESS_FOR_S1_MME", str(s1c), quoted=True),
            _set("ENB_INTERFACE_NAME_FOR_S1U", "@S1U_IFACE@", quoted=True),
            _set("ENB_IPV4_ADDRESS_FOR_S1U", str(s1u), quoted=True),
            _set("ENB_IPV4_ADDRESS_FOR_X2C", str(s1c), quoted=True),
        ]
        tokens: Dict[str, oai.Token] = {"@S1C_IFACE@": {"iface_of": str(s1c.ip)},
                                        "@S1U_IFACE@": {"iface_of": str(s1u.ip)}}
        return {
            "files": [
                {
                    "src": "{}/{}".format(self.source_dir, TEMPLATE),
                    "dst": PREFIX + "/enb.conf",
                    "edits": edits,
                    "tokens": tokens,
                }
            ]
        }

    def configure_calls(self, step: vnfscript.Step, values: EnbValues) -> None:
        step.call("oai_configure_enb", oai.b64_json(self.render_spec(values)))


COMPONENT = Enb()
