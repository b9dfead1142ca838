"""Mean confidence intervals (rageval.stats.intervals) against scipy's own t interval, on real per-query
measure values of the shipped eRAG run."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from rageval.stats.intervals import (
    grouped_mean_intervals,
    intervals_from_moments,
    macro_bootstrap_interval,
    mean_interval,
    share_from_counts,
    share_interval,
    wilson_interval,
)
from rageval.store import RunReader

SHIPPED = Path(__file__).resolve().parents[2] / "data" / "runs" / "nq_open-bm25-gemma3_270m.sqlite"


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
def test_share_from_counts_equals_scipys_wilson(successes, n, confidence):
    """scipy's ``binomtest(...).proportion_ci(method="wilson")`` is the reference (scipy.stats, Newcombe 1998)."""
    ours = share_from_counts(successes, n, confidence)
    theirs = stats.binomtest(successes, n).proportion_ci(confidence_level=confidence, method="wilson")
    assert ours.mean == successes / n and ours.n == n
    assert ours.low == pytest.approx(theirs.low, abs=1e-12) and ours.high == pytest.approx(theirs.high, abs=1e-12)
    assert 0 <= ours.low <= ours.mean <= ours.high <= 1


def test_share_from_counts_by_hand_and_edges():
    # 0 of 10 at 95%: the upper end is z^2 / (n + z^2) (the closed form at p = 0), 0.2775 with z = 1.95996.
    z = 1.959963984540054
    assert share_from_counts(0, 10).high == pytest.approx(z * z / (10 + z * z)) and share_from_counts(0, 10).low == 0
    assert wilson_interval(10, 10)[1] == 1
    empty = share_from_counts(0, 0)
    assert empty.n == 0 and all(math.isnan(v) for v in (empty.mean, empty.low, empty.high))
    with pytest.raises(ValueError):
        share_from_counts(3, 2)


# Newcombe (1998), "Two-sided confidence intervals for the single proportion: comparison of seven methods",
# Statistics in Medicine 17:857-872, Table II, method 3 (Wilson score interval without continuity correction),
# to the 4 decimals printed there.
NEWCOMBE_WILSON = [((81, 263), (0.2553, 0.3662)), ((15, 148), (0.0624, 0.1605)), ((0, 20), (0.0, 0.1611)),
                   ((1, 29), (0.0061, 0.1718))]


@pytest.mark.parametrize(("counts", "expected"), NEWCOMBE_WILSON)
def test_wilson_interval_equals_newcombe_table(counts, expected):
    low, high = wilson_interval(*counts)
    assert (round(low, 4), round(high, 4)) == expected


def test_wilson_interval_stays_in_unit_interval_and_arrays_agree():
    successes, n = np.array([0, 1, 5, 29, 30, 0]), np.array([30, 30, 30, 30, 30, 1])
    low, high = wilson_interval(successes, n)
    assert (low >= 0).all() and (high <= 1).all() and (low < successes / n + 1e-12).all()
    assert (high > successes / n - 1e-12).all()
    for i in range(len(n)):
        assert (low[i], high[i]) == pytest.approx(wilson_interval(int(successes[i]), int(n[i])))
    # the Student-t interval of the same 0/1 scores goes below 0 for 1 of 30; Wilson does not
    scores = np.r_[np.ones(1), np.zeros(29)]
    assert mean_interval(scores).low < 0 < wilson_interval(1, 30)[0]
    assert math.isnan(wilson_interval(0, 0)[0])
    with pytest.raises(ValueError):
        wilson_interval(3, 2)


def test_share_interval_on_shipped_e2e_scores():
    with RunReader(SHIPPED) as reader:
        scores = reader.e2e_table()["score"].to_numpy()
    got = share_interval(scores)
    assert got.n == len(scores) > 100
    assert got.mean == pytest.approx(scores.mean())
    assert (got.low, got.high) == pytest.approx(wilson_interval(int(scores.sum()), len(scores)))
    assert 0 <= got.low < got.mean < got.high <= 1
    with pytest.raises(ValueError):
        share_interval([0.5, 1.0])


def test_moments_of_0_1_values_get_the_wilson_interval(measures):
    hits = measures[(measures.method == "gold") & (measures.measure.str.startswith("Hit@"))]
    graded = measures[(measures.method == "erag:em") & (measures.measure == "nDCG@10")]
    frame = pd.concat([hits[hits.measure == hits.measure.iloc[0]], graded])
    moments = (frame.assign(sq=frame["value"] ** 2).groupby("measure")
               .agg(n=("value", "count"), mean=("value", "mean"), sum_sq=("sq", "sum")).reset_index())
    both = intervals_from_moments(moments, binary_as_share=True).set_index("measure")
    plain = intervals_from_moments(moments).set_index("measure")
    hit = hits.measure.iloc[0]
    values = hits[hits.measure == hit]["value"]
    assert set(values.unique()) <= {0.0, 1.0}
    assert (both.at[hit, "low"], both.at[hit, "high"]) == pytest.approx(wilson_interval(int(values.sum()), len(values)))
    assert (both.at["nDCG@10", "low"], both.at["nDCG@10", "high"]) == (plain.at["nDCG@10", "low"],
                                                                       plain.at["nDCG@10", "high"])


