"""Names from the data in a Vega-Lite chart show literally in Chromium: the charts take names as they are (no HTML
escaping), because Vega draws axis labels and legends as SVG text and its
tooltip escapes what it puts in its table. The Agents page on a hand-made IUM run (``tests/test_app_attribution_ium``)
whose agent ``nq/a/em`` is renamed ``<b>x</b>``: the personalisation heatmap's axis label, and the tooltip of its
cell, read ``<b>x</b> ↔ nq/b/f1`` with no bold element.

The IUM run is the only one in the session dashboard's runs folder (tests/conftest.py ``dashboard``), so the page opens
on it. Needs Debian's Chromium and the playwright package, (tests/browser_support.py; skipped without them, failed
when ``CI`` is set)."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

from rageval.ium.experiment import write_ium_run
from tests.browser_support import SHOTS, WAIT_MS
from tests.ui.test_app_attribution_ium import hand_made_ium_result

pytestmark = pytest.mark.browser

HOSTILE = "<b>x</b>"
PAIR = f"{HOSTILE} ↔ nq/b/f1"  # ui.render_ium.pair_name of the renamed agent and the other NQ agent
TOOLTIP = "#vg-tooltip-element"  # vega-tooltip's one element, shown on hover


@pytest.fixture(scope="module")
def hostile_url(dashboard) -> str:
    result = hand_made_ium_result()
    renamed = {field.name: value.replace({"nq/a/em": HOSTILE}) if isinstance(value, pd.DataFrame) else value
               for field in dataclasses.fields(result) for value in [getattr(result, field.name)]}
    write_ium_run(type(result)(**renamed), dashboard.runs / "ium" / "hostile.sqlite")
    return dashboard.url


def test_a_name_with_tags_shows_literally_in_a_vega_lite_axis_and_tooltip(hostile_url, chromium_page):
    from playwright.sync_api import expect

    with chromium_page(height=2600) as (page, page_errors):
        page.goto(f"{hostile_url}/Agents_IUM")
        expect(page.get_by_role("heading", name="Personalisation: how different are the lists agents are served?")
               ).to_be_visible()
        heatmap = page.get_by_test_id("stVegaLiteChart").filter(
            has=page.locator("svg text", has_text="Kendall's tau between the lists"))
        heatmap.scroll_into_view_if_needed()
        labels = heatmap.locator("svg text")
        expect(labels.filter(has_text=PAIR)).to_have_count(1)  # the y-axis label, as text
        assert PAIR in labels.all_text_contents()
        cell = heatmap.locator("svg g.mark-rect path").first  # the pair's first cell (its only row)
        box = cell.bounding_box()
        assert box is not None
        page.mouse.move(box["x"] + box["width"] / 4, box["y"] + box["height"] / 4)  # beside the cell's number
        tooltip = page.locator(f"{TOOLTIP}.visible")
        expect(tooltip).to_contain_text(PAIR, timeout=WAIT_MS)
        page.screenshot(path=str(SHOTS / "vega_text_tooltip.png"))
        assert page.locator(f"{TOOLTIP} b").count() == 0 and heatmap.locator("svg b").count() == 0  # no markup
        assert not page_errors, page_errors
