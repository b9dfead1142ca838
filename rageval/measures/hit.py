"""Hit rate at k (``Hit@k``): whether a relevant passage is in the top k.

Hit@k = max_{i=1..k} rel_i, with rel_i = clip(label_i, 0, 1): 1 when a relevant passage is in the
top k for binary labels (trec_eval's ``success_k``), the maximum label in the top k for fractional
labels (eRAG, Salemi & Zamani, SIGIR 2024, Table 1 footnote b). Its mean over queries is the hit
rate. An empty ranking scores 0. ``Success@k`` (ir_measures' name) is the same measure. Parameters ``rel`` and
``judged_only``: ``Hit(rel=2)@5`` is trec_eval's ``success_5`` with ``-l 2``.
"""

from __future__ import annotations

import numpy as np

from rageval.measures.base import MeasureDefinition, top
from rageval.measures.params import LEVEL_PARAMS
from rageval.measures.ranked_labels import RankedLabels
from rageval.measures.registry import register_measure


def hit(labels: RankedLabels, cutoff: int | None) -> np.ndarray:
    relevance = top(labels.relevance, cutoff)
    if relevance.shape[1] == 0:
        return np.zeros(relevance.shape[0])
    return relevance.max(axis=1)


Hit = register_measure(
    MeasureDefinition(
        name="Hit",
        kernel=hit,
        summary="Hit rate: 1 if a relevant passage is in the top k (graded labels: max label).",
        accepts_graded=True,
        aliases=("HitRate", "Success"),
        params=LEVEL_PARAMS,
    )
)
