"""The pure parts of `make oai-conformance` (scripts/oai_conformance); the target itself needs OAI's
sources and is not part of `make test`."""

import pytest
from oai_conformance import __main__ as conformance
from oai_conformance import checks, libconfig

from vpnaas.vnf import vnfscript

BUILD_MME = """\
      -c | --clean)
        clean=1 ;;
      -i | --check-installed-software)
        install=1 ;;
      -w | --hardware)
        case "$2" in "USRP" | "SIMU") HW=$2 ;; esac ;;
"""


def test_placeholders_unfilled_and_absent():
    unfilled, absent = checks.placeholder_report('A = "@A@"; B = "@B@";', {"@A@": "1", "@C@": "3"})
    assert unfilled == ["@B@"] and absent == ["@C@"]


def test_edit_that_matches_more_often_than_declared_is_reported():
    edit = {"pattern": r"tac = \d+;", "repl": "tac = 1;", "count": 1, "what": "tac"}
    assert checks.edit_counts("tac = 5;", [edit]) == []
    assert checks.edit_counts("tac = 5; tac = 6;", [edit]) == [("tac", 2, 1)]
    assert checks.edit_counts("nothing", [edit]) == [("tac", 0, 1)]
    optional = dict(edit, required=False)
    assert checks.edit_counts("nothing", [optional]) == []


def test_build_commands_are_read_from_the_shipped_install_script():
    install = vnfscript.load("oai/install.sh")
    assert checks.build_commands(install, "mme") == [
        ("scripts/build_mme", ["--check-installed-software", "--force"]),
        ("scripts/build_mme", ["--clean"]),
    ]
    assert checks.build_commands(install, "enb")[1] == ("cmake_targets/build_oai", ["-w", "SIMU", "--UE", "--eNB"])
    assert checks.build_commands(install, "spgwu")[1] == ("build/scripts/build_spgwu",
                                                          ["-c", "-V", "-b", "Debug", "-j"])


def test_build_flags_against_case_labels():
    assert checks.flag_findings(BUILD_MME, ["--clean", "-i", "-w", "SIMU"]) == []
    assert checks.flag_findings(BUILD_MME, ["--force", "-w", "LMSSDR"]) == [
        "option --force is not handled", "value LMSSDR is not accepted"]


def test_program_options_from_getopt_and_option_tables():
    source = ('c = getopt_long(argc, argv, "hj:q", long_options, &i);\n'
              '{ "onlyloadkey", no_argument, NULL, \'q\' },\n'
              'if ( argv[i][1] == \'O\' && i < (argc -1)) {\n')
    assert checks.option_known(source, "-j") and checks.option_known(source, "--onlyloadkey")
    assert checks.option_known(source, "-O")
    assert checks.option_known('{"C" ,  CONFIG_HLP_DLF, 0, uptr:&f},', "-C")  # a configuration-module table
    assert checks.option_known('const char options[]="c:o:h";\ngetopt(argc, argv, options)', "-o")
    assert not checks.option_known(source, "-c") and not checks.option_known(source, "--reloadkey")


def test_options_on_the_charms_command_lines():
    text = '"$src/scripts/data_provisioning_mme" --id 3 --realm "$realm" \\\n  -C "$ip" >> "$log"\n'
    assert checks.options_in(text, 'data_provisioning_mme"') == ["--id", "--realm", "-C"]
    assert checks.argparse_known("parser.add_argument('-C', '--cassandra-cluster')", "-C")


def test_submodule_pulls_and_who_they_concern():
    helper = ("init() {\n  echo \"git submodule foreach git pull origin master\"\n"
              "  git submodule foreach git pull origin master\n}\n"
              "fd() {\n  pushd $DIR/build/git_submodules/freeDiameter\n  git pull origin master\n"
              "  patch -p1 <  $DIR/build/patches/0001-fd.patch\n  popd\n}\n"
              "top() {\n  git pull origin develop\n}\n")
    pulls = [(which, branch) for _, _, which, branch, _ in checks.submodule_pulls("h", helper)]
    assert pulls == [("*", "master"), ("freeDiameter", "master")]  # echo lines and the top level left out
    assert checks.patch_applications("h", helper) == [("freeDiameter", "build/patches/0001-fd.patch")]


def test_the_charm_replaces_every_pull_it_finds():
    pattern = checks.pull_pattern(vnfscript.load("oai/oai-lib.sh"))
    for line in ("git submodule foreach git pull origin master", "git pull origin master",
                 "git submodule foreach --recursive git pull origin main"):
        assert pattern.search(line)


def test_relative_paths_in_outputs():
    text = '"logname": "logs/hss.log",\n"fdcfg": "/usr/local/etc/oai/x.conf",\nRANGE = "12.1.1.2 - 12.1.1.9";\n' \
           'ossfile = "conf/oss.json";'
    assert checks.relative_paths(text) == ["conf/oss.json", "logs/hss.log"]


def test_libconfig_parser_is_libconfig_itself():
    assert libconfig.parse('a = "x"; b = { c = (1, 2); };') is None
    # An unquoted address (what a filled-in @cassandra_Server_IP@ gives) is not libconfig.
    assert libconfig.parse("A :\n{\nip = 172.16.6.129;\n};\n") == "line 3: syntax error"


def test_without_sources_it_says_not_run(tmp_path, capsys):
    assert conformance.main(["--src", str(tmp_path)]) == 2
    assert capsys.readouterr().out.startswith("not run: no OAI sources")


