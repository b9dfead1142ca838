"""Property-based tests of the span readers (issue 38): generated span trees with nesting, missing document ids,
lists of different lengths, lists cut by an attribute limit, files given twice and ids reused with other content.
Whatever the tree, a reader never merges two spans' or two traces' content into one record, and never renumbers a
list: each stage is exactly one span's documents at the positions that span gave them.

The generators write the formats' own shapes (OTLP JSON with OpenInference attribute names; LangSmith ``Run``
records); the expected values are the generated trees themselves.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rageval.errors import DataError
from rageval.traces.readers import read_traces
from rageval.traces.records import RERANKED, RETRIEVED

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
WORDS = st.text(alphabet="abcdefghij XYZ", min_size=1, max_size=10).filter(lambda text: text.strip() != "")
DOCUMENT_IDS = st.sampled_from([f"d{i}" for i in range(6)])
KINDS = ("RETRIEVER", "LLM", "CHAIN", "RERANKER")
MISSING_PARENT = "00000000deadbeef"


@dataclass
class Doc:
    number: int                 # N of retrieval.documents.N
    document_id: str | None     # None: the span gives no id
    content: str | None         # None: the span gives no text
    score: float | None


@dataclass
class GenSpan:
    span_id: str
    trace_id: str
    parent: str | None
    kind: str
    start: int
    name: str
    docs: list[Doc] = field(default_factory=list)  # the documents the file still holds
    dropped: int = 0
    write_kind: bool = True
    answer: str | None = None


@st.composite
def documents(draw):
    """A list of documents of any length; ids may be missing (then text is there) or repeated."""
    docs = []
    for number in range(draw(st.integers(0, 7))):
        document_id = draw(st.none() | DOCUMENT_IDS)
        content = draw(WORDS) if document_id is None else draw(st.none() | WORDS)
        score = draw(st.none() | st.floats(-5, 5, allow_nan=False).map(lambda x: round(x, 3)))
        docs.append(Doc(number, document_id, content, score))
    return docs


@st.composite
def span_trees(draw):
    """1-3 traces, each a tree of 1-7 spans (nested retrievers and orphans included), some lists cut as the SDK cuts
    them: the first documents gone, ``droppedAttributesCount`` set, sometimes the kind attribute gone too."""
    spans: list[GenSpan] = []
    counter = 0
    for t in range(draw(st.integers(1, 3))):
        trace_id = f"{0xABC0 + t:032x}"
        trace: list[GenSpan] = []
        for i in range(draw(st.integers(1, 7))):
            counter += 1
            kind = "CHAIN" if i == 0 else draw(st.sampled_from(KINDS))
            # a parent the file lacks (an export that missed a span) makes an orphan
            parent = None if i == 0 else draw(st.sampled_from([s.span_id for s in trace] + [MISSING_PARENT]))
            span = GenSpan(f"{counter:016x}", trace_id, parent, kind, 1000 * t + i, f"span{counter}")
            if kind in ("RETRIEVER", "RERANKER"):
                docs = draw(documents())
                cut = draw(st.integers(0, len(docs))) if docs and draw(st.booleans()) else 0
                span.docs, span.dropped = docs[cut:], 4 * cut + (1 if cut else 0)
                span.write_kind = not (cut and span.docs and draw(st.booleans()))
            elif kind == "LLM":
                span.answer = draw(WORDS)
            trace.append(span)
        spans.extend(trace)
    return spans


def otlp(spans: list[GenSpan]) -> dict:
    def value(item):
        if isinstance(item, str):
            return {"stringValue": item}
        return {"doubleValue": item}

    out = []
    for span in spans:
        attributes = []
        prefix = "reranker.output_documents" if span.kind == "RERANKER" else "retrieval.documents"
        for doc in span.docs:
            for key, item in (("id", doc.document_id), ("content", doc.content), ("score", doc.score)):
                if item is not None:
                    attributes.append({"key": f"{prefix}.{doc.number}.document.{key}", "value": value(item)})
        if span.answer is not None:
            attributes.append({"key": "llm.output_messages.0.message.content", "value": value(span.answer)})
        if span.write_kind:
            attributes.append({"key": "openinference.span.kind", "value": value(span.kind)})
        raw = {"traceId": span.trace_id, "spanId": span.span_id, "name": span.name,
               "startTimeUnixNano": str(span.start), "attributes": attributes}
        if span.parent:
            raw["parentSpanId"] = span.parent
        if span.dropped:
            raw["droppedAttributesCount"] = span.dropped
        out.append(raw)
    return {"resourceSpans": [{"scopeSpans": [{"spans": out}]}]}


def expected_stages(trace: list[GenSpan]) -> dict[str, GenSpan]:
    """The spans each stage must come from: the outermost first retriever, the first retriever inside it (then
    retrieved = inner, reranked = outer), a reranker span before a nested outer retriever."""
    by_id = {span.span_id: span for span in trace}

    def ancestors(span):
        found = []
        while span.parent in by_id:
            span = by_id[span.parent]
            found.append(span)
        return found

    retrievers = [s for s in trace if s.kind == "RETRIEVER"]
    outer = next((s for s in retrievers if not any(a.kind == "RETRIEVER" for a in ancestors(s))), None)
    inner = next((s for s in retrievers if outer is not None and outer in ancestors(s)), None)
    reranker = next((s for s in trace if s.kind == "RERANKER"), None)
    stages = {}
    if inner or outer:
        stages[RETRIEVED] = inner or outer
    if reranker or (inner and outer):
        stages[RERANKED] = reranker or outer
    return stages


def write(tmp_path, name, request) -> object:
    path = tmp_path / name
    path.write_text(json.dumps(request))
    return path


@SETTINGS
@given(spans=span_trees())
def test_each_stage_is_one_span_s_documents_at_its_own_positions(tmp_path_factory, spans):
    path = write(tmp_path_factory.mktemp("otlp"), "spans.json", otlp(spans))
    records = {record.trace_id: record for record in read_traces("openinference", [path])}
    traces: dict[str, list[GenSpan]] = {}
    for span in spans:
        traces.setdefault(span.trace_id, []).append(span)
    assert list(records) == list(traces)
    for trace_id, trace in traces.items():
        record = records[trace_id]
        stages = expected_stages(trace)
        assert record.span_ids == {stage: span.span_id for stage, span in stages.items()}
        for stage, span in stages.items():
            got = [(d.document_id, d.content, d.score, d.position) for d in record.stages[stage]]
            # a cut list keeps the numbers the span gave; a whole list is numbered 0, 1, 2 ... as Phoenix does
            want = [(doc.document_id or "", doc.content, doc.score, doc.number if span.dropped else place)
                    for place, doc in enumerate(span.docs)]
            assert got == want
            assert (record.cut.get(stage) == span.dropped) if span.dropped else stage not in record.cut
        answers = [span.answer for span in trace if span.answer is not None]
        assert record.answer == (answers[-1] if answers else None)  # this trace's last LLM, never another's


@SETTINGS
@given(spans=span_trees())
def test_a_file_given_twice_is_read_once(tmp_path_factory, spans):
    folder = tmp_path_factory.mktemp("twice")
    one, two = write(folder, "a.json", otlp(spans)), write(folder, "b.json", otlp(spans))
    assert read_traces("openinference", [one, two]) == read_traces("openinference", [one])


@SETTINGS
@given(spans=span_trees(), data=st.data())
def test_one_span_id_with_other_content_is_refused_naming_both_files(tmp_path_factory, spans, data):
    folder = tmp_path_factory.mktemp("conflict")
    changed = [GenSpan(**{**vars(span)}) for span in spans]
    target = data.draw(st.sampled_from(changed))
    if target.docs and data.draw(st.booleans()):  # the same documents in another order
        numbers = [doc.number for doc in target.docs]
        before = [(d.document_id, d.content, d.score) for d in target.docs]
        target.docs = [Doc(n, d.document_id, d.content, d.score) for n, d in zip(numbers, reversed(target.docs))]
        if [(d.document_id, d.content, d.score) for d in target.docs] == before:
            target.name += "!"  # a list that reads the same reversed: change something else
    elif target.answer is not None:
        target.answer += "!"
    else:
        target.name += "!"
    one, two = write(folder, "a.json", otlp(spans)), write(folder, "b.json", otlp(changed))
    with pytest.raises(DataError) as raised:
        read_traces("openinference", [one, two])
    message = str(raised.value)
    assert str(one) in message and str(two) in message and target.span_id in message


# ---- LangSmith runs


@st.composite
def langsmith_traces(draw):
    """1-4 traces of LangSmith runs: a root chain with a question, a retriever (a compression retriever around a
    base retriever, sometimes), an LLM with the answer (sometimes); lists of any length, ids sometimes missing;
    a child run sometimes without its ``trace_id`` (it joins its parent's trace)."""
    traces = []
    counter = 0

    def new_id():  # unique in the file (the low bits count), random otherwise
        nonlocal counter
        counter += 1
        return str(uuid.UUID(int=(draw(st.integers(0, 2**64 - 1)) << 64) | counter))

    for t in range(draw(st.integers(1, 4))):
        root = new_id()
        question = f"question {t} " + draw(WORDS)
        runs = [{"id": root, "trace_id": root, "run_type": "chain", "start_time": f"2026-01-01T00:0{t}:00",
                 "inputs": {"question": question}, "outputs": {}}]
        nested = draw(st.booleans())
        parent = root
        for depth in range(2 if nested else 1):
            run_id = new_id()
            docs = [{"page_content": f"t{t} {d.content or d.document_id}", "metadata": {
                     **({"id": d.document_id} if d.document_id else {}),
                     **({"score": d.score} if d.score is not None else {})}} for d in draw(documents())]
            runs.append({"id": run_id, "trace_id": root, "parent_run_id": parent, "run_type": "retriever",
                         "start_time": f"2026-01-01T00:0{t}:0{depth + 1}", "inputs": {"query": question},
                         "outputs": {"documents": docs}})
            parent = run_id
        answer = draw(st.none() | WORDS)
        if answer is not None:
            runs.append({"id": new_id(), "trace_id": root,
                         "parent_run_id": root, "run_type": "llm", "start_time": f"2026-01-01T00:0{t}:09",
                         "inputs": {}, "outputs": {"generations": [[{"text": answer}]]}})
        for run in runs[1:]:
            if draw(st.booleans()):
                del run["trace_id"]
        traces.append((question, answer, runs))
    return traces


def write_runs(folder, name, runs):
    path = folder / name
    path.write_text("".join(json.dumps(run) + "\n" for run in runs))
    return path


@SETTINGS
@given(traces=langsmith_traces())
def test_langsmith_records_hold_only_their_own_trace_s_runs(tmp_path_factory, traces):
    folder = tmp_path_factory.mktemp("langsmith")
    ids = [runs[0]["id"] for _, _, runs in traces]
    path = write_runs(folder, "runs.jsonl", [run for _, _, runs in traces for run in runs])
    records = read_traces("langsmith", [path])
    assert [r.trace_id for r in records] == ids
    for record, (question, answer, runs) in zip(records, traces):
        retrievers = [run for run in runs if run["run_type"] == "retriever"]
        assert record.question == question and record.answer == answer
        assert record.span_ids[RETRIEVED] == retrievers[-1]["id"]  # the innermost retriever
        if len(retrievers) == 2:
            assert record.span_ids[RERANKED] == retrievers[0]["id"]
        for stage, run_id in record.span_ids.items():
            run = next(run for run in runs if run["id"] == run_id)
            assert [d.content for d in record.stages[stage]] == [d["page_content"] for d in run["outputs"]["documents"]]
            assert [d.position for d in record.stages[stage]] == list(range(len(run["outputs"]["documents"])))
        assert twice_is_once(folder, path)


def twice_is_once(folder, path):
    copy = folder / "copy.jsonl"
    copy.write_text(path.read_text())
    return read_traces("langsmith", [path, copy]) == read_traces("langsmith", [path])


@SETTINGS
@given(traces=langsmith_traces().filter(lambda traces: len(traces) >= 2))
def test_two_langsmith_traces_under_one_trace_id_are_refused(tmp_path_factory, traces):
    folder = tmp_path_factory.mktemp("chimera")
    first_root = traces[0][2][0]["id"]
    merged = []
    for _, _, runs in traces:
        for run in runs:
            if "trace_id" in run or run is runs[0]:
                run = {**run, "trace_id": first_root}
            merged.append(run)
    path = write_runs(folder, "runs.jsonl", merged)
    with pytest.raises(DataError, match=f"trace {first_root} has a second root run"):
        read_traces("langsmith", [path])
