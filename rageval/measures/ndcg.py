"""Normalised discounted cumulative gain at k (``nDCG@k``; Jarvelin & Kekalainen, TOIS 2002).

DCG@k = sum_{i=1..k} g_i / log2(i + 1), with gain g_i the label of the passage at rank i (clipped at
0); nDCG@k = DCG@k / IDCG@k, where IDCG@k is the DCG of the ideal ranking of *all* judged labels of
the query, cut at k. This is trec_eval's ``ndcg_cut_k`` (``ndcg`` without a cutoff, where the ideal
ranking is not cut). A query without any positive label scores 0. Accepts graded labels, integer
or fractional.
"""

from __future__ import annotations

import numpy as np

from rageval.measures.base import MeasureDefinition, RankedLabels, safe_divide, top
from rageval.measures.registry import register_measure


def _discounted_sum(gains: np.ndarray) -> np.ndarray:
    discounts = 1.0 / np.log2(np.arange(2, gains.shape[1] + 2, dtype=np.float64))
    return gains @ discounts


def ndcg(labels: RankedLabels, cutoff: int | None) -> np.ndarray:
    return safe_divide(
        _discounted_sum(top(labels.gains, cutoff)),
        _discounted_sum(top(labels.ideal_gains, cutoff)),
    )


nDCG = register_measure(
    MeasureDefinition(
        name="nDCG",
        kernel=ndcg,
        summary="Normalised discounted cumulative gain (graded labels used as gains).",
        accepts_graded=True,
        aliases=("NDCG",),
    )
)
