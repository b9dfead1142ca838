"""Rank correlation across queries (Kendall's tau-b, Spearman's rho) and percentile bootstrap CIs.

eRAG (Salemi & Zamani, SIGIR 2024, Table 1 and Figure 1) reports how well each evaluation method's
per-query score agrees with the end-to-end downstream score by these two coefficients. Both are
written here in numpy: tau-b in O(n log^2 n), rho in O(n log n).

The bootstrap of these two (:func:`bootstrap_rank_correlations`, which :func:`bootstrap_ci` and
:func:`compute_correlation_table` use) has no Python loop over resamples: a resample is a vector of multiplicities
over the sample's distinct (x, y) pairs, so a chunk of resamples is one integer matrix, and both coefficients are
computed from it row by row with one fixed sort order (tau-b by a weighted merge-sort inversion count, rho from the
average ranks of the weighted groups). The resample indices are those of the loop it replaces (same generator,
same seed), so the intervals are the same numbers.

A coefficient is undefined when one of the inputs is constant (every pair is tied, so the
denominator is 0) or has fewer than two values; it is then ``nan``, not an error, because a constant
per-query score (say every query got P@1 = 0) is a legitimate outcome to show, not a bug.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

Statistic = Callable[[np.ndarray, np.ndarray], float]

#: Bootstrap resamples behind the correlation intervals the dashboard shows and ``rageval evaluate`` stores with a
#: run (docs/results.md uses 1,000).
DEFAULT_RESAMPLES = 300
DEFAULT_CONFIDENCE = 0.95
DEFAULT_SEED = 0
#: Fewest queries for which a correlation's percentile bootstrap interval is shown: below it the interval does not
#: reach its coverage, so the pages say "too few queries for an interval (n = 5 < 20)" instead (:func:`has_interval`).
#: Chosen by the coverage simulation of tests/stats/test_interval_coverage.py (300 seeded samples per cell, 300
#: resamples each, 95% intervals); the share of intervals that hold the population Kendall's tau-b / Spearman's rho:
#:
#: ==================================================  ===========  ===========  ===========  ===========
#: data                                                n = 5        n = 10       n = 20       n = 30
#: ==================================================  ===========  ===========  ===========  ===========
#: bivariate normal, r = 0.9 (tau 0.71)                0.78 / 0.78  0.98 / 0.98  0.98 / 0.97  0.96 / 0.97
#: the same with r = 0.5, y cut to 0/1, x to 4 levels  0.61 / 0.62  0.88 / 0.87  0.93 / 0.93  0.93 / 0.93
#: ==================================================  ===========  ===========  ===========  ===========
#:
#: The second row is what an eRAG run holds: an exact match of 0 or 1 against a measure with a few values. The rule:
#: the smallest n of the grid from which every row covers at least 90%. On a strong correlation at n = 5 the sample
#: tau is often 1 and so is every resample's: "[1.00, 1.00]" looks certain and covers nothing. A normal interval on
#: Fisher's z of tau (Fieller, Hartley & Pearson 1957) assumes no ties, so it is no remedy for the second row.
MIN_INTERVAL_QUERIES = 20
#: Resample matrix cells (resamples x queries) handled at once: bounds the memory of the vectorised bootstrap
#: (about 8 bytes a cell, a few matrices alive at a time).
_CHUNK_CELLS = 2_000_000


def has_interval(n: int) -> bool:
    """Whether a correlation over ``n`` queries gets its bootstrap interval shown (:data:`MIN_INTERVAL_QUERIES`)."""
    return n >= MIN_INTERVAL_QUERIES


def too_few_for_interval(n: int) -> str:
    """What is shown instead of the interval of a correlation over ``n`` < :data:`MIN_INTERVAL_QUERIES` queries."""
    return f"too few queries for an interval (n = {n} < {MIN_INTERVAL_QUERIES})"


def _as_pair(x, y) -> tuple[np.ndarray, np.ndarray]:
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if x.ndim != 1 or x.shape != y.shape:
        raise ValueError(f"x and y must be 1-d and of equal length, got shapes {x.shape} and {y.shape}")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError("x and y must be finite: drop or impute queries with missing scores first")
    return x, y


def _tied_pairs(sorted_values: np.ndarray) -> int:
    """Number of pairs sharing a value, sum of t(t-1)/2 over groups of t equal values."""
    if len(sorted_values) == 0:
        return 0
    boundaries = np.flatnonzero(np.diff(sorted_values)) + 1
    sizes = np.diff(np.concatenate(([0], boundaries, [len(sorted_values)])))
    return int((sizes * (sizes - 1) // 2).sum())


def _count_inversions(ranks: np.ndarray) -> int:
    """Pairs i < j with ranks[i] > ranks[j], by a bottom-up merge sort done level by level in numpy.

    At the level with block width ``2w``, each element of a right half-block is compared (by binary
    search) with the sorted left half of its block; every pair meets at exactly one level.
    """
    n = len(ranks)
    positions = np.arange(n)
    span = int(ranks.max(initial=0)) + 1
    inversions, width = 0, 1
    while width < n:
        block = positions // (2 * width)
        in_right = (positions // width) % 2 == 1
        keys = block * span + ranks  # sorting keys keeps blocks apart and ranks ordered inside
        left = np.sort(keys[~in_right])
        right_keys, right_blocks = keys[in_right], block[in_right]
        block_end = np.searchsorted(left, right_blocks * span + span - 1, side="right")
        not_greater = np.searchsorted(left, right_keys, side="right")
        inversions += int((block_end - not_greater).sum())
        width *= 2
    return inversions


def kendall_tau_b(x, y) -> float:
    """Kendall's tau-b (Kendall 1945), the variant that corrects for ties in either input.

    tau_b = (n_c - n_d) / sqrt((n_0 - n_1)(n_0 - n_2)), with n_0 = n(n-1)/2 pairs, n_1 / n_2 the pairs
    tied in x / y and n_c, n_d the concordant / discordant pairs; computed as Knight (1966) does:
    sort by (x, y), count ties, and count discordant pairs as inversions of y. ``nan`` when x or y is
    constant or n < 2. Equals ``scipy.stats.kendalltau(x, y, variant="b")``.
    """
    x, y = _as_pair(x, y)
    n = len(x)
    order = np.lexsort((y, x))
    x_sorted, y_sorted = x[order], y[order]
    pairs = n * (n - 1) // 2
    tied_x = _tied_pairs(x_sorted)
    tied_y = _tied_pairs(np.sort(y))
    new_x = np.concatenate(([True], x_sorted[1:] != x_sorted[:-1]))
    new_xy = new_x | np.concatenate(([True], y_sorted[1:] != y_sorted[:-1]))
    tied_xy = _tied_pairs(np.cumsum(new_xy))  # ids of runs equal in both x and y, sorted
    denominator = float(pairs - tied_x) * float(pairs - tied_y)
    if n < 2 or denominator == 0:
        return float("nan")
    discordant = _count_inversions(np.unique(y_sorted, return_inverse=True)[1].ravel())
    concordant_minus_discordant = pairs - tied_x - tied_y + tied_xy - 2 * discordant
    return float(concordant_minus_discordant / np.sqrt(denominator))


def average_ranks(values) -> np.ndarray:
    """Ranks 1..n of ``values``, ties sharing the mean of the ranks they span (``rankdata`` "average")."""
    values = np.asarray(values, dtype=np.float64)
    order = np.argsort(values, kind="stable")
    sorted_values = values[order]
    starts_group = np.concatenate(([True], sorted_values[1:] != sorted_values[:-1]))
    group = np.cumsum(starts_group) - 1
    first = np.flatnonzero(starts_group)
    last = np.concatenate((first[1:], [len(values)])) - 1
    ranks = np.empty(len(values))
    ranks[order] = (first[group] + last[group]) / 2.0 + 1.0
    return ranks


def spearman_rho(x, y) -> float:
    """Spearman's rho (Spearman 1904): Pearson's correlation of the average ranks of x and y.

    Ties get the mean of the ranks they span, so rho stays exact with ties (unlike the textbook
    1 - 6 sum d^2 / (n(n^2 - 1)), which assumes none). ``nan`` when x or y is constant or n < 2.
    Equals ``scipy.stats.spearmanr(x, y).statistic``.
    """
    x, y = _as_pair(x, y)
    if len(x) < 2:
        return float("nan")
    rx, ry = average_ranks(x), average_ranks(y)
    rx -= rx.mean()
    ry -= ry.mean()
    denominator = np.sqrt((rx @ rx) * (ry @ ry))
    if denominator == 0:
        return float("nan")
    return float(np.clip((rx @ ry) / denominator, -1.0, 1.0))


@dataclass(frozen=True)
class BootstrapResult:
    """A statistic with its percentile bootstrap confidence interval over queries.

    ``low``/``high`` bound the central ``confidence`` share of the resampled statistics; resamples on
    which the statistic is undefined (nan, e.g. a resample whose values are all equal) are left out
    of the percentiles, and the interval is nan when the statistic itself is.
    """

    value: float
    low: float
    high: float
    n: int
    n_resamples: int
    confidence: float = 0.95


def bootstrap_ci(
    x,
    y,
    statistic: Statistic,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> BootstrapResult:
    """Percentile bootstrap CI (Efron & Tibshirani 1993, ch. 13) of ``statistic(x, y)`` over queries.

    Each resample draws n query indices with replacement (the pairs (x_i, y_i) stay together) from a
    ``numpy.random.default_rng(seed)``; the interval is the (1 - confidence)/2 and (1 + confidence)/2
    percentiles of the resampled statistics. Deterministic for a given seed. :func:`kendall_tau_b` and
    :func:`spearman_rho` take the vectorised path (:func:`bootstrap_rank_correlations`); any other statistic is
    called once per resample.
    """
    x, y = _as_pair(x, y)
    _check_bootstrap_arguments(n_resamples, confidence)
    if statistic is kendall_tau_b or statistic is spearman_rho:
        tau, rho = bootstrap_rank_correlations(x, y, n_resamples, confidence, seed)
        return tau if statistic is kendall_tau_b else rho
    n = len(x)
    value = float(statistic(x, y))
    if n < 2 or np.isnan(value):
        return BootstrapResult(value, float("nan"), float("nan"), n, n_resamples, confidence)
    indices = np.random.default_rng(seed).integers(0, n, size=(n_resamples, n))
    resampled = np.array([statistic(x[sample], y[sample]) for sample in indices], dtype=np.float64)
    return _percentile_interval(value, resampled, n, n_resamples, confidence)


def _check_bootstrap_arguments(n_resamples: int, confidence: float) -> None:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")


def _percentile_interval(value: float, resampled: np.ndarray, n: int, n_resamples: int,
                         confidence: float) -> BootstrapResult:
    """The percentile interval of the defined (non-nan) resampled statistics; nan when none is defined."""
    resampled = resampled[~np.isnan(resampled)]
    if n < 2 or np.isnan(value) or len(resampled) == 0:
        return BootstrapResult(value, float("nan"), float("nan"), n, n_resamples, confidence)
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(resampled, [tail, 100.0 - tail])
    return BootstrapResult(value, float(low), float(high), n, n_resamples, confidence)


@dataclass(frozen=True)
class _WeightedPairs:
    """The distinct (x, y) pairs of a sample, sorted by (x, y), and what a weighted tau-b / rho over them needs
    that does not depend on the weights: x groups (contiguous in this order), y groups, and per merge level of
    the inversion count the left-half order and each right element's range in it."""

    point_of: np.ndarray   # sample index -> distinct pair
    x_starts: np.ndarray   # first pair of each x group
    x_group: np.ndarray    # pair -> x group
    y_order: np.ndarray    # pairs by y
    y_starts: np.ndarray   # first position (in y_order) of each y group
    y_group: np.ndarray    # pair -> y group
    levels: tuple[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], ...]


