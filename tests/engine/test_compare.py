"""Tests of the paired run comparison (rageval/compare.py): the tests against scipy and brute-force enumeration, and
wins/ties/losses on two real fixture runs with different rankings and partly different queries.

The fixture pair (:func:`write_fixture_pair`, also used by ``tests/ui/test_app_correlations_compare.py``): run A is
``tests/run_fixtures.build_small_run`` without query ``nq:5``; run B is the same run with every ranking reversed
(labels unchanged, measures recomputed by the engine's ``rageval.measures.compute_measures``, the E2E answer
re-read from the new top passage by the fixture's fake reader) without query ``nq:0``.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from rageval import compare
from rageval.measures import compute_measures
from rageval.stats.paired import mcnemar_exact
from rageval.store import E2EOutput, MeasureValue, Run, RunReader, write_run
from rageval.text_metrics import exact_match
from rageval.types import Ranking, ScoredPassage
from tests.run_fixtures import LABEL_METHODS, MEASURES, K, build_small_run, fake_reader

RUN_A, RUN_B = "fixture-a", "fixture-b"
ONLY_A, ONLY_B = "nq:5", "nq:0"


# --- the fixture pair ---------------------------------------------------------------------------------------

def without_query(run: Run, query_id: str) -> Run:
    """``run`` with every row of ``query_id`` removed (its passages stay: they are shared with other queries)."""
    def keep(rows):
        return [row for row in rows if row.query_id != query_id]
    return dataclasses.replace(run, queries=keep(run.queries), rankings=keep(run.rankings),
                               doc_outputs=keep(run.doc_outputs), labels=keep(run.labels),
                               e2e_outputs=keep(run.e2e_outputs), measure_values=keep(run.measure_values))


def reversed_run(run: Run) -> Run:
    """``run`` with each ranking reversed; measures and E2E answers recomputed for the new order."""
    passages = {p.passage_id: p for p in run.passages}
    answers = {q.query_id: q.answers for q in run.queries}
    rankings = {r.query_id: [p.passage_id for p in reversed(r.passages)] for r in run.rankings}
    qrels: dict[str, dict[str, dict[str, float]]] = {}
    for label in run.labels:
        qrels.setdefault(label.method, {}).setdefault(label.query_id, {})[label.passage_id] = label.value
    measure_values = []
    for method in LABEL_METHODS:
        values = compute_measures(MEASURES, rankings, qrels[method], queries=list(rankings))
        measure_values += [MeasureValue(method, row.measure, row.query_id, float(row.value))
                           for row in values.itertuples()]
    e2e = []
    for query_id, ids in rankings.items():
        output = fake_reader(passages[ids[0]], answers[query_id])
        e2e.append(E2EOutput(query_id, K, output, exact_match(output, answers[query_id])))
    new_rankings = [Ranking(q, tuple(ScoredPassage(pid, float(len(ids) - rank)) for rank, pid in enumerate(ids)))
                    for q, ids in rankings.items()]
    settings = {**run.settings, "retriever": "fixture ranking, reversed"}
    return dataclasses.replace(run, settings=settings, rankings=new_rankings, e2e_outputs=e2e,
                               measure_values=measure_values)


def write_fixture_pair(folder: Path) -> tuple[Path, Path]:
    """Write runs A and B (module docstring) into ``folder`` as ``fixture-a.sqlite`` and ``fixture-b.sqlite``."""
    run = build_small_run()
    path_a = write_run(without_query(run, ONLY_A), folder / f"{RUN_A}.sqlite")
    path_b = write_run(without_query(reversed_run(run), ONLY_B), folder / f"{RUN_B}.sqlite")
    return path_a, path_b


@pytest.fixture(scope="module")
def fixture_pair(tmp_path_factory) -> tuple[Path, Path]:
    return write_fixture_pair(tmp_path_factory.mktemp("compare_runs"))


def read_scores(path: Path, method: str, measure: str) -> pd.Series:
    with RunReader(path) as reader:
        return compare.per_query_scores(reader.measure_table(), reader.e2e_table(), method, measure)


# --- the sign test -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("a_better, b_better, ties", [(1, 2, 1), (8, 29, 263), (0, 7, 0), (5, 5, 3), (12, 0, 2),
                                                      (40, 60, 0)])
def test_sign_test_matches_scipy_binomtest(a_better, b_better, ties):
    differences = [0.5] * a_better + [-0.25] * b_better + [0.0] * ties
    result = compare.sign_test(differences)
    assert (result.a_better, result.b_better, result.ties) == (a_better, b_better, ties)
    assert result.p_value == pytest.approx(stats.binomtest(a_better, a_better + b_better, 0.5).pvalue, rel=1e-12)


def test_sign_test_of_ties_only_is_one():
    assert compare.sign_test([0.0, 0.0, 1e-15]).p_value == 1.0
    assert compare.sign_test([]).p_value == 1.0


# --- the paired randomization test ---------------------------------------------------------------------------

def brute_force_p(differences) -> float:
    """P(|mean(s * d)| >= |mean(d)|) over every sign vector s of every difference (zeros included)."""
    d = np.asarray(differences, dtype=float)
    observed = abs(d.mean())
    hits = sum(abs(np.mean(np.array(signs) * d)) >= observed - 1e-12
               for signs in itertools.product((1.0, -1.0), repeat=len(d)))
    return hits / 2 ** len(d)


def scipy_exact_p(a, b) -> float:
    result = stats.permutation_test((np.asarray(a, float), np.asarray(b, float)),
                                    lambda x, y, axis: np.mean(x - y, axis=axis), permutation_type="samples",
                                    vectorized=True, n_resamples=np.inf, alternative="two-sided")
    return float(result.pvalue)


# Two systems' nDCG-like graded scores on 12 queries (made up; 2 ties, A better on average).
SMALL_A = [1.0, 2 / 3, 1.0, 1 / 3, 1.0, 0.0, 2 / 3, 1.0, 1 / 3, 1.0, 2 / 3, 0.0]
SMALL_B = [2 / 3, 2 / 3, 0.0, 0.0, 1 / 3, 1 / 3, 0.0, 1.0, 0.0, 1 / 3, 1.0, 0.0]


def test_exact_permutation_test_matches_scipy_and_brute_force():
    differences = np.subtract(SMALL_A, SMALL_B)
    result = compare.paired_permutation_test(differences, n_permutations=10_000)
    assert result.exact and result.n_permutations == 2 ** 9  # 9 non-zero differences
    expected = brute_force_p(differences)
    assert 0.001 < expected < 0.2  # a case that is neither trivial nor extreme
    assert result.p_value == pytest.approx(expected, abs=1e-12)
    assert result.p_value == pytest.approx(scipy_exact_p(SMALL_A, SMALL_B), abs=1e-12)


def test_reversing_the_runs_keeps_the_two_sided_p_value():
    forward = compare.paired_permutation_test(np.subtract(SMALL_A, SMALL_B))
    backward = compare.paired_permutation_test(np.subtract(SMALL_B, SMALL_A))
    assert forward.p_value == backward.p_value


def test_monte_carlo_permutation_test_is_within_sampling_error_of_the_exact_p():
    rng = np.random.default_rng(7)
    a, b = rng.random(16), rng.random(16) - 0.15  # 2^16 sign vectors: more than the budget, so Monte Carlo
    differences = a - b
    exact = scipy_exact_p(a, b)
    result = compare.paired_permutation_test(differences, n_permutations=4_000, seed=3)
    assert not result.exact and result.n_permutations == 4_000 and result.seed == 3
    standard_error = math.sqrt(exact * (1 - exact) / 4_000)
    assert abs(result.p_value - exact) < 4 * standard_error + 1 / 4_001
    assert compare.paired_permutation_test(differences, n_permutations=4_000, seed=3) == result  # seeded


def test_monte_carlo_p_value_is_never_zero():
    # All 30 differences positive: exact p = 2 / 2^30, far below what 1,000 draws can resolve.
    result = compare.paired_permutation_test(np.full(30, 0.5), n_permutations=1_000)
    assert result.p_value == pytest.approx(1 / 1_001)


def test_permutation_test_without_differences_is_one():
    assert compare.paired_permutation_test([0.0, 0.0, 0.0]).p_value == 1.0
    with pytest.raises(ValueError, match="finite"):
        compare.paired_permutation_test([0.5, math.nan])


# --- pairing and the comparison ------------------------------------------------------------------------------

def test_pairing_keeps_shared_queries_in_a_order_and_counts_the_rest():
    a = pd.Series([1.0, 0.5, 0.0, 0.25], index=["q3", "q1", "q2", "q9"])
    b = pd.Series([0.5, 0.0, 0.5, 1.0], index=["q1", "q3", "q2", "q7"])
    comparison = compare.compare_scores(a, b)
    assert comparison.pairs["query_id"].tolist() == ["q3", "q1", "q2"]
    assert comparison.pairs["outcome"].tolist() == [compare.A_BETTER, compare.TIE, compare.B_BETTER]
    assert comparison.only_a == ("q9",) and comparison.only_b == ("q7",) and comparison.n_shared == 3
    assert (comparison.a_better, comparison.ties, comparison.b_better) == (1, 1, 1)
    assert comparison.mean_difference == pytest.approx((1.0 + 0.0 - 0.5) / 3)
    assert comparison.mcnemar is None  # 0.5 and 0.25 are not binary scores


def test_a_query_scored_twice_is_an_error():
    with pytest.raises(ValueError, match="run B: query 'q1'"):
        compare.compare_scores(pd.Series([1.0], index=["q1"]), pd.Series([1.0, 0.0], index=["q1", "q1"]))


def test_mcnemar_on_binary_scores_matches_scipy_binomtest():
    a = pd.Series([1, 1, 0, 1, 0, 1, 1, 0, 1, 1], index=[f"q{i}" for i in range(10)], dtype=float)
    b = pd.Series([0, 1, 0, 0, 0, 1, 0, 0, 1, 0], index=[f"q{i}" for i in range(10)], dtype=float)
    comparison = compare.compare_scores(a, b)
    assert (comparison.mcnemar.only_a, comparison.mcnemar.only_b) == (4, 0)
    assert comparison.mcnemar.p_value == pytest.approx(stats.binomtest(4, 4, 0.5).pvalue)
    assert comparison.mcnemar == mcnemar_exact(list(a == 1), list(b == 1))


def test_no_shared_query_gives_nan_means_and_p_one():
    comparison = compare.compare_scores(pd.Series([1.0], index=["q1"]), pd.Series([0.0], index=["q2"]))
    assert comparison.n_shared == 0 and math.isnan(comparison.mean_difference)
    assert comparison.permutation.p_value == comparison.sign.p_value == 1.0


def test_changed_most_is_largest_absolute_difference_first_without_ties():
    pairs, _, _ = compare.pair_scores(pd.Series([0.2, 1.0, 0.5, 0.0], index=["q1", "q2", "q3", "q4"]),
                                      pd.Series([0.9, 0.0, 0.5, 0.3], index=["q1", "q2", "q3", "q4"]))
    changed = compare.changed_most(pairs, 2)
    assert changed["query_id"].tolist() == ["q2", "q1"]
    assert compare.changed_most(pairs, 10)["query_id"].tolist() == ["q2", "q1", "q4"]


def test_e2e_measure_names_round_trip():
    assert compare.e2e_k(compare.e2e_measure(10)) == 10
    with pytest.raises(ValueError, match="E2E@<k>"):
        compare.e2e_k("nDCG@10")


# --- two real fixture runs -------------------------------------------------------------------------------------

def test_fixture_b_measures_follow_the_reversed_rankings(fixture_pair):
    """Run B's recomputed gold RR@5 is 1 / (rank of the gold passage) in the stored, reversed ranking."""
    _, path_b = fixture_pair
    with RunReader(path_b) as reader:
        rankings = reader.rankings()
        gold = {q: reader.query(q).gold_passage_ids[0] for q in rankings}
    rr = read_scores(path_b, "gold", f"RR@{K}")
    for query_id, ranking in rankings.items():
        ids = [p.passage_id for p in ranking.passages]
        assert rr[query_id] == pytest.approx(1 / (ids.index(gold[query_id]) + 1) if gold[query_id] in ids else 0.0)


