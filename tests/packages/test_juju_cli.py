"""Our side of the `juju` command-line check (bundle.osm_conformance.juju_cli): the largest names
our grammar accepts, how dry-run placeholders and the largest values go into the lines, the
tree check, and the report (a juju line is counted parsed only when Juju's parser took it).
Whether Juju takes the lines is only known with Juju's code: `make juju-conformance JUJU_SRC=...`."""
import os

import pytest

from bundle.osm_conformance import cli_report, juju_cli
from deploy import upgrade

LIVE = ["refresh", "proxy-ee-z0-hss-vnf", "--path", "build/deploy/upgrade/oai-hss/hss.charm", "-m",
        "8ba3221f-ee34-4299-8821-c25e180615e0"]
DRY = ["refresh", "<application of 2 spgwu>", "--path", "build/deploy/upgrade/oai-spgwu/spgwu.charm", "-m", "<model>"]


def test_the_largest_values_are_the_longest_our_grammar_accepts():
    controller, model, application = juju_cli.largest_values()
    assert len(controller) == len(model) == len(application) == 63
    assert upgrade.MODEL_NAME.match(model) and not upgrade.MODEL_NAME.match(model + "a")
    assert upgrade.APPLICATION_NAME.match(application) and not upgrade.APPLICATION_NAME.match(application + "a")
    assert upgrade.CONTROLLER_NAME.match(controller) and not upgrade.CONTROLLER_NAME.match(controller + "a")


def test_dry_run_placeholders_become_the_largest_values():
    _controller, model, application = juju_cli.largest_values()
    argv, replaced = juju_cli.as_made(DRY)
    assert replaced and argv == ["refresh", application, "--path", DRY[3], "-m", model]
    assert juju_cli.as_made(LIVE) == (LIVE, False)


def test_at_the_largest_values_every_name_is_replaced_and_the_controller_named():
    controller, model, application = juju_cli.largest_values()
    assert juju_cli.at_largest(LIVE) == ["refresh", application, "--path", LIVE[3], "-m", controller + ":" + model]
    assert juju_cli.at_largest(["version"]) == ["version"]


def test_the_derived_corpus_keeps_every_index_and_the_other_programs_lines():
    corpus = {"commands": [{"program": "osm", "argv": ["ns-list"], "where": ["a"]},
                           {"program": "juju", "argv": DRY, "where": ["b"]}], "runs": []}
    derived = juju_cli.derived_corpus(corpus, juju_cli.as_made)
    assert derived["commands"][0] == corpus["commands"][0]
    assert derived["commands"][1]["argv"][1] == juju_cli.largest_values()[2]
    assert corpus["commands"][1]["argv"] == DRY       # the original is not changed


def test_only_a_juju_source_tree_is_taken(tmp_path):
    with pytest.raises(ValueError, match="no go.mod"):
        juju_cli.check_tree(str(tmp_path))
    (tmp_path / "go.mod").write_text("module example.com/other\n")
    with pytest.raises(ValueError, match="not github.com/juju/juju"):
        juju_cli.check_tree(str(tmp_path))
    (tmp_path / "go.mod").write_text("module github.com/juju/juju\n\ngo 1.19\n")
    with pytest.raises(ValueError, match="refresh.go"):
        juju_cli.check_tree(str(tmp_path))
    os.makedirs(str(tmp_path / "cmd" / "juju" / "application"))
    (tmp_path / "cmd" / "juju" / "application" / "refresh.go").write_text("package application\n")
    juju_cli.check_tree(str(tmp_path))


DOC = {"commands": [{"program": "osm", "argv": ["ns-show", "a"], "where": ["eps_wg deploy (dry run)"]},
                    {"program": "juju", "argv": LIVE, "where": ["eps_wg upgrade (live)"]},
                    {"program": "juju", "argv": DRY, "where": ["sa_wg upgrade (dry run)"]}],
       "runs": []}


def juju_doc(*oks, message='invalid application name "x"'):
    return {"client": "juju", "versions": {"juju": "2.9.42", "source": "juju@v0"}, "substituted": 1,
            "results": [{"index": i, "ok": ok, "message": "" if ok else message} for i, ok in zip((1, 2), oks)]}


def test_without_a_juju_tree_the_juju_lines_are_reported_not_parsed():
    text, _ok = cli_report.render(DOC, [("v8", "osm", {"client": "osmclient", "click": "8", "tree": "t", "results": [
        {"index": 0, "ok": True, "message": ""}]})])
    assert "not parsed: 2 juju command lines" in text and "JUJU_SRC" in text
    assert "juju 2.9.42" not in text