def _weighted_pairs(x: np.ndarray, y: np.ndarray) -> _WeightedPairs:
    x_codes = np.unique(x, return_inverse=True)[1].ravel()
    y_codes = np.unique(y, return_inverse=True)[1].ravel()
    span_y = int(y_codes.max(initial=0)) + 1
    pairs, point_of = np.unique(x_codes.astype(np.int64) * span_y + y_codes, return_inverse=True)
    px, py = pairs // span_y, pairs % span_y  # sorted by (x, y)
    x_new = np.concatenate(([True], px[1:] != px[:-1]))
    y_order = np.argsort(py, kind="stable")
    y_sorted = py[y_order]
    y_new = np.concatenate(([True], y_sorted[1:] != y_sorted[:-1]))
    y_group = np.empty(len(py), dtype=np.int64)
    y_group[y_order] = np.cumsum(y_new) - 1
    return _WeightedPairs(point_of.ravel(), np.flatnonzero(x_new), np.cumsum(x_new) - 1, y_order,
                          np.flatnonzero(y_new), y_group, _inversion_levels(py, span_y))


def _inversion_levels(ranks: np.ndarray, span: int) -> tuple:
    """The merge levels of :func:`_count_inversions`, kept so that any weights can be counted with them: at
    each level, the left-half elements sorted by (block, rank) and, for each right-half element, the range of
    that list holding the left elements of its block with a greater rank."""
    m = len(ranks)
    positions = np.arange(m)
    levels, width = [], 1
    while width < m:
        block = positions // (2 * width)
        in_right = (positions // width) % 2 == 1
        keys = block * span + ranks
        left = positions[~in_right]
        order = np.argsort(keys[left], kind="stable")
        left, left_keys = left[order], keys[left][order]
        right = positions[in_right]
        start = np.searchsorted(left_keys, keys[right], side="right")
        end = np.searchsorted(left_keys, block[right] * span + span - 1, side="right")
        levels.append((left, right, start, end))
        width *= 2
    return tuple(levels)


def _weighted_tau_b(weights: np.ndarray, pairs: _WeightedPairs, n: int) -> np.ndarray:
    """tau-b of each row of ``weights`` (multiplicities of the distinct pairs, each row summing to n): the
    formula of :func:`kendall_tau_b` with the pair counts taken over multiplicities."""
    total = n * (n - 1) // 2
    per_x = np.add.reduceat(weights, pairs.x_starts, axis=1)
    per_y = np.add.reduceat(weights[:, pairs.y_order], pairs.y_starts, axis=1)
    tied_x = (per_x * (per_x - 1) // 2).sum(axis=1)
    tied_y = (per_y * (per_y - 1) // 2).sum(axis=1)
    tied_xy = (weights * (weights - 1) // 2).sum(axis=1)
    discordant = np.zeros(len(weights), dtype=np.int64)
    for left, right, start, end in pairs.levels:
        before = np.zeros((len(weights), len(left) + 1), dtype=np.int64)
        np.cumsum(weights[:, left], axis=1, out=before[:, 1:])
        discordant += (weights[:, right] * (before[:, end] - before[:, start])).sum(axis=1)
    denominator = (total - tied_x).astype(np.float64) * (total - tied_y).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = (total - tied_x - tied_y + tied_xy - 2 * discordant) / np.sqrt(denominator)
    return np.where(denominator == 0, np.nan, tau)


def _weighted_rho(weights: np.ndarray, pairs: _WeightedPairs, n: int) -> np.ndarray:
    """Spearman's rho of each row of ``weights``: every group of equal x (y) values gets the mean of the ranks
    it spans in that resample, then Pearson's correlation of the ranks weighted by the multiplicities."""
    middle = (n + 1) / 2.0

    def centred_ranks(per_group: np.ndarray) -> np.ndarray:
        return np.cumsum(per_group, axis=1) - per_group + (per_group + 1) / 2.0 - middle

    per_x = np.add.reduceat(weights, pairs.x_starts, axis=1)
    per_y = np.add.reduceat(weights[:, pairs.y_order], pairs.y_starts, axis=1)
    rank_x, rank_y = centred_ranks(per_x), centred_ranks(per_y)
    covariance = (weights * rank_x[:, pairs.x_group] * rank_y[:, pairs.y_group]).sum(axis=1)
    denominator = np.sqrt((per_x * rank_x ** 2).sum(axis=1) * (per_y * rank_y ** 2).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = np.clip(covariance / denominator, -1.0, 1.0)
    return np.where(denominator == 0, np.nan, rho)


def bootstrap_rank_correlations(x, y, n_resamples: int = DEFAULT_RESAMPLES,
                                confidence: float = DEFAULT_CONFIDENCE,
                                seed: int = DEFAULT_SEED) -> tuple[BootstrapResult, BootstrapResult]:
    """Kendall's tau-b and Spearman's rho of (x, y), each with its percentile bootstrap CI over the same
    resamples: the numbers ``bootstrap_ci(x, y, kendall_tau_b | spearman_rho, ...)`` gives, without a Python
    loop over resamples.

    Resample r draws n indices with replacement (``default_rng(seed).integers(0, n, (n_resamples, n))``, row r);
    it is equivalent to multiplicities w_r over the sample's m distinct (x, y) pairs, and both coefficients are
    functions of w_r: tau-b = (n_0 - n_1 - n_2 + n_3 - 2 n_d) / sqrt((n_0 - n_1)(n_0 - n_2)) with n_1, n_2, n_3
    the pairs tied in x, in y, in both (sums of s(s-1)/2 over the weighted groups) and n_d the weighted
    inversions of y in (x, y) order; rho the weighted Pearson correlation of the groups' average ranks. Cost
    O(n_resamples m log m), resamples handled in chunks of :data:`_CHUNK_CELLS` cells.
    """
    x, y = _as_pair(x, y)
    _check_bootstrap_arguments(n_resamples, confidence)
    n = len(x)
    tau_value, rho_value = kendall_tau_b(x, y), spearman_rho(x, y)
    if n < 2 or (np.isnan(tau_value) and np.isnan(rho_value)):
        undefined = np.empty(0)
        return (_percentile_interval(tau_value, undefined, n, n_resamples, confidence),
                _percentile_interval(rho_value, undefined, n, n_resamples, confidence))
    pairs = _weighted_pairs(x, y)
    m = int(pairs.point_of.max()) + 1
    rng = np.random.default_rng(seed)
    chunk = max(1, _CHUNK_CELLS // max(n, m))
    taus, rhos = [], []
    for first in range(0, n_resamples, chunk):
        rows = min(chunk, n_resamples - first)
        points = pairs.point_of[rng.integers(0, n, size=(rows, n))]
        weights = np.bincount((points + m * np.arange(rows)[:, None]).ravel(),
                              minlength=rows * m).reshape(rows, m).astype(np.int64)
        taus.append(_weighted_tau_b(weights, pairs, n))
        rhos.append(_weighted_rho(weights, pairs, n))
    return (_percentile_interval(tau_value, np.concatenate(taus), n, n_resamples, confidence),
            _percentile_interval(rho_value, np.concatenate(rhos), n, n_resamples, confidence))


def compute_correlation_table(per_query: pd.DataFrame, downstream: Mapping[str, float], *,
                              n_resamples: int = 1000, confidence: float = DEFAULT_CONFIDENCE,
                              seed: int = DEFAULT_SEED) -> pd.DataFrame:
    """Rank correlation across queries between each (label method, measure) and the downstream score.

    This is eRAG's Table 1 (Salemi & Zamani, SIGIR 2024) on the caller's data: for every group of
    ``per_query`` (columns ``method, measure, query_id, value``), Kendall's tau-b and Spearman's rho between the
    per-query measure values and ``downstream[query_id]`` (e.g. the end-to-end exact match), each with a
    percentile-bootstrap confidence interval over queries. Queries without a downstream score are left out.
    Returns one row per (method, measure): ``n, tau, tau_low, tau_high, rho, rho_low, rho_high``.
    """
    rows = []
    downstream = dict(downstream)
    for (method, measure), group in per_query.groupby(["method", "measure"], sort=True):
        group = group[group["query_id"].isin(downstream.keys())]
        x = group["value"].to_numpy(dtype=float)
        y = group["query_id"].map(downstream).to_numpy(dtype=float)
        tau, rho = bootstrap_rank_correlations(x, y, n_resamples, confidence, seed)
        rows.append({"method": method, "measure": measure, "n": len(x),
                     "tau": tau.value, "tau_low": tau.low, "tau_high": tau.high,
                     "rho": rho.value, "rho_low": rho.low, "rho_high": rho.high})
    columns = ["method", "measure", "n", "tau", "tau_low", "tau_high", "rho", "rho_low", "rho_high"]
    return pd.DataFrame(rows, columns=columns)
