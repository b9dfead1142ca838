"""What a measure is: a definition (``nDCG``), a parametrised measure (``nDCG@10``) and the dense
label matrix every measure kernel reads.

A *measure definition* names a family of measures, declares which labels it accepts and owns a
vectorised kernel. A *measure* is a definition plus an optional rank cutoff; its canonical string
(``"nDCG@10"``) is at once the config value, the UI label and the DataFrame column value, and
``parse_measure(str(m)) == m``.

Label semantics (shared by every measure):

- A label is any real number attached to a (query, passage) pair in the qrels; unjudged passages and
  negative labels count as 0 (trec_eval clips negative gains to 0 as well).
- The *relevance* of a label for the set-based measures is ``clip(label, 0, 1)``: integer grades >= 1
  count as fully relevant, exactly as trec_eval with ``relevance_level=1``; fractional labels in
  (0, 1) -- e.g. eRAG token-F1 utilities -- count fractionally (eRAG, Salemi & Zamani SIGIR 2024,
  Table 1 footnotes a/b: P@k is the mean label in the top k, Hit@k the maximum).
- The *gain* used by nDCG is the label itself (clipped at 0).
- Measures that need a count of relevant documents (Recall, AP, RR, Rprec) accept binary or
  integer-graded labels only and raise ``ValueError`` on a fractional label.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


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
    """

    query_ids: tuple[str, ...]
    gains: np.ndarray  # float64 [n_queries, depth]
    relevance: np.ndarray  # float64 [n_queries, depth]
    ideal_gains: np.ndarray  # float64 [n_queries, ideal_depth]
    n_relevant: np.ndarray  # float64 [n_queries]
    has_fractional: np.ndarray  # bool [n_queries]
    lengths: np.ndarray  # int64 [n_queries]

    @property
    def depth(self) -> int:
        return self.gains.shape[1]


Kernel = Callable[[RankedLabels, "int | None"], np.ndarray]


@dataclass(frozen=True)
class MeasureDefinition:
    """A family of measures such as ``nDCG``: its canonical name, aliases, label contract and kernel.

    ``kernel(labels, cutoff)`` returns one float64 value per row of ``labels``; ``cutoff=None``
    means the whole ranking (trec_eval's measures without ``_k``). ``default`` is the value of a
    query whose ranking is empty or that has no relevant passage (trec_eval's convention: 0.0).
    """

    name: str
    kernel: Kernel
    summary: str
    accepts_graded: bool
    accepts_cutoff: bool = True
    aliases: tuple[str, ...] = ()
    default: float = 0.0

    def __matmul__(self, cutoff: int) -> Measure:
        """``nDCG @ 10`` -> the measure ``nDCG@10``."""
        return Measure(self, cutoff)


@dataclass(frozen=True)
class Measure:
    """A measure definition with an optional cutoff; ``str``/``repr`` give the canonical string."""

    definition: MeasureDefinition
    cutoff: int | None = None

    def __post_init__(self) -> None:
        if self.cutoff is not None:
            if not self.definition.accepts_cutoff:
                raise ValueError(f"measure {self.definition.name!r} takes no cutoff, got @{self.cutoff}")
            if isinstance(self.cutoff, bool) or not isinstance(self.cutoff, (int, np.integer)) or self.cutoff < 1:
                raise ValueError(f"cutoff of {self.definition.name!r} must be an integer >= 1, got {self.cutoff!r}")

    @property
    def name(self) -> str:
        return self.definition.name

    @property
    def accepts_graded(self) -> bool:
        return self.definition.accepts_graded

    @property
    def default(self) -> float:
        return self.definition.default

    def compute(self, labels: RankedLabels) -> np.ndarray:
        """Per-query values (one per row of ``labels``), checking the label contract first."""
        if not self.accepts_graded and labels.has_fractional.any():
            query_id = labels.query_ids[int(np.flatnonzero(labels.has_fractional)[0])]
            raise ValueError(
                f"{self}: query {query_id!r} has a fractional label; {self.name} takes "
                "binary labels only; use P@k, Hit@k or nDCG@k for graded labels"
            )
        return self.definition.kernel(labels, self.cutoff)

    def __str__(self) -> str:
        return self.name if self.cutoff is None else f"{self.name}@{self.cutoff}"

    __repr__ = __str__


def top(matrix: np.ndarray, cutoff: int | None) -> np.ndarray:
    """The first ``cutoff`` columns (all of them when ``cutoff`` is None or past the depth)."""
    return matrix if cutoff is None else matrix[:, :cutoff]


def safe_divide(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """``numerator / denominator`` with 0.0 where the denominator is 0 (trec_eval's convention)."""
    denominator = np.asarray(denominator, dtype=np.float64)
    out = np.zeros(np.broadcast(numerator, denominator).shape, dtype=np.float64)
    np.divide(numerator, denominator, out=out, where=denominator != 0)
    return out
