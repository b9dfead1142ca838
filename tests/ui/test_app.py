"""AppTest tests of the dashboard pages on the fixture run (tests/run_fixtures.py) and on a complete run built
with the fake generator (:func:`reteval_run_file`: a k sweep, every label method, LLM-retEval), read through
``$RAGEVAL_RUNS_DIR``. Expected values are read back from the run file itself and recomputed with the engine's
own functions, or restated from the fixture's construction (cited where used)."""

from __future__ import annotations

import dataclasses
import html
import os
import re
import sqlite3
from collections.abc import Callable
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import numpy as np
import pytest
import pytrec_eval
from scipy import stats as scipy_stats
from streamlit.testing.v1 import AppTest

from rageval import reteval
from rageval.generation.base import FakeGenerator, first_capitalised_span
from rageval.stats.correlation import kendall_tau_b
from rageval.stats.intervals import wilson_interval
from rageval.store import APPLICATION_ID, RunReader, list_runs, write_run
from rageval.text_metrics import contains_answer
from tests.app_helpers import use_shipped_runs, vega_charts
from tests.run_fixtures import INJECTION, LABEL_METHODS, MEASURES, READER_WINDOW, K, build_small_run, make_small_run
from ui import format as fmt
from ui import render, render_evidence
from ui.render import escape_markdown

REPO = Path(__file__).resolve().parents[2]
HOME = str(REPO / "app.py")
INSPECTOR = str(REPO / "app_pages" / "1_Query_inspector.py")
RETEVAL = str(REPO / "app_pages" / "2_LLM_retEval.py")
CORRELATIONS = str(REPO / "app_pages" / "5_Correlations.py")
QUERY_WIDGET = "inspect.query_id.widget"
TIMEOUT_S = 120


@pytest.fixture(scope="module")
def run_path(tmp_path_factory) -> Path:
    return make_small_run(tmp_path_factory.mktemp("runs") / "fixture.sqlite")


@pytest.fixture
def runs_env(run_path, monkeypatch) -> Path:
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(run_path.parent))
    return run_path


def start(script: str, **query_params: str) -> AppTest:
    """Run ``script`` as the app runs it: ``app.py`` is the entry point (page links resolve against it)."""
    app = AppTest.from_file(HOME, default_timeout=TIMEOUT_S)
    app.query_params.update(query_params)
    if script != HOME:
        app.switch_page(str(Path(script).relative_to(REPO)))
    app.run()
    assert not app.exception, [e.value for e in app.exception]
    return app


def ranked_passages(app: AppTest):
    """The inspector's ranked-passage table (found by its columns, not its position)."""
    return next(df.value for df in app.dataframe if "Passage" in df.value.columns)


def query_box(app: AppTest):
    return app.selectbox(key=QUERY_WIDGET)


MARKED_TEXT = '<div style="white-space: pre-wrap'


def link_walk(url: str, run_order) -> tuple[str, str, list[str], str]:
    """An inspector link read back: its run, query, the worklist's query ids (decoded against ``run_order``; []
    without one) and the list's name."""
    from ui.worklist import decode_worklist

    params = {key: value[0] for key, value in parse_qs(urlsplit(url).query).items()}
    walked = decode_worklist(params["list"], list(run_order)) if "list" in params else []
    return params["run"], params["query"], walked, params.get("list_name", "")


def passage_texts(app: AppTest) -> list[str]:
    """The passage texts the inspector shows, read back as text from its escaped, marked-up HTML
    (ui.render_inspector.highlight_html)."""
    return [html.unescape(re.sub(r"</?(div|mark)\b[^>]*>", "", m.value).replace("<br>", "\n"))
            for m in app.markdown if m.value.startswith(MARKED_TEXT)]


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
    assert metrics["E2E EM (mean)"] == f"{100 * e2e_mean:.1f}%"  # a share of 0/1 exact matches (ui.format)

    summary = measure_means(app)
    assert list(summary.index) == ["eRAG EM", "contains-answer", "gold"]
    assert list(summary.columns) == [*MEASURES, "n"]
    assert (summary["n"] == 6).all()
    for method, name in zip(LABEL_METHODS, summary.index):
        for measure in MEASURES:
            assert summary.loc[name, measure] == pytest.approx(expected.loc[method, measure])

    # The second tab: each mean with its Student-t 95% interval, recomputed here with scipy.
    intervals = next(df.value for df in app.dataframe if df.value.index.name == "Labels" and "n" not in df.value)
    assert list(intervals.index) == list(summary.index) and list(intervals.columns) == list(MEASURES)
    with RunReader(runs_env) as reader:
        values = reader.measure_table().query("method == 'contains_answer' and measure == @MEASURES[0]")["value"]
    low, high = scipy_stats.t.interval(0.95, len(values) - 1, loc=values.mean(), scale=scipy_stats.sem(values))
    assert intervals.loc["contains-answer", MEASURES[0]] == f"{values.mean():.3f} [{low:.2f}, {high:.2f}]"

    captions = " ".join(c.value for c in app.caption)
    assert escape_markdown("dataset nq_open (first 6 oracle questions)") in captions
    assert escape_markdown("fake-reader (tests/run_fixtures.py)") in captions and "6 queries" in captions
    settings = settings_table(app).set_index("Setting")["Value"]
    assert settings["Dataset"] == "nq_open (first 6 oracle questions)"
    assert settings["Prompt"] == "none (000000000000)" and settings["Corpus"].endswith("(7 passages)")
    assert any("fake reader" in box.value for box in app.info)  # the run's notes


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
        assert app.code[0].value.startswith("rageval evaluate --queries Q.jsonl --corpus C.jsonl")
        assert not app.dataframe


