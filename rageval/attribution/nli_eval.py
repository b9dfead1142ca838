"""How good is an entailment checker? Binary metrics of its scores against gold labels, with bootstrap intervals.

A checker gives every (premise, hypothesis) pair a probability ``p`` that the premise supports the hypothesis; at a
threshold ``t`` it decides *supported* when ``p >= t`` (as :func:`rageval.attribution.nli.entailment_decisions`).
Against gold labels ``y ∈ {0, 1}`` (1 = supported) with TP, FP, TN, FN counted at ``t``:

* accuracy = (TP + TN) / n
* balanced accuracy = (TPR + TNR) / 2, TPR = TP / (TP + FN), TNR = TN / (TN + FP) (the leaderboard measure of
  LLM-AggreFact, Tang et al. 2024); when the gold labels hold one class only, the recall of that class (as
  ``sklearn.metrics.balanced_accuracy_score``)
* F1 of the supported class = 2 TP / (2 TP + FP + FN) (0 when there is no positive, gold or predicted)
* ROC-AUC = P(p of a random positive > p of a random negative) + ½ P(tie): the Mann-Whitney statistic
  U / (n₊ n₋) with average ranks for ties; undefined (``None``) when one class is missing.

**Claim level.** Given ``groups`` (a claim id per row), the rows are first aggregated to one unit per claim:
its probability is the maximum over its rows, its gold label the maximum of its rows' labels (a claim is supported
when any evidence chunk supports it: the protocol of the held-out long-evidence task, where a claim is judged
against each of its chunks).

**Intervals.** 95% percentile bootstrap over the units (rows at pair level, claims at claim level): ``resamples``
draws of n units with replacement, all drawn at once as one seeded index matrix, every statistic computed for all
resamples from per-resample counts without a Python loop. A resample in which ROC-AUC is undefined (one class) is
left out of its percentiles.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

Interval = tuple[float, float]
Labels = Sequence[int] | np.ndarray  # gold labels, 1 = supported
Scores = Sequence[float] | np.ndarray  # p(supported)
DEFAULT_RESAMPLES = 1000
CONFIDENCE = 0.95
#: Cells (resamples x units) of the bootstrap index matrix handled at once: bounds its memory.
_CHUNK_CELLS = 4_000_000


@dataclass(frozen=True)
class CheckerEvaluation:
    """A checker's binary metrics on ``n`` units (pairs or claims) at ``threshold`` (module docstring)."""

    level: str  # "pair" or "claim"
    n: int
    positives: int
    threshold: float
    accuracy: float
    balanced_accuracy: float
    f1: float
    roc_auc: float | None
    balanced_accuracy_interval: Interval | None
    roc_auc_interval: Interval | None
    resamples: int

    def as_dict(self) -> dict:
        """JSON-ready: intervals as ``[low, high]`` lists, undefined values as ``None``."""
        return {"level": self.level, "n": self.n, "positives": self.positives, "threshold": self.threshold,
                "accuracy": self.accuracy, "balanced_accuracy": self.balanced_accuracy, "f1": self.f1,
                "roc_auc": self.roc_auc,
                "balanced_accuracy_interval": _interval_list(self.balanced_accuracy_interval),
                "roc_auc_interval": _interval_list(self.roc_auc_interval), "resamples": self.resamples}

    @classmethod
    def from_dict(cls, record: dict) -> CheckerEvaluation:
        """The inverse of :meth:`as_dict` (``KeyError``/``TypeError``/``ValueError`` on a malformed record)."""
        def interval(value) -> Interval | None:
            if value is None:
                return None
            low, high = value
            return float(low), float(high)

        auc = record["roc_auc"]
        return cls(level=str(record["level"]), n=int(record["n"]), positives=int(record["positives"]),
                   threshold=float(record["threshold"]), accuracy=float(record["accuracy"]),
                   balanced_accuracy=float(record["balanced_accuracy"]), f1=float(record["f1"]),
                   roc_auc=None if auc is None else float(auc),
                   balanced_accuracy_interval=interval(record["balanced_accuracy_interval"]),
                   roc_auc_interval=interval(record["roc_auc_interval"]), resamples=int(record.get("resamples", 0)))


def _interval_list(interval: Interval | None) -> list[float] | None:
    return None if interval is None else [interval[0], interval[1]]


