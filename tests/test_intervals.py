"""Mean confidence intervals (rageval.stats.intervals) against scipy's own t interval, on real per-query
measure values of the shipped eRAG run."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from rageval.stats.intervals import grouped_mean_intervals, mean_interval, wilson_interval
from rageval.store import RunReader

SHIPPED = Path(__file__).resolve().parent.parent / "data" / "runs" / "nq_open-bm25-gemma3_270m.sqlite"


@pytest.fixture(scope="module")
def measures():
    with RunReader(SHIPPED) as reader:
        return reader.measure_table()


def test_mean_interval_equals_scipy_t_interval(measures):
    values = measures[(measures.method == "erag:em") & (measures.measure == "P@5")]["value"].to_numpy()
    got = mean_interval(values, 0.95)
    low, high = stats.t.interval(0.95, len(values) - 1, loc=values.mean(), scale=stats.sem(values))
    assert got.n == len(values) > 100
    assert got.mean == pytest.approx(values.mean())
    assert (got.low, got.high) == pytest.approx((low, high))
    wider = mean_interval(values, 0.99)
    assert wider.low < got.low and wider.high > got.high


def test_grouped_intervals_equal_one_call_per_group(measures):
    table = grouped_mean_intervals(measures, ["method", "measure"])
    assert len(table) == measures.groupby(["method", "measure"]).ngroups
    for row in table.sample(8, random_state=0).itertuples():
        values = measures[(measures.method == row.method) & (measures.measure == row.measure)]["value"]
        single = mean_interval(values)
        assert (row.mean, row.low, row.high, row.n) == pytest.approx((single.mean, single.low, single.high, single.n))


def test_degenerate_samples():
    assert math.isnan(mean_interval([]).mean)
    one = mean_interval([0.5])
    assert one.mean == 0.5 and math.isnan(one.low) and one.n == 1
    constant = mean_interval([1.0, 1.0, 1.0])
    assert (constant.low, constant.high) == (1.0, 1.0)
    assert mean_interval([1.0, np.nan, 0.0]).n == 2
    with pytest.raises(ValueError, match="confidence"):
        mean_interval([1.0, 2.0], confidence=1.0)


def test_intervals_from_sqlite_moments_equal_those_from_every_value(measures):
    from rageval.stats.intervals import intervals_from_moments

    with RunReader(SHIPPED) as reader:
        moments = reader.measure_moments()
    from_sql = intervals_from_moments(moments).set_index(["method", "measure"]).sort_index()
    from_values = grouped_mean_intervals(measures, ["method", "measure"]).set_index(["method", "measure"]).sort_index()
    assert list(from_sql.index) == list(from_values.index)
    for column in ("mean", "low", "high", "n"):
        assert from_sql[column].to_numpy() == pytest.approx(from_values[column].to_numpy(), abs=1e-9, nan_ok=True)


@pytest.mark.parametrize(("successes", "n"), [(0, 1), (1, 1), (0, 30), (3, 30), (15, 30), (247, 300), (300, 300),
                                              (5, 100_000)])
@pytest.mark.parametrize("confidence", [0.95, 0.9])
def test_wilson_interval_equals_scipys(successes, n, confidence):
    """scipy's ``binomtest(...).proportion_ci(method="wilson")`` is the reference (scipy.stats, Newcombe 1998)."""
    ours = wilson_interval(successes, n, confidence)
    theirs = stats.binomtest(successes, n).proportion_ci(confidence_level=confidence, method="wilson")
    assert ours.mean == successes / n and ours.n == n
    assert ours.low == pytest.approx(theirs.low, abs=1e-12) and ours.high == pytest.approx(theirs.high, abs=1e-12)
    assert 0 <= ours.low <= ours.mean <= ours.high <= 1


def test_wilson_interval_by_hand_and_edges():
    # 0 of 10 at 95%: the upper end is z^2 / (n + z^2) (the closed form at p = 0), 0.2775 with z = 1.95996.
    z = 1.959963984540054
    assert wilson_interval(0, 10).high == pytest.approx(z * z / (10 + z * z)) and wilson_interval(0, 10).low == 0
    empty = wilson_interval(0, 0)
    assert empty.n == 0 and all(math.isnan(v) for v in (empty.mean, empty.low, empty.high))
    with pytest.raises(ValueError):
        wilson_interval(3, 2)
