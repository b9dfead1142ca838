"""Traces -> a run file (rageval.traces.importer): content-hash ids, corpus lookups and what is missing, stages kept
apart, atomic writes, one clear error per bad trace."""

from __future__ import annotations

import hashlib
import json
import math

import pytest

from rageval.errors import DataError
from rageval.store import RunReader, read_run
from rageval.text_metrics import exact_match
from rageval.traces.importer import HASH_PREFIX, MISSING_TEXT, content_id, import_traces
from rageval.traces.records import RERANKED, RETRIEVED, TraceRecord
from tests.traces.trace_fixtures import BERLIN, LYON, PARIS, doc, two_stage_records


def test_content_id_is_sha1_of_the_whitespace_normalised_text():
    assert content_id(PARIS) == HASH_PREFIX + hashlib.sha1(PARIS.encode()).hexdigest()
    assert content_id("  Paris is\n the capital\tand largest city of France.  ") == content_id(PARIS)
    assert content_id(PARIS.lower()) != content_id(PARIS)  # case is kept


def test_the_same_text_gets_the_same_id_across_traces_and_imports(tmp_path):
    first = [TraceRecord("a", "q?", {RETRIEVED: [doc(0, PARIS), doc(1, LYON)]}, source="a.jsonl, line 1"),
             TraceRecord("b", "q?", {RETRIEVED: [doc(0, " " + LYON + "\n"), doc(1, PARIS)]}, source="a.jsonl, line 2")]
    second = [TraceRecord("c", "q?", {RETRIEVED: [doc(0, PARIS)]}, source="b.jsonl, line 1")]
    report = import_traces(first, tmp_path / "one.sqlite", format_name="ragas")
    import_traces(second, tmp_path / "two.sqlite", format_name="ragas")
    one, two = read_run(tmp_path / "one.sqlite"), read_run(tmp_path / "two.sqlite")
    rankings = {r.query_id: r.passage_ids for r in one.rankings}
    assert rankings["a"] == (content_id(PARIS), content_id(LYON))
    assert rankings["b"] == (content_id(LYON), content_id(PARIS))  # the same ids in the other trace
    assert two.rankings[0].passage_ids == (content_id(PARIS),)  # and in another import
    assert len(one.passages) == 2 and report.hashed_ids == 2


def test_documents_without_text_come_from_the_corpus_or_are_counted_missing(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps({"passage_id": "d-berlin", "title": "Berlin", "text": BERLIN}) + "\n")
    records = [TraceRecord("q1", "What is the capital of Germany?",
                           {RETRIEVED: [doc(0, None, "d-berlin"), doc(1, None, "d-gone"), doc(2, PARIS, "d-paris")]},
                           answer="Berlin", source="t.jsonl, line 1"),
               TraceRecord("q2", "And of France?", {RETRIEVED: [doc(0, None, "d-gone")]}, source="t.jsonl, line 2")]
    report = import_traces(records, tmp_path / "run.sqlite", format_name="openinference", corpus=corpus)
    run = read_run(tmp_path / "run.sqlite")
    passages = {p.passage_id: p for p in run.passages}
    assert passages["d-berlin"].text == BERLIN and passages["d-paris"].text == PARIS
    assert passages["d-gone"].text == "" and passages["d-gone"].source == MISSING_TEXT
    assert report.texts_from_corpus == 1
    # d-gone is missing in two traces: two (trace, document) pairs; q2 has no answer; neither has gold answers.
    assert report.missing == {"document_text": 2, "answer": 1, "gold_answers": 2}
    assert run.settings["missing"] == report.missing
    assert [r.passage_ids for r in run.rankings] == [("d-berlin", "d-gone", "d-paris"), ("d-gone",)]  # kept


def test_two_stages_are_kept_apart_and_the_answer_is_stored_at_the_systems_k(tmp_path):
    records = two_stage_records()
    import_traces(records, tmp_path / "run.sqlite", format_name="openinference")
    run = read_run(tmp_path / "run.sqlite")
    for record in records:
        main = next(r for r in run.rankings if r.query_id == record.trace_id)
        assert main.passage_ids == tuple(content_id(d.content) for d in record.stages[RERANKED])
        for stage, documents in record.stages.items():
            kept = sorted((t for t in run.trace_rankings if t.query_id == record.trace_id and t.stage == stage),
                          key=lambda t: t.rank)
            assert [(t.passage_id, t.score, t.span_id) for t in kept] == [
                (content_id(d.content), d.score, record.span_ids[stage]) for d in documents]
    e2e = {o.query_id: o for o in run.e2e_outputs}
    assert {(q, o.k, o.output) for q, o in e2e.items()} == {(r.trace_id, 2, r.answer) for r in records}
    assert [e2e[r.trace_id].score for r in records] == [exact_match(r.answer, r.gold_answers) for r in records]
    assert run.settings["k"] == 2 and run.settings["e2e_answers"] == "imported"
    with RunReader(tmp_path / "run.sqlite") as reader:
        assert reader.trace_stages() == [RERANKED, RETRIEVED]
        assert reader.main_k() == 2


