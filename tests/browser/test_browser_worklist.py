"""The RAG engineer's journey in a real Chromium: from LLM-retEval's failure cases, one click (same tab) opens the
query inspector on a worklist of the shown cases; j and the Next button walk it ("Case 2 of N"), the URL keeping
the list; the browser's back button returns to the previous case. Then a link whose list cannot be read shows a
warning naming it. Runs on the session's dashboard (tests/conftest.py ``dashboard_shared_runs``: the complete run
``reteval``); skipped without Chromium."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

import pytest

from rageval.store import RunReader
from tests.browser_support import SHOTS, WAIT_MS
from tests.ui.test_app import RETEVAL_RUN
from ui.worklist import decode_worklist

pytestmark = pytest.mark.browser

KEYS_READY = "() => window.document.__ragevalInspectorKeys === true"


@pytest.fixture
def journey(dashboard_shared_runs) -> tuple[str, list[str], dict[str, str]]:
    with RunReader(dashboard_shared_runs.runs / f"{RETEVAL_RUN}.sqlite") as reader:
        table = reader.query_table()
    return dashboard_shared_runs.url, table["query_id"].tolist(), dict(zip(table["query_id"], table["text"]))


def heading(page, text: str):
    return page.get_by_role("heading", name=text, exact=True)


def settled(page) -> None:
    """Until the page script has finished (Streamlit's "Running..." status gone): a key pressed during a rerun may
    reach the buttons the rerun is about to replace, which a person would see as a press that did nothing."""
    from playwright.sync_api import expect

    expect(page.get_by_test_id("stStatusWidget")).to_have_count(0, timeout=WAIT_MS)


def test_walk_a_worklist_from_failure_cases_with_keys_buttons_and_back(journey, chromium_page):
    from playwright.sync_api import expect

    url, run_order, texts = journey
    with chromium_page() as (page, page_errors):
        page.goto(f"{url}/LLM_retEval?run={RETEVAL_RUN}")
        walk = page.get_by_role("link", name=re.compile(r"^Walk these \d+ queries in the query inspector"))
        expect(walk).to_be_visible(timeout=WAIT_MS)
        params = parse_qs(urlsplit(walk.get_attribute("href")).query)
        listed = decode_worklist(params["list"][0], run_order)
        name = params["list_name"][0]
        assert len(listed) >= 3, listed  # the fake reader fails enough questions at k=1 (tests/ui/test_app.py)
        n = len(listed)

        walk.click()  # one click, same tab
        expect(page.get_by_text(f"Case 1 of {n} · {name}")).to_be_visible(timeout=WAIT_MS)
        expect(heading(page, texts[listed[0]])).to_be_visible()
        assert len(page.context.pages) == 1
        page.wait_for_function(KEYS_READY, timeout=WAIT_MS)
        settled(page)
        heading(page, texts[listed[0]]).click()  # the focus on the page, not in the question box (keys there are text)

        page.keyboard.press("j")  # the keyboard's Next
        expect(page.get_by_text(f"Case 2 of {n} · {name}")).to_be_visible(timeout=WAIT_MS)
        expect(heading(page, texts[listed[1]])).to_be_visible(timeout=WAIT_MS)
        second_url = page.url
        assert parse_qs(urlsplit(second_url).query)["list"] == params["list"]  # the list stays in the URL

        settled(page)
        page.get_by_role("button", name="Next").click()
        expect(page.get_by_text(f"Case 3 of {n} · {name}")).to_be_visible(timeout=WAIT_MS)
        expect(heading(page, texts[listed[2]])).to_be_visible(timeout=WAIT_MS)
        page.screenshot(path=str(SHOTS / "inspector_worklist.png"), full_page=True)
        page.get_by_role("heading", name="Passages", exact=True).scroll_into_view_if_needed()
        page.screenshot(path=str(SHOTS / "inspector_passages.png"))

        page.go_back()  # the browser's back button: the previous case
        expect(page.get_by_text(f"Case 2 of {n} · {name}")).to_be_visible(timeout=WAIT_MS)
        expect(heading(page, texts[listed[1]])).to_be_visible(timeout=WAIT_MS)
        assert page.url == second_url
        settled(page)

        # A key typed into a field is text, not a step: the question box keeps the case.
        page.get_by_test_id("stSelectbox").filter(has_text="Question").click()
        page.keyboard.type("j")
        page.keyboard.press("Escape")
        expect(page.get_by_text(f"Case 2 of {n} · {name}")).to_be_visible()

        # A link whose list cannot be read says so and names it.
        page.goto(f"{url}/Query_inspector?run={RETEVAL_RUN}&query={listed[0]}&list=broken&list_name=stale+list")
        expect(page.get_by_text(re.compile(r"The link's list of queries 'stale list' cannot be walked here"))
               ).to_be_visible(timeout=WAIT_MS)
        expect(heading(page, texts[listed[0]])).to_be_visible(timeout=WAIT_MS)
        assert page.evaluate("typeof window.__pwned") == "undefined"
        assert not page_errors, page_errors
