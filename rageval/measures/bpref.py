"""Binary preference (``Bpref``; Buckley & Voorhees, "Retrieval evaluation with incomplete information",
SIGIR 2004), as trec_eval's ``bpref`` computes it.

Bpref = (1/R) * sum over the relevant retrieved passages r of (1 - min(n_r, R) / min(N, R)), where R is the
number of relevant judged passages, N the number of judged non-relevant ones (label >= 0 but not relevant) and
n_r the number of judged non-relevant passages ranked above r (a term is 1 when n_r = 0). Unjudged passages --
without a judgment, or with a negative label (in the pool but unjudged) -- are ignored. 0 when R = 0. No cutoff.
Binary labels only. Parameters ``rel`` (trec_eval ``-l``) and ``judged_only`` (no effect: bpref only reads
judged passages).
"""

from __future__ import annotations

import numpy as np

from rageval.measures.base import MeasureDefinition, safe_divide
from rageval.measures.params import LEVEL_PARAMS
from rageval.measures.ranked_labels import RankedLabels
from rageval.measures.registry import register_measure


def bpref(labels: RankedLabels, cutoff: int | None) -> np.ndarray:
    judgments = labels.judgments("Bpref")
    relevant = labels.relevance > 0
    nonrelevant = (judgments >= 0) & ~relevant  # NaN (no judgment) and negative labels are neither
    nonrelevant_above = np.cumsum(nonrelevant, axis=1)  # inclusive: a relevant rank adds nothing itself
    r = labels.n_relevant[:, None]
    denominator = np.minimum(labels.n_nonrelevant()[:, None], r)
    penalty = safe_divide(np.minimum(nonrelevant_above, r), np.broadcast_to(denominator, nonrelevant_above.shape))
    terms = np.where(nonrelevant_above > 0, 1.0 - penalty, 1.0)
    return safe_divide(np.where(relevant, terms, 0.0).sum(axis=1), labels.n_relevant)


Bpref = register_measure(
    MeasureDefinition(
        name="Bpref",
        kernel=bpref,
        summary="Binary preference: how few judged non-relevant passages rank above the relevant ones.",
        accepts_graded=False,
        accepts_cutoff=False,
        aliases=("BPref",),
        params=LEVEL_PARAMS,
        needs_judgments=True,
    )
)
