"""TREC RAG answers with cited segments -> attributed answers for the Citations page: the import writes
``<run>.citations.jsonl`` beside the run, which ``rageval evaluate-citations``' own reader and scorer take as they
are (rageval.attribution.user_answers; the containment checker of tests/attribution_fixtures.py stands in for NLI)."""

from __future__ import annotations

import json

from rageval.attribution.user_answers import evaluate_citations, read_user_answers
from rageval.store.attribution import AttributionReader
from rageval.traces.importer import import_traces
from rageval.traces.records import RETRIEVED, TraceRecord
from tests.attribution_fixtures import ContainmentNli
from tests.traces.trace_fixtures import BERLIN, HAMBURG, PARIS, doc

PARIS_SENTENCE = "Paris is the capital and largest city of France."
BERLIN_SENTENCE = "Berlin is the capital of Germany."


def cited_records() -> list[TraceRecord]:
    """One TREC RAG answer of two sentences: the first cites the second segment of the list (Paris), the second
    cites a segment the list lacks (Berlin, found in no list: appended to the passages) and one the run does not
    have at all (dropped and counted)."""
    return [TraceRecord("2024-145", "Name two European capitals.",
                        {RETRIEVED: [doc(0, HAMBURG, "msmarco_v2.1_doc_1#0"), doc(1, PARIS, "msmarco_v2.1_doc_2#3")]},
                        answer=f"{PARIS_SENTENCE} {BERLIN_SENTENCE}",
                        citations=((PARIS_SENTENCE, ("msmarco_v2.1_doc_2#3",)),
                                   (BERLIN_SENTENCE, ("msmarco_v2.1_doc_9#1", "msmarco_v2.1_doc_404#0"))),
                        source="run.jsonl, line 1")]


def test_cited_answers_become_evaluate_citations_input_and_score(tmp_path, corpus):
    corpus_file = tmp_path / "segments.jsonl"
    corpus_file.write_text(json.dumps({"passage_id": "msmarco_v2.1_doc_9#1", "title": "Berlin", "text": BERLIN})
                           + "\n")
    out = tmp_path / "rag.sqlite"
    report = import_traces(cited_records(), out, format_name="trec-rag", corpus=corpus_file)
    assert report.citations_file == tmp_path / "rag.citations.jsonl" and report.attributed_answers == 1
    assert report.missing["cited_documents_unknown"] == 1
    [answer] = read_user_answers(report.citations_file)
    assert [p.passage_id for p in answer.passages] == [
        "msmarco_v2.1_doc_1#0", "msmarco_v2.1_doc_2#3", "msmarco_v2.1_doc_9#1"]
    assert answer.answer == f"{PARIS_SENTENCE} [2] {BERLIN_SENTENCE} [3]"
    from rageval.attribution.statements import sentence_tokenizer

    scored = evaluate_citations(report.citations_file, tmp_path / "attribution" / "rag.sqlite", ContainmentNli(),
                                tokenizer=sentence_tokenizer(corpus), bertscore=False, log=lambda m: None)
    with AttributionReader(scored) as reader:
        statements = reader.frame("statements")
        metrics = reader.frame("answer_metrics").set_index("metric")["value"]
    assert [json.loads(c) for c in statements.sort_values("statement")["citations"]] == [[2], [3]]
    assert metrics["autoais_cit"] == 1.0  # each statement is its cited passage's own sentence
