"""Checker metrics (issue 17): every number cross-checked against scikit-learn, ties and one-class cases included,
claim-level aggregation, the vectorised bootstrap against a loop, and the dev-calibrated threshold."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, balanced_accuracy_score, f1_score, roc_auc_score

from rageval.attribution.nli_eval import (
    CheckerEvaluation,
    aggregate_claims,
    best_threshold,
    evaluate_checker_scores,
    roc_auc,
)


def _sklearn(gold, probabilities, threshold):
    predicted = [int(p >= threshold) for p in probabilities]
    return (accuracy_score(gold, predicted), balanced_accuracy_score(gold, predicted),
            f1_score(gold, predicted, zero_division=0.0))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pair_level_metrics_match_sklearn(seed):
    rng = np.random.default_rng(seed)
    gold = rng.integers(0, 2, 200).tolist()
    # Rounded to one decimal: many tied scores, across both classes.
    probabilities = np.round(np.clip(0.3 * np.asarray(gold) + rng.random(200) * 0.7, 0, 1), 1).tolist()
    result = evaluate_checker_scores(gold, probabilities, 0.5, resamples=200)
    accuracy, bacc, f1 = _sklearn(gold, probabilities, 0.5)
    assert result.level == "pair" and result.n == 200 and result.positives == sum(gold)
    assert result.accuracy == pytest.approx(accuracy)
    assert result.balanced_accuracy == pytest.approx(bacc)
    assert result.f1 == pytest.approx(f1)
    assert result.roc_auc == pytest.approx(roc_auc_score(gold, probabilities))
    low, high = result.balanced_accuracy_interval
    assert low <= result.balanced_accuracy <= high
    low, high = result.roc_auc_interval
    assert low <= result.roc_auc <= high


def test_all_tied_scores_give_auc_one_half_and_threshold_counts_equal_as_supported():
    gold = [1, 0, 1, 0, 0]
    result = evaluate_checker_scores(gold, [0.5] * 5, 0.5, resamples=0)
    assert result.roc_auc == pytest.approx(roc_auc_score(gold, [0.5] * 5)) == 0.5
    # p >= threshold is supported: everything predicted supported, TPR 1, TNR 0.
    assert result.balanced_accuracy == pytest.approx(balanced_accuracy_score(gold, [1] * 5)) == 0.5
    assert result.balanced_accuracy_interval is None and result.roc_auc_interval is None


def test_one_class_gold_has_no_auc_and_balanced_accuracy_is_that_class_recall():
    import warnings

    gold = [1, 1, 1, 1]
    probabilities = [0.9, 0.2, 0.7, 0.6]
    result = evaluate_checker_scores(gold, probabilities, 0.5, resamples=100)
    assert result.roc_auc is None and result.roc_auc_interval is None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sklearn warns that y_pred has a class y_true lacks
        expected = balanced_accuracy_score(gold, [1, 0, 1, 1])
    assert result.balanced_accuracy == pytest.approx(expected) == 0.75
    assert result.f1 == pytest.approx(f1_score(gold, [1, 0, 1, 1]))
    # Only negatives, none predicted supported: F1 of the supported class is 0 (no TP, FP or FN).
    negatives = evaluate_checker_scores([0, 0], [0.1, 0.2], 0.5, resamples=10)
    assert negatives.f1 == 0.0 and negatives.balanced_accuracy == 1.0 and negatives.roc_auc is None


def test_claim_level_takes_the_max_over_each_claims_rows():
    # Claim a: rows (0, 0.2), (1, 0.7) -> gold 1, p 0.7; claim b: (0, 0.9), (0, 0.1) -> gold 0, p 0.9;
    # claim c: (1, 0.3) -> gold 1, p 0.3.
    gold = [0, 0, 1, 0, 1]
    probabilities = [0.2, 0.9, 0.7, 0.1, 0.3]
    groups = ["a", "b", "a", "b", "c"]
    ids, claim_gold, claim_p = aggregate_claims(gold, probabilities, groups)
    assert ids == ["a", "b", "c"]
    assert claim_gold.tolist() == [1, 0, 1] and claim_p.tolist() == [0.7, 0.9, 0.3]
    result = evaluate_checker_scores(gold, probabilities, 0.5, groups=groups, resamples=100)
    assert result.level == "claim" and result.n == 3 and result.positives == 2
    accuracy, bacc, f1 = _sklearn([1, 0, 1], [0.7, 0.9, 0.3], 0.5)
    assert (result.accuracy, result.balanced_accuracy, result.f1) == pytest.approx((accuracy, bacc, f1))
    # Positives 0.7, 0.3 against the negative 0.9: both lower, AUC 0.
    assert result.roc_auc == pytest.approx(roc_auc_score([1, 0, 1], [0.7, 0.9, 0.3])) == 0.0


def test_bootstrap_is_seeded_and_equals_a_loop_over_the_same_index_matrix():
    rng = np.random.default_rng(5)
    gold = rng.integers(0, 2, 60)
    probabilities = np.round(rng.random(60), 1)
    first = evaluate_checker_scores(gold, probabilities, 0.4, resamples=300, seed=3)
    assert first == evaluate_checker_scores(gold, probabilities, 0.4, resamples=300, seed=3)
    index = np.random.default_rng(3).integers(0, 60, size=(300, 60))
    baccs, aucs = [], []
    for row in index:
        y, p = gold[row], probabilities[row]
        baccs.append(balanced_accuracy_score(y, (p >= 0.4).astype(int)))
        if 0 < y.sum() < len(y):
            aucs.append(roc_auc_score(y, p))
    assert first.balanced_accuracy_interval == pytest.approx(tuple(np.percentile(baccs, [2.5, 97.5])))
    assert first.roc_auc_interval == pytest.approx(tuple(np.percentile(aucs, [2.5, 97.5])))


def test_roc_auc_function_and_bad_input():
    assert roc_auc([0, 1, 1, 0], [0.1, 0.8, 0.4, 0.4]) == pytest.approx(roc_auc_score([0, 1, 1, 0],
                                                                                     [0.1, 0.8, 0.4, 0.4]))
    with pytest.raises(ValueError, match="0 or 1"):
        evaluate_checker_scores([2, 0], [0.1, 0.2], 0.5)
    with pytest.raises(ValueError, match="2 gold labels but 1"):
        evaluate_checker_scores([1, 0], [0.1], 0.5)
    with pytest.raises(ValueError, match="finite"):
        evaluate_checker_scores([1, 0], [0.1, float("nan")], 0.5)


def test_as_dict_round_trips_and_is_json_ready():
    import json

    result = evaluate_checker_scores([1, 0, 1, 0], [0.9, 0.1, 0.4, 0.6], 0.5, resamples=50)
    record = json.loads(json.dumps(result.as_dict()))
    assert CheckerEvaluation.from_dict(record) == result
    assert record["balanced_accuracy_interval"] == list(result.balanced_accuracy_interval)


def test_best_threshold_maximises_balanced_accuracy_at_a_midpoint():
    # Scores 0.1 0.3 0.35 0.6 0.8 with gold 0 0 1 0 1: the cut between 0.3 and 0.35 gives TPR 1, TNR 2/3 (BAcc 5/6),
    # better than any other cut (between 0.6 and 0.8: TPR 1/2, TNR 1, BAcc 3/4).
    gold = [0, 0, 1, 0, 1]
    probabilities = [0.1, 0.3, 0.35, 0.6, 0.8]
    threshold = best_threshold(gold, probabilities)
    assert threshold == pytest.approx(0.325)
    distinct = sorted(set(probabilities))
    cuts = [(a + b) / 2 for a, b in itertools.pairwise(distinct)]
    scores = [balanced_accuracy_score(gold, [int(p >= t) for p in probabilities]) for t in cuts]
    assert max(scores) == pytest.approx(5 / 6)
    assert cuts[int(np.argmax(scores))] == pytest.approx(threshold)
    assert best_threshold([1, 0], [0.4, 0.4]) == 0.4


@pytest.mark.parametrize("seed", [0, 1])
def test_best_threshold_matches_a_brute_force_search(seed):
    rng = np.random.default_rng(seed)
    gold = rng.integers(0, 2, 80)
    probabilities = np.round(rng.random(80) * 0.6 + 0.4 * gold, 2)
    threshold = best_threshold(gold, probabilities)
    distinct = np.unique(probabilities)
    cuts = (distinct[:-1] + distinct[1:]) / 2
    scores = [balanced_accuracy_score(gold, (probabilities >= t).astype(int)) for t in cuts]
    assert balanced_accuracy_score(gold, (probabilities >= threshold).astype(int)) == pytest.approx(max(scores))
