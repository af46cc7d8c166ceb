"""The checks of the 5G standalone components against OAI's sources (``make oai-conformance``).

* The generated CN5G files (AMF, SMF, UPF): every key the charm writes must be one OAI reads. For
  the SMF its own tree at the pinned commit answers: the keys its parser reads
  (``src/smf_app/smf_config_types.cpp``) or its own sample file (``etc/config.yaml``, whose
  sections the shared parser reads). For the AMF and the UPF, the examples of the federation
  repository at the release commit (MySQL's pinned source: ``mini_nonrf_config.yaml`` and
  ``basic_nrf_config.yaml``, the one that writes the UPF's ``smfs``) and its
  ``docs/CONFIGURATION.md``. Key names only: the NFs' own readers are executed over the same
  files by nfreader.py, which is what shows that a key's value has the shape the reader wants.
* MySQL: OAI's ``users`` table taken from the release's dump by the charm's own program
  (vnf/oai/mysql-init.py) has the columns the charm writes and the AMF reads, and none of the
  dump's rows reaches the init file.
* The gNB and its nrUE: the radio settings the nrUE uses are those of the gNB's template; options
  that override a configuration parameter (``--gNBs.[0].min_rxtxtime``) name a parameter the
  program defines.
"""
import importlib.util
import os
import re

import yaml

from vpnaas.oai.cn5g import common as cn5g_common
from vpnaas.oai.cn5g import mysql, nrue
from vpnaas.vnf import vnfscript

FED_EXAMPLE = "docker-compose/conf/mini_nonrf_config.yaml"
#: The release's example with an NRF: the one that writes the UPF's ``smfs`` (a list of {host}).
FED_EXAMPLES = (FED_EXAMPLE, "docker-compose/conf/basic_nrf_config.yaml")
FED_DOC = "docs/CONFIGURATION.md"
SMF_PARSER = "src/smf_app/smf_config_types.cpp"
SMF_SAMPLE = "etc/config.yaml"
#: The columns the charm's init file writes; the AMF reads the same (key, sqn, rand, OPc by IMSI).
USER_COLUMNS = ("imsi", "key", "sqn", "rand", "OPc")


def key_paths(node, prefix=()):
    """Every key path of a YAML document; list items are one level (``[]``)."""
    out = set()
    if isinstance(node, dict):
        for key, value in node.items():
            path = prefix + (str(key),)
            out.add(path)
            out |= key_paths(value, path)
    elif isinstance(node, list):
        for item in node:
            out |= key_paths(item, prefix + ("[]",))
    return out


def known_paths(*documents):
    out = set()
    for doc in documents:
        out |= key_paths(doc or {})
    return out


def parser_keys(text):
    """The keys a yaml-cpp parser reads: ``node["key"]``."""
    return set(re.findall(r'node\["([A-Za-z0-9_]+)"\]', text or ""))


def check_document(report, name, doc, sample_paths, parser, doc_text, source):
    """Each key path of the charm's document: in OAI's sample, read by the parser, or named in the
    configuration documentation (the last for keys no example writes)."""
    for path in sorted(key_paths(doc)):
        shown = ".".join(path)
        if path in sample_paths:
            continue
        if parser is not None and path[-1] in parser:
            report.line("ok", "{}: {} read by the SMF's parser ({})".format(name, shown, SMF_PARSER))
        elif doc_text is not None and re.search(r"\b{}:".format(re.escape(path[-1])), doc_text):
            report.line("ok", "{}: {} named in {} (no example writes it)".format(name, shown, FED_DOC))
        else:
            report.line("MISMATCH", "{}: {} is not a key of {}".format(name, shown, source))
    report.line("ok", "{}: {} key paths checked against {}".format(name, len(key_paths(doc)), source))


def check_nf_files(report, name, comp, config, smf_tree, fed_tree):
    """The generated file of the AMF, SMF or UPF, against what each has here: the SMF against its
    own tree, the AMF and the UPF (no tree at their pins) against OAI's configuration of the release."""
    values = comp.config_values(config, None)
    text = cn5g_common.to_yaml(comp.document(values))
    doc = yaml.safe_load(text)
    for rp in comp.interfaces:
        if cn5g_common.iface(rp) not in text:
            report.line("MISMATCH", "{}: no interface_name names its {} label".format(name, rp))
    fed_examples = [yaml.safe_load(fed_tree.read(e) or "{}") for e in FED_EXAMPLES] if fed_tree else None
    fed_example = fed_examples[0] if fed_examples else None
    if name == "smf" and smf_tree is not None:
        sample = yaml.safe_load(smf_tree.read(SMF_SAMPLE) or "{}")
        check_document(report, name, doc, known_paths(sample, fed_example), parser_keys(smf_tree.read(SMF_PARSER)),
                       None, "the SMF at {} ({} or {})".format(smf_tree.commit[:12], SMF_SAMPLE, SMF_PARSER))
        return
    if fed_example is None:
        report.line("UNCHECKED", "{}: configuration keys not checked: no federation repository (MySQL's "
                                 "source) in OAI_SRC".format(name))
        return
    source = "OAI's v2.0.0 configuration ({}, {} at {}; the {}'s own reader runs below)".format(
        ", ".join(FED_EXAMPLES), FED_DOC, fed_tree.commit[:12], comp.title)
    check_document(report, name, doc, known_paths(*fed_examples), None, fed_tree.read(FED_DOC), source)