def test_the_report_counts_juju_lines_only_as_jujus_parser_took_them():
    text, ok = cli_report.render(DOC, [("2.9.42 (as made)", "juju", juju_doc(True, True))])
    assert ok and "juju 2.9.42 (as made): 2 parsed, 0 rejected (juju 2.9.42, source juju@v0)" in text
    assert "1 of them printed by dry runs with <placeholders>" in text
    assert "not parsed: 2 juju" not in text
    assert "not parsed: 1 osm command lines: this run did not include osmclient" in text
    text, ok = cli_report.render(DOC, [("2.9.42 (largest values)", "juju", juju_doc(True, False))])
    assert not ok and "1 parsed, 1 rejected" in text
    assert 'REJECTED juju refresh <application of 2 spgwu>' in text and 'invalid application name "x"' in text
    assert not cli_report.render(DOC, [("2.9.42", "juju", dict(juju_doc(), results=[]))])[1]


def test_a_real_charm_is_put_at_every_path_inside_the_scratch_directory_only(tmp_path):
    scratch = str(tmp_path / "scratch")
    os.makedirs(scratch)
    root = "/nonexistent/osm-conformance-corpus-x"
    corpus = {"root": root, "runs": [], "commands": [
        {"program": "juju", "argv": ["refresh", "a", "--path", root + "/build/deploy/upgrade/oai-hss/hss.charm"]},
        {"program": "juju", "argv": ["refresh", "a", "--path", "build/deploy/upgrade/oai-mme/mme.charm"]},
        {"program": "juju", "argv": ["refresh", "a", "--path", "/nonexistent/elsewhere/hss.charm"]},
        {"program": "juju", "argv": ["refresh", "a", "--path", "../../outside/hss.charm"]},
        {"program": "osm", "argv": ["--path", root + "/x"]}]}
    placed = juju_cli.place_charms(corpus, scratch, {"hss.charm": b"H", "mme.charm": b"M"})
    moved = scratch + "/build/deploy/upgrade/oai-hss/hss.charm"
    assert placed["commands"][0]["argv"][3] == moved and open(moved, "rb").read() == b"H"
    assert placed["commands"][1]["argv"][3] == "build/deploy/upgrade/oai-mme/mme.charm"
    assert open(os.path.join(scratch, "build/deploy/upgrade/oai-mme/mme.charm"), "rb").read() == b"M"
    assert placed["commands"][2:] == corpus["commands"][2:]
    assert not os.path.exists("/nonexistent") and not os.path.exists(str(tmp_path.parent / "outside"))


def test_the_packed_charms_come_from_the_built_vnf_packages(shipped_packages):
    out, _catalog = shipped_packages
    charms = juju_cli.packed_charms(out)
    assert {"hss.charm", "spgwu.charm", "amf.charm"} <= set(charms)
    assert all(data[:2] == b"PK" for data in charms.values())      # zip archives, as charmcraft packs them


def test_without_a_juju_tree_the_juju_part_is_not_run(capsys):
    from bundle.osm_conformance.__main__ import main
    assert main(["--part", "juju"]) == 2
    assert "not run: no Juju source tree" in capsys.readouterr().out


def test_a_parser_that_accepts_a_control_line_fails_the_report(tmp_path):
    lines = juju_cli.controls(str(tmp_path), b"PK")
    assert len(lines) >= 8 and os.path.isfile(str(tmp_path / "controls" / "c.charm"))
    assert any(not argv[3].startswith("/") for argv in lines if argv[:1] == ["refresh"])   # the relative path
    good = dict(juju_doc(True, True), controls=[{"argv": argv, "ok": False} for argv in lines])
    text, ok = cli_report.render(DOC, [("2.9.42", "juju", good)])
    assert ok and "controls (lines the parser must refuse): {} refused, 0 accepted".format(len(lines)) in text
    bad = dict(good, controls=good["controls"][:-1] + [{"argv": lines[-1], "ok": True}])
    text, ok = cli_report.render(DOC, [("2.9.42", "juju", bad)])
    assert not ok and "CONTROL ACCEPTED juju no-such-command" in text
    assert not cli_report.render(DOC, [("2.9.42", "juju", dict(good, controls=[]))])[1]