def test_fixture_runs_wins_ties_and_losses(fixture_pair):
    path_a, path_b = fixture_pair
    comparison = compare.compare_scores(read_scores(path_a, "gold", f"RR@{K}"), read_scores(path_b, "gold", f"RR@{K}"))
    assert comparison.only_a == (ONLY_B,) and comparison.only_b == (ONLY_A,)  # nq:0 is only in A, nq:5 only in B
    # tests/run_fixtures._ranking_ids puts query i's gold passage at rank i + 1 of K = 5; reversed, at rank 5 - i.
    # Shared queries nq:1..nq:4: RR 1/2 vs 1/4 (A better), 1/3 vs 1/3 (tie), 1/4 vs 1/2, 1/5 vs 1 (B better).
    expected_a = {f"nq:{i}": 1 / (i + 1) for i in range(1, 5)}
    expected_b = {f"nq:{i}": 1 / (5 - i) for i in range(1, 5)}
    pairs = comparison.pairs.set_index("query_id")
    assert list(pairs.index) == list(expected_a)
    assert pairs["a"].to_dict() == pytest.approx(expected_a) and pairs["b"].to_dict() == pytest.approx(expected_b)
    assert (comparison.a_better, comparison.ties, comparison.b_better) == (1, 1, 2)
    assert comparison.sign.p_value == pytest.approx(stats.binomtest(1, 3, 0.5).pvalue)
    assert comparison.permutation.exact and comparison.permutation.p_value == pytest.approx(
        brute_force_p(pairs["difference"]))
    assert comparison.mcnemar is None


