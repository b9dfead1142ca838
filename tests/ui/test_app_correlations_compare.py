"""AppTest tests of the correlations page and the compare-runs page, on the fixture runs (``tests/run_fixtures.py``,
the reversed-ranking pair of ``tests/engine/test_compare.py``, the complete fake-reader run of
``tests/ui/test_app.py``) and on the shipped runs in ``data/runs``. Expected values are read back from the run files
and recomputed with the engine or scipy, or restated from the fixtures' construction (cited where used).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from rageval.correlations import correlation_table_at_k
from rageval.stats.correlation import DEFAULT_RESAMPLES, MIN_INTERVAL_QUERIES, kendall_tau_b
from rageval.store import RunReader, write_run
from tests.app_helpers import captions, frame_with, use_shipped_runs, vega_charts
from tests.engine.test_compare import RUN_A, RUN_B, brute_force_p, read_scores, write_fixture_pair
from tests.run_fixtures import MEASURES, K, build_constant_e2e_run, build_small_run, make_small_run
from tests.ui.test_app import MARKUP, SHIPPED_PATHS, link_walk, marked_query, reteval_run_file, start
from ui import format as fmt
from ui import render_correlations, theme
from ui.render import escape_markdown, format_correlation

REPO = Path(__file__).resolve().parents[2]
CORRELATIONS = str(REPO / "app_pages" / "5_Correlations.py")
COMPARE = str(REPO / "app_pages" / "6_Compare_runs.py")
SCATTER_SUBTITLE = render_correlations.SCATTER_SUBTITLE


def metrics(app) -> dict[str, str]:
    """Each metric's value; a correlation's with the interval the line under it gives (``0.412 [0.21, 0.60]``, as
    :func:`ui.format.format_correlation` writes it)."""
    shown = {m.label: m.value for m in app.metric}
    intervals = [c.value.removeprefix("95% interval ") for c in app.caption
                 if c.value.startswith(("95% interval ", "no interval"))]
    for name, interval in zip(("Kendall's tau-b", "Spearman's rho"), intervals):
        if name in shown and interval.startswith("["):
            shown[name] = f"{shown[name]} {interval}"
    return shown


def expected_metric(value: float, low: float, high: float, n: int) -> str:
    """A correlation as the page shows it over ``n`` queries: with its interval from
    :data:`~rageval.stats.correlation.MIN_INTERVAL_QUERIES` queries on, the estimate alone below (the coverage rule,
    tests/stats/test_interval_coverage.py)."""
    return format_correlation(value, low, high) if n >= MIN_INTERVAL_QUERIES else format_correlation(value, np.nan,
                                                                                                   np.nan)


# --- correlations -------------------------------------------------------------------------------------------

def scatter(app) -> pd.DataFrame:
    """The correlation scatter's points: query_id, question (as in the tooltip), value, e2e (exact) and x, y
    (drawn): the rows the browser gets with the Vega-Lite chart."""
    spec, data = next((spec, data) for spec, data in vega_charts(app)
                      if isinstance(spec.get("title"), dict) and spec["title"]["text"][-1] == SCATTER_SUBTITLE)
    assert spec["encoding"]["x"]["field"] == "x" and spec["encoding"]["y"]["field"] == "y"  # the drawn columns
    assert list(data["row"]) == list(range(len(data)))  # what a click selection returns
    return data.rename(columns={"query": "query_id"})[["query_id", "question", "value", "e2e", "x", "y"]]


def stored_points(path: Path, method: str, measure: str, k: int) -> pd.DataFrame:
    """(value, e2e) per query, read from the run file without the dashboard: queries with both, by id."""
    with RunReader(path) as reader:
        measures, e2e = reader.measure_table(), reader.e2e_table()
    values = measures[(measures["method"] == method) & (measures["measure"] == measure)].set_index("query_id")
    downstream = e2e[e2e["k"] == k].set_index("query_id")["score"]
    shared = sorted(set(values.index) & set(downstream.index))
    return pd.DataFrame({"value": values.loc[shared, "value"].to_numpy(float),
                         "e2e": downstream.loc[shared].to_numpy(float)}, index=pd.Index(shared, name="query_id"))


def check_scatter(app, path: Path, method: str, measure: str, k: int) -> pd.DataFrame:
    """The scatter has one point per query with both scores, holding exactly the stored values, drawn within the
    jitter (a quarter of the smallest gap between distinct values, at most a tenth of their range)."""
    points = scatter(app).set_index("query_id").sort_index()
    expected = stored_points(path, method, measure, k)
    assert list(points.index) == list(expected.index)
    np.testing.assert_allclose(points["value"], expected["value"])
    np.testing.assert_allclose(points["e2e"], expected["e2e"])
    for drawn, exact in (("x", "value"), ("y", "e2e")):
        levels = np.unique(expected[exact])
        bound = min(np.diff(levels).min() / 4, (levels[-1] - levels[0]) / 10) if len(levels) > 1 else 0.1
        assert (np.abs(points[drawn] - points[exact]) <= bound + 1e-12).all(), drawn
    return points


@pytest.fixture(scope="module")
def fixture_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("correlation_runs")
    make_small_run(folder / "fixture.sqlite")
    return folder


@pytest.fixture
def fixture_env(fixture_dir, monkeypatch) -> Path:
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(fixture_dir))
    return fixture_dir / "fixture.sqlite"


def test_correlations_default_view_shows_the_runs_per_query_values(fixture_env):
    app = start(CORRELATIONS)
    # Defaults: the first label method in display order, the run's k, the first measure at k.
    assert dict(app.query_params) == {"run": "fixture", "method": "erag:em", "k": str(K), "measure": f"P@{K}",
                                      "statistic": "tau"}
    points = check_scatter(app, fixture_env, "erag:em", f"P@{K}", K)
    assert len(points) == 6  # tests/run_fixtures.py: 6 questions, each with an E2E answer at K
    with RunReader(fixture_env) as reader:
        texts = dict(zip(reader.query_table()["query_id"], reader.query_table()["text"]))
    assert points["question"].to_dict() == texts  # plain questions: nothing to escape

    counts = frame_with(app, "all")  # the exact counts behind the jittered points
    assert counts.loc["all", "all"] == 6
    expected = pd.crosstab(points["value"].round(3), points["e2e"].round(3))
    assert counts.drop(index="all", columns="all").to_numpy().tolist() == expected.to_numpy().tolist()

    queries = frame_with(app, "Inspect")
    with RunReader(fixture_env) as reader:
        order = reader.query_table()["query_id"]
    # Each row's link opens its query and walks the table's queries in the table's order; so does the page link.
    shown = queries["Query"].tolist()
    assert [link_walk(url, order)[:3] for url in queries["Inspect"]] == [("fixture", q, shown) for q in shown]
    walk = next(link.proto for link in app.get("page_link") if link.proto.label.startswith("Open these 6"))
    assert link_walk("?" + walk.query_string, order)[:3] == ("fixture", shown[0], shown)
    assert queries["E2E EM@5"].is_monotonic_increasing  # wrong answers first
    assert escape_markdown("6 queries") in captions(app) and escape_markdown("k=5") in captions(app)


@pytest.mark.parametrize("method, measure", [("gold", f"RR@{K}"), ("contains_answer", f"nDCG@{K}"),
                                             ("erag:em", "Rprec")])
def test_correlations_url_parameters_select_method_and_measure(fixture_env, method, measure):
    app = start(CORRELATIONS, run="fixture", method=method, measure=measure, k=str(K))
    assert app.selectbox(key="correlations.method.widget").value == method
    assert app.selectbox(key="correlations.measure.widget").value == measure
    check_scatter(app, fixture_env, method, measure, K)
    points = stored_points(fixture_env, method, measure, K)
    tau = kendall_tau_b(points["value"].to_numpy(), points["e2e"].to_numpy())
    shown = metrics(app)["Kendall's tau-b"]
    if np.isnan(tau):
        assert shown == "undefined (constant)"
    else:  # 6 queries: no interval, and the words that say why
        assert shown == f"{tau:.3f}"
        assert f"too few queries for an interval (n = 6 < {MIN_INTERVAL_QUERIES})" in captions(app)


def test_correlations_bad_url_parameters_fall_back(fixture_env):
    app = start(CORRELATIONS, run="fixture", method="no-such-method", measure="P@99", k="7", statistic="r2")
    assert dict(app.query_params) == {"run": "fixture", "method": "erag:em", "k": str(K), "measure": f"P@{K}",
                                      "statistic": "tau"}


def test_correlations_on_a_run_without_e2e_answers_explains_why(tmp_path, monkeypatch):
    write_run(dataclasses.replace(build_small_run(), e2e_outputs=[]), tmp_path / "no-e2e.sqlite")
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(tmp_path))
    app = start(CORRELATIONS)
    assert not app.get("plotly_chart")
    assert app.info[0].value.startswith(escape_markdown("Run no-e2e stores no end-to-end answers"))
    # No dead end: what the run lacks, the button that computes it, and the same as a command on this file.
    assert "What this run lacks" in " ".join(m.value for m in app.markdown)
    assert app.button(key="FormSubmitter:lacks.form-Compute missing pieces")
    command = f"rageval rescore start {tmp_path / 'no-e2e.sqlite'} --complete"
    assert [c.value for c in app.code] == [command, command]


def test_correlations_with_no_measure_at_the_e2e_k_offer_every_cutoff(tmp_path, monkeypatch):
    """A run whose E2E answers are at k=3 while its measures are at cutoff 5: the measures at 5 stay selectable."""
    run = build_small_run()
    write_run(dataclasses.replace(run, e2e_outputs=[dataclasses.replace(o, k=3) for o in run.e2e_outputs]),
              tmp_path / "k3.sqlite")
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(tmp_path))
    app = start(CORRELATIONS, method="gold", measure=f"nDCG@{K}")
    assert app.selectbox(key="correlations.measure.widget").options == list(MEASURES)
    check_scatter(app, tmp_path / "k3.sqlite", "gold", f"nDCG@{K}", 3)
    assert "Kendall's tau-b" not in metrics(app)
    assert escape_markdown(f"gold nDCG@{K} is not measured at cutoff 3") in captions(app)


def test_selected_points_are_read_from_the_vega_lite_event():
    """The event as Streamlit returns it (checked in Chromium by tests/browser/test_browser_pages.py): a dragged box is
    {field: [low, high]} on the drawn (jittered) positions, clicked points are [{"row": i}]."""
    points = pd.DataFrame({"query_id": list("abcdef"), "question": [""] * 6,
                           "value": [0.0, 0.0, 0.5, 0.5, 1.0, 1.0], "e2e": [0.0, 1.0, 0.0, 1.0, 0.0, 1.0]})
    data, _spec = render_correlations.scatter_chart(points, "gold", "P@5", 5, "E2E EM")
    upper_left = {"x": [-0.2, 0.2], "y": [0.8, 1.2]}  # around (0, 1) whatever the jitter (at most 0.1 here)
    assert render_correlations.selected_rows({"selection": {"box": upper_left}}, points) == [1]
    right_half = {"x": [0.8, 1.2], "y": [1.2, -0.2]}  # either end first
    assert render_correlations.selected_rows({"selection": {"box": right_half}}, points) == [4, 5]
    inside = (data["x"] >= 0.3) & (data["y"] <= 0.5)  # a box read on the drawn positions, as the user saw them
    box = {"x": [0.3, 2.0], "y": [-1.0, 0.5]}
    assert render_correlations.selected_rows({"selection": {"box": box}}, points) == data.index[inside].tolist()
    clicked = {"selection": {"pick": [{"row": 3}, {"row": 0}, {"row": 99}], "box": upper_left}}
    assert render_correlations.selected_rows(clicked, points) == [0, 1, 3]  # out-of-range rows ignored
    for nothing in (None, {}, {"selection": {}}, {"selection": {"box": {}, "pick": []}}):
        assert render_correlations.selected_rows(nothing, points) == []


def test_a_density_cell_click_selects_the_queries_in_that_cell():
    rng = np.random.default_rng(3)
    n = render_correlations.SCATTER_MAX_POINTS + 1
    points = pd.DataFrame({"query_id": [f"q{i}" for i in range(n)], "question": [""] * n,
                           "value": rng.choice([0.0, 0.5, 1.0], n), "e2e": rng.random(n)})
    cells, spec = render_correlations.scatter_chart(points, "gold", "P@5", 5, "E2E EM")
    assert spec["layer"][0]["params"][0]["name"] == render_correlations.CELL_SELECTION
    assert "queries" in cells and cells["queries"].sum() == n and len(cells) <= 3 * render_correlations.DENSITY_BINS
    top = cells.sort_values("queries").iloc[-1]
    event = {"selection": {"cell": [{"x_cell": top["x_cell"], "y_cell": top["y_cell"]}]}}
    chosen = render_correlations.selected_rows(event, points)
    assert len(chosen) == top["queries"]
    assert set(points["value"].iloc[chosen].map("{:.3g}".format)) == {top["x_cell"]}
    low, high = (float(v) for v in top["y_cell"].split("–"))
    assert points["e2e"].iloc[chosen].between(low - 1e-9, high + 1e-9).all()
    assert render_correlations.selected_rows({"selection": {"cell": [{"x_cell": "nope", "y_cell": "no"}]}},
                                             points) == []


@pytest.fixture(scope="module")
def reteval_env_path(tmp_path_factory) -> Path:
    return reteval_run_file(tmp_path_factory)


def test_correlations_follow_k_on_a_run_with_a_k_sweep(reteval_env_path, monkeypatch):
    """The complete fake-reader run (E2E at k = 1, 3, 5): the scatter, tau and the table follow ?k=."""
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(reteval_env_path.parent))
    run = reteval_env_path.stem
    app = start(CORRELATIONS, run=run, method="contains_answer", measure="nDCG@1", k="1")
    assert app.selectbox(key="correlations.k.widget").value == "1"
    points = check_scatter(app, reteval_env_path, "contains_answer", "nDCG@1", 1)
    with RunReader(reteval_env_path) as reader:
        table = correlation_table_at_k(reader.measure_table(), reader.e2e_table(), 1, DEFAULT_RESAMPLES,
                                       with_rprec=True).set_index(["method", "measure"])
        marked = marked_query(reader)
    row = table.loc[("contains_answer", "nDCG@1")]
    assert metrics(app)["Kendall's tau-b"] == format_correlation(row["tau"], row["tau_low"], row["tau_high"])
    assert metrics(app)["Spearman's rho"] == format_correlation(row["rho"], row["rho_low"], row["rho_high"])
    tau_table = next(df.value for df in app.dataframe if df.value.index.name == "Measure")
    assert set(tau_table.index) == set(table.index.get_level_values("measure"))
    # Question text goes into the tooltip as it is (Vega-Lite shows it as text: tests/browser/test_browser_pages.py).
    assert points.loc[marked, "question"].endswith(MARKUP.strip())

    sweep, lines = next((s, d) for s, d in vega_charts(app) if "at each k" in str(s.get("title")))
    names = {fmt.method_name(m): m for m in fmt.METHOD_NAMES}
    colours = dict(zip(sweep["encoding"]["color"]["scale"]["domain"], sweep["encoding"]["color"]["scale"]["range"]))
    for line, rows in lines.groupby("line"):
        method = names[line.rsplit(" (", 1)[0]]
        assert colours[line] == theme.METHOD_COLOURS[method]
        assert rows["k"].tolist() == [1, 3, 5]

    app = start(CORRELATIONS, run=run, method="contains_answer", measure="nDCG@3", k="3")
    check_scatter(app, reteval_env_path, "contains_answer", "nDCG@3", 3)


@pytest.mark.parametrize("run", list(SHIPPED_PATHS))
def test_correlations_on_every_shipped_run(run, monkeypatch):
    use_shipped_runs(monkeypatch)
    app = start(CORRELATIONS, run=run)
    assert not app.error, [e.value for e in app.error]
    with RunReader(SHIPPED_PATHS[run]) as reader:
        has_e2e = bool(reader.e2e_ks())
    if not has_e2e:
        assert app.info[0].value.startswith(escape_markdown(f"Run {run} stores no end-to-end answers"))
        return
    params = dict(app.query_params)
    points = check_scatter(app, SHIPPED_PATHS[run], params["method"], params["measure"], int(params["k"]))
    assert escape_markdown(f"{len(points)} queries") in captions(app)


@pytest.fixture(scope="module")
def evaluated_runs(tmp_path_factory) -> Path:
    """A run ``rageval evaluate`` built (the small invented set of tests/pipeline/test_pipeline.py, the fake
    reader, E2E at k = 1, 3), so it stores its correlations; beside it ``older`` (the same run without the correlations
    table, as files written before it existed) and ``rescored`` (a method added after the correlations were stored, as a
    re-scoring job adds one)."""
    import shutil
    import sqlite3

    from rageval.generation.base import FakeGenerator
    from rageval.pipeline import run as pipeline
    from rageval.pipeline.config import build_config
    from tests.pipeline.test_pipeline import PASSAGES, QUESTIONS, write_jsonl

    folder = tmp_path_factory.mktemp("evaluated")
    data_dir = tmp_path_factory.mktemp("evaluated_data")
    queries = write_jsonl(data_dir / "q.jsonl", [{"query_id": q, "text": t, "answers": a, "gold_passage_ids": g}
                                                  for q, t, a, g, _ in QUESTIONS])
    corpus = write_jsonl(data_dir / "c.jsonl", [{"passage_id": p, "title": t, "text": x}
                                                 for p, (t, x) in PASSAGES.items()])
    trec = data_dir / "run.trec"
    trec.write_text("".join(f"{q} Q0 {p} {r} {20 - r} sys\n" for q, *_, ranked in QUESTIONS
                            for r, p in enumerate(ranked, start=1)))
    config = build_config({}, {"queries": str(queries), "corpus": str(corpus), "run": str(trec), "k": "1,3",
                               "methods": "erag,e2e,baselines", "label_metrics": "em", "llm_relevance": False,
                               "cache": str(data_dir / "llm.sqlite"), "out": str(folder / "evaluated.sqlite")})
    path = pipeline.evaluate(config, generator=FakeGenerator(), log=lambda _: None)
    for name, sql in (("older", "DROP TABLE correlations"),
                      ("rescored", "INSERT INTO measure_values SELECT 'erag:em@other', measure, query_id, 1 - value "
                                   "FROM measure_values WHERE method = 'erag:em'")):
        shutil.copy(path, folder / f"{name}.sqlite")
        with sqlite3.connect(folder / f"{name}.sqlite") as connection:
            connection.execute(sql)
    return folder


@pytest.mark.parametrize(("run", "stored"), [("evaluated", True), ("older", False), ("rescored", False)])
def test_correlations_page_reads_the_stored_table_or_computes_it(evaluated_runs, monkeypatch, run, stored):
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(evaluated_runs))
    method, measure, k = "contains_answer", "nDCG@3", 3  # a defined tau on this set (gold P@3 is constant)
    app = start(CORRELATIONS, run=run, method=method, measure=measure, k=str(k))
    assert not app.error, [e.value for e in app.error]
    with RunReader(evaluated_runs / "evaluated.sqlite") as reader:
        saved = reader.correlations(k).set_index(["method", "measure"])
    with RunReader(evaluated_runs / f"{run}.sqlite") as reader:
        now = correlation_table_at_k(reader.measure_table(), reader.e2e_table(), k, DEFAULT_RESAMPLES,
                                     with_rprec=True).set_index(["method", "measure"])
    row = saved.loc[(method, measure)]
    # the stored numbers are those computed now from the same measures (tests/pipeline/test_pipeline.py checks all
    # cells)
    assert row[["tau", "tau_low", "tau_high"]].tolist() == now.loc[(method, measure), ["tau", "tau_low",
                                                                                      "tau_high"]].tolist()
    assert metrics(app)["Kendall's tau-b"] == expected_metric(row["tau"], row["tau_low"], row["tau_high"],
                                                              int(row["n"]))
    source = ("stored with the run when it was evaluated" if stored else
              "computed now (this run stores no correlations for these measures)")
    text = captions(app)
    assert escape_markdown(f"across {int(row['n'])} queries, with 95% percentile bootstrap intervals "
                           f"({DEFAULT_RESAMPLES:,} resamples over queries), {source}.") in text
    tau_table = next(df.value for df in app.dataframe if df.value.index.name == "Measure")
    methods_shown = set(tau_table.columns)
    assert (fmt.method_name("erag:em@other") in methods_shown) == (run == "rescored")


# --- compare runs ------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def pair_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("compare_pair")
    write_fixture_pair(folder)
    return folder


@pytest.fixture
def pair_env(pair_dir, monkeypatch) -> Path:
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(pair_dir))
    return pair_dir


def paired_tests_table(app) -> pd.DataFrame:
    return frame_with(app, "p-value (two-sided)").set_index("Test")["p-value (two-sided)"]


def compare_charts(app) -> tuple[tuple[dict, pd.DataFrame], tuple[dict, pd.DataFrame]]:
    """The compare page's two Vega-Lite charts, each as (spec, the rows the browser gets): the A-against-B scatter
    (or its grid of counts) and the histogram of A - B."""
    charts = vega_charts(app)
    assert len(charts) == 2 and not app.get("plotly_chart")  # the page loads no plotly.js
    scatter_chart = next(c for c in charts if "run A against run B" in c[0]["title"] or "(A, B) pair" in c[0]["title"])
    histogram = next(c for c in charts if c[0]["title"].startswith("Per-query difference of"))
    return scatter_chart, histogram


def histogram_counts(histogram: pd.DataFrame) -> dict[str, int]:
    """Queries per outcome in the difference histogram's bars."""
    return {o: int(n) for o, n in histogram.groupby("outcome")["queries"].sum().items()}


