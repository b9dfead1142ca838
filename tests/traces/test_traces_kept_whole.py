"""What a team traced stays as traced (issue 38, items 3, 5, 6, 7, 8, 10): two traces under one id are never
merged, Langfuse's v2 strings are read, LangChain's compression retriever traced by OpenInference keeps both stages,
a reranked list keeps its reranker's scores, a list the OpenTelemetry SDK cut keeps its positions and says so, and
the messages name the real problem.

The files are those :mod:`tests.traces.fixtures.make_langchain_rerank` recorded with the libraries themselves
(langchain-core 1.8.3, langsmith 0.15.1, langfuse 5.2.0, openinference-instrumentation-langchain 0.1.80,
opentelemetry-sdk 1.45.2); every expected value comes from that script's own ``retrieve`` / ``rerank`` / ``reply``
or from the file's raw JSON, never from the reader.
"""

from __future__ import annotations

import base64
import gzip
import json
import re
import shutil

import pandas as pd
import pytest

import rageval
from rageval.cli import main
from rageval.errors import DataError
from rageval.store import RunReader
from rageval.traces.importer import import_files
from rageval.traces.readers import read_traces
from rageval.traces.records import RERANKED, RETRIEVED
from tests.traces.fixtures import make_langchain_rerank as fixture


def raw_lines(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def otlp_spans(request):
    return [span for resource in request["resourceSpans"] for scope in resource["scopeSpans"]
            for span in scope["spans"]]


def hex_id(value):
    return base64.b64decode(value).hex()


# ---- 3. two traces under one id are never merged


def test_langsmith_two_questions_under_one_trace_id_are_refused_naming_both_places(tmp_path, capsys):
    """Before: question 1 + its documents + question 2's answer, exit 0. After: one line naming both root runs."""
    runs = raw_lines(fixture.LANGSMITH)
    roots = [run for run in runs if not run.get("parent_run_id")]
    first, second = roots[0], roots[1]
    old, new = second["trace_id"], first["trace_id"]
    for run in runs:  # every run of the second question now under the first one's trace id
        if run["trace_id"] == old:
            run["trace_id"] = new
    path = tmp_path / "runs.jsonl"
    path.write_text("\n".join(json.dumps(run) for run in runs) + "\n")
    with pytest.raises(DataError) as raised:
        read_traces("langsmith", [path])
    message = str(raised.value)
    first_line = 1 + runs.index(first)
    second_line = 1 + runs.index(second)
    assert f"line {first_line}" in message and f"line {second_line}" in message
    assert first["id"] in message and second["id"] in message and "not merged" in message
    out = tmp_path / "runs_out" / "chimera.sqlite"
    assert main(["import", "langsmith", str(path), "--out", str(out)]) == 2
    assert capsys.readouterr().err.count("\n") == 1 and not out.exists()


def test_an_identical_copy_counts_once_in_every_span_format(tmp_path):
    """A file given twice (or overlapping exports) is the same traces, not twice as many or a refusal."""
    for format_name, path in (("langsmith", fixture.LANGSMITH), ("openinference", fixture.OI_OTLP),
                              ("langfuse", fixture.LANGFUSE_V2)):
        copy = tmp_path / f"copy-{path.name}"
        shutil.copy(path, copy)
        assert read_traces(format_name, [path, copy]) == read_traces(format_name, [path])


def test_two_otlp_files_with_one_span_id_and_other_content_are_refused(tmp_path):
    """Before: the answer of one file and the documents of the other. After: one line naming both files."""
    request = json.loads(fixture.OI_OTLP.read_text())
    other = json.loads(fixture.OI_OTLP.read_text())
    changed = next(span for span in otlp_spans(other) if span["name"] == "WordRetriever")
    documents = [a for a in changed["attributes"] if a["key"].startswith("retrieval.documents.")]
    numbers = sorted({int(a["key"].split(".")[2]) for a in documents})
    for attribute in documents:  # the same documents in the reverse order
        n = int(attribute["key"].split(".")[2])
        attribute["key"] = re.sub(r"^retrieval\.documents\.\d+\.", f"retrieval.documents.{numbers[-1] - n}.",
                                  attribute["key"])
    one, two = tmp_path / "a.json", tmp_path / "b.json"
    one.write_text(json.dumps(request))
    two.write_text(json.dumps(other))
    with pytest.raises(DataError) as raised:
        read_traces("openinference", [one, two])
    message = str(raised.value)
    assert str(one) in message and str(two) in message and hex_id(changed["spanId"]) in message
    assert "retrieval.documents" in message and "not merged" in message


def test_langfuse_one_observation_id_with_another_answer_is_refused(tmp_path):
    response = json.loads(fixture.LANGFUSE_V2.read_text())
    generation = next(o for o in response["data"] if o["type"] == "GENERATION")
    altered = dict(generation, output=json.dumps({"role": "assistant", "content": "Lyon"}))
    path = tmp_path / "more.json"
    path.write_text(json.dumps({"data": [altered]}))
    with pytest.raises(DataError, match=f"observation {generation['id']} .*also at .*not merged"):
        read_traces("langfuse", [fixture.LANGFUSE_V2, path])


# ---- 5. Langfuse v2 observations (raw strings)


def test_langfuse_v2_observations_with_raw_string_input_and_output_import():
    """Before: 'expected a list of documents, found str'. After: both stages, the chat message's content."""
    observations = json.loads(fixture.LANGFUSE_V2.read_text())["data"]
    assert all(isinstance(o.get("output"), str) for o in observations if o["type"] == "RETRIEVER")
    records = read_traces("langfuse", [fixture.LANGFUSE_V2])
    assert [r.question for r in records] == list(fixture.QUESTIONS)
    for record in records:
        retrieved = fixture.retrieve(record.question)
        reranked = fixture.rerank(record.question, retrieved)
        assert [(d.document_id, d.score) for d in record.stages[RETRIEVED]] == retrieved
        assert [(d.document_id, d.score) for d in record.stages[RERANKED]] == reranked
        assert record.answer == fixture.reply([pid for pid, _ in reranked])  # "Paris", not '{"role": ...}'


# ---- 6. LangChain's compression retriever traced by OpenInference


def test_openinference_langchain_compression_retriever_keeps_both_stages():
    """Before: the outer span's 3 reranked documents taken as 'retrieved', the 6 retrieved ones dropped."""
    request = json.loads(fixture.OI_OTLP.read_text())
    span_ids = {}
    for span in otlp_spans(request):
        span_ids.setdefault(hex_id(span["traceId"]), {})[span["name"]] = hex_id(span["spanId"])
    records = read_traces("openinference", [fixture.OI_OTLP])
    assert [r.question for r in records] == list(fixture.QUESTIONS)
    for record in records:
        retrieved = fixture.retrieve(record.question)
        reranked = fixture.rerank(record.question, retrieved)
        assert [(d.document_id, d.score) for d in record.stages[RETRIEVED]] == retrieved
        assert [(d.document_id, d.score) for d in record.stages[RERANKED]] == reranked
        assert record.span_ids == {RETRIEVED: span_ids[record.trace_id]["WordRetriever"],
                                   RERANKED: span_ids[record.trace_id]["ContextualCompressionRetriever"]}
        assert record.answer == fixture.reply([pid for pid, _ in reranked])


# ---- 7. a reranked list keeps its reranker's scores


@pytest.mark.parametrize("format_name, path", [("langsmith", fixture.LANGSMITH), ("langfuse", fixture.LANGFUSE_V2),
                                               ("openinference", fixture.OI_OTLP)])
def test_a_reranked_list_s_scores_agree_with_its_order_and_pytrec_eval(tmp_path, format_name, path):
    """Before (LangSmith, Langfuse): the first stage's ``metadata.score`` kept on the reranked list, so pytrec_eval
    over the run's own (query, passage, score) disagreed with the run's P@1 on 4 of 8 queries. After: the
    reranker's ``relevance_score``, and the two agree on every query and measure."""
    import pytrec_eval

    records = read_traces(format_name, [path])
    gold = {r.trace_id: f"c{fixture.QUESTIONS.index(r.question)}" for r in records}  # the country's capital
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"{query} 0 {passage} 1\n" for query, passage in gold.items()))
    out = tmp_path / "run.sqlite"
    import_files(format_name, [path], out, qrels=qrels)
    with RunReader(out) as reader:
        rankings = reader.rankings()
    for record in records:
        reranked = fixture.rerank(record.question, fixture.retrieve(record.question))
        assert [(p.passage_id, p.score) for p in rankings[record.trace_id].passages] == reranked
    run = {q: {p.passage_id: p.score for p in ranking.passages} for q, ranking in rankings.items()}
    evaluator = pytrec_eval.RelevanceEvaluator({q: {p: 1} for q, p in gold.items()}, {"P_1", "ndcg_cut_3"})
    reference = evaluator.evaluate(run)
    ours = rageval.open(out).measures()
    for measure, key in (("P@1", "P_1"), ("nDCG@3", "ndcg_cut_3")):
        values = ours[(ours["method"] == "qrels") & (ours["measure"] == measure)].set_index("query_id")["value"]
        assert {q: round(v, 6) for q, v in values.items()} == {q: round(reference[q][key], 6) for q in reference}
    # the first stage's scores are where they were: the retrieved list in trace_rankings
    with RunReader(out) as reader:
        stages = reader.trace_rankings()
    first = stages[stages["stage"] == RETRIEVED]
    for record in records:
        rows = first[first["query_id"] == record.trace_id]
        assert list(zip(rows["passage_id"], rows["score"])) == fixture.retrieve(record.question)