@pytest.mark.parametrize("name,comp", conformance.COMPONENTS)
def test_params_file_is_complete(name, comp):
    comp.config_values(conformance.component_config(name), None)  # raises InvalidValue otherwise
    assert comp.render_spec(comp.config_values(conformance.component_config(name), None))["files"]


def test_submodules_are_checked_at_the_charms_pins(tmp_path, capsys):
    """The pinned commit, not the recorded one, must exist upstream; a pin that names no
    submodule is a mismatch."""
    import copy
    import os
    import subprocess

    from oai_conformance.source import Tree

    from vpnaas.oai.lte import mme

    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.org", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@example.org", HOME=str(tmp_path), GIT_CONFIG_COUNT="1",
               GIT_CONFIG_KEY_0="protocol.file.allow", GIT_CONFIG_VALUE_0="always")

    def git(repo, *args):
        return subprocess.run(["git", "-C", str(repo)] + list(args), env=env, check=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE).stdout.decode().strip()

    fd = tmp_path / "src" / "submodules" / "fd"
    fd.mkdir(parents=True)
    git(fd, "init", "-q")
    (fd / "a").write_text("1\n")
    git(fd, "add", ".")
    git(fd, "commit", "-q", "-m", "recorded")
    top = tmp_path / "src" / "mme"
    top.mkdir()
    git(top, "init", "-q")
    git(top, "submodule", "-q", "add", str(fd), "build/git_submodules/freeDiameter")
    git(top, "commit", "-q", "-m", "top")
    (fd / "a").write_text("2\n")
    git(fd, "commit", "-q", "-am", "pinned")
    pinned = git(fd, "rev-parse", "HEAD")
    comp = copy.copy(mme.COMPONENT)
    comp.submodule_pins = (("build/git_submodules/freeDiameter", pinned, ""),
                           ("build/git_submodules/gone", "0" * 40, ""))
    report = conformance.Report()
    conformance.check_submodules(report, comp, Tree(str(top)), str(tmp_path / "src"))
    out = capsys.readouterr().out
    assert "ok        submodule build/git_submodules/freeDiameter pinned by the charm at {}: exists upstream".format(
        pinned[:12]) in out
    assert "MISMATCH  submodule pin build/git_submodules/gone: not a submodule of the ref" in out
    assert report.mismatches == 1


def test_a_cn5g_key_oai_does_not_read_is_a_mismatch(capsys):
    """The generated files' keys against OAI's: a sample, a parser's node["..."], the documentation."""
    from oai_conformance import cn5g

    report = conformance.Report()
    sample = cn5g.known_paths({"nfs": {"smf": {"host": "x", "sbi": {"port": 80}}}, "dnns": [{"dnn": "a"}]})
    doc = {"nfs": {"smf": {"host": "1.2.3.4", "sbi": {"port": 80, "portt": 81}}}, "dnns": [{"dnn": "b"}],
           "smf": {"ue_mtu": 1376}, "upf": {"smfs": ["1.2.3.4"]}}
    cn5g.check_document(report, "smf", doc, sample, cn5g.parser_keys('if (node["ue_mtu"]) {'),
                        "  smfs: \n", "the test's sources")
    out = capsys.readouterr().out
    assert "MISMATCH  smf: nfs.smf.sbi.portt is not a key of the test's sources" in out
    assert "smf.ue_mtu read by the SMF's parser" in out and "upf.smfs named in" in out
    # the sections themselves: in neither sample, parser nor documentation
    assert "MISMATCH  smf: smf is not a key" in out and "MISMATCH  smf: upf is not a key" in out
    assert report.mismatches == 3


def test_a_configuration_override_names_a_parameter_the_program_defines():
    from oai_conformance import cn5g

    text = '#define GNB_CONFIG_STRING_GNB_LIST "gNBs"\n#define X "min_rxtxtime"\n'
    assert cn5g.config_override_known(text, "--gNBs.[0].min_rxtxtime")
    assert not cn5g.config_override_known(text, "--gNBs.[0].max_rxtxtime")
    assert not cn5g.config_override_known(text, "--sa")


def test_the_5g_build_steps_are_read_through_their_shared_helper():
    from vpnaas.vnf import vnfscript

    install = vnfscript.load("oai/install.sh")
    assert checks.build_commands(install, "smf") == [("build/scripts/build_smf", ["-I", "-f"]),
                                                     ("build/scripts/build_smf", ["-c", "-V", "-b", "Release", "-j"])]
    assert checks.build_commands(install, "gnb")[1] == ("cmake_targets/build_oai",
                                                        ["--gNB", "--nrUE", "-w", "SIMU", "--ninja"])
    assert checks.build_commands(install, "hss")[0][0] == "scripts/build_hss_rel14"


def test_components_without_a_tree_are_reported_not_checked_never_passed(tmp_path, capsys, monkeypatch):
    """Only some trees in OAI_SRC: the others are named NOT CHECKED and the exit status is 3, not 0."""
    import os

    monkeypatch.setattr(conformance, "check_component", lambda report, n, c, src, r: "0" * 40)
    monkeypatch.setattr(conformance, "check_cn5g_files", lambda report, src, work, yaml_cpp: None)
    monkeypatch.setattr(conformance, "run_executed", lambda src, only: (0, "stubbed"))
    os.makedirs(str(tmp_path / "smf"))
    assert conformance.main(["--src", str(tmp_path)]) == conformance.PARTIAL
    out = capsys.readouterr().out
    assert "UNCHECKED amf: NOT CHECKED: no source tree in OAI_SRC" in out
    assert "not checked: " in out and "upf" in out.split("not checked: ")[1].split(";")[0]