def outcome_scale(spec: dict) -> dict[str, str]:
    """Outcome -> colour of a compare chart's colour channel (its point or bar layer)."""
    colour = next(layer["encoding"]["color"] for layer in spec["layer"] if "color" in layer.get("encoding", {}))
    return dict(zip(colour["scale"]["domain"], colour["scale"]["range"]))


def test_compare_fixture_runs_wins_ties_losses_and_tests(pair_env):
    app = start(COMPARE, run_a=RUN_A, run_b=RUN_B, method="gold", measure=f"RR@{K}")
    shown = metrics(app)
    # tests/engine/test_compare.py: gold RR@5 on the shared nq:1..nq:4 is 1/2 vs 1/4, 1/3 vs 1/3, 1/4 vs 1/2, 1/5 vs 1.
    assert (shown["Shared queries"], shown["A better"], shown["Ties"], shown["B better"]) == ("4", "1", "1", "2")
    a, b = read_scores(pair_env / f"{RUN_A}.sqlite", "gold", f"RR@{K}"), read_scores(
        pair_env / f"{RUN_B}.sqlite", "gold", f"RR@{K}")
    shared = [q for q in a.index if q in b.index]
    assert shown["Mean A - B"] == f"{(a[shared] - b[shared]).mean():+.4f}"
    assert escape_markdown("4 queries are in both runs and compared; 1 only in A and 1 only in B are left out.") \
        in captions(app)
    assert any(w.value.startswith("**Small sample: 4 queries.**") for w in app.warning)  # issue 34

    p_values = paired_tests_table(app)
    assert len(p_values) == 2  # no McNemar: RR is not binary
    assert p_values["Sign test (exact binomial)"] == pytest.approx(stats.binomtest(1, 3, 0.5).pvalue)
    assert p_values["Paired randomization test (mean difference)"] == pytest.approx(
        brute_force_p(a[shared] - b[shared]))

    (scatter_spec, points), (histogram_spec, bars) = compare_charts(app)
    # One point per shared query with its exact scores as read from the files, coloured by outcome (ui.theme).
    assert sorted(points["query_id"]) == sorted(shared)
    assert points.set_index("query_id")["a"].to_dict() == pytest.approx(a[shared].to_dict())
    assert points.set_index("query_id")["b"].to_dict() == pytest.approx(b[shared].to_dict())
    assert points.groupby("outcome").size().to_dict() == {"A better": 1, "tie": 1, "B better": 2}
    assert points.set_index("query_id").loc[["nq:1", "nq:3"], "outcome"].tolist() == ["A better", "B better"]
    assert outcome_scale(scatter_spec) == outcome_scale(histogram_spec) == theme.OUTCOME_COLOURS
    # jittered so equal values stay apart, never by as much as the least gap between values (1/4 - 1/5)
    assert (points["x"] - points["a"]).abs().max() < 0.05 / 4 + 1e-12
    with RunReader(pair_env / f"{RUN_A}.sqlite") as reader:
        questions = reader.query_table().set_index("query_id")["text"]
    assert points.set_index("query_id")["question"].to_dict() == {q: questions[q] for q in shared}
    tooltip = next(layer["encoding"]["tooltip"] for layer in scatter_spec["layer"] if "tooltip" in layer["encoding"])
    assert [t["field"] for t in tooltip][:2] == ["query_id", "question"]
    diagonal = next(layer for layer in scatter_spec["layer"] if layer["mark"]["type"] == "line")["data"]["values"]
    assert diagonal == [{"x": 0.2, "y": 0.2}, {"x": 1.0, "y": 1.0}]  # A = B over the values' range
    assert scatter_spec["title"] == f"gold RR@{K} per query: run A against run B"
    # The histogram: one bar per distinct difference (+0.25, 0, -0.25, -0.8), counted by outcome.
    assert histogram_counts(bars) == {"A better": 1, "tie": 1, "B better": 2}
    assert dict(zip(bars["difference"], bars["queries"])) == {"+0.25": 1, "+0": 1, "-0.25": 1, "-0.8": 1}
    centres = dict(zip(bars["difference"], (bars["start"] + bars["end"]) / 2))
    assert centres == pytest.approx({"+0.25": 0.25, "+0": 0.0, "-0.25": -0.25, "-0.8": -0.8})
    assert (bars["end"] - bars["start"]).round(9).unique().tolist() == [0.2]  # 0.8 of the least gap, 0.25

    changed = frame_with(app, "Inspect in B")
    # Largest |A - B| first (nq:4: 0.8), equal sizes in A's order (nq:1, nq:3: 0.25); the tie nq:2 is left out.
    assert changed["Query"].tolist() == ["nq:4", "nq:1", "nq:3"]
    assert changed["A"].tolist() == pytest.approx([a[q] for q in changed["Query"]])
    assert changed["B"].tolist() == pytest.approx([b[q] for q in changed["Query"]])
    ids = changed["Query"].tolist()
    for run, column in ((RUN_A, "Inspect in A"), (RUN_B, "Inspect in B")):
        with RunReader(pair_env / f"{run}.sqlite") as reader:
            order = reader.query_table()["query_id"]
        assert [link_walk(url, order)[:3] for url in changed[column]] == [(run, q, ids) for q in ids]

    settings = frame_with(app, "Same").set_index("Setting")
    assert settings.loc["Retriever", "Run B"] == "fixture ranking, reversed"
    assert settings.loc["Retriever", "Same"] == "✗" and settings.loc["Dataset", "Same"] == "✓"
    differences = next(df.value for df in app.dataframe
                       if "Setting" in df.value.columns and "Same" not in df.value.columns)
    assert differences["Setting"].tolist() == ["Retriever"]  # B's settings are A's with another retriever


