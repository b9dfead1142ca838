"""Traces in: :class:`~rageval.traces.records.TraceRecord` lists (any format,
:func:`rageval.traces.readers.read_traces`) into one run file, the same run SQLite an upload writes
(:func:`rageval.store.write_run`, atomically: a temporary sibling renamed into place, so a failed import writes
nothing).

What becomes what:

- a trace -> a query (``query_id`` the trace id, the question its text, the format's reference answers its gold
  answers);
- its lists -> the run's main ranking, the reranked list when the trace has one (the list the answer was generated
  from), else the first-stage list; every stage's list, position by position with the span it came from, is kept
  as the run's ``trace_rankings`` (:class:`~rageval.store.records.TraceRanking`), so the first stage is never lost;
  a main list whose scores contradict its order is ranked by its order (``imported.scores_out_of_rank_order``;
  the scores stay in ``trace_rankings``), so trec_eval over the run's own scores reads the list the system used;
  a list a tracer's attribute limit cut (:attr:`TraceRecord.cut`) keeps its traced ranks and is listed in
  ``imported.cut_lists`` (:func:`cut_list_warning`: the command's and the pages' warning);
- a document -> a passage: its id is the trace's, or, when the trace has none, a content hash of its text
  (:func:`content_id`: the same text gets the same id across traces and files); its text is the trace's, or, when
  the trace holds none, the ``--corpus`` passage of that id; one found in neither is kept in the lists with an
  empty text (its passage's ``source`` says so) and counted as missing;
- the answer -> the run's end-to-end answer at the k the system used, the length of the main list (scored by exact
  match when the trace has gold answers, else stored without a score); the run's settings say ``e2e_answers:
  imported``, and "compute missing pieces" never generates them again (:func:`rageval.pipeline.summary.
  missing_pieces`);
- ``--qrels`` -> the label method ``qrels`` and each query's gold passages (its positives with a text);
- an answer whose sentences cite documents (TREC RAG) -> an attributed answer, one line of ``<run>.citations.jsonl``
  beside the run file, which ``rageval evaluate-citations`` scores for the Citations page
  (:mod:`rageval.traces.citations`).

The run's settings (``imported``, ``missing``) say what came in and what is missing: per kind, the traces that
lack it (``question``, ``answer``, ``gold_answers``, ``documents`` and whatever the reader listed in
:attr:`TraceRecord.missing`, a document's position left out: ``retrieved.content``), and ``document_text``:
documents whose text is in neither the trace nor the corpus.
A trace that lacks a piece is kept and counted, never dropped. A trace that cannot be read as one (no id, an id
used twice, an unknown stage, two documents at one position) is one :class:`~rageval.errors.DataError` naming its
source (file and line or span), the trace and the field.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import itertools
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from rageval.errors import DataError, RagevalError
from rageval.store import E2EOutput, Label, Run, TraceRanking, write_run
from rageval.store.provenance import record_brought
from rageval.traces.records import RERANKED, RETRIEVED, TraceDocument, TraceRecord
from rageval.types import Passage, Query, Ranking, ScoredPassage
from rageval.version import __version__

#: The prefix of a content-hash id (:func:`content_id`).
HASH_PREFIX = "sha1:"
#: Stages in pipeline order; the last one a trace has is its main ranking.
STAGES = (RETRIEVED, RERANKED)
#: ``Passage.source`` of a document whose text is in neither the trace nor the corpus.
MISSING_TEXT = "missing: in neither the trace nor the corpus"
#: The label method of ``--qrels``.
QRELS = "qrels"


def content_id(text: str) -> str:
    """The id of a document the trace gives no id: ``sha1:`` + the SHA-1 hex digest of its text in Unicode NFC
    with every run of white space made one space and the ends stripped (so the same passage, however a tool
    wrapped or indented it, gets the same id in every trace and file; case and punctuation are kept)."""
    normalised = " ".join(unicodedata.normalize("NFC", text).split())
    return HASH_PREFIX + hashlib.sha1(normalised.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ImportReport:
    """What an import wrote: the run file, its sizes and what is missing (see the module docstring)."""

    path: Path
    queries: int
    passages: int
    stages: Mapping[str, int]          # stage -> traces with a list at that stage
    answers: Mapping[int, int]         # k -> imported answers at that k
    hashed_ids: int                    # distinct documents given a content-hash id
    texts_from_corpus: int             # distinct documents whose text came from --corpus
    qrels_labels: int
    missing: Mapping[str, int] = field(default_factory=dict)
    citations_file: Path | None = None  # the attributed answers, as rageval evaluate-citations reads them
    attributed_answers: int = 0
    replaced: str | None = None  # the file the import replaced (--replace), and what it held
    cut_lists: tuple[Mapping[str, Any], ...] = ()  # lists a tracer's attribute limit cut (settings imported.cut_lists)
    scores_out_of_order: int = 0       # main lists whose scores contradicted their order (ranked by position)

    def warnings(self) -> list[str]:
        """What the user must know about the lists (also in the run's settings, for the pages)."""
        found = []
        if (cut := cut_list_warning(self.cut_lists)) is not None:
            found.append(cut)
        if self.scores_out_of_order:
            found.append(f"note: {self.scores_out_of_order:,} list(s) carry scores that contradict their order "
                         "(e.g. a first stage's score kept on a reranked list); they are ranked by their traced "
                         "order, and their scores are kept as traced in the stage lists")
        return found

    def lines(self) -> list[str]:
        """What ``rageval import`` prints."""
        stages = ", ".join(f"{stage} {n:,}" for stage, n in self.stages.items()) or "none"
        answers = ", ".join(f"{n:,} at k={k}" for k, n in sorted(self.answers.items())) or "none"
        lines = [f"imported {self.queries:,} traces into {self.path}",
                 *([f"replaced {self.replaced}"] if self.replaced else []),
                 f"passages: {self.passages:,} ({self.hashed_ids:,} given a content-hash id, "
                 f"{self.texts_from_corpus:,} texts from the corpus)",
                 f"lists per stage: {stages}", f"answers (kept as the run's end-to-end answers): {answers}",
                 f"qrels labels: {self.qrels_labels:,}"]
        if self.citations_file is not None:
            lines.append(f"attributed answers: {self.attributed_answers:,} in {self.citations_file}; score their "
                         f"citations for the Citations page with: rageval evaluate-citations {self.citations_file} "
                         f"--out <runs folder>/attribution/{self.path.stem}.sqlite")
        lines.extend(self.warnings())
        if self.missing:
            lines.append("missing: " + ", ".join(f"{kind} {n:,}" for kind, n in sorted(self.missing.items())))
        else:
            lines.append("missing: nothing")
        return lines


def _out_of_order(scores: Sequence[float | None]) -> bool:
    """Whether a list's scores contradict its order (a later document scored higher than an earlier one): then
    they are not the scores it was ranked by (a first stage's score kept on a reranked list), and a tool that
    ranks by score (trec_eval, pytrec_eval) would read another list than the one the system used."""
    return any(later > earlier for earlier, later in itertools.pairwise(scores)
               if earlier is not None and later is not None)


def _error(record: TraceRecord, field_name: str, message: str) -> DataError:
    return DataError(record.source or "traces", message, record=record.trace_id or None, field=field_name)


def _ordered(record: TraceRecord, stage: str, documents: Sequence[TraceDocument]) -> list[TraceDocument]:
    ordered = sorted(documents, key=lambda d: d.position)
    for before, after in itertools.pairwise(ordered):
        if before.position == after.position:
            raise _error(record, f"stages.{stage}.position",
                         f"two documents at position {after.position}; each position holds one document")
    return ordered


@dataclass
class _Passages:
    """The passages an import collects, by id, and where each text came from."""

    corpus: Mapping[str, Passage]
    by_id: dict[str, Passage] = field(default_factory=dict)
    hashed: set[str] = field(default_factory=set)
    from_corpus: set[str] = field(default_factory=set)
    conflicting: set[str] = field(default_factory=set)

    def add(self, document: TraceDocument) -> tuple[str, bool] | None:
        """The document's passage id and whether its text is known (None: neither an id nor a text)."""
        passage_id = document.document_id
        if not passage_id:
            if document.content is None:
                return None
            passage_id = content_id(document.content)
            self.hashed.add(passage_id)
        if document.content is not None:
            passage = Passage(passage_id, document.title, document.content, "trace")
        elif passage_id in self.by_id:
            return passage_id, self.by_id[passage_id].source != MISSING_TEXT
        elif passage_id in self.corpus:
            passage = self.corpus[passage_id]
            self.from_corpus.add(passage_id)
        else:
            passage = Passage(passage_id, document.title, "", MISSING_TEXT)
        known = self.by_id.get(passage_id)
        if known is None or (known.source == MISSING_TEXT and passage.source != MISSING_TEXT):
            self.by_id[passage_id] = passage
        elif passage.source == "trace" and known.text != passage.text:
            self.conflicting.add(passage_id)  # the first text is kept
        return passage_id, self.by_id[passage_id].source != MISSING_TEXT


def build_run(records: Sequence[TraceRecord], *, format_name: str = "", files: Sequence[str] = (),
              corpus: Mapping[str, Passage] | None = None, corpus_file: str | None = None,
              qrels: Mapping[str, Mapping[str, float]] | None = None, qrels_file: str | None = None) -> Run:
    """The run of ``records`` (see the module docstring), in memory; nothing is written. ``corpus``: passages by
    id, where a document without text is looked up; ``qrels``: ``{query: {passage: relevance}}``."""
    from rageval.pipeline.evaluate import compute_correlations
    from rageval.text_metrics import exact_match
    from rageval.upload.build import compute_upload_measures, is_graded, measure_cutoffs

    if not records:
        raise RagevalError(f"{', '.join(files) or 'the traces'}: no trace to import")
    passages = _Passages(corpus or {})
    seen: dict[str, str] = {}
    queries: list[Query] = []
    rankings: list[Ranking] = []
    trace_rankings: list[TraceRanking] = []
    e2e: list[E2EOutput] = []
    lacking: Counter[str] = Counter()
    stage_counts: Counter[str] = Counter()
    main_stages: Counter[str] = Counter()
    missing_text: set[tuple[str, str]] = set()
    skipped_documents = repeated = 0
    rank_scores = disordered = 0
    cut_lists: list[dict[str, Any]] = []
    for record in records:
        if not record.trace_id:
            raise _error(record, "trace_id", "a trace without an id; every trace needs one (it becomes the query id)")
        if record.trace_id in seen:
            raise _error(record, "trace_id", f"trace id {record.trace_id!r} is used twice (also at "
                         f"{seen[record.trace_id] or 'an earlier trace'}); each trace becomes one query")
        seen[record.trace_id] = record.source
        unknown = [s for s in record.stages if s not in STAGES]
        if unknown:
            raise _error(record, "stages", f"unknown stage {unknown[0]!r}; expected {' or '.join(STAGES)}")
        kinds = {re.sub(r"\[\d+\]", "", kind) for kind in record.missing}  # "retrieved[0].content": per trace
        if not record.question.strip():
            kinds.add("question")
        if record.answer is None:
            kinds.add("answer")
        if not record.gold_answers:
            kinds.add("gold_answers")
        lists: dict[str, list[tuple[str, float | None]]] = {}
        for stage in STAGES:
            documents = record.stages.get(stage)
            if not documents:
                continue
            stage_counts[stage] += 1
            entries: list[tuple[str, float | None]] = []
            for document in _ordered(record, stage, documents):
                rank = document.position + 1  # the trace's own position (a span's retrieval.documents.N), 1-based
                added = passages.add(document)
                if added is None:
                    skipped_documents += 1
                    continue
                passage_id, has_text = added
                if not has_text:
                    missing_text.add((record.trace_id, passage_id))
                score = None if document.score is None else float(document.score)
                entries.append((passage_id, score))
                trace_rankings.append(TraceRanking(stage, record.trace_id, rank, passage_id, score,
                                                   record.span_ids.get(stage, "")))
            lists[stage] = entries
        main = RERANKED if lists.get(RERANKED) else RETRIEVED
        first: dict[str, float | None] = {}
        for passage_id, score in lists.get(main, []):
            first.setdefault(passage_id, score)
        repeated += len(lists.get(main, [])) - len(first)
        main_ids = list(first)
        if not main_ids:
            kinds.add("documents")
        else:
            main_stages[main] += 1
        scores = list(first.values())
        if all(s is not None and math.isfinite(s) for s in scores) and not _out_of_order(scores):
            scored = tuple(ScoredPassage(p, float(s)) for p, s in first.items())  # type: ignore[arg-type]
        else:  # no scores, or scores that contradict the traced order: the order is what the system used
            rank_scores += 1
            if scores and all(s is not None for s in scores):
                disordered += 1
            scored = tuple(ScoredPassage(p, float(len(main_ids) - i)) for i, p in enumerate(main_ids))
        for stage, dropped in record.cut.items():
            documents = record.stages.get(stage) or []
            cut_lists.append({"query_id": record.trace_id, "stage": stage, "span_id": record.span_ids.get(stage, ""),
                              "dropped_attributes": int(dropped), "documents_kept": len(documents),
                              "first_rank": min((d.position for d in documents), default=0) + 1})
        rankings.append(Ranking(record.trace_id, scored))
        queries.append(Query(record.trace_id, record.question, tuple(record.gold_answers), (), format_name))
        if record.answer is not None:
            if main_ids:
                score = exact_match(record.answer, record.gold_answers) if record.gold_answers else math.nan
                k = len(main_ids)
                if main in record.cut:  # the system answered from the whole list, not from what the limit kept
                    k = max(k, max(d.position for d in record.stages[main]) + 1)
                e2e.append(E2EOutput(record.trace_id, k, record.answer, score))
            else:
                kinds.add("answer_without_documents")
        for _, cited in record.citations:  # a cited document no list holds: its text from the corpus
            for passage_id in cited:
                if passage_id not in passages.by_id and passage_id in passages.corpus:
                    passages.by_id[passage_id] = passages.corpus[passage_id]
                    passages.from_corpus.add(passage_id)
        lacking.update(kinds)

    labels: list[Label] = []
    unjudged_queries = 0
    if qrels:
        ids = {q.query_id for q in queries}
        unjudged_queries = sum(1 for q in qrels if q not in ids)
        by_query = {q.query_id: q for q in queries}
        for query_id, judged in qrels.items():
            if query_id not in ids:
                continue
            gold = []
            for passage_id, value in judged.items():
                labels.append(Label(QRELS, query_id, passage_id, float(value)))
                if passage_id not in passages.by_id and passage_id in passages.corpus:
                    passages.by_id[passage_id] = passages.corpus[passage_id]
                    passages.from_corpus.add(passage_id)
                if value > 0 and passage_id in passages.by_id and passages.by_id[passage_id].source != MISSING_TEXT:
                    gold.append(passage_id)
            query = by_query[query_id]
            by_query[query_id] = Query(query.query_id, query.text, query.answers, tuple(gold), query.dataset)
        queries = [by_query[q.query_id] for q in queries]

    missing = dict(lacking)
    if missing_text:
        missing["document_text"] = len(missing_text)
    if skipped_documents:
        missing["document_id_and_text"] = skipped_documents
    if repeated:
        missing["repeated_documents"] = repeated
    if passages.conflicting:
        missing["conflicting_texts"] = len(passages.conflicting)
    if unjudged_queries:
        missing["qrels_queries_not_imported"] = unjudged_queries

    answer_ks = Counter(o.k for o in e2e)
    cutoffs = measure_cutoffs(rankings, answer_ks)
    by_query_ranking = {r.query_id: r for r in rankings}
    measures = compute_upload_measures(labels, by_query_ranking, cutoffs) if labels else []
    scored_e2e = [o for o in e2e if math.isfinite(o.score)]
    correlations = compute_correlations(measures, scored_e2e) if measures and scored_e2e else []
    depth = max((len(r.passages) for r in rankings), default=0)
    k = answer_ks.most_common(1)[0][0] if answer_ks else depth
    methods = sorted({x.method for x in labels})
    values: dict[str, list[float]] = {}
    for x in labels:
        values.setdefault(x.method, []).append(x.value)
    gold_answers = sum(1 for q in queries if q.answers)
    settings: dict[str, Any] = {
        "source": "imported traces", "format": format_name, "imported_files": list(files),
        "dataset": Path(files[0]).stem if files else format_name, "retriever": f"the team's system ({format_name} "
        f"traces, {'reranked' if main_stages.get(RERANKED) else 'first-stage'} lists)",
        "k": k, "num_queries": len(queries), "cutoffs": cutoffs, "label_methods": methods,
        "graded_label_methods": [m for m in methods if is_graded(m, values[m])],
        "corpus": {"name": "imported passages", "size": len(passages.by_id), "file": corpus_file},
        "e2e_ks": sorted(answer_ks), "e2e_metric": "em", "e2e_answers": "imported",
        "rageval_version": __version__,
        "imported": {"format": format_name, "files": list(files), "traces": len(queries),
                     "stages": dict(stage_counts), "main_stage": dict(main_stages),
                     "answers": {str(a): n for a, n in sorted(answer_ks.items())}, "gold_answers": gold_answers,
                     "hashed_ids": len(passages.hashed), "texts_from_corpus": len(passages.from_corpus),
                     "qrels_file": qrels_file, "qrels_labels": len(labels),
                     "rank_derived_scores": rank_scores, "scores_out_of_rank_order": disordered,
                     "cut_lists": cut_lists,
                     "span_ids": sum(1 for t in trace_rankings if t.span_id) > 0},
        "missing": missing,
        "brought": record_brought(f"imported from {format_name or 'traces'}", labels=methods, e2e_ks=answer_ks,
                                  e2e_answers=len(e2e), cutoffs=cutoffs),
        "notes": (f"Imported from {format_name} traces: the questions, lists and answers are the team's system's, "
                  "as traced; the answers are the run's end-to-end answers at the k the system used (the length of "
                  "the list they were generated from) and are never generated again"
                  + ("; scored by exact match against the traces' reference answers." if gold_answers else
                     "; the traces have no reference answers, so the answers are not scored.")),
    }
    if correlations:
        from rageval.pipeline.evaluate import correlation_settings

        settings["correlations"] = correlation_settings(correlations)
    return Run(settings, queries, list(passages.by_id.values()), rankings, labels=labels, e2e_outputs=e2e,
               measure_values=measures, correlations=correlations, trace_rankings=trace_rankings)


def report_of(run: Run, path: Path) -> ImportReport:
    """The :class:`ImportReport` of a run :func:`build_run` made, written at ``path``."""
    imported = run.settings["imported"]
    return ImportReport(Path(path), len(run.queries), len(run.passages), dict(imported["stages"]),
                        {int(k): n for k, n in imported["answers"].items()}, imported["hashed_ids"],
                        imported["texts_from_corpus"], imported["qrels_labels"], dict(run.settings["missing"]),
                        cut_lists=tuple(imported.get("cut_lists", ())),
                        scores_out_of_order=int(imported.get("scores_out_of_rank_order", 0)))


def cut_list_warning(cut_lists: Sequence[Mapping[str, Any]]) -> str | None:
    """The one sentence a command or a page says about lists a tracer's attribute limit cut (``None`` when none
    was): how many, whose first documents are gone, and what to do."""
    if not cut_lists:
        return None
    queries = sorted({str(c["query_id"]) for c in cut_lists})
    first = cut_lists[0]
    shown = ", ".join(queries[:3]) + (f" and {len(queries) - 3} more" if len(queries) > 3 else "")
    return (f"warning: {len(cut_lists):,} list(s) in {len(queries):,} trace(s) ({shown}) were cut by the tracer's "
            f"attribute limit (the OpenTelemetry SDK keeps 128 attributes a span and drops the oldest: "
            f"{sum(int(c['dropped_attributes']) for c in cut_lists):,} dropped); their first documents are gone "
            f"(e.g. {first['query_id']} {first['stage']} starts at rank {first['first_rank']}); the kept documents "
            "keep their traced ranks, and measures on these lists are not the system's. Trace again with "
            "OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT raised (e.g. 4096).")


def import_traces(records: Sequence[TraceRecord], out: Path, *, format_name: str = "", files: Sequence[str] = (),
                  corpus: Path | None = None, qrels: Path | None = None, command: str = "",
                  replace_existing: bool = False) -> ImportReport:
    """Import ``records`` into the run file ``out`` (atomically: a failed import writes nothing, and leaves an
    earlier file at ``out`` as it was). ``corpus``: a passages file (rageval JSONL or BEIR corpus) where
    documents without text are looked up; ``qrels``: TREC qrels or BEIR TSV for the label method ``qrels``.
    An existing file at ``out`` is replaced only with ``replace_existing`` (the report says what it replaced); an
    import where no trace has a retrieved list is refused (:class:`~rageval.errors.DataError`)."""
    from rageval.pipeline.run import check_out_path
    from rageval.pipeline.sources import read_corpus, read_qrels
    from rageval.traces.citations import attributed_answers, write_jsonl_atomically

    out = check_out_path(Path(out))
    _check_usable(records, files, format_name)
    passages = read_corpus(Path(corpus)) if corpus else {}
    judged = read_qrels(Path(qrels)) if qrels else None
    run = build_run(records, format_name=format_name, files=[str(f) for f in files], corpus=passages,
                    corpus_file=str(corpus) if corpus else None, qrels=judged,
                    qrels_file=str(qrels) if qrels else None)
    replaced = _check_replace(out, replace_existing)  # (after the traces' own errors, which say more)
    when = dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat()
    run = replace(run, settings={**run.settings, "name": out.stem, "created_at": when,
                                 **({"command": command} if command else {})})
    rows, dropped = attributed_answers(records, run)
    citations = out.with_name(f"{out.stem}.citations.jsonl") if rows else None
    if citations is not None:
        run = replace(run, settings={**run.settings, "missing": {**run.settings["missing"], **dropped},
                                     "imported": {**run.settings["imported"], "attributed_answers": len(rows),
                                                  "citations_file": str(citations)}})
        write_jsonl_atomically(rows, citations)
    try:
        write_run(run, out)
    except BaseException:
        if citations is not None:
            citations.unlink(missing_ok=True)
        raise
    return dataclasses.replace(report_of(run, out), citations_file=citations, attributed_answers=len(rows),
                               replaced=replaced)


def _check_replace(out: Path, replace_existing: bool) -> str | None:
    """What an existing file at ``out`` holds (the import replaces it: said in the report), or a refusal when the
    import was not told to replace it (``--replace``): a run is never overwritten by surprise."""
    if not out.exists():
        return None
    try:
        from rageval.store import RunReader

        with RunReader(out) as reader:
            settings = reader.settings()
        what = (f"a run of {settings.get('num_queries', '?')} queries from {settings.get('source', 'somewhere')}"
                f"{', made ' + str(settings['created_at']) if settings.get('created_at') else ''}")
    except RagevalError:
        what = "a file that is not a rageval run"
    if not replace_existing:
        raise RagevalError(f"--out {out}: the file exists ({what}); add --replace to replace it, or choose another "
                           "name")
    return f"{out} ({what})"


def _check_usable(records: Sequence[TraceRecord], files: Sequence[str], format_name: str) -> None:
    """Refuse an import where no trace has a retrieved list: nothing to evaluate, so most likely a file of
    another format, or traces without a retriever span. Nothing is written."""
    if any(documents for record in records for documents in record.stages.values()):
        return
    where = ", ".join(str(f) for f in files) or "the traces"
    if not records:
        raise DataError(where, f"no trace read as {format_name or 'traces'}: is it a {format_name} file?")
    traces = f"{len(records)} trace{'s' if len(records) != 1 else ''}"
    raise DataError(where, f"{traces} read as {format_name or 'traces'}, and not one has a retrieved "
                           "list (no retriever span, no contexts): nothing to evaluate, so nothing was written; is "
                           f"it a {format_name} file, and does the traced application log its retriever?")


def import_files(format_name: str, paths: Sequence[Path], out: Path, *, corpus: Path | None = None,
                 qrels: Path | None = None, answers_field: str | None = None, command: str = "",
                 replace_existing: bool = False) -> ImportReport:
    """``rageval import``: read ``paths`` in ``format_name`` (:func:`rageval.traces.readers.read_traces`) and
    :func:`import_traces` them into ``out``."""
    from rageval.traces.readers import read_traces

    clash = next((p for p in paths if Path(p).resolve() == Path(out).resolve()), None)
    if clash is not None:
        raise RagevalError(f"--out {out}: it is one of the trace files; choose another run file name")
    records = read_traces(format_name, [Path(p) for p in paths], answers_field=answers_field)
    return import_traces(records, out, format_name=format_name, files=[str(p) for p in paths], corpus=corpus,
                         qrels=qrels, command=command, replace_existing=replace_existing)
