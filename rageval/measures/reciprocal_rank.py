"""Reciprocal rank at k (``RR@k``; its mean over queries is MRR, so ``MRR@k`` is an alias).

RR@k = 1 / (rank of the first relevant passage), 0 when none is in the top k; trec_eval's
``recip_rank`` on the ranking cut at k (``RR`` without a cutoff is ``recip_rank`` itself).
Binary labels only. Parameters ``rel`` and ``judged_only``: ``RR(rel=2)``.
"""

from __future__ import annotations

import numpy as np

from rageval.measures.base import MeasureDefinition, top
from rageval.measures.params import LEVEL_PARAMS
from rageval.measures.ranked_labels import RankedLabels
from rageval.measures.registry import register_measure


def reciprocal_rank(labels: RankedLabels, cutoff: int | None) -> np.ndarray:
    is_relevant = top(labels.relevance, cutoff) > 0
    if is_relevant.shape[1] == 0:  # no query retrieved anything (argmax of an empty row would raise)
        return np.zeros(is_relevant.shape[0])
    first = np.argmax(is_relevant, axis=1)  # 0 also when nothing is relevant: masked below
    return np.where(is_relevant.any(axis=1), 1.0 / (first + 1.0), 0.0)


RR = register_measure(
    MeasureDefinition(
        name="RR",
        kernel=reciprocal_rank,
        summary="Reciprocal rank of the first relevant passage (its mean is MRR; binary labels).",
        accepts_graded=False,
        aliases=("MRR",),
        params=LEVEL_PARAMS,
    )
)