def test_compare_on_the_binary_e2e_score_adds_mcnemar(pair_env):
    app = start(COMPARE, run_a=RUN_A, run_b=RUN_B, method="e2e", measure=f"E2E@{K}")
    shown = metrics(app)
    # tests/engine/test_compare.py: B alone answers nq:4 right (its gold passage moves to rank 1).
    assert (shown["A better"], shown["Ties"], shown["B better"]) == ("0", "3", "1")
    p_values = paired_tests_table(app)
    assert p_values["McNemar's test (exact, binary scores)"] == pytest.approx(stats.binomtest(0, 1, 0.5).pvalue)
    assert app.selectbox(key="compare.measure.widget").format_func(f"E2E@{K}") == f"E2E EM@{K}"


def test_comparing_a_run_with_itself_gives_all_ties_and_p_one(pair_env):
    for method, measure in (("e2e", f"E2E@{K}"), ("gold", f"nDCG@{K}")):
        app = start(COMPARE, run_a=RUN_A, run_b=RUN_A, method=method, measure=measure)
        shown = metrics(app)
        # Run A holds 5 queries (tests/engine/test_compare.py: the 6 fixture questions without nq:5).
        assert (shown["Shared queries"], shown["A better"], shown["Ties"], shown["B better"]) == ("5", "0", "5", "0")
        assert shown["Mean A - B"] == "+0.0000"
        assert (paired_tests_table(app) == 1.0).all()
        assert escape_markdown("0 only in A and 0 only in B") in captions(app)
        assert app.info[0].value.startswith(escape_markdown("No query changed"))


