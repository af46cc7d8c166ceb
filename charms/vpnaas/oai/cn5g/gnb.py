"""The OAI gNB with the RF simulator (5G standalone): build, configuration and service.

Pinned to openairinterface5g v2.1.0, the RAN release whose RF-simulator CI runs against CN5G
v2.0.0. Its configuration is OAI's band-78, 106-PRB SA template with every value the bundle sets
changed by an edit that must match exactly once (a changed template fails the step instead of
running with the template's values): the tracking area, the PLMN and slice, the AMF's N2 address
and the gNB's own N2 (NG-C) and N3 (NG-U) addresses and interfaces. The gNB binds by address (it
strips the prefix of ``GNB_IPV4_ADDRESS_FOR_NG_AMF``/``..._NGU``), so its service addresses work
directly. It runs as OAI's tutorial runs it with the RF simulator (``--rfsim --sa`` and
``--gNBs.[0].min_rxtxtime 6`` for OAI's own UE) from its build folder, where it loads the RF
simulator library. The nrUE of the same VNF attaches over the RF simulator on loopback
(nrue.py).
"""

from typing import Dict, List, NamedTuple, Optional

from vpnaas.core import model
from vpnaas.oai import component as oai
from vpnaas.oai.cn5g import common as cn5g_common
from vpnaas.vnf import vnfscript

PREFIX = oai.PREFIX
TEMPLATE = "targets/PROJECTS/GENERIC-NR-5GC/CONF/gnb.sa.band78.fr1.106PRB.usrpb210.conf"
BUILD = "cmake_targets/ran_build/build"
_set = oai.set_edit


class GnbValues(NamedTuple):
    common: oai.Common
    sst: int
    sd: str      # 6 hex digits or "" (none)
    addresses: oai.Addresses   # own: n2 (NG-C), n3 (NG-U); peer: the AMF's n2


class Gnb(oai.Component[GnbValues]):
    name = "gnb"
    title = "gNB"
    repository = "https://gitlab.eurecom.fr/oai/openairinterface5g.git"
    ref = "v2.1.0"
    program = "nr-softmodem"
    option_sources = ("executables", "common/config", "openair2/GNB_APP", "radio/rfsimulator")
    workdir = ""  # the build folder: nr-softmodem loads the RF simulator library from there
    ubuntu = "22.04"
    fetch_submodules = False   # its one submodule (FlexRIC, E2 agent) is built only with --build-e2
    build_labels = ("installing the gNB build dependencies", "building the gNB and nrUE with the RF simulator")

    def binary_candidates(self) -> List[str]:
        return ["{}/{}/nr-softmodem".format(self.source_dir, BUILD)]

    def config_values(self, config: oai.Options, plan: Optional[model.Plan]) -> GnbValues:
        slice_ = cn5g_common.slice_values(config)
        return GnbValues(
            common=oai.common_values(config), sst=slice_.sst, sd=slice_.sd,
            addresses=self.addresses(config, plan),
        )

    def run_argv(self, values: GnbValues) -> List[str]:
        return [self.binary, "-O", PREFIX + "/gnb.conf", "--gNBs.[0].min_rxtxtime", "6", "--rfsim", "--sa"]

    def render_spec(self, values: GnbValues) -> oai.RenderSpec:
        common, at = values.common, values.addresses
        snssai = "sst = {};{}".format(values.sst, " sd = 0x{};".format(values.sd) if values.sd else "")
        edits = [
            _set("tracking_area_code", common.tac),
            {"pattern": r"\bplmn_list(\s*)=\s*\(\s*\{[^\n]*\}\s*\);",
             "repl": r"plmn_list\g<1>= ({{ mcc = {}; mnc = {}; mnc_length = {}; snssaiList = ({{ {} }}) }});".format(
                 int(common.mcc), int(common.mnc), len(common.mnc), snssai),
             "count": 1, "what": "plmn_list (MCC, MNC, slice)"},
            {"pattern": r'(amf_ip_address\s*=\s*\(\s*\{\s*ipv4\s*=\s*")[^"]*(")',
             "repl": r"\g<1>{}\g<2>".format(at.peers["n2"]), "count": 1, "what": "amf_ip_address"},
            _set("GNB_INTERFACE_NAME_FOR_NG_AMF", "@N2_IFACE@", quoted=True),
            _set("GNB_IPV4_ADDRESS_FOR_NG_AMF", str(at.own["n2"]), quoted=True),
            _set("GNB_INTERFACE_NAME_FOR_NGU", "@N3_IFACE@", quoted=True),
            _set("GNB_IPV4_ADDRESS_FOR_NGU", str(at.own["n3"]), quoted=True),
        ]
        tokens: Dict[str, oai.Token] = {"@N2_IFACE@": {"iface_of": at.ip("n2")},
                                        "@N3_IFACE@": {"iface_of": at.ip("n3")}}
        return {"files": [{"src": "{}/{}".format(self.source_dir, TEMPLATE), "dst": PREFIX + "/gnb.conf",
                           "edits": edits, "tokens": tokens}]}

    def configure_files(self) -> List[str]:
        return ["oai/configure-cn5g.sh"]

    def configure_calls(self, step: vnfscript.Step, values: GnbValues) -> None:
        step.call("oai_configure_gnb", oai.b64_json(self.render_spec(values)))


COMPONENT = Gnb()
