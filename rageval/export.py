"""Export a run's labels, verdicts and failure cases as CSV, and its labels as TREC qrels; every table of a run as
Parquet (:func:`export_parquet`), and the labels of a run imported from spans as Phoenix document evaluations
(:func:`export_phoenix`).

CSV files carry everything needed to read a row without the run file (method, ids, rank, value and the
label's evidence; judge, reference, k, verdict and evidence). Qrels files hold one label method each, in the
format trec_eval and pytrec_eval read (``query_id 0 passage_id label``; fractional eRAG labels keep their
value, which pytrec_eval accepts only as integers, so export binary methods for it).
"""

from __future__ import annotations

import hashlib
import re
import uuid
from pathlib import Path

import pandas as pd

from rageval.errors import RagevalError
from rageval.labelmethods import GIVEN, HUMAN, MODEL, MODEL_SEPARATOR, method_kind
from rageval.store import RunReader
from rageval.trec import write_trec_qrels

EXPORTS = ("labels", "verdicts", "failures")
#: Formats that write a folder of files (every table; one Phoenix evaluation per label method), not one file.
FOLDER_FORMATS = ("parquet", "phoenix")
#: The file name Phoenix gives saved evaluations (phoenix.trace.span_evaluations.EVAL_PARQUET_FILE_NAME), so that
#: ``DocumentEvaluations.load(id, folder)`` finds them.
PHOENIX_FILE = "evaluations-{id}.parquet"


def labels_frame(reader: RunReader, method: str | None = None) -> pd.DataFrame:
    """Labels with the passage's rank in the query's list (empty for unretrieved gold passages) and evidence."""
    labels = reader.labels(method)
    ranks = pd.DataFrame([(q, pid, rank) for q, r in reader.rankings().items()
                          for rank, pid in enumerate(r.passage_ids, start=1)],
                         columns=["query_id", "passage_id", "rank"])
    frame = labels.merge(ranks, on=["query_id", "passage_id"], how="left")
    evidence = reader.label_evidence()
    if not evidence.empty:
        frame = frame.merge(evidence, on=["method", "query_id", "passage_id"], how="left")
    else:
        frame["evidence"] = ""
    frame["rank"] = frame["rank"].astype("Int64")
    frame["evidence"] = frame["evidence"].fillna("")
    return frame.sort_values(["method", "query_id", "rank"]).reset_index(drop=True)[
        ["method", "query_id", "passage_id", "rank", "value", "evidence"]]


def export_parquet(run_path: Path, out: Path) -> list[Path]:
    """Every table of the run at ``run_path`` as ``<out>/<table>.parquet`` (one Parquet file per table, as stored:
    ``pandas.read_parquet`` or DuckDB's ``read_parquet`` read them back; the run's settings are the ``meta``
    table's ``settings`` row, JSON). The files are written into a temporary sibling folder, renamed into place
    whole."""
    import os
    import shutil
    import tempfile

    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise RagevalError(f"--out {out}: the folder exists and is not empty; choose a new folder")
    out.parent.mkdir(parents=True, exist_ok=True)
    temporary = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        with RunReader(run_path) as reader:
            names = reader.table_names()
            for table in names:
                reader.table_frame(table).to_parquet(temporary / f"{table}.parquet", index=False)
        if out.exists():
            out.rmdir()
        os.replace(temporary, out)
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
    return [out / f"{table}.parquet" for table in names]


_SPAN_ID = re.compile(r"[0-9a-f]{16}")


def phoenix_span_id(span_id: str) -> str:
    """A span id in the form Phoenix accepts (16 lower-case hex digits, an OpenTelemetry span id): a span id as it
    is; a LangSmith run id (a UUID) as its last 8 bytes; any other id as the first 16 hex digits of its SHA-1 (the
    id as traced is kept in the row's ``metadata``). (LangSmith's own
    OpenTelemetry exporter takes a run id's first 8 bytes, ``get_otel_span_id_from_uuid`` in langsmith 0.15.1's
    ``_internal/_otel_utils.py``; LangChain's run ids are time-ordered UUIDv7s, whose first 8 bytes are the same
    for runs started in one millisecond, such as a compression retriever and the retriever it wraps, so two stages
    would get one id. The last 8 bytes are the random ones. The run id is kept in the row's ``metadata``.)"""
    text = span_id.strip().lower()
    if _SPAN_ID.fullmatch(text):
        return text
    try:
        return uuid.UUID(text).bytes[8:].hex()
    except ValueError:
        return hashlib.sha1(span_id.encode("utf-8")).hexdigest()[:16]


