"""The dashboard in a real Chromium under the OS light and dark themes, and stale links.

- With ``prefers-color-scheme: dark`` the app's background is dark (the computed background colour of
  ``[data-testid="stApp"]`` and the pixels of a screenshot, ``test-output/theme_dark.png``) and the charts' axis
  text is light, so the charts follow Streamlit's theme; with ``light`` both are the other way round.
- ``Glossary#ndcg`` opens the glossary scrolled to that term.
- A link naming a run or a query that does not exist (``?run=no-such-run``, ``?query=no-such-query``) shows a
  visible warning naming it, never a silent substitute.

Runs on the session's dashboard server (tests/conftest.py ``dashboard_shared_runs``). Needs Debian's Chromium and
playwright, like tests/browser/test_browser.py (skipped without them unless ``CI`` is set).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.browser_support import SHOTS, WAIT_MS
from tests.ui.test_app import RETEVAL_RUN
from tests.ui.test_theme import luminance

pytestmark = pytest.mark.browser

#: Streamlit's own backgrounds are #ffffff (light) and #171614 (dark): a dark one is far below this luminance, a
#: light one far above.
DARK_BELOW, LIGHT_ABOVE = 0.1, 0.6


@pytest.fixture
def server_url(dashboard_shared_runs) -> str:
    return dashboard_shared_runs.url


def rgb_hex(css: str) -> str:
    """``rgb(14, 17, 23)`` (or ``rgba(...)``) as ``#0e1117``."""
    red, green, blue = (int(float(v)) for v in re.findall(r"[\d.]+", css)[:3])
    return f"#{red:02x}{green:02x}{blue:02x}"


def screenshot_luminance(path: Path) -> float:
    """The mean luminance of the screenshot's pixels (0 black .. 1 white)."""
    from PIL import Image, ImageStat

    with Image.open(path) as image:
        return ImageStat.Stat(image.convert("L")).mean[0] / 255


@pytest.mark.parametrize("scheme", ["dark", "light"])
def test_the_app_follows_the_os_theme_with_readable_charts(scheme, server_url, chromium_page):
    from playwright.sync_api import expect

    with chromium_page() as (page, page_errors):
        page.emulate_media(color_scheme=scheme)
        page.goto(f"{server_url}/Correlations?run={RETEVAL_RUN}")
        expect(page.get_by_role("heading", name="Correlations: labels against the end-to-end answer")).to_be_visible(
            timeout=WAIT_MS)
        # A Vega-Lite chart's tick labels (svg text; charts of fewer than 2,000 marks are drawn as svg).
        tick = page.get_by_test_id("stVegaLiteChart").first.locator(".role-axis-label text").first
        expect(tick).to_be_visible(timeout=WAIT_MS)  # a chart is drawn
        background = rgb_hex(page.locator('[data-testid="stApp"]').evaluate(
            "element => getComputedStyle(element).backgroundColor"))
        tick_colour = rgb_hex(tick.evaluate("element => getComputedStyle(element).fill"))
        shot = SHOTS / f"theme_{scheme}.png"
        page.screenshot(path=str(shot))
        assert not page_errors, page_errors
    pixels = screenshot_luminance(shot)
    if scheme == "dark":
        assert luminance(background) < DARK_BELOW and pixels < 0.35, (background, pixels)
        assert luminance(tick_colour) > 0.3, tick_colour  # axis labels light on the dark page
    else:
        assert luminance(background) > LIGHT_ABOVE and pixels > 0.65, (background, pixels)
        assert luminance(tick_colour) < 0.3, tick_colour


@pytest.mark.parametrize(("path", "named"), [("/?run=no-such-run", "no-such-run"),
                                             ("/Query_inspector?query=no-such-query", "no-such-query")])
def test_a_stale_link_shows_a_visible_warning(path, named, server_url, chromium_page):
    from playwright.sync_api import expect

    with chromium_page() as (page, page_errors):
        page.goto(server_url + path)
        warning = page.get_by_test_id("stAlertContentWarning").filter(has_text=named)
        expect(warning).to_be_visible(timeout=WAIT_MS)
        expect(warning).to_contain_text("not one of the choices")
        page.screenshot(path=str(SHOTS / f"stale_link_{named}.png"))
        assert not page_errors, page_errors


def test_a_glossary_link_opens_at_its_term(server_url, chromium_page):
    from playwright.sync_api import expect

    with chromium_page(height=700) as (page, page_errors):
        page.goto(f"{server_url}/Glossary#ndcg")
        heading = page.locator("#ndcg")
        expect(heading).to_contain_text("nDCG@k", timeout=WAIT_MS)
        expect(heading).to_be_in_viewport(timeout=WAIT_MS)  # scrolled to the term, far down the page
        expect(page.locator("#erag")).not_to_be_in_viewport()
        page.screenshot(path=str(SHOTS / "glossary_ndcg.png"))
        assert not page_errors, page_errors
