"""The F measure: the weighted harmonic mean of precision and recall (van Rijsbergen, Information Retrieval,
1979; trec_eval's ``set_F``, ir_measures' ``SetF``, ranx's ``f1``).

SetF = (1 + beta) * SetP * SetR / (beta * SetP + SetR) over the whole retrieved list, beta being the relative
importance of recall (trec_eval's parameter, used as written, not squared; default 1). F1@k = 2 P@k R@k /
(P@k + R@k), the same with beta = 1 on the top k, P@k dividing by k as trec_eval's P_k does (ranx's ``f1@k``);
F1 without a cutoff is SetF. Both are 0 when precision and recall are. Binary labels only; parameters ``rel``
and ``judged_only``.
"""

from __future__ import annotations

import numpy as np

from rageval.measures.base import MeasureDefinition, safe_divide, top
from rageval.measures.params import BETA, LEVEL_PARAMS
from rageval.measures.ranked_labels import RankedLabels
from rageval.measures.registry import register_measure


def _harmonic(precision: np.ndarray, recall: np.ndarray, beta: float) -> np.ndarray:
    return safe_divide((1.0 + beta) * precision * recall, beta * precision + recall)


def set_f(labels: RankedLabels, cutoff: None, beta: float = 1.0) -> np.ndarray:
    found = labels.relevance.sum(axis=1)
    return _harmonic(safe_divide(found, labels.lengths), safe_divide(found, labels.n_relevant), beta)


def f1(labels: RankedLabels, cutoff: int | None) -> np.ndarray:
    if cutoff is None:
        return set_f(labels, None)
    found = top(labels.relevance, cutoff).sum(axis=1)
    return _harmonic(found / cutoff, safe_divide(found, labels.n_relevant), 1.0)


SetF = register_measure(
    MeasureDefinition(
        name="SetF",
        kernel=set_f,
        summary="Set F measure: (1 + beta) P R / (beta P + R) over the retrieved set (binary labels).",
        accepts_graded=False,
        accepts_cutoff=False,
        params=(*LEVEL_PARAMS, BETA),
    )
)

F1 = register_measure(
    MeasureDefinition(
        name="F1",
        kernel=f1,
        summary="F1 at k: harmonic mean of P@k and R@k (binary labels).",
        accepts_graded=False,
        params=LEVEL_PARAMS,
    )
)
