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

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class MeanInterval:
    mean: float
    low: float
    high: float
    n: int
    confidence: float = 0.95


def mean_interval(values, confidence: float = 0.95) -> MeanInterval:
    """Mean of ``values`` (NaNs dropped) with its Student-t interval; the interval is NaN when n < 2."""
    from scipy.stats import t

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
    half = float(t.ppf((1 + confidence) / 2, n - 1) * x.std(ddof=1) / math.sqrt(n))
    return MeanInterval(mean, mean - half, mean + half, n, confidence)


def grouped_mean_intervals(frame: pd.DataFrame, by: list[str], value: str = "value",
                           confidence: float = 0.95) -> pd.DataFrame:
    """:func:`mean_interval` of ``value`` per group of ``by``, vectorised: columns ``by`` + mean, low, high, n."""
    from scipy.stats import t

    grouped = frame.dropna(subset=[value]).groupby(by, sort=False)[value]
    out = grouped.agg(mean="mean", sd="std", n="count").reset_index()  # pandas std: ddof = 1
    factor = np.where(out["n"] >= 2, t.ppf((1 + confidence) / 2, np.maximum(out["n"] - 1, 1)), np.nan)
    half = factor * out["sd"] / np.sqrt(out["n"])
    out["low"], out["high"] = out["mean"] - half, out["mean"] + half
    return out.drop(columns="sd")[[*by, "mean", "low", "high", "n"]]
