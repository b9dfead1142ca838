"""The 95% intervals cover the truth: over 1,000 simulated samples from a finite population of 3,000 passages,
PPI, PPI++ and the human-only interval each cover the population's mean human label at least 93% of the time, for
a uniform sample and for a stratified one (strata by the automatic label, unequal sampling rates); and with a good
automatic method the PPI interval is narrower than the human-only one."""

from __future__ import annotations

import numpy as np
import pytest

from rageval.trust import ppi

DRAWS = 1000
N, SAMPLE = 3000, 300


def population(seed: int):
    """A population like the shipped NQ run's: 20% relevant to people; a method with recall 0.7 and specificity
    0.95 (kappa about 0.65)."""
    rng = np.random.default_rng(seed)
    y = (rng.random(N) < 0.2).astype(float)
    f = np.where(y == 1, rng.random(N) < 0.7, rng.random(N) < 0.05).astype(float)
    return y, f


@pytest.mark.parametrize("estimator", ppi.ESTIMATORS)
def test_uniform_sample_intervals_cover_the_truth(estimator):
    y, f = population(0)
    truth = y.mean()
    rng = np.random.default_rng(1)
    covered, widths = 0, []
    for _ in range(DRAWS):
        sample = rng.choice(N, size=SAMPLE, replace=False)
        e = ppi.estimate(estimator, y[sample], f[sample], f)
        covered += e.covers(truth)
        widths.append(e.width)
    assert covered / DRAWS >= 0.93, f"{estimator}: {covered / DRAWS:.1%}"
    if estimator != ppi.HUMAN_ONLY:
        human = [ppi.human_only_mean(y[rng.choice(N, size=SAMPLE, replace=False)]).width for _ in range(100)]
        assert np.mean(widths) < np.mean(human)


@pytest.mark.parametrize("estimator", ppi.ESTIMATORS)
def test_stratified_sample_intervals_cover_the_truth(estimator):
    y, f = population(2)
    truth = y.mean()
    rng = np.random.default_rng(3)
    # strata by a feature that goes with relevance (as "the methods disagree" does), so f varies within each
    top = rng.random(N) < np.where(y == 1, 0.6, 0.15)
    strata = {"top": np.flatnonzero(top), "rest": np.flatnonzero(~top)}
    sizes = {"top": 150, "rest": 150}  # "top" (about a fifth of the items) oversampled
    covered = 0
    for _ in range(DRAWS):
        parts = []
        for name, members in strata.items():
            sample = rng.choice(members, size=sizes[name], replace=False)
            parts.append(ppi.StratumData(name, y[sample], f[sample], f[members]))
        covered += ppi.stratified_estimate(estimator, parts).covers(truth)
    assert covered / DRAWS >= 0.93, f"{estimator}: {covered / DRAWS:.1%}"
