"""End-to-end tests in a real Chromium on the session's dashboard server (tests/conftest.py ``dashboard``): read the
fixture run's summary, open the query inspector, pick a query, and check that passage text holding HTML/script is
shown literally and never executed; then open the LLM-retEval page on a complete run (``tests/ui/test_app.py``'s
:func:`reteval_run_file`), follow a failure case to the query inspector and switch the judge. Screenshots go to
``test-output/``.

Needs Debian's Chromium and the ``playwright`` package (tests/browser_support.py): skipped without them, unless
``CI`` is set, in which case it fails.
"""

from __future__ import annotations

import math
import re

import pytest

from rageval.store import RunReader
from tests.browser_support import SHOTS, WAIT_MS
from tests.run_fixtures import INJECTION, make_small_run
from tests.ui.test_app import MARKUP, RETEVAL_RUN, reteval_run_file

pytestmark = pytest.mark.browser

FIXTURE_RUN = "fixture"  # placed by tests/conftest.py dashboard_shared_runs, like RETEVAL_RUN


def test_summary_inspector_and_escaping_in_chromium(dashboard_shared_runs, chromium_page):
    from playwright.sync_api import expect

    server_url = dashboard_shared_runs.url
    with chromium_page() as (page, page_errors):
        # Home: the summary of the fixture run (6 queries; dataset named in the provenance caption).
        page.goto(f"{server_url}/?run={FIXTURE_RUN}")
        expect(page.get_by_role("heading", name="Findings")).to_be_visible(timeout=WAIT_MS)
        queries_metric = page.get_by_test_id("stMetric").filter(has_text="Queries")
        expect(queries_metric).to_contain_text("6")
        expect(page.get_by_text("dataset nq_open (first 6 oracle questions)").first).to_be_visible()
        expect(page.get_by_test_id("stDataFrame").first).to_be_visible()
        page.screenshot(path=str(SHOTS / "home.png"), full_page=True)

        # The inspector, through the home page's link; it opens on the first query.
        page.get_by_role("link", name="Inspect queries one by one").click()
        expect(page.get_by_role("heading", name="Query inspector")).to_be_visible(timeout=WAIT_MS)
        expect(page.get_by_role("heading", name="who got the first nobel prize in physics")).to_be_visible()

        # Pick another query by typing part of its question into the selectbox.
        page.get_by_test_id("stSelectbox").filter(has_text="Question").click()
        page.keyboard.type("reading football")
        page.get_by_role("option", name="who is the owner of reading football club").click()
        expect(page.get_by_role("heading", name="who is the owner of reading football club")).to_be_visible(
            timeout=WAIT_MS)
        expect(page).to_have_url(re.compile(r"[?&]query=nq(%3A|:)5\b"))
        passages = page.get_by_test_id("stExpander")
        expect(passages).to_have_count(5)  # K = 5 passages per query (tests/run_fixtures.py), one row each
        # nq:5's ranking misses its own gold passage and starts with nq:0's (tests/run_fixtures.py).
        expect(passages.first).to_contain_text("The first Nobel Prize in Physics was awarded in 1901")
        page.screenshot(path=str(SHOTS / "inspector_query.png"), full_page=True)

        # The choice survives a trip to the home page and back through the sidebar navigation.
        navigation = page.get_by_test_id("stSidebarNav")
        navigation.get_by_role("link", name="Findings").click()
        expect(page.get_by_role("heading", name="This run in numbers")).to_be_visible(timeout=WAIT_MS)
        navigation.get_by_role("link", name="Query inspector").click()
        expect(page.get_by_role("heading", name="who is the owner of reading football club")).to_be_visible(
            timeout=WAIT_MS)

        # Open the injection passage's query (nq:0) by a shared link.
        page.goto(f"{server_url}/Query_inspector?run={FIXTURE_RUN}&query=nq:0")
        injected = page.get_by_test_id("stExpander").filter(has_text="<script>window.__pwned=1</script>")
        expect(injected).to_be_visible(timeout=WAIT_MS)
        expect(injected).to_contain_text(INJECTION)  # rank 3: open, its text escaped before the answers are marked
        expect(injected).to_contain_text("3. Escaping test <b>bold?</b>")
        assert page.locator("b", has_text="bold?").count() == 0 and page.locator("img[src=x]").count() == 0
        # nq:0's gold answer is marked in its top passage (green), as text inside our own <mark>.
        gold_marks = page.locator("mark[title='a gold answer']")
        expect(gold_marks.first).to_have_text("Wilhelm Conrad Röntgen")
        injected.scroll_into_view_if_needed()
        page.screenshot(path=str(SHOTS / "inspector_escaping.png"), full_page=True)
        assert page.evaluate("typeof window.__pwned") == "undefined"
        assert not page_errors, page_errors