def test_compare_defaults_and_bad_url_parameters_fall_back(pair_env):
    app = start(COMPARE, run_a=RUN_A, method="no-such-method", measure="nDCG@99")
    # Run B defaults to the other run on the same dataset with another retriever; the score to the first label
    # method in display order, measure nDCG at run A's k.
    assert dict(app.query_params) == {"run_a": RUN_A, "run_b": RUN_B, "method": "erag:em",
                                          "measure": f"nDCG@{K}"}
    assert not app.error


def test_compare_runs_without_a_common_score_say_so(tmp_path, monkeypatch):
    run = build_small_run()
    write_run(dataclasses.replace(run, measure_values=[]), tmp_path / "only-e2e.sqlite")
    write_run(dataclasses.replace(run, e2e_outputs=[]), tmp_path / "only-measures.sqlite")
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(tmp_path))
    app = start(COMPARE, run_a="only-e2e", run_b="only-measures")
    assert app.info[0].value.startswith(escape_markdown("Runs only-e2e and only-measures have no score in common."))
    assert not app.metric


def shipped_comparison(run_a: str, run_b: str, method: str, measure: str) -> tuple[pd.Series, pd.Series, list[str]]:
    a = read_scores(SHIPPED_PATHS[run_a], method, measure)
    b = read_scores(SHIPPED_PATHS[run_b], method, measure)
    return a, b, [q for q in a.index if q in b.index]