def test_scores_that_contradict_the_order_are_not_the_ranking_s_scores(tmp_path):
    """A list whose scores rise along it (distances, or a stage's score kept on another) is ranked by its traced
    order; the scores stay, as traced, in trace_rankings, and the import says so."""
    from rageval.traces.importer import build_run
    from rageval.traces.records import TraceRecord
    from tests.traces.trace_fixtures import BERLIN, PARIS, ROME, doc

    record = TraceRecord("q1", "Capital of France?", {RETRIEVED: [doc(0, PARIS, "a", 0.2), doc(1, BERLIN, "b", 0.9),
                                                                   doc(2, ROME, "c", 0.5)]}, answer="Paris")
    run = build_run([record], format_name="test")
    assert [(p.passage_id, p.score) for p in run.rankings[0].passages] == [("a", 3.0), ("b", 2.0), ("c", 1.0)]
    assert [(t.passage_id, t.score) for t in run.trace_rankings] == [("a", 0.2), ("b", 0.9), ("c", 0.5)]
    assert run.settings["imported"]["scores_out_of_rank_order"] == 1


# ---- 8. lists the OpenTelemetry SDK cut


def _kept_numbers(path):
    """The document numbers N the file's retriever span still holds, and its droppedAttributesCount."""
    request = json.loads(path.read_text())
    span = next(s for s in otlp_spans(request) if s.get("droppedAttributesCount"))
    numbers = sorted({int(m.group(1)) for a in span["attributes"]
                      if (m := re.match(r"retrieval\.documents\.(\d+)\.", a["key"]))})
    return numbers, span["droppedAttributesCount"], hex_id(span["spanId"])


