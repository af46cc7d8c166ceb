"""Every value that reaches our grammar is refused (or accepted) in bounded time and memory: at
most 1 s of CPU and 64 MiB per call, for inputs of up to 1 MiB, on the Python that runs this test (the
newest in ``make unit``, 3.6 in ``make unit36``). The worst cases and the entry points are
tests/unit/grammar_cost.py's; it runs in a subprocess of this interpreter with its address space
and every call's time capped, and reports each call's outcome, time and peak memory."""
import collections
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SECONDS = 1.0
PEAK = 64 << 20
MiB = 1 << 20

sys.path.insert(0, HERE)
import grammar_cost  # noqa: E402

try:    # one pytest-xdist worker runs the whole check once (the subprocess is the expensive part)
    import xdist  # noqa: F401
    pytestmark = pytest.mark.xdist_group("grammar-cost")
except ImportError:     # Python 3.6 (make unit36) runs without xdist
    pass


@pytest.fixture(scope="module")
def results():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "charms"), os.path.join(ROOT, "scripts")]))
    proc = subprocess.run([sys.executable, os.path.join(HERE, "grammar_cost.py")], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, env=env, timeout=500)
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(proc.stdout)
    assert doc["python"] == sys.version.split()[0]
    by_entry = collections.defaultdict(list)
    for entry, case, outcome, seconds, peak, detail in doc["results"]:
        by_entry[entry].append((case, outcome, seconds, peak, detail))
    return by_entry


def test_every_entry_point_met_every_worst_case(results):
    assert sorted(results) == sorted(grammar_cost.ENTRY_POINTS)
    texts = len(grammar_cost.TEXT) * len(grammar_cost.SIZES)
    for entry, calls in results.items():
        assert len(calls) >= texts + grammar_cost.RANDOM, entry
    assert max(grammar_cost.SIZES) == MiB


@pytest.mark.parametrize("entry", sorted(grammar_cost.ENTRY_POINTS))
def test_refused_or_accepted_within_one_second_and_64_mib(results, entry):
    calls = results[entry]
    broken = [(case, outcome, detail) for case, outcome, _s, _p, detail in calls if outcome not in ("refused",
                                                                                                     "accepted")]
    assert broken == [], "{}: an exception that is not its refusal, or a time-out".format(entry)
    slow = [(case, seconds) for case, _o, seconds, _p, _d in calls if seconds >= SECONDS]
    assert slow == []
    heavy = [(case, peak) for case, _o, _s, peak, _d in calls if peak >= PEAK]
    assert heavy == []


@pytest.mark.parametrize("entry", sorted(e for e, (_fn, refusals, _d) in grammar_cost.ENTRY_POINTS.items()
                                         if refusals))
def test_a_value_of_one_mib_is_refused(results, entry):
    """No option, parameter, relation field or report line of 1 MiB is a valid value; those parsed
    as a whole are refused with the grammar's message (one short printable line)."""
    calls = [c for c in results[entry] if c[0].endswith("({})".format(MiB))]
    assert len(calls) == len(grammar_cost.TEXT)
    if entry.startswith("report "):
        # A report line is read field by field (each cut or refused): its cost is the point here.
        return
    accepted = [case for case, outcome, _s, _p, _d in calls if outcome != "refused"]
    assert accepted == []
    for case, _o, _s, _p, detail in calls:
        assert detail and len(detail) < 300 and detail.isprintable(), (case, detail)


def test_the_issue_36_cases_are_refused_with_the_grammars_message(results):
    calls = {case: (outcome, detail) for case, outcome, _s, _p, detail in results["instance.index (osm-instance)"]}
    assert calls["issue 36 alias bomb (413 bytes)"] == (
        "refused", "osm-instance: not OSM's <OSM> mapping: an anchor at character 4 ('&a [lol,lol,lol,lol,')")
    outcome, detail = calls["deep count_index (131072)"]
    assert outcome == "refused" and "nesting deeper than 8" in detail
    outcome, detail = calls["count_index digits (1024)"]
    assert outcome == "refused" and "count_index '9999" in detail and "is outside 0-63" in detail
