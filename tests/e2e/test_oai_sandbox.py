"""The executed conformance runner (scripts/oai_conformance/execute.py, sandbox.py) over a small
synthetic OAI-like tree made here (never OAI's text): an SPGW-C-like repository, and an MME-like
one with a freeDiameter submodule pinned past its recorded commit and a helper that pulls inside
it. Both chains must pass twice; a template with a placeholder the charm does not fill must fail."""
import copy
import os
import subprocess
import sys

import pytest
from oai_conformance import execute

from vpnaas.oai.lte import mme, spgw

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "charms"))
import oai_tree  # noqa: E402
from charms_helpers import config_for  # noqa: E402

GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.org", "GIT_CONFIG_COUNT": "1",
           "GIT_CONFIG_KEY_0": "protocol.file.allow", "GIT_CONFIG_VALUE_0": "always"}
FD_URL = "https://github.com/OPENAIRINTERFACE/opencord.org.freeDiameter.git"
PULLING_HELPER = """pull_freediameter() {
  pushd $OPENAIRCN_DIR/build/git_submodules/freeDiameter
  echo "git pull origin master"
  git pull origin master
  popd
}
"""


@pytest.fixture(autouse=True)
def _root(environment_ready):
    return environment_ready


def git(cwd, *args):
    env = dict(os.environ, HOME=str(cwd), **GIT_ENV)
    return subprocess.run(["git", "-C", str(cwd)] + list(args), env=env, check=True,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE).stdout.decode().strip()


def commit_all(repo, message):
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def component_repo(path, comp, values, build_script, extra=None):
    """A repository at ``comp.ref`` with the templates the charm renders and a build script."""
    os.makedirs(str(path))
    git(path, "init", "-q", "-b", "main")
    oai_tree.write_tree(str(path), comp.source_dir, comp.render_spec(values))
    oai_tree.executable(str(path / build_script), "#!/bin/bash\necho replaced by the sandbox's stand-in\n")
    for rel, text in (extra or {}).items():
        oai_tree.write(str(path / rel), text)
    commit_all(path, "release")
    git(path, "branch", comp.ref)
    return path


def test_synthetic_spgwc_and_mme_pass_twice_and_a_left_placeholder_fails(tmp_path):
    src = tmp_path / "src"
    spgwc, mme_component = spgw.SPGWC, copy.copy(mme.COMPONENT)
    configs = {"spgwc": config_for("spgwc"), "mme": config_for("mme")}
    component_repo(src / "spgwc", spgwc, spgwc.config_values(configs["spgwc"], None), "build/scripts/build_spgwc")
    # freeDiameter: recorded at its first commit, pinned at the second (as 13d9601b -> 673ea500).
    fd = src / "submodules" / "opencord.org.freeDiameter"
    os.makedirs(str(fd))
    git(fd, "init", "-q", "-b", "master")
    oai_tree.write(str(fd / "peer.c"), "expiry on\n")
    recorded = commit_all(fd, "recorded")
    mme_repo = component_repo(src / "mme", mme_component, mme_component.config_values(configs["mme"], None),
                              "scripts/build_mme", {"build/tools/build_helper.fd": PULLING_HELPER})
    git(mme_repo, "submodule", "-q", "add", str(fd), "build/git_submodules/freeDiameter")
    git(mme_repo, "config", "-f", ".gitmodules", "submodule.build/git_submodules/freeDiameter.url", FD_URL)
    commit_all(mme_repo, "with freeDiameter")
    git(mme_repo, "branch", "-f", mme_component.ref)
    oai_tree.write(str(fd / "peer.c"), "expiry off\n")
    pinned = commit_all(fd, "Enable DISABLE_PEER_EXPIRY")
    mme_component.submodule_pins = (("build/git_submodules/freeDiameter", pinned, "the test's pin"),)
    assert recorded != pinned

    outcomes = execute.execute([("spgwc", spgwc), ("mme", mme_component)], configs, str(src), [])
    for outcome in outcomes:
        assert outcome.failures == 0, outcome.rows
    spgwc_rows = {(r[0], r[1]): r[4] for r in outcomes[0].rows}
    assert spgwc_rows[(1, "install")].startswith("state built") and spgwc_rows[(2, "install")].startswith(
        "state unchanged")
    assert spgwc_rows[(2, "configure")] == "changed none" and spgwc_rows[(2, "start (gate)")] == "service running"
    mme_rows = {(r[0], r[1]): r[4] for r in outcomes[1].rows}
    assert "certificates" in mme_rows[(1, "configure")]
    assert mme_rows[(1, "pin freeDiameter")] == mme_rows[(2, "pin freeDiameter")] == "at " + pinned[:12]
    assert "build_mme" in outcomes[1].calls and "systemctl" in outcomes[1].calls

    # A placeholder the charm does not fill: the configure step fails, and so does the runner.
    template = src / "spgwc" / "etc" / "spgw_c.conf"
    template.write_text(template.read_text() + 'extra = "@NOT_FILLED@";\n')
    commit_all(src / "spgwc", "a new placeholder")
    git(src / "spgwc", "branch", "-f", spgwc.ref)
    outcome = execute.execute([("spgwc", spgwc)], configs, str(src), [])[0]
    failed = [r for r in outcome.rows if r[3] == "FAIL"]
    assert failed and failed[0][1] == "configure" and "@NOT_FILLED@" in failed[0][4], outcome.rows