def test_a_run_file_this_rageval_cannot_read_shows_an_error(tmp_path, monkeypatch):
    connection = sqlite3.connect(tmp_path / "foreign.sqlite")  # not a run by its kind: not listed at all
    connection.execute("CREATE TABLE t (x)")
    connection.close()
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(tmp_path))
    app = start(HOME)
    assert "No run files" in app.info[0].value
    connection = sqlite3.connect(tmp_path / "broken.sqlite")  # a run by its kind, of a schema from the future
    connection.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    connection.execute("PRAGMA user_version = 99")
    connection.execute("CREATE TABLE t (x)")
    connection.close()
    import streamlit as st

    st.cache_data.clear()  # the run list of the same folder is cached within a second
    app = start(HOME)
    shown = app.error[0].value.replace("\\", "")  # the message is escaped for Markdown
    assert "run schema version 99 is newer" in shown and "broken.sqlite" in shown


def test_a_bare_run_without_settings_labels_or_measures_still_renders(tmp_path, monkeypatch):
    run = build_small_run()
    write_run(dataclasses.replace(run, settings={}, labels=(), e2e_outputs=(), measure_values=()),
              tmp_path / "bare.sqlite")
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(tmp_path))
    home = start(HOME)
    assert {m.label: m.value for m in home.metric}["E2E EM (mean)"] == "–"  # ui.format.MISSING
    assert any("no measure values" in box.value for box in home.info)
    assert any("stores no end-to-end answers" in box.value for box in home.info)  # no 2 x 2, and says why
    inspector = start(INSPECTOR, query="nq:1")
    assert "not stored" in " ".join(m.value for m in inspector.markdown)
    assert list(ranked_passages(inspector).columns) == ["Rank", "Title", "Score", "Single-passage answer",
                                                        "Passage"]
    assert len(passage_texts(inspector)) == K


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

    table = ranked_passages(app)
    assert list(table["Title"]) == list(ranking["title"]) and list(table["Rank"]) == [1, 2, 3, 4, 5]
    # The gold columns first, right after Score, so they show without scrolling (issue 42, item 7).
    assert list(table.columns[3:6]) == ["gold", "eRAG EM", "contains-answer"]
    for method, name in zip(LABEL_METHODS, ["eRAG EM", "contains-answer", "gold"]):
        assert list(table[name]) == ["✓" if v == 1 else "✗" for v in ranking[method]]
    assert list(table["Single-passage answer"]) == list(ranking["output"])
    # Passage text is shown verbatim (escaped, answers marked), the injection passage included.
    assert passage_texts(app) == list(ranking["text"])
    assert any(INJECTION in t for t in passage_texts(app))


def test_query_param_selects_the_query_and_bad_values_fall_back(runs_env):
    with RunReader(runs_env) as reader:
        question = reader.query("nq:3").text
    app = start(INSPECTOR, query="nq:3")
    assert query_box(app).value == "nq:3"
    assert app.subheader[0].value == escape_markdown(question)
    assert len(passage_texts(app)) == K

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
    app.switch_page("app_pages/1_Query_inspector.py").run()
    query_box(app).select("nq:2").run()
    app.switch_page("app_pages/0_Home.py").run()
    assert app.title[0].value == "Findings"
    app.query_params.clear()  # the sidebar navigation drops the URL's query parameters
    app.switch_page("app_pages/1_Query_inspector.py").run()
    assert not app.exception
    assert query_box(app).value == "nq:2" and app.query_params["query"] == "nq:2"


# --- escaping ----------------------------------------------------------------------------------------

def test_escape_markdown_backslashes_every_punctuation_character():
    text = '<script>x</script> *b* [l](u) :red[c] $m$\nnext'
    escaped = escape_markdown(text)
    assert re.sub(r"\\(.)", r"\1", escaped) == text.replace("\n", " ")
    assert not re.search(r"(?<!\\)[<>*\[\]()$:]", escaped)
    # Pieces are joined into captions: a leading or trailing space survives (as one space).
    assert escape_markdown("  · query  nq:5 ") == " · query nq\\:5 "


