"""AppTest tests of the cross-run failure-case browser (app_pages/7_Failure_cases.py) on two complete runs built with
the fake reader (tests/ui/test_app.py's ``reteval_run_file``; the second a copy relabelled as another retriever) and
on the shipped runs. Expected counts are recomputed from the run files."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from rageval.store import RunReader
from tests.app_helpers import captions, use_shipped_runs, vega_charts
from tests.run_fixtures import make_small_run
from tests.ui.test_app import RETEVAL_RUN, link_walk, reteval_run_file, start

REPO = Path(__file__).resolve().parents[2]
FAILURES = str(REPO / "app_pages" / "7_Failure_cases.py")
COPY = "reteval-copy-as-dense"


@pytest.fixture(scope="module")
def runs_folder(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("failure_runs")
    original = shutil.copy(reteval_run_file(tmp_path_factory), folder / f"{RETEVAL_RUN}.sqlite")
    copy = shutil.copy(original, folder / f"{COPY}.sqlite")
    with sqlite3.connect(copy) as connection:  # the same cases, presented as another retriever's run
        settings = json.loads(connection.execute("SELECT value FROM meta WHERE key = 'settings'").fetchone()[0])
        connection.execute("UPDATE meta SET value = ? WHERE key = 'settings'",
                           (json.dumps({**settings, "retriever": "dense-copy"}),))
    make_small_run(folder / "no-verdicts.sqlite")  # a run without LLM-retEval contributes nothing
    return folder


def retriever_of(path: Path) -> str:
    with RunReader(path) as reader:
        return reader.settings()["retriever"]


def cases_of(path: Path) -> pd.DataFrame:  # noqa: F821
    with RunReader(path) as reader:
        return reader.failure_cases()


def counts(app):
    return next(df.value for df in app.dataframe if "A" in df.value.columns)


def cases_table(app):
    return next(df.value for df in app.dataframe if "Inspect" in df.value.columns)


def test_counts_per_run_and_k_and_links_to_the_inspector(runs_folder, monkeypatch):
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(runs_folder))
    app = start(FAILURES)
    expected = cases_of(runs_folder / f"{RETEVAL_RUN}.sqlite").query("judge == 'em'")
    table = counts(app)
    assert set(table["Run"]) == {RETEVAL_RUN, COPY}
    mine = table[table["Run"] == RETEVAL_RUN].set_index("k")
    for (k, category), group in expected.groupby(["k", "category"]):
        assert mine.loc[k, category] == group["query_id"].nunique()
    assert list(table.columns) == ["Run", "k", "A", "B", "C", "D", "E", "F"]

    shown = cases_table(app)
    assert len(shown) == 2 * len(expected)  # the copy repeats every case
    links = [urlsplit(url) for url in shown["Inspect"]]
    assert {link.path for link in links} == {"Query_inspector"}
    pairs = {(parse_qs(link.query)["run"][0], parse_qs(link.query)["query"][0]) for link in links}
    assert pairs == {(run, q) for run in (RETEVAL_RUN, COPY) for q in expected["query_id"]}
    spec, drawn = vega_charts(app)[0]  # the chart's own rows, as the browser gets them
    assert spec["title"].startswith("LLM-retEval failure cases per k")
    assert spec["facet"]["field"] == "run" and set(drawn["run"]) == {RETEVAL_RUN, COPY}
    wide = drawn.pivot_table(index=["run", "k"], columns="category", values="queries", fill_value=0)
    for row in table.itertuples(index=False):
        for category in "ABCDEF":
            assert wide.get(category, {}).get((row.Run, str(row.k)), 0) == getattr(row, category)


def test_url_presets_the_filters_and_the_retriever_filter_drops_a_run(runs_folder, monkeypatch):
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(runs_folder))
    expected = cases_of(runs_folder / f"{RETEVAL_RUN}.sqlite").query("judge == 'em'")
    (k, category), _ = max(expected.groupby(["k", "category"]), key=lambda item: len(item[1]))
    app = start(FAILURES, category=category, k=str(k), retriever="dense-copy")
    shown = cases_table(app)
    assert set(shown["Run"]) == {COPY} and set(shown["Category"]) == {category} and set(shown["k"]) == {k}
    want = expected[(expected["k"] == k) & (expected["category"] == category)]
    assert sorted(shown["Reason"]) == sorted(want["reason"])

    original = retriever_of(runs_folder / f"{RETEVAL_RUN}.sqlite")
    app.multiselect(key="failures.retrievers").set_value([original, "dense-copy"]).run()
    assert not app.exception and app.query_params["retriever"] == [original, "dense-copy"]
    assert set(cases_table(app)["Run"]) == {RETEVAL_RUN, COPY}

    app.multiselect(key="failures.categories").set_value([]).run()
    assert not app.exception and "No failure case passes these filters" in app.info[0].value


def test_another_judge_shows_its_own_cases(runs_folder, monkeypatch):
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(runs_folder))
    app = start(FAILURES, judge="token_f1", retriever=retriever_of(runs_folder / f"{RETEVAL_RUN}.sqlite"))
    expected = cases_of(runs_folder / f"{RETEVAL_RUN}.sqlite").query("judge == 'token_f1'")
    assert sorted(cases_table(app)["Reason"]) == sorted(expected["reason"])


def test_without_any_failure_case_the_page_says_how_to_get_some(tmp_path, monkeypatch):
    make_small_run(tmp_path / "fixture.sqlite")
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(tmp_path))
    app = start(FAILURES)
    assert "compute it for a run of yours above" in app.info[0].value and not app.dataframe
    # No dead end: the panel for the chosen run (the fixture lacks LLM-retEval) and commands that run on user data.
    assert "What this run lacks" in " ".join(m.value for m in app.markdown)
    assert [c.value for c in app.code] == [f"rageval rescore start {tmp_path / 'fixture.sqlite'} --complete",
                                           "rageval evaluate --queries Q.jsonl --corpus C.jsonl --run R.trec "
                                           "--methods all"]


def test_shipped_runs_with_llm_reteval_are_all_shown(monkeypatch):
    use_shipped_runs(monkeypatch)
    app = start(FAILURES)
    assert set(counts(app)["Run"]) == {"nq_open-bm25-gemma3_270m", "nq_open-dense-gemma3_270m"}


def test_a_chosen_case_shows_its_question_and_reason_as_text_and_links_to_its_run(runs_folder, monkeypatch):
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(runs_folder))
    app = start(FAILURES, retriever="dense-copy")
    box = app.selectbox(key="failures.case.widget")
    box.select_index(len(box.options) - 1).run()
    chosen = app.selectbox(key="failures.case.widget").value
    assert app.query_params["case"] == chosen  # the case is in the URL, so the view can be shared
    shared = start(FAILURES, retriever="dense-copy", case=chosen)  # the link opens the same case
    assert shared.selectbox(key="failures.case.widget").value == chosen and not shared.warning
    run, query_id, k, category = chosen.split(" ")
    assert run == COPY
    with RunReader(runs_folder / f"{COPY}.sqlite") as reader:
        cases = reader.failure_cases().query("judge == 'em'")
        text = dict(zip(reader.query_table()["query_id"], reader.query_table()["text"]))[query_id]
    reason = cases[(cases["query_id"] == query_id) & (cases["k"] == int(k)) & (cases["category"] == category)]
    assert [t.value for t in app.text] == [text, reason["reason"].item()]
    link = next(link.proto for link in app.get("page_link") if link.proto.label.startswith("Open this query"))
    with RunReader(runs_folder / f"{COPY}.sqlite") as reader:
        order = reader.query_table()["query_id"]
    run, query, walked, name = link_walk("?" + link.query_string, order)
    assert (run, query) == (COPY, query_id)
    # It walks the run's queries of the table in the table's order (one worklist per run on this page), as each
    # row's own link does.
    rows = [link_walk(url, order) for url, row_run in zip(cases_table(app)["Inspect"], cases_table(app)["Run"])
            if row_run == COPY]
    assert walked == list(dict.fromkeys(q for _, q, _, _ in rows)) and all(w == walked for _, _, w, _ in rows)
    assert name.endswith(f"· {COPY}")
    walks = {link.proto.label: link.proto.query_string for link in app.get("page_link")}
    walk = walks[f"Walk the {len(walked)} queries of run {COPY} in the query inspector"]
    assert link_walk("?" + walk, order)[1:3] == (walked[0], walked)


def listed_cases(app, run_file: Path) -> set[tuple[str, int, str]]:
    """(query id, k, category) of the cases table's rows (the query read back from each row's inspector link)."""
    with RunReader(run_file) as reader:
        order = reader.query_table()["query_id"]
    table = cases_table(app)
    ks = table["k"] if "k" in table else [int(app.selectbox(key="reteval.k.widget").value)] * len(table)
    return {(link_walk(url, order)[1], int(k), category)
            for url, k, category in zip(table["Inspect"], ks, table["Category"])}


def test_a_long_case_list_is_cut_but_a_shared_case_past_the_cut_still_opens(runs_folder, monkeypatch):
    """Past ui.render.CASE_ROWS cases (set to 5 here) the table and the case picker list the first ones and say so;
    the walk link still carries every case's query, and a ?case= link to a case further down opens it."""
    from ui import render

    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(runs_folder))
    monkeypatch.setattr(render, "CASE_ROWS", 5)
    original = retriever_of(runs_folder / f"{RETEVAL_RUN}.sqlite")
    expected = cases_of(runs_folder / f"{RETEVAL_RUN}.sqlite").query("judge == 'em'")
    assert len(expected) > 6
    app = start(FAILURES, retriever=original)
    assert len(cases_table(app)) == 5 and len(app.selectbox(key="failures.case.widget").options) == 5
    assert any("the first 5 are listed below" in c.value for c in app.caption)
    walk = next(link.proto for link in app.get("page_link") if link.proto.label.startswith("Walk the"))
    assert walk.label == f"Walk the {expected['query_id'].nunique()} queries of run {RETEVAL_RUN} in the query " \
                         "inspector"
    listed = listed_cases(app, runs_folder / f"{RETEVAL_RUN}.sqlite")
    last = next(row for row in expected.itertuples() if (row.query_id, row.k, row.category) not in listed)
    wanted = f"{RETEVAL_RUN} {last.query_id} {last.k} {last.category}"
    shared = start(FAILURES, retriever=original, case=wanted)
    assert shared.selectbox(key="failures.case.widget").value == wanted and not shared.warning
    assert len(cases_table(shared)) == 6 and last.reason in [t.value for t in shared.text]


