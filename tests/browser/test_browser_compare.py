"""The Compare runs page in a real Chromium: its two Vega-Lite charts draw (no plotly.js is loaded), a question
with markup in the scatter's tooltip shows as literal text (Vega-Lite's tooltips come from vega-tooltip, which
Streamlit sets up: checked here, not assumed), and under the OS dark theme the page is dark with the charts drawn.

Its two runs go into the session's dashboard (tests/conftest.py ``dashboard``) under this module's names. Needs
Debian's Chromium and playwright, like tests/browser/test_browser.py (skipped without them unless ``CI`` is set).
"""

from __future__ import annotations

import dataclasses

import pytest

from rageval.store import write_run
from tests.browser.test_browser_theme import DARK_BELOW, LIGHT_ABOVE, rgb_hex, screenshot_luminance
from tests.browser_support import SHOTS, WAIT_MS
from tests.engine.test_compare import ONLY_A, ONLY_B, RUN_A, RUN_B, reversed_run, without_query
from tests.run_fixtures import build_small_run
from tests.ui.test_theme import luminance

#: The question of nq:1, the one query run A answers better (tests/engine/test_compare.py): tags that would render, and
#: run script, if a tooltip parsed it as HTML.
HOSTILE = 'Who <b>x</b> <img src=x onerror="window.__pwned=1">?'
HOSTILE_QUERY = "nq:1"

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def server_url(dashboard) -> str:
    folder = dashboard.runs
    run = build_small_run()
    run = dataclasses.replace(run, queries=[dataclasses.replace(q, text=HOSTILE) if q.query_id == HOSTILE_QUERY
                                            else q for q in run.queries])
    write_run(without_query(run, ONLY_A), folder / f"{RUN_A}.sqlite")
    write_run(without_query(reversed_run(run), ONLY_B), folder / f"{RUN_B}.sqlite")
    return dashboard.url


def open_compare(page, server_url: str) -> list:
    """Open the compare page on gold RR@5 of the fixture pair; its two charts once drawn."""
    from playwright.sync_api import expect

    page.goto(f"{server_url}/Compare_runs?run_a={RUN_A}&run_b={RUN_B}&method=gold&measure=RR%405")
    expect(page.get_by_role("heading", name="Queries that changed most")).to_be_visible(timeout=WAIT_MS)
    charts = page.get_by_test_id("stVegaLiteChart")
    expect(charts).to_have_count(2, timeout=WAIT_MS)
    for chart in charts.all():  # Streamlit draws Vega as svg, on a canvas past 2,000 rows: class "marks" either way
        expect(chart.locator(".marks").first).to_be_visible(timeout=WAIT_MS)
    expect(page.get_by_test_id("stPlotlyChart")).to_have_count(0)
    return charts.all()


def test_a_question_with_markup_shows_as_text_in_the_scatter_tooltip(server_url, chromium_page):
    from playwright.sync_api import expect

    with chromium_page(height=1600) as (page, page_errors):
        scatter = open_compare(page, server_url)[0]
        # Vega labels each point for screen readers with its tooltip fields: find nq:1's by it, and hover it.
        point = scatter.locator(f'svg .mark-symbol path[aria-label*="{HOSTILE_QUERY};"]')
        expect(point).to_have_count(1)
        point.hover()
        tooltip = page.locator("#vg-tooltip-element")
        expect(tooltip).to_be_visible(timeout=WAIT_MS)
        expect(tooltip).to_contain_text(f"query{HOSTILE_QUERY}")
        expect(tooltip).to_contain_text(HOSTILE)  # the tags as characters
        assert tooltip.locator("img, b").count() == 0  # nothing of it parsed as HTML
        page.screenshot(path=str(SHOTS / "compare_tooltip.png"))
        assert page.evaluate("typeof window.__pwned") == "undefined"
        assert not page_errors, page_errors


@pytest.mark.parametrize("scheme", ["dark", "light"])
def test_the_compare_charts_follow_the_os_theme(scheme, server_url, chromium_page):
    with chromium_page(height=1600) as (page, page_errors):
        page.emulate_media(color_scheme=scheme)
        scatter, histogram = open_compare(page, server_url)
        background = rgb_hex(page.locator('[data-testid="stApp"]').evaluate(
            "element => getComputedStyle(element).backgroundColor"))
        labels = [label for chart in (scatter, histogram) for label in chart.locator("svg .role-axis-label text").all()]
        label_colours = {rgb_hex(label.evaluate("element => getComputedStyle(element).fill")) for label in labels}
        shot = SHOTS / f"compare_charts_{scheme}.png"
        scatter.screenshot(path=str(shot))
        histogram.screenshot(path=str(SHOTS / f"compare_histogram_{scheme}.png"))
        assert not page_errors, page_errors
    pixels = screenshot_luminance(shot)  # no chart paints a light background of its own on the dark page
    assert label_colours
    if scheme == "dark":
        assert luminance(background) < DARK_BELOW and pixels < 0.35, (background, pixels)
        assert all(luminance(c) > 0.3 for c in label_colours), label_colours  # light axis labels on the dark page
    else:
        assert luminance(background) > LIGHT_ABOVE and pixels > 0.65, (background, pixels)
        assert all(luminance(c) < 0.3 for c in label_colours), label_colours
