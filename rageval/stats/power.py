"""How many paired test queries a McNemar test needs: sample size and power from the discordant-pair probabilities.

Two engines A and B answer the same n test queries; per query the outcome pair is (right, wrong), (wrong, right) or
a tie. With p10 = P(A right, B wrong) and p01 = P(A wrong, B right), the discordant proportion is ψ = p10 + p01 and
the difference in accuracy is δ = p10 - p01. The asymptotic McNemar test (z = (b - c) / sqrt(b + c)) at two-sided
level α has power 1 - β at

    n = (z_{1-α/2} · sqrt(ψ) + z_{1-β} · sqrt(ψ - δ²))² / δ²                     (Connor, 1987, Eq. 3)

Miettinen (1968) replaces ψ - δ² under the alternative by ψ - δ²(3 + ψ) / (4ψ); the two agree to a query or two at
the small δ met here. The exact test (:func:`rageval.stats.paired.mcnemar_exact`, the one rageval reports) is
conservative, so :func:`mcnemar_exact_power` computes its power exactly (b + c ~ Binomial(n, ψ); given b + c = d,
b ~ Binomial(d, p10 / ψ)) and :func:`mcnemar_sample_size` with ``test="exact"`` searches n by bisection.

Only the marginal accuracies are usually known, not ψ: :func:`discordant_probabilities` gives (p10, p01) from them
and ψ (for a measured ψ), or under independence of the two engines' outcomes (p10 = p_A (1 - p_B): the largest
discordance two engines of those accuracies plausibly have, so the largest n; rerankers of one first stage agree
far more). :func:`power_table` is the helper the results writer calls.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

#: The conventional level and power of a sample-size calculation.
ALPHA = 0.05
POWER = 0.8
TESTS = ("connor", "miettinen", "exact")


def _z(probability: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(probability))


def _check(p10: float, p01: float) -> None:
    if not (0 <= p10 <= 1 and 0 <= p01 <= 1 and p10 + p01 <= 1):
        raise ValueError(f"discordant probabilities p10={p10}, p01={p01}: expected each in [0, 1], summing to <= 1")
    if p10 == p01:
        raise ValueError(f"p10 = p01 = {p10}: no difference in accuracy to detect")


def discordant_probabilities(p_a: float, p_b: float, psi: float | None = None) -> tuple[float, float]:
    """(p10, p01) of two engines with accuracies ``p_a`` and ``p_b``: from the discordant proportion ``psi`` when
    given (p10 = (ψ + δ) / 2, p01 = (ψ - δ) / 2 with δ = p_a - p_b; ψ must be at least |δ|), else under
    independence (p10 = p_a (1 - p_b), p01 = p_b (1 - p_a))."""
    if not (0 <= p_a <= 1 and 0 <= p_b <= 1):
        raise ValueError(f"accuracies {p_a}, {p_b}: expected values in [0, 1]")
    if psi is None:
        return p_a * (1 - p_b), p_b * (1 - p_a)
    delta = p_a - p_b
    if not abs(delta) <= psi <= 1 or psi > 2 - p_a - p_b or psi > p_a + p_b:
        raise ValueError(f"discordant proportion {psi}: impossible for accuracies {p_a} and {p_b} (expected "
                         f"{abs(delta):.4g} <= psi <= {min(1.0, p_a + p_b, 2 - p_a - p_b):.4g})")
    return (psi + delta) / 2, (psi - delta) / 2


def mcnemar_asymptotic_power(n: int, p10: float, p01: float, alpha: float = ALPHA) -> float:
    """Power of the two-sided asymptotic McNemar test with ``n`` pairs (Connor's normal approximation)."""
    _check(p10, p01)
    psi, delta = p10 + p01, abs(p10 - p01)
    return _normal_cdf((delta * math.sqrt(n) - _z(1 - alpha / 2) * math.sqrt(psi)) / math.sqrt(psi - delta ** 2))


def _normal_cdf(x: float) -> float:
    return 0.5 * math.erfc(-x / math.sqrt(2))


def mcnemar_exact_power(n: int, p10: float, p01: float, alpha: float = ALPHA) -> float:
    """Power of the exact two-sided McNemar test (:func:`rageval.stats.paired.mcnemar_exact`) with ``n`` pairs,
    computed exactly: the sum over the discordant count d ~ Binomial(n, ψ) of P(reject | d), where given d the
    count b of "A right only" is Binomial(d, p10 / ψ) and the test rejects when 2 · P[X <= min(b, d - b)] <= α
    for X ~ Binomial(d, 1/2)."""
    import numpy as np
    from scipy.stats import binom

    _check(p10, p01)
    psi = p10 + p01
    # Only the discordant counts with any weight (pmf > 1e-13 on either side of n psi): the rest add nothing.
    low, high = (int(x) for x in binom.ppf([1e-13, 1 - 1e-13], n, psi))
    ds = np.arange(max(1, low), min(n, high) + 1)
    if len(ds) == 0:
        return 0.0
    # Per d, the largest m with 2 * P[X <= m] <= alpha (-1: no b rejects at this d); reject when min(b, d - b) <= m.
    m = binom.ppf(alpha / 2, ds, 0.5).astype(int)
    m = np.where(2 * binom.cdf(m, ds, 0.5) <= alpha, m, m - 1)
    share = p10 / psi
    reject = np.where(m >= 0, binom.cdf(m, ds, share) + binom.sf(ds - m - 1, ds, share), 0.0)
    return float(np.sum(binom.pmf(ds, n, psi) * np.minimum(reject, 1.0)))


def mcnemar_sample_size(p10: float, p01: float, alpha: float = ALPHA, power: float = POWER,
                        test: str = "connor") -> int:
    """Paired test queries a two-sided McNemar test at level ``alpha`` needs to detect the difference
    δ = p10 - p01 with probability ``power`` (module docstring): ``connor`` (Connor 1987), ``miettinen``
    (Miettinen 1968), or ``exact`` (an n at which :func:`mcnemar_exact_power` reaches ``power`` and n - 1 does not,
    by bisection)."""
    if test not in TESTS:
        raise ValueError(f"test {test!r}: expected one of {', '.join(TESTS)}")
    if not (0 < alpha < 1 and 0 < power < 1):
        raise ValueError(f"alpha {alpha}, power {power}: expected values strictly between 0 and 1")
    _check(p10, p01)
    psi, delta = p10 + p01, abs(p10 - p01)
    z_alpha, z_beta = _z(1 - alpha / 2), _z(power)
    alternative = psi - delta ** 2 if test != "miettinen" else psi - delta ** 2 * (3 + psi) / (4 * psi)
    n = math.ceil((z_alpha * math.sqrt(psi) + z_beta * math.sqrt(max(alternative, 0.0))) ** 2 / delta ** 2)
    if test != "exact":
        return n
    # The exact test's power rises with n in a sawtooth: bisection between an n short of the target and one that
    # reaches it gives an n that reaches it with n - 1 short (a few n just above may fall short again).
    low, high = max(1, n // 2), n
    while mcnemar_exact_power(high, p10, p01, alpha) < power:
        low, high = high, high * 2
    while mcnemar_exact_power(low, p10, p01, alpha) >= power and low > 1:
        low //= 2
    while high - low > 1:
        middle = (low + high) // 2
        if mcnemar_exact_power(middle, p10, p01, alpha) >= power:
            high = middle
        else:
            low = middle
    return high


@dataclass(frozen=True)
class PowerRow:
    """One scenario of :func:`power_table`: accuracies, discordant probabilities and the queries needed."""

    scenario: str
    p_a: float
    p_b: float
    p10: float
    p01: float
    n_connor: int
    n_exact: int


def power_table(scenarios: Iterable[tuple[str, float, float, float | None]], alpha: float = ALPHA,
                power: float = POWER) -> list[PowerRow]:
    """For each ``(name, p_a, p_b, psi)`` (``psi`` None: independent outcomes), the paired test queries a McNemar
    test needs (Connor's formula and the exact test), at ``alpha`` and ``power``: what docs/results.md states
    beside a test set's size."""
    rows = []
    for name, p_a, p_b, psi in scenarios:
        p10, p01 = discordant_probabilities(p_a, p_b, psi)
        rows.append(PowerRow(name, p_a, p_b, p10, p01, mcnemar_sample_size(p10, p01, alpha, power, "connor"),
                             mcnemar_sample_size(p10, p01, alpha, power, "exact")))
    return rows
