"""PPI, PPI++ and the human-only estimate against ppi-python (``ppi_py``, the authors' package) on synthetic data:
the same point estimates and 95% intervals, for a binary and a graded measure; the stratified estimate against
ppi-python per stratum and against its weighted point estimate."""

from __future__ import annotations

import math

import numpy as np
import pytest

ppi_py = pytest.importorskip("ppi_py")
from ppi_py import classical_mean_ci, ppi_mean_ci, ppi_mean_pointestimate  # noqa: E402

from rageval.trust import ppi  # noqa: E402

ALPHA = 0.05


def synthetic(seed: int, n: int, big_n: int, graded: bool):
    """Human labels y, automatic labels of the same items and of a population of big_n others: a method that
    agrees with people 80% of the time (binary) or a noisy score of their grade (graded, in [0, 1])."""
    rng = np.random.default_rng(seed)
    if graded:
        truth_all = rng.beta(2, 5, size=big_n + n)
        f_all = np.clip(truth_all + rng.normal(0, 0.15, size=big_n + n), 0, 1)
        y = truth_all[:n] + rng.normal(0, 0.05, size=n)
    else:
        truth_all = (rng.random(big_n + n) < 0.25).astype(float)
        agree = rng.random(big_n + n) < 0.8
        f_all = np.where(agree, truth_all, 1 - truth_all)
        y = truth_all[:n]
    return y, f_all[:n], f_all[n:]