def test_llm_reteval_cuts_a_long_case_list_the_same_way(runs_folder, monkeypatch):
    from tests.ui.test_app import RETEVAL
    from ui import render

    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(runs_folder))
    monkeypatch.setattr(render, "CASE_ROWS", 3)
    app = start(RETEVAL, run=RETEVAL_RUN)
    k = int(app.selectbox(key="reteval.k.widget").value)
    expected = cases_of(runs_folder / f"{RETEVAL_RUN}.sqlite").query("judge == 'em'")
    expected = expected[expected["k"] == k]
    assert len(expected) > 4
    assert len(cases_table(app)) == 3 and len(app.selectbox(key="reteval.case.widget").options) == 3
    assert any(f"{len(expected)} failure cases" in c.value and "the first 3 are listed below" in c.value
               for c in app.caption)
    listed = listed_cases(app, runs_folder / f"{RETEVAL_RUN}.sqlite")
    wanted = next(f"{row.query_id} {row.category}" for row in expected.itertuples()
                  if (row.query_id, k, row.category) not in listed)
    shared = start(RETEVAL, run=RETEVAL_RUN, case=wanted)
    assert shared.selectbox(key="reteval.case.widget").value == wanted
    assert not shared.warning and len(cases_table(shared)) == 4
    longer = start(RETEVAL, run=RETEVAL_RUN, rows="1000")  # "Cases listed": every case of this run
    assert longer.selectbox(key="reteval.rows.widget").value == "1000"
    assert len(cases_table(longer)) == len(expected) and not any("are listed below" in c.value
                                                                   for c in longer.caption)


