"""rageval.stats.correlation: cross-checked against scipy.stats, plus edge cases and the bootstrap."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats

from rageval.stats import BootstrapResult, average_ranks, bootstrap_ci, kendall_tau_b, spearman_rho


def tied_sample(seed: int, n: int):
    """Integer-valued x and y (many ties), y partly driven by x so the coefficients are not ~0."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 6, n).astype(float)
    y = np.round(0.5 * x + rng.normal(0, 1, n))
    return x, y


@pytest.mark.parametrize("n", [2, 3, 7, 50, 333, 2000])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_kendall_tau_b_matches_scipy(seed, n):
    x, y = tied_sample(seed, n)
    expected = scipy.stats.kendalltau(x, y, variant="b").statistic
    if math.isnan(expected):
        assert math.isnan(kendall_tau_b(x, y))
    else:
        assert kendall_tau_b(x, y) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("n", [3, 7, 50, 333, 2000])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_spearman_rho_matches_scipy(seed, n):
    x, y = tied_sample(seed, n)
    assert spearman_rho(x, y) == pytest.approx(scipy.stats.spearmanr(x, y).statistic, abs=1e-12)


def test_continuous_values_without_ties_match_scipy():
    rng = np.random.default_rng(7)
    x, y = rng.random(500), rng.random(500)
    assert kendall_tau_b(x, y) == pytest.approx(scipy.stats.kendalltau(x, y).statistic, abs=1e-12)
    assert spearman_rho(x, y) == pytest.approx(scipy.stats.spearmanr(x, y).statistic, abs=1e-12)


