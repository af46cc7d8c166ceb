"""The statistics and target checks of `make bench` (pure functions, no root needed)."""
import pytest

from testbed import benchstats as bs


def test_summarize_median_min_max_ignores_none():
    s = bs.summarize([3.0, None, 1.0, 2.0])
    assert s == {"n": 3, "median": 2.0, "min": 1.0, "max": 3.0}


def test_summarize_even_count_takes_mean_of_middle_pair():
    assert bs.summarize([1, 2, 3, 10])["median"] == 2.5


def test_summarize_empty_has_no_numbers():
    assert bs.summarize([]) == {"n": 0, "median": None, "min": None, "max": None}
    assert bs.summarize([None]) == {"n": 0, "median": None, "min": None, "max": None}


def test_ratio_guards_missing_and_zero():
    assert bs.ratio(1, 4) == 0.25
    assert bs.ratio(None, 4) is None
    assert bs.ratio(1, 0) is None
    assert bs.ratio(1, None) is None


def test_paired_ratios_pair_rounds():
    assert bs.paired_ratios([1, 2, None], [2, 4, 5]) == [0.5, 0.5, None]


def test_summarize_rounds_per_metric_with_gaps():
    out = bs.summarize_rounds([{"a": 1, "b": 10}, {"a": 3}, {"a": 2, "b": 30}])
    assert out["a"] == {"n": 3, "median": 2.0, "min": 1.0, "max": 3.0}
    assert out["b"]["n"] == 2 and out["b"]["median"] == 20.0


@pytest.mark.parametrize("name,value,met", [
    ("tcp1_ratio", 0.2, True), ("tcp1_ratio", 0.1, False), ("tcp1_ratio", 0.15, True),
    ("added_rtt_ms", 0.2, True), ("added_rtt_ms", 0.3, False),
    ("product_vs_bare", 0.96, True), ("product_vs_bare", 0.9, False),
    ("synthetic_32_over_8", 4.0, True), ("synthetic_32_over_8", 4.1, False),
    ("eps_max_hooks_per_unit_relation", 3, True), ("eps_max_hooks_per_unit_relation", 5, False),
])
def test_check_target_direction(name, value, met):
    t = bs.check_target(name, value)
    assert t["met"] is met and t["measured"] == value and t["target"] == bs.TARGETS[name][2]


def test_check_target_unmeasured_is_not_a_verdict():
    assert bs.check_target("tcp1_ratio", None)["met"] is None


def test_growth_uses_medians():
    times = {8: [10.0, 12.0, 11.0], 32: [40.0, 50.0, 44.0]}
    assert bs.growth(times, 8, 32) == pytest.approx(4.0)
    assert bs.growth({8: [10.0]}, 8, 32) is None


def test_table_aligns_columns():
    text = bs.table(("metric", "value"), [["a", "1.000"], ["longer", "22.0"]])
    lines = text.splitlines()
    assert lines[1] == "-" * len(lines[0])
    assert len({len(line) for line in lines}) == 1
    assert lines[2].startswith("a ") and lines[2].endswith("1.000")


def test_fmt():
    assert bs.fmt(None) == "-"
    assert bs.fmt(1234.5678, 1) == "1,234.6"
    assert bs.fmt(7) == "7"


def test_summary_rows_scale():
    rows = bs.summary_rows({"x_bps": bs.summarize([1e9, 2e9])}, scale=1e6, digits=0)
    assert rows == [["x_bps", "1,500", "1,000", "2,000", 2]]
