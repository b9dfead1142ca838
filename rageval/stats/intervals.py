"""Confidence intervals of a mean over queries.

The run overview reports every aggregate measure as a mean over queries with a two-sided Student-t interval,

    mean ± t_{(1 + c)/2, n - 1} · s / √n,   s the sample standard deviation (ddof = 1),

the interval IR papers report for a mean effectiveness over a query sample (Sakai, *Statistical Reform in
Information Retrieval?*, SIGIR Forum 2014). It is closed-form, so it costs one pass over the values even for
10,000 queries (a bootstrap over every method x measure would not fit the overview's load budget).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class MeanInterval:
    mean: float
    low: float
    high: float
    n: int
    confidence: float = 0.95


#: From this many degrees of freedom on, :func:`_t_quantile` sums the expansion (its error is below 1e-9 for any
#: confidence up to 0.999, checked against scipy in tests/stats/test_intervals.py) instead of importing scipy
#: (~0.3 s cold, a third of a dashboard page's own time).
EXPANSION_MIN_DF = 200


def _t_quantile(confidence: float, degrees_of_freedom):
    """The two-sided Student-t critical value t_{(1 + c)/2, df}; NaN where ``degrees_of_freedom`` is NaN.

    For df >= :data:`EXPANSION_MIN_DF` the Cornish-Fisher expansion of t in powers of 1/df around the normal
    quantile z (Abramowitz & Stegun 26.7.5, terms to 1/df^4; z from :class:`statistics.NormalDist`), else
    ``scipy.special.stdtrit`` (scipy is imported only then)."""
    df = np.asarray(degrees_of_freedom, dtype=np.float64)
    z = NormalDist().inv_cdf((1 + confidence) / 2)
    terms = ((z**3 + z) / 4, (5 * z**5 + 16 * z**3 + 3 * z) / 96,
             (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384,
             (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160)
    with np.errstate(divide="ignore", invalid="ignore"):
        result = np.asarray(z + sum(g / df ** (i + 1) for i, g in enumerate(terms)), dtype=np.float64)
    small = df < EXPANSION_MIN_DF  # False for NaN
    if np.any(small):
        from scipy.special import stdtrit

        result = np.where(small, stdtrit(np.where(small, df, 1.0), (1 + confidence) / 2), result)
    return result if result.ndim else float(result)


def mean_interval(values, confidence: float = 0.95) -> MeanInterval:
    """Mean of ``values`` (NaNs dropped) with its Student-t interval; the interval is NaN when n < 2."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    x = np.asarray(values, dtype=np.float64)
    x = x[~np.isnan(x)]
    n = len(x)
    if n == 0:
        return MeanInterval(math.nan, math.nan, math.nan, 0, confidence)
    mean = float(x.mean())
    if n < 2:
        return MeanInterval(mean, math.nan, math.nan, n, confidence)
    half = float(_t_quantile(confidence, n - 1) * x.std(ddof=1) / math.sqrt(n))
    return MeanInterval(mean, mean - half, mean + half, n, confidence)


