"""A job's run file: what a job reads from it, and the labels, measure values and provenance it writes into it in
place, one committed transaction per batch (a kill loses at most the batch in flight; :func:`recover_run_file`
rolls back a commit the kill cut short)."""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from rageval.erag.measures import STORED_MEASURES, compute_measure_values, is_graded_method
from rageval.errors import JobError, StoreError
from rageval.jobs.spec import JobSpec
from rageval.labelmethods import GIVEN, method_kind
from rageval.measures import parse_measure_list
from rageval.store import Correlation, Label, LabelEvidence, MeasureValue, RunReader
from rageval.store.files import recover_hot_journal
from rageval.store.records import UnparsedAnswer
from rageval.store.run_writer import RunWriter
from rageval.types import Passage, Query, Ranking

#: How long a worker waits for a dashboard reader to release the run file before a write fails.
RUN_WRITE_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class JobInputs:
    """What a job reads from its run file: the chosen queries, their rankings, the passages, the items."""

    queries: dict[str, Query]
    rankings: dict[str, Ranking]
    passages: dict[str, Passage]
    items: list[tuple[str, str]]     # (query_id, passage_id), queries in run order, passages by rank
    settings: dict


def read_job_inputs(spec: JobSpec) -> JobInputs:
    """The queries, rankings and passages a job needs, and its items: the top-k of each chosen query's ranking.
    Errors name the run file and, for unknown queries, the ids."""
    if Path(spec.run_path).is_file():
        recover_run_file(spec.run_path)
    try:
        reader = RunReader(spec.run_path)
    except StoreError as error:
        raise JobError(str(error)) from error
    with reader:
        settings = reader.settings()
        order = reader.query_table()["query_id"].tolist()
        if spec.query_ids is None:
            chosen = order
        else:
            known = set(order)
            unknown = [q for q in spec.query_ids if q not in known]
            if unknown:
                shown = ", ".join(repr(q) for q in unknown[:5])
                shown += f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
                raise JobError(f"{spec.run_path}: no query {shown} in this run "
                               f"({len(order)} queries, e.g. {order[0]!r})" if order
                               else f"{spec.run_path}: this run has no queries")
            wanted = set(spec.query_ids)
            chosen = [q for q in order if q in wanted]
        if not chosen:
            raise JobError(f"{spec.run_path}: this run has no queries to re-score")
        all_rankings = reader.rankings()
        k = spec.k or settings.get("k") or max((len(r.passages) for r in all_rankings.values()), default=0)
        rankings = {q: all_rankings[q] for q in chosen if q in all_rankings}
        items = [(q, pid) for q in chosen for pid in rankings.get(q, Ranking(q, ())).passage_ids[:k]]
        if not items:
            raise JobError(f"{spec.run_path}: the chosen queries have no ranked passages to re-score")
        queries = {q: reader.query(q) for q in chosen}
        passage_ids = {pid for _, pid in items}
        passages = reader.passages(passage_ids)
    missing = passage_ids - set(passages)
    if missing:
        raise JobError(f"{spec.run_path}: ranked passage {min(missing)!r} is not in the run's passages table")
    return JobInputs(queries, rankings, passages, items, settings)


@contextmanager
def _run_transaction(path: str | os.PathLike) -> Iterator[RunWriter]:
    """A write transaction on a run file in place (:class:`~rageval.store.run_writer.RunWriter`), its errors on
    opening as :class:`JobError`. Waits up to :data:`RUN_WRITE_TIMEOUT_S` for readers."""
    path = Path(path)
    if not path.is_file():
        raise JobError(f"{path}: " + ("is a folder; expected a run file" if path.is_dir() else "no such run file"))
    try:
        writer = RunWriter(path, timeout_s=RUN_WRITE_TIMEOUT_S)
    except StoreError as error:
        raise JobError(str(error)) from error
    with writer:
        yield writer


def recover_run_file(path: str | os.PathLike) -> bool:
    """Roll back a write that a killed worker left half done. A worker killed inside a commit leaves a "hot"
    rollback journal beside the run file, and read-only readers can only read around it until a read-write
    connection has rolled it back (:func:`rageval.store.files.recover_hot_journal`; a reader does that itself where
    it can). Returns whether a journal was there and is now gone; creates no file."""
    return recover_hot_journal(path, timeout_s=RUN_WRITE_TIMEOUT_S)


def write_labels(path: str | os.PathLike, labels: Sequence[Label], evidence: Sequence[LabelEvidence],
                 unparsed: Sequence[UnparsedAnswer] = ()) -> None:
    """Insert (or replace) labels and their evidence, and the unread replies, in the run file, in one committed
    transaction."""
    with _run_transaction(path) as writer:
        writer.put_labels(labels, evidence, unparsed)


def labelled_items(path: str | os.PathLike, method: str) -> set[tuple[str, str]]:
    """The (query, passage) pairs that already have a ``method`` label in the run file."""
    with RunReader(path) as reader:
        labels = reader.labels(method)
    return set(zip(labels["query_id"], labels["passage_id"]))


def answered_items(path: str | os.PathLike, method: str) -> set[tuple[str, str]]:
    """The (query, passage) pairs ``method``'s model already answered for: labelled, or unparsed (asked again, the
    cached reply would be the same)."""
    with RunReader(path) as reader:
        labels, unparsed = reader.labels(method), reader.unparsed_answers(method)
    return set(zip(labels["query_id"], labels["passage_id"])) | set(zip(unparsed["query_id"], unparsed["item"]))


