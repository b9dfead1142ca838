"""Precision at k (``P@k``): the mean relevance of the top k ranks.

P@k = (1/k) * sum_{i=1..k} rel_i, with rel_i = clip(label_i, 0, 1). The denominator stays k when the
ranking is shorter than k (trec_eval's ``P_k``). With fractional labels this is the mean label in
the top k, as eRAG defines it (Salemi & Zamani, SIGIR 2024, Table 1 footnote a). Without a cutoff
(``P``) the denominator is the ranking length (trec_eval's ``set_P``); an empty ranking scores 0.
Parameters ``rel`` and ``judged_only`` (trec_eval ``-l``, ``-J``): ``P(rel=2)@5``.
"""

from __future__ import annotations

import numpy as np

from rageval.measures.base import MeasureDefinition, safe_divide, top
from rageval.measures.params import LEVEL_PARAMS
from rageval.measures.ranked_labels import RankedLabels
from rageval.measures.registry import register_measure


def precision(labels: RankedLabels, cutoff: int | None) -> np.ndarray:
    retrieved_relevance = top(labels.relevance, cutoff).sum(axis=1)
    denominator = labels.lengths if cutoff is None else np.full(len(labels.lengths), cutoff)
    return safe_divide(retrieved_relevance, denominator)


P = register_measure(
    MeasureDefinition(
        name="P",
        kernel=precision,
        summary="Precision: mean relevance of the top k (graded labels: mean label).",
        accepts_graded=True,
        params=LEVEL_PARAMS,
    )
)
