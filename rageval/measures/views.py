"""The label parameters of a measure applied to its labels, before its kernel runs, so every kernel gets them free.

In this order (each one a new :class:`~rageval.measures.ranked_labels.RankedLabels`; the input is never changed):

1. ``judged_only=True`` (trec_eval ``-J``): every ranking keeps only its judged passages (label >= 0), in order;
   the ranks close up, so ``P(judged_only=True)@5`` reads the first five *judged* passages. Qrels are unchanged.
2. ``rel=L`` (trec_eval ``-l L``): ``relevance`` becomes 1 where the label is >= L and 0 elsewhere, and
   ``n_relevant`` counts the judged labels >= L; the labels are then binary for every kernel.
3. ``gains={label: gain}`` and ``dcg='exp-log2'``: ``gains`` and ``ideal_gains`` become g(label), with g the
   mapping (a label not listed is its own gain) followed by ``2^g - 1`` for ``exp-log2`` (Burges et al., ICML
   2005). Unjudged passages and negative labels keep gain 0 (trec_eval's ``ndcg`` with ``rel_level=gain`` pairs).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Protocol

import numpy as np

from rageval.measures.matrices import ideal_gains
from rageval.measures.ranked_labels import RankedLabels


class Parameterised(Protocol):
    """What a view reads of a measure (:class:`rageval.measures.base.Measure`, which applies the views): the value
    of each of its parameters."""

    def param(self, name: str) -> Any: ...


def view_for(labels: RankedLabels, measure: Parameterised, cache: dict | None = None) -> RankedLabels:
    """``labels`` as ``measure``'s label parameters see them; ``cache`` keeps each distinct view once."""
    judged_only = bool(measure.param("judged_only"))
    level = measure.param("rel")
    gains = measure.param("gains") or ()
    exponential = measure.param("dcg") == "exp-log2"
    key = (judged_only, level, gains, exponential)
    if key == (False, None, (), False):
        return labels
    if cache is not None and key in cache:
        return cache[key]
    view = labels
    if judged_only:
        view = _step(cache, (True, None, (), False), lambda: judged_ranks_only(labels))
    if level is not None:
        base = view
        view = _step(cache, (judged_only, level, (), False), lambda: at_relevance_level(base, level))
    if gains or exponential:
        view = with_gains(view, gains, exponential)
    if cache is not None:
        cache[key] = view
    return view


def _step(cache: dict | None, key: tuple, build) -> RankedLabels:
    if cache is None:
        return build()
    if key not in cache:
        cache[key] = build()
    return cache[key]


def judged_ranks_only(labels: RankedLabels) -> RankedLabels:
    """Each ranking without its unjudged passages (no judgment, or a negative label), ranks closed up."""
    judgments = labels.judgments("judged_only")
    if len(labels.lengths) and labels.depth < labels.lengths.max():
        raise ValueError("judged_only needs the whole ranking: build the labels without a depth")
    keep = judgments >= 0  # NaN compares False: passages without a judgment go too
    counts = keep.sum(axis=1).astype(np.int64)
    width = int(counts.max(initial=0))
    order = np.argsort(~keep, axis=1, kind="stable")[:, :width]  # kept ranks first, in rank order
    inside = np.arange(width) < counts[:, None]

    def gather(matrix: np.ndarray, fill: float) -> np.ndarray:
        out = np.where(inside, np.take_along_axis(matrix, order, axis=1), fill)
        out.flags.writeable = False
        return out

    gains = gather(labels.gains, 0.0)
    relevance = gains if labels.relevance is labels.gains else gather(labels.relevance, 0.0)
    return replace(labels, gains=gains, relevance=relevance, ranked_judgments=gather(judgments, np.nan),
                   lengths=counts)


def at_relevance_level(labels: RankedLabels, level: float) -> RankedLabels:
    """Binary relevance: a label counts as relevant when it is >= ``level`` (trec_eval's relevance_level)."""
    relevance = (labels.gains >= level).astype(np.float64)  # gains are the labels clipped at 0 here, level > 0
    relevance.flags.writeable = False
    relevant = (labels.judgment_labels >= level).astype(np.float64)
    n_relevant = np.bincount(labels.judgment_rows, weights=relevant, minlength=len(labels.query_ids))
    return replace(labels, relevance=relevance, n_relevant=n_relevant,
                   has_fractional=np.zeros(len(labels.query_ids), dtype=bool), level=level)


def gain_of(values: np.ndarray, gains: tuple[tuple[float, float], ...], exponential: bool) -> np.ndarray:
    """g(label) for judged labels (>= 0), 0 for negative labels and for NaN (no judgment)."""
    judged = values >= 0
    mapped = np.where(judged, values, 0.0)
    for label, gain in gains:
        mapped[judged & (values == label)] = gain
    if exponential:
        mapped = np.exp2(mapped) - 1.0
    return np.where(judged, mapped, 0.0)


def with_gains(labels: RankedLabels, gains: tuple[tuple[float, float], ...], exponential: bool) -> RankedLabels:
    """``gains`` and ``ideal_gains`` under a gain mapping and/or exponential gains."""
    # Without the judgments only positive labels are placed; that suffices unless label 0 has a gain, in which
    # case the measure asked for the judgments (Measure.needs_judgments).
    ranked = labels.ranked_judgments if labels.ranked_judgments is not None else labels.gains
    ranked_gains = gain_of(ranked, gains, exponential)
    ranked_gains.flags.writeable = False
    judged = labels.judgment_labels >= 0
    ideal = ideal_gains(labels.judgment_rows[judged], gain_of(labels.judgment_labels[judged], gains, exponential),
                         len(labels.query_ids), None)
    return replace(labels, gains=ranked_gains, ideal_gains=ideal)
