"""Broken traces raise one DataError naming the file, the line or span, and the field; the entry point refuses an
unknown format and a missing file. Each broken file is a fixture with one thing changed."""

from __future__ import annotations

import json

import pytest

from rageval.errors import DataError
from rageval.traces.readers import FORMATS, read_traces
from tests.traces.fixtures.make_langchain_traces import LANGFUSE, LANGSMITH
from tests.traces.fixtures.make_openinference import OTLP_JSON
from tests.traces.fixtures.make_phoenix import JSONL as PHOENIX_JSONL


def test_unknown_format_and_missing_file(tmp_path):
    with pytest.raises(ValueError, match="expected one of openinference, langfuse"):
        read_traces("arize", [OTLP_JSON])
    with pytest.raises(DataError, match="no such file"):
        read_traces("ragas", [tmp_path / "absent.jsonl"])
    assert FORMATS == ("openinference", "langfuse", "langsmith", "ragas", "trec-rag")


def test_otlp_score_that_is_not_a_number_names_the_span_and_attribute(tmp_path):
    request = json.loads(OTLP_JSON.read_text())
    span = request["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    for attribute in span["attributes"]:
        if attribute["key"] == "retrieval.documents.1.document.score":
            attribute["value"] = {"stringValue": "high"}
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(request))
    with pytest.raises(DataError) as raised:
        read_traces("openinference", [path])
    assert raised.value.record == "span 0000000000001002"
    assert raised.value.field == "retrieval.documents.1.document.score"
    assert str(path) in str(raised.value)


def test_otlp_span_without_an_id_names_where_it_is(tmp_path):
    request = json.loads(OTLP_JSON.read_text())
    del request["resourceSpans"][0]["scopeSpans"][0]["spans"][3]["spanId"]
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(request))
    with pytest.raises(DataError, match=r"field 'resourceSpans\[0\]\.scopeSpans\[0\]\.spans\[3\]\.spanId'"):
        read_traces("openinference", [path])


def test_phoenix_line_that_is_not_json_names_the_line(tmp_path):
    lines = PHOENIX_JSONL.read_text().splitlines()
    lines[2] = lines[2][:40]
    path = tmp_path / "spans.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match=r"spans\.jsonl, line 3: expected one JSON value per line"):
        read_traces("openinference", [path])


def test_phoenix_document_text_that_is_not_text_names_line_span_and_field(tmp_path):
    lines = [json.loads(line) for line in PHOENIX_JSONL.read_text().splitlines()]
    index = next(i for i, row in enumerate(lines) if row["span_kind"] == "RETRIEVER")
    lines[index]["attributes.retrieval.documents"][0]["document.content"] = ["not", "text"]
    path = tmp_path / "spans.jsonl"
    path.write_text("\n".join(json.dumps(row) for row in lines) + "\n")
    with pytest.raises(DataError) as raised:
        read_traces("openinference", [path])
    assert (raised.value.line, raised.value.field) == (index + 1, "retrieval.documents.0.document.content")
    assert raised.value.record == f"span {lines[index]['context.span_id']}"


def test_langsmith_run_without_a_type_names_line_and_field(tmp_path):
    lines = [json.loads(line) for line in LANGSMITH.read_text().splitlines()]
    del lines[4]["run_type"]
    path = tmp_path / "runs.jsonl"
    path.write_text("\n".join(json.dumps(run) for run in lines) + "\n")
    with pytest.raises(DataError) as raised:
        read_traces("langsmith", [path])
    assert (raised.value.line, raised.value.field, raised.value.record) == (5, "run_type", lines[4]["id"])


def test_langsmith_documents_that_are_not_a_list_name_the_run(tmp_path):
    lines = [json.loads(line) for line in LANGSMITH.read_text().splitlines()]
    index = next(i for i, run in enumerate(lines) if run["run_type"] == "retriever")
    lines[index]["outputs"] = {"documents": "Paris"}
    path = tmp_path / "runs.jsonl"
    path.write_text("\n".join(json.dumps(run) for run in lines) + "\n")
    with pytest.raises(DataError) as raised:
        read_traces("langsmith", [path])
    assert (raised.value.line, raised.value.record) == (index + 1, lines[index]["id"])
    assert "expected a list of documents" in str(raised.value)


def test_langfuse_observation_without_an_id_and_a_bad_score(tmp_path):
    export = json.loads(LANGFUSE.read_text())
    del export["data"][2]["id"]
    path = tmp_path / "observations.json"
    path.write_text(json.dumps(export))
    with pytest.raises(DataError, match=r"field 'id': expected the observation's id"):
        read_traces("langfuse", [path])
    export = json.loads(LANGFUSE.read_text())
    export["data"][0]["output"][1]["metadata"]["score"] = "very"
    path.write_text(json.dumps(export))
    with pytest.raises(DataError) as raised:
        read_traces("langfuse", [path])
    assert raised.value.record == export["data"][0]["id"] and raised.value.field == "output"
    assert "output[1].score" in str(raised.value)