def test_cases_listed_is_a_choice_kept_in_the_url(runs_folder, monkeypatch):
    """Failure cases lists ui.render.CASE_ROWS cases (3 here) unless "Cases listed" asks for more; the choice is in
    the URL (?rows=), so a shared view lists as many."""
    from ui import render

    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(runs_folder))
    monkeypatch.setattr(render, "CASE_ROWS", 3)
    original = retriever_of(runs_folder / f"{RETEVAL_RUN}.sqlite")
    expected = cases_of(runs_folder / f"{RETEVAL_RUN}.sqlite").query("judge == 'em'")
    app = start(FAILURES, retriever=original)
    rows = app.selectbox(key="failures.rows.widget")
    assert rows.options == ["at most 3", "at most 1,000", "at most 5,000"] and rows.value == "3"
    assert len(cases_table(app)) == 3
    rows.select("1000").run()
    assert not app.exception and app.query_params["rows"] == "1000"
    assert len(cases_table(app)) == len(expected) == len(app.selectbox(key="failures.case.widget").options)
    assert not any("are listed below" in c.value for c in app.caption)
    shared = start(FAILURES, retriever=original, rows="1000")
    assert len(cases_table(shared)) == len(expected)


SMALL = "small-run"


@pytest.fixture(scope="module")
def small_beside_big(tmp_path_factory) -> Path:
    """The 40-query run beside a copy that keeps the cases of 2 queries only (a user's small run beside a demo run):
    the copy's bars are counts of 1-2 next to the big run's dozens."""
    folder = tmp_path_factory.mktemp("small_beside_big")
    original = shutil.copy(reteval_run_file(tmp_path_factory), folder / f"{RETEVAL_RUN}.sqlite")
    small = shutil.copy(original, folder / f"{SMALL}.sqlite")
    with sqlite3.connect(small) as connection:
        kept = [q for (q,) in connection.execute(
            "SELECT DISTINCT query_id FROM failure_cases WHERE judge = 'em' ORDER BY query_id LIMIT 2")]
        connection.execute("DELETE FROM failure_cases WHERE query_id NOT IN (?, ?)", kept)
        settings = json.loads(connection.execute("SELECT value FROM meta WHERE key = 'settings'").fetchone()[0])
        connection.execute("UPDATE meta SET value = ? WHERE key = 'settings'",
                           (json.dumps({**settings, "retriever": "small-copy"}),))
    return folder


