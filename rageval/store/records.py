"""The records of a run: what each table of a run file holds, one frozen dataclass per row kind, and
:class:`Run`, everything one run produced."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rageval.types import Passage, Query, Ranking


@dataclass(frozen=True)
class DocOutput:
    """The RAG LLM's output for one query given one passage alone: M(q, {d})."""

    query_id: str
    passage_id: str
    output: str


@dataclass(frozen=True)
class Label:
    """One relevance label: a qrels row produced by a label method (``erag:em``, ``contains_answer``, ``gold``)."""

    method: str
    query_id: str
    passage_id: str
    value: float


@dataclass(frozen=True)
class E2EOutput:
    """The RAG LLM's output from the whole top-k list, and its downstream score against the gold answers."""

    query_id: str
    k: int
    output: str
    score: float


@dataclass(frozen=True)
class LabelEvidence:
    """Why a label has its value, in words or raw model output (e.g. the LLM's reply to the relevance prompt)."""

    method: str
    query_id: str
    passage_id: str
    evidence: str


@dataclass(frozen=True)
class SemiGoldOutput:
    """LLM-retEval: sample ``sample`` of the RAG LLM's answer from the gold passages alone."""

    query_id: str
    sample: int
    output: str


@dataclass(frozen=True)
class Verdict:
    """A judge's Yes/No on the top-k answer against ``reference`` (``semi_gold`` answers or ``gold_answers``)."""

    judge: str
    reference: str
    query_id: str
    k: int
    verdict: bool
    evidence: str


@dataclass(frozen=True)
class FailureCase:
    """One LLM-retEval failure category (A-F) that applies to a query at k under a judge, with the reason."""

    judge: str
    query_id: str
    k: int
    category: str
    reason: str


@dataclass(frozen=True)
class UnparsedAnswer:
    """An LLM judge's answer that could not be read: neither a label nor a verdict, and never counted as "no".

    ``judge`` is what the answer was for: a label method (an LLM judge's, e.g. ``judge@gemma``) or an LLM-retEval
    judge and reference (``llm/semi_gold``); ``item`` the passage id of a label, ``k=<k>`` of a verdict; ``model``
    the model that answered; ``answer`` its reply as given."""

    judge: str
    model: str
    query_id: str
    item: str
    answer: str


@dataclass(frozen=True)
class MeasureValue:
    method: str
    measure: str
    query_id: str
    value: float


@dataclass(frozen=True)
class Correlation:
    """eRAG's Table 1 cell (Salemi & Zamani 2024): Kendall's tau-b and Spearman's rho across the ``n`` queries
    between a label method's per-query ``measure`` and the E2E score at ``k``, each with its percentile bootstrap
    interval (``n_resamples`` resamples, central ``confidence`` share). Undefined coefficients are nan."""

    k: int
    method: str
    measure: str
    n: int
    tau: float
    tau_low: float
    tau_high: float
    rho: float
    rho_low: float
    rho_high: float
    n_resamples: int
    confidence: float


@dataclass(frozen=True)
class TraceRanking:
    """One position of an imported trace's list at one stage (``retrieved``: the first-stage retriever's,
    ``reranked``: a reranker's; :mod:`rageval.traces.records`), as the trace had it: ``rank`` is the trace's
    0-based position + 1, ``score`` None when the trace gave none, ``span_id`` the span (run, observation) the list
    came from, "" when the format has none. The run's main ranking is one of these lists (see the run's
    ``imported`` settings)."""

    stage: str
    query_id: str
    rank: int
    passage_id: str
    score: float | None
    span_id: str


@dataclass(frozen=True)
class Run:
    """Everything one run produced. ``settings`` is plain JSON-able data describing what produced it."""

    settings: Mapping[str, Any]
    queries: Sequence[Query]
    passages: Sequence[Passage]
    rankings: Sequence[Ranking]
    doc_outputs: Sequence[DocOutput] = ()
    labels: Sequence[Label] = ()
    e2e_outputs: Sequence[E2EOutput] = ()
    measure_values: Sequence[MeasureValue] = field(default=())
    label_evidence: Sequence[LabelEvidence] = ()
    semi_gold_outputs: Sequence[SemiGoldOutput] = ()
    verdicts: Sequence[Verdict] = ()
    failure_cases: Sequence[FailureCase] = ()
    correlations: Sequence[Correlation] = ()
    trace_rankings: Sequence[TraceRanking] = ()
    unparsed: Sequence[UnparsedAnswer] = ()
