"""LangSmith runs and Langfuse observations read into trace records.

Both files were recorded by the libraries themselves around one LangChain chain (tests/traces/fixtures/
make_langchain_traces.py: langsmith's ``Run`` schema and serialiser; Langfuse's ``CallbackHandler`` and its API
model ``ObservationV2``). Expected values come from the system they recorded (tiny_rag.py) and from the raw
records (run and observation ids), never from the reader.
"""

from __future__ import annotations

import json

import pytest

from rageval.errors import DataError
from rageval.traces.readers import read_traces
from rageval.traces.records import RERANKED, RETRIEVED
from tests.traces.fixtures.make_langchain_traces import LANGFUSE, LANGSMITH, QUESTIONS
from tests.traces.fixtures.tiny_rag import CORPUS, answer, prompt, rerank, retrieve


def expected_by_question() -> dict:
    expected = {}
    for question, with_reranker, with_llm, no_id, no_text in QUESTIONS:
        ranked = retrieve(question)
        stages = {RETRIEVED: [("" if pid == no_id else pid, None if pid == no_text else CORPUS[pid], score)
                              for pid, score in ranked]}
        given = ranked
        if with_reranker:
            given = rerank(question, ranked)
            stages[RERANKED] = [(pid, CORPUS[pid], score) for pid, score in given]
        reply = answer(prompt(question, [pid for pid, _ in given])) if with_llm else None
        expected[question] = (stages, reply)
    return expected


def as_expected(records) -> dict:
    return {r.question: ({stage: [(d.document_id, d.content, d.score) for d in docs]
                          for stage, docs in r.stages.items()}, r.answer) for r in records}


def raw_langsmith() -> list[dict]:
    return [json.loads(line) for line in LANGSMITH.read_text().splitlines() if line.strip()]


def raw_langfuse() -> list[dict]:
    return json.loads(LANGFUSE.read_text())["data"]


def retriever_ids(raw: list[dict], trace_key: str, type_key: str, retriever: str) -> dict:
    """Per trace, the id of the base retriever (``retrieved``) and of the compression retriever (``reranked``)."""
    ids: dict = {}
    for item in raw:
        if item[type_key].lower() == retriever:
            stage = RERANKED if item["name"] == "ContextualCompressionRetriever" else RETRIEVED
            ids.setdefault(item[trace_key], {})[stage] = item["id"]
    return ids


def test_langsmith_runs_read_into_the_recorded_system():
    records = read_traces("langsmith", [LANGSMITH])
    assert as_expected(records) == expected_by_question()
    assert {r.trace_id: r.span_ids for r in records} == retriever_ids(raw_langsmith(), "trace_id", "run_type",
                                                                       "retriever")


def test_langfuse_observations_read_into_the_recorded_system():
    records = read_traces("langfuse", [LANGFUSE])
    assert as_expected(records) == expected_by_question()
    assert {r.trace_id: r.span_ids for r in records} == retriever_ids(raw_langfuse(), "traceId", "type",
                                                                       "retriever")


def test_langfuse_traces_with_their_observations_read_the_same(tmp_path):
    """The other shape of Langfuse's API (a trace with ``observations``), built from the same observations: the
    trace's input and output are its root observation's, as Langfuse's LangChain handler sets them."""
    traces: dict = {}
    for observation in raw_langfuse():
        traces.setdefault(observation["traceId"], []).append(observation)
    lines = []
    for trace_id, observations in traces.items():
        root = next(o for o in observations if o.get("parentObservationId") is None)
        lines.append(json.dumps({"id": trace_id, "input": root.get("input"), "output": root.get("output"),
                                 "observations": observations}))
    path = tmp_path / "traces.jsonl"
    path.write_text("\n".join(lines) + "\n")
    assert as_expected(read_traces("langfuse", [path])) == expected_by_question()


@pytest.mark.parametrize("format_name, path", [("langsmith", LANGSMITH), ("langfuse", LANGFUSE)])
def test_what_a_trace_lacks_is_kept_and_listed(format_name, path):
    records = {r.question: r for r in read_traces(format_name, [path])}
    assert records["What is the capital of Germany?"].missing == ("retrieved[0].document_id", "gold_answers")
    assert records["What is the capital of Spain?"].missing == ("retrieved[0].content", "gold_answers")
    assert records["Which city lies on the Rhone?"].missing == ("answer", "gold_answers")


def test_answers_field_is_a_path_into_the_root_run():
    """LangSmith's root run keeps the chain's answer under ``outputs.output``; a path no run has (a typo) is an
    error naming the fields the root runs have (issue 38: it used to import with every answer missing, exit 0)."""
    roots = {line["trace_id"]: line["outputs"].get("output") for line in raw_langsmith()
             if line.get("parent_run_id") is None}
    records = read_traces("langsmith", [LANGSMITH], answers_field="outputs.output")
    answers = {r.trace_id: r.answer for r in records}
    assert answers == {trace: value if isinstance(value, str) else None for trace, value in roots.items()}
    with pytest.raises(DataError) as error:
        read_traces("langsmith", [LANGSMITH], answers_field="outputs.nothing")
    assert "'outputs.nothing'" in str(error.value) and "fields there: outputs.output" in str(error.value)


def test_a_langfuse_trace_without_observations_keeps_its_input_and_output(tmp_path):
    """A trace exported without observations still has a question and an answer; it lacks the retrieval."""
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"id": "t1", "input": {"question": "What is the capital of France?"},
                                "output": "Paris", "observations": []}))
    (record,) = read_traces("langfuse", [path])
    assert (record.question, record.answer, record.stages) == ("What is the capital of France?", "Paris", {})
    assert record.missing == ("retrieved", "gold_answers") and record.source.startswith(str(path))


def test_langsmith_runs_without_trace_ids_join_their_roots_trace(tmp_path):
    """Older exports carry no ``trace_id``: a run belongs to the trace of its root (walked up ``parent_run_id``),
    named by the root's id, which is the trace id LangSmith gives it."""
    runs = raw_langsmith()
    path = tmp_path / "runs.json"
    path.write_text(json.dumps([{key: value for key, value in run.items() if key != "trace_id"} for run in runs]))
    records = read_traces("langsmith", [path])
    assert as_expected(records) == expected_by_question()
    assert [r.trace_id for r in records] == [r.trace_id for r in read_traces("langsmith", [LANGSMITH])]
