"""How an automatic label method compares with people: its confusion matrix, precision and recall of "relevant",
the base rates on both sides, Cohen's kappa, and the prevalence-corrected share (Rogan and Gladen 1978); and the
agreement at three levels: per passage (kappa), per query (Kendall's tau-b of the per-query share of relevant
passages) and per run (Kendall's tau-b between the orderings of runs).

People are the reference: a *true positive* is a passage both call relevant, a *false positive* one the method
calls relevant and people not. With a stratified sample each labelled item stands for ``weight`` items
(:class:`rageval.stats.design.Stratum`), and the rates (precision, recall, specificity, base rates, kappa) are
weighted, so that they estimate the population's; the confusion counts stay the counts of labelled items, and
``human_share_labelled`` is the people's raw share among them (``(tp + fn) / n``, what the counts give), beside the
weighted ``human_base_rate``.

Rogan–Gladen: a method with sensitivity ``se`` (its recall) and specificity ``sp`` that calls a share ``p_obs``
of all items relevant implies a true share::

    p_true = (p_obs + sp - 1) / (se + sp - 1)        clipped to [0, 1]

undefined when ``se + sp = 1`` (the method's label carries no information about the person's).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from rageval.stats.correlation import kendall_tau_b


@dataclass(frozen=True)
class Calibration:
    """One method against people over ``n`` labelled items (``tp`` both relevant, ``fp`` method only, ``fn``
    person only, ``tn`` neither), with the (weighted) rates; ``method_share_all`` is the method's share of relevant
    over every item of the population, ``rogan_gladen`` the true share it implies. NaN where a rate is 0/0."""

    n: int
    tp: int
    fp: int
    fn: int
    tn: int
    precision: float
    recall: float
    specificity: float
    accuracy: float
    human_base_rate: float
    method_base_rate: float
    kappa: float
    method_share_all: float
    rogan_gladen: float
    human_share_labelled: float = math.nan  # the people's share of relevant among the labelled items, unweighted

    def as_dict(self) -> dict:
        return {key: (None if isinstance(value, float) and not math.isfinite(value) else value)
                for key, value in asdict(self).items()}


def _ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator > 0 else math.nan


def weighted_kappa_binary(human: np.ndarray, method: np.ndarray, weights: np.ndarray) -> float:
    """Cohen's kappa of two 0/1 raters with item weights (sklearn's ``cohen_kappa_score(sample_weight=...)``
    reading: the confusion matrix of weight sums): ``(p_o - p_e) / (1 - p_e)``; NaN when ``p_e = 1``."""
    total = weights.sum()
    if total <= 0:
        return math.nan
    observed = weights[human == method].sum() / total
    p_human, p_method = weights[human == 1].sum() / total, weights[method == 1].sum() / total
    expected = p_human * p_method + (1 - p_human) * (1 - p_method)
    return (observed - expected) / (1 - expected) if expected < 1 else math.nan


def rogan_gladen(observed_share: float, sensitivity: float, specificity: float) -> float:
    """The true share implied by an imperfect test (module docstring), clipped to [0, 1]; NaN when undefined."""
    denominator = sensitivity + specificity - 1
    if not all(math.isfinite(v) for v in (observed_share, sensitivity, specificity)) or denominator == 0:
        return math.nan
    return float(min(1.0, max(0.0, (observed_share + specificity - 1) / denominator)))


def calibrate(human: Sequence[int], method: Sequence[int], weights: Sequence[float] | None = None,
              method_share_all: float = math.nan) -> Calibration:
    """:class:`Calibration` of a method's 0/1 labels ``method`` against the people's ``human`` on the same items;
    ``weights`` (a stratified sample's) weight the rates; ``method_share_all`` (the method's share over every item)
    feeds Rogan–Gladen (NaN: not computed)."""
    y = np.asarray(human, dtype=int).ravel()
    f = np.asarray(method, dtype=int).ravel()
    if len(y) != len(f):
        raise ValueError(f"{len(y)} human labels against {len(f)} method labels")
    if not (np.isin(y, (0, 1)).all() and np.isin(f, (0, 1)).all()):
        raise ValueError("calibration needs 0/1 labels on both sides")
    w = np.ones(len(y)) if weights is None else np.asarray(weights, dtype=float).ravel()
    tp, fp = int(((y == 1) & (f == 1)).sum()), int(((y == 0) & (f == 1)).sum())
    fn, tn = int(((y == 1) & (f == 0)).sum()), int(((y == 0) & (f == 0)).sum())
    wtp, wfp = w[(y == 1) & (f == 1)].sum(), w[(y == 0) & (f == 1)].sum()
    wfn, wtn = w[(y == 1) & (f == 0)].sum(), w[(y == 0) & (f == 0)].sum()
    total = wtp + wfp + wfn + wtn
    recall = _ratio(wtp, wtp + wfn)
    specificity = _ratio(wtn, wtn + wfp)
    return Calibration(
        n=len(y), tp=tp, fp=fp, fn=fn, tn=tn, precision=_ratio(wtp, wtp + wfp), recall=recall,
        specificity=specificity, accuracy=_ratio(wtp + wtn, total), human_base_rate=_ratio(wtp + wfn, total),
        method_base_rate=_ratio(wtp + wfp, total), kappa=weighted_kappa_binary(y, f, w),
        human_share_labelled=_ratio(tp + fn, len(y)),
        method_share_all=float(method_share_all), rogan_gladen=rogan_gladen(method_share_all, recall, specificity))


@dataclass(frozen=True)
class RankAgreement:
    """Kendall's tau-b between the method's and the people's values over ``n`` units (queries or runs); NaN
    with ``reason`` when fewer than 2 units or one side is constant."""

    n: int
    tau: float
    reason: str = ""

    def as_dict(self) -> dict:
        return {"n": self.n, "tau": self.tau if math.isfinite(self.tau) else None,
                **({"reason": self.reason} if self.reason else {})}


def rank_agreement(human: Sequence[float], method: Sequence[float], unit: str = "queries") -> RankAgreement:
    """Kendall's tau-b (:func:`rageval.stats.correlation.kendall_tau_b`) of the two orderings of the units."""
    x = np.asarray(human, dtype=float)
    y = np.asarray(method, dtype=float)
    if len(x) < 2:
        return RankAgreement(len(x), math.nan, f"{len(x)} {unit}: an ordering needs at least 2")
    if np.all(x == x[0]) or np.all(y == y[0]):
        side = "the people's" if np.all(x == x[0]) else "the method's"
        return RankAgreement(len(x), math.nan, f"{side} values are the same for all {len(x)} {unit}")
    return RankAgreement(len(x), float(kendall_tau_b(x, y)))


def query_agreement(items: Mapping[str, Sequence[tuple[int, int]]], min_labelled: int = 2) -> RankAgreement:
    """Per-query agreement: for each query with at least ``min_labelled`` human-labelled top-k passages
    (``items[query] = [(human, method), ...]``), the share of relevant among them by people and by the method;
    Kendall's tau-b of those two shares over the queries."""
    human, method = [], []
    for pairs in items.values():
        if len(pairs) >= min_labelled:
            human.append(sum(h for h, _ in pairs) / len(pairs))
            method.append(sum(m for _, m in pairs) / len(pairs))
    return rank_agreement(human, method, "queries")
