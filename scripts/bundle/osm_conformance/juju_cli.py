"""The `juju` command lines of the corpus through Juju's own command-line parsing.

    make osm-conformance OSM_SRC=<dir> JUJU_SRC="<juju tree> [<juju tree> ...]"
    make juju-conformance JUJU_SRC="<juju tree> ..."        (this part alone, no OSM sources)

A Juju tree is a github.com/juju/juju source tree at the version to check (a git checkout, or
the module directory `go mod download -json github.com/juju/juju@<pseudo-version>` names). Our
driver, juju_parse.go beside this file, is built from inside that tree (its go.mod pins every
import; `go` must be on PATH and reach the module proxy or a filled module cache) and runs each
line through Juju's own SuperCommand, flag parsing, model wrapper and the command's Init, with
no controller (juju_parse.go says exactly what runs).

Each line is checked twice:

* as made: a dry run's placeholders (`<model>`, `<application of 1>`) are replaced by the
  largest names our grammar accepts (deploy.upgrade: MODEL_NAME, APPLICATION_NAME);
* at the largest values: the application and model of every `juju refresh` replaced by those,
  and `-m` given as `<controller>:<model>` with the largest JUJU_CONTROLLER we accept
  (deploy.upgrade.CONTROLLER_NAME) as the client store's controller.

A real charm is put at every `--path` first (the packed charm of that name from the built VNF
packages; a path under the corpus runs' throw-away project root is moved under a scratch
directory of the same layout, and the driver runs in that directory, as the deploy tool runs
juju in the project root), so that Juju's own reader of a local charm path judges it.

Nothing here judges a line: Juju's code does (its error text is reported as is).
"""
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import tarfile

DRIVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "juju_parse.go")
PLACEHOLDER = re.compile(r"<[^<>]*>\Z")
#: The client store's controller for the lines as made (they carry no controller: the client's
#: current one is used).
DEFAULT_CONTROLLER = "osm-vca"
MODEL_FLAGS = ("-m", "--model")


def largest_values():
    """(controller, model, application): the longest names deploy.upgrade's grammar accepts, each
    using every kind of character it allows."""
    from deploy import upgrade
    model = "9" + "-z" * 31                      # 63
    application = "z" + "-a0b" * 15 + "-b"       # 63
    controller = "Z" + "._-9" * 15 + "-z"        # 63
    for pattern, value in ((upgrade.MODEL_NAME, model), (upgrade.APPLICATION_NAME, application),
                           (upgrade.CONTROLLER_NAME, controller)):
        if not pattern.match(value) or pattern.match(value + "z"):
            raise AssertionError("{!r} is not the longest value {} accepts".format(value, pattern.pattern))
    return controller, model, application


def _model_index(argv):
    return next((i + 1 for i, a in enumerate(argv[:-1]) if a in MODEL_FLAGS), None)


def as_made(argv):
    """The line with a dry run's placeholders replaced by the largest values (model after -m,
    the application elsewhere); (argv, replaced?)."""
    _controller, model, application = largest_values()
    m = _model_index(argv)
    out = [(model if i == m else application) if PLACEHOLDER.match(a) else a for i, a in enumerate(argv)]
    return out, out != list(argv)


def at_largest(argv):
    """`juju refresh`: the application, and `-m` as <largest controller>:<largest model>; other
    commands unchanged."""
    controller, model, application = largest_values()
    out = list(argv)
    if out[:1] == ["refresh"] and len(out) > 1:
        out[1] = application
    m = _model_index(out)
    if m is not None:
        out[m] = "{}:{}".format(controller, model)
    return out


def derived_corpus(corpus, how):
    """The corpus with every juju line rewritten by ``how`` (same indexes; other lines kept)."""
    commands = []
    for c in corpus["commands"]:
        if c["program"] == "juju":
            argv = how(c["argv"])
            c = dict(c, argv=argv[0] if isinstance(argv, tuple) else argv)
        commands.append(c)
    return {"commands": commands, "runs": corpus["runs"]}


def packed_charms(packages_dir):
    """{file name: bytes} of every packed charm (`charms/<name>.charm`) in the built VNF packages."""
    out = {}
    for package in sorted(glob.glob(os.path.join(packages_dir, "*_vnf.tar.gz"))):
        with tarfile.open(package, "r:*") as tar:
            for m in tar.getmembers():
                parts = m.name.split("/")
                if m.isfile() and parts[1:2] == ["charms"] and len(parts) == 3 and parts[2].endswith(".charm"):
                    out.setdefault(parts[2], tar.extractfile(m).read())
    return out


def place_charms(corpus, scratch, charms):
    """The corpus with each juju line's `--path` under the runs' root moved under ``scratch``,
    and a real charm written at every path inside ``scratch`` (relative ones are relative to
    it). Paths elsewhere are left as they are (Juju then says what it makes of them)."""
    root = corpus.get("root") or ""
    commands = []
    for c in corpus["commands"]:
        if c["program"] == "juju":
            argv = list(c["argv"])
            for i in range(len(argv) - 1):
                if argv[i] != "--path":
                    continue
                path = argv[i + 1]
                if root and path.startswith(root + os.sep):
                    argv[i + 1] = path = scratch + path[len(root):]
                target = os.path.normpath(os.path.join(scratch, path))
                if target.startswith(scratch + os.sep) and os.path.basename(target) in charms:
                    os.makedirs(os.path.dirname(target), exist_ok=True)
                    with open(target, "wb") as f:
                        f.write(charms[os.path.basename(target)])
            c = dict(c, argv=argv)
        commands.append(c)
    return dict(corpus, commands=commands)


