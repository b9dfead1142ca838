"""Paired significance of binary per-query outcomes, and agreement between ranked lists.

McNemar's test (McNemar, 1947), exact form: of the queries where methods A and B disagree, b are right only under A
and c only under B; under H0 (no difference) b ~ Binomial(b + c, 1/2), and the two-sided p-value is
min(1, 2 · P[X <= min(b, c)]). The IUM paper uses it because its metrics (EM, accuracy) are binary per query.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class McNemarResult:
    only_a: int  # b: A right, B wrong
    only_b: int  # c: A wrong, B right
    p_value: float


def mcnemar_exact(outcomes_a: Sequence[bool], outcomes_b: Sequence[bool]) -> McNemarResult:
    """Exact two-sided McNemar test of paired binary outcomes (p = 1 when the methods never disagree)."""
    if len(outcomes_a) != len(outcomes_b):
        raise ValueError(f"mcnemar_exact: {len(outcomes_a)} outcomes for A but {len(outcomes_b)} for B")
    only_a = sum(bool(a) and not bool(b) for a, b in zip(outcomes_a, outcomes_b))
    only_b = sum(bool(b) and not bool(a) for a, b in zip(outcomes_a, outcomes_b))
    n = only_a + only_b
    if n == 0:
        return McNemarResult(0, 0, 1.0)
    return McNemarResult(only_a, only_b, min(1.0, 2 * binomial_half_cdf(min(only_a, only_b), n)))


#: Up to this many trials :func:`binomial_half_cdf` sums exact binomial coefficients; past it (where the sum costs
#: seconds: 30 s at 100,000 trials) it sums floating-point terms from an accurately computed last one.
EXACT_BINOMIAL_TRIALS = 2_000
_LN_2PI = math.log(2 * math.pi)


def binomial_half_cdf(k: int, n: int) -> float:
    """P[X <= k] for X ~ Binomial(n, 1/2): exact (integer sums) up to :data:`EXACT_BINOMIAL_TRIALS` trials, else
    :func:`_half_cdf_terms` (relative error ~1e-13 against ``scipy.special.bdtr``, without scipy's ~0.3 s import
    on a dashboard page)."""
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    if n <= EXACT_BINOMIAL_TRIALS:
        return sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n
    if 2 * k > n:  # the upper tail is the short sum: P[X <= k] = 1 - P[X <= n - k - 1] by symmetry
        return 1.0 - _half_cdf_terms(n - k - 1, n)
    return _half_cdf_terms(k, n)


def _half_cdf_terms(k: int, n: int) -> float:
    """P[X <= k], X ~ Binomial(n, 1/2), k <= n / 2: the last term P[X = k] (:func:`_half_pmf`) times the sum of
    the terms below it relative to it, t_(i-1) / t_i = i / (n - i + 1), until they no longer change the sum."""
    total, term = 1.0, 1.0
    for i in range(k, 0, -1):
        term *= i / (n - i + 1)
        total += term
        if term < 1e-17 * total:
            break
    return min(1.0, _half_pmf(k, n) * total)


def _half_pmf(k: int, n: int) -> float:
    """P[X = k] for X ~ Binomial(n, 1/2), to ~1e-14 relative for any n: Loader's saddle-point form (C. Loader,
    *Fast and accurate computation of binomial probabilities*, 2000; R's dbinom), which avoids the cancellation of
    log-gamma differences near 10^6."""
    if k == 0 or k == n:
        return math.ldexp(1.0, -n)
    half = n / 2
    log_core = _stirling_error(n) - _stirling_error(k) - _stirling_error(n - k) - _deviance(k, half) \
        - _deviance(n - k, half)
    return math.exp(log_core - 0.5 * (_LN_2PI + math.log(k) + math.log1p(-k / n)))


def _stirling_error(n: int) -> float:
    """log(n!) - log(sqrt(2 pi n) (n / e)^n): log-gamma for small n, else its asymptotic series (Loader 2000)."""
    if n <= 15:
        return math.lgamma(n + 1) - (n + 0.5) * math.log(n) + n - 0.5 * _LN_2PI
    nn = float(n) * n
    s0, s1, s2, s3, s4 = 1 / 12, 1 / 360, 1 / 1260, 1 / 1680, 1 / 1188
    if n > 500:
        return (s0 - s1 / nn) / n
    if n > 80:
        return (s0 - (s1 - s2 / nn) / nn) / n
    if n > 35:
        return (s0 - (s1 - (s2 - s3 / nn) / nn) / nn) / n
    return (s0 - (s1 - (s2 - (s3 - s4 / nn) / nn) / nn) / nn) / n


def _deviance(x: float, mean: float) -> float:
    """x log(x / mean) + mean - x, by its series in v = (x - mean) / (x + mean) when x is near ``mean`` (where the
    direct form cancels; Loader 2000)."""
    if abs(x - mean) < 0.1 * (x + mean):
        v = (x - mean) / (x + mean)
        s = (x - mean) * v
        ej = 2 * x * v
        vv = v * v
        for j in range(1, 1000):
            ej *= vv
            s1 = s + ej / (2 * j + 1)
            if s1 == s:
                return s1
            s = s1
        return s
    return x * math.log(x / mean) + mean - x


def jaccard(a: Sequence[str], b: Sequence[str]) -> float:
    """|A ∩ B| / |A ∪ B| of two lists as sets (1.0 for two empty lists)."""
    union = set(a) | set(b)
    return len(set(a) & set(b)) / len(union) if union else 1.0


def top_k_kendall_tau(a: Sequence[str], b: Sequence[str]) -> float:
    """Kendall's tau-b between two top-k lists over the union of their items; an item missing from a list is tied
    at rank len(list) + 1 there (NaN when either side is constant)."""
    from rageval.stats.correlation import kendall_tau_b

    items = list(dict.fromkeys([*a, *b]))
    rank_a = {item: rank for rank, item in enumerate(a, start=1)}
    rank_b = {item: rank for rank, item in enumerate(b, start=1)}
    return float(kendall_tau_b([rank_a.get(i, len(a) + 1) for i in items], [rank_b.get(i, len(b) + 1) for i in items]))
