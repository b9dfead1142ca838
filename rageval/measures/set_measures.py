"""Set measures over the whole retrieved list, ranks ignored (trec_eval's ``set_P``, ``set_relative_P``,
``set_recall``, ``set_map``; ir_measures' ``SetP``, ``SetR``, ``SetAP``).

With ret the number of retrieved passages, R the number of relevant judged ones and relret the relevant retrieved:

- SetP = relret / ret (``P`` without a cutoff is the same number); ``SetP(relative=True)`` = relret / min(ret, R),
  the best SetP a list of that length could reach is 1;
- SetR = relret / R (``R`` without a cutoff);
- SetAP = SetP * SetR = relret^2 / (ret R), the AP of an unranked set.

Each is 0 when its denominator is. Parameters ``rel`` and ``judged_only``. SetP accepts graded labels as P does
(fractional labels count fractionally); SetR and SetAP take binary labels only.
"""

from __future__ import annotations

import numpy as np

from rageval.measures.base import MeasureDefinition, safe_divide
from rageval.measures.params import LEVEL_PARAMS, RELATIVE
from rageval.measures.ranked_labels import RankedLabels
from rageval.measures.registry import register_measure


def relevant_retrieved(labels: RankedLabels) -> np.ndarray:
    """Per query, the relevance summed over the whole ranking (the number of relevant retrieved, for 0/1 labels)."""
    return labels.relevance.sum(axis=1)


def set_precision(labels: RankedLabels, cutoff: None, relative: bool = False) -> np.ndarray:
    retrieved = labels.lengths.astype(np.float64)
    return safe_divide(relevant_retrieved(labels), np.minimum(retrieved, labels.n_relevant) if relative else retrieved)


def set_recall(labels: RankedLabels, cutoff: None) -> np.ndarray:
    return safe_divide(relevant_retrieved(labels), labels.n_relevant)


def set_average_precision(labels: RankedLabels, cutoff: None) -> np.ndarray:
    return set_precision(labels, None) * set_recall(labels, None)


SetP = register_measure(
    MeasureDefinition(
        name="SetP",
        kernel=set_precision,
        summary="Set precision: relevant retrieved / retrieved (relative=True: / min(retrieved, relevant)).",
        accepts_graded=True,
        accepts_cutoff=False,
        params=(*LEVEL_PARAMS, RELATIVE),
    )
)

SetR = register_measure(
    MeasureDefinition(
        name="SetR",
        kernel=set_recall,
        summary="Set recall: relevant retrieved / relevant (binary labels).",
        accepts_graded=False,
        accepts_cutoff=False,
        params=LEVEL_PARAMS,
    )
)

SetAP = register_measure(
    MeasureDefinition(
        name="SetAP",
        kernel=set_average_precision,
        summary="Set AP: SetP x SetR, the average precision of an unranked set (binary labels).",
        accepts_graded=False,
        accepts_cutoff=False,
        params=LEVEL_PARAMS,
    )
)
