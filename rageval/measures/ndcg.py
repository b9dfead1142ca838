"""Normalised discounted cumulative gain at k (``nDCG@k``; Jarvelin & Kekalainen, TOIS 2002).

DCG@k = sum_{i=1..k} g_i / log2(i + 1), with gain g_i the label of the passage at rank i (clipped at
0); nDCG@k = DCG@k / IDCG@k, where IDCG@k is the DCG of the ideal ranking of *all* judged labels of
the query, cut at k. This is trec_eval's ``ndcg_cut_k`` (``ndcg`` without a cutoff, where the ideal
ranking is not cut). A query without any positive gain scores 0. Accepts graded labels, integer
or fractional. Parameters as :mod:`~rageval.measures.dcg`'s: ``gains={0:0,1:1,2:3}`` (the ideal ranking
uses the same gains; trec_eval's ``ndcg`` with ``rel_level=gain`` pairs), ``dcg='exp-log2'`` (gain 2^g - 1,
Burges et al., ICML 2005: ranx's ``ndcg_burges``, ir_measures' ``nDCG(dcg='exp-log2')``), ``judged_only``.
"""

from __future__ import annotations

import numpy as np

from rageval.measures.base import MeasureDefinition, safe_divide, top
from rageval.measures.dcg import GAIN_PARAMS, discounted_sum
from rageval.measures.ranked_labels import RankedLabels
from rageval.measures.registry import register_measure


def ndcg(labels: RankedLabels, cutoff: int | None) -> np.ndarray:
    return safe_divide(
        discounted_sum(top(labels.gains, cutoff)),
        discounted_sum(top(labels.ideal_gains, cutoff)),
    )


nDCG = register_measure(
    MeasureDefinition(
        name="nDCG",
        kernel=ndcg,
        summary="Normalised discounted cumulative gain (graded labels used as gains).",
        accepts_graded=True,
        aliases=("NDCG",),
        params=GAIN_PARAMS,
        reads_ideal=True,
    )
)