#: The one module that renders HTML: the inspector's marked passage text, whose every markup character it escapes
#: itself first (test_highlighting_escapes_corpus_text_and_marks_answers), and its fixed keyboard script.
#: The only raw HTML and iframes: the inspector's highlighted passage (text escaped by us first) and the keyboard
#: scripts of the inspector and Annotate (constants of ours; no data goes into them).
RAW_HTML_ALLOWED = {"render_inspector.py": {"unsafe_allow_html=True": 1, "st.iframe(": 1},
                    "render_annotate.py": {"st.iframe(": 1}}


def test_no_page_renders_raw_html():
    sources = [REPO / "app.py", *sorted((REPO / "app_pages").glob("*.py")), *sorted((REPO / "ui").glob("*.py"))]
    for source in sources:
        code = source.read_text(encoding="utf-8")
        allowed = RAW_HTML_ALLOWED.get(source.name, {})
        for unsafe in ("unsafe_allow_html=True", "st.html(", "components.html(", "st.iframe("):
            assert code.count(unsafe) == allowed.get(unsafe, 0), f"{source.name} uses {unsafe}"


def measure_means(app):
    """The home page's table of aggregate measure means (one row per label method, and ``n``)."""
    return next(df.value for df in app.dataframe if df.value.index.name == "Labels" and "n" in df.value.columns)


def settings_table(app):
    """The home page's "What produced this run" table (found by its columns, not its position)."""
    return next(df.value for df in app.dataframe if "Setting" in df.value.columns)


def test_home_links_to_the_correlations_which_show_every_method_and_measure(runs_env):
    home = start(HOME)
    links = [link.proto for link in home.get("page_link")]
    assert any(link.page == "Correlations" and "predict the end-to-end answer" in link.label for link in links)
    app = start(CORRELATIONS)
    [tau] = [df.value for df in app.dataframe if df.value.index.name == "Measure"]  # tau unless rho is chosen
    # Rows: the fixture's measures at K plus R-precision; columns: its three label methods.
    assert sorted(tau.index) == sorted(m for m in MEASURES if m.endswith(f"@{K}") or m == "Rprec")
    assert len(tau.columns) == len(LABEL_METHODS)
    cell = tau.iloc[0, 0]  # 6 queries: too few for an interval (rageval.stats.correlation.MIN_INTERVAL_QUERIES)
    assert cell == "undefined (constant)" or re.fullmatch(r"-?\d\.\d{3} \(no interval: n < 20\)", cell)
    assert any("bootstrap" in c.value for c in app.caption)


def test_untitled_passage_gets_a_readable_header(tmp_path, monkeypatch):
    """Some corpus passages (HAGRID quotes) have no title: the header must not show stray Markdown markers."""
    run = build_small_run()
    untitled = {p.passage_id: dataclasses.replace(p, title="") for p in run.passages}
    run = dataclasses.replace(run, passages=list(untitled.values()))
    write_run(run, tmp_path / "untitled.sqlite")
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(tmp_path))
    app = start(INSPECTOR)
    headers = [e.label for e in app.expander if "· score" in e.label]
    assert headers and all(re.match(r"\*\*\d+\\\. \(untitled passage\)\*\* · score", h) for h in headers), headers


SHIPPED_PATHS = {path.stem: path for path in list_runs(REPO / "data" / "runs")}
SHIPPED_RUNS = list(SHIPPED_PATHS)


@pytest.mark.parametrize("run", SHIPPED_RUNS)
@pytest.mark.parametrize("script", [HOME, INSPECTOR, RETEVAL], ids=["home", "inspector", "reteval"])
def test_every_shipped_run_opens_on_every_page(run, script, monkeypatch):
    use_shipped_runs(monkeypatch)
    app = start(script, run=run)
    assert not app.error, [e.value for e in app.error]
    assert app.query_params["run"] == run
    with RunReader(SHIPPED_PATHS[run]) as reader:
        e2e_ks, has_verdicts = reader.e2e_ks(), not reader.verdicts().empty
    if script == INSPECTOR:
        assert "Ranked passages" in [h.value for h in app.subheader]
    if script == HOME and e2e_ks:  # every shipped run with E2E outputs has measures: the correlations link shows
        assert any(link.proto.page == "Correlations" for link in app.get("page_link"))
    if script == RETEVAL and not has_verdicts:
        assert escape_markdown(f"Run {run} has no LLM-retEval verdicts.") in app.info[0].value


def test_the_shipped_erag_run_is_the_default():
    assert SHIPPED_RUNS[0] == "nq_open-bm25-gemma3_270m"  # the only top-level run: demo/ and retrieval/ follow


# --- a complete run: k sweep, every label method, LLM-retEval ------------------------------------------------

