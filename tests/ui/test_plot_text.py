"""Names from users' data go into every chart as they are, and are shown as text. Every chart is Vega-Lite, which
draws titles, axis labels, legends and tooltips as text, never HTML (tests/browser/test_browser_vega_text.py and
tests/browser/test_browser_compare.py check in Chromium that ``<b>``/``<img onerror>`` in a name or question shows
literally): an escaped name would show ``&lt;``. Every chart builder is given run, method, annotator, agent, query
and measure names holding tags, and must keep them unchanged; the Annotate page, opened with
``?annotator=<a href=...>``, puts the name in its kappa chart's title unchanged."""

from __future__ import annotations

import shutil

import pandas as pd
import pytest

from rageval.compare import OUTCOMES
from tests.app_helpers import vega_charts
from tests.run_fixtures import make_small_run
from ui import render_annotate, render_compare, render_correlations, render_failures, render_ium

LINK = '<a href="http://example.invalid/x">click</a>'
STYLED = '<span style="font-size:80px">big</span>'
HOSTILE = f"{LINK}{STYLED}"


def test_a_tooltip_question_is_flattened_and_cut_but_not_escaped():
    assert render_correlations.tooltip_text("a  long\nquestion <i>x</i>", limit=12) == "a long ques…"
    assert render_correlations.tooltip_text(f" {LINK} ") == LINK


def test_every_chart_builder_takes_names_from_the_data_as_they_are():
    points = pd.DataFrame({"query_id": [HOSTILE, "q2"], "question": [STYLED, "fine"], "value": [1.0, 0.0],
                           "e2e": [1.0, 0.0]})
    data, spec = render_correlations.scatter_chart(points, HOSTILE, HOSTILE, 3, HOSTILE)
    assert data["query"].tolist()[0] == HOSTILE and data["question"].tolist()[0] == STYLED
    assert spec["title"]["text"][0] == f"{HOSTILE} {HOSTILE} vs {HOSTILE}@3"
    sweep = pd.DataFrame({"method": [HOSTILE, HOSTILE], "family": ["P", "P"], "k": [1, 3], "tau": [0.1, 0.2],
                          "measure": [HOSTILE, HOSTILE], "n": [5, 5]})
    data, spec = render_correlations.k_sweep_chart(sweep, HOSTILE)
    assert set(data["line"]) == {f"{HOSTILE} (P)"} and set(data["measure"]) == {HOSTILE}

    pairs = pd.DataFrame({"query_id": [HOSTILE, "q2", "q3"], "a": [1.0, 0.0, 0.5], "b": [0.0, 1.0, 0.5],
                          "difference": [1.0, -1.0, 0.0], "outcome": list(OUTCOMES)})
    points, scatter_spec = render_compare.paired_scatter_chart(pairs, {HOSTILE: STYLED}, HOSTILE, LINK, HOSTILE)
    assert points["query_id"].tolist()[0] == HOSTILE and points["question"].tolist()[0] == STYLED
    assert scatter_spec["title"].startswith(HOSTILE)
    axes = {layer["encoding"]["x"]["title"] for layer in scatter_spec["layer"]}
    assert axes == {f"A: {HOSTILE} (jittered)"}
    _, histogram_spec = render_compare.difference_chart(pairs, HOSTILE)
    assert histogram_spec["title"] == f"Per-query difference of {HOSTILE}, A - B"

    cases = pd.DataFrame({"run": [HOSTILE, "other"], "k": [1, 5], "category": ["A", "C"], "query_id": ["q1", "q2"]})
    data, spec = render_failures.count_chart(cases, judge_label=HOSTILE)
    assert HOSTILE in data["run"].tolist() and spec["title"].endswith(f"(judge: {HOSTILE})")


def test_vega_lite_charts_take_names_as_they_are():
    """The Vega-Lite charts (kappa, IUM) draw names as text: the data rows and titles hold them unescaped, so the
    reader sees exactly the method's, agent's or annotator's name (an escaped one would show ``&lt;``)."""
    kappa = pd.DataFrame({"method": [HOSTILE, "gold"], "kappa": [0.5, 0.2], "n": [4, 4], "observed": [0.75, 0.5],
                          "expected": [0.5, 0.4]})
    bars, spec = render_annotate.kappa_chart(kappa, annotator=LINK)
    assert HOSTILE in bars["method"].tolist() and spec["title"].startswith(f"Cohen's kappa between {LINK}'s")

    summary = pd.DataFrame({HOSTILE: [0.5, 0.25], "BM25": [0.4, 0.3]}, index=[LINK, "agent 2"])
    bars, spec = render_ium.summary_chart(summary)
    assert {LINK, HOSTILE} <= set(bars["agent"]) | set(bars["method"]) and LINK in spec["encoding"]["color"]["sort"]
    points, _ = render_ium.iteration_chart(pd.DataFrame({HOSTILE: [0.1, 0.2]}, index=[0, 1]))
    assert set(points["engine"]) == {HOSTILE}
    personal = pd.DataFrame({"agent_a": [LINK], "agent_b": ["b"], "method": [HOSTILE], "kendall_tau": [0.3],
                             "jaccard": [0.5], "n": [3]})
    cells, _ = render_ium.personalisation_chart(personal, "kendall_tau")
    assert cells[["pair", "engine"]].values.tolist() == [[f"{LINK} ↔ b", HOSTILE]]
    for frame in (bars, points, cells):
        assert not any("&lt;" in str(value) for value in frame.to_numpy().ravel())


@pytest.fixture
def runs(tmp_path_factory, tmp_path, monkeypatch):
    shutil.copy(make_small_run(tmp_path_factory.mktemp("plot-text") / "fixture.sqlite"), tmp_path / "fixture.sqlite")
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(tmp_path))
    return tmp_path


def test_an_annotator_name_from_the_url_goes_into_the_kappa_chart_as_text(runs):
    from tests.ui.test_app import start
    from tests.ui.test_app_annotate import ANNOTATE, decide, draw

    app = draw(start(ANNOTATE, annotator=LINK), 30)
    decide(app, "1")
    decide(app, "0")
    assert not app.exception, [e.value for e in app.exception]
    title = f"Cohen's kappa between {LINK}'s labels and each automatic method"  # Vega-Lite: text
    [bars] = [frame for spec, frame in vega_charts(app) if spec.get("title") == title]  # one chart of that title
    assert len(bars) and bars["kappa"].notna().all()