def test_reteval_page_failure_case_to_inspector_in_chromium(dashboard_shared_runs, chromium_page, tmp_path_factory):
    from playwright.sync_api import expect

    server_url = dashboard_shared_runs.url
    with RunReader(reteval_run_file(tmp_path_factory)) as reader:
        queries = reader.query_table()
    marked = queries[[MARKUP in text for text in queries["text"]]].iloc[0]
    with chromium_page() as (page, page_errors):
        # The page on the complete run: judge exact match by default, the paper's table, the failure cases.
        page.goto(f"{server_url}/LLM_retEval?run={RETEVAL_RUN}")
        expect(page.get_by_role("heading", name="LLM-retEval", exact=True)).to_be_visible(timeout=WAIT_MS)
        expect(page.get_by_role("heading", name="Retriever evaluation, judge: exact match")).to_be_visible(
            timeout=WAIT_MS)
        expect(page.get_by_role("heading", name="Failure cases")).to_be_visible()
        expect(page.get_by_test_id("stDataFrame")).to_have_count(2)

        # The first case is the marked question's (reteval_run_file): its text is shown literally.
        case_texts = page.get_by_test_id("stText")
        expect(case_texts.first).to_have_text(marked["text"], timeout=WAIT_MS)
        expect(case_texts.first).to_contain_text("<b>bold?</b>")
        assert page.locator("b", has_text="bold?").count() == 0
        page.screenshot(path=str(SHOTS / "reteval.png"), full_page=True)

        # Its link opens the query inspector on that query of that run.
        page.get_by_role("link", name="Open this query in the query inspector").click()
        expect(page.get_by_role("heading", name="Query inspector")).to_be_visible(timeout=WAIT_MS)
        expect(page).to_have_url(re.compile(r"[?&]query=" + re.escape(marked["query_id"]).replace(":", "(%3A|:)")))
        expect(page.get_by_role("heading", name=marked["text"])).to_be_visible(timeout=WAIT_MS)
        expect(page.get_by_role("heading", name="LLM-retEval", exact=True)).to_be_visible()
        expect(page.get_by_test_id("stMainBlockContainer").get_by_text("Failure cases", exact=True)).to_be_visible()
        page.screenshot(path=str(SHOTS / "inspector_reteval.png"), full_page=True)

        # Back through the sidebar navigation, then another judge from the sidebar.
        page.get_by_test_id("stSidebarNav").get_by_role("link", name="LLM-retEval").click()
        expect(page.get_by_role("heading", name="Retriever evaluation, judge: exact match")).to_be_visible(
            timeout=WAIT_MS)
        page.get_by_test_id("stSidebar").get_by_test_id("stSelectbox").filter(has_text="Judge").click()
        page.get_by_role("option", name="token F1").click()
        expect(page.get_by_role("heading", name="Retriever evaluation, judge: token F1 (threshold 0.5)")
               ).to_be_visible(timeout=WAIT_MS)
        expect(page).to_have_url(re.compile(r"[?&]judge=token_f1\b"))
        assert page.evaluate("typeof window.__pwned") == "undefined"
        assert not page_errors, page_errors



def leaderboard_order(runs) -> list[str]:
    """The names of the run files in ``runs`` in the home page's leaderboard order: best mean E2E score first,
    runs without one last, ties by name."""
    from ui.data import find_runs

    def mean_e2e(path) -> float:
        with RunReader(path) as reader:
            queries = reader.query_table()
        return float(queries["e2e_score"].mean()) if "e2e_score" in queries and len(queries) else math.nan

    means = {path.stem: mean_e2e(path) for path in find_runs(runs)}
    return sorted(means, key=lambda name: (math.isnan(means[name]), -means[name] if not math.isnan(means[name])
                                           else 0.0, name))


def test_a_two_by_two_cell_opens_the_inspector_on_its_queries_in_the_same_tab(dashboard_shared_runs, chromium_page,
                                                                             tmp_path):
    """The engineer's first click: a cell of the home page's 2 x 2 opens the query inspector in the same tab, with
    the cell's queries as the worklist in the URL; Back returns to the findings; a leaderboard row opens that run's
    findings, in the same tab too."""
    from urllib.parse import parse_qs, urlsplit

    from playwright.sync_api import expect

    from tests.engine.test_findings import pandas_two_by_two
    from tests.run_fixtures import K
    from ui import worklist

    fixture = make_small_run(tmp_path / "fixture.sqlite")  # the server's default run, built the same way
    with RunReader(fixture) as reader:
        order = reader.query_table()["query_id"].tolist()
    cells = {f"gold {'retrieved' if g else 'not retrieved'}, answer {'right' if r else 'wrong'} at k={K}": ids
             for (g, r), ids in pandas_two_by_two(fixture, K).items()}
    server_url = dashboard_shared_runs.url
    with chromium_page() as (page, page_errors):
        page.goto(f"{server_url}/?run={FIXTURE_RUN}")
        expect(page.get_by_role("heading", name="Findings")).to_be_visible(timeout=WAIT_MS)
        link = page.get_by_role("link", name=re.compile(r"^Inspect these \d+$")).first
        expect(link).to_be_visible(timeout=WAIT_MS)
        link.click()
        expect(page.get_by_role("heading", name="Query inspector")).to_be_visible(timeout=WAIT_MS)
        assert len(page.context.pages) == 1  # the same tab
        params = {key: values[0] for key, values in parse_qs(urlsplit(page.url).query).items()}
        assert params["run"] == FIXTURE_RUN
        ids = worklist.decode_worklist(params[worklist.LIST_PARAM], order)
        assert ids == cells[params[worklist.NAME_PARAM]] and params["query"] == ids[0]
        page.go_back()
        expect(page.get_by_role("heading", name="Findings")).to_be_visible(timeout=WAIT_MS)

        # The leaderboard: selecting the other run's row opens its findings in the same tab. The runs folder is
        # the session's: the row is found among every run the other tests have placed there so far.
        row = leaderboard_order(dashboard_shared_runs.runs).index(RETEVAL_RUN)
        expect(page.get_by_role("heading", name="All runs")).to_be_visible(timeout=WAIT_MS)
        board = page.get_by_test_id("stDataFrame").first
        board.scroll_into_view_if_needed()
        box = board.bounding_box()
        page.mouse.click(box["x"] + 15, box["y"] + 35 * (row + 1) + 17)  # the row's selection box (35 px rows)
        expect(page).to_have_url(re.compile(rf"[?&]run={RETEVAL_RUN}\b"), timeout=WAIT_MS)
        expect(page.get_by_text(f"Run {RETEVAL_RUN}.sqlite").first).to_be_visible(timeout=WAIT_MS)
        assert len(page.context.pages) == 1
        assert not page_errors, page_errors
