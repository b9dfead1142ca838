"""Judgment rate at k (``Judged@k``): the share of the top k passages that have a judgment.

Judged@k = |judged passages in the top k| / min(k, |ranking|), a passage being judged when the qrels list it, with
any label (negative ones included); without a cutoff the whole ranking. An empty ranking scores 0. ir_measures'
``Judged`` (from OpenNIR; Sakai, "Alternatives to Bpref", SIGIR 2007, motivates reporting it). Reads the labels
of every ranked passage, so runs and qrels are laid out with their judgments.
"""

from __future__ import annotations

import numpy as np

from rageval.measures.base import MeasureDefinition, safe_divide, top
from rageval.measures.ranked_labels import RankedLabels
from rageval.measures.registry import register_measure


def judged(labels: RankedLabels, cutoff: int | None) -> np.ndarray:
    has_judgment = ~np.isnan(top(labels.judgments("Judged"), cutoff))
    shown = labels.lengths if cutoff is None else np.minimum(labels.lengths, cutoff)
    return safe_divide(has_judgment.sum(axis=1), shown)


Judged = register_measure(
    MeasureDefinition(
        name="Judged",
        kernel=judged,
        summary="Judgment rate: share of the top k passages that have a judgment (any label).",
        accepts_graded=True,
        needs_judgments=True,
    )
)
