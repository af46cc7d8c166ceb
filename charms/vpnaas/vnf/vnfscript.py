"""VNF-side steps as files shipped in the charm: how they are sent over SSH and read back.

A step is a program made of the shell library ``vnf/lib.sh``, the step's own files from
``vnf/`` and a few fixed call lines (``tunnels_main "$1"``) written here, never from a value.
The values travel as positional arguments of the remote command, each shell-quoted and checked
to be one printable word or text without control characters; secrets travel in a data section
after the program's ``exit`` (read by ``secret NAME``), so they are neither on a command line
(visible in ``ps``) nor in the program text. Bulky values whose size grows with the number of
peers (a hub's WireGuard configuration) travel in the same data section (``Step.data``, read by
``data_item NAME``): the program comes on stdin, which has no size limit, while sshd hands the
command line to the shell as one argument of at most 128 KiB. Texts of any lines (a WireGuard
configuration, a route list, the exporter's source) travel there as they are (``Step.text``,
read by ``data_text VAR NAME`` with no program: a base64 value cost a ``base64 -d`` on the VNF,
seven in every tunnel step). The program is saved to a private temporary file
on the VNF and run with stdin from /dev/null, so no program it starts can swallow its text.

The report is line based: ``KEYWORD rest``. ``ERROR text`` ends the step with a failure and the
step's last line is ``DONE``; everything else is the step's own vocabulary.
"""
import base64
import os
import re
import shlex
from typing import Dict, Iterable, List, Optional, Tuple

#: The VNF-side files: the shell tree beside this module (vpnaas/vnf/).
VNF_DIR = os.path.dirname(os.path.abspath(__file__))
LIBRARY = "lib.sh"
DATA_MARKER = "__VPNAAS_DATA__"
#: sshd hands the command line to the login shell as one argument (at most 128 KiB on Linux).
MAX_COMMAND = 96 * 1024
#: The program (with its data section) comes on stdin; this only bounds what a hostile or runaway
#: plan can make the charm send: a hub with a thousand peers needs well under a megabyte.
MAX_PROGRAM = 16 * 1024 * 1024
_SAFE_ARG = re.compile(r"[\x20-\x7e]*")
_FUNCTION = re.compile(r"[a-z_][a-z0-9_]*")
_SECRET_NAME = re.compile(r"[A-Z][A-Z0-9_]*")


class ScriptError(ValueError):
    """A step could not be built (a value that is not fit for an argument, a missing file)."""


#: A step file's part (``tunnels.sh``: ``source "$VPNAAS_PARTS/tunnels/devices.sh"``): ``load``
#: puts the part's text in place of the line, so the VNF gets one program and reads no file of
#: ours; shellcheck follows the same line (its ``# shellcheck source=`` directive).
_PART = re.compile(r'^source "\$VPNAAS_PARTS/([A-Za-z0-9_./-]+)"$', re.M)


def load(name: str, _depth: int = 0) -> str:
    """The text of a shipped VNF-side file (``vnf/<name>``), its parts put in place."""
    path = os.path.join(VNF_DIR, name)
    if os.path.dirname(os.path.normpath(name)).startswith("..") or os.path.isabs(name):
        raise ScriptError("not a VNF script name: {}".format(name))
    if _depth > 4:
        raise ScriptError("parts nested too deep at {}".format(name))
    with open(path) as f:
        text = f.read()
    return _PART.sub(lambda m: load(m.group(1), _depth + 1).rstrip("\n"), text)