def test_fixture_runs_tie_on_every_set_measure(fixture_pair):
    """Reversing a ranking keeps its set of 5 passages, so P@5, R@5 and Hit@5 tie on every shared query."""
    path_a, path_b = fixture_pair
    for method in LABEL_METHODS:
        for measure in (f"P@{K}", f"R@{K}", f"Hit@{K}"):
            comparison = compare.compare_scores(read_scores(path_a, method, measure),
                                                read_scores(path_b, method, measure))
            assert comparison.ties == comparison.n_shared == 4, (method, measure)
            assert comparison.permutation.p_value == comparison.sign.p_value == 1.0


def test_fixture_runs_on_the_binary_e2e_score_include_mcnemar(fixture_pair):
    path_a, path_b = fixture_pair
    a, b = read_scores(path_a, compare.E2E_METHOD, f"E2E@{K}"), read_scores(path_b, compare.E2E_METHOD, f"E2E@{K}")
    comparison = compare.compare_scores(a, b)
    shared = [q for q in a.index if q in b.index]
    assert comparison.a_better == int((a[shared] > b[shared]).sum())
    assert comparison.b_better == int((a[shared] < b[shared]).sum())
    # nq:4's gold passage is last in A and first in B, where the fake reader answers from it: B is right only there.
    assert (comparison.a_better, comparison.ties, comparison.b_better) == (0, 3, 1)
    assert comparison.mcnemar is not None and (comparison.mcnemar.only_a, comparison.mcnemar.only_b) == (0, 1)
    assert comparison.mcnemar.p_value == comparison.sign.p_value  # on 0/1 scores McNemar is the sign test


