"""AppTest tests of the Upload page (app_pages/10_Upload.py): files go in through Streamlit 1.67's file_uploader test
API (``AppTest.file_uploader(...).upload``), are validated (problems as a table with file and line), saved into
``$RAGEVAL_RUNS_DIR``, and the new run then opens on the home page and in the query inspector. The upload files are
built from the fixture run of real NQ-open records (tests/run_fixtures.py) by tests/upload/test_upload.py's helpers."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs

import pytest
from streamlit.testing.v1 import AppTest

from rageval.store import RunReader
from rageval.upload.problems import Problem
from tests.run_fixtures import INJECTION, build_small_run, make_small_run
from tests.ui.test_app import passage_texts
from tests.upload.test_upload import jsonl, jsonl_records, trec_files
from ui import render_upload as ru
from ui.render import escape_markdown

REPO = Path(__file__).resolve().parents[2]
HOME = str(REPO / "app.py")
UPLOAD = "app_pages/10_Upload.py"
INSPECTOR = "app_pages/1_Query_inspector.py"
TIMEOUT_S = 120


@pytest.fixture
def runs_dir(tmp_path, monkeypatch) -> Path:
    """A runs folder holding the fixture run (named ``fixture``), read by the dashboard through the environment."""
    make_small_run(tmp_path / "fixture.sqlite")
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(tmp_path))
    return tmp_path


@pytest.fixture(scope="module")
def files():
    return trec_files(build_small_run())


def start(script: str = UPLOAD, **query_params: str) -> AppTest:
    """Run ``script`` with ``app.py`` as the entry point (page links resolve against it)."""
    app = AppTest.from_file(HOME, default_timeout=TIMEOUT_S)
    app.query_params.update(query_params)
    if script != HOME:
        app.switch_page(script)
    app.run()
    assert not app.exception, [e.value for e in app.exception]
    return app


def run(app: AppTest) -> AppTest:
    app.run()
    assert not app.exception, [e.value for e in app.exception]
    return app


def upload_trec(app: AppTest, files, **replaced: bytes) -> AppTest:
    for key, file in files.items():
        app.file_uploader(key=f"upload.file.{key}").upload(file.name, replaced.get(key, file.data))
    return run(app)


def validate(app: AppTest) -> AppTest:
    app.button(key="upload.validate").click()
    return run(app)


def problem_table(app: AppTest):
    return next(df.value for df in app.dataframe if list(df.value.columns) == ru.PROBLEM_COLUMNS)


def save_button(app: AppTest):
    return app.button(key="upload.save")


def test_page_asks_for_the_files_of_the_chosen_form(runs_dir):
    app = start()
    assert app.title[0].value == "Upload a run"
    assert [u.label for u in app.file_uploader] == [slot.label for slot in ru.SLOTS["trec"]]
    assert app.info[0].value == escape_markdown(
        "Chosen: nothing yet. Still needed: TREC run file, Queries JSONL, Passages JSONL.")
    app = start(format="jsonl")  # the form is reachable by URL
    assert [u.label for u in app.file_uploader] == ["Run JSONL"]
    assert app.selectbox(key="upload.format.widget").value == "jsonl"


def test_errors_are_listed_by_file_and_line_and_block_saving(runs_dir, files):
    rows = files["passages"].data.split(b"\n")
    rows[2] = b'{"passage_id": "nq_oracle:2", "text": ' + b'"unterminated}'
    app = upload_trec(start(), files, passages=b"\n".join(rows))
    assert app.caption[-1].value == escape_markdown(
        "Press Validate to check run.trec, gold.qrels, queries.jsonl, passages.jsonl.")
    app = validate(app)
    table = problem_table(app)
    assert table.to_dict("records") == [{"Severity": "error", "File": "passages.jsonl", "Line": 3,
                                         "Message": table["Message"][0]}]
    assert table["Message"][0].startswith("not valid JSON: Unterminated string")
    assert "1 error\\(s\\)" in app.error[0].value
    assert [b.key for b in app.button] == ["upload.validate"]  # no Save while there are errors
    assert sorted(p.name for p in runs_dir.iterdir()) == ["fixture.sqlite"]


def test_valid_upload_is_saved_and_opens_on_the_home_page_and_in_the_inspector(runs_dir, files):
    app = validate(upload_trec(start(), files))
    assert not [df for df in app.dataframe if list(df.value.columns) == ru.PROBLEM_COLUMNS]  # no problem at all
    assert app.success[0].value.startswith(escape_markdown("Valid: 6 queries; 7 passages; 30 ranking rows"))
    name_box = app.text_input(key="upload.name")
    assert name_box.value == "run"  # suggested from run.trec
    name_box.set_value("my-bm25")
    app = run(app)
    save_button(app).click()
    app = run(app)
    saved = runs_dir / "my-bm25.sqlite"
    assert saved.is_file()
    assert save_button(app).disabled  # saved: no second save of the same thing
    links = {link.proto.page: parse_qs(link.proto.query_string) for link in app.get("page_link")}
    assert links == {"": {"run": ["my-bm25"]}, "Query_inspector": {"run": ["my-bm25"]}}
    with RunReader(saved) as reader:
        settings = reader.settings()
        expected = reader.measure_table().groupby("measure")["value"].mean()
    assert settings["source"] == "uploaded" and settings["command"] == "dashboard upload page"

    home = start(HOME, run="my-bm25")
    metrics = {m.label: m.value for m in home.metric}
    assert metrics["Queries"] == "6" and metrics["Passages"] == "7" and metrics["Ranking rows"] == "30"
    summary = next(df.value for df in home.dataframe if df.value.index.name == "Labels" and "n" in df.value.columns)
    assert list(summary.index) == ["qrels"]
    for measure, value in expected.items():
        assert summary.loc["qrels", measure] == pytest.approx(value)
    settings_table = next(df.value for df in home.dataframe if list(df.value.columns) == ["Setting", "Value"])
    shown = dict(zip(settings_table["Setting"], settings_table["Value"]))
    assert shown["source"] == "uploaded" and "run=run.trec" in shown["uploaded_files"]

    inspector = start(INSPECTOR, run="my-bm25", query="nq:0")
    ranked = next(df.value for df in inspector.dataframe if "Passage" in df.value.columns)
    assert list(ranked["Title"])[2] == "Escaping test <b>bold?</b>"  # rank 3 of nq:0, as text
    assert INJECTION in ranked["Passage"][2]
    assert any(INJECTION in t for t in passage_texts(inspector))


def test_an_existing_name_needs_confirmation_and_a_bad_name_is_refused(runs_dir, files):
    app = validate(upload_trec(start(), files))
    app.text_input(key="upload.name").set_value("fixture")
    app = run(app)
    assert "A run named fixture exists" in app.warning[0].value.replace("\\", "")
    assert save_button(app).disabled
    app.checkbox(key="upload.replace").check()
    app = run(app)
    assert not save_button(app).disabled
    save_button(app).click()
    app = run(app)
    with RunReader(runs_dir / "fixture.sqlite") as reader:
        assert reader.settings()["source"] == "uploaded"

    for bad in ("../escape", "a/b", ".hidden"):
        app.text_input(key="upload.name").set_value(bad)
        app = run(app)
        assert save_button(app).disabled
        assert "use letters, digits and" in app.error[0].value.replace("\\", "")
    assert sorted(p.name for p in runs_dir.iterdir()) == ["fixture.sqlite"]
    assert not (runs_dir.parent / "escape.sqlite").exists()

    (runs_dir / "retrieval").mkdir()  # a run in a sub-folder is listed under its name too: never shadowed
    make_small_run(runs_dir / "retrieval" / "bm25.sqlite")
    app.text_input(key="upload.name").set_value("bm25")
    app = run(app)
    assert save_button(app).disabled and not app.checkbox
    assert "is used by the run" in app.error[0].value.replace("\\", "")


def test_changed_files_must_be_validated_again(runs_dir, files):
    app = validate(upload_trec(start(), files))
    assert app.success
    app.file_uploader(key="upload.file.qrels").set_value(("other.qrels", files["qrels"].data, "text/plain"))
    app = run(app)
    assert app.caption[-1].value == escape_markdown(
        "Press Validate to check run.trec, other.qrels, queries.jsonl, passages.jsonl.")
    assert [b.key for b in app.button] == ["upload.validate"]


def test_jsonl_upload_with_answers_and_markup(runs_dir):
    fixture = build_small_run()
    records = jsonl_records(fixture)
    records[0]["e2e"]["output"] = "<script>window.__pwned=3</script>"
    records[1]["e2e"]["output"] = f" {records[1]['answers'][0].upper()}."  # right after SQuAD normalisation
    # The fixture's E2E exact matches (tests/run_fixtures.py: only query 0's was right) become: only query 1's.
    assert [e.score for e in fixture.e2e_outputs] == [1.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    e2e_em = 1 / 6
    app = start(format="jsonl")
    app.file_uploader(key="upload.file.jsonl").upload("my answers.jsonl", jsonl(records))
    app = validate(run(app))
    assert app.text_input(key="upload.name").value == "my_answers"
    save_button(app).click()
    app = run(app)
    with RunReader(runs_dir / "my_answers.sqlite") as reader:
        assert reader.e2e_output("nq:0").output == "<script>window.__pwned=3</script>"
        assert reader.e2e_output("nq:0").score == 0.0
    inspector = start(INSPECTOR, run="my_answers", query="nq:0")
    assert not [m for m in inspector.markdown if "<script>" in m.value]  # only escaped Markdown
    answers = next(df.value for df in inspector.dataframe if "End-to-end answer" in df.value.columns)
    assert answers["End-to-end answer"][0] == "<script>window.__pwned=3</script>"
    home = start(HOME, run="my_answers")
    assert {m.label: m.value for m in home.metric}["E2E EM (mean)"] == f"{100 * e2e_em:.1f}%"


# --- the page's pure helpers ------------------------------------------------------------------------------

def test_problems_frame_puts_errors_first_and_keeps_text_as_text():
    problems = [Problem("warning", "a.jsonl", 2, "unknown field '<b>x</b>'"), Problem("error", "b.trec", None, "bad"),
                Problem("error", "a.jsonl", 7, "<script>alert(1)</script>")]
    frame = ru.problems_frame(problems)
    assert frame.to_dict("records") == [
        {"Severity": "error", "File": "b.trec", "Line": None, "Message": "bad"},
        {"Severity": "error", "File": "a.jsonl", "Line": 7, "Message": "<script>alert(1)</script>"},
        {"Severity": "warning", "File": "a.jsonl", "Line": 2, "Message": "unknown field '<b>x</b>'"}]
    assert str(frame["Line"].dtype) == "Int64"


def test_slots_match_the_engine_forms_and_names_are_suggested_safely():
    from rageval.upload.convert import FORMS
    from rageval.upload.save import check_run_name

    assert {form: tuple(slot.key for slot in slots) for form, slots in ru.SLOTS.items()} == dict(FORMS)
    for file_name, expected in [("run.trec", "run"), ("my answers.v2.jsonl", "my_answers"), ("../../x.txt", "x"),
                                (".hidden", "uploaded"), (None, "uploaded"), ("é.jsonl", "uploaded")]:
        assert ru.suggest_run_name(file_name) == expected
        assert check_run_name(expected) is None


# --- issue 34: the gold field used, whole-file problems, the message column, the size limit's words -------------

def trec_without_qrels(files, gold: bool):
    """The fixture's TREC files without the qrels file; with ``gold``, the queries carry their gold_passage_ids."""
    queries = files["queries"]
    if gold:
        fixture = build_small_run()
        queries = type(queries)(queries.name, jsonl(
            {"query_id": q.query_id, "text": q.text, "answers": list(q.answers),
             "gold_passage_ids": list(q.gold_passage_ids)} for q in fixture.queries))
    return {"run": files["run"], "queries": queries, "passages": files["passages"]}