RETEVAL_RUN = "reteval"
#: NQ-open questions 0..39: the fake reader below gets 15-20 of them right end to end (so the correlations are
#: defined) and every judge finds failure cases; ~15 s to build on 2 busy cores.
RETEVAL_QUERIES = 40
RUN_K = 5
E2E_KS = (1, 3, 5)
RETEVAL_KS = (1, 5)
MARKUP = " <b>bold?</b>"


def fake_reader_rule(queries) -> Callable[[str], str]:
    """A :class:`FakeGenerator` rule that reads like ``tests/run_fixtures.fake_reader``, over all given passages:
    the first gold answer of the prompt's question found within the first ``READER_WINDOW`` words of a passage
    (passages in prompt order), else the first capitalised span of the first passage. So, as with a real reader,
    the end-to-end answer depends on k (more passages, more chances). The Yes/No prompts get Yes or No, as a real
    model's reply would read: relevance Yes when the passage holds a gold answer, the answer judge Yes when the
    candidate holds a reference answer (a reply neither Yes nor No would be unparsed: no label, no verdict)."""
    answers = {" ".join(q.text.split()): q.answers for q in queries}

    def rule(prompt: str) -> str:
        lines = prompt.rsplit("\n\n", 1)[-1].splitlines()
        question = next((line[len("Question:"):].strip() for line in lines if line.startswith("Question:")), "")
        if lines and lines[-1] in ("Relevant:", "Correct:"):
            field = "Passage:" if lines[-1] == "Relevant:" else "Candidate answer:"
            text = next((line[len(field):] for line in lines if line.startswith(field)), "")
            wanted = (answers.get(question, ()) if field == "Passage:" else
                      next((line[len("Reference answers:"):].split(" / ") for line in lines
                            if line.startswith("Reference answers:")), []))
            return "Yes" if any(a.strip() and contains_answer(text, (a.strip(),)) for a in wanted) else "No"
        for line in lines:
            if line.startswith("Passage:"):
                window = " ".join(line[len("Passage:"):].split()[:READER_WINDOW])
                found = [a for a in answers.get(question, ()) if contains_answer(window, (a,))]
                if found:
                    return found[0]
        return first_capitalised_span(prompt)
    return rule


def reteval_run_file(tmp_path_factory) -> Path:
    """The complete run, built once per test session (``tests/browser/test_browser.py`` uses it too): BM25 over the
    rageval corpus, k=5, E2E answers at k=1, 3, 5, every label method, LLM-retEval at k=1 and 5 with every judge;
    every LLM call goes to a :class:`FakeGenerator` with :func:`fake_reader_rule`. After the build,
    :data:`MARKUP` is appended to the question of the failure browser's first case (judge ``em``, k=1, first
    category, run order) so that tests can check question text is shown literally."""
    path = tmp_path_factory.getbasetemp() / "reteval_runs" / f"{RETEVAL_RUN}.sqlite"
    if path.exists():
        return path
    from rageval.corpus import build_corpus
    from rageval.generation.cache import CachedGenerator, LLMCache
    from rageval.pipeline.config import EvaluateConfig
    from rageval.pipeline.run import evaluate_config
    from rageval.pipeline.sources import ShippedData, shipped_queries

    assert max(E2E_KS) == RUN_K
    config = EvaluateConfig(dataset="nq_open", retriever="bm25", num_queries=RETEVAL_QUERIES,
                            k=",".join(map(str, E2E_KS)), reteval_ks=",".join(map(str, RETEVAL_KS)),
                            rerank_check=True)
    shipped = ShippedData(build_corpus())
    generator = FakeGenerator(fake_reader_rule(shipped_queries("nq_open", shipped, 0, RETEVAL_QUERIES)),
                              model_id="fake:reader/test_app")
    cache = LLMCache(tmp_path_factory.mktemp("reteval_llm_cache") / "calls.sqlite")
    run = evaluate_config(config, CachedGenerator(generator, cache), shipped=shipped, name=RETEVAL_RUN,
                          log=lambda _: None)
    order = {q.query_id: i for i, q in enumerate(run.queries)}
    first = min((c for c in run.failure_cases if c.judge == "em" and c.k == min(RETEVAL_KS)),
                key=lambda c: (c.category, order[c.query_id]))
    queries = [dataclasses.replace(q, text=q.text + MARKUP) if q.query_id == first.query_id else q
               for q in run.queries]
    return write_run(dataclasses.replace(run, queries=queries), path)


@pytest.fixture(scope="session")
def reteval_run(tmp_path_factory) -> Path:
    return reteval_run_file(tmp_path_factory)


@pytest.fixture
def reteval_env(reteval_run, monkeypatch) -> Path:
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(reteval_run.parent))
    return reteval_run


def method_of(name: str) -> str:
    """The label method a column or line is named after (unknown methods are shown as stored)."""
    return {shown: method for method, shown in fmt.METHOD_NAMES.items()}.get(name, name)


