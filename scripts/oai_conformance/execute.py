"""The executed part of `make oai-conformance`: every shipped VNF program of each OAI charm, built by
the charm's own code from params.yaml and sent exactly as the charm sends it (command line, program
on stdin, data section) over SSH to a fresh sandbox VNF (sandbox.py) holding OAI's tree from
OAI_SRC; the chain install -> configure -> start (the reconcile's gate) -> [the UE's attach], then
the same chain again on the same VNF, which must change nothing. Needs root (namespaces).

A run fails on a step that fails or ends without DONE, a rendered file with a placeholder left, a
libconfig file libconfig cannot parse or JSON that does not parse, and a second run that reports a
change. Everything stood in is listed in the report (sandbox.py, standins/).
"""
import json
import os
import re
import tempfile
import time

import yaml

from oai_conformance import libconfig
from oai_conformance.sandbox import Sandbox, SandboxError, serve_sources
from vpnaas.core import refpoints, validation
from vpnaas.oai import component as oai
from vpnaas.oai.cn5g import mysql, nrue
from vpnaas.oai.lte import ue
from vpnaas.vnf import ssh, vnfscript

TOKEN = re.compile(r"@[A-Za-z][A-Za-z0-9_-]*@")
TUNNEL_FILES = ["tunnels.sh"]
#: What each build step of the stand-in build scripts leaves, relative to the tree (where OAI's
#: build leaves the programs: the in-tree candidate of each component's binary_candidates).
UE_PROGRAMS = ["cmake_targets/lte_build_oai/build/lte-uesoftmodem", "cmake_targets/nas_sim_tools/build/conf2uedata"]
NR_UE_PROGRAMS = ["cmake_targets/ran_build/build/nr-uesoftmodem"]
BUILD_SCRIPTS = {"hss": "build_hss_rel14", "mme": "build_mme", "spgwc": "build_spgwc", "spgwu": "build_spgwu",
                 "enb": "build_oai", "amf": "build_amf", "smf": "build_smf", "upf": "build_upf", "gnb": "build_oai"}


def builds(components):
    """{build script: [programs it leaves, relative to the tree]} (components without an OAI build
    script, MySQL, have none)."""
    out = {}
    for name, comp in components:
        if name not in BUILD_SCRIPTS:
            continue
        programs = [c[len(comp.source_dir) + 1:] for c in comp.binary_candidates()
                    if c.startswith(comp.source_dir + "/")][:1]
        extra = UE_PROGRAMS if name == "enb" else NR_UE_PROGRAMS if name == "gnb" else []
        out.setdefault(BUILD_SCRIPTS[name], [])
        out[BUILD_SCRIPTS[name]] += [p for p in programs + extra if p not in out[BUILD_SCRIPTS[name]]]
    return out


class Outcome(object):
    def __init__(self, component):
        self.component = component
        self.rows = []      # (run, step, seconds, verdict, detail)
        self.failures = 0
        self.checks = 0

    def add(self, run, step, seconds, ok, detail):
        self.checks += 1
        if not ok:
            self.failures += 1
        self.rows.append((run, step, seconds, "ok" if ok else "FAIL", detail))


def gate_step(comp, config, wanted):
    """The reconcile's VNF part without WireGuard peers: tunnels.sh puts the service addresses
    (service_addresses, as remote.tunnel_step does first), then the component's gate
    (oai.add_gate) with no tunnel device, so the start is not held for a handshake."""
    step = vnfscript.Step(TUNNEL_FILES)
    step.call("tunnels_prepare")
    step.call("service_addresses", *service_addresses(config))
    oai.add_gate(step, comp, [], wanted, 300)
    return step


def service_addresses(config, labels=True):
    """The component's own service addresses: every ``<endpoint>-service-addresses`` option, as
    tunnels.sh's ``service_addresses`` takes them (``=<label>`` on a labelled reference point's,
    as ``model.Plan.service_address_args`` writes them)."""
    out = []
    for key, value in sorted(config.items()):
        if key.endswith("-service-addresses") and value:
            label = refpoints.address_label(key[:-len("-service-addresses")]) if labels else ""
            out += [str(a) + ("=" + label if label and a.version == 4 else "")
                    for a in validation.service_address_list(value, key)]
    return sorted(set(out))