def test_a_whole_file_warning_shows_a_dash_in_the_line_column_not_none(runs_dir, files):
    app = validate(upload_trec(start(), trec_without_qrels(files, gold=False)))
    table = problem_table(app)
    assert table.to_dict("records") == [{
        "Severity": "warning", "File": "run.trec", "Line": "–",
        "Message": "no qrels file and no 'gold_passage_ids' in queries.jsonl: the run has no relevance labels and "
                   "no measures"}]
    shown = next(df for df in app.dataframe if list(df.value.columns) == ru.PROBLEM_COLUMNS)
    assert shown.proto.row_height == ru.PROBLEM_ROW_HEIGHT > 64  # Streamlit wraps a cell's text above 4 rem
    assert '"large"' in shown.proto.columns and "a problem of the whole file" in shown.proto.columns
    assert app.success[0].value.startswith(escape_markdown("Valid: 6 queries"))


def test_the_queries_files_gold_passages_are_the_labels_without_a_qrels_file(runs_dir, files):
    app = validate(upload_trec(start(), trec_without_qrels(files, gold=True)))
    assert not [df for df in app.dataframe if list(df.value.columns) == ru.PROBLEM_COLUMNS]  # no "no qrels" warning
    assert "labels: gold; measures at k = 1, 3, 5" in app.success[0].value.replace("\\", "")
    save_button(app).click()
    run(app)
    inspector = start(INSPECTOR, run="run", query="nq:0")
    ranked = next(df.value for df in inspector.dataframe if "Passage" in df.value.columns)
    assert list(ranked["gold"]) == ["✓", "✗", "✗", "✗", "✗"]  # every ranked passage labelled: no "–"


