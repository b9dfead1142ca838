"""Average precision at k (``AP@k``; its mean over queries is MAP, so ``MAP@k`` is an alias).

AP@k = (1/|relevant judged|) * sum_{i=1..k} rel_i * P@i (Buckley & Voorhees; trec_eval's
``map_cut_k``, and ``map`` without a cutoff). The denominator counts every relevant judged passage,
retrieved or not, and the query scores 0 when it has none. Binary labels only. Parameters ``rel`` and
``judged_only`` (``AP(judged_only=True)`` is trec_eval ``-J``'s map, the "condensed list" AP of Sakai 2007).
"""

from __future__ import annotations

import numpy as np

from rageval.measures.base import MeasureDefinition, safe_divide
from rageval.measures.params import LEVEL_PARAMS
from rageval.measures.ranked_labels import RankedLabels
from rageval.measures.registry import register_measure


def average_precision(labels: RankedLabels, cutoff: int | None) -> np.ndarray:
    # Over the relevant ranks only (RankedLabels.relevant_ranks): the terms of the other ranks are all 0.
    ranks, relevance = labels.relevant_ranks
    if cutoff is not None:
        relevance = np.where(ranks < cutoff, relevance, 0.0)
    precision_at_rank = np.cumsum(relevance, axis=1) / (ranks + 1)
    return safe_divide((relevance * precision_at_rank).sum(axis=1), labels.n_relevant)


AP = register_measure(
    MeasureDefinition(
        name="AP",
        kernel=average_precision,
        summary="Average precision (its mean over queries is MAP; binary labels).",
        accepts_graded=False,
        aliases=("MAP",),
        params=LEVEL_PARAMS,
    )
)