def test_score_options_list_every_method_and_the_e2e_ks(fixture_pair):
    with RunReader(fixture_pair[0]) as reader:
        options = compare.score_options(reader.measure_table(), reader.e2e_table())
    assert set(options) == {*LABEL_METHODS, compare.E2E_METHOD}
    assert sorted(options["gold"]) == sorted(MEASURES) and options[compare.E2E_METHOD] == [f"E2E@{K}"]


def test_binomial_tail_past_the_exact_sums_matches_them():
    import math

    from rageval.stats.paired import EXACT_BINOMIAL_TRIALS, binomial_half_cdf

    for n, k in ((EXACT_BINOMIAL_TRIALS + 1, EXACT_BINOMIAL_TRIALS // 2 - 30), (EXACT_BINOMIAL_TRIALS + 7, 990)):
        exact = sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n
        assert binomial_half_cdf(k, n) == pytest.approx(exact, rel=1e-9)
    assert binomial_half_cdf(50_000, 100_001) == pytest.approx(0.5, rel=1e-9)  # symmetric: half below the middle


@pytest.mark.parametrize("n", [20_001, 100_000, 250_000])
def test_binomial_tail_of_many_trials_matches_exact_arithmetic(n):
    """Exact rationals: P[X <= n/2 - 1] = (1 - P[X = n/2]) / 2 for even n (one binomial coefficient), else full
    integer sums at a few k; scipy's bdtr (what the tail used to be) is itself off by ~2e-10 here."""
    import math
    from fractions import Fraction

    from rageval.stats.paired import binomial_half_cdf

    if n % 2 == 0:
        exact = {n // 2 - 1: (1 - Fraction(math.comb(n, n // 2), 2 ** n)) / 2}
    else:
        exact = {k: Fraction(sum(math.comb(n, i) for i in range(k + 1)), 2 ** n) for k in (n // 2 - 500, n // 2)}
    for k, probability in exact.items():
        assert binomial_half_cdf(k, n) == pytest.approx(float(probability), rel=1e-12)
        assert binomial_half_cdf(n - k - 1, n) == pytest.approx(float(1 - probability), rel=1e-12)
    assert binomial_half_cdf(0, n) == 2.0 ** -n and binomial_half_cdf(-1, n) == 0.0 and binomial_half_cdf(n, n) == 1.0


def test_a_sign_test_and_mcnemar_on_many_queries_use_the_tail():
    from rageval.compare import sign_test
    from rageval.stats.paired import mcnemar_exact

    differences = [1.0] * 30_010 + [-1.0] * 29_990 + [0.0] * 40_000
    result = sign_test(differences)
    assert (result.a_better, result.b_better, result.ties) == (30_010, 29_990, 40_000)
    assert 0.9 < result.p_value <= 1.0  # 20 more of 60,000: no evidence
    a = [True] * 30_010 + [False] * 29_990
    assert mcnemar_exact(a, [not x for x in a]).p_value == pytest.approx(result.p_value)
