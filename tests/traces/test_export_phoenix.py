"""Labels out: ``rageval export RUN --format phoenix`` (Phoenix document evaluations of a run imported from spans)
and ``--format parquet`` (every table of a run), and ``rageval import`` on the command line.

Phoenix (arize-phoenix) does not install here (it pulls a server and dozens of packages), so the Phoenix files are
checked against what its loader checks, read from its source: src/phoenix/trace/span_evaluations.py in
Arize-ai/phoenix (``Evaluations.load``: the file ``evaluations-<id>.parquet``, schema metadata ``arize`` with
``eval_id``, ``eval_name``, ``eval_type``; ``DocumentEvaluations``: index ``context.span_id`` (string) and
``document_position`` (integer), result columns ``score`` (numeric), ``label`` and ``explanation`` (string))."""

from __future__ import annotations

import base64
import json
import re
import sqlite3
import uuid
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from pandas.api.types import is_integer_dtype, is_numeric_dtype, is_string_dtype

from rageval.cli import main
from rageval.export import export_phoenix, phoenix_span_id
from rageval.store import LabelEvidence, RunReader, RunWriter
from rageval.store.records import Label
from rageval.traces import readers
from rageval.traces.importer import content_id, import_files, import_traces
from tests.traces.trace_fixtures import BERLIN, PARIS, ragas_like_records, two_stage_records


@pytest.fixture
def spans_run(tmp_path):
    """The two-stage traces imported with qrels (gold: Paris for q-france, Berlin for q-germany), and an
    ``llm_relevance`` label with evidence on q-france's Paris, written as a re-score job writes labels."""
    qrels = tmp_path / "qrels.txt"
    qrels.write_text(f"q-france 0 {content_id(PARIS)} 1\nq-germany 0 {content_id(BERLIN)} 1\n")
    path = tmp_path / "spans.sqlite"
    import_traces(two_stage_records(), path, format_name="openinference", qrels=qrels)
    with RunWriter(path) as writer:
        writer.put_labels([Label("llm_relevance", "q-france", content_id(PARIS), 1.0)],
                          [LabelEvidence("llm_relevance", "q-france", content_id(PARIS), "model replied 'Yes'")])
    return path


def read_phoenix(path):
    """A Phoenix evaluations file as ``Evaluations.load`` reads it: (eval name, eval type, frame)."""
    meta = json.loads(pq.read_schema(path).metadata[b"arize"])
    assert path.name == f"evaluations-{uuid.UUID(meta['eval_id'])}.parquet"
    return meta["eval_name"], meta["eval_type"], pq.read_table(path).to_pandas()


def test_phoenix_rows_are_the_span_and_position_of_each_labelled_document(spans_run, tmp_path, capsys):
    out = tmp_path / "phoenix"
    assert main(["export", str(spans_run), "--format", "phoenix", "--out", str(out)]) == 0
    assert "wrote 2 Parquet files" in capsys.readouterr().out
    frames = {name: (kind, frame) for name, kind, frame in map(read_phoenix, sorted(out.iterdir()))}
    assert set(frames) == {"qrels", "llm_relevance"}
    records = {r.trace_id: r for r in two_stage_records()}
    with RunReader(spans_run) as reader:
        labels = reader.labels()
    for method, (kind, frame) in frames.items():
        assert kind == "DocumentEvaluations"
        assert list(frame.index.names) == ["context.span_id", "document_position"]
        index = frame.index.to_frame()
        assert is_string_dtype(index["context.span_id"]) and is_integer_dtype(index["document_position"])
        assert is_numeric_dtype(frame["score"]) and is_string_dtype(frame["label"])
        assert is_string_dtype(frame["explanation"])
        # Expected from the records themselves: each (span, position) where a labelled passage stands.
        expected = set()
        for row in labels[labels["method"] == method].itertuples():
            record = records[row.query_id]
            for stage, documents in record.stages.items():
                for document in documents:
                    if content_id(document.content) == row.passage_id:
                        expected.add((phoenix_span_id(record.span_ids[stage]), document.position, row.value))
        got = {(span, int(position), score) for (span, position), score in frame["score"].items()}
        assert got == expected and expected
    paris = frames["llm_relevance"][1].loc[(phoenix_span_id("span-rr-1"), 0)]
    assert (paris["label"], paris["explanation"]) == ("relevant", "model replied 'Yes'")
    # q-germany's Berlin was reranked out: its qrels label goes to the retriever span at position 1 only.
    assert frames["qrels"][1].loc[(phoenix_span_id("span-ret-2"), 1), "label"] == "relevant"


