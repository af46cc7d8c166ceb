"""The pure parts of the conformance check: reading the charms' shipped scripts, and matching what
they use against text of OAI's sources. No git, no files: text in, findings out."""
import re

TOKEN = re.compile(r"@[A-Za-z][A-Za-z0-9_-]*@")


def placeholder_report(template, tokens):
    """(placeholders the template has and the charm leaves unfilled, values for placeholders the
    template does not have). ``template`` is the text after the charm's edits."""
    present = set(TOKEN.findall(template))
    return sorted(present - set(tokens)), sorted(set(tokens) - present)


def edit_counts(template, edits):
    """[(what, matches, declared count)] for edits that do not match exactly as often as declared
    (a count of 1 that matches twice would silently leave the second place alone)."""
    out = []
    for edit in edits:
        n = len(re.findall(edit["pattern"], template, flags=re.S if "s" in edit.get("flags", "") else 0))
        count = edit.get("count", 0)
        required = edit.get("required", True) and "required_if_shared" not in edit
        if (count and n != count and (n or required)) or (required and n == 0):
            out.append((edit["what"], n, count))
    return out


def function_body(script, name):
    match = re.search(r"^{}\(\) \{{[^\n]*\n(.*?)^\}}".format(re.escape(name)), script, re.S | re.M)
    return match.group(1) if match else ""


def expand_helper_calls(install_sh, body):
    """A build function that is one call of a shared helper (``cn5g_build "$1" "$2" SMF smf``) is
    that helper's body with the call's arguments put in."""
    call = re.fullmatch(r'\s*([a-z_0-9]+) "\$1" "\$2" ([^\n]*?)\s*', body)
    if not call or not function_body(install_sh, call.group(1)):
        return body
    words = ["$1", "$2"] + call.group(2).split()
    out = function_body(install_sh, call.group(1))
    for i in range(len(words), 2, -1):
        out = out.replace("${}".format(i), words[i - 1])
    return out


def build_commands(install_sh, component):
    """[(script path in the tree, [words])] that ``oai_build_<component>`` runs."""
    body = expand_helper_calls(install_sh, function_body(install_sh, "oai_build_" + component))
    body = body.replace("\\\n", " ")
    out = []
    for line in body.splitlines():
        for m in re.finditer(r"(?:cd (\S+) && )?\./([\w./-]+)([^'\"\n]*)", line):
            folder, script, rest = m.group(1), m.group(2), m.group(3)
            path = "{}/{}".format(folder, script) if folder else script
            out.append((path, rest.split()))
    return out


def case_flag_known(script_text, flag):
    """A flag handled by a `case` label of a build script (``-c | --clean)``)."""
    return re.search(r"(^|[\s(|]){}\s*(\||\))".format(re.escape(flag)), script_text, re.M) is not None


def flag_findings(script_text, words):
    """Flags without a case label, values the script does not name."""
    bad = []
    for w in words:
        if w.startswith("-"):
            if not case_flag_known(script_text, w):
                bad.append("option {} is not handled".format(w))
        elif not re.search(r"\b{}\b".format(re.escape(w)), script_text):
            bad.append("value {} is not accepted".format(w))
    return bad


GETOPT = re.compile(r"getopt(?:_long)?\s*\([^;]*?,\s*\"([A-Za-z0-9:]*)\"|char\s+\w+\[\]\s*=\s*\"([A-Za-z0-9:]*)\"")
LONG = re.compile(r"\{\s*\"([A-Za-z0-9_-]+)\"\s*,")


def option_known(sources_text, option):
    """A program option in getopt strings, long-option or parameter tables, or a literal."""
    if option.startswith("--"):
        name = option[2:]
        return name in LONG.findall(sources_text)
    letter = option[1:]
    strings = [a or b for a, b in GETOPT.findall(sources_text)]
    if len(letter) == 1 and any(letter in s.replace(":", "") for s in strings):
        return True
    # OAI's configuration module: single-letter names in its parameter tables are -X options.
    return ('"{}"'.format(option) in sources_text or letter in LONG.findall(sources_text)
            or "[1] == '{}'".format(letter) in sources_text)


