"""Inferred average precision (``infAP``; Yilmaz & Aslam, "Estimating average precision with incomplete and
imperfect judgments", CIKM 2006), as trec_eval's ``infAP`` computes it.

The qrels may judge only a sample of the pool: a negative label marks a passage that was pooled but not judged,
and a passage absent from the qrels was not pooled. For the relevant passage at rank k (k = 1, 2, ...), with
r, n and u the relevant, judged non-relevant and pooled-unjudged passages above it,

    E[prec@k] = 1                                                       if k = 1
              = 1/k + ((k-1)/k) * ((r + n + u)/(k-1)) * ((r + e)/(r + n + 2e))   otherwise,  e = 0.00001

and infAP = sum of E[prec@k] over the relevant retrieved passages / R (0 when R = 0). With every ranked passage
judged (u = 0, every passage in the pool) this is AP up to e. No cutoff; binary labels only; parameters ``rel``
and ``judged_only``.
"""

from __future__ import annotations

import numpy as np

from rageval.measures.base import MeasureDefinition, safe_divide
from rageval.measures.params import LEVEL_PARAMS
from rageval.measures.ranked_labels import RankedLabels
from rageval.measures.registry import register_measure

EPSILON = 0.00001  # trec_eval's INFAP_EPSILON


def inferred_ap(labels: RankedLabels, cutoff: int | None) -> np.ndarray:
    judgments = labels.judgments("infAP")
    relevant = labels.relevance > 0
    nonrelevant = (judgments >= 0) & ~relevant
    pooled_unjudged = judgments < 0
    relevant_above: np.ndarray = np.cumsum(relevant, axis=1) - relevant
    nonrelevant_above = np.cumsum(nonrelevant, axis=1)  # a relevant rank adds nothing itself
    unjudged_above = np.cumsum(pooled_unjudged, axis=1)
    above = np.arange(labels.depth, dtype=np.float64)  # k - 1 passages above rank k
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = (1.0 / (above + 1.0)
                    + (above / (above + 1.0))
                    * ((relevant_above + nonrelevant_above + unjudged_above) / above)
                    * ((relevant_above + EPSILON) / (relevant_above + nonrelevant_above + 2 * EPSILON)))
    expected[:, :1] = 1.0
    return safe_divide(np.where(relevant, expected, 0.0).sum(axis=1), labels.n_relevant)


infAP = register_measure(
    MeasureDefinition(
        name="infAP",
        kernel=inferred_ap,
        summary="Inferred AP: AP estimated from a sample of judged pool passages (negative label: unjudged).",
        accepts_graded=False,
        accepts_cutoff=False,
        params=LEVEL_PARAMS,
        needs_judgments=True,
    )
)