def test_hand_computed_small_case():
    # x = 1,2,3 ; y = 1,3,2: pairs (1,2) C, (1,3) C, (2,3) D -> tau = (2 - 1) / 3.
    assert kendall_tau_b([1, 2, 3], [1, 3, 2]) == pytest.approx(1 / 3)
    # ranks equal the values; d = (0, 1, 1): rho = 1 - 6 * 2 / (3 * 8) = 0.5.
    assert spearman_rho([1, 2, 3], [1, 3, 2]) == pytest.approx(0.5)
    assert kendall_tau_b([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    assert spearman_rho([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)


def test_average_ranks_share_ties():
    # 10 is smallest (rank 1); the two 20s span ranks 2 and 3 -> 2.5; 30 -> 4.
    np.testing.assert_array_equal(average_ranks([20, 10, 30, 20]), [2.5, 1.0, 4.0, 2.5])


@pytest.mark.parametrize("function", [kendall_tau_b, spearman_rho])
@pytest.mark.parametrize(("x", "y"), [([1, 1, 1], [1, 2, 3]), ([1, 2, 3], [0, 0, 0]), ([1], [2]), ([], [])])
def test_undefined_correlation_is_nan(function, x, y):
    assert math.isnan(function(x, y))


@pytest.mark.parametrize("function", [kendall_tau_b, spearman_rho])
def test_bad_inputs_are_refused(function):
    with pytest.raises(ValueError, match="equal length"):
        function([1, 2, 3], [1, 2])
    with pytest.raises(ValueError, match="finite"):
        function([1, 2, float("nan")], [1, 2, 3])


def test_bootstrap_is_deterministic_and_brackets_the_value():
    x, y = tied_sample(3, 200)
    first = bootstrap_ci(x, y, kendall_tau_b, n_resamples=300, seed=5)
    assert first == bootstrap_ci(x, y, kendall_tau_b, n_resamples=300, seed=5)
    assert first != bootstrap_ci(x, y, kendall_tau_b, n_resamples=300, seed=6)
    assert isinstance(first, BootstrapResult)
    assert (first.n, first.n_resamples, first.confidence) == (200, 300, 0.95)
    assert first.value == kendall_tau_b(x, y)
    assert first.low < first.value < first.high
    narrower = bootstrap_ci(x, y, kendall_tau_b, n_resamples=300, confidence=0.5, seed=5)
    assert first.low < narrower.low < narrower.high < first.high


def test_bootstrap_agrees_with_scipy_percentile_bootstrap():
    # Different random streams, same method: the bounds agree to within resampling noise
    # (0.02 here, about a fifth of the interval's width).
    x, y = tied_sample(4, 300)
    ours = bootstrap_ci(x, y, spearman_rho, n_resamples=2000, seed=0)
    reference = scipy.stats.bootstrap(
        (x, y), lambda a, b: scipy.stats.spearmanr(a, b).statistic, paired=True, vectorized=False,
        method="percentile", n_resamples=2000, random_state=0,
    ).confidence_interval
    assert ours.low == pytest.approx(reference.low, abs=0.02)
    assert ours.high == pytest.approx(reference.high, abs=0.02)


def test_bootstrap_of_perfect_agreement_is_a_point():
    # Every resample with two distinct values has tau = 1; all-equal resamples are nan and dropped.
    x = np.arange(30.0)
    result = bootstrap_ci(x, 2 * x, kendall_tau_b, n_resamples=200)
    assert (result.value, result.low, result.high) == (1.0, 1.0, 1.0)


def test_bootstrap_of_constant_input_is_nan():
    result = bootstrap_ci([1, 1, 1, 1], [1, 2, 3, 4], spearman_rho, n_resamples=50)
    assert math.isnan(result.value) and math.isnan(result.low) and math.isnan(result.high)
    assert result.n == 4


def test_bootstrap_arguments_are_checked():
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_ci([1, 2, 3], [1, 2, 3], spearman_rho, confidence=95)
    with pytest.raises(ValueError, match="n_resamples"):
        bootstrap_ci([1, 2, 3], [1, 2, 3], spearman_rho, n_resamples=0)


def test_correlation_table_groups_and_matches_the_coefficients():
    import pandas as pd

    from rageval.stats import compute_correlation_table

    rng = np.random.default_rng(7)
    downstream = {f"q{i}": float(v) for i, v in enumerate(rng.integers(0, 2, size=60))}
    rows = [{"method": method, "measure": measure, "query_id": q, "value": float(rng.random())}
            for method in ("erag:em", "gold") for measure in ("P@10", "nDCG@10") for q in downstream]
    rows.append({"method": "gold", "measure": "P@10", "query_id": "no-downstream", "value": 1.0})
    table = compute_correlation_table(pd.DataFrame(rows), downstream, n_resamples=200, seed=1)
    assert list(zip(table["method"], table["measure"])) == [
        ("erag:em", "P@10"), ("erag:em", "nDCG@10"), ("gold", "P@10"), ("gold", "nDCG@10")]
    assert table["n"].tolist() == [60] * 4  # the query without a downstream score is left out
    frame = pd.DataFrame(rows)
    group = frame[(frame.method == "gold") & (frame.measure == "P@10") & frame.query_id.isin(downstream.keys())]
    y = [downstream[q] for q in group.query_id]
    row = table.iloc[2]
    assert row["tau"] == pytest.approx(scipy.stats.kendalltau(group.value, y, variant="b").statistic, abs=1e-12)
    assert row["rho"] == pytest.approx(scipy.stats.spearmanr(group.value, y).statistic, abs=1e-12)
    assert row["tau_low"] <= row["tau"] <= row["tau_high"]


def looped_bootstrap(x, y, statistic, n_resamples, seed):
    """The bootstrap as it was before it was vectorised: ``statistic`` called on each resample (a wrapper, so
    :func:`bootstrap_ci` takes its general path)."""
    return bootstrap_ci(x, y, lambda a, b: statistic(a, b), n_resamples=n_resamples, seed=seed)


def mixed_sample(kind: str, seed: int, n: int):
    rng = np.random.default_rng(seed)
    if kind == "tied":
        return tied_sample(seed, n)
    if kind == "continuous":
        x = rng.random(n)
        return x, x + rng.normal(0, 0.5, n)
    # a measure with few values (P@10) against a binary E2E score, as in eRAG's Table 1
    x = rng.integers(0, 11, n) / 10
    return x, (rng.random(n) < 0.2 + 0.5 * x).astype(float)


@pytest.mark.parametrize("kind", ["tied", "continuous", "binary"])
@pytest.mark.parametrize("n", [2, 3, 9, 120])
def test_vectorised_bootstrap_equals_the_loop(kind, n):
    from rageval.stats import bootstrap_rank_correlations

    x, y = mixed_sample(kind, n, n)
    tau, rho = bootstrap_rank_correlations(x, y, n_resamples=150, seed=2)
    for fast, statistic in ((tau, kendall_tau_b), (rho, spearman_rho)):
        slow = looped_bootstrap(x, y, statistic, 150, 2)
        assert (fast.n, fast.n_resamples, fast.confidence) == (slow.n, slow.n_resamples, slow.confidence)
        np.testing.assert_allclose([fast.value, fast.low, fast.high], [slow.value, slow.low, slow.high],
                                   atol=1e-12, equal_nan=True)


def test_vectorised_resamples_match_scipy_resample_by_resample(monkeypatch):
    # The per-resample coefficients of the vectorised path against scipy on the very same resamples.
    from rageval.stats import correlation

    x, y = mixed_sample("binary", 5, 80)
    captured = {}
    original = correlation._percentile_interval

    def capture(value, resampled, n, n_resamples, confidence):
        captured.setdefault("tau" if "tau" not in captured else "rho", resampled.copy())
        return original(value, resampled, n, n_resamples, confidence)

    monkeypatch.setattr(correlation, "_percentile_interval", capture)
    monkeypatch.setattr(correlation, "_CHUNK_CELLS", 80 * 7)  # several chunks, one generator stream
    correlation.bootstrap_rank_correlations(x, y, n_resamples=40, seed=9)
    indices = np.random.default_rng(9).integers(0, 80, size=(40, 80))
    expected_tau = [scipy.stats.kendalltau(x[i], y[i], variant="b").statistic for i in indices]
    expected_rho = [scipy.stats.spearmanr(x[i], y[i]).statistic for i in indices]
    np.testing.assert_allclose(captured["tau"], expected_tau, atol=1e-12)
    np.testing.assert_allclose(captured["rho"], expected_rho, atol=1e-12)


def test_vectorised_bootstrap_of_constant_input_is_nan():
    from rageval.stats import bootstrap_rank_correlations

    tau, rho = bootstrap_rank_correlations([1, 1, 1, 1], [1, 2, 3, 4], n_resamples=50)
    assert all(math.isnan(v) for r in (tau, rho) for v in (r.value, r.low, r.high))
    assert tau.n == rho.n == 4


# --- rageval.correlations: the tables built on these coefficients -------------------------------------------------

def _frames(seed: int = 0, n: int = 40):
    """Per-query measures of two label methods at k = 1, 3 and an E2E score at each k."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    queries = [f"q{i}" for i in range(n)]
    rows, e2e = [], []
    for k in (1, 3):
        score = rng.integers(0, 2, n).astype(float)
        e2e += [{"query_id": q, "k": k, "score": s} for q, s in zip(queries, score)]
        for method, noise in (("erag:em", 0.3), ("gold", 1.0)):
            for family in ("P", "nDCG"):
                value = np.round(score + rng.normal(0, noise, n), 1)
                rows += [{"method": method, "measure": f"{family}@{k}", "query_id": q, "value": v}
                         for q, v in zip(queries, value)]
    return pd.DataFrame(rows), pd.DataFrame(e2e)


def test_k_sweep_from_frames_takes_each_methods_best_family_at_the_main_k():
    from rageval.correlations import best_measures, correlation_table_at_k, k_sweep_from_frames, measure_family

    measures, e2e = _frames()
    sweep = k_sweep_from_frames(measures, e2e, 3)
    best = best_measures(correlation_table_at_k(measures, e2e, 3, n_resamples=10), 3)
    assert list(sweep.columns) == ["method", "family", "measure", "k", "tau", "n"]
    assert sweep[["method", "k"]].values.tolist() == [["erag:em", 1], ["erag:em", 3], ["gold", 1], ["gold", 3]]
    for row in sweep.itertuples():
        assert row.family == measure_family(best.set_index("method").loc[row.method, "measure"])
        chosen = measures[(measures["method"] == row.method) & (measures["measure"] == row.measure)]
        scores = e2e[e2e["k"] == row.k].set_index("query_id")["score"]
        assert row.tau == pytest.approx(kendall_tau_b(chosen["value"], scores.loc[chosen["query_id"]]))
        assert row.n == 40
    assert k_sweep_from_frames(measures, e2e, None).empty


def test_stored_correlations_hold_only_while_they_count_the_same_queries():
    import pandas as pd

    from rageval.correlations import current_stored_taus, stored_table_is_current

    stored = pd.DataFrame({"method": ["erag:em", "gold"], "measure": ["P@3", "P@3"], "n": [40, 40],
                           "tau": [0.5, 0.1]})
    assert stored_table_is_current(stored, {("erag:em", "P@3"): 40, ("gold", "P@3"): 40})
    assert not stored_table_is_current(stored, {("erag:em", "P@3"): 40, ("gold", "P@3"): 39})  # values changed
    assert not stored_table_is_current(stored, {("erag:em", "P@3"): 40, ("gold", "P@3"): 40,
                                                ("erag:f1", "P@3"): 40})  # a method added since
    assert not stored_table_is_current(stored.iloc[:0], {})  # none stored
    assert current_stored_taus(stored, {("erag:em", "P@3"): 40, ("gold", "P@3"): 39}) == {("erag:em", "P@3"): (0.5, 40)}


def test_label_methods_in_one_order():
    from rageval.labelmethods import METHOD_ORDER, order_label_methods

    assert order_label_methods(["zeta", "gold", "erag:em@gemma", "erag:f1", "erag:em"]) == [
        "erag:em", "erag:f1", "gold", "erag:em@gemma", "zeta"]
    assert order_label_methods(reversed(METHOD_ORDER)) == list(METHOD_ORDER)
