"""AppTest tests of the home page (app_pages/0_Home.py, "Findings") on the fixture run (tests/run_fixtures.py) and
variants of it: the 2 x 2's cells and their inspector links (a worklist that decodes to the cell's queries, checked
against pandas), the finding sentences' links, the warnings on degenerate label methods, and the leaderboard of
runs with a damaged file beside the good ones."""

from __future__ import annotations

import dataclasses
import math
import os
import re
import sqlite3
from pathlib import Path
from urllib.parse import parse_qs

import pandas as pd
import pytest

from rageval.paths import REPO_ROOT
from rageval.stats.correlation import MIN_INTERVAL_QUERIES
from rageval.store import APPLICATION_ID, Label, MeasureValue, RunReader, write_run
from tests.app_helpers import use_shipped_runs
from tests.engine.test_findings import pandas_two_by_two
from tests.run_fixtures import K, build_constant_e2e_run, build_small_run, make_small_run
from tests.ui.test_app import CORRELATIONS, HOME, RETEVAL_RUN, reteval_run_file, start
from ui import worklist


def links(app) -> list:
    return [link.proto for link in app.get("page_link")]


def params_of(link) -> dict[str, str]:
    return {key: values[0] for key, values in parse_qs(link.query_string).items()}


def plain(text: str) -> str:
    return text.replace("\\", "")


@pytest.fixture
def fixture_env(tmp_path, monkeypatch) -> Path:
    path = make_small_run(tmp_path / "fixture.sqlite")
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(tmp_path))
    return path


def test_two_by_two_cells_open_the_inspector_on_their_queries(fixture_env):
    app = start(HOME)
    assert app.title[0].value == "Findings"
    assert app.caption[0].value == "What does this run say about its retrieval, and how do all runs compare?"
    assert f"Gold passage retrieved × answer right at k={K}" in [h.value for h in app.subheader]
    with RunReader(fixture_env) as reader:
        order = reader.query_table()["query_id"].tolist()
    expected = pandas_two_by_two(fixture_env, K)
    cell_links = [link for link in links(app) if re.fullmatch(r"Inspect these [\d,]+", link.label)]
    assert len(cell_links) == sum(1 for ids in expected.values() if ids)  # a cell without queries has no link
    opened = {}
    for link in cell_links:
        params = params_of(link)
        assert link.page == "Query_inspector" and params["run"] == "fixture"
        ids = worklist.decode_worklist(params[worklist.LIST_PARAM], order)
        assert params["query"] == ids[0] and link.label == f"Inspect these {len(ids)}"
        opened[params[worklist.NAME_PARAM]] = ids
    for (gold, right), ids in expected.items():
        name = f"gold {'retrieved' if gold else 'not retrieved'}, answer {'right' if right else 'wrong'} at k={K}"
        assert opened.get(name, []) == ids, name
    counts = [m.value for m in app.markdown if m.value.startswith("### ")]
    assert counts == [f"### {len(expected[g, r])}" for g in (True, False) for r in (True, False)]
    caption = plain(" ".join(c.value for c in app.caption))
    assert "Wilson 95% intervals" in caption and "gold_passage_ids" in caption and "at least 0.5" in caption


def test_finding_sentences_link_to_the_pages_that_prove_them(fixture_env):
    app = start(HOME)
    texts = [plain(m.value) for m in app.markdown]
    wrong = len(pandas_two_by_two(fixture_env, K)[True, False])
    assert any(t.startswith(f"{wrong} of 6 queries (") and f"top {K} yet answer wrongly" in t for t in texts)
    correlation = next(t for t in texts if "Kendall's tau" in t)  # 6 queries: no interval, no verdict
    assert f"too few queries for an interval (n = 6 < {MIN_INTERVAL_QUERIES})" in correlation
    assert f"6 queries, k={K}" in correlation
    to_correlations = next(link for link in links(app) if link.label == "See the correlations")
    params = params_of(to_correlations)
    assert to_correlations.page == "Correlations" and params["run"] == "fixture" and params["k"] == str(K)
    assert params["method"].startswith("erag:") and params["measure"].endswith(f"@{K}")
    follow = start(CORRELATIONS, **params)  # the link's view opens with that method and measure
    assert follow.query_params["method"] == params["method"] and follow.query_params["measure"] == params["measure"]
    # No warning but the small-sample note (6 queries): the link names nothing unknown.
    assert [w.value for w in follow.warning] == [next(w.value for w in follow.warning if "Small sample" in w.value)]


