"""docs/figures.md is the one place of the measured figures (timings, counts): the counts it
states are what the code makes (the package counts: tests/packages/test_figures_counts.py), a
bound of the code stated anywhere in the docs is the code's, and the README and the other docs
state no time of the loop or of CI (they link to docs/figures.md)."""
import glob
import os
import re

from bundle import charmspec
from vpnaas import registry

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIGURES = os.path.join(ROOT, "docs", "figures.md")


def figures_row(label):
    """The value cell of the row of docs/figures.md's tables whose first cell starts with ``label``."""
    with open(FIGURES) as f:
        rows = [line.split("|")[1:-1] for line in f if line.startswith("| " + label)]
    assert len(rows) == 1, (label, rows)
    return rows[0][1].strip()


def _docs():
    return [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))


def test_the_charm_count_is_the_registrys():
    assert int(figures_row("charms (`make charms`)")) == len(charmspec.charm_names())


def test_every_statement_of_the_label_bound_is_the_registrys():
    pattern = re.compile(r"(?:name has|names? (?:must fit|of) (?:the label|at most)|at most) \(?(\d+) characters?"
                         r"[^.]{0,40}(?:LABEL_MAX|label)|label[^.]{0,120}?at most (\d+) characters")
    found = []
    for path in _docs() + [os.path.join(ROOT, "charms", "vpnaas", "registry.yaml")]:
        with open(path) as f:
            text = " ".join(f.read().split())
        for m in pattern.finditer(text):
            found.append((os.path.relpath(path, ROOT), int(m.group(1) or m.group(2))))
    assert len(found) >= 3, found     # registry.yaml, docs/architecture.md, docs/cn5g.md, docs/figures.md
    assert {n for _p, n in found} == {registry.LABEL_MAX}, found


def test_no_other_doc_states_the_time_of_the_loop_or_of_ci():
    timed = re.compile(r"(make unit|make test|make unit36|\.ci/run|CI\b)[^\n]{0,100}?\b(about|takes?|in)\s+"
                       r"\d+([.,–-]\d+)?\s*(s|seconds|min|minutes)\b")
    stated = []
    for path in _docs():
        if os.path.basename(path) == "figures.md":
            continue
        with open(path) as f:
            for n, line in enumerate(f, 1):
                if timed.search(line):
                    stated.append("{}:{}: {}".format(os.path.relpath(path, ROOT), n, line.strip()))
    assert stated == [], "link docs/figures.md instead:\n" + "\n".join(stated)


def test_the_readme_links_the_figures():
    with open(os.path.join(ROOT, "README.md")) as f:
        assert "docs/figures.md" in f.read()