def tau_of(measures, e2e, method: str, measure: str, k: int) -> float:
    """Kendall's tau-b across queries of ``method``'s ``measure`` against the E2E EM at ``k``."""
    values = measures[(measures["method"] == method) & (measures["measure"] == measure)].set_index("query_id")
    downstream = e2e[e2e["k"] == k].set_index("query_id")["score"]
    return kendall_tau_b(values["value"].to_numpy(float), downstream.loc[values.index].to_numpy(float))


def marked_query(reader: RunReader) -> str:
    """The id of the query whose text :func:`reteval_run_file` marked with :data:`MARKUP`."""
    queries = reader.query_table()
    return queries[[MARKUP in text for text in queries["text"]]]["query_id"].item()


def correlation_tables(app):
    return [df.value for df in app.dataframe if df.value.index.name == "Measure"]


def test_reteval_fixture_run_has_what_the_pages_show(reteval_run):
    with RunReader(reteval_run) as reader:
        assert reader.e2e_ks() == list(E2E_KS) and reader.main_k() == RUN_K
        assert sorted(reader.verdicts()["k"].unique()) == list(RETEVAL_KS)
        assert not reader.failure_cases().empty and not reader.label_evidence().empty
        e2e = reader.e2e_table().pivot(index="query_id", columns="k", values="score")
        assert e2e[RUN_K].sum() >= 1  # else every correlation is undefined
        assert (e2e[1] != e2e[RUN_K]).any()  # else choosing k could not change the downstream score
        assert sum(MARKUP in text for text in reader.query_table()["text"]) == 1


def test_correlation_tables_follow_the_chosen_k(reteval_env):
    app = start(CORRELATIONS)
    with RunReader(reteval_env) as reader:
        measures, e2e, settings = reader.measure_table(), reader.e2e_table(), reader.settings()
    box = app.selectbox(key="correlations.k.widget")
    assert box.options == [str(k) for k in E2E_KS] and box.value == str(RUN_K)

    def check(k: int) -> None:
        [tau_table] = correlation_tables(app)  # tau by default; rho on a choice (test_correlation_table_statistic)
        at_k = {m for m in measures["measure"] if m.endswith(f"@{k}")}
        assert sorted(tau_table.index) == sorted(at_k | {"Rprec"})
        for method in ("erag:em", "gold", "erag:f1"):
            tau = tau_of(measures, e2e, method, f"P@{k}", k)
            cell = tau_table.loc[f"P@{k}", fmt.method_name(method)]
            assert cell == "undefined (constant)" if np.isnan(tau) else cell.startswith(f"{tau:.3f} ["), cell
        for graded in settings["graded_label_methods"]:  # graded labels have only P, nDCG and Hit
            assert tau_table.loc[f"R@{k}", fmt.method_name(graded)] == "–"
        captions = " ".join(c.value for c in app.caption)
        n_at_k = int((e2e["k"] == k).sum())
        assert f"measure at k={k} (and R-precision) and the E2E EM at k={k}" in re.sub(r"\\(.)", r"\1", captions)
        assert escape_markdown(f"{n_at_k} queries at k={k}.") in captions
        assert "have only P, nDCG and Hit" in re.sub(r"\\(.)", r"\1", captions)

        best = next(df.value for df in app.dataframe if "Best measure" in df.value.columns)
        assert len(best) > 0
        for _, row in best.iterrows():
            method = method_of(row["Labels"])
            taus = {m: tau_of(measures, e2e, method, m, k) for m in at_k
                    if ((measures["method"] == method) & (measures["measure"] == m)).any()}
            assert taus[row["Best measure"]] == pytest.approx(np.nanmax(list(taus.values())))
            assert row["Kendall's tau-b"].startswith(f"{taus[row['Best measure']]:.3f}")

    check(RUN_K)
    box.select("1").run()
    assert not app.exception
    check(1)


def test_correlation_table_statistic_is_a_choice_kept_in_the_url(reteval_env):
    """One table at a time: Kendall's tau-b by default, Spearman's rho when chosen (the radio, or ``?statistic=rho``
    in a shared link); rho cells against scipy's spearmanr."""
    from scipy.stats import spearmanr

    with RunReader(reteval_env) as reader:
        measures, e2e = reader.measure_table(), reader.e2e_table()

    def rho_of(method: str, measure: str) -> float:
        values = measures[(measures["method"] == method) & (measures["measure"] == measure)].set_index("query_id")
        downstream = e2e[e2e["k"] == RUN_K].set_index("query_id")["score"]
        return spearmanr(values["value"].to_numpy(float), downstream.loc[values.index].to_numpy(float)).statistic

    def check_rho(app) -> None:
        [table] = correlation_tables(app)
        for method in ("erag:em", "gold"):
            rho, cell = rho_of(method, f"P@{RUN_K}"), table.loc[f"P@{RUN_K}", fmt.method_name(method)]
            assert cell == "undefined (constant)" if np.isnan(rho) else cell.startswith(f"{rho:.3f} ["), cell

    app = start(CORRELATIONS)
    radio = app.radio(key="correlations.statistic.widget")
    assert radio.value == "tau" and "statistic" in app.query_params
    [tau_table] = correlation_tables(app)
    tau = tau_of(measures, e2e, "gold", f"P@{RUN_K}", RUN_K)
    assert tau_table.loc[f"P@{RUN_K}", fmt.method_name("gold")].startswith(f"{tau:.3f} [")
    radio.set_value("rho").run()
    assert not app.exception and app.query_params["statistic"] == "rho"
    check_rho(app)
    shared = start(CORRELATIONS, statistic="rho")  # a shared link opens on rho
    assert shared.radio(key="correlations.statistic.widget").value == "rho"
    check_rho(shared)


