"""McNemar sample size and power (rageval.stats.power), checked against simulations of the tests themselves
(numpy, fixed seed): the asymptotic z test for Connor's formula, rageval's exact test (``mcnemar_exact``'s rule,
vectorised with scipy) for the exact power."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binom

from rageval.stats.paired import mcnemar_exact
from rageval.stats.power import (
    discordant_probabilities,
    mcnemar_asymptotic_power,
    mcnemar_exact_power,
    mcnemar_sample_size,
    power_table,
)

TRIALS = 20_000  # a simulated power's standard error is about sqrt(0.8 * 0.2 / 20000) = 0.0028


def simulate(n: int, p10: float, p01: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    counts = np.random.default_rng(seed).multinomial(n, [p10, p01, 1 - p10 - p01], size=TRIALS)
    return counts[:, 0], counts[:, 1]


def test_connor_sample_size_is_where_the_asymptotic_power_reaches_the_target():
    p10, p01 = discordant_probabilities(0.3, 0.2)  # independent outcomes: 0.24, 0.14
    assert (p10, p01) == pytest.approx((0.24, 0.14))
    n = mcnemar_sample_size(p10, p01)
    # Connor's formula by hand: psi = 0.38, delta = 0.10, z = 1.959964 and 0.841621.
    by_hand = (1.959964 * 0.38 ** 0.5 + 0.841621 * (0.38 - 0.01) ** 0.5) ** 2 / 0.01
    assert n == int(np.ceil(by_hand)) == 296
    assert mcnemar_asymptotic_power(n, p10, p01) >= 0.8 > mcnemar_asymptotic_power(n - 1, p10, p01)
    b, c = simulate(n, p10, p01)
    z = np.where(b + c > 0, (b - c) / np.sqrt(np.maximum(b + c, 1)), 0.0)
    assert (np.abs(z) >= 1.959964).mean() == pytest.approx(0.8, abs=0.01)
    assert abs(mcnemar_sample_size(p10, p01, test="miettinen") - n) <= 5


@pytest.mark.parametrize("p_a, p_b, psi", [(0.1096, 0.05, None), (0.1696, 0.11, 0.092), (0.3, 0.2, None)])
def test_exact_power_matches_a_simulation_of_the_exact_test(p_a, p_b, psi):
    p10, p01 = discordant_probabilities(p_a, p_b, psi)
    n = mcnemar_sample_size(p10, p01, test="exact")
    power = mcnemar_exact_power(n, p10, p01)
    assert power >= 0.8 > mcnemar_exact_power(n - 1, p10, p01)
    b, c = simulate(n, p10, p01, seed=1)
    p_values = np.where(b + c > 0, np.minimum(1.0, 2 * binom.cdf(np.minimum(b, c), b + c, 0.5)), 1.0)
    assert (p_values <= 0.05).mean() == pytest.approx(power, abs=0.01)
    # The vectorised rule is mcnemar_exact's: the same p-value on a few of the simulated tables.
    for only_a, only_b in list(zip(b, c))[:20]:
        outcomes_a = [True] * only_a + [False] * only_b
        outcomes_b = [False] * only_a + [True] * only_b
        assert mcnemar_exact(outcomes_a, outcomes_b).p_value == pytest.approx(
            min(1.0, 2 * binom.cdf(min(only_a, only_b), only_a + only_b, 0.5)) if only_a + only_b else 1.0)
    # The exact test is conservative: it needs at least as many queries as Connor's asymptotic formula.
    assert n >= mcnemar_sample_size(p10, p01) - 1


def test_discordant_probabilities_and_bad_input():
    assert discordant_probabilities(0.2, 0.1, psi=0.15) == pytest.approx((0.125, 0.025))
    with pytest.raises(ValueError, match="impossible"):
        discordant_probabilities(0.2, 0.1, psi=0.05)  # fewer disagreements than the difference in accuracy
    with pytest.raises(ValueError, match="no difference"):
        mcnemar_sample_size(0.1, 0.1)
    with pytest.raises(ValueError, match="test"):
        mcnemar_sample_size(0.2, 0.1, test="wald")
    rows = power_table([("a", 0.3, 0.2, None), ("b", 0.3, 0.2, 0.12)])
    assert [r.scenario for r in rows] == ["a", "b"] and rows[1].n_connor < rows[0].n_connor


def test_the_results_writer_gets_a_table_of_the_papers_differences():
    from rageval.ium.results_section import power_section

    text = "\n".join(power_section([0.05, 0.11], psi=11 / 120))
    assert "| 5% -> 11.0% (+5.96 points), independent outcomes |" in text
    assert "n (exact test)" in text and text.count("\n| ") >= 7