def test_phoenix_export_refuses_a_run_without_span_ids_in_one_line(tmp_path, capsys):
    path = tmp_path / "ragas.sqlite"
    import_traces(ragas_like_records(), path, format_name="ragas")
    assert main(["export", str(path), "--format", "phoenix", "--out", str(tmp_path / "out")]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "no span ids" in error


def test_parquet_export_round_trips_every_table(spans_run, tmp_path):
    out = tmp_path / "tables"
    assert main(["export", str(spans_run), "--format", "parquet", "--out", str(out)]) == 0
    with sqlite3.connect(spans_run) as connection:
        tables = sorted(name for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'"))
        assert sorted(p.stem for p in out.iterdir()) == tables
        for table in tables:
            stored = pd.read_sql_query(f'SELECT * FROM "{table}"', connection)
            back = pd.read_parquet(out / f"{table}.parquet")
            pd.testing.assert_frame_equal(back, stored, check_dtype=False)
            assert len(back) == len(stored)
    assert main(["export", str(spans_run), "--format", "parquet", "--out", str(out)]) == 2  # never over a folder


def test_rageval_import_prints_what_came_in_and_what_is_missing(tmp_path, monkeypatch, capsys):
    # The readers are the trace-format work's; here a reader registered for this test only.
    def read_traces(format_name, paths, *, answers_field=None):
        assert (format_name, [p.name for p in paths], answers_field) == ("ragas", ["rows.jsonl"], "response")
        return ragas_like_records()

    monkeypatch.setattr(readers, "read_traces", read_traces)
    (tmp_path / "rows.jsonl").write_text("{}\n")
    out = tmp_path / "run.sqlite"
    assert main(["import", "ragas", str(tmp_path / "rows.jsonl"), "--out", str(out),
                 "--answers-field", "response"]) == 0
    printed = capsys.readouterr().out
    assert f"imported 3 traces into {out}" in printed
    assert "answers (kept as the run's end-to-end answers): 3 at k=2" in printed
    assert "missing: nothing" in printed
    with RunReader(out) as reader:
        assert reader.query_count() == 3 and reader.settings()["imported"]["format"] == "ragas"


OTLP_FIXTURE = Path(__file__).parent / "fixtures" / "openinference_otlp.json"


def spans_with_documents(path: Path) -> set[tuple[str, int]]:
    """(span id in hex, document position) of every document an OTLP JSON file's spans list, read from the file
    itself: OpenInference's ``retrieval.documents.N.document.*`` (retriever spans) and
    ``reranker.output_documents.N.document.*`` (reranker spans); OTLP JSON gives span ids in base64."""
    found = set()
    data = json.loads(path.read_text())
    for resource in data["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                span_id = base64.b64decode(span["spanId"]).hex()
                for attribute in span.get("attributes", []):
                    match = re.match(r"(retrieval\.documents|reranker\.output_documents)\.(\d+)\.document\.",
                                     attribute["key"])
                    if match:
                        found.add((span_id, int(match.group(2))))
    return found


@pytest.mark.skipif(not OTLP_FIXTURE.exists(), reason="the OpenInference fixture comes with the trace readers "
                                                      "(tests/traces/fixtures, written by the OpenTelemetry SDK)")
def test_round_trip_spans_to_run_to_phoenix_rows(tmp_path):
    """Import OpenTelemetry spans (the SDK-made fixture) -> run; label every passage as a re-score job does; export
    for Phoenix: one row per (span, position) the spans list, no more."""
    run = tmp_path / "spans.sqlite"
    import_files("openinference", [OTLP_FIXTURE], run)
    with RunReader(run) as reader:
        pairs = reader.trace_rankings()[["query_id", "passage_id"]].drop_duplicates()
    labels = [Label("llm_relevance", q, p, float(i % 2)) for i, (q, p) in enumerate(pairs.itertuples(index=False))]
    with RunWriter(run) as writer:
        writer.put_labels(labels, [])
    [path] = export_phoenix(run, tmp_path / "phoenix")
    name, kind, frame = read_phoenix(path)
    assert (name, kind) == ("llm_relevance", "DocumentEvaluations")
    assert {(span, int(position)) for span, position in frame.index} == spans_with_documents(OTLP_FIXTURE)