@pytest.mark.parametrize("path, traced", [(fixture.SDK_WIDE_OTLP, fixture.SDK_WIDE_K),
                                          (fixture.OI_WIDE_OTLP, fixture.WIDE_K)])
def test_a_list_cut_by_the_attribute_limit_keeps_its_positions_and_is_counted(tmp_path, capsys, path, traced):
    """Before: the kept documents imported as ranks 1-32, no word. After: each keeps its traced rank, ``missing``
    counts the cut list, the command line warns, the settings hold it for a page, Phoenix gets its own numbers."""
    numbers, dropped, span_id = _kept_numbers(path)
    assert numbers[0] > 0 and numbers[-1] == traced - 1 and dropped > 0  # the SDK dropped the first documents
    expected = [pid for pid, _ in fixture.wide_documents(traced)]
    out = tmp_path / "runs" / "wide.sqlite"
    assert main(["import", "openinference", str(path), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "warning: 1 list(s) in 1 trace(s)" in printed and f"starts at rank {numbers[0] + 1}" in printed
    assert "retrieved.cut_by_attribute_limit 1" in printed
    assert f"1 at k={traced}" in printed  # the answer came from the whole list, not from the kept part
    with RunReader(out) as reader:
        stages = reader.trace_rankings()
        settings = reader.settings()
    with_ids = stages[~stages["passage_id"].str.startswith("sha1:")]
    for rank, passage in zip(with_ids["rank"], with_ids["passage_id"]):
        assert expected[rank - 1] == passage  # the traced position, not renumbered
    assert stages["rank"].min() >= numbers[0] + 1
    (cut,) = settings["imported"]["cut_lists"]
    assert cut["dropped_attributes"] == dropped and cut["first_rank"] == numbers[0] + 1
    assert cut["span_id"] == span_id and settings["missing"]["retrieved.cut_by_attribute_limit"] == 1
    assert rageval.open(out).settings["imported"]["cut_lists"] == [cut]


def test_phoenix_numbers_a_cut_list_from_its_first_kept_document(tmp_path):
    """Phoenix holds the kept documents as a list from 0 (its ``unflatten`` compacts the numbers), so the export
    writes position N - first kept, on the span the file names."""
    numbers, _, span_id = _kept_numbers(fixture.SDK_WIDE_OTLP)
    expected = [pid for pid, _ in fixture.wide_documents(fixture.SDK_WIDE_K)]
    qrels = tmp_path / "qrels.txt"
    record = read_traces("openinference", [fixture.SDK_WIDE_OTLP])[0]
    qrels.write_text(f"{record.trace_id} 0 {expected[numbers[0] + 2]} 1\n")
    run = tmp_path / "wide.sqlite"
    import_files("openinference", [fixture.SDK_WIDE_OTLP], run, qrels=qrels)
    out = tmp_path / "phoenix"
    assert main(["export", str(run), "--format", "phoenix", "--out", str(out)]) == 0
    (file,) = out.iterdir()
    frame = pd.read_parquet(file)
    assert list(frame.index) == [(span_id, 2)]


# ---- 10. messages and exports


def test_a_cut_short_pretty_printed_json_file_is_reported_at_its_last_line(tmp_path):
    """Before: 'line 1'. After: the line where the file stops."""
    text = fixture.LANGFUSE_V2.read_text()
    cut = text[: len(text) * 3 // 5]
    path = tmp_path / "observations.json"
    path.write_text(cut)
    with pytest.raises(DataError) as raised:
        read_traces("langfuse", [path])
    assert raised.value.line == cut.count("\n") + 1 and raised.value.line > 100
    assert "cut short" in str(raised.value)


@pytest.mark.parametrize("kind, data, said", [
    ("gzip", gzip.compress(fixture.LANGSMITH.read_bytes()), "gzip-compressed"),
    ("parquet", b"PAR1\x15\x04\x15\x80\x01" + bytes(range(256)) + b"PAR1", "Parquet"),
    ("binary", bytes([0x89, 0x00, 0x13, 0xe9, 0x00]) * 40, "binary data")])
def test_bytes_that_are_not_text_are_named_not_taken_for_windows_1252(tmp_path, kind, data, said):
    """Before: 'found the byte 0x8b (... in Windows-1252/Latin-1: the file looks saved in that encoding)'."""
    path = tmp_path / f"runs.{kind}.jsonl"
    path.write_bytes(data)
    for format_name in ("langsmith", "ragas"):
        with pytest.raises(DataError) as raised:
            read_traces(format_name, [path])
        assert said in str(raised.value) and "Windows-1252" not in str(raised.value)


def test_an_answers_field_typo_fails_and_names_the_fields_there(tmp_path, capsys):
    """Before: exit 0, 'missing: answer 8'. After: exit 2, the fields the root runs have, nothing written."""
    out = tmp_path / "runs" / "typo.sqlite"
    assert main(["import", "langsmith", str(fixture.LANGSMITH), "--out", str(out),
                 "--answers-field", "outputs.anwser"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "'outputs.anwser'" in error and "fields there: outputs." in error
    assert not out.exists()


def test_phoenix_export_of_a_langsmith_import_writes_span_ids_phoenix_accepts(tmp_path):
    """Before: run UUIDs as ``context.span_id``. After: 16 hex digits (the run id's last 8 bytes), one per run,
    the run id kept in ``metadata``; the columns Phoenix 20's ``log_document_annotations_dataframe`` reads."""
    import uuid

    records = read_traces("langsmith", [fixture.LANGSMITH])
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"{r.trace_id} 0 c{fixture.QUESTIONS.index(r.question)} 1\n" for r in records))
    run = tmp_path / "ls.sqlite"
    import_files("langsmith", [fixture.LANGSMITH], run, qrels=qrels)
    out = tmp_path / "phoenix"
    assert main(["export", str(run), "--format", "phoenix", "--out", str(out)]) == 0
    (file,) = out.iterdir()
    frame = pd.read_parquet(file)
    run_ids = {span for r in records for span in r.span_ids.values()}
    assert len(frame) == 2 * len(records)  # each gold passage in both stages
    for (span_id, _), metadata in zip(frame.index, frame["metadata"]):
        assert re.fullmatch(r"[0-9a-f]{16}", span_id)
        assert metadata["trace_span_id"] in run_ids
        assert span_id == uuid.UUID(metadata["trace_span_id"]).bytes[8:].hex()
    assert frame.reset_index()["context.span_id"].nunique() == len(run_ids)
    assert set(frame["name"]) == {"qrels"} and set(frame["annotator_kind"]) == {"HUMAN"}
    assert {"score", "label", "explanation"} <= set(frame.columns)


def test_phoenix_export_without_labels_fails_and_writes_no_folder(tmp_path, capsys):
    """Before: an empty folder, exit 0. After: exit 2, one line saying how to add labels, no folder."""
    run = tmp_path / "ls.sqlite"
    import_files("langsmith", [fixture.LANGSMITH], run)
    out = tmp_path / "phoenix"
    assert main(["export", str(run), "--format", "phoenix", "--out", str(out)]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "no labels on the traced documents" in error and "--qrels" in error
    assert not out.exists()


def test_annotator_kinds_follow_the_label_method_names():
    """Phoenix's annotator kind comes from the label-method registry: people's labels, a model's, code's."""
    from rageval import labelmethods as methods
    from rageval.export import annotator_kind

    assert [annotator_kind(m) for m in (methods.QRELS, methods.GOLD, methods.GOLD_PAGE)] == ["HUMAN"] * 3
    assert [annotator_kind(m) for m in ("erag:em", methods.LLM_RELEVANCE, methods.UMBRELA,
                                        f"{methods.CONTAINS_ANSWER}{methods.MODEL_SEPARATOR}gemma")] == ["LLM"] * 4
    assert methods.ERAG_PREFIX == "erag:" and annotator_kind(methods.CONTAINS_ANSWER) == "CODE"


def test_one_span_in_an_otlp_file_and_in_phoenix_s_export_is_the_same_span():
    """The refusal above is for other content, not another encoding: the SDK-made spans and the same spans as a
    Phoenix 20.26.1 server exported them (start times in ISO, metadata decoded, Parquet nulls) read as one."""
    from tests.traces.fixtures import make_openinference, make_phoenix

    alone = read_traces("openinference", [make_openinference.OTLP_JSON])
    for export in (make_phoenix.JSONL, make_phoenix.PARQUET):
        assert read_traces("openinference", [make_openinference.OTLP_JSON, export]) == alone
