"""The Query inspector on a run imported from traces with two stages: the section on where the helping passages
were lost (rageval.traces.stages), its per-stage table, and no such section on a single-stage run. The runs are
the hand-made traces of tests/traces/trace_fixtures.py, whose passages' fates are known."""

from __future__ import annotations

from rageval.store import Label, RunWriter
from rageval.traces.importer import content_id, import_traces
from rageval.traces.records import RETRIEVED, TraceRecord
from tests.app_helpers import captions, frame_with
from tests.traces.trace_fixtures import PARIS, doc, ragas_like_records, two_stage_records
from tests.ui.test_app import CORRELATIONS, INSPECTOR, start
from ui.render import escape_markdown


def erag_labels(records):
    """eRAG labels as a completion writes them: 1 where the passage starts with the gold answer."""
    labels = {(r.trace_id, content_id(d.content)): float(d.content.startswith(r.gold_answers[0]))
              for r in records for documents in r.stages.values() for d in documents}
    return [Label("erag:em", q, p, v) for (q, p), v in labels.items()]


def test_the_inspector_shows_where_a_two_stage_runs_helping_passages_were_lost(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(tmp_path))
    records = two_stage_records()
    path = tmp_path / "stages.sqlite"
    import_traces(records, path, format_name="openinference")
    with RunWriter(path) as writer:
        writer.put_labels(erag_labels(records), [])
    app = start(INSPECTOR, run="stages", query="q-france")
    assert "Where the helping passages were lost" in [h.value for h in app.subheader]
    fates = frame_with(app, "Fate")
    assert fates[["Passage", "First-stage rank", "Reranked rank", "Fate"]].astype(str).values.tolist() == [
        [content_id(PARIS), "3", "1", "in the top k, answer right"]]
    table = frame_with(app, "Helping passages").set_index("Query")
    assert table.loc["all", "retrieved, not in the top k"] == 1 and table.loc["all", "Helping passages"] == 2
    assert escape_markdown("erag:em label is above 0") in captions(app)
    assert escape_markdown("k = the passages the answer came from, 2 here") in captions(app)


def test_a_single_stage_run_has_no_stage_section(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(tmp_path))
    import_traces(ragas_like_records(), tmp_path / "single.sqlite", format_name="ragas")
    app = start(INSPECTOR, run="single", query="ragas-0")
    assert "Where the helping passages were lost" not in [h.value for h in app.subheader]


def test_an_imported_answer_without_gold_answers_shows_as_unscored(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(tmp_path))
    records = [TraceRecord("t1", "What is the capital of France?", {RETRIEVED: [doc(0, PARIS, "p1")]},
                           answer="Paris, obviously", source="x, line 1")]
    import_traces(records, tmp_path / "nogold.sqlite", format_name="langsmith")
    app = start(INSPECTOR, run="nogold", query="t1")
    assert app.metric[0].value == "– unscored (no gold answers)"
    assert frame_with(app, "EM")[["k", "End-to-end answer", "EM"]].values.tolist() == [
        [1, "Paris, obviously", "– unscored (no gold answers)"]]


def test_the_lacks_panel_says_an_imported_runs_answers_are_kept_and_what_the_traces_lacked(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(tmp_path))
    records = [TraceRecord(f"t{i}", "What is the capital of France?", {RETRIEVED: [doc(0, PARIS, "p1")]},
                           answer="Paris", source=f"x, line {i}") for i in range(2)]
    import_traces(records, tmp_path / "nogold.sqlite", format_name="langsmith")
    app = start(CORRELATIONS, run="nogold")
    assert escape_markdown("Imported from 2 langsmith traces: their answers (2 at k=1) are this run's end-to-end "
                           "answers and are never generated again. Missing from the traces: gold answers 2.") \
        in captions(app)
    assert any(escape_markdown("baselines") in m.value for m in app.markdown if "What this run lacks" in m.value)


def test_the_lacks_panel_warns_of_a_list_the_tracer_s_attribute_limit_cut(tmp_path, monkeypatch):
    """Issue 38: OpenTelemetry SDK spans with 40 documents keep the last 32; the page says so."""
    from rageval.traces.importer import import_files
    from tests.traces.fixtures.make_langchain_rerank import SDK_WIDE_OTLP

    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(tmp_path))
    import_files("openinference", [SDK_WIDE_OTLP], tmp_path / "wide.sqlite")
    app = start(CORRELATIONS, run="wide")
    (warning,) = [w.value for w in app.warning if "attribute limit" in w.value]
    # the SDK dropped the 34 oldest attributes (the kind, input.value, documents 0-7: four each): rank 9 is first
    assert escape_markdown("1 list(s) in 1 trace(s)") in warning and escape_markdown("starts at rank 9") in warning
    assert escape_markdown("OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT") in warning