def argparse_known(script_text, option):
    return "'{}'".format(option) in script_text or '"{}"'.format(option) in script_text


def options_in(shell_text, anchor):
    """The options on the command lines of ``shell_text`` that follow ``anchor`` (e.g. a program)."""
    out = []
    text = shell_text.replace("\\\n", " ")
    for m in re.finditer(re.escape(anchor) + r"([^)|\n]*)", text):
        out += [w for w in m.group(1).split() if w.startswith("-") and not w.startswith("->")]
    return out


PULL = re.compile(r"git submodule foreach (?:--recursive )?git pull(?: -q)? origin ([A-Za-z0-9._/-]+)")
PLAIN_PULL = re.compile(r"^\s*git pull(?: -q)? origin ([A-Za-z0-9._/-]+)", re.M)
ENTER = re.compile(r"(?:pushd|cd)\s+\S*git_submodules/([A-Za-z0-9._-]+)")


def submodule_pulls(path, text):
    """[(file, line number, submodule name or '*', branch, line)] of the pulls in a helper."""
    out = []
    current = None
    for i, line in enumerate(text.splitlines(), 1):
        enter = ENTER.search(line)
        if enter:
            current = enter.group(1)
        if re.match(r"^\s*\}", line) or re.match(r"^\s*popd", line):
            current = None
        if re.match(r"^\s*echo\b", line):
            continue
        m = PULL.search(line)
        if m:
            out.append((path, i, "*", m.group(1), line.strip()))
            continue
        m = PLAIN_PULL.search(line)
        if m and current:
            out.append((path, i, current, m.group(1), line.strip()))
    return out


def patch_applications(path, text):
    """[(submodule, patch path)] where a helper enters a submodule and applies one of OAI's patches."""
    out = []
    current = None
    for line in text.splitlines():
        enter = ENTER.search(line)
        if enter:
            current = enter.group(1)
        if re.match(r"^\s*\}", line):
            current = None
        m = re.search(r"patch\s+-p1\s+(?:-[A-Za-z]+\s+)*<\s*\$\w+/(\S+\.patch)", line)
        if m and current and "-R" not in line:
            out.append((current, m.group(1)))
    return sorted(set(out))


def pull_pattern(oai_lib_sh):
    """The ERE the charm rewrites pulls with (OAI_PULL_PATTERN in oai-lib.sh), as a Python regex."""
    m = re.search(r"^OAI_PULL_PATTERN='([^']+)'", oai_lib_sh, re.M)
    return re.compile(m.group(1)) if m else None


RELATIVE = re.compile(r"=\s*\"([A-Za-z_][\w.-]*/[\w./-]+)\"|:\s*\"([A-Za-z_][\w.-]*/[\w./-]+)\"")


def relative_paths(text):
    """String values that are relative paths (``logs/hss.log``): they depend on the start folder."""
    return sorted({a or b for a, b in RELATIVE.findall(text)})


def check_sim_templates(report, comp, tree, renderer, files, check_output, what):
    """A UE's SIM files (``files``: a sim_spec's entries) against OAI's tree: each template exists
    at the ref, each declared edit matches as often as declared, and the render passes
    ``check_output``. ``what`` names the UE in the report ("UE", "nrUE")."""
    for entry in files:
        template = tree.read(entry["src"][len(comp.source_dir) + 1:])
        if template is None:
            report.line("MISMATCH", "{} template {} does not exist".format(what, entry["src"]))
            continue
        for edit, n, count in edit_counts(template, entry["edits"]):
            report.line("MISMATCH", "{}: edit '{}' matches {} time(s), declared {}".format(
                entry["dst"], edit, n, count))
        try:
            check_output(report, comp, entry["dst"], renderer.render_text(entry, template, [], {}))
        except renderer.RenderError as e:
            report.line("MISMATCH", "render: {}".format(e))
