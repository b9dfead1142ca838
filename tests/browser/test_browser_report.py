"""The HTML report (``rageval report RUN --html OUT``) in Chromium with every network request aborted: opened from
the file alone it shows the correlation chart and the leaderboard, asks for nothing (no request leaves the file),
raises no JavaScript error, and a passage holding ``<script>`` shows as text without running. Needs Debian's Chromium
and the playwright package (tests/browser_support.py; skipped without them, failed when ``CI`` is set)."""

from __future__ import annotations

import re

import pytest

from rageval.html_report import write_html_report
from rageval.paths import REPO_ROOT
from rageval.store import RunReader
from tests.browser_support import SHOTS
from tests.html_report.test_html_report import injection_run
from tests.run_fixtures import INJECTION

pytestmark = pytest.mark.browser

SHIPPED_RUNS = REPO_ROOT / "data" / "runs"
SHIPPED = SHIPPED_RUNS / "nq_open-bm25-gemma3_270m.sqlite"


def open_offline(page, path) -> list[str]:
    """Open the file at ``path`` with every request but the file's own aborted; the URLs that were asked for."""
    asked: list[str] = []
    url = path.resolve().as_uri()

    def handle(route):
        if route.request.url == url:
            route.continue_()
        else:
            asked.append(route.request.url)
            route.abort()

    page.route("**/*", handle)
    page.on("request", lambda request: request.url != url and asked.append(request.url))
    page.goto(url)
    page.wait_for_load_state("load")
    return asked


def test_report_shows_the_chart_and_the_leaderboard_offline(tmp_path, chromium_page):
    from playwright.sync_api import expect

    others = sorted((SHIPPED_RUNS / "demo").glob("*.sqlite"))
    out = write_html_report(SHIPPED, tmp_path / "report.html", others=others)
    with RunReader(SHIPPED) as reader:
        methods = reader.correlations(reader.main_k())["method"].nunique()
    with chromium_page(width=1300, height=1000) as (page, page_errors):
        asked = open_offline(page, out)
        chart = page.locator("#correlation-chart")
        expect(chart).to_be_visible()
        assert chart.bounding_box()["width"] > 500
        expect(chart.locator("circle.dot")).to_have_count(methods)
        expect(chart.locator("text.label").first).to_have_text(re.compile(r"^eRAG .+ · \w+@10$"))
        board = page.locator("#leaderboard")
        board.scroll_into_view_if_needed()
        expect(board).to_be_visible()
        expect(board.locator("tbody tr")).to_have_count(1 + len(others))
        expect(board.locator("tr.this-run td").first).to_have_text(f"{SHIPPED.stem} (this report)")
        expect(page.locator("#two-by-two td.cell")).to_have_count(4)
        page.screenshot(path=str(SHOTS / "report-offline.png"), full_page=True)
        assert asked == [] and page_errors == []


def test_a_passage_holding_script_shows_as_text_and_does_not_run(tmp_path, chromium_page):
    from playwright.sync_api import expect

    out = write_html_report(injection_run(tmp_path / "injection.sqlite"), tmp_path / "injection.html", others=[])
    with chromium_page() as (page, page_errors):
        asked = open_offline(page, out)
        cases = page.locator("#failure-cases")
        expect(cases).to_contain_text(INJECTION)  # the literal markup, read as text
        assert page.evaluate("() => window.__pwned") is None
        assert page.locator("#failure-cases img, #failure-cases script").count() == 0
        assert asked == [] and page_errors == []
