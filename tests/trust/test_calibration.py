"""Calibration of a method against people: the confusion matrix, precision, recall and kappa against sklearn
(unweighted and with a stratified sample's weights), Rogan–Gladen on a known case, Kendall's tau against scipy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import kendalltau
from sklearn.metrics import cohen_kappa_score, confusion_matrix, precision_score, recall_score

from rageval.trust.calibration import calibrate, query_agreement, rank_agreement, rogan_gladen


def labels(seed: int, n: int = 500):
    rng = np.random.default_rng(seed)
    human = (rng.random(n) < 0.3).astype(int)
    method = np.where(rng.random(n) < 0.75, human, 1 - human)
    return human, method


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("seed", [0, 1])
def test_calibration_equals_sklearn(seed, weighted):
    human, method = labels(seed)
    weights = np.random.default_rng(seed + 10).choice([1.0, 4.0, 9.5], size=len(human)) if weighted else None
    ours = calibrate(human, method, weights, method_share_all=0.4)
    tn, fp, fn, tp = confusion_matrix(human, method, labels=[0, 1]).ravel()
    assert (ours.tn, ours.fp, ours.fn, ours.tp) == (tn, fp, fn, tp)  # counts of labelled items, unweighted
    assert ours.precision == pytest.approx(precision_score(human, method, sample_weight=weights))
    assert ours.recall == pytest.approx(recall_score(human, method, sample_weight=weights))
    assert ours.specificity == pytest.approx(recall_score(human, method, pos_label=0, sample_weight=weights))
    assert ours.kappa == pytest.approx(cohen_kappa_score(human, method, sample_weight=weights))
    w = np.ones(len(human)) if weights is None else weights
    assert ours.human_base_rate == pytest.approx(np.average(human, weights=w))
    assert ours.method_base_rate == pytest.approx(np.average(method, weights=w))


def test_rogan_gladen_recovers_a_known_prevalence():
    # true share 0.3, sensitivity 0.8, specificity 0.9: the method calls 0.8 * 0.3 + 0.1 * 0.7 = 0.31 relevant
    assert rogan_gladen(0.31, 0.8, 0.9) == pytest.approx(0.3)
    # through calibrate: a sample where recall is exactly 0.8 and specificity 0.9
    human = np.array([1] * 10 + [0] * 10)
    method = np.array([1] * 8 + [0] * 2 + [1] * 1 + [0] * 9)
    result = calibrate(human, method, method_share_all=0.31)
    assert (result.recall, result.specificity) == pytest.approx((0.8, 0.9))
    assert result.rogan_gladen == pytest.approx(0.3)
    assert rogan_gladen(0.05, 0.8, 0.9) == 0.0  # below the false-positive rate: clipped
    assert math.isnan(rogan_gladen(0.3, 0.5, 0.5))  # a method no better than chance says nothing


def test_undefined_rates_are_nan_not_errors():
    result = calibrate([0, 0, 0], [0, 0, 0], method_share_all=0.0)
    assert math.isnan(result.recall) and math.isnan(result.precision) and math.isnan(result.kappa)
    assert result.as_dict()["recall"] is None
    with pytest.raises(ValueError, match="0/1"):
        calibrate([2, 0], [1, 0])


def test_rank_agreement_equals_scipy_kendall_tau_b():
    rng = np.random.default_rng(5)
    people = rng.integers(0, 4, size=40) / 4  # ties, as shares of few passages have
    method = np.clip(people + rng.normal(0, 0.3, size=40), 0, 1).round(1)
    ours = rank_agreement(people, method)
    assert ours.tau == pytest.approx(kendalltau(people, method, variant="b").statistic)
    assert ours.n == 40
    assert "at least 2" in rank_agreement([0.2], [0.3], "runs").reason
    assert "the method's values are the same" in rank_agreement([0.1, 0.2, 0.3], [1, 1, 1]).reason


def test_query_agreement_uses_queries_with_two_labelled_passages():
    items = {"q1": [(1, 1), (0, 0)], "q2": [(1, 1), (1, 0), (0, 0)], "q3": [(0, 1)], "q4": [(0, 0), (0, 1)]}
    ours = query_agreement(items)
    people, method = [0.5, 2 / 3, 0.0], [0.5, 1 / 3, 0.5]
    assert ours.n == 3
    assert ours.tau == pytest.approx(kendalltau(people, method, variant="b").statistic)