def _update_settings(path: str | os.PathLike, change: Callable[[dict], None]) -> None:
    with _run_transaction(path) as writer:
        writer.update_settings(change)


def record_provenance(path: str | os.PathLike, method: str, entry: Mapping) -> None:
    """Store what produced ``method``'s labels under the run's ``rescored`` setting and list the method in
    ``label_methods`` (and ``graded_label_methods`` when its labels are graded)."""
    def change(settings: dict) -> None:
        settings.setdefault("rescored", {})[method] = {**settings.get("rescored", {}).get(method, {}), **entry}
        settings["label_methods"] = sorted(set(settings.get("label_methods", [])) | {method})
        if (kind := method_kind(method)).source != "built-in" and kind is not GIVEN:  # e.g. a judge file's
            settings.setdefault("label_kinds", {})[kind.name] = kind.stored()
        if is_graded_method(method):  # the rule reads the base of erag:f1@model
            settings["graded_label_methods"] = sorted(set(settings.get("graded_label_methods", [])) | {method})

    _update_settings(path, change)


def labelled_depth(ranking: Ranking, labelled: set[str]) -> float:
    """How many of the ranking's top passages all carry a label (infinite when the whole ranking does)."""
    for depth, passage_id in enumerate(ranking.passage_ids):
        if passage_id not in labelled:
            return depth
    return float("inf")


def compute_method_measures(labels: pd.DataFrame, rankings: Mapping[str, Ranking], run_cutoffs: Sequence[int],
                            base_method: str, method: str, extra_measures: Sequence[str] = (),
                            unparsed_queries: Collection[str] = ()) -> list[MeasureValue]:
    """Per-query measure values of a re-scored method, by the run builders' own rules
    (:func:`rageval.erag.measures.compute_measure_values` applied as to ``base_method``, e.g. ``erag:em``: binary or
    graded, cut to the top c at cutoff c), for the queries that have its labels.

    Cutoffs: the run's own cutoffs no deeper than the labelled depth d (the fewest top passages labelled in a
    query), plus d itself, so no measure counts an unlabelled passage as not relevant. ``extra_measures`` (the
    run's own, settings ``extra_measures``) are computed too, those at a rank cutoff only up to d.
    ``unparsed_queries`` (a reply of the method's model could not be read for one of their passages) are left out.
    """
    per_query: dict[str, set[str]] = {}
    for query_id, passage_id in zip(labels["query_id"], labels["passage_id"]):
        per_query.setdefault(query_id, set()).add(passage_id)
    measured = {q: rankings[q] for q in rankings if q in per_query and q not in set(unparsed_queries)}
    if not measured:
        return []
    depth = min(labelled_depth(r, per_query[q]) for q, r in measured.items())
    if depth == float("inf"):
        depth = max(len(r.passages) for r in measured.values())
    depth = int(depth)
    if depth < 1:
        return []
    cutoffs = sorted({c for c in run_cutoffs if c <= depth} | {depth})
    base_labels = [Label(base_method, q, p, float(v))
                   for q, p, v in zip(labels["query_id"], labels["passage_id"], labels["value"]) if q in measured]
    extras = [m for m in parse_measure_list(extra_measures)
              if m.cutoff is None or m.definition.cutoff_kind != "rank" or m.cutoff <= depth]
    values = compute_measure_values(base_labels, measured, cutoffs, extra_measures=extras)
    return [dataclasses.replace(v, method=method) for v in values]


def run_cutoffs(path: str | os.PathLike) -> list[int]:
    """The cutoffs of the measures of the stored set a run already stores (``P@5`` -> 5), ascending; the cutoffs of
    a user's own measures (``P(rel=2)@7``, ``DCG@7``) do not add to the stored set."""
    with RunReader(path) as reader:
        names = set(reader.measure_names()["measure"])
    stored = [re.fullmatch(r"([A-Za-z]+)@(\d+)", name) for name in names]
    return sorted({int(match.group(2)) for match in stored if match and match.group(1) in STORED_MEASURES})


def write_method_measures(path: str | os.PathLike, method: str, base_method: str) -> list[MeasureValue]:
    """Recompute ``method``'s measure values from all its labels in the run file and replace the stored ones."""
    with RunReader(path) as reader:
        labels = reader.labels(method)
        rankings = reader.rankings()
        extras = reader.settings().get("extra_measures") or ()
        unparsed = set(reader.unparsed_answers(method)["query_id"])
    values = compute_method_measures(labels, rankings, run_cutoffs(path), base_method, method, extras, unparsed)
    correlations = _method_correlations(path, values)
    with _run_transaction(path) as writer:
        writer.replace_measure_values(method, values)
        if correlations is not None:
            writer.replace_correlations(method, correlations)
    return values


def _method_correlations(path: str | os.PathLike, values: Sequence[MeasureValue]) -> list[Correlation] | None:
    """The correlations with E2E at every k of one method's new measure values, to replace its stored rows (the
    old ones describe labels that are gone); None when the run stores no correlations (the page computes them)."""
    from rageval.pipeline.evaluate import correlations_from_tables

    with RunReader(path) as reader:
        if reader.correlations().empty:
            return None
        e2e = reader.e2e_table()
    measures = pd.DataFrame(values, columns=["method", "measure", "query_id", "value"])
    return correlations_from_tables(measures, e2e) if len(measures) and len(e2e) else []
