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
#: seconds: 30 s at 100,000 trials) it takes the regularized incomplete beta function (relative error ~1e-12).
EXACT_BINOMIAL_TRIALS = 2_000


def binomial_half_cdf(k: int, n: int) -> float:
    """P[X <= k] for X ~ Binomial(n, 1/2): exact (integer sums) up to :data:`EXACT_BINOMIAL_TRIALS` trials, else
    ``scipy.special.bdtr``."""
    if n <= EXACT_BINOMIAL_TRIALS:
        return sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n
    from scipy.special import bdtr

    return float(bdtr(k, n, 0.5))


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
