"""R-precision (``Rprec``): precision at rank R, where R is the number of relevant judged passages.

Rprec = |relevant in top R| / R (trec_eval's ``Rprec``; 0 when R = 0). R sets its own cutoff, so
the measure takes none. Binary labels only.
"""

from __future__ import annotations

import numpy as np

from rageval.measures.base import MeasureDefinition, RankedLabels, safe_divide
from rageval.measures.registry import register_measure


def r_precision(labels: RankedLabels, cutoff: int | None) -> np.ndarray:
    n_queries, depth = labels.relevance.shape
    if depth == 0:
        return np.zeros(n_queries)
    # n_relevant is an integer count here: Rprec only runs on binary labels.
    r = np.rint(labels.n_relevant).astype(np.int64)
    cumulative = np.cumsum(labels.relevance, axis=1)
    last = np.clip(np.minimum(r, depth) - 1, 0, None)  # past the ranking's end the padding adds 0
    found = np.where(r > 0, cumulative[np.arange(n_queries), last], 0.0)
    return safe_divide(found, r)


Rprec = register_measure(
    MeasureDefinition(
        name="Rprec",
        kernel=r_precision,
        summary="R-precision: precision at rank R = number of relevant passages (binary labels).",
        accepts_graded=False,
        accepts_cutoff=False,
    )
)
