"""`make hooktool-conformance` (bundle/osm_conformance/hooktool.py) itself, without a Juju tree:
the corpus is what the hook gate's own functions run and covers every direct hook-tool call under
charms/, at the largest values; the replay catches an answer the gate cannot read; the report
fails on a refused line, a control Juju accepted, or wrong action results."""
import json

import pytest

from bundle.osm_conformance import hooktool
from vpnaas.charm import hookgate, relation_cache


@pytest.fixture(scope="module")
def corpus():
    return hooktool.build_corpus()


def _model_results(corpus, **override):
    """Driver results as if Juju answered what the recorder's model answers (the action's results
    as Juju records them)."""
    _e, _u, key = hooktool.largest_values()
    out = []
    for i, line in enumerate(corpus["lines"]):
        r = {"index": i, "ok": True, "stage": "run", "message": "",
             "stdout": json.dumps(hooktool._model_answer(corpus["fixture"], line["argv"]))}
        if line["argv"][0] == "action-set":
            r["action_results"] = {"pubkey": [key]}
        r.update(override.get(line["argv"][0], {}))
        out.append(r)
    return out


def test_corpus_covers_every_direct_hook_tool_call(corpus):
    calls = hooktool.hook_tool_calls()
    assert calls and all(path == "charms/vpnaas/charm/hookgate.py" for path, _line in calls)
    assert {line["argv"][0] for line in corpus["lines"]} == set(calls.values())
    assert all(line["argv"][-1] == "--format=json" for line in corpus["lines"] if line["argv"][0] != "action-set")


def test_corpus_is_at_the_largest_values(corpus):
    endpoint, unit, key = hooktool.largest_values()
    assert len(endpoint) == 63 and len(unit.split("/")[0]) == 63
    by_tool = {}
    for line in corpus["lines"]:
        by_tool.setdefault(line["argv"][0], []).append(line["argv"])
    assert ["relation-ids", endpoint, "--format=json"] in by_tool["relation-ids"]
    for argv in by_tool["relation-list"]:
        m = hookgate._RELATION_ID.fullmatch(argv[2])
        assert m and len(m.group(1)) == 9 and argv[2].startswith(endpoint + ":")
    for argv in by_tool["relation-get"]:
        if "--app" in argv:     # an application-data relation-changed: the remote application's bag
            assert argv[3:5] == ["--app", "-"] and hookgate._APP.fullmatch(argv[5]) and argv[5] == unit.split("/")[0]
        else:
            assert hookgate._UNIT.fullmatch(argv[4]) and len(argv[4]) == len(unit)
    assert by_tool["action-set"] == [["action-set", "pubkey=" + key]]
    assert len(corpus["fixture"]["relations"][0]["units"]) == relation_cache.MAX_MEMBERS
    # Relation-hook lines run with the hook's relation and remote unit; the others without.
    in_hook = {line["hook_relation"] is not None for line in corpus["lines"] if "relation hook" in line["scenario"]}
    assert in_hook == {True}


def test_replay_reads_back_a_faithful_answer(corpus):
    verdicts = [ok for _name, ok, _detail in hooktool.replay(corpus, _model_results(corpus))]
    assert verdicts == [True] * 11


@pytest.mark.parametrize("tool,override,scenario", [
    ("relation-list", {"stdout": "[1]"}, "config-changed: members"),
    ("relation-ids", {"stdout": "\"x\""}, "config-changed: members"),
    ("config-get", {"ok": False, "stage": "init", "message": "m"}, "config-changed: every option"),
    ("relation-get", {"stdout": "{\"a\": 1}"}, "relation hook: own data"),
    ("relation-get", {"stdout": "{\"a\": 1}"}, "config-changed: the whole gate ends the hook"),
    ("relation-list", {"ok": False, "stage": "parse", "message": "m"}, "config-changed: the whole gate ends the hook"),
    ("relation-get", {"stdout": "{\"a\": 1}"}, "application relation-changed: the whole gate ends the hook"),
])
def test_replay_names_what_the_gate_cannot_read(corpus, tool, override, scenario):
    failed = {name for name, ok, _detail in hooktool.replay(corpus, _model_results(corpus, **{tool: override}))
              if not ok}
    assert scenario in failed


def test_with_every_option_unset_the_gate_reads_nulls():
    corpus = hooktool.build_corpus(hooktool.unset_fixture())
    assert set(corpus["fixture"]["config"].values()) == {None}
    verdicts = [ok for _name, ok, _detail in hooktool.replay(corpus, _model_results(corpus))]
    assert verdicts == [True] * 11


def _doc(results):
    return {"versions": {"juju": "2.9.42"}, "results": results}


def test_report_passes_only_when_everything_holds(corpus):
    refused = [{"index": i, "ok": False, "stage": "init", "message": "m"}
               for i, _ in enumerate(hooktool.controls({"unit": "a/0"}))]
    text, ok = hooktool.report("2.9.42", "tree", corpus, _doc(_model_results(corpus)), _doc(refused))
    assert ok and "REFUSED" not in text and "controls: 9 of 9 refused" in text

    bad = _model_results(corpus, **{"relation-get": {"ok": False, "stage": "parse", "message": "no such flag"}})
    text, ok = hooktool.report("2.9.42", "tree", corpus, _doc(bad), _doc(refused))
    assert not ok and "REFUSED at parse: no such flag" in text

    accepted = [dict(r, ok=True) for r in refused]
    assert not hooktool.report("2.9.42", "tree", corpus, _doc(_model_results(corpus)), _doc(accepted))[1]

    wrong = _model_results(corpus, **{"action-set": {"action_results": {"pubkey": ["other"]}}})
    assert not hooktool.report("2.9.42", "tree", corpus, _doc(wrong), _doc(refused))[1]


def test_without_a_tree_nothing_is_run(capsys):
    assert hooktool.main([]) == 2
    assert "not run" in capsys.readouterr().out