def intervals_from_moments(moments: pd.DataFrame, confidence: float = 0.95, *,
                           binary_as_share: bool = False) -> pd.DataFrame:
    """``moments`` (columns n, mean, sum_sq = Σx², plus any keys) with low and high added: the Student-t interval
    from the first two moments, s² = (Σx² − n·mean²) / (n − 1). This lets a database aggregate the values (one
    ``GROUP BY``) instead of loading every per-query value; values here are in [0, 1], where the cancellation in
    Σx² − n·mean² costs nothing visible.

    ``binary_as_share``: a row whose values are all 0 or 1 (Hit@k, P@1, RR@1 of binary labels) gets the
    :func:`wilson_interval` of its share instead, which stays inside [0, 1]. For values in [0, 1], x² ≤ x with
    equality only at 0 and 1, so the moments tell: Σx² = Σx = n·mean exactly when every value is 0 or 1."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    n = moments["n"].to_numpy(dtype=np.float64)
    mean = moments["mean"].to_numpy(dtype=np.float64)
    sum_sq = moments["sum_sq"].to_numpy(dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        variance = np.clip((sum_sq - n * mean**2) / (n - 1), 0.0, None)
        half = np.where(n >= 2, _t_quantile(confidence, np.where(n >= 2, n - 1, np.nan)) * np.sqrt(variance / n),
                        np.nan)
    low, high = mean - half, mean + half
    if binary_as_share and len(moments):
        successes = n * mean
        binary = (n > 0) & np.isclose(sum_sq, successes, rtol=0, atol=1e-6) & np.isclose(
            successes, np.round(successes), rtol=0, atol=1e-6)
        share_low, share_high = wilson_interval(np.where(binary, np.round(successes), 0), np.where(binary, n, 1),
                                                confidence)
        low, high = np.where(binary, share_low, low), np.where(binary, share_high, high)
    return moments.assign(low=low, high=high)


def grouped_mean_intervals(frame: pd.DataFrame, by: list[str], value: str = "value",
                           confidence: float = 0.95) -> pd.DataFrame:
    """:func:`mean_interval` of ``value`` per group of ``by``: columns ``by`` + mean, low, high, n."""
    values = frame.dropna(subset=[value])
    moments = (values.assign(_sq=values[value] ** 2).groupby(by, sort=False)
               .agg(n=(value, "count"), mean=(value, "mean"), sum_sq=("_sq", "sum")).reset_index())
    return intervals_from_moments(moments, confidence)[[*by, "mean", "low", "high", "n"]]


def _normal_quantile(confidence: float) -> float:
    """The two-sided standard normal critical value z_{(1 + c)/2} (1.95996... for 95%): the standard library's
    inverse normal CDF (Wichura's AS 241, as scipy's ``ndtri`` to the last bits), so a page of shares does not
    import scipy (0.3-0.5 s)."""
    from statistics import NormalDist

    return NormalDist().inv_cdf((1 + confidence) / 2)


def wilson_interval(successes, n, confidence: float = 0.95) -> tuple:
    """Wilson score interval of a proportion ``successes / n`` (Wilson, *Probable inference, the law of succession,
    and statistical inference*, JASA 1927; Newcombe, Statistics in Medicine 1998, method 3):

        (p + z²/2n ± z·√(p(1 − p)/n + z²/4n²)) / (1 + z²/n),   p = successes / n,  z = z_{(1 + c)/2},

    always inside [0, 1] and not degenerate at p = 0 or 1 (the Student-t or Wald interval of a mean of 0/1 scores
    goes below 0 for a small share and collapses to one point at 0 or n). Scalars or arrays; ``(low, high)``, NaN
    where n is 0."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    x = np.asarray(successes, dtype=np.float64)
    m = np.asarray(n, dtype=np.float64)
    if np.any(x < 0) or np.any(x > m):
        raise ValueError("successes must be between 0 and n")
    z = _normal_quantile(confidence)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = x / m
        denominator = 1 + z * z / m
        centre = (p + z * z / (2 * m)) / denominator
        half = z * np.sqrt(p * (1 - p) / m + z * z / (4 * m * m)) / denominator
        # Exactly 0 (1) at 0 (n) successes, not a rounding away from it.
        low = np.where(m > 0, np.where(x == 0, 0.0, np.clip(centre - half, 0.0, 1.0)), np.nan)
        high = np.where(m > 0, np.where(x == m, 1.0, np.clip(centre + half, 0.0, 1.0)), np.nan)
    if low.ndim == 0:
        return float(low), float(high)
    return low, high


def share_interval(values, confidence: float = 0.95) -> MeanInterval:
    """The share of 1s among 0/1 ``values`` (NaNs dropped) with its :func:`wilson_interval`: the interval for a
    mean of exact-match or Yes/No scores. Values other than 0 and 1 are an error (a graded score's mean takes
    :func:`mean_interval`)."""
    x = np.asarray(values, dtype=np.float64)
    x = x[~np.isnan(x)]
    if not np.isin(x, (0.0, 1.0)).all():
        raise ValueError("share_interval takes 0/1 values; use mean_interval for graded scores")
    return share_from_counts(int(x.sum()), len(x), confidence)


