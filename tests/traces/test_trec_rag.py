"""TREC RAG 2024/2025 topics, runs and answers read into trace records. No library writes these files: the
fixtures follow the track guidelines (sources named in tests/traces/fixtures/make_trec_rag.py) and the expected
values come from that module's dicts."""

from __future__ import annotations

import pytest

from rageval.errors import DataError
from rageval.traces.readers import read_traces
from rageval.traces.records import RERANKED, RETRIEVED
from rageval.trec import read_trec_run
from tests.traces.fixtures import make_trec_rag as trec


def cited(line: dict) -> tuple:
    references = line["references"]
    return tuple((s["text"], tuple(references[i] for i in s["citations"])) for s in line["answer"])


def test_topics_run_and_answers_2024():
    records = read_traces("trec-rag", [trec.TOPICS_2024, trec.RUN, trec.ANSWERS_2024])
    answers = {line["topic_id"]: line for line in trec.answers_2024()}
    run = read_trec_run(trec.RUN)
    assert [r.trace_id for r in records] == ["101", "102", "103"]
    for record in records:
        assert record.question == trec.TOPICS[record.trace_id]
        ranking = run[run["query_id"] == record.trace_id].sort_values("score", ascending=False, kind="stable")
        assert [(d.document_id, d.score) for d in record.stages[RETRIEVED]] == list(
            zip(ranking["passage_id"].astype(str), ranking["score"], strict=True))
        assert all(d.content is None for d in record.stages[RETRIEVED])
        line = answers.get(record.trace_id)
        if line is None:
            assert record.answer is None and record.citations == () and "answer" in record.missing
            continue
        assert record.answer == " ".join(s["text"] for s in line["answer"])
        assert record.citations == cited(line)
        top = [d.document_id for d in record.stages[RETRIEVED][:len(line["references"])]]
        if top == line["references"]:
            assert RERANKED not in record.stages
        else:  # topic 102: the generator was given the references in its own order
            assert [d.document_id for d in record.stages[RERANKED]] == line["references"]
    assert RERANKED in records[1].stages


def test_answers_2025_without_a_run_keep_references_as_the_ranking():
    records = read_traces("trec-rag", [trec.TOPICS_2025, trec.ANSWERS_2025])
    lines = trec.answers_2025()
    assert [r.trace_id for r in records] == [line["metadata"]["narrative_id"] for line in lines]
    for record, line in zip(records, lines, strict=True):
        assert record.question == line["metadata"]["narrative"]
        assert [d.document_id for d in record.stages[RETRIEVED]] == line["references"]
        assert record.citations == tuple((s["text"], tuple(s["citations"])) for s in line["answer"])
        assert record.missing == ("retrieved[0].content", "retrieved[1].content", "gold_answers")


def test_a_run_alone_gives_rankings_and_topics_give_questions():
    alone = read_traces("trec-rag", [trec.RUN])
    assert all(r.question == "" and "question" in r.missing for r in alone)
    with_topics = read_traces("trec-rag", [trec.TOPICS_2025, trec.RUN])
    assert {r.trace_id: r.question for r in with_topics} == trec.TOPICS


def test_a_citation_outside_the_references_names_line_and_field(tmp_path):
    path = tmp_path / "answers.jsonl"
    path.write_text(trec.ANSWERS_2024.read_text().replace('"citations": [1, 0]', '"citations": [2]', 2))
    with pytest.raises(DataError) as raised:
        read_traces("trec-rag", [path])
    assert (raised.value.line, raised.value.field) == (1, "answer[1].citations")
    assert "not an index into the 2 references" in str(raised.value)


def test_a_broken_run_line_is_reported_by_the_trec_reader(tmp_path):
    path = tmp_path / "run.tsv"
    path.write_text(trec.RUN.read_text().replace("\t4.0\t", "\tfour\t", 1))
    with pytest.raises(DataError, match=r"line 2"):
        read_traces("trec-rag", [path])