@pytest.mark.parametrize("run_a, run_b, method, measure", [
    ("nq_open-bm25-gemma3_270m", "nq_open-dense-gemma3_270m", "e2e", "E2E@5"),
    ("retrieval-nq_open-bm25", "retrieval-nq_open-dense", "gold", "nDCG@10"),
    ("retrieval-nq_open-bm25", "nq_open-bm25-gemma3_270m", "gold", "nDCG@10"),  # 500 vs 300 questions
])
def test_compare_shipped_runs(run_a, run_b, method, measure, monkeypatch):
    use_shipped_runs(monkeypatch)
    app = start(COMPARE, run_a=run_a, run_b=run_b, method=method, measure=measure)
    assert not app.error, [e.value for e in app.error]
    assert dict(app.query_params) == {"run_a": run_a, "run_b": run_b, "method": method, "measure": measure}
    a, b, shared = shipped_comparison(run_a, run_b, method, measure)
    difference = a[shared] - b[shared]
    shown = metrics(app)
    assert shown["Shared queries"] == f"{len(shared):,}"
    assert (shown["A better"], shown["Ties"], shown["B better"]) == tuple(
        str(int(n)) for n in ((difference > 0).sum(), (difference == 0).sum(), (difference < 0).sum()))
    assert escape_markdown(f"{len(a) - len(shared)} only in A and {len(b) - len(shared)} only in B") in captions(app)
    p_values = paired_tests_table(app)
    wins, losses = int((difference > 0).sum()), int((difference < 0).sum())
    expected_sign = stats.binomtest(wins, wins + losses, 0.5).pvalue if wins + losses else 1.0
    assert p_values["Sign test (exact binomial)"] == pytest.approx(expected_sign)
    assert ("McNemar's test (exact, binary scores)" in p_values.index) == (method == "e2e")

    # The charts hold what the metrics and the changed-most table say: every shared query's scores, as read from
    # the files, and bars that count each outcome as the metrics do.
    (_, points), (_, bars) = compare_charts(app)
    drawn = points.set_index("query_id")
    assert sorted(drawn.index) == sorted(shared)
    assert drawn["a"].to_dict() == pytest.approx(a[shared].to_dict())
    assert drawn["difference"].to_dict() == pytest.approx(difference.to_dict())
    counts = {"A better": shown["A better"], "tie": shown["Ties"], "B better": shown["B better"]}
    assert histogram_counts(bars) == {o: int(n) for o, n in counts.items() if int(n)}
    if wins + losses == 0:  # every query tied: no changed-most table
        assert app.info[0].value.startswith(escape_markdown("No query changed"))
        return
    changed = frame_with(app, "Inspect in B").set_index("Query")
    assert changed["A - B"].to_dict() == pytest.approx(drawn.loc[changed.index, "difference"].to_dict())
    assert changed["Outcome"].to_dict() == drawn.loc[changed.index, "outcome"].to_dict()