def chain(name, comp, config):
    """[(label, step, timeout, check)] of one run; check(report, results, run) -> (ok, detail)."""
    values = comp.config_values(config, None)
    inputs = oai.install_plan(comp, config)
    steps = [("addresses+gate", gate_step(comp, config, "none"), 120, expect_component),
             ("install", oai.install_step(comp, inputs), inputs.timeout, expect_install),
             ("configure", oai.configure_step(comp, values), comp.configure_timeout(values), expect_configure),
             ("start (gate)", gate_step(comp, config, "started"), 120, expect_started)]
    if name == "enb" and config.get("ue-imsi"):
        v = ue.values(config)
        steps.append(("ue-attach", ue.attach_step(v), v.timeout + 60, expect_attach))
    if name == "gnb" and config.get("ue-imsi"):
        nv = nrue.values(config)
        steps.append(("ue-attach (nrUE)", nrue.attach_step(nv), nv.timeout + 60, expect_attach))
    return values, steps


def expect_component(report, results, run):
    got = dict(r.split(" ", 1) for r in report.of("COMPONENT") if " " in r)
    return True, "installed {}, configured {}".format(got.get("installed"), got.get("configured"))


def expect_install(report, results, run):
    state = results.get("state")
    ok = state == ("built" if run == 1 else "unchanged")
    return ok, "state {} commit {}".format(state, results.get("commit", "")[:12])


def expect_configure(report, results, run):
    changed = results.get("changed", "")
    ok = changed != "none" if run == 1 else changed == "none"
    return ok, "changed " + (" ".join(os.path.basename(w) for w in changed.split()) or "?")


def expect_started(report, results, run):
    service = dict(r.split(" ", 1) for r in report.of("COMPONENT") if " " in r).get("service", "")
    ok = service == ("starting" if run == 1 else "running")
    return ok, "service " + service


def expect_attach(report, results, run):
    return bool(results.get("ip")), "UE {} on {}".format(results.get("ip"), results.get("interface"))


def check_pins(outcome, box, comp, run):
    """Every pinned submodule at its pin after the install (OAI's helper has run by then)."""
    for path, commit, _ in comp.submodule_pins:
        head = box.vnf.exec(["git", "-C", "{}/{}".format(comp.source_dir, path), "rev-parse", "HEAD"],
                            check=False).stdout.strip()
        outcome.add(run, "pin " + path.rsplit("/", 1)[-1], 0, head == commit, "at {}".format(head[:12] or "?"))


def check_certificates(outcome, box, comp):
    """The S6a TLS files OAI's scripts made on the fresh VNF (check_mme_s6a_certificate, make_certs.sh)."""
    listing = box.vnf.exec(["bash", "-c", "cd {}/freeDiameter 2>/dev/null && ls *.pem".format(oai.PREFIX)],
                           check=False).stdout.split()
    ok = any(p.endswith("cert.pem") for p in listing) and any(p.endswith("key.pem") for p in listing)
    outcome.add("-", "S6a certificates", 0, ok, " ".join(listing) or "none")


def check_outputs(outcome, sandbox, comp, values, extra_files):
    for dst in [e["dst"] for e in comp.render_spec(values)["files"]] + extra_files:
        text = sandbox.read(dst)
        if text is None:
            outcome.add("-", "file " + dst, 0, False, "missing on the VNF")
            continue
        left = sorted(set(TOKEN.findall(text)))
        if left:
            outcome.add("-", "file " + dst, 0, False, "placeholders left: " + " ".join(left))
            continue
        base = os.path.basename(dst)
        if base.endswith(".conf") and "/freeDiameter/" not in dst:
            error = libconfig.parse(text)
            outcome.add("-", "file " + dst, 0, error is None, "libconfig: " + (error or "parsed"))
        elif base.endswith(".json"):
            try:
                json.loads(text)
                outcome.add("-", "file " + dst, 0, True, "JSON parsed")
            except ValueError as e:
                outcome.add("-", "file " + dst, 0, False, "JSON: {}".format(e))
        elif base.endswith(".yaml") and dst.startswith(oai.PREFIX + "/"):   # a CN5G NF's generated file
            try:
                yaml.safe_load(text)
                outcome.add("-", "file " + dst, 0, "interface_name" in text, "YAML parsed, interfaces named")
            except yaml.YAMLError as e:
                outcome.add("-", "file " + dst, 0, False, "YAML: {}".format(e))
        else:
            outcome.add("-", "file " + dst, 0, True, "rendered, no placeholder left")


