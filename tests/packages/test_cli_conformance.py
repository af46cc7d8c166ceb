"""The parts of `make osm-conformance`'s command-line check that need no upstream code: the corpus
of the deploy tool's command lines (from the real packages), the click harness run on a small
osmclient-shaped tree of this test's own, the report, and the client pins. Whether osmclient
and openstackclient take the command lines is only known with their code: `make osm-conformance`."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from bundle.osm_conformance import cli_report, clients, corpus

HERE = os.path.dirname(os.path.abspath(__file__))
PARSER = os.path.join(os.path.dirname(os.path.dirname(HERE)), "scripts", "bundle", "osm_conformance", "cli_parse.py")
VARIANTS = ["eps_wg", "sa_wg", "slices", "eps_wg_osm10"]
#: One worker runs this module: its module-scoped fixture is built once (tests/conftest.py).
pytestmark = pytest.mark.xdist_group("cli-conformance")


@pytest.fixture(scope="module")
def collected(shipped_packages):
    out, _catalog = shipped_packages
    return corpus.collect(out, VARIANTS)


def test_the_corpus_runs_every_subcommand_of_each_variant_dry_and_live(collected):
    runs = collected["runs"]
    assert all(r["exit"] == 0 for r in runs), [r for r in runs if r["exit"]]
    done = {(r["variant"], r["argv"][0], r["mode"]) for r in runs if r["count"]}
    for variant in VARIANTS:
        for cmd in ("deploy", "undeploy", "measure", "upgrade"):
            assert {(variant, cmd, "dry run"), (variant, cmd, "live")} <= done, (variant, cmd)
        assert {(variant, "onboard", "dry run"), (variant, "prepare", "dry run")} <= done
    scaled = {r["variant"] for r in runs if r["argv"][0] == "scale" and r["mode"] == "live"}
    assert scaled == {"eps_wg"}       # the only one of these whose NSD has a VDU-level member
    programs = {c["program"] for c in collected["commands"]}
    assert programs <= {"osm", "openstack", "juju"} and {"osm", "openstack"} <= programs


def test_the_corpus_holds_the_branches_a_dry_run_cannot_show(collected):
    verbs = {c["argv"][0] for c in collected["commands"] if c["program"] == "osm"}
    assert {"vim-update", "nfpkg-update", "nspkg-update", "vnf-scale", "vnf-show", "ns-update"} <= verbs
    actions = [c["argv"] for c in collected["commands"] if c["program"] == "osm" and c["argv"][0] == "ns-action"]
    named = {a[a.index("--action_name") + 1] for a in actions}
    assert {"tunnel-status", "add-peer", "remove-peer", "run", "ue-attach", "ue-iperf"} <= named
    where = {w for c in collected["commands"] for w in c["where"]}
    assert "eps_wg scale --scale-out (live)" in where and "slices deploy (dry run)" in where


def osmclient_tree(tmp_path, newest=True):
    """A tree shaped like osmclient (scripts/osm.py), defined here: v8's `cli` group with its
    commands, or the newest `cli()` that registers them on `cli_osm` and then runs it."""
    (tmp_path / "osmclient" / "scripts").mkdir(parents=True)
    for init in ("osmclient/__init__.py", "osmclient/scripts/__init__.py"):
        (tmp_path / init).write_text("")
    body = textwrap.dedent('''
        import click

        @click.group()
        @click.option("--hostname", envvar="OSM_HOSTNAME")
        def {group}(hostname):
            raise SystemExit("the group's callback must never run")

        @click.command(name="ns-action")
        @click.argument("ns_name")
        @click.option("--vnf_name")
        @click.option("--vdu_id")
        @click.option("--vdu_count", type=int)
        @click.option("--action_name", prompt=True)
        @click.option("--wait", is_flag=True)
        def ns_action(ns_name, vnf_name, vdu_id, vdu_count, action_name, wait):
            raise SystemExit("a command must never run")
        ''').format(group="cli_osm" if newest else "cli")
    if newest:
        body += textwrap.dedent('''
            def cli():
                cli_osm.add_command(ns_action)
                cli_osm()
                exit(0)
            ''')
    else:
        body += "\ncli.add_command(ns_action)\n"
    (tmp_path / "osmclient" / "scripts" / "osm.py").write_text(body)
    return str(tmp_path)


@pytest.mark.parametrize("newest", [True, False])
def test_the_harness_parses_with_the_trees_own_click_tree_and_runs_nothing(tmp_path, newest):
    tree = osmclient_tree(tmp_path / "tree", newest)
    lines = [["ns-action", "ns1", "--vnf_name", "spgwu", "--vdu_id", "spgwu", "--vdu_count", "1",
              "--action_name", "tunnel-status", "--wait"],
             ["ns-action", "ns1", "--vnf_name", "spgwu", "--vdu_id", "spgwu", "--vdu_count_index", "1",
              "--action_name", "tunnel-status", "--wait"],
             ["ns-action", "ns1", "--vdu_count", "1.0", "--action_name", "x"],
             ["ns-action", "ns1", "--wait"],
             ["ns-update", "ns1"]]
    doc = {"commands": [{"program": "osm", "argv": a, "where": ["t"]} for a in lines]
           + [{"program": "openstack", "argv": ["token", "issue"], "where": ["t"]}], "runs": []}
    (tmp_path / "corpus.json").write_text(json.dumps(doc))
    out = tmp_path / "result.json"
    subprocess.run([sys.executable, PARSER, "osmclient", "--tree", tree, "--im", str(tmp_path), "--corpus",
                    str(tmp_path / "corpus.json"), "--out", str(out)], check=True, stdin=subprocess.DEVNULL)
    results = json.loads(out.read_text())["results"]
    assert [r["ok"] for r in results] == [True, False, False, False, False]
    assert results[0]["command"] == "ns-action"
    assert "No such option: --vdu_count_index" in results[1]["message"]
    assert "'1.0' is not a valid integer" in results[2]["message"]
    assert "prompted option is missing" in results[3]["message"]
    assert "No such command 'ns-update'" in results[4]["message"]


def result(oks, client="osmclient"):
    return {"client": client, "click": "8", "tree": "t", "results": [
        {"index": i, "ok": ok, "command": "c", "message": "" if ok else "No such option: --x"}
        for i, ok in enumerate(oks)]}


def test_the_report_counts_per_variant_and_fails_on_any_refusal():
    doc = {"commands": [{"program": "osm", "argv": ["ns-show", "a"], "where": ["eps_wg deploy (dry run)"]},
                        {"program": "osm", "argv": ["ns-action", "a", "--x"], "where": ["sa_wg deploy (live)"]},
                        {"program": "juju", "argv": ["refresh", "app"], "where": ["eps_wg upgrade (live)"]}],
           "runs": [{"variant": "eps_wg", "argv": ["deploy"], "mode": "dry run", "exit": 0, "error": "", "count": 1}]}
    text, ok = cli_report.render(doc, [("v8", "osm", result([True, False]))], ["osmclient abc"])
    assert not ok and "osmclient v8: 1 parsed, 1 rejected" in text
    assert "REJECTED osm ns-action a --x" in text and "from: sa_wg deploy (live)" in text
    assert "eps_wg                   osmclient v8: 1/0" in text and "sa_wg                    osmclient v8: 0/1" in text
    assert "not parsed: 1 juju command lines" in text and "source: osmclient abc" in text
    text, ok = cli_report.render(doc, [("v8", "osm", result([True, True]))])
    assert ok and text.endswith("command lines: 0 rejected")
    failed_run = dict(doc, runs=[dict(doc["runs"][0], exit=1, error="boom")])
    assert not cli_report.render(failed_run, [("v8", "osm", result([True, True]))])[1]
    assert not cli_report.render(doc, [])[1]


def test_client_pins(tmp_path):
    (tmp_path / "requirements.txt").write_text("# c\nclick==8.1.8\n    # via -r requirements.in\njinja2==3.1.6\n")
    assert clients.click_pin(str(tmp_path), "click==6.7") == "click==8.1.8"
    assert clients.click_pin(str(tmp_path / "none"), "click==6.7") == "click==6.7"
    uc = tmp_path / "upper-constraints.txt"
    uc.write_text("cliff===3.2.0;python_version=='3.8'\npython-openstackclient===5.2.0\nosc-lib===2.0.0\n")
    kept = clients.constraints_without(str(uc), str(tmp_path / "c.txt"), "python-openstackclient==5.2.1")
    assert open(kept).read() == "cliff===3.2.0;python_version=='3.8'\nosc-lib===2.0.0\n"


def test_the_report_names_expected_refusals_and_refused_bodies():
    """osmclient v8 has no ns-update: refused as expected where only variants for a newer OSM
    send it, a failure where an -osm10 variant does; a refused request body fails the run."""
    doc = {"commands": [{"program": "osm", "argv": ["ns-update", "a"], "where": ["eps_wg upgrade (live)"]},
                        {"program": "osm", "argv": ["ns-update", "b"], "where": ["eps_wg_osm10 upgrade (live)"]},
                        {"program": "osm", "argv": ["ns-action", "a"], "where": ["eps_wg deploy (live)"]}],
           "runs": []}
    refused = {"ok": False, "command": "ns-update", "message": 'No such command "ns-update".'}
    v8 = {"client": "osmclient", "click": "6.7", "tree": "t", "results": [
        dict(refused, index=0), {"index": 2, "ok": True, "command": "ns-action", "message": "", "body_ok": True}]}
    text, ok = cli_report.render(doc, [("v8", "osm", v8)])
    assert ok and "1 parsed, 0 rejected, 1 refused as expected" in text
    assert "refused as expected: ns-update: osmclient v8 has no ns-update" in text
    assert "1 made, 0 refused" in text
    v8["results"].append(dict(refused, index=1))
    assert not cli_report.render(doc, [("v8", "osm", v8)])[1]
    newest = {"client": "osmclient", "click": "8", "tree": "t", "results": [
        {"index": 0, "ok": True, "command": "ns-update", "message": "", "body_ok": False,
         "body_message": "osmclient: KeyError: 0"}]}
    text, ok = cli_report.render(doc, [("newest", "osm", newest)])
    assert not ok and "BODY REFUSED osm ns-update a\n         osmclient: KeyError: 0" in text