def test_a_csv_given_as_queries_is_one_problem(runs_dir, files):
    csv = b"query_id,text,answers\n" + b"".join(f"nq:{i},question {i},answer\n".encode() for i in range(6))
    app = validate(upload_trec(start(), files, queries=csv))
    assert problem_table(app).to_dict("records") == [{
        "Severity": "error", "File": "queries.jsonl", "Line": "–",
        "Message": "this looks like a CSV file (first line: query_id, text, answers): expected JSON lines, one "
                   "object a line"}]


def test_swapped_queries_and_passages_are_one_problem_each(runs_dir, files):
    app = start()
    for key, file in files.items():
        other = {"queries": "passages", "passages": "queries"}.get(key, key)
        app.file_uploader(key=f"upload.file.{key}").upload(file.name, files[other].data)
    table = problem_table(validate(run(app)))
    assert list(table["File"]) == ["queries.jsonl", "passages.jsonl"] and list(table["Line"]) == ["–", "–"]
    assert table["Message"][0].startswith("these look like passages (passage_id, title, text), not queries: did "
                                          "you swap the queries and passages files?")
    assert table["Message"][1].startswith("these look like queries (query_id, text, answers), not passages")


def test_the_size_limit_is_said_in_the_widgets_words_and_the_format_document_opens(runs_dir):
    app = start()
    intro = app.markdown[0].value
    assert "Limits: 100 MB per file (the upload boxes' MB: 2^20 bytes, i.e. 100 MiB)" in intro
    assert all(u.proto.max_upload_size_mb == 100 for u in app.file_uploader)  # the boxes say "100MB per file"
    (doc,) = [e for e in app.expander if e.label == ru.FORMAT_DOC_TITLE]
    assert doc.markdown[0].value.startswith("# Uploading your own run")
    assert "`gold_passage_ids` are the run's judgments when there is no qrels file" in doc.markdown[0].value


