"""Names from users' data never reach plotly as markup: plotly renders ``<a href>`` (a live link), ``<span style>``
and other tags in titles, legends, axis and tick labels and hover labels. Every plotly figure builder of the
dashboard is given run, method, annotator, agent, query and measure names holding tags, and its figure JSON must
hold them only escaped. The Vega-Lite charts draw every label and tooltip as text (no HTML): they are given the names
as they are, and the Annotate page, opened with ``?annotator=<a href=...>``, puts the name in its kappa chart's
title unchanged (tests/test_browser_vega_text.py checks in Chromium that such a name shows literally)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pandas as pd
import pytest

from rageval.compare import OUTCOMES
from tests.app_helpers import vega_charts
from tests.run_fixtures import make_small_run
from ui import render_annotate, render_compare, render_correlations, render_failures, render_ium
from ui.plot_text import plot_text, plotly_text

LINK = '<a href="http://example.invalid/x">click</a>'
STYLED = '<span style="font-size:80px">big</span>'
HOSTILE = f"{LINK}{STYLED}"
ESCAPED = plot_text(HOSTILE)


def strings(value) -> Iterator[str]:
    """Every string in a figure's JSON (layout, traces, their data), however deep."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from strings(key)
            yield from strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from strings(item)


def assert_no_markup(figure_json) -> None:
    found = [s for s in strings(figure_json) if "<a" in s or "<span" in s]
    assert not found, found
    assert any(ESCAPED in s or plot_text(LINK) in s for s in strings(figure_json)), "the names are not shown at all"


def test_plot_text_escapes_markup_and_keeps_the_rest():
    assert plot_text(LINK) == '&lt;a href="http://example.invalid/x"&gt;click&lt;/a&gt;'
    assert plot_text("R&D <b>") == "R&amp;D &lt;b&gt;"
    assert plot_text("erag:em@gemma-3-270m") == "erag:em@gemma-3-270m"
    assert plotly_text("a  long\nquestion <i>x</i>", limit=12) == "a long ques…"


def test_every_figure_builder_escapes_names_from_the_data():
    figures = []
    # The correlation charts are Vega-Lite: names and questions go in as they are.
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
    figures.append(render_compare.paired_scatter_figure(pairs, {HOSTILE: STYLED}, HOSTILE, LINK, HOSTILE))
    figures.append(render_compare.difference_figure(pairs, HOSTILE))

    # The failure counts are a Vega-Lite chart, which draws every label and tooltip as text (no HTML): names go in
    # as they are, so the reader sees exactly the run's name.
    cases = pd.DataFrame({"run": [HOSTILE, "other"], "k": [1, 5], "category": ["A", "C"], "query_id": ["q1", "q2"]})
    data, spec = render_failures.count_chart(cases, judge_label=HOSTILE)
    assert HOSTILE in data["run"].tolist() and spec["title"].endswith(f"(judge: {HOSTILE})")

    for figure in figures:
        assert_no_markup(figure.to_plotly_json())


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
    from tests.test_app import start
    from tests.test_app_annotate import ANNOTATE, decide, draw

    app = draw(start(ANNOTATE, annotator=LINK), 30)
    decide(app, "1")
    decide(app, "0")
    assert not app.exception, [e.value for e in app.exception]
    [(spec, bars)] = vega_charts(app)
    assert spec["title"] == f"Cohen's kappa between {LINK}'s labels and each automatic method"  # Vega-Lite: text
    assert len(bars) and bars["kappa"].notna().all()
