"""Execute the CN5G network functions' own configuration readers over every file the charms
generate (`make oai-conformance`, issue 35).

For the AMF, SMF and UPF, the NF's own YAML reading code (its config classes and the common
config code of the ``common-src`` submodule) is compiled with a small driver of ours
(readers/<nf>.cpp, nfbuild.py) that does what the NF's main() does with the file: read it, check
it, convert it into the structure the NF runs on, display it. The driver runs in a network
namespace of its own whose loopback carries the NF's service addresses under the labels the
charm gives them (the NFs read their interfaces' addresses from the kernel), over the file the
charm's own renderer (vnf/oai/render.py) produced. A run fails on an exception, on a warning or
error the reader logs (OAI's config code catches what yaml-cpp throws and only warns: that is
how the UPF lost its ``smfs`` and ``upf_info``), and on a value the NF did not take from the file
(a dropped section): each NF's view is compared with the values the charm wrote.

Where the trees come from: OAI_SRC/<nf> at the pinned commit, or a stand-in named by
OAI_SRC/readers/<nf>.source (``<repository> <commit> <folder>``, made by layout.py
``reader:<nf>=...``); a tree without the content of its common-src submodule takes it from
OAI_SRC/readers/<nf>-common-src.source. Each tree is reported with its commit and, for a stand-in,
why it stands in (STAND_INS). Every case (cases.py) is run: the charm defaults with the
conformance params, with each 5G params file of the bundle, and at the largest values the
charms' grammar accepts.
"""
import json
import os
import re
import shlex
import subprocess
import tempfile

from oai_conformance import nfbuild
from oai_conformance.source import SourceError, Tree
from vpnaas.core import refpoints
from vpnaas.oai.cn5g import common as cn5g_common

NFS = ("amf", "smf", "upf")
#: Known copies that stand in for a tree at the pinned commit, by (nf, commit of the copy, folder).
STAND_INS = {
    ("upf", "4474743200d7e728fcfae46084aec2b4a16eec4f", "component/oai-upf"): (
        "the UPF at the pinned commit 93cab8f2 itself, as a copy: turletti/5g_slicing holds OAI's "
        "federation repository (develop of 2024-03..05: its docs, CI and compose files match most closely "
        "oai-cn5g-fed f8c5f2bc..1fc40b93) with every submodule's files at the commit that "
        "repository records, which for the UPF is 93cab8f2 (v2.0.0 and v2.0.1 alike); its "
        "src/common-src is the copy of the common-src commit that UPF records"),
    ("amf", "4474743200d7e728fcfae46084aec2b4a16eec4f", "component/oai-amf"): (
        "the AMF v2.0.1 (2c31091d, what oai-cn5g-fed records for v2.0.1 and after), one release after "
        "the pinned 1386199e (v2.0.0), with its common-src: no copy of the AMF at 1386199e or of "
        "its common-src could be found; v2.0.1's AMF changes (CHANGELOG) drop the libconfig reader "
        "and touch NAS, NGAP and SBI, not the YAML keys the charm writes"),
    ("smf-common-src", "4474743200d7e728fcfae46084aec2b4a16eec4f", "component/oai-upf/src/common-src"): (
        "the common-src the UPF 93cab8f2 records (same v2.0.0 release as the SMF f499edf0, whose "
        "common-src 411ea563 has no public copy; the SMF's own reader compiles against it unchanged)"),
}
#: Warnings a reader logs whatever the file says (each cited); every other warning fails.
BENIGN = [
    # smf_config.cpp, to_smf_config(): logged unconditionally after the loop over the UPFs.
    "Enable UR and enable DL PDR in PFCP Session Establishment per UPF is not supported currently",
]
LOG_PROBLEM = re.compile(r"\[(warning|error|critical)\]|terminate called|Segmentation|Aborted")


class ReaderTree(object):
    def __init__(self, nf, folder, label):
        self.nf = nf
        self.folder = folder
        self.label = label