def test_k_sweep_chart_follows_each_methods_best_measure(reteval_env):
    app = start(CORRELATIONS)
    with RunReader(reteval_env) as reader:
        measures, e2e = reader.measure_table(), reader.e2e_table()
    _spec, drawn = vega_charts(app)[-1]  # the last chart: the k sweep
    lines = {name: (rows["k"].tolist(), rows["tau"].tolist()) for name, rows in drawn.groupby("line", sort=False)}
    assert lines
    for name, (ks, taus) in lines.items():
        label, family = re.fullmatch(r"(.+) \((\w+)\)", name).groups()
        method = method_of(label)
        at_main = {m.partition("@")[0]: tau_of(measures, e2e, method, m, RUN_K)
                   for m in set(measures[measures["method"] == method]["measure"]) if m.endswith(f"@{RUN_K}")}
        assert at_main[family] == pytest.approx(np.nanmax(list(at_main.values())))  # best at the run's k
        assert ks == list(E2E_KS)
        assert taus == pytest.approx([tau_of(measures, e2e, method, f"{family}@{k}", k) for k in E2E_KS])
    assert any("eRAG's Figure 1" in c.value.replace("\\", "") for c in app.caption)


def test_inspector_shows_every_k_label_evidence_and_reteval_facts(reteval_env):
    with RunReader(reteval_env) as reader:
        query_id = marked_query(reader)
        query, ranking = reader.query(query_id), reader.ranking_table(query_id)
        e2e = reader.e2e_table().query("query_id == @query_id").sort_values("k")
        evidence = reader.label_evidence(query_id)
        semi_gold = reader.semi_gold_outputs().query("query_id == @query_id").sort_values("sample")
        verdicts = reader.verdicts().query("query_id == @query_id")
        cases = reader.failure_cases().query("query_id == @query_id")
        methods = render.order_label_methods(reader.label_methods())
    app = start(INSPECTOR, query=query_id)
    assert app.subheader[0].value == escape_markdown(query.text)  # the <b> shows as text

    answers = next(df.value for df in app.dataframe if "End-to-end answer" in df.value.columns)
    assert list(answers["k"]) == list(E2E_KS) and list(answers["End-to-end answer"]) == list(e2e["output"])
    assert list(answers["EM"]) == [f"{'✓' if s == 1 else '✗'} {s:g}" for s in e2e["score"]]

    table = ranked_passages(app)
    gold_first = [m for m in ("gold", "qrels", "gold_page") if m in methods]
    gold_first += [m for m in methods if m not in gold_first]  # issue 42: gold labels right after the score
    assert list(table.columns[3:3 + len(methods)]) == [fmt.method_name(m) for m in gold_first]

    # Issue 42: a table whose cells wrap (a data grid cut the evidence mid-word).
    assert not [df for df in app.dataframe if "Evidence" in df.value.columns and "Label" in df.value.columns]
    shown = next(t.value for t in app.table if "Evidence" in t.value.columns).reset_index()
    assert sorted(shown["Evidence"]) == sorted(map(render_evidence.evidence_reply_first, evidence["evidence"]))
    # An LLM's reply comes first and the model last (a long model id first cut the reply off in the cell).
    replies = [(text.partition(" replied ")[0], text.partition(" replied ")[2]) for text in evidence["evidence"]
               if " replied '" in text]
    assert replies and all(any(cell.startswith(reply) and cell.endswith(f"(replied by {model})")
                               for cell in shown["Evidence"]) for model, reply in replies)
    ranks = dict(zip(ranking["passage_id"], ranking["rank"]))
    assert all(rank == ranks[pid] for rank, pid in zip(shown["Rank"], shown["Passage id"]))

    samples = next(df.value for df in app.dataframe if "Answer from the gold passages" in df.value.columns)
    assert list(samples["Answer from the gold passages"]) == list(semi_gold["output"])

    failures = next(df.value for df in app.dataframe if "Meaning" in df.value.columns)
    assert sorted(zip(failures["k"], failures["Category"], failures["Reason"])) == \
        sorted(zip(cases["k"], cases["category"], cases["reason"]))
    assert all(meaning == reteval.CATEGORY_NAMES[c] for c, meaning in zip(failures["Category"], failures["Meaning"]))

    # The verdicts as one judge x k table (rows: judge and reference), the evidence of each in a table below.
    pivot = next(df.value for df in app.dataframe if df.value.index.name == "Judge vs reference")
    assert list(pivot.columns) == [f"k={k}" for k in sorted(verdicts["k"].unique())]
    assert len(pivot) == verdicts.groupby(["judge", "reference"]).ngroups
    for row in verdicts.itertuples():
        cell = pivot.loc[f"{fmt.judge_name(row.judge)} vs {render.REFERENCE_NAMES[row.reference]}", f"k={row.k}"]
        assert cell == ("Yes" if row.verdict else "No")
    judged = next(df.value for df in app.dataframe if "Verdict" in df.value.columns)
    assert sorted(zip(judged["k"], judged["Verdict"], judged["Evidence"])) == \
        sorted(zip(verdicts["k"], ["Yes" if v else "No" for v in verdicts["verdict"]], verdicts["evidence"]))
    assert "LLM_retEval" in [link.proto.page for link in app.get("page_link")]