def test_beir_style_queries_and_passages_are_read_as_rageval_evaluate_reads_them(runs_dir, files):
    """Issue 42: a BEIR passages file (``_id``, as ``rageval evaluate`` reads it) gave one "passage_id: missing"
    error a line and no hint, and the queries file's gold passages were then reported missing ("no qrels file and
    no 'gold_passage_ids'") although the field was there. BEIR's ``_id`` is read, answers and gold ids from
    ``metadata`` too."""
    fixture = build_small_run()
    beir = trec_without_qrels(files, gold=False)
    beir["passages"] = type(files["passages"])("corpus.jsonl", jsonl(
        {"_id": p.passage_id, "title": p.title, "text": p.text, "metadata": {}} for p in fixture.passages))
    beir["queries"] = type(files["queries"])("queries.jsonl", jsonl(
        {"_id": q.query_id, "text": q.text,
         "metadata": {"answers": list(q.answers), "gold_passage_ids": list(q.gold_passage_ids)}}
        for q in fixture.queries))
    app = validate(upload_trec(start(), beir))
    assert not [df for df in app.dataframe if list(df.value.columns) == ru.PROBLEM_COLUMNS]  # no error, no warning
    assert "labels: gold; measures at k = 1, 3, 5" in app.success[0].value.replace("\\", "")
    assert app.success[0].value.startswith(escape_markdown("Valid: 6 queries"))
