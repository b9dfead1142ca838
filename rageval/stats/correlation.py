"""Rank correlation across queries (Kendall's tau-b, Spearman's rho) and percentile bootstrap CIs.

eRAG (Salemi & Zamani, SIGIR 2024, Table 1 and Figure 1) reports how well each evaluation method's
per-query score agrees with the end-to-end downstream score by these two coefficients. Both are
written here in numpy: tau-b in O(n log^2 n), rho in O(n log n).

A coefficient is undefined when one of the inputs is constant (every pair is tied, so the
denominator is 0) or has fewer than two values; it is then ``nan``, not an error, because a constant
per-query score (say every query got P@1 = 0) is a legitimate outcome to show, not a bug.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

Statistic = Callable[[np.ndarray, np.ndarray], float]


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
    percentiles of the resampled statistics. Deterministic for a given seed.
    """
    x, y = _as_pair(x, y)
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    n = len(x)
    value = float(statistic(x, y))
    if n < 2 or np.isnan(value):
        return BootstrapResult(value, float("nan"), float("nan"), n, n_resamples, confidence)
    indices = np.random.default_rng(seed).integers(0, n, size=(n_resamples, n))
    resampled = np.array([statistic(x[sample], y[sample]) for sample in indices], dtype=np.float64)
    resampled = resampled[~np.isnan(resampled)]
    if len(resampled) == 0:
        return BootstrapResult(value, float("nan"), float("nan"), n, n_resamples, confidence)
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(resampled, [tail, 100.0 - tail])
    return BootstrapResult(value, float(low), float(high), n, n_resamples, confidence)


def compute_correlation_table(per_query: pd.DataFrame, downstream: Mapping[str, float], *,
                              n_resamples: int = 1000, confidence: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """Rank correlation across queries between each (label method, measure) and the downstream score.

    This is eRAG's Table 1 (Salemi & Zamani, SIGIR 2024) on the caller's data: for every group of
    ``per_query`` (columns ``method, measure, query_id, value``), Kendall's tau-b and Spearman's rho between the
    per-query measure values and ``downstream[query_id]`` (e.g. the end-to-end exact match), each with a
    percentile-bootstrap confidence interval over queries. Queries without a downstream score are left out.
    Returns one row per (method, measure): ``n, tau, tau_low, tau_high, rho, rho_low, rho_high``.
    """
    rows = []
    for (method, measure), group in per_query.groupby(["method", "measure"], sort=True):
        group = group[group["query_id"].isin(downstream.keys())]
        x = group["value"].to_numpy(dtype=float)
        y = np.array([downstream[q] for q in group["query_id"]], dtype=float)
        tau = bootstrap_ci(x, y, kendall_tau_b, n_resamples, confidence, seed)
        rho = bootstrap_ci(x, y, spearman_rho, n_resamples, confidence, seed)
        rows.append({"method": method, "measure": measure, "n": len(x),
                     "tau": tau.value, "tau_low": tau.low, "tau_high": tau.high,
                     "rho": rho.value, "rho_low": rho.low, "rho_high": rho.high})
    columns = ["method", "measure", "n", "tau", "tau_low", "tau_high", "rho", "rho_low", "rho_high"]
    return pd.DataFrame(rows, columns=columns)