def test_degenerate_label_methods_are_warned_about(tmp_path, monkeypatch):
    run = build_small_run()
    always = [MeasureValue("always", f"P@{K}", q.query_id, 1.0) for q in run.queries]
    labels = [Label("always", r.query_id, p.passage_id, 1.0) for r in run.rankings for p in r.passages]
    write_run(dataclasses.replace(run, measure_values=[*run.measure_values, *always], labels=[*run.labels, *labels]),
              tmp_path / "odd.sqlite")
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(tmp_path))
    app = start(HOME)
    box = next(plain(w.value) for w in app.warning if "correlations mean little" in w.value)
    assert f"always: P@{K} is 1 for all 6 queries, so its correlation with the answer is undefined." in box
    assert "gold:" not in box and "eRAG EM:" not in box


def test_a_run_without_gold_passages_says_so(tmp_path, monkeypatch):
    run = build_small_run()
    queries = [dataclasses.replace(q, gold_passage_ids=()) for q in run.queries]
    labels = [x for x in run.labels if x.method != "gold"]
    write_run(dataclasses.replace(run, queries=queries, labels=labels), tmp_path / "nogold.sqlite")
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(tmp_path))
    app = start(HOME)
    assert any("No query of this run has gold passages" in box.value for box in app.info)
    assert not [link for link in links(app) if re.fullmatch(r"Inspect these [\d,]+", link.label)]
    assert any(h.value == "All runs" for h in app.subheader)  # no dead end: the rest of the page is there


def leaderboard(app):
    return next(df.value for df in app.dataframe if "Best eRAG measure" in df.value.columns)


def test_leaderboard_lists_every_run_and_names_a_damaged_one(tmp_path, monkeypatch):
    run = build_small_run()
    make_small_run(tmp_path / "fixture.sqlite")
    worse = [dataclasses.replace(e, score=0.0) for e in run.e2e_outputs]
    write_run(dataclasses.replace(run, e2e_outputs=worse, settings={**run.settings, "dataset": "other"}),
              tmp_path / "worse.sqlite")
    broken = tmp_path / "broken.sqlite"  # a run by its kind, of a schema from the future: listed, not readable
    connection = sqlite3.connect(broken)
    connection.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    connection.execute("PRAGMA user_version = 99")
    connection.execute("CREATE TABLE t (x)")
    connection.close()
    os.utime(broken, (1_000_000, 1_000_000))  # the oldest: the default run is a good one
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(tmp_path))
    app = start(HOME, run="fixture")
    assert not app.error
    box = next(plain(w.value) for w in app.warning if "could not be read and are left out" in w.value)
    assert str(broken) in box and "schema version 99" in box
    board = leaderboard(app)
    assert list(board["Run"]) == ["fixture", "worse"]  # higher lower bound first; the broken file is not a row
    assert list(board["Rank"]) == ["=1", "=1"]  # 6 queries each: the intervals overlap, neither ranks above
    with RunReader(tmp_path / "fixture.sqlite") as reader:
        mean = reader.query_table()["e2e_score"].mean()
    fixture = board.set_index("Run").loc["fixture"]
    assert fixture["E2E score"].startswith(f"EM {mean:.3f} [") and fixture["k"] == str(K)
    assert fixture["Queries"] == "6 · small" and fixture["Dataset"] == "nq_open (first 6 oracle questions)"
    assert board.set_index("Run").loc["worse", "E2E score"] == "EM 0.000 [0.00, 0.39]"  # Wilson, 0 of 6
    assert list(board["Open"]) == ["?run=fixture", "?run=worse"]
    other = start(HOME, run="worse")  # a row's link: that run's findings
    assert other.query_params["run"] == "worse"
    assert "Run worse.sqlite" in plain(" ".join(c.value for c in other.caption))


