"""Counts (trec_eval's ``num_ret``, ``num_rel``, ``num_rel_ret``, ``num_q``; ir_measures' ``NumRet``,
``NumRel``, ``NumRelRet``, ``NumQ``). Summed, not averaged, over queries by
:func:`~rageval.measures.aggregate_measures`, as trec_eval and ir_measures total them.

- NumRet: passages retrieved (after ``judged_only``); ``NumRet(rel=L)`` counts the retrieved ones with a label
  >= L, as in ir_measures (so ``NumRet(rel=1)`` is ``NumRelRet``).
- NumRel: relevant judged passages, retrieved or not (``rel=`` sets the level).
- NumRelRet: relevant retrieved passages.
- NumQ: 1 per evaluated query; its sum is the number of queries (the ``n_queries`` column of the aggregate).

With fractional labels NumRel and NumRelRet sum ``clip(label, 0, 1)``, as P does. No cutoff.
"""

from __future__ import annotations

import numpy as np

from rageval.measures.base import Kernel, MeasureDefinition
from rageval.measures.params import LEVEL_PARAMS, REL
from rageval.measures.ranked_labels import RankedLabels
from rageval.measures.registry import register_measure


def retrieved(labels: RankedLabels, cutoff: None) -> np.ndarray:
    if labels.level is not None:  # NumRet(rel=L): the retrieved passages with a label >= L
        return labels.relevance.sum(axis=1)
    return labels.lengths.astype(np.float64)


def relevant(labels: RankedLabels, cutoff: None) -> np.ndarray:
    return labels.n_relevant.astype(np.float64, copy=True)


def relevant_retrieved(labels: RankedLabels, cutoff: None) -> np.ndarray:
    return labels.relevance.sum(axis=1)


def queries(labels: RankedLabels, cutoff: None) -> np.ndarray:
    return np.ones(len(labels.query_ids))


def _count(name: str, kernel: Kernel, summary: str, params=LEVEL_PARAMS,
           reads_ranking: bool = True) -> MeasureDefinition:
    return register_measure(MeasureDefinition(
        name=name, kernel=kernel, summary=summary, accepts_graded=True, accepts_cutoff=False, params=params,
        reads_ranking=reads_ranking, aggregate="sum",
    ))


NumRet = _count("NumRet", retrieved, "Number of passages retrieved (rel=L: of those with a label >= L); summed.")
NumRel = _count("NumRel", relevant, "Number of relevant judged passages, retrieved or not; summed.",
                params=(REL,), reads_ranking=False)
NumRelRet = _count("NumRelRet", relevant_retrieved, "Number of relevant passages retrieved; summed.")
NumQ = _count("NumQ", queries, "Number of queries (1 per query); summed.", params=(), reads_ranking=False)