def reteval_frame(app):
    return app.dataframe[0].value


def test_reteval_page_reproduces_the_papers_table_with_the_engine(reteval_env):
    app = start(RETEVAL)
    assert app.query_params["judge"] == "em"  # the default judge when the run has it
    with RunReader(reteval_env) as reader:
        verdicts, cases, e2e = reader.verdicts(), reader.failure_cases(), reader.e2e_table()
        rankings = {q: r.passage_ids for q, r in reader.rankings().items()}
        gold = {q: reader.query(q).gold_passage_ids for q in rankings}
        thresholds = reader.settings()["reteval"]
    rows = dict(render_evidence.RETEVAL_ROWS)

    def check(judge: str) -> None:
        table = reteval_frame(app)
        assert list(table.columns) == [f"k={k}" for k in RETEVAL_KS]
        for k in RETEVAL_KS:
            column = table[f"k={k}"]
            judged = verdicts[(verdicts["judge"] == judge) & (verdicts["k"] == k)]
            semi = judged[judged["reference"] == reteval.SEMI_GOLD].set_index("query_id")["verdict"]
            against_gold = judged[judged["reference"] == reteval.GOLD_ANSWERS].set_index("query_id")["verdict"]
            recall, precision, f1 = np.mean([reteval.recall_precision_f1(rankings[q], gold[q], k)
                                             for q in semi.index], axis=0)
            assert column[rows["recall"]] == f"{recall:.3f}"
            assert column[rows["precision"]] == f"{precision:.3f}" and column[rows["f1"]] == f"{f1:.3f}"
            em = e2e[e2e["k"] == k].set_index("query_id")["score"]
            # shares of 0/1 outcomes: a percentage with its Wilson interval over the judged queries (ui.format)
            for row, outcomes in (("llm_reteval", semi), ("qa_accuracy", against_gold.loc[semi.index]),
                                  ("qa_em", em.loc[semi.index])):
                low, high = wilson_interval(int(outcomes.sum()), len(outcomes))
                assert column[rows[row]] == (f"{100 * outcomes.mean():.1f}% [{100 * low:.1f}%, "
                                             f"{100 * high:.1f}%]")
            assert column[rows["n"]] == str(len(semi))
            at_k = cases[(cases["judge"] == judge) & (cases["k"] == k)]
            for category in "ABCDEF":
                assert column[rows[category]] == str(int((at_k["category"] == category).sum()))
            recall_failed = at_k[at_k["category"].isin(reteval.RECALL_FAILURES)]["query_id"].nunique()
            assert column[rows["recall_failures"]] == str(recall_failed)

    check("em")
    app.selectbox(key="reteval.judge.widget").select("token_f1").run()
    assert not app.exception and app.query_params["judge"] == "token_f1"
    check("token_f1")
    assert any(escape_markdown(f"judge token F1 (threshold {thresholds['f1_threshold']:g})") in c.value
               for c in app.caption)


def failure_browser(app):
    return next(df.value for df in app.dataframe if "Reason" in df.value.columns)