def test_leaderboard_ranks_by_what_the_intervals_support():
    """Issue 42: a 6-query run ("EM 0.333 [0.10, 0.70]") was ranked above 300-query runs by its point estimate. A
    run now ranks below another only when its interval lies wholly below that one's; small runs are marked."""
    from ui import render_findings as view

    def row(run, e2e, low, high, n):
        return {"run": run, "dataset": "d", "retriever": "r", "model": "m", "k": 5, "queries": n, "metric": "em",
                "e2e": e2e, "e2e_low": low, "e2e_high": high, "e2e_n": n, "interval": "Wilson", "best_method": "",
                "best_measure": "", "tau": math.nan, "tau_low": math.nan, "tau_high": math.nan, "tau_n": 0,
                "correlations": "not stored"}

    rows = pd.DataFrame([row("tiny", 0.333, 0.10, 0.70, 6), row("big", 0.30, 0.25, 0.35, 300),
                         row("bad", 0.05, 0.03, 0.08, 300), row("none", math.nan, math.nan, math.nan, 0)])
    board = view.leaderboard_view(rows)
    assert list(board["Run"]) == ["big", "tiny", "bad", "none"]  # within a shared rank: the higher lower bound
    assert list(board["Rank"]) == ["=1", "=1", "3", "–"]  # big and tiny overlap; bad lies wholly below both
    assert list(board["Queries"]) == ["300", "6 · small", "300", "0"]


def test_leaderboard_best_erag_measure_is_the_correlation_pages_best(fixture_env):
    """The fixture run stores no correlations and is small: the leaderboard shows the best eRAG measure of the
    Correlations page's own table (rageval.correlations.best_measures), with its tau and interval."""
    from rageval.correlations import best_measures, correlation_table_at_k

    with RunReader(fixture_env) as reader:
        table = correlation_table_at_k(reader.measure_table(), reader.e2e_table(), K, with_rprec=True)
    best = best_measures(table, K)
    best = best[best["method"].str.startswith("erag:")].iloc[0]
    row = leaderboard(start(HOME)).set_index("Run").loc["fixture"]
    assert best["method"] == "erag:em" and row["Best eRAG measure"] == f"eRAG EM {best['measure']}"
    assert row["Kendall's tau"] == f"{best['tau']:.3f} (no interval: n < {MIN_INTERVAL_QUERIES})"


@pytest.fixture
def complete_env(tmp_path_factory, monkeypatch) -> Path:
    """The complete run of tests/ui/test_app.py (built once per session) alone in a runs folder."""
    folder = tmp_path_factory.mktemp("complete")
    path = folder / f"{RETEVAL_RUN}.sqlite"
    path.write_bytes(reteval_run_file(tmp_path_factory).read_bytes())
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(folder))
    return path


