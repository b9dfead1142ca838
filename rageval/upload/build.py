"""An uploaded run built from its validated parts: the measures (the engine's own, at the cutoffs of its rankings and
its E2E ks) and the settings that say where it came from."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rageval.erag.measures import GRADED_MEASURES, compute_measure_values, is_graded_method
from rageval.store import E2EOutput, Label, MeasureValue, Run
from rageval.store.provenance import UPLOADED, record_brought
from rageval.types import Passage, Query, Ranking
from rageval.upload.parts import UploadRead
from rageval.upload.problems import UploadResult
from rageval.version import __version__

#: Measure cutoffs of an uploaded run: these (those not deeper than its longest ranking), plus every E2E k.
STANDARD_CUTOFFS = (1, 3, 5, 10, 20, 50, 100)


def measure_cutoffs(rankings: Iterable[Ranking], e2e_ks: Iterable[int] = ()) -> list[int]:
    """The cutoffs an uploaded run's measures are computed at: :data:`STANDARD_CUTOFFS` up to its longest
    ranking, that depth itself when it is at most 100, and every k with an E2E answer."""
    depth = max((len(r.passages) for r in rankings), default=0)
    cutoffs = {c for c in STANDARD_CUTOFFS if c <= depth} | set(e2e_ks)
    if 0 < depth <= STANDARD_CUTOFFS[-1]:
        cutoffs.add(depth)
    return sorted(cutoffs)


def is_graded(method: str, values: Iterable[float]) -> bool:
    """Whether a label method is scored as graded: the engine says so of its name (eRAG under F1, ROUGE-L,
    BERTScore) or some label lies strictly between 0 and 1 (only P, nDCG and Hit accept those)."""
    return is_graded_method(method) or any(0.0 < v < 1.0 for v in values)


def compute_upload_measures(labels: Sequence[Label], rankings: Mapping[str, Ranking],
                            cutoffs: Sequence[int]) -> list[MeasureValue]:
    """Per-query values of the engine's measures for every label method, on the stored rankings.

    The conventions of :func:`rageval.erag.measures.compute_measure_values`: every ranked query gets a value (0 when it
    has no relevant passage); P, R, AP, RR, nDCG, Hit at each cutoff and R-precision (graded methods, see
    :func:`is_graded`: P, nDCG, Hit only); methods that label only retrieved passages by their nature
    (``erag:*``, ``contains_answer``, the LLM judges, ``gold_page``;
    :func:`rageval.erag.measures.is_list_bound_method`)
    see only the labels of the top c at cutoff c, as eRAG defines its labels on R_c; the others (``qrels``,
    ``gold`` and any other name) are global judgments, so unretrieved relevant passages count for recall.
    """
    values_by_method: dict[str, list[float]] = {}
    for label in labels:
        values_by_method.setdefault(label.method, []).append(label.value)
    graded = {method for method, values in values_by_method.items() if is_graded(method, values)}
    return compute_measure_values(labels, rankings, cutoffs, graded_methods=graded)


def run_settings(form: str, files: Mapping[str, str], *, dataset: str, retriever: str, model: str | None,
                 queries: Sequence[Query], passages: Sequence[Passage], rankings: Sequence[Ranking],
                 labels: Sequence[Label], e2e: Sequence[E2EOutput], cutoffs: Sequence[int]) -> dict[str, Any]:
    """The settings of an uploaded run: its source, files, retriever, cutoffs, label methods (graded or not)."""
    methods = sorted({x.method for x in labels})
    by_method: dict[str, list[float]] = {}
    for x in labels:
        by_method.setdefault(x.method, []).append(x.value)
    graded = [m for m in methods if is_graded(m, by_method[m])]
    e2e_ks = sorted({e.k for e in e2e})
    depth = max((len(r.passages) for r in rankings), default=0)
    settings: dict[str, Any] = {
        "source": "uploaded", "format": form, "uploaded_files": dict(files), "dataset": dataset,
        "retriever": retriever, "k": e2e_ks[-1] if e2e_ks else depth, "num_queries": len(queries),
        "corpus": {"name": "uploaded passages", "size": len(passages)}, "cutoffs": list(cutoffs),
        "label_methods": methods, "graded_label_methods": graded, "rageval_version": __version__,
        "notes": "An uploaded run: the rankings, labels and answers are the uploader's, as given; rageval "
                 "computed the measures from them" + (" and scored the end-to-end answers by exact match against "
                                                      "the gold answers." if e2e else "."),
    }
    if graded:
        settings["graded_measures"] = list(GRADED_MEASURES)
    if e2e:
        settings.update(e2e_ks=e2e_ks, e2e_metric="em", e2e_answers=UPLOADED)
    settings["brought"] = record_brought(f"uploaded ({form}: {', '.join(files.values())})", labels=methods,
                                         e2e_ks=e2e_ks, e2e_answers=len(e2e), cutoffs=cutoffs)
    if model:
        settings["model_id"] = model
    return settings


def finish_upload(read: UploadRead) -> UploadResult:
    """The :class:`UploadResult` of what a reader read: no run when there are errors, else the run with its measures
    and settings."""
    problems = read.problems
    if problems.has_errors:
        return UploadResult(None, problems.result())
    cutoffs = measure_cutoffs(read.rankings, (e.k for e in read.e2e))
    measures = compute_upload_measures(read.labels, {r.query_id: r for r in read.rankings}, cutoffs)
    settings = run_settings(read.form, read.files, dataset=read.dataset, retriever=read.retriever, model=read.model,
                            queries=read.queries, passages=read.passages, rankings=read.rankings, labels=read.labels,
                            e2e=read.e2e, cutoffs=cutoffs)
    run = Run(settings, read.queries, read.passages, read.rankings, doc_outputs=list(read.doc_outputs),
              labels=read.labels, e2e_outputs=list(read.e2e), measure_values=measures)
    return UploadResult(run, problems.result())
