"""OpenInference spans (OTLP JSON, Phoenix's JSON Lines and Parquet exports) read into trace records.

The spans are made by the real OpenTelemetry SDK (tests/traces/fixtures/make_openinference.py); the Phoenix files
by Phoenix itself from the same spans (make_phoenix.py). Expected values come from the SDK's span objects and
from the tiny system they recorded (tiny_rag.py), never from the reader.
"""

from __future__ import annotations

import base64
import json

import pytest

from rageval.errors import DataError
from rageval.traces.readers import read_traces
from rageval.traces.records import RERANKED, RETRIEVED
from tests.traces.fixtures import make_openinference
from tests.traces.fixtures.tiny_rag import CORPUS, rerank, retrieve


@pytest.fixture(scope="module")
def spans():
    return make_openinference.build_spans()


def expected_traces(spans) -> dict:
    """Per trace id (hex), what the SDK recorded: question, span ids, documents, answer."""
    traces: dict = {}
    for span in spans:
        traces.setdefault(format(span.context.trace_id, "032x"), []).append(span)
    expected = {}
    for (question, with_reranker, with_llm, no_id, no_text), (trace_id, trace_spans) in zip(
            make_openinference.QUESTIONS, traces.items(), strict=True):
        by_name = {span.name: span for span in trace_spans}
        assert by_name["rag"].attributes["input.value"] == question
        ranked = retrieve(question)
        stages = {RETRIEVED: [("" if pid in no_id else pid, None if pid in no_text else CORPUS[pid], score)
                              for pid, score in ranked]}
        span_ids = {RETRIEVED: format(by_name["retrieve"].context.span_id, "016x")}
        if with_reranker:
            stages[RERANKED] = [("" if pid in no_id else pid, CORPUS[pid], score)
                                for pid, score in rerank(question, ranked)]
            span_ids[RERANKED] = format(by_name["rerank"].context.span_id, "016x")
        answer = by_name["llm"].attributes["output.value"] if with_llm else None
        expected[trace_id] = (question, stages, span_ids, answer)
    return expected


def as_expected(records) -> dict:
    return {record.trace_id: (record.question,
                              {stage: [(d.document_id, d.content, d.score) for d in docs]
                               for stage, docs in record.stages.items()},
                              record.span_ids, record.answer) for record in records}


@pytest.mark.parametrize("name", ["openinference_otlp.json", "phoenix_spans.jsonl", "phoenix_spans.parquet"])
def test_committed_files_read_into_what_the_sdk_recorded(spans, name):
    records = read_traces("openinference", [make_openinference.HERE / name])
    assert as_expected(records) == expected_traces(spans)


def test_spans_encoded_now_by_the_sdk_read_the_same(spans, tmp_path):
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(make_openinference.otlp_json(spans)))
    assert as_expected(read_traces("openinference", [path])) == expected_traces(spans)


def test_hex_ids_and_one_request_per_line(spans, tmp_path):
    """The OTLP spec writes ids in hex (protobuf's JSON mapping: base64); the Collector's file exporter writes one
    request per line. Both give the same traces."""
    request = make_openinference.otlp_json(spans)
    for resource in request["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    lines = [json.dumps({"resourceSpans": [{**resource, "scopeSpans": [{**scope, "spans": [span]}]}]})
             for resource in request["resourceSpans"] for scope in resource["scopeSpans"] for span in scope["spans"]]
    path = tmp_path / "spans.jsonl"
    path.write_text("\n".join(lines) + "\n")
    assert as_expected(read_traces("openinference", [path])) == expected_traces(spans)


def test_what_a_trace_lacks_is_kept_and_listed():
    records = {r.question: r for r in read_traces("openinference", [make_openinference.OTLP_JSON])}
    assert "retrieved[0].document_id" in records["What is the capital of Spain?"].missing
    assert "reranked[0].document_id" in records["What is the capital of Spain?"].missing
    assert "retrieved[0].content" in records["What is the capital of Italy?"].missing
    rhone = records["Which city lies on the Rhone?"]
    assert rhone.answer is None and "answer" in rhone.missing and len(rhone.stages[RETRIEVED]) == 3
    france = records["What is the capital of France?"]
    assert france.missing == ("gold_answers",)
    assert france.stages[RETRIEVED][0].metadata == {"source": "tiny-corpus"}


def test_answers_field_names_another_attribute(spans):
    """The root chain's ``output.value`` (written by the fixture with the LLM's answer), and an attribute no span
    has: an error naming the attributes the spans have (issue 38: it used to import with every answer missing)."""
    records = read_traces("openinference", [make_openinference.OTLP_JSON], answers_field="output.value")
    roots = {format(s.context.trace_id, "032x"): s.attributes.get("output.value") for s in spans if s.parent is None}
    assert {r.trace_id: r.answer for r in records} == roots
    with pytest.raises(DataError) as error:
        read_traces("openinference", [make_openinference.OTLP_JSON], answers_field="app.final_answer")
    assert "'app.final_answer'" in str(error.value) and "output.value" in str(error.value)



def test_a_json_input_gives_the_text_inside_it(spans, tmp_path):
    """Instrumented chains (LangChain's, LlamaIndex's) log the root input as JSON with ``input.mime_type``
    ``application/json``: the question is the text inside."""
    request = make_openinference.otlp_json(spans)
    for resource in request["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                if span["name"] != "rag":
                    continue
                for attribute in span["attributes"]:
                    if attribute["key"] == "input.value":
                        question = attribute["value"]["stringValue"]
                        attribute["value"] = {"stringValue": json.dumps({"question": question, "k": 3})}
                span["attributes"].append({"key": "input.mime_type", "value": {"stringValue": "application/json"}})
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(request))
    assert as_expected(read_traces("openinference", [path])) == expected_traces(spans)