def test_findings_of_a_complete_run_link_to_llm_reteval_and_the_llm_relevance_measures(complete_env):
    """The complete run (every label method, LLM-retEval): the LLM-relevance share of Yes and the failure cases
    A-C / D-F at the run's k, each counted here from the run's tables, with links to the pages that show them."""
    with RunReader(complete_env) as reader:
        k = reader.main_k()
        llm = reader.labels("llm_relevance")
        verdicts, cases = reader.verdicts(), reader.failure_cases()
    app = start(HOME, run=complete_env.stem)
    texts = [plain(m.value) for m in app.markdown]
    yes = int((llm["value"] > 0).sum())
    assert any(t.startswith(f"The LLM relevance baseline says Yes (relevant) to {yes / len(llm):.0%} [") and
               f"of the {len(llm):,} passages it labelled" in t for t in texts)
    judged = verdicts[(verdicts["judge"] == "em") & (verdicts["k"] == k) & (verdicts["reference"] == "semi_gold")]
    at_k = cases[(cases["judge"] == "em") & (cases["k"] == k)]
    recall = at_k[at_k["category"].isin(["A", "B", "C"])]["query_id"].nunique()
    reteval = at_k[at_k["category"].isin(["D", "E", "F"])]["query_id"].nunique()
    n = judged["query_id"].nunique()
    assert any(t.startswith(f"At k={k} (judge exact match), {recall} of {n} judged queries (") and
               f"and {reteval} (" in t for t in texts)
    by_label = {link.label: link for link in links(app)}
    failures = by_label["See the failure cases"]
    assert failures.page == "LLM_retEval" and params_of(failures) == {"run": complete_env.stem, "judge": "em"}
    llm_link = by_label["See its measures"]
    assert llm_link.page == "Correlations" and params_of(llm_link)["method"] == "llm_relevance"


def stored_correlation(method: str, measure: str, tau: float, low: float, high: float):
    from rageval.store import Correlation

    return Correlation(K, method, measure, 6, tau, low, high, tau, low, high, 300, 0.95)


def test_stored_correlations_are_read_and_a_large_run_is_never_bootstrapped(tmp_path, monkeypatch):
    """A run that stores its correlations: the sentence and the leaderboard use them as stored (made-up values here,
    so that they cannot come from a computation). A run above SMALL_RUN_QUERIES without them: no correlation
    sentence and no computed tau, but the caption says why."""
    from ui import data_findings

    run = build_small_run()
    stored = [stored_correlation("erag:em", f"P@{K}", 0.61, 0.51, 0.71),
              stored_correlation("gold", f"Hit@{K}", 0.11, 0.01, 0.21)]
    write_run(dataclasses.replace(run, correlations=stored), tmp_path / "stored.sqlite")
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(tmp_path))
    app = start(HOME, run="stored")
    texts = [plain(m.value) for m in app.markdown]
    # 6 queries: the stored estimates without their intervals (too few queries for one), and no verdict.
    assert (f"eRAG EM labels: Kendall's tau 0.61 (P@{K}); gold labels: 0.11 (Hit@{K}); too few queries for an "
            f"interval (n = 6 < {MIN_INTERVAL_QUERIES}), so which predicts the answer better cannot be told; 6 "
            f"queries, k={K}.") in texts
    row = leaderboard(app).set_index("Run").loc["stored"]
    assert row["Best eRAG measure"] == f"eRAG EM P@{K}"
    assert row["Kendall's tau"] == f"0.610 (no interval: n < {MIN_INTERVAL_QUERIES})"

    make_small_run(tmp_path / "large.sqlite")
    monkeypatch.setattr(data_findings, "SMALL_RUN_QUERIES", 3)  # the 6-query fixture counts as large
    import streamlit as st

    st.cache_data.clear()
    app = start(HOME, run="large")
    assert not [m for m in app.markdown if "labels predict the answer" in m.value]
    assert any("stores no correlations" in c.value for c in app.caption)
    assert leaderboard(app).set_index("Run").loc["large", "Best eRAG measure"] == "not stored"


