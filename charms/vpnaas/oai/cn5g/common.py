"""OAI's 5G core network functions (CN5G release v2.0.0): what the AMF, SMF and UPF charms share.

The three are pinned by commit: the commits OAI's federation repository records for its v2.0.0
release (fed ``de62dc1a``, "synchronizing the nf components to master v2.0.0 tags"), the CN5G
release OAI's own RF-simulator CI runs against the gNB/nrUE of openairinterface5g v2.1.0. Each is
built with OAI's own script (``build/scripts/build_<nf> -I -f``, then ``-c -V -b Release -j``) and
configured with one YAML file, ``/usr/local/etc/oai/<nf>.yaml``, generated here from validated
values: OAI's "mini" scenario (no NRF, ``register_nf: no``, HTTP/1 on the SBI; the AMF
authenticates from MySQL itself, the SMF uses local subscription data and PCC rules, the UPF is
the simple switch). Identifiers OAI reads as text (MCC, MNC, AMF region/set/pointer, SD) are
always quoted, every ``host`` is an IP literal (the SMF then uses IP node ids on N4), and every
``interface_name`` is set: an NF binds by interface name and reads that name's one IPv4 address
(SIOCGIFADDR), so each service address carries a label of its own (``labelled`` reference points,
vnf/tunnels.sh) and the file names the label the VNF reports for the address
(``{"iface_of": ip}``, resolved by vnf/oai/render.py). Peers' entries name no interface: an NF
must not look for another VNF's labels. docs/cn5g.md has the why of each choice.
"""

import json
import re
from typing import Any, Dict, List, NamedTuple, Optional, Tuple, TypeVar

from vpnaas.core import registry, validation
from vpnaas.oai import component as oai
from vpnaas.oai import validation as oai_validation
from vpnaas.vnf import vnfscript

PREFIX = oai.PREFIX
GROUP = "https://gitlab.eurecom.fr/oai/cn5g/"
RELEASE = "v2.0.0"
#: The federation repository's release commit (it records the NF commits below).
FED_COMMIT = "de62dc1ac5f4c134b521274e6a908608a9c5dad5"
COMMITS = {
    "amf": "1386199ef610e632b00c90bfee5f7b1f5ae21632",
    "smf": "f499edf0e2bd70f52ecd23fd6bfdb960b334cd69",
    "upf": "93cab8f222a5d12ba8ab90fb436cce6cea4f0bff",
}
SBI_PORT = 80
N2_PORT = 38412
N4_PORT = 8805
GTPU_PORT = 2152
V = TypeVar("V")


class Flag(object):
    """A YAML boolean written as OAI's own files write it (``yes``/``no``)."""

    def __init__(self, value: bool) -> None:
        self.value = value


YES, NO = Flag(True), Flag(False)


def _scalar(value: Any) -> str:
    if isinstance(value, Flag):
        return "yes" if value.value else "no"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    # A JSON string is a YAML double-quoted scalar: identifiers stay text ("01" is not 1).
    return json.dumps(str(value))


def _lines(node: Any, indent: int) -> List[str]:
    pad = " " * indent
    out: List[str] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if isinstance(value, (dict, list)) and value:
                out.append("{}{}:".format(pad, key))
                out += _lines(value, indent + 2)
            else:
                out.append("{}{}: {}".format(pad, key, "[]" if value == [] else "{}" if value == {}
                                             else _scalar(value)))
    else:
        for item in node:
            if isinstance(item, (dict, list)) and item:
                inner = _lines(item, indent + 2)
                inner[0] = pad + "- " + inner[0][indent + 2:]
                out += inner
            else:
                out.append("{}- {}".format(pad, _scalar(item)))
    return out


def to_yaml(doc: Dict[str, Any]) -> str:
    """Block-style YAML of ``doc`` (dicts, lists, str, int, Flag): every string double-quoted."""
    return "# Managed by the VPNaaS charm: generated, every change is overwritten.\n" + "\n".join(
        _lines(doc, 0)) + "\n"


class Slice(NamedTuple):
    """The S-NSSAI the core serves: SST, and an SD of 6 hex digits or "" (none)."""
    sst: int
    sd: str

    def as_dict(self) -> Dict[str, Any]:
        return dict([("sst", self.sst)] + ([("sd", self.sd)] if self.sd else []))


class Session(NamedTuple):
    """The PDU session the SMF and UPF serve: DNN, UE pool (CIDR text)."""
    dnn: str
    pool: str


def slice_values(config: oai.Options) -> Slice:
    sd = (config.get("sd") or "").strip()
    return Slice(sst=oai_validation.integer(config.get("sst", 1), "sst", 1, 255),
                 sd=oai_validation.hex_digits(sd, "sd", 6) if sd else "")


#: A DNN has the APN Network Identifier's format: at most 63 octets once encoded as length-prefixed
#: labels (3GPP TS 23.003 §9.1, §9A), so at most 62 characters of text. The nrUE of
#: openairinterface5g v2.1.0 also puts the length in one octet (nr_nas_msg_sim.c).
MAX_DNN = 62