def share_from_counts(successes: int, n: int, confidence: float = 0.95) -> MeanInterval:
    """The share ``successes / n`` with its :func:`wilson_interval` as a :class:`MeanInterval` (all NaN when n is
    0): the interval of a share of queries (a 2 x 2 cell, a failure rate)."""
    if n < 0 or not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n, got {successes} of {n}")
    if n == 0:
        return MeanInterval(math.nan, math.nan, math.nan, 0, confidence)
    low, high = wilson_interval(successes, n, confidence)
    return MeanInterval(successes / n, low, high, n, confidence)


def macro_bootstrap_interval(frame: pd.DataFrame, value: str = "value", *, cluster: str = "cluster",
                             group: str = "agent", unit: str = "query_id", n_resamples: int = 2000,
                             confidence: float = 0.95, seed: int = 0) -> MeanInterval:
    """Macro average over ``group`` (mean over groups of each group's mean ``value`` over its units) with a
    percentile bootstrap interval that resamples units within each ``cluster``, one draw shared by every group
    of the cluster.

    The IUM agents of one task answer the same test questions, so their scores are not independent: resampling
    each agent's questions on its own would understate the variance of a macro average. Each resample draws the
    questions of a cluster (a task) with replacement once (as counts ``c_u``) and every agent ``a`` of that cluster
    gets the mean ``Σ_u c_u v_{a,u} / Σ_u c_u`` over the questions it has; the statistic is the mean over agents.
    For a paired difference pass ``value`` = score of A minus score of B per (agent, question). ``n`` of the result
    is the number of (group, unit) rows; the interval is NaN below two units in every cluster.
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    rows = frame[[cluster, group, unit, value]].dropna(subset=[value])
    if rows.empty:
        return MeanInterval(math.nan, math.nan, math.nan, 0, confidence)
    rng = np.random.default_rng(seed)
    group_means, resampled, resamplable = [], [], False
    for _, block in rows.groupby(cluster, sort=True):
        units = pd.Index(sorted(block[unit].unique()))
        resamplable |= len(units) >= 2
        draws = rng.integers(0, len(units), size=(n_resamples, len(units)))
        counts = np.zeros((n_resamples, len(units)))
        np.add.at(counts, (np.arange(n_resamples)[:, None], draws), 1.0)
        for _, member in block.groupby(group, sort=True):
            position = units.get_indexer(member[unit])
            values = member[value].to_numpy(dtype=np.float64)
            group_means.append(float(values.mean()))
            weights = counts[:, position]
            with np.errstate(invalid="ignore", divide="ignore"):
                resampled.append((weights @ values) / weights.sum(axis=1))
    estimate = float(np.mean(group_means))
    if not resamplable:
        return MeanInterval(estimate, math.nan, math.nan, len(rows), confidence)
    statistic = np.nanmean(np.vstack(resampled), axis=0)
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.nanpercentile(statistic, [tail, 100.0 - tail])
    return MeanInterval(estimate, float(low), float(high), len(rows), confidence)


def interval_ranks(lows, highs) -> list[int | None]:
    """Ranks that claim only what the intervals support: an item's rank is 1 + the number of items whose interval
    lies wholly above its own (their low above its high), so items whose intervals overlap may share a rank and a
    small sample's wide interval is not ranked above a large one's on its point estimate. None where an interval
    is missing (NaN)."""
    pairs = [(float(lo), float(hi)) for lo, hi in zip(lows, highs)]
    known = [(lo, hi) for lo, hi in pairs if not (math.isnan(lo) or math.isnan(hi))]
    return [None if math.isnan(lo) or math.isnan(hi) else 1 + sum(other_lo > hi for other_lo, _ in known)
            for lo, hi in pairs]