def _source_line(src_root, name):
    path = os.path.join(src_root, "readers", name + ".source")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        words = f.read().split()
    if len(words) not in (2, 3):
        raise SourceError("{}: expected '<repository> <commit> [<folder>]'".format(path))
    return words[0], words[1], words[2] if len(words) == 3 else ""


def _extract(repo, commit, folder, target):
    """``folder`` of ``repo`` at ``commit`` into ``target`` (kept between runs: keyed by commit)."""
    if os.path.isdir(target):
        return
    tree = Tree(repo, commit)
    tmp = target + ".tmp"
    subprocess.run(["rm", "-rf", tmp], check=True)
    os.makedirs(tmp)
    with tempfile.TemporaryFile() as f:
        cmd = ["git", "-C", tree.path, "archive", "--format=tar", tree.commit] + ([folder] if folder else [])
        subprocess.run(cmd, stdout=f, check=True)
        f.seek(0)
        subprocess.run(["tar", "-x", "-C", tmp] + (["--strip-components", str(folder.count("/") + 1)]
                                                    if folder else []), stdin=f, check=True)
    os.rename(tmp, target)


def _label(key, repo, commit, folder):
    why = STAND_INS.get((key, commit, folder))
    name = os.path.normpath(repo)
    name = os.path.basename(os.path.dirname(name) if os.path.basename(name) in ("repo", ".git") else name)
    where = "{} @ {}{}".format(name, commit[:12], " " + folder if folder else "")
    return "{} -- {}".format(where, why) if why else "{} -- a stand-in not identified by this check".format(where)


def reader_tree(nf, src_root, work):
    """The NF's tree for its reader (extracted under ``work``), or None with the reason."""
    given = _source_line(src_root, nf)
    if given:
        repo, commit, folder = given
        commit = Tree(repo, commit).commit
        label = "stand-in: " + _label(nf, repo, commit, folder)
    elif os.path.exists(os.path.join(src_root, nf)):
        repo, commit, folder = os.path.join(src_root, nf), cn5g_common.COMMITS[nf], ""
        commit = Tree(repo, commit).commit
        label = "the pinned tree {}".format(commit[:12])
    else:
        return None, "no tree for its reader in OAI_SRC ({}/ or readers/{}.source)".format(nf, nf)
    target = os.path.join(work, "{}-{}".format(nf, commit[:12]))
    _extract(repo, commit, folder, target)
    filled = os.path.join(target, ".vpnaas-common-src")   # the provenance of a common-src filled in
    if os.path.exists(filled):
        with open(filled) as f:
            label += f.read()
    try:
        nfbuild.common_src(target)
    except nfbuild.BuildError:
        common = _source_line(src_root, nf + "-common-src")
        if common is None:
            return None, "its common-src submodule is empty and OAI_SRC names no copy (readers/{}-common-src.source)" \
                .format(nf)
        crepo, ccommit, cfolder = common
        ccommit = Tree(crepo, ccommit).commit
        inner = os.path.join(target, "src", "oai-cn5g-common-src" if nf == "smf" else "common-src")
        subprocess.run(["rm", "-rf", inner], check=True)
        _extract(crepo, ccommit, cfolder, inner)
        with open(filled, "w") as f:
            f.write("; common-src: " + _label(nf + "-common-src", crepo, ccommit, cfolder))
        with open(filled) as f:
            label += f.read()
    return ReaderTree(nf, target, label), None


def render(comp, values, renderer):
    """(file text, [(label, address)]): the NF's file as the VNF's renderer writes it, on a VNF
    whose service addresses sit on lo with the charm's labels (vnf/tunnels.sh: lo:vpnaas-<rp>)."""
    entry = comp.render_spec(values)["files"][0]
    addrs = [("lo:vpnaas-" + refpoints.address_label(rp), ip) for rp, ip in comp.own_addresses(values).items()
             if rp in comp.interfaces]
    return renderer.render_text(entry, entry["content"], addrs, {"N6": "lo"}), addrs


