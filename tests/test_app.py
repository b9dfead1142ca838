"""AppTest tests of the dashboard pages on the fixture run (tests/run_fixtures.py), read through
``$RAGEVAL_RUNS_DIR``. Expected values are read back from the run file itself or restated from the fixture's
construction (cited where used)."""

from __future__ import annotations

import dataclasses
import os
import re
import sqlite3
from pathlib import Path

import pytest
import pytrec_eval
from streamlit.testing.v1 import AppTest

from rageval.store import RunReader, list_runs, write_run
from tests.run_fixtures import INJECTION, K, LABEL_METHODS, MEASURES, build_small_run, make_small_run
from ui.render import escape_markdown

REPO = Path(__file__).resolve().parent.parent
HOME = str(REPO / "app.py")
INSPECTOR = str(REPO / "pages" / "1_Query_inspector.py")
QUERY_WIDGET = "inspect.query_id.widget"
TIMEOUT_S = 60


@pytest.fixture(scope="module")
def run_path(tmp_path_factory) -> Path:
    return make_small_run(tmp_path_factory.mktemp("runs") / "fixture.sqlite")


@pytest.fixture
def runs_env(run_path, monkeypatch) -> Path:
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(run_path.parent))
    return run_path


def start(script: str, **query_params: str) -> AppTest:
    app = AppTest.from_file(script, default_timeout=TIMEOUT_S)
    app.query_params.update(query_params)
    app.run()
    assert not app.exception, [e.value for e in app.exception]
    return app


def query_box(app: AppTest):
    return app.selectbox(key=QUERY_WIDGET)


# --- the fixture itself ------------------------------------------------------------------------------

def test_fixture_measures_agree_with_trec_eval(run_path):
    """The fixture's hand-computed measures equal pytrec_eval's on the same labels and rankings."""
    trec_names = {f"P@{K}": f"P_{K}", f"R@{K}": f"recall_{K}", f"AP@{K}": f"map_cut_{K}",
                  f"RR@{K}": "recip_rank", f"nDCG@{K}": f"ndcg_cut_{K}", "Rprec": "Rprec"}
    with RunReader(run_path) as reader:
        stored = reader.measure_table().set_index(["method", "measure", "query_id"])["value"]
        trec_run = {q: {p.passage_id: p.score for p in r.passages} for q, r in reader.rankings().items()}
        labels = reader.labels()
    assert set(stored.index.get_level_values("measure")) == set(MEASURES)
    for method in LABEL_METHODS:
        qrels: dict[str, dict[str, int]] = {}
        for row in labels[labels["method"] == method].itertuples():
            qrels.setdefault(row.query_id, {})[row.passage_id] = int(row.value)
        results = pytrec_eval.RelevanceEvaluator(qrels, set(trec_names.values())).evaluate(trec_run)
        for query_id in trec_run:
            for ours, theirs in trec_names.items():
                assert stored[method, ours, query_id] == pytest.approx(results[query_id][theirs]), (method, ours)
            assert stored[method, f"Hit@{K}", query_id] == float(results[query_id][f"P_{K}"] > 0)


# --- home page ---------------------------------------------------------------------------------------

def test_home_shows_sizes_settings_and_measures(runs_env):
    app = start(HOME)
    metrics = {m.label: m.value for m in app.metric}
    # Sizes from tests/run_fixtures.py: 6 questions, their 6 gold passages + 1 injection passage,
    # 6 rankings of K=5, 30 single-passage outputs + 6 end-to-end outputs.
    assert metrics["Queries"] == "6" and metrics["Passages"] == "7"
    assert metrics["Ranking rows"] == "30" and metrics["LLM outputs"] == "36"
    with RunReader(runs_env) as reader:
        expected = reader.measure_table().groupby(["method", "measure"])["value"].mean().unstack()
        e2e_mean = reader.query_table()["e2e_score"].mean()
    assert metrics["E2E EM (mean)"] == f"{e2e_mean:.3f}"

    summary = app.dataframe[0].value
    assert list(summary.index) == ["eRAG EM", "contains-answer", "gold"]
    assert list(summary.columns) == [*MEASURES, "n"]
    assert (summary["n"] == 6).all()
    for method, name in zip(LABEL_METHODS, summary.index):
        for measure in MEASURES:
            assert summary.loc[name, measure] == pytest.approx(expected.loc[method, measure])

    captions = " ".join(c.value for c in app.caption)
    assert escape_markdown("dataset nq_open (first 6 oracle questions)") in captions
    assert escape_markdown("fake-reader (tests/run_fixtures.py)") in captions and "6 queries" in captions
    settings = settings_table(app).set_index("Setting")["Value"]
    assert settings["Dataset"] == "nq_open (first 6 oracle questions)"
    assert settings["Prompt"] == "none (000000000000)" and settings["Corpus"].endswith("(7 passages)")
    assert "fake reader" in app.info[0].value  # the run's notes