@pytest.mark.parametrize("graded", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ppi_equals_ppi_python(seed, graded):
    y, yhat, yhat_all = synthetic(seed, 300, 3000, graded)
    ours = ppi.ppi_mean(y, yhat, yhat_all, lam=1.0)
    assert ours.estimate == pytest.approx(float(ppi_mean_pointestimate(y, yhat, yhat_all, lam=1)[0]), abs=1e-12)
    low, high = ppi_mean_ci(y, yhat, yhat_all, alpha=ALPHA, lam=1)
    assert (ours.low, ours.high) == pytest.approx((float(low[0]), float(high[0])), abs=1e-12)
    assert ours.n_human == 300 and ours.n_auto == 3000


@pytest.mark.parametrize("graded", [False, True])
@pytest.mark.parametrize("seed", [3, 4, 5])
def test_ppi_plus_plus_equals_ppi_python(seed, graded):
    y, yhat, yhat_all = synthetic(seed, 200, 2000, graded)
    ours = ppi.ppi_plus_plus_mean(y, yhat, yhat_all)
    assert 0 <= ours.lam <= 1
    assert ours.estimate == pytest.approx(float(ppi_mean_pointestimate(y, yhat, yhat_all)[0]), abs=1e-12)
    low, high = ppi_mean_ci(y, yhat, yhat_all, alpha=ALPHA)
    assert (ours.low, ours.high) == pytest.approx((float(low[0]), float(high[0])), abs=1e-12)


def test_human_only_equals_the_classical_interval():
    y, _, _ = synthetic(6, 250, 10, False)
    ours = ppi.human_only_mean(y)
    low, high = classical_mean_ci(y, alpha=ALPHA)
    assert ours.estimate == pytest.approx(y.mean())
    assert (ours.low, ours.high) == pytest.approx((float(low), float(high)), abs=1e-12)
    assert ours.n_auto == 0


def test_a_useless_method_gets_no_weight_and_a_perfect_one_a_narrow_interval():
    rng = np.random.default_rng(7)
    y = (rng.random(400) < 0.3).astype(float)
    constant = ppi.ppi_plus_plus_mean(y, np.ones(400), np.ones(4000))
    assert constant.lam == 0 and constant.estimate == pytest.approx(y.mean())
    perfect_all = (rng.random(4000) < 0.3).astype(float)
    perfect = ppi.ppi_mean(y, y, perfect_all)
    human = ppi.human_only_mean(y)
    assert perfect.width < human.width / 2


def test_too_few_labels_leave_the_estimate_undefined_with_the_reason():
    one = ppi.ppi_mean([1.0], [1.0], [0.0, 1.0])
    assert math.isnan(one.estimate) and "at least 2" in one.reason
    assert one.as_dict()["estimate"] is None and one.as_dict()["reason"] == one.reason
    with pytest.raises(ValueError, match="3 human labels against 2"):
        ppi.ppi_mean([1, 0, 1], [1, 0], [1])


def test_stratified_estimate_is_the_weighted_sum_of_ppi_python_per_stratum():

    strata, expected_point, expected_var = [], 0.0, 0.0
    sizes = {"f=1": 300, "f=0, split": 1500, "f=0, agree": 1200}
    total = sum(sizes.values())
    for i, (name, size) in enumerate(sizes.items()):
        y, yhat, yhat_all = synthetic(20 + i, 60 + 20 * i, size, False)
        strata.append(ppi.StratumData(name, y, yhat, yhat_all))
        low, high = ppi_mean_ci(y, yhat, yhat_all, alpha=ALPHA, lam=1)
        point = float(ppi_mean_pointestimate(y, yhat, yhat_all, lam=1)[0])
        se = (float(high[0]) - float(low[0])) / (2 * 1.959963984540054)
        expected_point += size / total * point
        expected_var += (size / total) ** 2 * se ** 2
    ours = ppi.stratified_estimate(ppi.PPI, strata)
    assert ours.estimate == pytest.approx(expected_point, abs=1e-12)
    assert ours.se == pytest.approx(math.sqrt(expected_var), rel=1e-9)
    assert ours.n_human == sum(len(s.y) for s in strata)


def test_stratified_point_estimate_equals_ppi_python_with_design_weights():
    """ppi-python's weighted PPI (labelled weights N_h / n_h, unlabelled weights 1, each normalised to mean 1)
    is the same point estimate as the stratified one."""
    ys, yhats, fs, weights, strata = [], [], [], [], []
    for i, (size, sampled) in enumerate(((2000, 100), (500, 150), (300, 50))):
        y, yhat, yhat_all = synthetic(30 + i, sampled, size - sampled, False)
        population = np.concatenate([yhat, yhat_all])  # the stratum's items, the sampled ones among them
        strata.append(ppi.StratumData(str(i), y, yhat, population))
        ys.append(y), yhats.append(yhat), fs.append(population), weights.append(np.full(sampled, size / sampled))
    expected = ppi_mean_pointestimate(np.concatenate(ys), np.concatenate(yhats), np.concatenate(fs), lam=1,
                                      w=np.concatenate(weights))
    assert ppi.stratified_estimate(ppi.PPI, strata).estimate == pytest.approx(float(expected[0]), abs=1e-12)


def test_one_stratum_is_the_uniform_estimate():
    y, yhat, yhat_all = synthetic(10, 120, 900, True)
    for name in ppi.ESTIMATORS:
        single = ppi.stratified_estimate(name, [ppi.StratumData("all", y, yhat, yhat_all)])
        uniform = ppi.estimate(name, y, yhat, yhat_all)
        assert (single.estimate, single.low, single.high) == pytest.approx(
            (uniform.estimate, uniform.low, uniform.high), abs=1e-12)


def test_a_stratum_without_two_labels_makes_the_stratified_estimate_undefined():
    y, yhat, yhat_all = synthetic(11, 50, 500, False)
    thin = ppi.StratumData("thin", y[:1], yhat[:1], yhat_all[:40])
    result = ppi.stratified_estimate(ppi.PPI, [ppi.StratumData("big", y, yhat, yhat_all), thin])
    assert math.isnan(result.estimate) and "stratum thin" in result.reason


def test_this_repositorys_tests_package_wins_over_ppi_pythons():
    """ppi-python installs a top-level ``tests`` package; ours (a regular package) must be the one imported."""
    from pathlib import Path

    import tests

    assert Path(tests.__file__).resolve().parent == Path(__file__).resolve().parents[1]
    assert (Path(tests.__file__).parent / "offline_app_session.py").is_file()


def test_a_sample_without_variance_gets_no_interval_and_says_why():
    """30 queries that all have a hit: the human-only normal interval would be the point 1.0 [1.0, 1.0]."""
    ones = np.ones(30)
    human = ppi.human_only_mean(ones)
    assert human.estimate == 1.0 and math.isnan(human.low) and "the same on all 30" in human.reason
    # PPI keeps the automatic values' variance, as ppi-python does
    f_all = (np.random.default_rng(12).random(300) < 0.5).astype(float)
    assert math.isfinite(ppi.ppi_mean(ones, ones, f_all).low)