def test_failure_case_browser_filters_and_links_to_the_inspector(reteval_env):
    app = start(RETEVAL)
    with RunReader(reteval_env) as reader:
        cases = reader.failure_cases().query("judge == 'em'")
        texts = dict(zip(reader.query_table()["query_id"], reader.query_table()["text"]))
        marked = marked_query(reader)

    def expected(k, categories="ABCDEF"):
        return cases[(cases["k"] == k) & cases["category"].isin(list(categories))]

    shown, want = failure_browser(app), expected(1)
    assert sorted(zip(shown["Category"], shown["Reason"])) == sorted(zip(want["category"], want["reason"]))
    links = [parse_qs(urlsplit(url).query) for url in shown["Inspect"]]
    assert all(urlsplit(url).path == "Query_inspector" for url in shown["Inspect"])
    assert all(link["run"] == [RETEVAL_RUN] for link in links)
    assert [texts[link["query"][0]] for link in links] == list(shown["Question"])
    # The first case is the marked question's (reteval_run_file): its text and reason are shown as text.
    assert shown["Question"].iloc[0] == texts[marked]
    assert [t.value for t in app.text] == [texts[marked], shown["Reason"].iloc[0]]
    assert MARKUP in app.text[0].value

    # Filter to the (k, category) with the most cases (which one depends on the fake reader's answers).
    k_chosen, category = cases.groupby(["k", "category"]).size().idxmax()
    app.selectbox(key="reteval.k.widget").select(str(k_chosen)).run()
    app.multiselect(key="reteval.categories").set_value([category]).run()
    # the filters are in the URL, so the view can be shared
    assert (app.query_params["k"], app.query_params["category"]) == (str(k_chosen), category)
    shown, want = failure_browser(app), expected(k_chosen, category)
    assert len(want) and list(shown["Category"]) == [category] * len(want)
    assert sorted(shown["Reason"]) == sorted(want["reason"])
    assert escape_markdown(f"{len(want)} failure cases") in " ".join(c.value for c in app.caption)

    case_box = app.selectbox(key="reteval.case.widget")
    assert len(case_box.options) == len(want)
    case_box.select_index(len(want) - 1).run()
    query_id, category = app.selectbox(key="reteval.case.widget").value.rsplit(" ", 1)
    assert app.query_params["case"] == f"{query_id} {category}"
    shared = start(RETEVAL, run=RETEVAL_RUN, k=str(k_chosen), category=category, case=f"{query_id} {category}")
    assert shared.selectbox(key="reteval.case.widget").value == f"{query_id} {category}" and not shared.warning
    reason = want[(want["query_id"] == query_id) & (want["category"] == category)]["reason"].item()
    assert [t.value for t in app.text] == [texts[query_id], reason]
    links = {link.proto.label: link.proto for link in app.get("page_link") if link.proto.page == "Query_inspector"}
    listed = list(dict.fromkeys(shown["Question"].map({t: q for q, t in texts.items()})))
    assert f"Walk these {len(listed)} queries in the query inspector" in links
    params = {key: value[0] for key, value in parse_qs(links["Open this query in the query inspector"]
                                                       .query_string).items()}
    assert params["run"] == RETEVAL_RUN and params["query"] == query_id
    assert params["list_name"] == f"LLM-retEval failures, exact match, k={k_chosen}, {category}"

    # Following the link: the inspector opens on that query of that run, inside the list of the shown cases.
    app.query_params.clear()
    app.query_params.update(params)
    app.switch_page("app_pages/1_Query_inspector.py").run()
    assert not app.exception
    assert query_box(app).value == query_id and app.query_params["run"] == RETEVAL_RUN
    assert app.subheader[0].value == escape_markdown(texts[query_id])
    assert query_box(app).options == [f"{texts[q]}  [{q}]" for q in listed]
    assert escape_markdown(f"Case {listed.index(query_id) + 1} of {len(listed)} · {params['list_name']}") in \
        [m.value for m in app.markdown]

    # No category chosen: an explanation instead of an empty table.
    app.switch_page("app_pages/2_LLM_retEval.py").run()
    app.multiselect(key="reteval.categories").set_value([]).run()
    assert "No failure case" in app.info[0].value and not any("Reason" in df.value.columns for df in app.dataframe)


def test_reteval_page_on_a_run_without_verdicts_says_so(runs_env):
    app = start(RETEVAL)
    assert app.title[0].value == "LLM-retEval"
    assert app.info[0].value.startswith(escape_markdown("Run fixture has no LLM-retEval verdicts."))
    assert not app.dataframe


def test_the_chosen_run_survives_the_sidebar_navigation(reteval_run, tmp_path, monkeypatch):
    """The run selector is a widget on every page, and Streamlit makes each page's widget a new one: the run
    chosen on one page must still be the run on the next, not the folder's default (the newest run)."""
    older = tmp_path / f"{RETEVAL_RUN}.sqlite"
    older.write_bytes(reteval_run.read_bytes())
    os.utime(older, (1_000_000, 1_000_000))
    make_small_run(tmp_path / "fixture.sqlite")
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(tmp_path))
    with RunReader(older) as reader:
        first_query = reader.query_table()["query_id"].iloc[0]

    app = start(RETEVAL, run=RETEVAL_RUN)
    assert app.selectbox(key="app.run.widget").value == RETEVAL_RUN
    app.query_params.clear()  # the sidebar navigation drops the URL's query parameters
    app.switch_page("app_pages/1_Query_inspector.py").run()
    assert not app.exception
    assert app.selectbox(key="app.run.widget").value == RETEVAL_RUN and app.query_params["run"] == RETEVAL_RUN
    assert query_box(app).value == first_query