def test_home_defaults_to_newest_run_and_honours_run_param(run_path, tmp_path, monkeypatch):
    older, newer = tmp_path / "older.sqlite", tmp_path / "newer.sqlite"
    run = build_small_run()
    write_run(dataclasses.replace(run, settings={**run.settings, "dataset": "older-dataset"}), older)
    write_run(dataclasses.replace(run, settings={**run.settings, "dataset": "newer-dataset"}), newer)
    os.utime(older, (1_000_000, 1_000_000))
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(tmp_path))

    app = start(HOME)
    assert app.selectbox(key="app.run.widget").value == "newer"
    assert settings_table(app).set_index("Setting")["Value"]["Dataset"] == "newer-dataset"
    assert app.query_params["run"] == "newer"

    app = start(HOME, run="older")
    assert settings_table(app).set_index("Setting")["Value"]["Dataset"] == "older-dataset"


def test_empty_folder_explains_how_to_make_a_run(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(tmp_path))
    for script in (HOME, INSPECTOR):
        app = start(script)
        assert "No run files" in app.info[0].value
        assert app.code[0].value == "rageval erag --help"
        assert not app.dataframe


def test_a_file_that_is_not_a_run_shows_an_error(tmp_path, monkeypatch):
    connection = sqlite3.connect(tmp_path / "broken.sqlite")
    connection.execute("CREATE TABLE t (x)")
    connection.close()
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(tmp_path))
    app = start(HOME)
    assert "not a rageval run file" in app.error[0].value and "broken.sqlite" in app.error[0].value


def test_a_bare_run_without_settings_labels_or_measures_still_renders(tmp_path, monkeypatch):
    run = build_small_run()
    write_run(dataclasses.replace(run, settings={}, labels=(), e2e_outputs=(), measure_values=()),
              tmp_path / "bare.sqlite")
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(tmp_path))
    home = start(HOME)
    assert {m.label: m.value for m in home.metric}["E2E EM (mean)"] == "–"
    assert "no measure values" in home.info[0].value
    inspector = start(INSPECTOR, query="nq:1")
    assert "not stored" in " ".join(m.value for m in inspector.markdown)
    assert list(inspector.dataframe[0].value.columns) == ["Rank", "Title", "Score", "Single-passage answer",
                                                          "Passage"]
    assert len(inspector.text) == K


# --- query inspector ---------------------------------------------------------------------------------

def test_inspector_shows_the_first_query_with_passages_answers_and_labels(runs_env):
    app = start(INSPECTOR)
    with RunReader(runs_env) as reader:
        query, ranking = reader.query("nq:0"), reader.ranking_table("nq:0")
    assert query_box(app).value == "nq:0" and app.query_params["query"] == "nq:0"
    assert app.subheader[0].value == escape_markdown(query.text)
    answers = [m.value for m in app.markdown]
    assert f"**Gold answers:** {escape_markdown('Wilhelm Conrad Röntgen')}" in answers
    # nq:0's top passage is its gold passage, which names the answer in its first sentence, so the fake
    # reader's end-to-end answer is exactly right (tests/run_fixtures.py).
    assert any(a.startswith("**End-to-end answer**") and a.endswith("Wilhelm Conrad Röntgen") for a in answers)
    assert app.metric[0].value == "✓ 1"

    table = app.dataframe[0].value
    assert list(table["Title"]) == list(ranking["title"]) and list(table["Rank"]) == [1, 2, 3, 4, 5]
    assert list(table.columns[3:6]) == ["eRAG EM", "contains-answer", "gold"]
    for method, name in zip(LABEL_METHODS, ["eRAG EM", "contains-answer", "gold"]):
        assert list(table[name]) == ["✓" if v == 1 else "✗" for v in ranking[method]]
    assert list(table["Single-passage answer"]) == list(ranking["output"])
    # Passage text is shown verbatim (st.text), the injection passage included.
    assert [t.value for t in app.text] == list(ranking["text"])
    assert any(INJECTION in t.value for t in app.text)


def test_query_param_selects_the_query_and_bad_values_fall_back(runs_env):
    with RunReader(runs_env) as reader:
        question = reader.query("nq:3").text
    app = start(INSPECTOR, query="nq:3")
    assert query_box(app).value == "nq:3"
    assert app.subheader[0].value == escape_markdown(question)
    assert len(app.text) == K

    app = start(INSPECTOR, query="no-such-query")
    assert query_box(app).value == "nq:0" and app.query_params["query"] == "nq:0"