def test_measure_table_says_how_graded_ndcg_and_list_bound_recall_read(monkeypatch):
    """Issue 34: "eRAG BERTScore nDCG@1 1.000" next to "P@1 0.340", and eRAG EM R@5 = R@10, read as wrong. The
    run overview's nDCG and R columns say their convention (header help and a footnote), and the shown values bear
    the recall note out: eRAG EM's R@c equals its Hit@c."""
    from ui import glossary

    use_shipped_runs(monkeypatch)
    run = "nq_open-bm25-gemma3_270m"
    with RunReader(Path(__file__).resolve().parents[2] / "data" / "runs" / f"{run}.sqlite") as reader:
        methods = set(reader.label_methods())
    assert {"erag:em", "erag:bertscore"} <= methods  # what the notes are about
    app = start(HOME, run=run)
    footnote = next(c.value for c in app.caption if "Read with care" in c.value)
    assert plain(glossary.GRADED_NDCG_NOTE.split(":")[1].strip()[:40]) in plain(footnote)
    graded, bound = (plain(footnote).split(part, 1)[1].split(")", 1)[0] for part in ("Graded labels (",
                                                                                     "List-bound labels ("))
    assert "eRAG BERTScore" in graded and "eRAG EM" in bound and "eRAG EM" not in graded
    summary = next(df.value for df in app.dataframe if "nDCG@1" in df.value.columns and "n" in df.value.columns)
    erag_em = summary.loc["eRAG EM"]
    for k in (1, 5, 10):
        if f"R@{k}" in summary.columns:
            assert float(erag_em[f"R@{k}"]) == pytest.approx(float(erag_em[f"Hit@{k}"]), abs=5e-4)  # text ("–")


def test_findings_name_the_constant_answer_not_the_labels(tmp_path, monkeypatch):
    """Issue 34: a run whose E2E EM is 0 for every query at its k (5) and varies at k=1. The findings say the
    answer's side is constant and link to k=1; a label method constant there too is not blamed for it; the page
    says the sample is small; the correlation sentence gives no interval for 6 queries."""
    write_run(build_constant_e2e_run(), tmp_path / "constant.sqlite")
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(tmp_path))
    app = start(HOME)
    sentences = [plain(m.value) for m in app.markdown]
    assert (f"The E2E EM at k={K} is 0 for all 6 queries: nothing to correlate with, so no label method's "
            f"correlation with the answer is defined at k={K}; at k=1 it varies.") in sentences
    link = next(link for link in links(app) if link.label == "Correlations at k=1")
    assert params_of(link) == {"run": "constant", "k": "1"}
    assert not any(s.startswith(("eRAG", "erag")) and "predict" in s for s in sentences)  # nothing defined at k=5
    warnings = " ".join(plain(w.value) for w in app.warning)
    assert "Small sample: 6 queries." in warnings
    assert "so its correlation with the answer is undefined" not in warnings


def test_the_leaderboard_gives_no_interval_for_a_small_runs_tau(fixture_env):
    app = start(HOME)
    board = next(df.value for df in app.dataframe if "Kendall's tau" in df.value.columns)
    cell = board.loc[board["Run"] == "fixture", "Kendall's tau"].iloc[0]
    assert cell.endswith(f"(no interval: n < {MIN_INTERVAL_QUERIES})") and "[" not in cell


@pytest.mark.parametrize("page", ["app_pages/0_Home.py", "app_pages/2_LLM_retEval.py",
                                  "app_pages/5_Correlations.py"])
def test_unread_judge_answers_are_one_compact_notice(page, monkeypatch):
    """Issue 42: the shipped NQ run opened Home, LLM-retEval and Correlations with one long yellow box per judge
    and reference ("61 of 900 answers of the judge ... could not be parsed ..."). Now one short notice, each
    judge's sentence behind it."""
    use_shipped_runs(monkeypatch)
    app = start(str(REPO_ROOT / page), run="nq_open-bm25-gemma3_270m")
    notices = [plain(w.value) for w in app.warning if "could not be parsed" in w.value]
    assert notices == ["149 of 4,800 LLM judge answers could not be parsed (3 judges); what that leaves out: "
                       "under \"Unread judge answers\"."]
    (details,) = [e for e in app.expander if e.label == "Unread judge answers"]
    text = plain(" ".join(m.value for m in details.markdown))
    assert text.count("could not be parsed") == 3 and "61 of 900 answers of the judge" in text
