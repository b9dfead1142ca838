"""The ideal ranking's gains as a ``[n_queries x depth]`` matrix (what nDCG divides by): built with the labels
(:mod:`rageval.measures.compute`) and rebuilt under a measure's gain mapping (:mod:`rageval.measures.views`).
"""

from __future__ import annotations

import numpy as np

from rageval.trec import pad_rows


def ideal_gains(rows: np.ndarray, gains: np.ndarray, n_queries: int, ideal_depth: int | None) -> np.ndarray:
    """Each query's positive judged gains sorted descending, zero padded (the ideal ranking)."""
    positive = gains > 0
    rows, gains = rows[positive], gains[positive]
    same_row = rows[1:] == rows[:-1]
    if not ((rows[1:] >= rows[:-1]).all() and (gains[1:][same_row] <= gains[:-1][same_row]).all()):
        order = np.lexsort((-gains, rows))  # (skipped when the judgments come grouped, best first)
        rows, gains = rows[order], gains[order]
    counts = np.bincount(rows, minlength=n_queries)
    kept = counts if ideal_depth is None else np.minimum(counts, ideal_depth)
    position = np.arange(len(rows)) - np.repeat(np.cumsum(counts) - counts, counts)
    keep = position < kept[rows]
    return pad_rows(gains[keep], kept, width=int(kept.max(initial=0)))