def dnn(value: Any, what: str = "dnn") -> str:
    """A data network name: DNS-like labels, lower case, at most MAX_DNN characters."""
    text = validation.word(value or "", what)
    if len(text) > MAX_DNN:
        raise oai_validation.InvalidValue(
            "{}: {} is {} characters long; a DNN has at most {} (63 octets encoded, 3GPP TS 23.003 9.1)".format(
                what, validation.excerpt(text), len(text), MAX_DNN))
    if not re.fullmatch(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*", text):
        raise oai_validation.InvalidValue("{}: {} is not a data network name such as oai".format(
            what, validation.excerpt(text)))
    return text


def session_values(config: oai.Options) -> Session:
    return Session(dnn=dnn(config.get("dnn")),
                   pool=str(oai_validation.ipv4_pool(config.get("ue-ip-pool"), "ue-ip-pool")))


def iface(name: str) -> str:
    """The placeholder of an interface name in a generated file (resolved on the VNF)."""
    return "@{}_IF@".format(name.upper())


def header() -> Dict[str, Any]:
    """The sections every NF reads first: the mini scenario's."""
    return {"log_level": {"general": "info"}, "register_nf": {"general": NO}, "http_version": 1}


def sbi(interface: Optional[str] = None) -> Dict[str, Any]:
    entry: Dict[str, Any] = {"port": SBI_PORT, "api_version": "v1"}
    if interface:
        entry["interface_name"] = iface(interface)
    return entry


def peer(host: str) -> Dict[str, Any]:
    """Another NF as this one reaches it: its address, no interface of ours."""
    return {"host": host, "sbi": sbi()}


def dnns(session: Session) -> List[Dict[str, Any]]:
    return [{"dnn": session.dnn, "pdu_session_type": "IPV4", "ipv4_subnet": session.pool}]


def served(slice_: Slice, session: Session, key: str) -> Dict[str, Any]:
    """``sNssai<key>InfoList`` of an SmfInfo/UpfInfo (3GPP TS 29.510): the one slice and DNN."""
    return {"sNssai{}InfoList".format(key): [{"sNssai": slice_.as_dict(),
                                               "dnn{}InfoList".format(key): [{"dnn": session.dnn}]}]}


class Cn5gComponent(oai.Component[V]):
    """An NF of the 5G core: pinned source (``repository(name)``, ``COMMITS``), OAI's build script
    (``build_labels(title)``), one generated YAML file. An NF sets ``name`` and ``title``; the rest
    of its description follows from them in OAI's layout (``__init__``)."""

    workdir = PREFIX
    ubuntu = "22.04"

    def __init__(self) -> None:
        # OAI names each NF's repository (oai-cn5g-<nf>), program, source folder (src/oai_<nf>,
        # where its options are defined) and build script (build_<nf>) after it.
        self.repository = repository(self.name)
        self.ref = COMMITS[self.name]
        self.program = self.name
        self.option_sources = ("src/oai_" + self.name,)
        self.build_labels = build_labels(self.title)

    @property
    def interfaces(self) -> Tuple[str, ...]:
        """Its reference points whose service addresses it binds by interface name (each gets a
        label placeholder, ``iface``): the registry's ``binds``, in the registry's order."""
        return tuple(rp.name for rp in registry.load().endpoints_of(self.name) if rp.bound_by(self.name))

    @property
    def config_path(self) -> str:
        return "{}/{}.yaml".format(PREFIX, self.name)

    def binary_candidates(self) -> List[str]:
        # build_<nf> copies the program to /usr/local/bin; the build folder keeps it too.
        return ["/usr/local/bin/" + self.name, "{}/build/{}/build/{}".format(self.source_dir, self.name, self.name)]

    def run_argv(self, values: V) -> List[str]:
        return [self.binary, "-c", self.config_path, "-o"]

    # -- to be provided by the NF
    def document(self, values: V) -> Dict[str, Any]:
        """The NF's configuration as a document (``to_yaml``)."""
        raise NotImplementedError

    def own_addresses(self, values: V) -> Dict[str, str]:
        """{reference point: this NF's service address on it}: one for each reference point the
        registry makes it an end of (``oai.addresses``)."""
        at = self.addresses_of(values)
        return {rp: at.ip(rp) for rp in at.own}

    def n6(self, values: V) -> str:
        """The N6 interface ("": the default route's; "-": the NF has none)."""
        return "-"

    def render_spec(self, values: V) -> oai.RenderSpec:
        tokens: Dict[str, oai.Token] = {iface(rp): {"iface_of": ip} for rp, ip in self.own_addresses(values).items()
                                        if rp in self.interfaces}
        if self.n6(values) != "-":
            tokens[iface("n6")] = {"var": "N6"}
        return {"files": [{"content": to_yaml(self.document(values)), "dst": self.config_path, "tokens": tokens,
                           "mode": "600"}]}

    def configure_files(self) -> List[str]:
        return ["oai/configure-cn5g.sh"]

    def configure_calls(self, step: vnfscript.Step, values: V) -> None:
        # The spec travels in the data section: the AMF's holds the database password.
        step.secret("CN5G_SPEC", oai.b64_json(self.render_spec(values)))
        step.call("oai_configure_cn5g", self.title, PREFIX, self.n6(values))


def repository(name: str) -> str:
    return "{}oai-cn5g-{}.git".format(GROUP, name)


def build_labels(title: str) -> Tuple[str, str]:
    """The labels of the two build steps (oai_build_<nf> in vnf/oai/install.sh)."""
    return ("installing the {} build dependencies".format(title), "building the " + title)


def ambr(value: Any, what: str) -> str:
    """A session AMBR as OAI writes it: digits and a unit (``200Mbps``)."""
    text = validation.word(value or "", what)
    if not re.fullmatch(r"[1-9][0-9]{0,5}(bps|Kbps|Mbps|Gbps)", text):
        raise oai_validation.InvalidValue("{}: {} is not a rate such as 200Mbps".format(what, validation.excerpt(text)))
    return text
