"""A job's model and its labels: the generator from the one factory, the decoding, and one batch of a query's
passages labelled with the engine's own eRAG / LLM-relevance code, with the evidence stored beside each label."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator, Mapping, Sequence

from rageval.erag.baselines import compute_judge_labels, judge_of
from rageval.erag.format_probe import FormatProbe
from rageval.erag.labels import EragSettings, compute_erag_labels
from rageval.errors import JobError
from rageval.generation import factory
from rageval.generation.base import DecodingSettings, Generator
from rageval.jobs.spec import ERAG, JobSpec
from rageval.store import Label, LabelEvidence
from rageval.store.records import UnparsedAnswer
from rageval.types import Passage, Query, Ranking, ScoredPassage


def check_model(spec: JobSpec) -> None:
    """Fail early, without loading anything, when the job's model cannot be found
    (:func:`rageval.generation.factory.check_model`)."""
    try:
        factory.check_model(spec.model_settings)
    except factory.ModelError as error:
        raise JobError(str(error)) from error


def load_job_generator(spec: JobSpec) -> Generator:
    """The job's model from :func:`rageval.generation.factory.load_generator`; loading errors become a
    :class:`JobError` naming the model."""
    try:
        return factory.load_generator(spec.model_settings)
    except factory.ModelError as error:
        raise JobError(str(error)) from error


def device_of(generator) -> str:
    inner = getattr(generator, "generator", generator)
    if hasattr(inner, "device"):
        return str(inner.device)
    urls = getattr(inner, "base_urls", None) or ([inner.base_url] if hasattr(inner, "base_url") else [])
    return f"server{'s' if len(urls) > 1 else ''} {', '.join(urls)}" if urls else "unknown"


def decoding_for(spec: JobSpec, settings: Mapping) -> DecodingSettings:
    """The run's own decoding for eRAG (so answers and cache entries match the run's), the judge's own for an LLM
    judge (its ``max_new_tokens``: 3 for yes/no); ``spec.max_new_tokens`` overrides the length."""
    if spec.label_kind != ERAG:
        return DecodingSettings(max_new_tokens=spec.max_new_tokens or judge_of(spec.label_kind).max_new_tokens)
    stored = settings.get("decoding") or {}
    return DecodingSettings(max_new_tokens=spec.max_new_tokens or stored.get("max_new_tokens", 16),
                            temperature=stored.get("temperature", 0.0),
                            stop=tuple(stored.get("stop", ("\n",))))


def label_items(spec: JobSpec, method: str, query: Query, passage_ids: Sequence[str], passages: Mapping[str, Passage],
                generator: Generator, decoding: DecodingSettings
                ) -> tuple[list[Label], list[LabelEvidence], list[UnparsedAnswer]]:
    """Labels of one query's passages under ``method``, with the engine's own eRAG / LLM-relevance code; eRAG's
    evidence is the model's answer from the passage alone. The LLM relevance judgements' unread replies come back
    as :class:`~rageval.store.records.UnparsedAnswer` (no label)."""
    ranking = {query.query_id: Ranking(query.query_id, tuple(ScoredPassage(p, 0.0) for p in passage_ids))}
    if spec.label_kind == ERAG:
        settings = EragSettings(k=len(passage_ids), metric=spec.metric, decoding=decoding,
                                batch_size=spec.model_settings.batch_size)
        outputs, labels = compute_erag_labels([query], ranking, passages, generator, settings)
        values = {x.passage_id: x.value for x in labels}
        evidence = [LabelEvidence(method, o.query_id, o.passage_id,
                                  erag_evidence(generator.model_id, o.output, spec.metric, values[o.passage_id]))
                    for o in outputs]
        unparsed: list[UnparsedAnswer] = []
    else:
        labels, evidence, unparsed = compute_judge_labels(
            [query], ranking, passages, generator, len(passage_ids), spec.label_kind,
            decoding=decoding, batch_size=spec.model_settings.batch_size)
        evidence = [dataclasses.replace(e, method=method) for e in evidence]
        unparsed = [dataclasses.replace(u, judge=method) for u in unparsed]
    return [dataclasses.replace(x, method=method) for x in labels], evidence, unparsed


_EVIDENCE_ANSWER = re.compile(r" answered '(?P<answer>.*)' from this passage alone \(", re.DOTALL)


def erag_evidence(model_id: str, output: str, metric: str, value: float) -> str:
    """The label evidence of an eRAG label a job writes: the model's answer from the passage alone and its score."""
    return (f"{model_id} answered '{output}' from this passage alone ({metric} against the gold answers: "
            f"{value:g})")


def answer_from_evidence(evidence: str) -> str | None:
    """The answer an :func:`erag_evidence` text holds (None for other evidence): what the inspector shows as the
    re-scored model's single-passage answer."""
    match = _EVIDENCE_ANSWER.search(evidence)
    return match.group("answer") if match else None


def batches(items: Sequence[tuple[str, str]], size: int) -> Iterator[tuple[str, list[str]]]:
    """(query_id, passage ids) batches: each query's passages in rank order, at most ``size`` per batch."""
    by_query: dict[str, list[str]] = {}
    for query_id, passage_id in items:
        by_query.setdefault(query_id, []).append(passage_id)
    for query_id, passage_ids in by_query.items():
        for start in range(0, len(passage_ids), size):
            yield query_id, passage_ids[start:start + size]


def needs_format_probe(spec: JobSpec) -> bool:
    """Whether the job labels with an LLM judge other than the default ones (UMBRELA, a judge file): a model that
    cannot write its format leaves passages unlabelled, so the model is tried first (:func:`probe_job`)."""
    from rageval.labelmethods import DEFAULT_JUDGES, method_kind

    if spec.is_complete or spec.label_kind == ERAG:
        return False
    kind = method_kind(spec.base_method)
    return kind.judge is not None and kind.name not in DEFAULT_JUDGES


def probe_job(spec: JobSpec, n: int | None = None, *, generator: Generator | None = None) -> FormatProbe:
    """Try the job's model (``generator`` replaces it: tests) on the first ``n`` passages it would label with
    its judge (:func:`rageval.erag.format_probe.probe_judge`): "this model (M) answered 4 of 5 in UMBRELA's
    format". The calls go through the job's LLM-call cache with the job's decoding, so the job reuses them."""
    from rageval.erag.format_probe import PROBE_PASSAGES, probe_judge
    from rageval.generation.cache import CachedGenerator, LLMCache

    model = generator or load_job_generator(spec)
    with LLMCache(spec.llm_cache) if spec.llm_cache else LLMCache() as cache:
        return probe_judge(spec.run_path, CachedGenerator(model, cache), spec.base_method,
                           PROBE_PASSAGES if n is None else n, spec.k, decoding=decoding_for(spec, {}))
