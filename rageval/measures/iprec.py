"""Interpolated precision at a recall level (``IPrec@r``) and its 11-point average (``IPrec11pt``), as
trec_eval's ``iprec_at_recall_r`` and ``11pt_avg`` compute them (Manning, Raghavan & Schutze, IIR 8.4).

IPrec@r = max over ranks i >= i_m of P@i, where m = floor(r * R + 0.9) relevant passages must be retrieved and
i_m is the rank of the m-th relevant one (i_0 = 1); the ranks run to the end of the ranking. It is 0 when fewer
than m relevant passages are retrieved. m is trec_eval 9's ``(long)(r * R + 0.9)``, which pytrec_eval (and so
ir_measures) computes; trec_eval 10 rounds r * R to the nearest instead, which differs when its fraction lies in
(0.1, 0.5), e.g. r = 0.2, R = 6. The ``@`` of IPrec is the recall
level r in [0, 1] (ir_measures' convention): ``IPrec@0.5``. IPrec11pt is the mean of IPrec@r over r = 0.0, 0.1,
..., 1.0 (trec_eval's obsolete ``11pt_avg``; its alias). Binary labels only; parameters ``rel`` and
``judged_only``.
"""

from __future__ import annotations

import numpy as np

from rageval.measures.base import MeasureDefinition
from rageval.measures.params import LEVEL_PARAMS
from rageval.measures.ranked_labels import RankedLabels
from rageval.measures.registry import register_measure

#: The recall levels of the 11-point average.
ELEVEN_POINTS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


def relevant_needed(n_relevant: np.ndarray, levels: tuple[float, ...]) -> np.ndarray:
    """[n_queries, len(levels)]: how many relevant passages reach each recall level, trec_eval 9's
    (long)(level * R + 0.9)."""
    return np.floor(np.multiply.outer(n_relevant, np.asarray(levels, dtype=np.float64)) + 0.9).astype(np.int64)


def interpolated_precisions(labels: RankedLabels, levels: tuple[float, ...]) -> np.ndarray:
    """IPrec at each recall level: an array [n_queries, len(levels)]."""
    n_queries, depth = labels.relevance.shape
    if depth == 0:
        return np.zeros((n_queries, len(levels)))
    relevant = labels.relevance > 0
    found = np.cumsum(relevant, axis=1)
    precision = found / np.arange(1, depth + 1, dtype=np.float64)
    # Ranks past the end hold the last count over a larger rank: never above the precision at the end.
    best_from = np.maximum.accumulate(precision[:, ::-1], axis=1)[:, ::-1]  # max over ranks >= i
    retrieved = found[:, -1]
    needed = relevant_needed(labels.n_relevant, levels)
    # The rank of the m-th relevant passage: the first rank where the count reaches m (the first rank for m = 0).
    rank = np.stack([np.argmax(found >= np.maximum(needed[:, j], 1)[:, None], axis=1)
                     for j in range(len(levels))], axis=1)
    rank = np.where(needed == 0, 0, rank)
    values = np.take_along_axis(best_from, rank, axis=1)
    return np.where(needed <= retrieved[:, None], values, 0.0)


def interpolated_precision(labels: RankedLabels, cutoff: float | None) -> np.ndarray:
    assert cutoff is not None  # IPrec requires its recall level
    return interpolated_precisions(labels, (float(cutoff),))[:, 0]


def eleven_point_average(labels: RankedLabels, cutoff: None) -> np.ndarray:
    return interpolated_precisions(labels, ELEVEN_POINTS).sum(axis=1) / len(ELEVEN_POINTS)


IPrec = register_measure(
    MeasureDefinition(
        name="IPrec",
        kernel=interpolated_precision,
        summary="Interpolated precision at recall level r (IPrec@0.5): best precision once r of R is found.",
        accepts_graded=False,
        params=LEVEL_PARAMS,
        cutoff_kind="recall",
        requires_cutoff=True,
    )
)

IPrec11pt = register_measure(
    MeasureDefinition(
        name="IPrec11pt",
        kernel=eleven_point_average,
        summary="11-point interpolated average precision: mean IPrec at recall 0.0, 0.1, ..., 1.0.",
        accepts_graded=False,
        accepts_cutoff=False,
        aliases=("11pt_avg",),
        params=LEVEL_PARAMS,
    )
)