def test_previous_next_and_select_keep_the_url_in_sync(runs_env):
    app = start(INSPECTOR)
    previous, following = app.button
    assert previous.disabled and not following.disabled
    following.click().run()
    assert query_box(app).value == "nq:1" and app.query_params["query"] == "nq:1"
    query_box(app).select("nq:5").run()
    assert app.query_params["query"] == "nq:5"
    assert app.button[1].disabled  # nq:5 is the last of the 6 queries
    app.button[0].click().run()
    assert query_box(app).value == "nq:4" and app.query_params["query"] == "nq:4"


def test_chosen_query_survives_a_round_trip_to_the_home_page(runs_env):
    app = start(HOME)
    app.switch_page("pages/1_Query_inspector.py").run()
    query_box(app).select("nq:2").run()
    app.switch_page("app.py").run()
    assert app.title[0].value.startswith("rageval")
    app.query_params.clear()  # the sidebar navigation drops the URL's query parameters
    app.switch_page("pages/1_Query_inspector.py").run()
    assert not app.exception
    assert query_box(app).value == "nq:2" and app.query_params["query"] == "nq:2"


# --- escaping ----------------------------------------------------------------------------------------

def test_escape_markdown_backslashes_every_punctuation_character():
    text = '<script>x</script> *b* [l](u) :red[c] $m$\nnext'
    escaped = escape_markdown(text)
    assert re.sub(r"\\(.)", r"\1", escaped) == text.replace("\n", " ")
    assert not re.search(r"(?<!\\)[<>*\[\]()$:]", escaped)


def test_no_page_renders_raw_html():
    sources = [REPO / "app.py", *sorted((REPO / "pages").glob("*.py")), *sorted((REPO / "ui").glob("*.py"))]
    for source in sources:
        code = source.read_text(encoding="utf-8")
        for unsafe in ("unsafe_allow_html", "st.html", "components.html"):
            assert unsafe not in code, f"{source.name} uses {unsafe}"


def settings_table(app):
    """The home page's "What produced this run" table (found by its columns, not its position)."""
    return next(df.value for df in app.dataframe if "Setting" in df.value.columns)


def test_home_shows_correlations_with_e2e(runs_env):
    app = start(HOME)
    assert "Which labels predict the end-to-end answer?" in [h.value for h in app.subheader]
    tau, rho = [df.value for df in app.dataframe if df.value.index.name == "Measure"]
    # Rows: the fixture's measures at K plus R-precision; columns: its three label methods.
    assert sorted(tau.index) == sorted(m for m in MEASURES if m.endswith(f"@{K}") or m == "Rprec")
    assert len(tau.columns) == len(LABEL_METHODS)
    cell = tau.iloc[0, 0]
    assert cell == "undefined (constant)" or re.fullmatch(r"-?\d\.\d{3} \[-?\d\.\d\d, -?\d\.\d\d\]", cell)
    assert any("bootstrap" in c.value for c in app.caption)


def test_untitled_passage_gets_a_readable_header(tmp_path, monkeypatch):
    """Some corpus passages (HAGRID quotes) have no title: the header must not show stray Markdown markers."""
    run = build_small_run()
    untitled = {p.passage_id: dataclasses.replace(p, title="") for p in run.passages}
    run = dataclasses.replace(run, passages=list(untitled.values()))
    write_run(run, tmp_path / "untitled.sqlite")
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(tmp_path))
    app = start(INSPECTOR)
    headers = [m.value for m in app.markdown if "· score" in m.value]
    assert headers and all(re.match(r"\*\*\d+\\\. \(untitled passage\)\*\* · score", h) for h in headers), headers


SHIPPED_RUNS = [path.stem for path in list_runs(REPO / "data" / "runs")]


@pytest.mark.parametrize("run", SHIPPED_RUNS)
@pytest.mark.parametrize("script", [HOME, INSPECTOR], ids=["home", "inspector"])
def test_every_shipped_run_opens_on_every_page(run, script, monkeypatch):
    monkeypatch.delenv("RAGEVAL_RUNS_DIR", raising=False)
    app = start(script, run=run)
    assert not app.error, [e.value for e in app.error]
    assert app.query_params["run"] == run
    if script == INSPECTOR:
        assert "Ranked passages" in [h.value for h in app.subheader]


def test_the_shipped_erag_run_is_the_default():
    assert SHIPPED_RUNS[0] == "nq_open-bm25-gemma3_270m-erag"  # top-level runs come before data/runs/retrieval/
