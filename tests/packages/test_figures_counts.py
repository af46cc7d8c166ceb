"""The bundle's counts docs/figures.md states are what `make packages` builds."""
import os

import pytest

FIGURES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "docs",
                       "figures.md")


def stated(label):
    with open(FIGURES) as f:
        rows = [line.split("|")[2].strip() for line in f if line.startswith("| " + label + " ")]
    assert len(rows) == 1, (label, rows)
    return int(rows[0])


@pytest.mark.parametrize("label, key", [("VNF packages", "vnf"), ("NS packages", "ns"), ("NSTs", "nst"),
                                        ("variants", "variants")])
def test_the_package_counts_are_the_builds(shipped_packages, label, key):
    _out, catalog = shipped_packages
    assert stated(label) == len(catalog[key])