def controls(scratch, charm):
    """Lines Juju must refuse, each with a real charm where a path is wanted: run before the
    corpus so that a driver that accepts everything cannot pass (report: "controls")."""
    os.makedirs(os.path.join(scratch, "controls"), exist_ok=True)
    path = os.path.join(scratch, "controls", "c.charm")
    with open(path, "wb") as f:
        f.write(charm)
    return [
        ["refresh", "Bad_App", "--path", path, "-m", "m1"],                      # invalid application name
        ["refresh", "app-1", "--path", path, "-m", "m1"],                        # ... (a number segment)
        ["refresh", "a", "--bogus", "--path", path, "-m", "m1"],                 # option not defined
        ["refresh", "a", "extra", "--path", path, "-m", "m1"],                   # unrecognized args
        ["refresh", "a", "--path", path, "--revision", "3", "-m", "m1"],         # mutually exclusive
        ["refresh", "a", "--path", os.path.relpath(path, scratch), "-m", "m1"],  # relative path
        ["refresh", "a", "--path", path, "-m", "Bad_Model"],                     # no such model name
        ["refresh", "a", "--path", path, "-m", "other:m1"],                      # unknown controller
        ["no-such-command", "a", "-m", "m1"],
    ]


def run_controls(binary, scratch, charm, work_dir):
    """[(argv, accepted?)] of the control lines."""
    lines = controls(scratch, charm)
    corpus_path = os.path.join(work_dir, "corpus-juju-controls.json")
    result_path = os.path.join(work_dir, "cli-juju-controls.json")
    with open(corpus_path, "w") as f:
        json.dump({"commands": [{"program": "juju", "argv": argv} for argv in lines]}, f)
    subprocess.run([binary, "--corpus", corpus_path, "--out", result_path, "--controller", DEFAULT_CONTROLLER],
                   check=True, stdin=subprocess.DEVNULL, cwd=scratch)
    with open(result_path) as f:
        results = json.load(f)["results"]
    return [(lines[r["index"]], r["ok"]) for r in results]


def check_tree(juju_src):
    """Raise ValueError unless ``juju_src`` is a github.com/juju/juju tree with the refresh command."""
    mod = os.path.join(juju_src, "go.mod")
    try:
        with open(mod) as f:
            first = f.readline().split()
    except OSError as e:
        raise ValueError("{}: no go.mod (not a Juju source tree)".format(juju_src)) from e
    if first != ["module", "github.com/juju/juju"]:
        raise ValueError("{}: go.mod is not github.com/juju/juju's".format(juju_src))
    if not os.path.isfile(os.path.join(juju_src, "cmd", "juju", "application", "refresh.go")):
        raise ValueError("{}: no cmd/juju/application/refresh.go".format(juju_src))


def build_driver(juju_src, work_dir):
    """The driver built against ``juju_src`` (once per tree and driver source)."""
    check_tree(juju_src)
    with open(DRIVER, "rb") as f:
        key = hashlib.sha256(os.path.realpath(juju_src).encode() + b"\0" + f.read()).hexdigest()[:16]
    binary = os.path.join(work_dir, "juju-parse-" + key)
    if not os.path.isfile(binary):
        print("osm-conformance: building juju_parse.go against {} (go build, once)".format(juju_src), flush=True)
        env = dict(os.environ, GOFLAGS="-mod=readonly")
        subprocess.run(["nice", "-n", "10", "go", "build", "-o", binary + ".tmp", DRIVER], cwd=juju_src, env=env,
                       check=True, stdin=subprocess.DEVNULL)
        os.replace(binary + ".tmp", binary)
    return binary


def source_of(juju_src):
    """How the report names a tree: its git commit, else its directory name (a module directory
    carries its pseudo-version)."""
    try:
        out = subprocess.run(["git", "-C", juju_src, "rev-parse", "HEAD"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, universal_newlines=True, check=True).stdout.strip()
        return "{} {}".format(juju_src, out)
    except (OSError, subprocess.CalledProcessError):
        return os.path.basename(os.path.normpath(juju_src))


def run(juju_src, corpus, work_dir, packages_dir):
    """[(label, "juju", result document)] of one Juju tree: the lines as made and at the largest values."""
    work_dir = os.path.abspath(work_dir)        # the driver runs in the scratch directory
    binary = build_driver(juju_src, work_dir)
    controller, _model, _application = largest_values()
    scratch = os.path.join(work_dir, "juju-project")
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    charms = packed_charms(packages_dir)
    placed = place_charms(corpus, scratch, charms)
    checked = run_controls(binary, scratch, charms[sorted(charms)[0]], work_dir) if charms else []
    out = []
    for name, how, store_controller in (("as made", as_made, DEFAULT_CONTROLLER),
                                        ("largest values", at_largest, controller)):
        derived = derived_corpus(placed, how)
        tag = hashlib.sha256(binary.encode()).hexdigest()[:8] + "-" + name.replace(" ", "-")
        corpus_path = os.path.join(work_dir, "corpus-juju-{}.json".format(tag))
        result_path = os.path.join(work_dir, "cli-juju-{}.json".format(tag))
        with open(corpus_path, "w") as f:
            json.dump(derived, f)
        subprocess.run([binary, "--corpus", corpus_path, "--out", result_path, "--controller", store_controller],
                       check=True, stdin=subprocess.DEVNULL, cwd=scratch)
        with open(result_path) as f:
            doc = json.load(f)
        doc["versions"] = dict(doc.get("versions") or {}, source=source_of(juju_src))
        doc["controls"] = [{"argv": argv, "ok": ok} for argv, ok in checked]
        if name == "as made":
            doc["substituted"] = sum(1 for c in corpus["commands"] if c["program"] == "juju" and as_made(c["argv"])[1])
        out.append(("{} ({})".format(doc["versions"].get("juju", "?"), name), "juju", doc))
    return out
