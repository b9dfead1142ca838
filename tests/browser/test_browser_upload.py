"""The upload journey in a real Chromium: open the Upload page of ``streamlit run app.py``, upload the four TREC files
made from the fixture run (tests/run_fixtures.py, real NQ-open records) with ``set_input_files``, validate, name and
save the run, follow the link to its overview on the home page and open its queries; the injection passage's markup
is shown as text and never runs. Screenshot: ``test-output/upload.png``.

Runs on the session's dashboard (tests/conftest.py ``dashboard``), saving the run under a name of its own. Debian's
Chromium, skipped without it unless ``CI`` is set (tests/browser_support.py).
"""

from __future__ import annotations

import re

import pytest

from rageval.store import RunReader
from tests.browser_support import SHOTS, WAIT_MS
from tests.run_fixtures import INJECTION, build_small_run
from tests.upload.test_upload import trec_files
from ui.render_upload import SLOTS

pytestmark = pytest.mark.browser

RUN_NAME = "browser-upload"


def test_upload_trec_files_then_open_the_new_run_in_chromium(dashboard, chromium_page):
    from playwright.sync_api import expect

    url, runs = dashboard.url, dashboard.runs
    files = trec_files(build_small_run())
    with chromium_page(height=1400) as (page, page_errors):
        page.goto(f"{url}/Upload")
        expect(page.get_by_role("heading", name="Upload a run")).to_be_visible(timeout=WAIT_MS)
        inputs = page.locator("input[type=file]")
        expect(inputs).to_have_count(len(SLOTS["trec"]), timeout=WAIT_MS)
        chosen = []
        for index, slot in enumerate(SLOTS["trec"]):  # the uploaders are in slot order
            file = files[slot.key]
            inputs.nth(index).set_input_files({"name": file.name, "mimeType": "text/plain", "buffer": file.data})
            chosen.append(file.name)
            # The page lists the files its last run saw: wait for it before the next upload (one made while the
            # script reruns can be lost).
            expect(page.get_by_text(re.compile(rf"(Chosen: |Press Validate to check ){re.escape(', '.join(chosen))}\.")
                                    )).to_be_visible(timeout=WAIT_MS)

        page.get_by_role("button", name="Validate").click()
        expect(page.get_by_text("Valid: 6 queries; 7 passages; 30 ranking rows")).to_be_visible(timeout=WAIT_MS)
        name = page.get_by_role("textbox", name="Run name")
        name.fill(RUN_NAME)
        name.press("Enter")
        save = page.get_by_role("button", name="Save")
        expect(save).to_be_enabled(timeout=WAIT_MS)
        save.click()
        expect(page.get_by_text(f"Saved run {RUN_NAME} into")).to_be_visible(timeout=WAIT_MS)
        page.screenshot(path=str(SHOTS / "upload.png"), full_page=True)
        with RunReader(runs / f"{RUN_NAME}.sqlite") as reader:
            assert reader.settings()["uploaded_files"]["run"] == "run.trec"

        page.get_by_role("link", name="Open its overview").click()
        expect(page.get_by_role("heading", name="Findings")).to_be_visible(timeout=WAIT_MS)
        expect(page).to_have_url(f"{url}/?run={RUN_NAME}", timeout=WAIT_MS)
        expect(page.get_by_test_id("stMetric").filter(has_text="Queries")).to_contain_text("6")
        expect(page.get_by_text(f"Run {RUN_NAME}.sqlite")).to_be_visible()

        page.get_by_role("link", name="Inspect queries one by one").click()
        expect(page.get_by_role("heading", name="Query inspector")).to_be_visible(timeout=WAIT_MS)
        expect(page).to_have_url(f"{url}/Query_inspector?run={RUN_NAME}&query=nq%3A0", timeout=WAIT_MS)
        injected = page.get_by_test_id("stExpander").filter(has_text="<script>window.__pwned=1</script>")
        expect(injected).to_be_visible(timeout=WAIT_MS)  # nq:0, the first query, ranks it third: shown as text
        expect(injected).to_contain_text(INJECTION)
        assert page.evaluate("typeof window.__pwned") == "undefined"  # ... and never run
        assert not page_errors, page_errors
