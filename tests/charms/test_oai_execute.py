"""The pure parts of the executed conformance run (scripts/oai_conformance/execute.py, sandbox.py):
which steps it sends, what each run must report, what the build stand-in leaves, and how the
sandbox serves repositories whose mirrors lack some blobs. The sandbox itself runs as root in
tests/e2e/test_oai_sandbox.py."""
import os
import subprocess

from charms_helpers import COMPONENTS, config_for
from oai_conformance import execute, sandbox
from oai_conformance.source import Tree

from vpnaas.vnf import vnfscript


def report(*lines):
    return vnfscript.parse("\n".join(lines + ("DONE",)) + "\n")


def test_the_chain_is_the_charms_own_steps_in_order():
    comp = COMPONENTS["mme"]
    values, steps = execute.chain("mme", comp, config_for("mme"))
    assert [label for label, *_ in steps] == ["addresses+gate", "install", "configure", "start (gate)"]
    install, configure = steps[1][1], steps[2][1]
    assert install.calls[0][0] == "oai_install" and install.args[0] == "mme"
    assert [c[0] for c in configure.calls][-2:] == ["oai_configure_mme", "oai_configure_end"]
    gate = steps[3][1]
    assert gate.files[0] == "tunnels.sh" and "oai/gate.sh" in gate.files
    calls = [c[0] for c in gate.calls]
    assert calls == ["tunnels_prepare", "service_addresses", "oai_gate"]
    # The component's own service addresses, as the reconcile puts them; no tunnel device.
    first, count = gate.calls[1][1], gate.calls[1][2]
    assert gate.args[first - 1:first - 1 + count] == ["172.16.1.102/32", "172.16.6.2/32", "192.168.247.102/32"]
    assert gate.args[-1] != "wg-s6a" and "started" in gate.args


def test_the_ue_attach_follows_the_enb_chain_only_with_an_imsi():
    comp = COMPONENTS["enb"]
    assert [s[0] for s in execute.chain("enb", comp, config_for("enb"))[1]][-1] == "start (gate)"
    ue = config_for("enb", **{"ue-imsi": "208951234500001", "ue-lte-k": "0" * 32, "ue-lte-op": "1" * 32})
    assert [s[0] for s in execute.chain("enb", comp, ue)[1]][-1] == "ue-attach"


def test_the_second_run_must_change_nothing():
    assert execute.expect_install(None, {"state": "built", "commit": "abc"}, 1)[0]
    assert not execute.expect_install(None, {"state": "built", "commit": "abc"}, 2)[0]
    assert execute.expect_install(None, {"state": "unchanged", "commit": "abc"}, 2)[0]
    assert execute.expect_configure(None, {"changed": "/x certificates"}, 1)[0]
    assert not execute.expect_configure(None, {"changed": "/x"}, 2)[0]
    assert execute.expect_configure(None, {"changed": "none"}, 2)[0]
    assert execute.expect_started(report("COMPONENT service starting"), {}, 1)[0]
    assert not execute.expect_started(report("COMPONENT service pending"), {}, 1)[0]
    assert execute.expect_started(report("COMPONENT service running"), {}, 2)[0]


def test_build_stand_ins_leave_the_programs_where_the_build_does():
    builds = execute.builds(sorted(COMPONENTS.items()))
    assert builds["build_mme"] == ["build/mme/build/mme"]
    assert builds["build_hss_rel14"] == ["build/hss_rel14/bin/hss"]
    assert builds["build_oai"][0] == "cmake_targets/lte_build_oai/build/lte-softmodem"
    assert set(execute.UE_PROGRAMS) <= set(builds["build_oai"])


def test_a_blob_the_mirror_lacks_is_reported_and_left_out_of_checkouts(tmp_path):
    repo = tmp_path / "mirror"
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.org", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@example.org", HOME=str(tmp_path))

    def git(*args):
        return subprocess.run(["git", "-C", str(repo)] + list(args), env=env, check=True,
                              stdout=subprocess.PIPE).stdout.decode().strip()

    repo.mkdir()
    git("init", "-q")
    (repo / "small.c").write_text("kept\n")
    (repo / "big.mat").write_text("a large data file\n")
    git("add", ".")
    git("commit", "-q", "-m", "c")
    blob = git("rev-parse", "HEAD:big.mat")
    os.remove(str(repo / ".git" / "objects" / blob[:2] / blob[2:]))  # as a mirror without files >= 4 MiB
    tree = Tree(str(repo))
    assert sandbox.missing_paths(tree, tree.commit) == ["big.mat"]
    served = sandbox.Served(str(tmp_path / "served"))
    served.serve("x", tree, {"refs/heads/main": tree.commit}, ["https://example.org/x.git"])
    assert served.missing == {"x": [(tree.commit, ["big.mat"])]}
    assert served.sparse_patterns() == "/*\n!/big.mat\n"
    assert served.urls == {"https://example.org/x.git": str(tmp_path / "served" / "x.git")}