def _checked(gold: Labels, probabilities: Scores) -> tuple[np.ndarray, np.ndarray]:
    y = np.asarray(gold, dtype=np.int64).reshape(-1)
    p = np.asarray(probabilities, dtype=np.float64).reshape(-1)
    if y.shape != p.shape:
        raise ValueError(f"{len(y)} gold labels but {len(p)} probabilities")
    if not np.isin(y, (0, 1)).all():
        raise ValueError("gold labels must be 0 or 1")
    if not np.isfinite(p).all():
        raise ValueError("probabilities must be finite")
    return y, p


def aggregate_claims(gold: Labels, probabilities: Scores,
                     groups: Sequence[str]) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(claim ids in first-seen order, gold = max of each claim's row labels, p = max of its row probabilities)."""
    y, p = _checked(gold, probabilities)
    if len(groups) != len(y):
        raise ValueError(f"{len(groups)} claim ids but {len(y)} rows")
    ids, codes = np.unique(np.asarray([str(g) for g in groups], dtype=object), return_inverse=True)
    first_seen = np.full(len(ids), len(y), dtype=np.int64)
    np.minimum.at(first_seen, codes, np.arange(len(y)))
    order = np.argsort(first_seen, kind="stable")
    claim_gold = np.zeros(len(ids), dtype=np.int64)
    claim_p = np.full(len(ids), -np.inf)
    np.maximum.at(claim_gold, codes, y)
    np.maximum.at(claim_p, codes, p)
    return [str(ids[i]) for i in order], claim_gold[order], claim_p[order]


def _score_groups(p: np.ndarray) -> tuple[np.ndarray, int]:
    """Each unit's index among the distinct scores (ascending), and how many distinct scores there are."""
    distinct, inverse = np.unique(p, return_inverse=True)
    return inverse.reshape(-1), len(distinct)


def _auc_from_counts(positive: np.ndarray, negative: np.ndarray) -> np.ndarray:
    """ROC-AUC of each row of per-distinct-score counts (ascending scores): Σ_g pos_g (neg_<g + ½ neg_g) / (n₊ n₋).

    NaN where a row has no positive or no negative.
    """
    below = np.cumsum(negative, axis=-1) - negative
    u = (positive * (below + 0.5 * negative)).sum(axis=-1)
    pairs = positive.sum(axis=-1) * negative.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(pairs > 0, u / np.where(pairs > 0, pairs, 1), np.nan)


def _balanced_accuracy_from_counts(tp, fn, tn, fp) -> np.ndarray:
    """Mean of TPR and TNR over the classes present (sklearn's rule when gold holds one class)."""
    tp, fn, tn, fp = (np.asarray(v, dtype=np.float64) for v in (tp, fn, tn, fp))
    has_pos, has_neg = (tp + fn) > 0, (tn + fp) > 0
    tpr = np.divide(tp, tp + fn, out=np.zeros_like(tp), where=has_pos)
    tnr = np.divide(tn, tn + fp, out=np.zeros_like(tn), where=has_neg)
    present = has_pos.astype(np.float64) + has_neg.astype(np.float64)
    return np.divide(tpr + tnr, present, out=np.full_like(tpr, np.nan), where=present > 0)


def roc_auc(gold: Labels, probabilities: Scores) -> float | None:
    """Rank-based ROC-AUC (ties count ½); ``None`` when one class is missing."""
    return _roc_auc(*_checked(gold, probabilities))


def _roc_auc(y: np.ndarray, p: np.ndarray) -> float | None:
    groups, k = _score_groups(p)
    value = _auc_from_counts(np.bincount(groups[y == 1], minlength=k), np.bincount(groups[y == 0], minlength=k))
    return None if np.isnan(value) else float(value)


def _percentile_interval(values: np.ndarray) -> Interval | None:
    defined = values[~np.isnan(values)]
    if not len(defined):
        return None
    tail = 100.0 * (1.0 - CONFIDENCE) / 2.0
    low, high = np.percentile(defined, [tail, 100.0 - tail])
    return float(low), float(high)


def _bootstrap(y: np.ndarray, p: np.ndarray, threshold: float, resamples: int,
               seed: int) -> tuple[Interval | None, Interval | None]:
    """Percentile intervals of balanced accuracy and ROC-AUC over ``resamples`` resamples of the units."""
    n = len(y)
    if resamples <= 0 or n == 0:
        return None, None
    groups, k = _score_groups(p)
    predicted = (p >= threshold).astype(np.int64)
    # One code per unit: (score group, gold) for the AUC, and (gold, predicted) for the confusion counts.
    auc_code = groups * 2 + y
    cell = y * 2 + predicted  # 0 = TN, 1 = FP, 2 = FN, 3 = TP
    rng = np.random.default_rng(seed)
    index = rng.integers(0, n, size=(resamples, n))  # every resample, one matrix
    baccs, aucs = [], []
    rows_per_chunk = max(1, _CHUNK_CELLS // max(n, 2 * k))
    for start in range(0, resamples, rows_per_chunk):
        chunk = index[start:start + rows_per_chunk]
        rows = len(chunk)
        offsets = np.arange(rows)[:, None]
        cells = np.bincount((cell[chunk] + 4 * offsets).ravel(), minlength=4 * rows).reshape(rows, 4)
        baccs.append(_balanced_accuracy_from_counts(cells[:, 3], cells[:, 2], cells[:, 0], cells[:, 1]))
        counts = np.bincount((auc_code[chunk] + 2 * k * offsets).ravel(), minlength=2 * k * rows)
        counts = counts.reshape(rows, k, 2)
        aucs.append(_auc_from_counts(counts[:, :, 1], counts[:, :, 0]))
    return _percentile_interval(np.concatenate(baccs)), _percentile_interval(np.concatenate(aucs))


def evaluate_checker_scores(gold: Labels, probabilities: Scores, threshold: float,
                            groups: Sequence[str] | None = None, resamples: int = DEFAULT_RESAMPLES,
                            seed: int = 0) -> CheckerEvaluation:
    """Accuracy, balanced accuracy, F1 (supported class) and ROC-AUC of ``probabilities`` against ``gold`` (1 =
    supported) at ``threshold`` (supported when p >= threshold), with 95% percentile bootstrap intervals of balanced
    accuracy and ROC-AUC (module docstring for the formulas).

    With ``groups`` (a claim id per row) the units are claims: p = max over the claim's rows, gold = max of their
    labels, and the bootstrap resamples claims.
    """
    if groups is None:
        y, p = _checked(gold, probabilities)
        level = "pair"
    else:
        _, y, p = aggregate_claims(gold, probabilities, groups)
        level = "claim"
    if not len(y):
        raise ValueError("nothing to evaluate: no rows")
    predicted = p >= threshold
    tp = int(np.sum(predicted & (y == 1)))
    fp = int(np.sum(predicted & (y == 0)))
    fn = int(np.sum(~predicted & (y == 1)))
    tn = int(np.sum(~predicted & (y == 0)))
    f1 = 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0
    bacc_interval, auc_interval = _bootstrap(y, p, threshold, resamples, seed)
    return CheckerEvaluation(
        level=level, n=len(y), positives=int(y.sum()), threshold=float(threshold),
        accuracy=(tp + tn) / len(y), balanced_accuracy=float(_balanced_accuracy_from_counts(tp, fn, tn, fp)),
        f1=f1, roc_auc=_roc_auc(y, p), balanced_accuracy_interval=bacc_interval, roc_auc_interval=auc_interval,
        resamples=int(resamples))


def best_threshold(gold: Labels, probabilities: Scores) -> float:
    """The threshold maximising balanced accuracy of ``p >= t`` (to calibrate a checker on dev data).

    The candidates are the midpoints between neighbouring distinct scores (every different decision the scores
    allow, except "all supported" / "none supported", which score 0.5 and are never better than a cut); the lowest
    maximising candidate wins. With a single distinct score that score is returned (everything supported).
    """
    y, p = _checked(gold, probabilities)
    if not len(y):
        raise ValueError("no scores to calibrate on")
    distinct = np.unique(p)
    if len(distinct) == 1:
        return float(distinct[0])
    candidates = (distinct[:-1] + distinct[1:]) / 2.0
    groups, k = _score_groups(p)
    positives = np.bincount(groups[y == 1], minlength=k)
    negatives = np.bincount(groups[y == 0], minlength=k)
    # Cut after distinct score i (predict supported for scores above it): FN = positives at or below i.
    fn = np.cumsum(positives)[:-1]
    tn = np.cumsum(negatives)[:-1]
    tp = positives.sum() - fn
    fp = negatives.sum() - tn
    scores = _balanced_accuracy_from_counts(tp, fn, tn, fp)
    return float(candidates[int(np.argmax(scores))])
