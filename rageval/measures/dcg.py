"""Discounted cumulative gain, unnormalised (``DCG@k``; Jarvelin & Kekalainen, TOIS 2002).

DCG@k = sum_{i=1..k} g_i / log2(i + 1), with g_i the gain of the passage at rank i: its label (clipped at 0)
by default, the ``gains={label: gain}`` mapping of it (trec_eval's ``ndcg`` gain parameters; a label not listed
is its own gain), and ``2^g - 1`` with ``dcg='exp-log2'`` (Burges et al., ICML 2005, ranx's ``dcg_burges``).
The numerator of nDCG (trec_eval 9.0.8 has it as ``dcg``). Without a cutoff, the whole ranking. Parameters
``gains``, ``dcg`` and ``judged_only``. Accepts graded labels, integer or fractional.
"""

from __future__ import annotations

import numpy as np

from rageval.measures.base import MeasureDefinition, top
from rageval.measures.params import DCG as DCG_FORM
from rageval.measures.params import GAINS, JUDGED_ONLY
from rageval.measures.ranked_labels import RankedLabels
from rageval.measures.registry import register_measure

#: The parameters of DCG and nDCG.
GAIN_PARAMS = (GAINS, DCG_FORM, JUDGED_ONLY)


def discounted_sum(gains: np.ndarray) -> np.ndarray:
    """sum_i gains[:, i] / log2(i + 2): the DCG of each row of gains, ranks from 1."""
    discounts = 1.0 / np.log2(np.arange(2, gains.shape[1] + 2, dtype=np.float64))
    return gains @ discounts


def dcg(labels: RankedLabels, cutoff: int | None) -> np.ndarray:
    return discounted_sum(top(labels.gains, cutoff))


DCG = register_measure(
    MeasureDefinition(
        name="DCG",
        kernel=dcg,
        summary="Discounted cumulative gain, unnormalised (graded labels used as gains).",
        accepts_graded=True,
        params=GAIN_PARAMS,
    )
)
