"""Real-Chromium journeys over the shipped runs (``data/runs``): browse the failure cases of every run with
LLM-retEval and open one in the query inspector; then every other view (overview, correlations, compare runs,
citations, agents) renders its content with no JavaScript error. Screenshots of each page go to ``test-output/``.

Needs Debian's Chromium and the playwright package (tests/browser_support.py; skipped without them, failed when
``CI`` is set). A dashboard of its own on data/runs, not the session's: these pages show the shipped runs as
``make dashboard`` shows them (the newest shipped run is the default, the failure cases pool every run), which the
other tests' runs in the session's folder would change."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from rageval.store import RunReader
from tests.browser_support import SHOTS, WAIT_MS, streamlit_server

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
SHIPPED_RUNS = REPO / "data" / "runs"
BM25_RUN = "nq_open-bm25-gemma3_270m"
#: The correlations page bootstraps tau and rho for every method x measure of a 300-query run on first visit.
SLOW_WAIT_MS = 180_000


@pytest.fixture(scope="module")
def shipped_url(tmp_path_factory) -> Iterator[str]:
    scratch = tmp_path_factory.mktemp("shipped_scratch")  # nothing is written next to the shipped runs
    with streamlit_server(SHIPPED_RUNS, "streamlit_server_shipped.log", RAGEVAL_CACHE_DIR=str(scratch / "cache"),
                          RAGEVAL_ANNOTATIONS=str(scratch / "annotations.sqlite")) as url:
        yield url


def wait_until_rendered(page) -> None:
    """Wait until the script run is over (Streamlit's running indicator is gone) and every table shown has drawn."""
    from playwright.sync_api import expect

    expect(page.locator('[data-testid="stApp"][data-test-script-state="notRunning"]')).to_have_count(
        1, timeout=SLOW_WAIT_MS)
    for table in page.get_by_test_id("stDataFrame").all():
        if table.is_visible():  # one in a tab not shown is not drawn
            expect(table.locator("canvas").first).to_be_visible(timeout=WAIT_MS)
    charts = [chart for chart in page.get_by_test_id("stVegaLiteChart").all() if chart.is_visible()]  # not hidden tabs
    for chart in charts:  # Vega's marks (an svg, a canvas past 2,000 rows) once drawn
        chart.scroll_into_view_if_needed()
        expect(chart.locator(".marks").first).to_be_visible(timeout=WAIT_MS)
    page.get_by_role("heading").first.scroll_into_view_if_needed()  # back to the top for the screenshot
    # Tables and charts are lazily loaded components: a placeholder stands in until their code has loaded.
    expect(page.get_by_test_id("stSkeleton")).to_have_count(0, timeout=WAIT_MS)


def first_case(category: str, k: int) -> tuple[str, str]:
    """(query id, question) of the failure browser's first case under judge ``em`` for ``category`` at ``k``: the
    BM25 run is listed first (the newest top-level run), its cases by k, category and run order of the queries."""
    with RunReader(SHIPPED_RUNS / f"{BM25_RUN}.sqlite") as reader:
        cases = reader.failure_case_table("em", k)
    chosen = cases[cases["category"] == category].iloc[0]
    return chosen["query_id"], chosen["text"]


def test_browse_failure_cases_then_open_one_in_the_inspector(shipped_url, chromium_page):
    from playwright.sync_api import expect

    query_id, question = first_case("C", 5)
    with chromium_page(height=1400) as (page, page_errors):
        page.goto(f"{shipped_url}/Failure_cases?category=C&k=5")
        expect(page.get_by_role("heading", name="Failure cases", exact=True)).to_be_visible(timeout=WAIT_MS)
        chart = page.get_by_test_id("stVegaLiteChart").first  # Vega-Lite draws its title on a canvas
        expect(chart.locator("canvas, svg").first).to_be_visible(timeout=WAIT_MS)
        case = page.get_by_test_id("stText").first
        expect(case).to_have_text(question, timeout=WAIT_MS)
        wait_until_rendered(page)
        page.screenshot(path=str(SHOTS / "failure_cases.png"), full_page=True)

        page.get_by_role("link", name="Open this query in the query inspector").click()
        expect(page.get_by_role("heading", name="Query inspector")).to_be_visible(timeout=WAIT_MS)
        expect(page).to_have_url(re.compile(r"[?&]query=" + re.escape(query_id).replace(":", "(%3A|:)")))
        expect(page.get_by_role("heading", name=question)).to_be_visible(timeout=WAIT_MS)
        expect(page.get_by_test_id("stMainBlockContainer").get_by_text("Failure cases", exact=True)).to_be_visible(
            timeout=WAIT_MS)
        wait_until_rendered(page)
        page.screenshot(path=str(SHOTS / "failure_case_inspector.png"), full_page=True)
        assert not page_errors, page_errors


@pytest.mark.parametrize("path, ready, shot", [
    ("", "This run in numbers", "overview.png"),
    (f"Correlations?run={BM25_RUN}", "How the agreement changes with k", "correlations.png"),
    (f"Compare_runs?run_a={BM25_RUN}", "Queries that changed most", "compare_runs.png"),
    ("Citations", "Agreement with HAGRID's human labels", "citations.png"),
    ("Agents_IUM", "Downstream score per agent and method", "agents_ium.png"),
    (f"Annotate?run={BM25_RUN}", "Annotate", "annotate_shipped.png"),
    (f"Re_score?run={BM25_RUN}", "Re-score", "rescore_shipped.png"),
    ("Upload", "Upload a run", "upload_form.png"),
], ids=["overview", "correlations", "compare", "citations", "agents", "annotate", "rescore", "upload"])
def test_every_view_renders_on_the_shipped_runs(shipped_url, chromium_page, path, ready, shot):
    from playwright.sync_api import expect

    if path == "Agents_IUM" and not list((SHIPPED_RUNS / "ium").glob("*.sqlite")):
        pytest.fail("no shipped IUM run in data/runs/ium (rageval ium writes it)")
    # Streamlit scrolls an inner container, so a full-page screenshot is the viewport: make it tall.
    with chromium_page(height=3200) as (page, page_errors):
        page.goto(f"{shipped_url}/{path}")
        expect(page.get_by_role("heading", name=ready)).to_be_visible(timeout=SLOW_WAIT_MS)
        wait_until_rendered(page)
        expect(page.get_by_test_id("stException")).to_have_count(0)
        page.screenshot(path=str(SHOTS / shot), full_page=True)
        assert page.evaluate("typeof window.__pwned") == "undefined"
        assert not page_errors, page_errors


def hover_a_point(page, plot) -> tuple[float, float, str]:
    """Move the mouse over the plot area until Vega-Lite's tooltip shows a point: (x, y, its text)."""
    tooltip = page.locator("#vg-tooltip-element")
    box = plot.bounding_box()
    for y in range(int(box["y"]) + 40, int(box["y"] + box["height"]) - 40, 7):
        for x in range(int(box["x"]) + 60, int(box["x"] + box["width"]) - 20, 7):
            page.mouse.move(x, y)
            if tooltip.count() and tooltip.is_visible() and "query" in tooltip.inner_text():
                return x, y, tooltip.inner_text()
    raise AssertionError("no point of the scatter shows a tooltip")


def test_correlation_scatter_selections_list_their_queries(shipped_url, chromium_page):
    """The Vega-Lite scatter in Chromium: a click on a point lists that query (the one its tooltip names), and a box
    dragged over the whole plot lists every query; the tooltip shows the question as text."""
    from playwright.sync_api import expect

    with RunReader(SHIPPED_RUNS / f"{BM25_RUN}.sqlite") as reader:
        questions = dict(zip(reader.query_table()["query_id"], reader.query_table()["text"]))
        n = int((reader.e2e_table()["k"] == reader.main_k()).sum())
    with chromium_page(height=1400) as (page, page_errors):
        page.goto(f"{shipped_url}/Correlations?run={BM25_RUN}&method=erag:em&measure=P@10&k=10")
        expect(page.get_by_text(f"The queries ({n})")).to_be_visible(timeout=SLOW_WAIT_MS)
        plot = page.get_by_test_id("stVegaLiteChart").first.locator("canvas, svg").first
        expect(plot).to_be_visible(timeout=WAIT_MS)
        plot.scroll_into_view_if_needed()
        x, y, shown = hover_a_point(page, plot)
        query = re.search(r"query\s+(\S+)", shown).group(1)
        assert " ".join(questions[query].split())[:60] in " ".join(shown.split())  # the question, as text
        page.mouse.click(x, y)
        expect(page.get_by_text("Selected queries (1)")).to_be_visible(timeout=WAIT_MS)
        expect(page.get_by_test_id("stDataFrame").filter(has_text=query).first).to_be_visible(timeout=WAIT_MS)

        frame = page.get_by_test_id("stVegaLiteChart").first.locator(".role-frame path.background").first
        box = frame.bounding_box()  # the data area (svg: fewer than 2,000 points); drag across it: all are inside
        page.mouse.move(box["x"] + 2, box["y"] + 2)
        page.mouse.down()
        page.mouse.move(box["x"] + box["width"] - 2, box["y"] + box["height"] - 2, steps=12)
        page.mouse.up()
        expect(page.get_by_text(f"Selected queries ({n})")).to_be_visible(timeout=WAIT_MS)
        page.screenshot(path=str(SHOTS / "correlations_selection.png"), full_page=True)
        assert not page_errors, page_errors