def annotator_kind(method: str) -> str:
    """Phoenix's annotator kind of a label method: ``HUMAN`` (qrels, the dataset's gold), ``LLM`` (eRAG, LLM
    relevance, UMBRELA, any method re-scored by a model), else ``CODE`` (contains-answer)."""
    kind = method_kind(method)
    if MODEL_SEPARATOR in method or MODEL in kind.needs:
        return "LLM"
    if kind is GIVEN:  # a user's own method: people's labels when its name says so
        return "HUMAN" if method.startswith(HUMAN) else "CODE"
    return "CODE" if kind.computed else "HUMAN"


def phoenix_frames(reader: RunReader) -> dict[str, pd.DataFrame]:
    """Label method -> its Phoenix document annotations: one row per (span, document position) where the passage
    stands in an imported list that has a span id (every stage's: the retriever's and the reranker's spans), indexed
    by ``context.span_id`` (string, the id Phoenix knows the span by: :func:`phoenix_span_id`) and
    ``document_position`` (integer, 0-based: OpenInference's ``retrieval.documents.N`` as Phoenix numbers the
    documents it holds: in a list a tracer's attribute limit cut, from the first one kept), with ``score`` (the
    label's value), ``label`` (``relevant`` when it is above 0, else ``irrelevant``), ``explanation`` (the label's
    evidence, or where it came from), ``name`` (the method), ``annotator_kind`` (:func:`annotator_kind`) and
    ``metadata`` (the span id as the trace gave it, the stage, the run). These are the columns Phoenix 20's
    ``Client().spans.log_document_annotations_dataframe`` reads (packages/phoenix-client/src/phoenix/client/utils/
    annotation_helpers.py in Arize-ai/phoenix: ``span_id`` falls back to ``context.span_id``; ``label``, ``score``,
    ``explanation``, ``metadata``; ``name`` and ``annotator_kind`` per row). A run without span ids, or without
    labels on its traced documents, raises :class:`RagevalError` in one line."""
    positions = reader.trace_rankings()
    positions = positions[positions["span_id"] != ""]
    if positions.empty:
        raise RagevalError(f"{reader.path}: no span ids (the run was not imported from spans: rageval import "
                           "openinference/langfuse/langsmith); Phoenix document evaluations need them")
    positions = positions.copy()
    phoenix_ids = {span: phoenix_span_id(span) for span in positions["span_id"].unique()}
    by_phoenix_id: dict[str, str] = {}
    for span, converted in phoenix_ids.items():
        if by_phoenix_id.setdefault(converted, span) != span:
            raise RagevalError(f"{reader.path}: spans {by_phoenix_id[converted]!r} and {span!r} both become "
                               f"Phoenix span id {converted}; their labels cannot be told apart")
    positions["phoenix_span_id"] = positions["span_id"].map(phoenix_ids)
    # Phoenix numbers the documents a span holds from 0: in a list cut by a tracer's limit, from the first kept.
    offsets = {(c["query_id"], c["stage"]): int(c["first_rank"]) - 1
               for c in reader.settings().get("imported", {}).get("cut_lists", [])}
    positions["offset"] = [offsets.get((q, stage), 0) for q, stage in zip(positions["query_id"], positions["stage"])]
    labels = reader.labels()
    evidence = reader.label_evidence()
    if not evidence.empty:
        labels = labels.merge(evidence, on=["method", "query_id", "passage_id"], how="left")
    else:
        labels["evidence"] = None
    rows = labels.merge(positions[["query_id", "passage_id", "span_id", "phoenix_span_id", "rank", "stage",
                                   "offset"]], on=["query_id", "passage_id"])
    name = reader.settings().get("name") or Path(reader.path).stem
    if rows.empty:
        raise RagevalError(f"{reader.path}: no labels on the traced documents ({len(labels):,} labels in the run); "
                           "nothing to send to Phoenix. Add labels first: rageval import ... --qrels FILE, or "
                           "rageval rescore start RUN")
    frames = {}
    for method, group in rows.groupby("method", sort=True):
        fallback = f"rageval label method {method} of run {name} ({{stage}} list)"
        explanation = [e if isinstance(e, str) and e else fallback.format(stage=stage)
                       for e, stage in zip(group["evidence"], group["stage"])]
        frame = pd.DataFrame({
            "context.span_id": group["phoenix_span_id"].astype(str).to_numpy(),
            "document_position": (group["rank"].astype("int64") - 1 - group["offset"].astype("int64")).to_numpy(),
            "score": group["value"].astype(float).to_numpy(),
            "label": ["relevant" if v > 0 else "irrelevant" for v in group["value"]],
            "explanation": explanation,
            "name": str(method), "annotator_kind": annotator_kind(str(method)),
            "metadata": [{"trace_span_id": str(span), "stage": str(stage), "rageval_run": str(name)}
                         for span, stage in zip(group["span_id"], group["stage"])]})
        frames[str(method)] = frame.sort_values(["context.span_id", "document_position"]).set_index(
            ["context.span_id", "document_position"])
    return frames