def run_component(name, comp, config, src_root, workdir, secrets):
    outcome = Outcome(name)
    served = serve_sources(os.path.join(workdir, "served"), src_root, [(name, comp)])
    values, steps = chain(name, comp, config)
    with Sandbox(os.path.join(workdir, "vnf"), served, builds([(name, comp)]), comp.ubuntu) as box:
        for run in (1, 2):
            for label, step, timeout, check in steps:
                started = time.monotonic()
                try:
                    rc, out, err = box.run(step, int(timeout))
                except ssh.SshError as e:
                    outcome.add(run, label, time.monotonic() - started, False, str(e) + diagnosis(box, name))
                    continue
                seconds = time.monotonic() - started
                try:
                    report = vnfscript.parse(out, rc, err)
                except vnfscript.StepError as e:
                    outcome.add(run, label, seconds, False, oai.redact(str(e) + diagnosis(box, name), secrets))
                    continue
                ok, detail = check(report, oai.step_results(report).results, run)
                outcome.add(run, label, seconds, ok and rc == 0, oai.redact(detail, secrets))
            check_pins(outcome, box, comp, run)
            if run == 1:
                extra = [oai.STATE_DIR + "/ue.conf"] if name == "enb" and config.get("ue-imsi") else []
                extra += [nrue.SIM_FILE] if name == "gnb" and config.get("ue-imsi") else []
                extra += [mysql.INIT_FILE] if name == "mysql" else []
                check_outputs(outcome, box, comp, values, extra)
                if name in ("hss", "mme"):
                    check_certificates(outcome, box, comp)
        outcome.calls = box.read("/var/log/oai-standin/calls.log") or ""
    outcome.missing, outcome.unmirrored = served.missing, served.unmirrored if comp.fetch_submodules else {}
    outcome.submodules = comp.fetch_submodules
    return outcome


def diagnosis(box, name):
    """The last lines of the VNF's logs of the component, for a failed step."""
    text = box.vnf.exec(["bash", "-c", "tail -n 8 /var/log/vpnaas/oai-{}-build.log /var/log/vpnaas/oai-submodules.log "
                         "2>/dev/null".format(name)], check=False).stdout
    return " | " + " / ".join(line.strip() for line in text.splitlines() if line.strip())


def print_outcome(outcome):
    print("executed {}: {} checks, {} failed".format(outcome.component, outcome.checks, outcome.failures))
    for run, label, seconds, verdict, detail in outcome.rows:
        print("  {:4} run {:1} {:34} {:6.1f}s  {}".format(verdict, run, label[:34], seconds,
                                                          detail if verdict != "ok" else detail[:150]))
    for name, entries in sorted(outcome.missing.items()):
        for commit, paths in sorted(set((c, tuple(p)) for c, p in entries)):
            print("  note  {} @ {}: not in the mirror, left out of the checkout: {}".format(
                name, commit[:12], ", ".join(paths)))
    for sub, url in sorted(outcome.unmirrored.items()):
        print("  note  submodule {} ({}): no repository in OAI_SRC, not fetched".format(sub, url))
    if not getattr(outcome, "submodules", True):
        print("  note  submodules: oai-install fetches none (the component builds none of them)")
    stood = sorted({line.split("\t", 1)[0] for line in outcome.calls.splitlines() if line})
    print("  note  stand-ins called: " + (", ".join(stood) or "none"))


def execute(components, configs, src_root, secrets):
    """Run every component's chain; returns the outcomes."""
    outcomes = []
    with tempfile.TemporaryDirectory(prefix="oai-exec-") as tmp:
        for name, comp in components:
            try:
                outcome = run_component(name, comp, configs[name], src_root, os.path.join(tmp, name), secrets)
            except SandboxError as e:
                outcome = Outcome(name)
                outcome.add("-", "sandbox", 0, False, str(e))
                outcome.missing, outcome.calls, outcome.unmirrored = {}, "", {}
            print_outcome(outcome)
            outcomes.append(outcome)
    return outcomes