class Step(object):
    """A program (library + files + call lines) and its arguments."""

    def __init__(self, files: Iterable[str]) -> None:
        self.files = list(files)
        self.calls: List[Tuple[str, int, int]] = []  # (function, first argument index, count)
        self.args: List[str] = []
        self.secrets: Dict[str, str] = {}
        self.blobs: Dict[str, str] = {}
        self.texts: Dict[str, str] = {}
        #: Each call reports how long it took (``TIMING <function> <start> <end>``; hookclock.py).
        self.timed = False

    def call(self, function: str, *args: object) -> "Step":
        """Add a call ``function "$i" "$j" ...``: the function name is code, the args are values."""
        if not _FUNCTION.fullmatch(function):
            raise ScriptError("not a function name: {!r}".format(function))
        for value in args:
            _check_arg(value)
        self.calls.append((function, len(self.args) + 1, len(args)))
        self.args.extend(str(a) for a in args)
        return self

    def secret(self, name: str, value: str) -> "Step":
        if not _SECRET_NAME.fullmatch(name):
            raise ScriptError("not a secret name: {!r}".format(name))
        if "\n" in value or "\r" in value or "\0" in value:
            raise ScriptError("secret {} contains a line break".format(name))
        self.secrets[name] = value
        return self

    def data(self, name: str, value: str) -> "Step":
        """A value for the data section that is not secret, only large (read by ``data_item``)."""
        if not _SECRET_NAME.fullmatch(name) or name in self.secrets or name in self.texts:
            raise ScriptError("not a data name: {!r}".format(name))
        if "\n" in value or "\r" in value or "\0" in value:
            raise ScriptError("data {} contains a line break".format(name))
        self.blobs[name] = value
        return self

    def text(self, name: str, value: str) -> "Step":
        """A text for the data section, line breaks and all (read by ``data_text VAR NAME`` into a
        variable, byte for byte, by bash alone). Not for secrets: ``secret``."""
        if not _SECRET_NAME.fullmatch(name) or name in self.secrets or name in self.blobs:
            raise ScriptError("not a data name: {!r}".format(name))
        if "\0" in value:
            raise ScriptError("text {} contains a NUL character".format(name))
        self.texts[name] = value
        return self

    def program(self) -> str:
        parts = [load(LIBRARY)] + [load(name) for name in self.files]
        for function, first, count in self.calls:
            parts.append(" ".join((["vpnaas_timed"] if self.timed else []) + [function]
                                  + ['"${{{}}}"'.format(i) for i in range(first, first + count)]))
        parts.append("out DONE")
        parts.append("exit 0")
        text = "\n".join(parts) + "\n"
        section = dict(self.blobs, **self.secrets)
        if section or self.texts:
            data = "".join("{}={}\n".format(k, v) for k, v in sorted(section.items()))
            # A text: "NAME:<n>" and its n lines (lib.sh vpnaas_data_index skips them by the count).
            for k, v in sorted(self.texts.items()):
                lines = v.split("\n")
                data += "{}:{}\n".format(k, len(lines)) + "".join(line + "\n" for line in lines)
            encoded = base64.b64encode(data.encode("utf-8")).decode("ascii")
            text += DATA_MARKER + "\n" + "\n".join(encoded[i:i + 76] for i in range(0, len(encoded), 76)) + "\n"
        if len(text) > MAX_PROGRAM:
            raise ScriptError("the step is {} bytes (at most {})".format(len(text), MAX_PROGRAM))
        return text

    def command(self, username: str, timeout: Optional[int] = None) -> str:
        """The command line of the SSH session; the program comes on stdin.

        ``timeout`` stops the step on the VNF too (closing the channel alone would leave it
        running and racing the next one). The SSH client's address (SSH_CONNECTION, set by
        sshd) is handed to the step as VPNAAS_SSH_CONNECTION, since sudo drops the variable."""
        runner = 'bash "$f" "$@" </dev/null'
        if timeout:
            runner = "timeout -k 5 {} {}".format(int(timeout), runner)
        inner = 'f=$(mktemp) && cat > "$f" && {}; rc=$?; rm -f "$f"; exit $rc'.format(runner)
        prefix = "" if username == "root" else "sudo -n "
        words = [prefix + 'env VPNAAS_SSH_CONNECTION="$SSH_CONNECTION" bash -c', shlex.quote(inner), "vpnaas"]
        line = " ".join(words + [shlex.quote(a) for a in self.args])
        if len(line) > MAX_COMMAND:
            raise ScriptError("the step's arguments are {} bytes (at most {})".format(len(line), MAX_COMMAND))
        return line


def data_section(program: str) -> Dict[str, str]:
    """The data section of a program (``Step.program``) as the VNF reads it: every ``data`` value,
    secret and text by its name (the tests' view of what a step carries)."""
    section = program.rpartition("\n" + DATA_MARKER + "\n")[2] if ("\n" + DATA_MARKER + "\n") in program else ""
    lines = base64.b64decode("".join(section.split())).decode("utf-8").split("\n")[:-1] if section else []
    out: Dict[str, str] = {}
    i = 0
    while i < len(lines):
        name, sep, rest = lines[i].partition("=")
        if sep and _SECRET_NAME.fullmatch(name):
            out.setdefault(name, rest)
            i += 1
            continue
        name, _, count = lines[i].partition(":")
        n = int(count)
        out[name] = "\n".join(lines[i + 1:i + 1 + n])
        i += 1 + n
    return out


def _check_arg(value: object) -> str:
    text = str(value)
    if not _SAFE_ARG.fullmatch(text):
        raise ScriptError("an argument contains a control or non-ASCII character")
    return text


def b64(text: str) -> str:
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


class StepError(Exception):
    """The step reported ERROR or ended without DONE."""


class Report(object):
    """The lines of a step's report, in order, as (keyword, rest)."""

    def __init__(self, lines: List[Tuple[str, str]]) -> None:
        self.lines = lines

    def of(self, keyword: str) -> List[str]:
        return [rest for kind, rest in self.lines if kind == keyword]


_KEYLIKE = re.compile(r"[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=")


def scrub(text: str) -> str:
    """Remote text with anything shaped like a WireGuard key replaced (wg echoes a value it cannot
    parse) and control characters removed: such text ends up in logs and the unit status."""
    text = _KEYLIKE.sub("<key>", text)
    return "".join(ch if " " <= ch <= "~" else " " for ch in text)


def parse(text: str, rc: int = 0, stderr: str = "") -> Report:
    """Read a report. Raises StepError on ``ERROR`` or when ``DONE`` is missing; ``rc`` and
    ``stderr`` only make that message precise.

    Lines end at "\n" only, as the VNF writes them (``str.splitlines`` would also end one at
    characters such as \x1c or \u2028 inside a remote value, and make a line of what follows);
    what is kept of remote text in a message is cut before it is scrubbed."""
    lines = []
    finished = False
    pieces = text.split("\n")
    if pieces[-1] == "":
        pieces.pop()     # after the last line's "\n"
    for line in pieces:
        kind, _, rest = line.partition(" ")
        if kind == "ERROR":
            raise StepError(scrub(rest[:364])[:300])
        if kind == "DONE":
            finished = True
            continue
        lines.append((kind, rest))
    if not finished:
        last = _last_line(stderr) or _last_line(text) or "no output"
        raise StepError("the remote step ended early (exit {}): {}".format(rc, scrub(last[-264:])[-200:]))
    return Report(lines)


def _last_line(text: str) -> str:
    return text.rstrip()[-4096:].split("\n")[-1].strip()
