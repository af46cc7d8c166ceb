"""What every charm run pays before its handler: the modules it imports (ops.pebble only when
used: vpnaas/charm/entry.py ``defer_imports``), the registry's parse, and the hook-tool calls of ops' own DEBUG
lines (vpnaas/charm/base.py ``_without_ops_debug``). Runs on Python 3.6 too (make unit36)."""
import json
import logging
import os
import subprocess
import sys

import pytest
import yaml

from vpnaas.charm import base, entry, hookgate, relation_cache
from vpnaas.core import registry, unitstate

CHARMS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "charms")

# A charm run as src/charm.py makes it, up to the handler: the class composed, ops.main imported.
CHARM_RUN = """
import json, sys
from vpnaas.charm import entry
entry.charm_class("mme")
import ops.main
before = {"pebble": type(sys.modules["ops.pebble"]).__name__,
          "loaded": sorted(m for m in ("http.client", "email.parser", "ssl", "cgi") if m in sys.modules)}
import ops.model
error = ops.model.pebble.ConnectionError.__name__     # first use: the whole module
import ops.testing                                    # uses pebble at its import (the Harness)
after = {"pebble": type(sys.modules["ops.pebble"]).__name__, "error": error,
         "loaded": sorted(m for m in ("http.client", "email.parser") if m in sys.modules)}
print(json.dumps([before, after]))
"""


def _run(code):
    env = dict(os.environ, PYTHONPATH=CHARMS)
    proc = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_a_charm_run_imports_ops_pebble_only_when_it_uses_it():
    before, after = _run(CHARM_RUN)
    assert before == {"pebble": "_LazyModule", "loaded": []}
    assert after == {"pebble": "module", "error": "ConnectionError", "loaded": ["email.parser", "http.client"]}


def test_the_deferral_leaves_a_module_already_imported_as_it_is():
    before, _after = _run("import ops.pebble\n" + CHARM_RUN)
    assert before["pebble"] == "module"


def test_the_registry_reads_the_same_with_libyaml_as_with_the_python_parser():
    with open(registry.PATH) as f:
        text = f.read()
    assert yaml.load(text, Loader=registry._LOADER) == yaml.safe_load(text)
    # The pinned PyYAML wheels carry libyaml (manylinux, cp36 and up): the fast path is the one taken.
    assert registry._LOADER is yaml.CSafeLoader