def test_qrels_add_gold_labels_and_gold_passages(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps({"passage_id": "rome", "title": "", "text": "Rome is the capital of Italy."}) + "\n")
    qrels = tmp_path / "qrels.txt"
    paris = content_id(PARIS)
    qrels.write_text(f"q-france 0 {paris} 1\nq-germany 0 {content_id(BERLIN)} 1\nq-italy 0 rome 1\n"
                     "q-elsewhere 0 rome 1\n")
    import_traces(two_stage_records(), tmp_path / "run.sqlite", format_name="openinference", corpus=corpus,
                  qrels=qrels)
    run = read_run(tmp_path / "run.sqlite")
    assert {(x.query_id, x.passage_id) for x in run.labels if x.method == "qrels"} == {
        ("q-france", paris), ("q-germany", content_id(BERLIN)), ("q-italy", "rome")}
    assert {q.query_id: q.gold_passage_ids for q in run.queries}["q-italy"] == ("rome",)
    assert run.settings["missing"]["qrels_queries_not_imported"] == 1
    # Measures on the main (reranked) ranking: P@1 of q-france is 1 (Paris reranked first), of q-germany 0.
    values = {(m.measure, m.query_id): m.value for m in run.measure_values if m.method == "qrels"}
    assert values[("P@1", "q-france")] == 1.0 and values[("P@1", "q-germany")] == 0.0


def test_a_failed_import_writes_nothing_and_leaves_an_earlier_file(tmp_path):
    out = tmp_path / "run.sqlite"
    bad = two_stage_records()
    bad.append(TraceRecord("q-france", "again?", {RETRIEVED: [doc(0, PARIS)]}, source="traces.jsonl, line 9"))
    with pytest.raises(DataError) as raised:
        import_traces(bad, out, format_name="openinference")
    assert str(raised.value).startswith("traces.jsonl, line 9, record 'q-france', field 'trace_id': ")
    assert "also at traces.jsonl, line 1" in str(raised.value)
    assert list(tmp_path.iterdir()) == []
    import_traces(two_stage_records()[:1], out, format_name="openinference")
    before = out.read_bytes()
    with pytest.raises(DataError):
        import_traces(bad, out, format_name="openinference")
    assert out.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["run.sqlite"]


@pytest.mark.parametrize(("record", "field"), [
    (TraceRecord("", "q?", {RETRIEVED: [doc(0, PARIS)]}, source="spans.json, span 7"), "trace_id"),
    (TraceRecord("t", "q?", {"rewritten": [doc(0, PARIS)]}, source="spans.json, span 7"), "stages"),
    (TraceRecord("t", "q?", {RETRIEVED: [doc(0, PARIS), doc(0, LYON)]}, source="spans.json, span 7"),
     "stages.retrieved.position"),
])
def test_a_bad_trace_is_one_error_naming_its_source_and_field(tmp_path, record, field):
    with pytest.raises(DataError) as raised:
        import_traces([record], tmp_path / "run.sqlite", format_name="openinference")
    assert str(raised.value).startswith("spans.json, span 7, ") and f"field {field!r}" in str(raised.value)
    assert not (tmp_path / "run.sqlite").exists()


def test_an_answer_without_gold_answers_is_stored_unscored(tmp_path):
    records = [TraceRecord("t", "Capital of France?", {RETRIEVED: [doc(0, PARIS, "p")]}, answer="Paris",
                           source="x, line 1")]
    import_traces(records, tmp_path / "run.sqlite", format_name="langfuse")
    with RunReader(tmp_path / "run.sqlite") as reader:
        e2e = reader.e2e_output("t", 1)
        assert e2e is not None and e2e.output == "Paris" and math.isnan(e2e.score)
        assert reader.settings()["missing"] == {"gold_answers": 1}