def load_mysql_init():
    path = os.path.join(vnfscript.VNF_DIR, "oai", "mysql-init.py")
    spec = importlib.util.spec_from_file_location("oai_vnf_mysql_init", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def check_mysql(report, comp, config, tree):
    """OAI's users table through the charm's own init program, at the pinned release."""
    init = load_mysql_init()
    dump = tree.read(mysql.SCHEMA)
    if dump is None:
        report.line("MISMATCH", "mysql: {} does not exist at {}".format(mysql.SCHEMA, tree.commit[:12]))
        return
    values = comp.config_values(config, None)
    try:
        lines = init.statements(comp.init_spec(values), dump)
    except init.InitError as e:
        report.line("MISMATCH", "mysql: {}".format(e))
        return
    table = lines[1]
    columns = re.findall(r"`([A-Za-z0-9_-]+)` [a-z]", table)
    missing = [c for c in USER_COLUMNS if c not in columns]
    if missing:
        report.line("MISMATCH", "mysql: OAI's users table lacks {}".format(", ".join(missing)))
    else:
        report.line("ok", "mysql: OAI's users table ({} columns) has {}".format(len(columns), ", ".join(USER_COLUMNS)))
    rows = set(re.findall(r"INSERT INTO `users` VALUES \('(\d+)'", dump))
    leaked = [r for r in rows if r in "\n".join(lines)]
    kind = "MISMATCH" if leaked else "ok"
    report.line(kind, "mysql: none of the dump's {} sample subscribers reaches the init file{}".format(
        len(rows), " (leaked: {})".format(", ".join(leaked)) if leaked else ""))
    if any("\n" in line or line.lstrip().startswith(("--", "#", "/*")) for line in lines):
        report.line("MISMATCH", "mysql: an init-file statement spans lines or is a comment")


def config_override_known(sources_text, option):
    """``--<section>.[i].<parameter>`` overrides a parameter of OAI's configuration module: both
    names must be strings the program defines."""
    names = [n for n in re.split(r"\.(?:\[\d+\]\.)?", option[2:]) if n]
    return len(names) > 1 and all('"{}"'.format(n) in sources_text for n in names)


def check_nr_radio(report, tree, template_path):
    """The nrUE's radio (cn5g.nrue) against the gNB's template: band, PRBs, SSB frequency."""
    text = tree.read(template_path) or ""
    ssb = re.search(r"absoluteFrequencySSB\s*=\s*(\d+)", text)
    prb = re.search(r"dl_carrierBandwidth\s*=\s*(\d+)", text)
    band = re.search(r"dl_frequencyBand\s*=\s*(\d+)", text)
    if not (ssb and prb and band):
        report.line("MISMATCH", "nrUE radio: the gNB template lacks absoluteFrequencySSB, dl_carrierBandwidth or "
                                "dl_frequencyBand")
        return
    # NR-ARFCN to frequency below 3 GHz... 24.25 GHz: 3000 MHz + (N - 600000) * 15 kHz (3GPP TS 38.104).
    hz = 3000000000 + (int(ssb.group(1)) - 600000) * 15000
    got = (int(band.group(1)), int(prb.group(1)), hz)
    want = (nrue.BAND, nrue.PRB, nrue.SSB_HZ)
    report.line("ok" if got == want else "MISMATCH", "nrUE radio band {}, {} PRB, SSB {} Hz; the gNB's template: "
                "band {}, {} PRB, SSB {} Hz".format(*(want + got)))


def check_binary(report, name, tree):
    """Where OAI's build script leaves the program: the charm's binary_candidates."""
    script = tree.read("build/scripts/build_" + name) or ""
    for where in ("INSTALL_DIR=/usr/local/bin", "build/{0}/build/{0}".format(name)):
        kind = "ok" if where in script else "MISMATCH"
        report.line(kind, "build_{}: {} {}".format(name, where, "named" if kind == "ok" else "not in the script"))


def check_nrue(report, comp, tree, renderer, config, check_output, sources_text):
    """The gNB charm's optional nrUE: its SIM from OAI's template, nr-uesoftmodem's options, and
    its radio against the gNB's template."""
    from oai_conformance import checks

    values = nrue.values(config)
    checks.check_sim_templates(report, comp, tree, renderer, nrue.sim_spec(values)["files"], check_output,
                               "nrUE")
    text = sources_text(tree, comp.option_sources)
    for option in sorted({w for w in ["-O"] + nrue.argv() if w.startswith("-")}):
        kind = "ok" if checks.option_known(text, option) else "MISMATCH"
        report.line(kind, "nr-uesoftmodem {}: {}".format(option, "defined by the program" if kind == "ok"
                                                         else "not an option of the program at this ref"))
    from vpnaas.oai.cn5g import gnb

    check_nr_radio(report, tree, gnb.TEMPLATE)