class _Kept(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records = []

    def emit(self, record):
        self.records.append((record.name, record.levelname, record.getMessage()))


def test_ops_own_debug_lines_are_dropped_and_the_charms_lines_kept():
    """ops 1.5.4 logs its start and the event it emits on the root logger (a juju-log process
    each, on every hook); the filter drops exactly those DEBUG records."""
    import ops.main
    import ops.storage
    assert ops.main.logger is logging.getLogger() and ops.storage.logger is logging.getLogger()
    root, kept = logging.getLogger(), _Kept()
    level = root.level
    root.addHandler(kept)
    root.addFilter(base._without_ops_debug)
    root.setLevel(logging.DEBUG)            # as ops' setup_root_logging sets it
    try:
        ops.main.logger.debug("Emitting Juju event %s.", "update_status")
        ops.main.logger.info("Running legacy %s.", "hooks/install")
        logging.getLogger("vpnaas.charm.base").debug("reconcile: plan unchanged, VNF not contacted")
        logging.getLogger("ops.framework").debug("Re-emitting %s.", "deferred")
    finally:
        root.removeFilter(base._without_ops_debug)
        root.removeHandler(kept)
        root.setLevel(level)
    assert kept.records == [("root", "INFO", "Running legacy hooks/install."),
                            ("vpnaas.charm.base", "DEBUG", "reconcile: plan unchanged, VNF not contacted"),
                            ("ops.framework", "DEBUG", "Re-emitting deferred.")]


def _gated_unit(tmp_path):
    """A unit that reconciled (its relation cache taken): Juju's relation-joined about s1/0 ends in
    the gate without a tool call (its relation-changed follows: hookgate.nothing_to_do)."""
    charm_dir = tmp_path / "unit-hub-0" / "charm"
    charm_dir.mkdir(parents=True)
    state = unitstate.unit_state_dir(str(charm_dir))
    relation_cache.save(state, relation_cache.make(["vpn"], ["public-key"], "fp-1", {"2/s1/0": {}}, ["public-key"],
                                                   {2: {}}))
    relation_cache.promote(state)
    return {"JUJU_DISPATCH_PATH": "hooks/vpn-relation-joined", "JUJU_CHARM_DIR": str(charm_dir),
            "JUJU_RELATION": "vpn", "JUJU_RELATION_ID": "vpn:2", "JUJU_UNIT_NAME": "hub/0", "JUJU_REMOTE_APP": "s1",
            "JUJU_REMOTE_UNIT": "s1/0"}


def test_a_hook_the_gate_ends_imports_neither_ops_nor_yaml_in_the_charms_process(tmp_path):
    """src/charm.py asks the gate first, in its own process (entry.main; dispatch starts one
    interpreter): a hook the gate ends loads no third-party module."""
    code = ("import json, sys\nfrom vpnaas.charm import entry\nentry.main('wireguard-proxy')\n"
            "loaded = [m for m in ('ops', 'yaml', 'paramiko', 'vpnaas.charm.base') if m in sys.modules]\n"
            "print(json.dumps(loaded))")
    env = dict(os.environ, PYTHONPATH=CHARMS, **_gated_unit(tmp_path))
    proc = subprocess.run([sys.executable, "-S", "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, env=env, timeout=120)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "[]\n", "")


@pytest.mark.parametrize("gate", ["run the charm", "raises"])
def test_a_hook_the_gate_does_not_end_runs_the_charm(monkeypatch, gate):
    def answer():
        if gate == "raises":
            raise ValueError("a bug in the gate")
        return 1
    ran = []
    monkeypatch.setattr(hookgate, "main", answer)
    monkeypatch.setattr(base, "main", ran.append)
    entry.main("mme")
    assert [cls.__name__ for cls in ran] == ["MmeCharm"]


def test_a_hook_the_gate_ends_runs_no_charm(monkeypatch):
    ran = []
    monkeypatch.setattr(hookgate, "main", lambda: 0)
    monkeypatch.setattr(base, "main", ran.append)
    entry.main("mme")
    assert ran == []


def test_dispatch_starts_one_interpreter_without_site():
    from bundle import build_charms
    lines = [line for line in build_charms.DISPATCH.splitlines() if "python3" in line]
    assert lines == ['exec python3 -S "$CHARM_DIR/src/charm.py"']


def test_dispatch_gives_the_charm_absolute_paths_whatever_its_working_directory(tmp_path):
    """Without site, a relative PYTHONPATH entry stays relative: a late import (paramiko in the first
    session) would then depend on the working directory. The real dispatch, run by sh in a charm
    directory: every path the charm's interpreter searches, and the module it runs, are absolute,
    and a module imported after a chdir is still found."""
    import subprocess
    import sys

    from bundle import build_charms
    charm = tmp_path / "charm"
    (charm / "src").mkdir(parents=True)
    (charm / "lib").mkdir()
    (charm / "venv" / "late_module").mkdir(parents=True)
    (charm / "venv" / "late_module" / "__init__.py").write_text("")
    (charm / "dispatch").write_text(build_charms.DISPATCH)
    (charm / "src" / "charm.py").write_text(
        "import os, sys\n"
        "print(repr([p for p in sys.path if p and not os.path.isabs(p)]))\n"
        "os.chdir('/')\n"
        "import late_module\n"
        "print(os.path.isabs(late_module.__file__))\n")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "python3").symlink_to(sys.executable)
    env = {"PATH": "{}:/usr/bin:/bin".format(bindir), "JUJU_CHARM_DIR": str(charm)}
    for cwd, environ in ((charm, env), (charm, dict(env, JUJU_CHARM_DIR=""))):
        out = subprocess.run(["sh", str(charm / "dispatch")], cwd=str(cwd), env=environ,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60, check=True)
        assert out.stdout.decode().split() == ["[]", "True"], out.stderr.decode()
