"""R-precision (``Rprec``): precision at rank R, where R is the number of relevant judged passages.

Rprec = |relevant in top R| / R (trec_eval's ``Rprec``; 0 when R = 0). R sets its own cutoff, so
the measure takes none. Binary labels only. Parameters ``rel``, ``judged_only`` and ``mult``:
``Rprec(mult=0.5)`` is the precision at rank c = floor(0.5 R + 0.9), trec_eval's ``Rprec_mult_0.50`` (c past
the end of the ranking divides by c, as P@k does; c = 0 scores 0).
"""

from __future__ import annotations

import numpy as np

from rageval.measures.base import MeasureDefinition, safe_divide
from rageval.measures.params import LEVEL_PARAMS, MULT
from rageval.measures.ranked_labels import RankedLabels
from rageval.measures.registry import register_measure


def r_precision(labels: RankedLabels, cutoff: int | None, mult: float = 1.0) -> np.ndarray:
    n_queries, depth = labels.relevance.shape
    if depth == 0:
        return np.zeros(n_queries)
    # n_relevant is an integer count here: Rprec only runs on binary labels.
    r = np.rint(labels.n_relevant).astype(np.int64)
    # trec_eval's (long)(mult * R + 0.9); with mult = 1 this is R itself.
    rank = r if mult == 1.0 else np.floor(mult * r + 0.9).astype(np.int64)
    relevant_ranks, relevance = labels.relevant_ranks  # past the ranking's end the padding adds 0
    found = np.where(relevant_ranks < rank[:, None], relevance, 0.0).sum(axis=1)
    return safe_divide(found, rank)


Rprec = register_measure(
    MeasureDefinition(
        name="Rprec",
        kernel=r_precision,
        summary="R-precision: precision at rank R = number of relevant passages (binary labels).",
        accepts_graded=False,
        accepts_cutoff=False,
        params=(*LEVEL_PARAMS, MULT),
    )
)