def test_a_small_run_beside_a_big_one_has_its_own_scale_and_a_link_opens_it_alone(small_beside_big, monkeypatch):
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(small_beside_big))
    big = cases_of(small_beside_big / f"{RETEVAL_RUN}.sqlite").query("judge == 'em'")
    small = cases_of(small_beside_big / f"{SMALL}.sqlite").query("judge == 'em'")
    assert small["query_id"].nunique() == 2 and big["query_id"].nunique() > 10  # the sizes the test is about
    app = start(FAILURES)
    spec, drawn = vega_charts(app)[0]
    # Each panel its own y scale (a shared one, 0 to the big run's dozens, flattened the small run's bars of 1-2).
    assert spec["resolve"] == {"scale": {"y": "independent"}}
    assert "own y scale" in captions(app)
    mine = drawn[drawn["run"] == SMALL].set_index(["k", "category"])["queries"]
    expected = small.groupby(["k", "category"])["query_id"].nunique()
    assert {(str(k), c): n for (k, c), n in expected.items()} == mine.to_dict()
    assert max(mine) <= 2 < drawn[drawn["run"] == RETEVAL_RUN]["queries"].max()

    linked = start(FAILURES, run=SMALL)  # as the LLM-retEval page links here for one run
    assert not linked.warning and linked.multiselect(key="failures.runs").value == [SMALL]
    assert set(counts(linked)["Run"]) == {SMALL} and set(cases_table(linked)["Run"]) == {SMALL}
    assert set(vega_charts(linked)[0][1]["run"]) == {SMALL}
    assert len(cases_table(linked)) == len(small)
    linked.multiselect(key="failures.runs").set_value([RETEVAL_RUN, SMALL]).run()
    assert not linked.exception and linked.query_params["run"] == [RETEVAL_RUN, SMALL]
    assert set(counts(linked)["Run"]) == {RETEVAL_RUN, SMALL}


def test_llm_reteval_links_to_the_failure_cases_of_its_run(small_beside_big, monkeypatch):
    from tests.ui.test_app import RETEVAL

    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(small_beside_big))
    app = start(RETEVAL, run=SMALL)
    link = next(link.proto for link in app.get("page_link") if "failure cases at every k" in link.proto.label)
    assert link.page.endswith("Failure_cases") or "7_Failure_cases" in link.page
    assert parse_qs(link.query_string) == {"run": [SMALL], "judge": ["em"]}
