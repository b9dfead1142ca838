"""Rank-biased precision (``RBP``; Moffat & Zobel, "Rank-biased precision for measurement of retrieval
effectiveness", TOIS 2008).

RBP(p) = (1 - p) * sum_{i=1..k} r_i * p^(i-1): the expected rate of relevance met by a user who goes on from
each rank to the next with probability p (the persistence, default 0.8). r_i is the relevance of rank i, so
``clip(label, 0, 1)`` by default (fractional labels count fractionally, graded RBP) and 0/1 with ``rel=L``
(ir_measures' ``RBP(rel=1)``, ranx's ``rbp.p`` on binary labels). Without a cutoff the whole ranking. Accepts
graded labels; parameters ``p``, ``rel`` and ``judged_only``.
"""

from __future__ import annotations

import numpy as np

from rageval.measures.base import MeasureDefinition, top
from rageval.measures.params import LEVEL_PARAMS, PERSISTENCE
from rageval.measures.ranked_labels import RankedLabels
from rageval.measures.registry import register_measure


def rank_biased_precision(labels: RankedLabels, cutoff: int | None, p: float = 0.8) -> np.ndarray:
    relevance = top(labels.relevance, cutoff)
    weights = (1.0 - p) * p ** np.arange(relevance.shape[1], dtype=np.float64)
    return relevance @ weights


RBP = register_measure(
    MeasureDefinition(
        name="RBP",
        kernel=rank_biased_precision,
        summary="Rank-biased precision: relevance met by a user with persistence p (default 0.8).",
        accepts_graded=True,
        params=(PERSISTENCE, *LEVEL_PARAMS),
    )
)
