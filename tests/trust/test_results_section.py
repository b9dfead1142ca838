"""docs/results.md's Trust section on real human labels (issue 41, item 5): the HotpotQA runs' crowd judgements are
the people's labels; the true share is the crowd's share over every retrieved passage (counted here from the run's
own gold labels), coverage is a share of draws, and one draw through ``annotations import`` + ``trust`` equals the
direct computation."""

from __future__ import annotations

from pathlib import Path

import pytest

from rageval.paths import shipped_runs_dir
from rageval.store.runs import RunReader
from rageval.trust.ppi import HUMAN_ONLY, PPI
from rageval.trust.results_section import (
    RUNS,
    STRATIFY_BY,
    coverage_table,
    end_to_end_draw,
    end_to_end_queue_draw,
    read_population,
    strata_of,
    stratified_coverage_of,
    stratified_draw,
    trust_section,
)

RUNS_DIR = shipped_runs_dir() or Path("data/runs")


def test_the_truth_is_the_crowd_share_of_every_retrieved_passage():
    path = RUNS_DIR / RUNS[0]
    with RunReader(path) as reader:
        retrieved = {(q, p) for q, r in reader.rankings().items() for p in r.passage_ids}
        labels = reader.labels()
    supporting = {(q, p) for q, p, m, v in zip(labels["query_id"], labels["passage_id"], labels["method"],
                                               labels["value"]) if m == "gold" and v >= 0.5}
    rows, checks = coverage_table(RUNS_DIR, sizes=(60,), draws=20)
    real = [r for r in rows if r.run == path.stem]
    assert real and all(r.truth == pytest.approx(len(supporting & retrieved) / len(retrieved)) for r in real)
    assert {r.method for r in real}.isdisjoint({"gold", "gold_page"})
    assert all(0 <= r.coverage <= 1 and r.draws + r.no_interval == 20 for r in real)
    assert checks[path.stem] < 1e-12


def test_one_draw_end_to_end_equals_the_direct_computation():
    assert end_to_end_draw(RUNS_DIR / RUNS[1], 40, seed=3) < 1e-12


def test_the_section_lists_each_method_and_the_simulated_population():
    text = "\n".join(trust_section(RUNS_DIR, sizes=(60,), draws=10, stratified_sizes=(30,)))
    assert text.startswith("## Trust: PPI, PPI++ and human labels alone, checked on real human labels")
    assert "| hotpotqa-candidates-gemma3_270m | llm_relevance | 60 |" in text
    assert "| simulated (tests/trust/test_coverage.py) | simulated method | 300 |" in text
    assert "### Stratified samples, as an annotation queue draws them" in text
    assert f"| hotpotqa-bm25-gemma3_270m | {STRATIFY_BY} | 30 |" in text


def test_a_stratified_draw_is_the_textbook_stratified_estimate():
    """Human labels alone on a sample stratified by contains_answer (15 + 15 passages): sum_h W_h mean_h, its
    variance sum_h W_h^2 s_h^2 / n_h (Cochran 5.1, no finite-population correction; s_h^2 with divisor n_h, as
    ppi-python's ppi_mean_ci, which tests/trust/test_ppi.py matches), a 95% normal interval by scipy."""
    import numpy as np
    from scipy import stats

    y, predictions = read_population(RUNS_DIR / RUNS[0])
    strata = strata_of(predictions[STRATIFY_BY])
    rng = np.random.default_rng(5)
    sample = [rng.choice(members, size=15, replace=False) for members in strata]
    while any(y[drawn].min() == y[drawn].max() for drawn in sample):  # a stratum without variance: below
        sample = [rng.choice(members, size=15, replace=False) for members in strata]
    weights = [len(members) / len(y) for members in strata]
    point = sum(w * y[s].mean() for w, s in zip(weights, sample))
    se = np.sqrt(sum(w ** 2 * y[s].var(ddof=0) / len(s) for w, s in zip(weights, sample)))
    low, high = stats.norm.interval(0.95, loc=point, scale=se)
    ours = stratified_draw(y, predictions["erag:em"], strata, sample, HUMAN_ONLY)
    assert ours.estimate == pytest.approx(point) and ours.low == pytest.approx(max(low, 0.0))
    assert ours.high == pytest.approx(min(high, 1.0))
    # A stratum whose sample shows no variance (15 passages the crowd all judged not relevant) would add nothing
    # to the interval: the estimate stays, no interval is given, and the reason names the stratum.
    flat = [rng.choice(strata[0][y[strata[0]] == 0], size=15, replace=False), sample[1]]
    degenerate = stratified_draw(y, predictions["erag:em"], strata, flat, HUMAN_ONLY)
    assert np.isnan(degenerate.low) and np.isnan(degenerate.high) and "stratum 0 shows no variance" in degenerate.reason
    assert degenerate.estimate == pytest.approx(weights[1] * y[sample[1]].mean())
    # PPI: what a stratum's labels estimate is y - yhat; when it shows no variance there (the method right on all 15,
    # its labels varying elsewhere in the stratum), the interval is not given either
    em = predictions["erag:em"]
    agreeing = rng.choice(strata[0][(y[strata[0]] == 0) & (em[strata[0]] == 0)], size=15, replace=False)
    ppi = stratified_draw(y, em, strata, [agreeing, sample[1]], PPI)
    assert em[strata[0]].std() > 0 and np.isnan(ppi.low) and "stratum 0 shows no variance" in ppi.reason
    rows = stratified_coverage_of(y, {STRATIFY_BY: predictions[STRATIFY_BY]}, predictions[STRATIFY_BY], (30, 60),
                                  20, 0, "r")
    assert {r.n for r in rows} == {30, 60} and all(r.draws + r.no_interval == 20 for r in rows)
    too_many = stratified_coverage_of(y, predictions, predictions[STRATIFY_BY], (2 * len(strata[1]) + 2,), 5, 0, "r")
    assert too_many == []  # a stratum cannot give n / 2 passages: no row, never a sample with replacement


def test_one_stratified_draw_through_a_queue_equals_the_direct_computation():
    assert end_to_end_queue_draw(RUNS_DIR / RUNS[0], 30, seed=2) < 1e-12
