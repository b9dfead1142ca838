"""Paired comparison of two runs on one per-query score: wins, ties and losses, the mean difference and its
significance, and the queries that changed most.

Two runs (e.g. BM25 and dense retrieval over the same questions) are compared on the queries both hold. For a
shared query q with scores a_q (run A) and b_q (run B), d_q = a_q - b_q; A wins q when d_q > 0, B wins when
d_q < 0, and it is a tie when |d_q| <= :data:`TIE_TOLERANCE`. Queries only one run holds are counted, never
paired. The score is either a label method's measure (``method``, ``measure``: e.g. ``erag:em``, ``nDCG@10``) or
the end-to-end score at k (``method`` :data:`E2E_METHOD`, ``measure`` ``E2E@k``).

Significance of the mean difference, all two-sided:

- paired randomization (permutation) test (Fisher 1935; for IR, Smucker, Allan & Carterette, CIKM 2007): under
  H0 the labels A and B are exchangeable within each query, so every d_q keeps its size and takes either sign;
  p = P(|mean(s * d)| >= |mean(d)|) over sign vectors s. Exact (all 2^m signs of the m non-zero differences)
  when 2^m <= the permutation budget, else Monte Carlo with a seeded generator and p = (1 + hits) / (1 + N)
  (Phipson & Smyth 2010: a Monte Carlo p-value is never 0);
- exact sign test (Dixon & Mood 1946): of the m non-tied queries, A wins W ~ Binomial(m, 1/2) under H0;
  p = min(1, 2 * P[X <= min(W, m - W)]);
- for binary scores (every value 0 or 1, e.g. E2E exact match), the exact McNemar test (McNemar 1947;
  :func:`rageval.stats.paired.mcnemar_exact`), which on such scores is the sign test on the discordant queries.

Pure: no I/O, no streamlit; inputs are never mutated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from rageval.stats.paired import McNemarResult, binomial_half_cdf, mcnemar_exact

#: The "method" that selects the end-to-end score instead of a label method's measure.
E2E_METHOD = "e2e"
#: Outcome of one shared query, as ``ui.theme.OUTCOME_COLOURS`` names them.
A_BETTER, TIE, B_BETTER = "A better", "tie", "B better"
OUTCOMES = (A_BETTER, TIE, B_BETTER)
#: |a - b| at or below this is a tie (scores recomputed from equal inputs can differ in the last float bits).
TIE_TOLERANCE = 1e-12
DEFAULT_PERMUTATIONS = 10_000
DEFAULT_SEED = 0
_CHUNK_CELLS = 2_000_000  # sign matrix cells per Monte Carlo chunk (bounded memory on 10,000-query runs)
#: From this many non-zero differences, Monte Carlo draws sign counts per distinct difference size (binomial)
#: rather than one sign per query, when the sizes are few (see :func:`paired_permutation_test`).
_GROUPED_FROM = 2_000


# --- per-query scores ---------------------------------------------------------------------------------

def e2e_measure(k: int) -> str:
    """The measure name of the end-to-end score at ``k``: ``E2E@k``."""
    return f"E2E@{int(k)}"


def e2e_k(measure: str) -> int:
    """``E2E@5`` -> 5 (the inverse of :func:`e2e_measure`)."""
    name, _, cutoff = measure.partition("@")
    if name != "E2E" or not cutoff.isdigit():
        raise ValueError(f"not an end-to-end score name (expected E2E@<k>): {measure!r}")
    return int(cutoff)


def measure_scores(measure_table: pd.DataFrame, method: str, measure: str) -> pd.Series:
    """Per-query values of one (label method, measure): a float Series indexed by query id, named ``measure``.
    ``measure_table`` has columns method, measure, query_id, value (``RunReader.measure_table``)."""
    rows = measure_table[(measure_table["method"] == method) & (measure_table["measure"] == measure)]
    return pd.Series(rows["value"].to_numpy(float), index=pd.Index(rows["query_id"], name="query_id"), name=measure)


def e2e_scores(e2e_table: pd.DataFrame, k: int) -> pd.Series:
    """Per-query end-to-end score at ``k``; ``e2e_table`` has columns query_id, k, score (``RunReader.e2e_table``)."""
    rows = e2e_table[e2e_table["k"] == k]
    return pd.Series(rows["score"].to_numpy(float), index=pd.Index(rows["query_id"], name="query_id"),
                     name=e2e_measure(k))


def score_options(measure_table: pd.DataFrame, e2e_table: pd.DataFrame) -> dict[str, list[str]]:
    """What a run can be scored on: ``{label method: its measures}`` plus ``{E2E_METHOD: ["E2E@k", ...]}``
    when it stores end-to-end outputs (methods and measures in stored order, deduplicated)."""
    options = {method: list(dict.fromkeys(group["measure"]))
               for method, group in measure_table.groupby("method", sort=True)}
    if len(e2e_table):
        options[E2E_METHOD] = [e2e_measure(k) for k in sorted(e2e_table["k"].unique())]
    return options


def per_query_scores(measure_table: pd.DataFrame, e2e_table: pd.DataFrame, method: str, measure: str
                     ) -> pd.Series:
    """:func:`e2e_scores` when ``method`` is :data:`E2E_METHOD` (``measure`` ``E2E@k``), else
    :func:`measure_scores`."""
    if method == E2E_METHOD:
        return e2e_scores(e2e_table, e2e_k(measure))
    return measure_scores(measure_table, method, measure)


# --- pairing ------------------------------------------------------------------------------------------

def outcome_of(difference: float) -> str:
    """:data:`A_BETTER`, :data:`TIE` or :data:`B_BETTER` for one d = a - b."""
    if abs(difference) <= TIE_TOLERANCE:
        return TIE
    return A_BETTER if difference > 0 else B_BETTER


def _unique(scores: pd.Series, name: str) -> pd.Series:
    duplicated = scores.index[scores.index.duplicated()]
    if len(duplicated):
        raise ValueError(f"run {name}: query {duplicated[0]!r} has more than one score")
    return scores


def pair_scores(a: pd.Series, b: pd.Series) -> tuple[pd.DataFrame, list[str], list[str]]:
    """The shared queries as a frame (query_id, a, b, difference = a - b, outcome), in A's order, and the ids
    only A and only B hold (each in its run's order)."""
    a, b = _unique(a, "A"), _unique(b, "B")
    ids_a, ids_b = a.index.to_numpy(object), b.index.to_numpy(object)
    # membership through Python sets: 100,000 ids in ~30 ms (Index.isin of pandas' string dtype takes ~1 s)
    set_a, set_b = set(ids_a.tolist()), set(ids_b.tolist())
    in_b = np.fromiter((q in set_b for q in ids_a), bool, len(ids_a))
    shared = a.index[in_b]
    only_a = ids_a[~in_b].tolist()
    only_b = ids_b[~np.fromiter((q in set_a for q in ids_b), bool, len(ids_b))].tolist()
    values_a = a.to_numpy(float)[in_b]
    values_b = b.loc[shared].to_numpy(float)
    difference = values_a - values_b
    outcome = np.where(np.abs(difference) <= TIE_TOLERANCE, TIE, np.where(difference > 0, A_BETTER, B_BETTER))
    pairs = pd.DataFrame({"query_id": shared.tolist(), "a": values_a, "b": values_b, "difference": difference,
                          "outcome": outcome.tolist()})
    return pairs, only_a, only_b


# --- the tests ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class PermutationTest:
    """Paired randomization test of the mean difference: the p-value, how many sign vectors it drew (or all
    2^m when ``exact``), and the generator seed of a Monte Carlo draw."""

    p_value: float
    n_permutations: int
    exact: bool
    seed: int


def paired_permutation_test(differences, n_permutations: int = DEFAULT_PERMUTATIONS,
                            seed: int = DEFAULT_SEED) -> PermutationTest:
    """Two-sided paired randomization test of mean(d) = 0 (see the module docstring for the formula).

    Exact when the m non-zero differences have 2^m <= ``n_permutations`` sign vectors (zeros do not change the
    statistic); else ``n_permutations`` sign vectors from ``numpy.random.default_rng(seed)`` (from
    :data:`_GROUPED_FROM` differences with few distinct sizes, drawn as binomial sign counts per size: the same
    distribution at a cost independent of the number of queries). A permuted mean
    counts as at least as extreme when it is within a relative 1e-10 of the observed one (float sums of the
    same numbers in another order differ in their last bits). p = 1 when there is no non-zero difference.
    """
    d = np.asarray(differences, dtype=float)
    if n_permutations < 1:
        raise ValueError(f"n_permutations must be >= 1, got {n_permutations}")
    if not np.isfinite(d).all():
        raise ValueError("paired_permutation_test: differences must be finite numbers")
    nonzero = d[np.abs(d) > TIE_TOLERANCE]
    m = len(nonzero)
    if m == 0:
        return PermutationTest(1.0, 0, True, seed)
    observed = abs(nonzero.sum())  # the sum: same ordering as the mean, n fixed
    threshold = observed - 1e-10 * np.abs(nonzero).sum()
    if 2 ** m <= n_permutations:
        patterns = (np.arange(2 ** m)[:, None] >> np.arange(m)) & 1
        sums = (2.0 * patterns - 1.0) @ nonzero
        return PermutationTest(float(np.mean(np.abs(sums) >= threshold)), 2 ** m, True, seed)
    rng = np.random.default_rng(seed)
    hits, drawn, chunk = 0, 0, max(1, _CHUNK_CELLS // m)
    magnitudes, counts = np.unique(np.abs(nonzero), return_counts=True)
    if m >= _GROUPED_FROM and len(magnitudes) * 16 <= m:
        # Random signs on c differences of the same size v sum to v (2 B - c), B ~ Binomial(c, 1/2): the same
        # distribution as drawing every sign (scores are discrete, so 100,000 queries have a handful of distinct
        # differences). Other numbers than the per-sign draw.
        # B is drawn as the number of set bits among c random bits: one 64-bit word per 64 differences of a size,
        # masked to c bits in its last word: O(distinct sizes + m / 64) per draw instead of O(m), ~20x faster than
        # numpy's binomial draws at a thousand sizes.
        words = -(-counts // 64)
        word_magnitude = np.repeat(magnitudes, words)
        masks = np.full(int(words.sum()), np.uint64(2 ** 64 - 1), dtype=np.uint64)
        last = np.cumsum(words) - 1
        tail = counts - 64 * (words - 1)
        masks[last] = np.where(tail == 64, np.uint64(2 ** 64 - 1),
                               (np.uint64(1) << tail.astype(np.uint64)) - np.uint64(1))
        offset = float(counts @ magnitudes)
        chunk = max(1, _CHUNK_CELLS // len(masks))
        while drawn < n_permutations:
            size = min(chunk, n_permutations - drawn)
            bits = rng.bit_generator.random_raw((size, len(masks))).astype(np.uint64, copy=False)
            heads = np.bitwise_count(bits & masks).astype(float)
            hits += int(np.count_nonzero(np.abs(2.0 * (heads @ word_magnitude) - offset) >= threshold))
            drawn += size
        return PermutationTest((1 + hits) / (1 + n_permutations), n_permutations, False, seed)
    total = nonzero.sum()
    while drawn < n_permutations:
        size = min(chunk, n_permutations - drawn)
        # signs 2 h - 1 from heads h in {0, 1}: sum = 2 (h . d) - sum(d), without a float matrix of the signs
        # (the same draws; the sums equal to the last bits, which the threshold's tolerance absorbs)
        heads = rng.integers(0, 2, size=(size, m))
        hits += int(np.count_nonzero(np.abs(2.0 * (heads @ nonzero) - total) >= threshold))
        drawn += size
    return PermutationTest((1 + hits) / (1 + n_permutations), n_permutations, False, seed)


@dataclass(frozen=True)
class SignTest:
    """Exact two-sided sign test: queries A won, B won, tied (left out), and the p-value."""

    a_better: int
    b_better: int
    ties: int
    p_value: float


def sign_test(differences) -> SignTest:
    """Exact two-sided sign test on the non-tied differences: p = min(1, 2 * P[X <= min(W, m - W)]) with
    X ~ Binomial(m, 1/2) (Dixon & Mood 1946); p = 1 when every query is tied."""
    d = np.asarray(differences, dtype=float)
    a_better = int(np.count_nonzero(d > TIE_TOLERANCE))
    b_better = int(np.count_nonzero(d < -TIE_TOLERANCE))
    m = a_better + b_better
    if m == 0:
        return SignTest(0, 0, len(d), 1.0)
    return SignTest(a_better, b_better, len(d) - m, min(1.0, 2 * binomial_half_cdf(min(a_better, b_better), m)))


def is_binary(values) -> bool:
    """Whether every value is 0 or 1 (e.g. exact match, Hit@k, a binary label's P@1)."""
    return bool(np.isin(np.asarray(values, dtype=float), (0.0, 1.0)).all())


@dataclass(frozen=True)
class Comparison:
    """Run A against run B on one per-query score.

    ``pairs``: the shared queries (query_id, a, b, difference, outcome; :func:`pair_scores`); ``only_a`` /
    ``only_b``: ids of the queries one run alone holds; the outcome counts and means are over the shared queries.
    ``mcnemar`` is set when both runs' shared scores are binary.
    """

    pairs: pd.DataFrame
    only_a: tuple[str, ...]
    only_b: tuple[str, ...]
    a_better: int
    ties: int
    b_better: int
    mean_a: float
    mean_b: float
    mean_difference: float
    permutation: PermutationTest
    sign: SignTest
    mcnemar: McNemarResult | None

    @property
    def n_shared(self) -> int:
        return len(self.pairs)


def _mean(values) -> float:
    return float(np.mean(values)) if len(values) else math.nan


def compare_scores(a: pd.Series, b: pd.Series, n_permutations: int = DEFAULT_PERMUTATIONS,
                   seed: int = DEFAULT_SEED) -> Comparison:
    """Compare per-query scores ``a`` (run A) and ``b`` (run B), Series indexed by query id, on their shared
    queries: outcome counts, means, mean difference (A - B), the paired randomization test, the sign test and,
    for binary scores, McNemar's test. With no shared query the means are NaN and every p-value is 1."""
    pairs, only_a, only_b = pair_scores(a, b)
    counts = pairs["outcome"].value_counts()
    differences = pairs["difference"].to_numpy(float)
    binary = len(pairs) > 0 and is_binary(pairs["a"]) and is_binary(pairs["b"])
    mcnemar = mcnemar_exact(list(pairs["a"] == 1.0), list(pairs["b"] == 1.0)) if binary else None
    return Comparison(
        pairs=pairs, only_a=tuple(only_a), only_b=tuple(only_b),
        a_better=int(counts.get(A_BETTER, 0)), ties=int(counts.get(TIE, 0)), b_better=int(counts.get(B_BETTER, 0)),
        mean_a=_mean(pairs["a"]), mean_b=_mean(pairs["b"]), mean_difference=_mean(differences),
        permutation=paired_permutation_test(differences, n_permutations, seed), sign=sign_test(differences),
        mcnemar=mcnemar)


def changed_most(pairs: pd.DataFrame, n: int) -> pd.DataFrame:
    """The ``n`` shared queries with the largest |a - b| (ties left out), largest first; equal sizes keep A's
    query order."""
    changed = pairs[pairs["outcome"] != TIE]
    order = np.argsort(-np.abs(changed["difference"].to_numpy(float)), kind="stable")
    return changed.iloc[order[:n]].reset_index(drop=True)
