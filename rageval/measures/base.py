"""What a measure is: a definition (``nDCG``) and a measure (``nDCG(dcg='exp-log2')@10``), computed over the dense
label matrices every measure kernel reads (:class:`~rageval.measures.ranked_labels.RankedLabels`).

A *measure definition* names a family of measures, declares the parameters and labels it accepts and owns a
vectorised kernel. A *measure* is a definition plus an optional cutoff (a rank, or a recall level for ``IPrec``)
and parameter values; its canonical string (``"P(rel=2)@5"``, the grammar of :func:`~rageval.measures.parse_measure`)
is at once the config value, the UI label and the DataFrame column value, and ``parse_measure(str(m)) == m``.

Label semantics (shared by every measure):

- A label is any real number attached to a (query, passage) pair in the qrels; unjudged passages and negative
  labels count as 0 (trec_eval gives negative labels no gain either). A negative label marks a passage as in the
  pool but unjudged (trec_eval's convention, read by ``judged_only``, bpref and infAP).
- The *relevance* of a label for the set-based measures is ``clip(label, 0, 1)``: integer grades >= 1
  count as fully relevant, exactly as trec_eval with ``relevance_level=1``; fractional labels in
  (0, 1) -- e.g. eRAG token-F1 utilities -- count fractionally (eRAG, Salemi & Zamani SIGIR 2024,
  Table 1 footnotes a/b: P@k is the mean label in the top k, Hit@k the maximum). With ``rel=L`` a label
  is relevant (1) when it is >= L and not relevant (0) otherwise, trec_eval's ``-l L``.
- The *gain* used by nDCG and DCG is the label itself (clipped at 0), or its image under ``gains=`` / ``dcg=``.
- Measures that need a count of relevant documents (Recall, AP, RR, Rprec, ...) accept binary or
  integer-graded labels only and raise ``ValueError`` on a fractional label (unless ``rel=`` makes them binary).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from rageval.measures.params import Param
from rageval.measures.ranked_labels import RankedLabels
from rageval.measures.views import view_for

Kernel = Callable[..., np.ndarray]


@dataclass(frozen=True)
class MeasureDefinition:
    """A family of measures such as ``nDCG``: its canonical name, aliases, parameters, label contract and kernel.

    ``kernel(labels, cutoff, **kernel_params)`` returns one float64 value per row of ``labels``; ``cutoff=None``
    means the whole ranking (trec_eval's measures without ``_k``). The parameters in ``params`` that apply to the
    labels (``rel``, ``judged_only``, ``gains``, ``dcg``) are applied before the kernel runs
    (:mod:`rageval.measures.views`); the others are passed to it. ``default`` is the value of a query whose ranking
    is empty or that has no relevant passage (trec_eval's convention: 0.0).

    ``cutoff_kind`` is ``"rank"`` (``@k``, an integer >= 1) or ``"recall"`` (``IPrec@0.5``, in [0, 1]);
    ``requires_cutoff`` refuses the measure without one. ``needs_judgments``: the kernel reads
    ``ranked_judgments``. ``reads_ranking`` is False for measures of the qrels alone (no ranking is built for
    them); ``reads_ideal`` is True for those reading ``ideal_gains``. ``aggregate`` is how
    :func:`~rageval.measures.aggregate_measures` combines the queries: ``"mean"`` or ``"sum"`` (counts).
    """

    name: str
    kernel: Kernel
    summary: str
    accepts_graded: bool
    accepts_cutoff: bool = True
    aliases: tuple[str, ...] = ()
    default: float = 0.0
    params: tuple[Param, ...] = ()
    cutoff_kind: str = "rank"
    requires_cutoff: bool = False
    needs_judgments: bool = False
    reads_ranking: bool = True
    reads_ideal: bool = False
    aggregate: str = "mean"

    def __matmul__(self, cutoff: int | float) -> Measure:
        """``nDCG @ 10`` -> the measure ``nDCG@10``."""
        return Measure(self, cutoff)

    def __call__(self, **params: Any) -> Measure:
        """``P(rel=2)`` -> the measure ``P(rel=2)``; ``P(rel=2) @ 5`` -> ``P(rel=2)@5``."""
        return Measure(self, None, tuple(params.items()))

    def param(self, name: str) -> Param:
        """The parameter ``name`` of this definition, or a ``ValueError`` listing the ones it takes."""
        for param in self.params:
            if param.name == name:
                return param
        accepted = ", ".join(param.name for param in self.params) or "none"
        raise ValueError(f"measure {self.name!r} takes no parameter {name!r} (its parameters: {accepted})")


@dataclass(frozen=True)
class Measure:
    """A measure definition with an optional cutoff and parameter values; ``str``/``repr`` give the canonical string.

    ``params`` (``(name, value)`` pairs) is stored as the sorted tuple of the pairs that differ from their
    defaults, each value normalised (``rel=2.0`` and ``rel=2`` are one measure).
    """

    definition: MeasureDefinition
    cutoff: int | float | None = None
    params: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        definition = self.definition
        if self.cutoff is None:
            if definition.requires_cutoff:
                raise ValueError(f"measure {definition.name!r} needs a cutoff, e.g. {definition.name}@"
                                 f"{'0.5' if definition.cutoff_kind == 'recall' else '10'}")
        elif not definition.accepts_cutoff:
            raise ValueError(f"measure {definition.name!r} takes no cutoff, got @{self.cutoff}")
        elif definition.cutoff_kind == "recall":
            object.__setattr__(self, "cutoff", _recall_level(definition.name, self.cutoff))
        elif isinstance(self.cutoff, bool) or not isinstance(self.cutoff, (int, np.integer)) or self.cutoff < 1:
            raise ValueError(f"cutoff of {definition.name!r} must be an integer >= 1, got {self.cutoff!r}")
        normalised = {}
        for name, value in self.params:
            param = definition.param(name)
            try:
                canonical = param.normalise(value)
            except ValueError as error:
                raise ValueError(f"{definition.name}: {error}") from None
            if canonical != param.default:
                normalised[name] = canonical
        object.__setattr__(self, "params", tuple(sorted(normalised.items())))

    @property
    def name(self) -> str:
        return self.definition.name

    @property
    def accepts_graded(self) -> bool:
        """Whether fractional labels are accepted: by the definition, or because ``rel=`` makes labels binary."""
        return self.definition.accepts_graded or self.param("rel") is not None

    @property
    def default(self) -> float:
        return self.definition.default

    def param(self, name: str) -> Any:
        """The value of parameter ``name`` (its default when not given; None for a parameter not accepted)."""
        for key, value in self.params:
            if key == name:
                return value
        for param in self.definition.params:
            if param.name == name:
                return param.default
        return None

    def __matmul__(self, cutoff: int | float) -> Measure:
        """``P(rel=2) @ 5``: this measure at another cutoff."""
        return Measure(self.definition, cutoff, self.params)

    @property
    def depth(self) -> int | None:
        """How many ranks the measure reads (None: the whole ranking)."""
        if not self.definition.reads_ranking:
            return 0
        if self.param("judged_only") or self.cutoff is None or self.definition.cutoff_kind != "rank":
            return None
        return int(self.cutoff)

    @property
    def ideal_depth(self) -> int | None:
        """How many ideal gains the measure reads (None: all of them)."""
        if not self.definition.reads_ideal:
            return 0
        return None if self.cutoff is None else int(self.cutoff)

    @property
    def needs_judgments(self) -> bool:
        """Whether the labels must place every judged ranked passage, not only the positively labelled ones."""
        gains = self.param("gains") or ()
        gives_zero_a_gain = any(label == 0 and gain != 0 for label, gain in gains)
        return self.definition.needs_judgments or bool(self.param("judged_only")) or gives_zero_a_gain

    def compute(self, labels: RankedLabels, views: dict | None = None) -> np.ndarray:
        """Per-query values (one per row of ``labels``), checking the label contract first.

        The label parameters are applied first (:func:`rageval.measures.views.view_for`); ``views`` caches the
        resulting labels across measures sharing them.
        """
        view = view_for(labels, self, views)
        if not self.accepts_graded and view.has_fractional.any():
            query_id = view.query_ids[int(np.flatnonzero(view.has_fractional)[0])]
            raise ValueError(
                f"{self}: query {query_id!r} has a fractional label; {self.name} takes "
                "binary labels only; use P@k, Hit@k or nDCG@k for graded labels, or rel= to set a relevance level"
            )
        kernel_params = {param.name: self.param(param.name)
                         for param in self.definition.params if param.applies_to == "kernel"}
        return self.definition.kernel(view, self.cutoff, **kernel_params)

    def __str__(self) -> str:
        text = self.name
        if self.params:
            spelled = {param.name: param.spell for param in self.definition.params}
            text += "(" + ",".join(f"{name}={spelled[name](value)}" for name, value in self.params) + ")"
        if self.cutoff is not None:
            cutoff = repr(float(self.cutoff)) if self.definition.cutoff_kind == "recall" else str(self.cutoff)
            text += f"@{cutoff}"
        return text

    __repr__ = __str__


def _recall_level(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not 0 <= value <= 1:
        raise ValueError(f"the recall level of {name!r} must be a number in [0, 1], got {value!r}")
    return float(value)


def top(matrix: np.ndarray, cutoff: int | float | None) -> np.ndarray:
    """The first ``cutoff`` columns (all of them when ``cutoff`` is None or past the depth)."""
    return matrix if cutoff is None else matrix[:, :int(cutoff)]


def safe_divide(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """``numerator / denominator`` with 0.0 where the denominator is 0 (trec_eval's convention)."""
    denominator = np.asarray(denominator, dtype=np.float64)
    out = np.zeros(np.broadcast(numerator, denominator).shape, dtype=np.float64)
    np.divide(numerator, denominator, out=out, where=denominator != 0)
    return out