def export_phoenix(run_path: Path, out: Path, method: str | None = None) -> list[Path]:
    """The labels of a run imported from spans as Phoenix document annotations (:func:`phoenix_frames`), one
    Parquet file per label method (or ``method`` only) in the folder ``out``, named as Phoenix saved evaluations
    (``evaluations-<id>.parquet``, schema metadata ``arize`` naming the id, the method and
    ``DocumentEvaluations``). Phoenix 20 loads each with its client (``px.Client().log_evaluations`` is gone)::

        import pandas as pd
        from phoenix.client import Client
        Client().spans.log_document_annotations_dataframe(dataframe=pd.read_parquet(FILE))

    (docs/traces.md). The id is a UUID-5 of the run's name and the method, so exporting again writes the same
    files. A run without labels on its traced documents writes nothing and raises :class:`RagevalError`."""
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    with RunReader(run_path) as reader:
        frames = phoenix_frames(reader)
        name = reader.settings().get("name") or Path(run_path).stem
        if method is not None:
            if method not in frames:
                raise RagevalError(f"{run_path}: no labels of method {method!r} on documents with a span id; "
                                   f"the run has {', '.join(frames) or 'none'}")
            frames = {method: frames[method]}
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for eval_name, frame in frames.items():
        eval_id = uuid.uuid5(uuid.NAMESPACE_URL, f"rageval:{name}:{eval_name}")
        table = pa.Table.from_pandas(frame)
        metadata = {**(table.schema.metadata or {}), b"arize": json.dumps(
            {"eval_id": str(eval_id), "eval_name": eval_name, "eval_type": "DocumentEvaluations"}).encode()}
        path = out / PHOENIX_FILE.format(id=eval_id)
        pq.write_table(table.replace_schema_metadata(metadata), path)
        written.append(path)
    return written


def export_run(run_path: Path, what: str, out: Path, *, fmt: str = "csv", method: str | None = None) -> Path:
    """Write ``what`` (labels, verdicts or failures) of the run at ``run_path`` to ``out`` as ``fmt`` (csv or
    qrels; qrels only for labels, and then ``method`` is required). ``parquet`` and ``phoenix`` write the folder
    ``out`` (:func:`export_parquet`, :func:`export_phoenix`; ``what`` is not used)."""
    if fmt == "parquet":
        export_parquet(run_path, out)
        return Path(out)
    if fmt == "phoenix":
        export_phoenix(run_path, out, method)
        return Path(out)
    if what not in EXPORTS:
        raise RagevalError(f"export: expected one of {', '.join(EXPORTS)}, got {what!r}")
    with RunReader(run_path) as reader:
        if method is not None and method not in reader.label_methods():
            raise RagevalError(f"{run_path}: no label method {method!r}; the run has "
                               f"{', '.join(reader.label_methods())}")
        if fmt == "qrels":
            if what != "labels" or method is None:
                raise RagevalError("export --format qrels: only labels, of one --method, can be written as qrels")
            frame = reader.labels(method).rename(columns={"value": "label"})[["query_id", "passage_id", "label"]]
            return write_trec_qrels(frame, out)
        if fmt != "csv":
            raise RagevalError(f"export --format: expected csv or qrels, got {fmt!r}")
        if what == "labels":
            frame = labels_frame(reader, method)
        elif what == "verdicts":
            frame = reader.verdicts().sort_values(["judge", "reference", "k", "query_id"])
        else:
            frame = reader.failure_cases().sort_values(["judge", "k", "category", "query_id"])
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(out, index=False)
    return Path(out)
