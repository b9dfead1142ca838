"""One formatter and one look, tried on the pages (AppTest): no table cell shows "None" or "nan", every page says
the question it answers under its title, the glossary has an anchor per term, and Compare runs pairs a run with
one that shares its queries. On the fixture runs of tests/ui/test_app.py (the complete fake-reader run and the small
run) and the shipped runs of data/runs."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from rageval.store import RunReader
from tests.app_helpers import captions, use_shipped_runs
from tests.run_fixtures import make_small_run
from tests.ui.test_app import RETEVAL_RUN, reteval_run_file, start
from ui import format as fmt
from ui import glossary, navigation, render_compare
from ui.render import escape_markdown

REPO = Path(__file__).resolve().parents[2]
SMALL_RUN = "small"
COPY = "reteval-copy-as-dense"


@pytest.fixture(scope="module")
def look_folder(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("look_runs")
    original = shutil.copy(reteval_run_file(tmp_path_factory), folder / f"{RETEVAL_RUN}.sqlite")
    copy = shutil.copy(original, folder / f"{COPY}.sqlite")
    with sqlite3.connect(copy) as connection:  # the same queries, presented as another retriever's run
        settings = json.loads(connection.execute("SELECT value FROM meta WHERE key = 'settings'").fetchone()[0])
        connection.execute("UPDATE meta SET value = ? WHERE key = 'settings'",
                           (json.dumps({**settings, "retriever": "dense-copy"}),))
    make_small_run(folder / f"{SMALL_RUN}.sqlite")
    return folder


@pytest.fixture
def look_env(look_folder, monkeypatch) -> Path:
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(look_folder))
    return look_folder


def leaked_cells(app) -> list[str]:
    """Every table cell (index included) that shows a missing value as "None"/"nan" instead of "–"."""
    leaks = []
    for number, table in enumerate(app.dataframe):
        frame: pd.DataFrame = table.value
        for column in frame.columns:
            for row, value in zip(frame.index, frame[column].astype(object)):
                if fmt.shown_missing(value):
                    leaks.append(f"table {number} column {column!r} row {row!r}: {value!r}")
        leaks += [f"table {number} index: {v!r}" for v in frame.index if fmt.shown_missing(v)]
    return leaks


MAIN_PAGES = [navigation.HOME, navigation.INSPECTOR, navigation.RETEVAL, navigation.CORRELATIONS, navigation.COMPARE,
              navigation.FAILURES]


@pytest.mark.parametrize("run", [RETEVAL_RUN, SMALL_RUN])
@pytest.mark.parametrize("page", MAIN_PAGES, ids=[Path(p).stem for p in MAIN_PAGES])
def test_no_table_cell_shows_none_or_nan(page, run, look_env):
    params = {"run_a": run} if page == navigation.COMPARE else {"run": run}
    app = start(str(REPO / page), **params)
    if run == RETEVAL_RUN:  # the complete run fills every page
        assert app.dataframe, "the page shows a table"
    assert not leaked_cells(app), leaked_cells(app)


# --- the question under each title, the glossary ------------------------------------------------------------

OWN_PAGES = [navigation.RETEVAL, navigation.CORRELATIONS, navigation.COMPARE, navigation.FAILURES,
             navigation.RESCORE, navigation.UPLOAD, navigation.GLOSSARY, navigation.QUEUES]


@pytest.mark.parametrize("page", OWN_PAGES, ids=[Path(p).stem for p in OWN_PAGES])
def test_every_page_says_the_question_it_answers(page, look_env):
    app = start(str(REPO / page), run=RETEVAL_RUN, run_a=RETEVAL_RUN)
    question = navigation.BY_FILE[page].question
    assert app.caption[0].value == escape_markdown(question)  # right under the title


@pytest.mark.parametrize("page", [navigation.CITATIONS, navigation.AGENTS])
def test_pages_of_other_run_kinds_say_their_question_on_the_shipped_runs(page, monkeypatch):
    use_shipped_runs(monkeypatch)
    app = start(str(REPO / page))
    assert app.caption[0].value == escape_markdown(navigation.BY_FILE[page].question)
    assert not leaked_cells(app), leaked_cells(app)


# The terms issue 15 names as undefined jargon, by anchor.
REQUIRED_ANCHORS = {"erag", "e2e", "semi-gold", "refined", "autoais", "alce", "urag", "mcnemar", "rr", "rprec", "ndcg",
                    "p-at-k", "hit", "kendall-tau", "spearman-rho", "wilson-interval", "bootstrap-interval",
                    "failure-categories", "ium", "kappa", *(f"category-{c}" for c in "abcdef")}


def test_glossary_page_has_an_anchor_per_term(look_env):
    entry = navigation.BY_FILE[navigation.GLOSSARY]
    assert (entry.section, entry.icon, entry.url_path) == ("Overview", ":material/menu_book:", "Glossary")
    assert navigation.glossary_url("ndcg") == "Glossary#ndcg"
    app = start(str(REPO / navigation.GLOSSARY))
    assert app.title[0].value == "Glossary"
    anchors = [h.proto.anchor for h in app.subheader]
    assert len(anchors) == len(set(anchors)) == len(glossary.terms())
    assert set(anchors) >= REQUIRED_ANCHORS
    assert all(re.fullmatch(r"[a-z0-9-]+", a) for a in anchors)  # usable in a URL as they are
    index = app.markdown[0].value
    assert all(f"](#{a})" in index for a in anchors)  # the list at the top links to every term
    sources = [c.value for c in app.caption[1:]]
    assert len(sources) == len(glossary.terms()) and all(sources)  # each term says where it comes from
    ndcg = [h.value for h in app.subheader].index(escape_markdown(glossary.by_anchor()["ndcg"].name))
    assert "Järvelin" in sources[ndcg]
    # Issue 42: the yes/no rule of the failure rules and the em judge is stated, and where it does not apply.
    check = [h.value for h in app.subheader].index(escape_markdown(glossary.by_anchor()["gold-answer-check"].name))
    stated = " ".join(m.value for m in app.markdown).replace("\\", "")  # Markdown escapes dropped
    assert "(\"Yes, both are women's magazines.\" answers \"yes\")" in stated
    assert "stay strict SQuAD exact match" in stated
    assert "rageval.text_metrics.yes_no_answers" in sources[check].replace("\\", "")


def test_glossary_lists_a_judge_loaded_after_the_server_started(look_env, tmp_path, monkeypatch):
    """A team's judge file read once the dashboard runs (the Re-score form, a run's stored judge) is in the Glossary
    on its next render: the terms are read from the registry at each render, not when the module was imported."""
    from rageval import labelmethods

    monkeypatch.setattr(labelmethods, "_REGISTRY", dict(labelmethods._REGISTRY))  # this test's judge stays here
    before = start(str(REPO / navigation.GLOSSARY))
    judge = tmp_path / "late_judge.toml"
    judge.write_text((REPO / "docs" / "judges" / "answer_present.toml").read_text(encoding="utf-8").replace(
        'name = "answer_present"', 'name = "late_judge"'), encoding="utf-8")
    kind = labelmethods.load_judge_file(judge)
    after = start(str(REPO / navigation.GLOSSARY))
    names = [h.value for h in after.subheader]
    assert escape_markdown(f"{kind.display} ({kind.name})") in names
    assert len(names) == len(before.subheader) + 1
    assert "method-late-judge" in {h.proto.anchor for h in after.subheader}


# --- compare: a partner that shares queries ----------------------------------------------------------------

def query_ids(path: Path) -> set[str]:
    with RunReader(path) as reader:
        return set(reader.query_ids())


def test_default_partner_is_the_run_sharing_most_queries():
    settings = {"a": {"dataset": "nq", "retriever": "bm25"}, "same-dataset-no-overlap": {"dataset": "nq",
                "retriever": "dense"}, "overlap": {"dataset": "other", "retriever": "bm25"},
                "more-overlap": {"dataset": "other", "retriever": "bm25"}}
    runs = list(settings)
    assert render_compare.default_partner("a", runs, settings, {"a": 9, "same-dataset-no-overlap": 0, "overlap": 3,
                                                               "more-overlap": 5}) == "more-overlap"
    # equal overlaps: the same dataset with another retriever first, as before
    assert render_compare.default_partner("a", runs, settings) == "same-dataset-no-overlap"
    assert render_compare.sharing_runs("a", {"a": 9, "x": 0, "y": 3, "z": 5}) == ["z (5)", "y (3)"]


def test_compare_defaults_to_a_partner_sharing_queries_and_refuses_a_pair_without(look_env):
    app = start(str(REPO / navigation.COMPARE), run_a=RETEVAL_RUN)
    assert app.query_params["run_b"] == COPY
    shared = query_ids(look_env / f"{RETEVAL_RUN}.sqlite") & query_ids(look_env / f"{COPY}.sqlite")
    assert escape_markdown(f"{len(shared):,} shared queries (B is the run that shares the most queries with A)") \
        in captions(app)
    box = app.sidebar.selectbox[1]
    assert box.format_func(COPY) == f"{COPY} · {len(shared):,} shared"
    assert not app.warning

    small_shared = query_ids(look_env / f"{SMALL_RUN}.sqlite") & query_ids(look_env / f"{RETEVAL_RUN}.sqlite")
    refused = start(str(REPO / navigation.COMPARE), run_a=SMALL_RUN, run_b=RETEVAL_RUN)
    if small_shared:  # the fixtures' questions overlap: the pair is compared on them
        assert not refused.warning
    else:
        assert refused.warning[0].value.startswith(escape_markdown(
            f"Runs {SMALL_RUN} and {RETEVAL_RUN} have no query in common"))
        assert not refused.metric


# --- pages list the runs they can show ----------------------------------------------------------------------

def test_llm_reteval_lists_only_runs_with_verdicts_with_a_switch_and_no_dead_end(look_env):
    app = start(str(REPO / navigation.RETEVAL))
    box = app.selectbox(key="app.run.widget")
    assert set(box.options) == {RETEVAL_RUN, COPY}  # "small" has no verdicts
    assert app.toggle(key="app.all_runs").help.startswith(escape_markdown("2 of 3 runs have LLM-retEval verdicts"))
    app.toggle(key="app.all_runs").set_value(True).run()
    assert SMALL_RUN in app.selectbox(key="app.run.widget").options
    assert app.query_params["all_runs"] == "1"  # the switch is in the URL too

    shared_link = start(str(REPO / navigation.RETEVAL), all_runs="1")
    assert shared_link.toggle(key="app.all_runs").value and SMALL_RUN in shared_link.selectbox(
        key="app.run.widget").options

    lacking = start(str(REPO / navigation.RETEVAL), run=SMALL_RUN)  # a link to a run without verdicts still opens it
    assert lacking.selectbox(key="app.run.widget").value == SMALL_RUN and not lacking.warning
    links = {(link.proto.label, link.proto.query_string) for link in lacking.get("page_link")}
    assert {(RETEVAL_RUN, f"run={RETEVAL_RUN}"), (COPY, f"run={COPY}")} <= links  # the runs that have it, one click


def test_correlations_lists_only_runs_with_e2e_answers_and_measures(tmp_path, look_folder, monkeypatch):
    from tests.user_run_fixtures import build_uploaded_run

    folder = tmp_path / "runs"
    folder.mkdir()
    shutil.copy(look_folder / f"{SMALL_RUN}.sqlite", folder / f"{SMALL_RUN}.sqlite")
    build_uploaded_run(tmp_path / "files", folder, "uploaded")  # an upload: rankings, no E2E answers, newest
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(folder))
    app = start(str(REPO / navigation.CORRELATIONS))
    assert app.selectbox(key="app.run.widget").options == [SMALL_RUN]
    assert app.get("vega_lite_chart")  # the compatible run is shown, not the newest (the upload)


def column_help(table) -> dict[str, str]:
    """The header help of each column of a shown table (its column config)."""
    return {column: config.get("help", "") for column, config in json.loads(table.proto.columns).items()}


def test_failure_case_tables_say_what_their_columns_mean(look_env):
    app = start(str(REPO / navigation.FAILURES))
    counts = next(t for t in app.dataframe if "A" in t.value.columns)
    assert column_help(counts)["A"] == "Queries in category A: not all correct passages annotated"
    cases = next(t for t in app.dataframe if "Reason" in t.value.columns)
    helps = column_help(cases)
    assert helps["Category"] == glossary.COLUMN_HELP["Category"] and helps["Reason"] == glossary.COLUMN_HELP["Reason"]
    assert helps["Inspect"].startswith("Open this query of this run in the query inspector")  # the page's own help


def test_home_intervals_of_0_1_measures_are_wilson(look_env):
    from rageval.stats.intervals import wilson_interval
    from tests.run_fixtures import K

    app = start(str(REPO / navigation.HOME), run=SMALL_RUN)
    intervals = next(t.value for t in app.dataframe if f"Hit@{K}" in t.value.columns
                     and t.value.map(lambda v: isinstance(v, str) and "[" in v).any().any())
    with RunReader(look_env / f"{SMALL_RUN}.sqlite") as reader:
        measures = reader.measure_table()
    values = measures[(measures["method"] == "gold") & (measures["measure"] == f"Hit@{K}")]["value"]
    assert set(values.unique()) <= {0.0, 1.0}
    low, high = wilson_interval(int(values.sum()), len(values))
    assert intervals.loc["gold", f"Hit@{K}"] == fmt.format_estimate(values.mean(), low, high)
    assert 0 <= low <= high <= 1


def test_compare_shows_a_mean_of_0_1_scores_as_a_share_with_its_wilson_interval(look_env):
    from rageval.stats.intervals import wilson_interval

    app = start(str(REPO / navigation.COMPARE), run_a=RETEVAL_RUN, run_b=COPY, method="e2e", measure="E2E@5")
    with RunReader(look_env / f"{RETEVAL_RUN}.sqlite") as reader:
        e2e = reader.e2e_table()
    scores = e2e[e2e["k"] == 5]["score"]  # the copy has the same answers, so every query is shared
    mean_a = next(m for m in app.metric if m.label == "Mean A")
    assert mean_a.value == fmt.format_share(scores.mean())
    low, high = wilson_interval(int(scores.sum()), len(scores))
    assert fmt.format_share_interval(low, high) in mean_a.help
