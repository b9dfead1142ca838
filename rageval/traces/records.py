"""The one shape every trace format is read into: per question, what was asked, what was retrieved (each stage, in
order), what was answered and what it cited. Readers (one module per format) produce :class:`TraceRecord`;
the importer turns them into a run. Nothing here reads a file.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: Stage names: the first-stage retriever's list, and a reranker's list when the trace has one.
RETRIEVED, RERANKED = "retrieved", "reranked"


@dataclass(frozen=True)
class TraceDocument:
    """One retrieved document as the trace holds it. ``document_id`` is the trace's own id, or ``""`` when it has
    none (the importer gives it a content hash); ``content`` is ``None`` when the trace holds no text (the importer
    looks it up in ``--corpus``). ``position`` is its 0-based rank in its stage's list."""

    document_id: str
    content: str | None
    position: int
    score: float | None = None
    title: str = ""
    metadata: dict = field(default_factory=dict)


@dataclass(frozen=True)
class TraceRecord:
    """One question's trace. ``stages`` maps a stage name (:data:`RETRIEVED`, :data:`RERANKED`) to its documents
    in rank order. ``answer`` is what the team's system answered (``None`` when the trace has none);
    ``gold_answers`` are reference answers when the format carries them (RAGAS ``reference``); ``citations`` lists,
    per answer sentence, the ids of the documents it cites (TREC RAG). ``span_ids`` keeps, per stage, the span
    (or run / observation) id the documents came from, so labels can be written back to it; ``source`` names the
    file and line or span, for error messages and the run's provenance. ``missing`` lists what the trace lacked
    (kept and counted, never dropped silently); ``cut`` the stages whose span lost documents to a tracer's limit."""

    trace_id: str
    question: str
    stages: dict[str, list[TraceDocument]]
    answer: str | None = None
    gold_answers: tuple[str, ...] = ()
    citations: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (sentence, cited document ids)
    span_ids: dict[str, str] = field(default_factory=dict)
    source: str = ""
    missing: tuple[str, ...] = ()
    #: stage -> attributes its span lost to a tracer's limit (OpenTelemetry's ``droppedAttributesCount``): the list
    #: is not whole, and its documents keep the positions the span gave them (the first ones are gone).
    cut: dict[str, int] = field(default_factory=dict)