def test_compare_shipped_runs_over_different_questions_explains(monkeypatch):
    use_shipped_runs(monkeypatch)
    app = start(COMPARE, run_a="retrieval-hotpotqa-bm25", run_b="retrieval-nq_open-bm25")
    # refused before any test is run, naming the runs that do share queries with A
    assert app.warning[0].value.startswith(escape_markdown(
        "Runs retrieval-hotpotqa-bm25 and retrieval-nq_open-bm25 have no query in common"))
    assert escape_markdown("retrieval-hotpotqa-dense (") in app.warning[0].value
    assert not app.metric


def test_compare_default_partner_on_the_shipped_runs(monkeypatch):
    use_shipped_runs(monkeypatch)
    app = start(COMPARE)
    with RunReader(SHIPPED_PATHS[app.query_params["run_a"]]) as reader_a, \
            RunReader(SHIPPED_PATHS[app.query_params["run_b"]]) as reader_b:
        a, b = reader_a.settings(), reader_b.settings()
    assert a["dataset"] == b["dataset"] and a["retriever"] != b["retriever"]
    assert not app.error


def test_correlations_say_the_provenance_once_and_each_element_only_its_sample(reteval_env_path, monkeypatch):
    """Issue 34: model · dataset · retriever followed every one of the page's elements; now the line under the heading
    says it, the captions say their queries and k, and the charts keep it in their subtitle (PNG/SVG export)."""
    from ui.render import provenance_text

    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(reteval_env_path.parent))
    app = start(CORRELATIONS, run=reteval_env_path.stem, k="1")
    with RunReader(reteval_env_path) as reader:
        settings = reader.settings()
    model = escape_markdown(f"model {settings['model_id']}")
    assert len([c for c in app.caption if model in c.value]) == 1
    line = next(c.value for c in app.caption if model in c.value)
    assert line.startswith(escape_markdown(f"Run {reteval_env_path.name}"))
    assert escape_markdown(f"retriever {settings['retriever']}") in line and "40 queries" in line
    assert escape_markdown("40 queries at k=1.") in captions(app)  # the scatter's own sample
    charts = vega_charts(app)
    assert len(charts) == 2
    for spec, _ in charts:
        subtitle = " · ".join(spec["title"]["subtitle"])
        assert subtitle.startswith(provenance_text(settings)[:40]) and "k=" in subtitle


