"""The dense label matrices every measure kernel reads (:class:`RankedLabels`), built once per evaluation
(:mod:`rageval.measures.compute`, :mod:`rageval.measures.columnar`), seen through a measure's label parameters
(:mod:`rageval.measures.views`) and read by the kernels (:mod:`rageval.measures.base` and the measure modules).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

_NO_ROWS = np.empty(0, dtype=np.int64)
_NO_LABELS = np.empty(0, dtype=np.float64)


@dataclass(frozen=True, eq=False)
class RankedLabels:
    """Labels of every query's ranking laid out as dense arrays, built once and read by every kernel.

    Row ``i`` belongs to ``query_ids[i]``. ``gains[i, j]`` is the (clipped at 0) label of the passage
    at rank ``j + 1`` of that query's ranking, 0 past the end of the ranking; ``relevance`` is the same
    matrix clipped to [0, 1]. ``ideal_gains[i]`` holds the query's judged gains sorted descending (the
    ideal ranking of nDCG), zero padded. ``n_relevant[i]`` is the sum of ``clip(label, 0, 1)`` over
    every judged passage of the query, retrieved or not (the number of relevant passages when labels
    are binary). ``has_fractional[i]`` says whether any judged label of the query lies strictly
    between 0 and 1. ``lengths[i]`` is the length of the ranking before any truncation to ``depth``.
    The matrices are read-only; ``relevance`` may be the very array ``gains`` is when no label
    exceeds 1.

    ``ranked_judgments[i, j]`` is the label exactly as judged of the passage at rank ``j + 1`` (negative ones
    included), NaN when the passage has no judgment or the ranking has ended; it is None when the labels were
    built without judgments (only the positively labelled passages placed, which is all most measures read).
    ``judgment_rows`` and ``judgment_labels`` list every judgment of the evaluated queries (row, label).
    ``level`` is the relevance level ``relevance`` and ``n_relevant`` follow (None: ``clip(label, 0, 1)``).
    """

    query_ids: tuple[str, ...]
    gains: np.ndarray  # float64 [n_queries, depth]
    relevance: np.ndarray  # float64 [n_queries, depth]
    ideal_gains: np.ndarray  # float64 [n_queries, ideal_depth]
    n_relevant: np.ndarray  # float64 [n_queries]
    has_fractional: np.ndarray  # bool [n_queries]
    lengths: np.ndarray  # int64 [n_queries]
    ranked_judgments: np.ndarray | None = None  # float64 [n_queries, depth], NaN: no judgment
    judgment_rows: np.ndarray = field(default_factory=lambda: _NO_ROWS)  # int64 [n_judgments]
    judgment_labels: np.ndarray = field(default_factory=lambda: _NO_LABELS)  # float64 [n_judgments]
    level: float | None = None

    @property
    def depth(self) -> int:
        return self.gains.shape[1]

    @cached_property
    def relevant_ranks(self) -> tuple[np.ndarray, np.ndarray]:
        """Each row's relevant ranks moved to the left: ``(ranks, relevance)``, both ``[n_queries, m]``.

        ``ranks[i, j]`` is the 0-based rank of the ``j``-th ranked passage of row ``i`` with nonzero relevance and
        ``relevance[i, j]`` its relevance; rows with fewer than ``m`` (the most in any row) are padded with rank
        ``depth`` and relevance 0. Kernels that read the whole ranking (AP, Rprec) work on these few columns
        instead of the ``depth`` of the dense matrix: every zero they skip adds exactly 0. Computed once per
        labels object.
        """
        flat = np.flatnonzero(self.relevance)  # a 1-d scan: half the time of np.nonzero's two index arrays
        rows, columns = np.divmod(flat, max(self.depth, 1))
        counts = np.bincount(rows, minlength=len(self.query_ids))
        width = int(counts.max(initial=0))
        slot = np.arange(len(rows)) - np.repeat(np.cumsum(counts) - counts, counts)
        ranks = np.full((len(self.query_ids), width), self.depth, dtype=np.int64)
        relevance = np.zeros((len(self.query_ids), width))
        ranks[rows, slot] = columns
        relevance[rows, slot] = self.relevance[rows, columns]
        ranks.flags.writeable = relevance.flags.writeable = False
        return ranks, relevance

    def judgments(self, what: str) -> np.ndarray:
        """``ranked_judgments``, or a ``ValueError`` saying ``what`` needs them."""
        if self.ranked_judgments is None:
            raise ValueError(f"{what} reads the judgments of every ranked passage: build the labels with "
                             "judgments=True (compute_measures does so for the measures that need them)")
        return self.ranked_judgments

    def judgment_relevance(self) -> np.ndarray:
        """The relevance of each of ``judgment_labels`` under ``level``."""
        if self.level is None:
            return np.clip(self.judgment_labels, 0.0, 1.0)
        return (self.judgment_labels >= self.level).astype(np.float64)

    def n_nonrelevant(self) -> np.ndarray:
        """Per query, the judged passages (label >= 0) that are not relevant: trec_eval's judged non-relevant."""
        nonrelevant = (self.judgment_labels >= 0) & (self.judgment_relevance() == 0)
        return np.bincount(self.judgment_rows, weights=nonrelevant, minlength=len(self.query_ids))
