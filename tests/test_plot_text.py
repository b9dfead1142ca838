"""Names from users' data never reach plotly as markup: plotly renders ``<a href>`` (a live link), ``<span style>``
and other tags in titles, legends, axis and tick labels and hover labels. Every figure builder of the dashboard is
given run, method, annotator, agent, query and measure names holding tags, and its figure JSON must hold them only
escaped; then the Annotate page itself, opened with ``?annotator=<a href=...>``, draws a chart without the tag."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pandas as pd
import pytest

from rageval.compare import OUTCOMES
from tests.app_helpers import chart_specs
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
    kappa = pd.DataFrame({"method": [HOSTILE, "gold"], "kappa": [0.5, 0.2], "n": [4, 4], "observed": [0.75, 0.5],
                          "expected": [0.5, 0.4]})
    figures.append(render_annotate.kappa_figure(kappa, annotator=LINK))

    points = pd.DataFrame({"query_id": [HOSTILE, "q2"], "question": [STYLED, "fine"], "value": [1.0, 0.0],
                           "e2e": [1.0, 0.0]})
    figures.append(render_correlations.scatter_figure(points, HOSTILE, HOSTILE, 3, HOSTILE))
    sweep = pd.DataFrame({"method": [HOSTILE, HOSTILE], "family": ["P", "P"], "k": [1, 3], "tau": [0.1, 0.2],
                          "measure": [HOSTILE, HOSTILE], "n": [5, 5]})
    figures.append(render_correlations.k_sweep_figure(sweep, HOSTILE))

    pairs = pd.DataFrame({"query_id": [HOSTILE, "q2", "q3"], "a": [1.0, 0.0, 0.5], "b": [0.0, 1.0, 0.5],
                          "difference": [1.0, -1.0, 0.0], "outcome": list(OUTCOMES)})
    # Compare's charts are Vega-Lite too: the question, run and score names go in as they are (shown as text).
    points, scatter_spec = render_compare.paired_scatter_chart(pairs, {HOSTILE: STYLED}, HOSTILE, LINK, HOSTILE)
    assert points["query_id"].tolist()[0] == HOSTILE and points["question"].tolist()[0] == STYLED
    assert scatter_spec["title"].startswith(HOSTILE)
    axes = {layer["encoding"]["x"]["title"] for layer in scatter_spec["layer"]}
    assert axes == {f"A: {HOSTILE} (jittered)"}
    _, histogram_spec = render_compare.difference_chart(pairs, HOSTILE)
    assert histogram_spec["title"] == f"Per-query difference of {HOSTILE}, A - B"

    # The failure counts are a Vega-Lite chart, which draws every label and tooltip as text (no HTML): names go in
    # as they are, so the reader sees exactly the run's name.
    cases = pd.DataFrame({"run": [HOSTILE, "other"], "k": [1, 5], "category": ["A", "C"], "query_id": ["q1", "q2"]})
    data, spec = render_failures.count_chart(cases, judge_label=HOSTILE)
    assert HOSTILE in data["run"].tolist() and spec["title"].endswith(f"(judge: {HOSTILE})")

    summary = pd.DataFrame({HOSTILE: [0.5, 0.25], "BM25": [0.4, 0.3]}, index=[LINK, "agent 2"])
    figures.append(render_ium.summary_figure(summary))
    figures.append(render_ium.iteration_figure(pd.DataFrame({HOSTILE: [0.1, 0.2]}, index=[0, 1])))
    personal = pd.DataFrame({"agent_a": [LINK], "agent_b": ["b"], "method": [HOSTILE], "kendall_tau": [0.3],
                             "jaccard": [0.5], "n": [3]})
    figures.append(render_ium.personalisation_figure(personal, "kendall_tau"))

    for figure in figures:
        assert_no_markup(figure.to_plotly_json())


@pytest.fixture
def runs(tmp_path_factory, tmp_path, monkeypatch):
    shutil.copy(make_small_run(tmp_path_factory.mktemp("plot-text") / "fixture.sqlite"), tmp_path / "fixture.sqlite")
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(tmp_path))
    return tmp_path


def test_an_annotator_name_from_the_url_is_no_link_in_the_kappa_chart(runs):
    from tests.test_app import start
    from tests.test_app_annotate import ANNOTATE, decide, draw

    app = draw(start(ANNOTATE, annotator=LINK), 30)
    decide(app, "1")
    decide(app, "0")
    assert not app.exception, [e.value for e in app.exception]
    specs = chart_specs(app)
    assert len(specs) == 1
    assert_no_markup(specs[0])
    assert f"Cohen's kappa between {plot_text(LINK)}'s labels" in specs[0]["layout"]["title"]["text"]
