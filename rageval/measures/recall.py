"""Recall at k (``R@k``): the fraction of the query's relevant passages found in the top k.

R@k = |relevant in top k| / |relevant judged|, trec_eval's ``recall_k`` (0 when the query has no
relevant passage). Binary (or integer-graded, label >= 1 is relevant) labels only: with a fractional
label the number of relevant passages is undefined, so it raises ``ValueError`` (unless ``rel=`` sets a level).
Parameters ``rel`` and ``judged_only``.
"""

from __future__ import annotations

import numpy as np

from rageval.measures.base import MeasureDefinition, safe_divide, top
from rageval.measures.params import LEVEL_PARAMS
from rageval.measures.ranked_labels import RankedLabels
from rageval.measures.registry import register_measure


def recall(labels: RankedLabels, cutoff: int | None) -> np.ndarray:
    return safe_divide(top(labels.relevance, cutoff).sum(axis=1), labels.n_relevant)


R = register_measure(
    MeasureDefinition(
        name="R",
        kernel=recall,
        summary="Recall: share of the relevant passages retrieved in the top k (binary labels).",
        accepts_graded=False,
        aliases=("Recall",),
        params=LEVEL_PARAMS,
    )
)