def run_reader(binary, text, addrs, timeout=60):
    """(exit status, output) of the reader over ``text`` in a network namespace of its own."""
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(text)
    try:
        setup = ["ip link set lo up"] + ["ip addr add {}/32 dev lo label {}".format(ip, shlex.quote(label))
                                         for label, ip in addrs]
        script = " && ".join(setup) + " && exec {} {}".format(shlex.quote(binary), shlex.quote(f.name))
        unshare = ["unshare", "--net"] if os.geteuid() == 0 else ["unshare", "-rn"]
        try:
            result = subprocess.run(unshare + ["sh", "-c", script], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    timeout=timeout)
        except subprocess.TimeoutExpired:
            return 124, "the reader did not finish in {} s".format(timeout)
        return result.returncode, result.stdout.decode("utf-8", "replace")
    finally:
        os.unlink(f.name)


def problems_in(output):
    """The reader's log lines that show a problem (an exception it caught and logged, a failed
    validation), the cited benign ones left out."""
    return [line for line in output.splitlines()
            if LOG_PROBLEM.search(line) and not any(b in line for b in BENIGN)]


def view_of(output):
    for line in output.splitlines():
        if line.startswith("VIEW "):
            return json.loads(line[5:])
    return None


def redact(text, secrets):
    for secret in secrets:
        if secret:
            text = text.replace(secret, "<redacted>")
    return text


def check_case(report, nf, comp, binary, config, case, renderer, secrets):
    """One reader run: its exit, its log, and each expectation of expect.py."""
    from oai_conformance import expect

    values = comp.config_values(config, None)
    text, addrs = render(comp, values, renderer)
    status, output = run_reader(binary, text, addrs)
    output = redact(output, secrets)
    where = "{} reader, {}".format(nf, case)
    problems = problems_in(output)
    view = view_of(output)
    if status != 0 or view is None or problems:
        shown = problems or output.strip().splitlines()[-3:]
        report.line("MISMATCH", "{}: {} (exit {}): {}".format(where, "the reader logged a problem" if problems
                                                             else "the reader failed", status, " | ".join(shown)))
        return
    wrong = [(what, got, want) for what, got, want in expect.CHECKS[nf](values, view) if got != want]
    for what, got, want in wrong:
        report.line("MISMATCH", "{}: {} is {!r}, the charm wrote {!r} (dropped or changed)".format(
            where, what, redact(repr(got), secrets), redact(repr(want), secrets)))
    if not wrong:
        report.line("ok", "{}: read without an exception or warning; {} values as written".format(
            where, len(expect.CHECKS[nf](values, view))))


def check_readers(report, components, src_root, work, renderer, yaml_cpp=None):
    """Build each NF's reader and run it over every case (cases.py); UNCHECKED where no tree.
    ``yaml_cpp``: an install prefix of the yaml-cpp to link (default: the system's)."""
    from oai_conformance import cases

    all_cases = cases.all_cases(NFS)
    for nf in NFS:
        comp = components[nf]
        try:
            tree, why = reader_tree(nf, src_root, os.path.join(work, "trees"))
        except (SourceError, subprocess.CalledProcessError) as e:
            tree, why = None, str(e)
        if tree is None:
            report.line("UNCHECKED", "{}: its own configuration reader NOT RUN: {}".format(nf, why))
            continue
        print("{} reader: {}".format(nf, tree.label))
        version = nfbuild.yaml_cpp_version(yaml_cpp)
        try:
            binary, used = nfbuild.build_reader(nf, tree.folder, os.path.join(work, "build", "{}-yaml-cpp-{}".format(
                os.path.basename(tree.folder), version)), yaml_cpp)
        except nfbuild.BuildError as e:
            report.line("MISMATCH", "{}: its configuration reader did not build: {}".format(nf, str(e)[-1500:]))
            continue
        report.line("ok", "{}: reader built from {} of its files, linked with yaml-cpp {}".format(nf, len(used),
                                                                                                version))
        for case, configs in all_cases:
            config = configs.get(nf)
            if config is None:
                continue
            secrets = [config.get("db-password")]
            check_case(report, nf, comp, binary, config, case, renderer, secrets)