# --- a run whose E2E score is constant at its k (issue 34) ----------------------------------------------------

@pytest.fixture
def constant_env(tmp_path, monkeypatch) -> Path:
    path = write_run(build_constant_e2e_run(), tmp_path / "constant.sqlite")
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(tmp_path))
    return path


def test_correlations_name_the_constant_e2e_score_and_offer_the_k_where_it_varies(constant_env):
    app = start(CORRELATIONS, run="constant", method="gold", k=str(K))
    warnings = " ".join(w.value for w in app.warning)
    assert escape_markdown(f"The E2E EM at k={K} is 0 for every query (6): nothing to correlate with, so every "
                           f"coefficient at k={K} is undefined. Try k=1, where it varies.") in warnings
    assert metrics(app)["Kendall's tau-b"] == "undefined (constant)"
    # The empty best-measure table is replaced by the sentence.
    assert not any("Best measure" in df.value.columns for df in app.dataframe)
    assert any(i.value.startswith(escape_markdown(f"The E2E EM at k={K} is 0 for every query")) for i in app.info)
    # A small sample: the page says so.
    assert "Small sample: 6 queries." in warnings

    app.button(key="correlations.varying_k").click().run()
    assert not app.exception
    assert app.query_params["k"] == "1" and app.selectbox(key="correlations.k.widget").value == "1"
    assert not any("nothing to correlate with" in w.value for w in app.warning)
    points = stored_points(constant_env, "gold", "P@1", 1)
    tau = kendall_tau_b(points["value"].to_numpy(), points["e2e"].to_numpy())
    assert tau == pytest.approx(stats.kendalltau(points["value"], points["e2e"]).statistic)
    assert metrics(app)["Kendall's tau-b"] == f"{tau:.3f}"  # 6 queries: the estimate, no interval
    assert f"too few queries for an interval (n = 6 < {MIN_INTERVAL_QUERIES})" in captions(app)
    best = frame_with(app, "Best measure")
    assert list(best["Labels"]) == [fmt.method_name(m) for m in ("erag:em", "contains_answer", "gold")]
    assert all(cell.endswith(f"(no interval: n < {MIN_INTERVAL_QUERIES})") for cell in best["Kendall's tau-b"])


def test_correlations_name_a_constant_measure_when_the_e2e_score_varies(constant_env):
    """The constant-E2E run with eRAG P@1 set to 0 for every query (no top passage gets an eRAG label of 1): at
    k=1 the E2E EM varies, so the undefined coefficient is the measure's doing, and the page says so."""
    run = build_constant_e2e_run()
    values = [dataclasses.replace(m, value=0.0) if (m.method, m.measure) == ("erag:em", "P@1") else m
              for m in run.measure_values]
    path = write_run(dataclasses.replace(run, measure_values=values), constant_env.parent / "flat.sqlite")
    app = start(CORRELATIONS, run=path.stem, method="erag:em", k="1", measure="P@1")
    assert not any("nothing to correlate with" in w.value for w in app.warning)
    assert metrics(app)["Kendall's tau-b"] == "undefined (constant)"
    assert escape_markdown(f"{fmt.method_name('erag:em')} P@1 is 0 for every query with an E2E EM at k=1 (6), while "
                           "the E2E EM varies: its coefficients are undefined.") in captions(app)
    assert escape_markdown(f"Undefined because the measure is the same for every query: "
                           f"{fmt.method_name('erag:em')} P@1 = 0.") in captions(app)