def test_macro_bootstrap_of_one_group_matches_scipy_percentile_bootstrap():
    values = np.random.default_rng(3).random(300)
    frame = pd.DataFrame({"cluster": "nq", "agent": "a", "query_id": np.arange(300), "value": values})
    ours = macro_bootstrap_interval(frame, n_resamples=6000)
    theirs = stats.bootstrap((values,), np.mean, method="percentile", n_resamples=6000, random_state=0)
    assert ours.mean == pytest.approx(values.mean())
    assert ours.low == pytest.approx(theirs.confidence_interval.low, abs=0.004)
    assert ours.high == pytest.approx(theirs.confidence_interval.high, abs=0.004)


def test_macro_bootstrap_shares_each_clusters_draw_across_its_agents():
    rng = np.random.default_rng(4)
    questions = np.arange(200)
    shared = rng.random(200)
    # Two agents of one task with identical scores, one agent of another task.
    frame = pd.concat([
        pd.DataFrame({"cluster": "nq", "agent": "a", "query_id": questions, "value": shared}),
        pd.DataFrame({"cluster": "nq", "agent": "b", "query_id": questions, "value": shared}),
        pd.DataFrame({"cluster": "hotpot", "agent": "c", "query_id": questions[:150], "value": rng.random(150)}),
    ])
    result = macro_bootstrap_interval(frame, n_resamples=4000)
    means = frame.groupby("agent").value.mean()
    assert result.mean == pytest.approx(means.mean())
    # Agents a and b move together in every resample, so the macro of (a, b, c) has the spread of (2a + c) / 3,
    # wider than if a and b were drawn independently: compare with the macro of a and c alone, weighted.
    alone = macro_bootstrap_interval(frame.assign(cluster=frame.agent), n_resamples=4000)
    assert (result.high - result.low) > 1.1 * (alone.high - alone.low)
    assert result.low < result.mean < result.high


def test_macro_bootstrap_without_resamplable_units_has_no_interval():
    frame = pd.DataFrame({"cluster": ["x", "y"], "agent": ["a", "b"], "query_id": ["q", "q"], "value": [1.0, 0.0]})
    result = macro_bootstrap_interval(frame)
    assert result.mean == 0.5 and math.isnan(result.low) and math.isnan(result.high)


@pytest.mark.parametrize("confidence", [0.8, 0.9, 0.95, 0.99, 0.999])
def test_t_quantile_matches_scipy_on_both_sides_of_the_expansion_threshold(confidence):
    """The Cornish-Fisher expansion (df >= EXPANSION_MIN_DF) and scipy's stdtrit (below) against scipy.stats.t."""
    from rageval.stats.intervals import EXPANSION_MIN_DF, _t_quantile

    dfs = np.array([1, 2, 10, EXPANSION_MIN_DF - 1, EXPANSION_MIN_DF, 299, 1_000, 99_999, 10**7], dtype=float)
    expected = stats.t.ppf((1 + confidence) / 2, dfs)
    assert np.allclose(_t_quantile(confidence, dfs), expected, rtol=0, atol=1e-9)
    assert _t_quantile(confidence, 299) == pytest.approx(stats.t.ppf((1 + confidence) / 2, 299), abs=1e-9)
    assert np.isnan(_t_quantile(confidence, np.array([np.nan, 5.0]))[0])


def test_intervals_of_large_samples_do_not_import_scipy():
    """A page's intervals over >= 201 queries need no scipy (its import is ~0.3 s of a cold dashboard page)."""
    import subprocess
    import sys

    code = ("import sys, pandas as pd\n"
            "from rageval.stats.intervals import intervals_from_moments, mean_interval\n"
            "moments = pd.DataFrame({'n': [300, 1], 'mean': [0.5, 1.0], 'sum_sq': [100.0, 1.0]})\n"
            "frame = intervals_from_moments(moments)\n"
            "assert frame['low'].notna().iloc[0] and frame['low'].isna().iloc[1], frame\n"
            "mean_interval([0.0, 1.0] * 150)\n"
            "print('scipy' in sys.modules)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            cwd=Path(__file__).resolve().parents[2])
    assert result.stdout.strip() == "False", result.stderr
