"""The re-scoring journey in a real Chromium: open the Re-score page on the fixture run, start a job with a tiny
random Gemma built from a config (tests/conftest.py ``tiny_model_dir``, its folder typed into the model field),
watch the progress bar reach done (the page refreshes itself while the background worker runs), then follow the
link to the query inspector and find the new label column there. Screenshot: ``test-output/rescore.png``.

Skipped without Chromium, unless ``CI`` (tests/browser_support.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from rageval.jobs.spec import model_short_name
from tests.browser_support import SHOTS, WAIT_MS, streamlit_server
from tests.run_fixtures import make_small_run

pytestmark = pytest.mark.browser

JOB_WAIT_MS = 120_000  # a worker process starts, imports torch, loads the tiny model and labels 4 passages


@pytest.fixture(scope="module")
def rescore_server(tmp_path_factory) -> Iterator[str]:
    """A dashboard of its own, not the session's: the re-scoring jobs belong to a runs folder (one queue per
    folder), and this test checks the page on a folder with no job yet and that its job is the folder's first."""
    runs = tmp_path_factory.mktemp("rescore_runs")
    make_small_run(runs / "fixture.sqlite")
    cache = str(tmp_path_factory.mktemp("cache"))
    with streamlit_server(runs, "streamlit_server_rescore.log", RAGEVAL_CACHE_DIR=cache) as url:
        yield url


def test_start_a_rescore_job_watch_it_finish_and_see_the_labels(rescore_server, chromium_page, tiny_model_dir):
    from playwright.sync_api import expect

    method = f"erag:em@{model_short_name(str(tiny_model_dir))}"
    with chromium_page() as (page, page_errors):
        page.goto(f"{rescore_server}/Re_score")
        expect(page.get_by_role("heading", name="Re-score")).to_be_visible(timeout=WAIT_MS)
        expect(page.get_by_text("No re-scoring job on this runs folder yet")).to_be_visible(timeout=WAIT_MS)

        # The tiny model, the first 2 questions, their top 2 passages.
        model = page.get_by_label("Model", exact=True)
        model.fill(str(tiny_model_dir))
        model.press("Tab")
        page.get_by_text("the first N", exact=True).click()
        first = page.get_by_label("N (the first N queries)")
        first.fill("2")
        first.press("Tab")
        k = page.get_by_label("Passages per query: the top k of the run's ranking")
        k.fill("2")
        k.press("Tab")
        page.get_by_role("button", name="Start re-scoring").click()
        expect(page.get_by_text(f"Job 1 · {method} · ")).to_be_visible(timeout=WAIT_MS)

        # The job list refreshes itself until the worker is done.
        progress = page.get_by_test_id("stProgress")
        expect(progress).to_have_count(1, timeout=WAIT_MS)
        expect(page.get_by_text(f"Job 1 · {method} · ✓ done")).to_have_count(1, timeout=JOB_WAIT_MS)
        expect(progress).to_contain_text("4/4 passages labelled", timeout=WAIT_MS)
        # The page's last rerun has settled (until then the previous run's elements may still show).
        expect(page.get_by_text("All jobs as a table")).to_have_count(1, timeout=WAIT_MS)
        # A finished job offers the inspector link and no longer Cancel / Stop now.
        # (While the page redraws, a stale copy of the link may stand beside the new one: wait until one is left.)
        inspector_link = page.get_by_role("link", name="See the labels in the query inspector")
        expect(inspector_link).to_have_count(1, timeout=WAIT_MS)
        expect(inspector_link).to_be_visible(timeout=WAIT_MS)
        expect(page.get_by_role("button", name="Cancel")).to_have_count(0, timeout=WAIT_MS)
        expect(page.get_by_role("button", name="Stop now")).to_have_count(0)
        progress.scroll_into_view_if_needed()
        page.screenshot(path=str(SHOTS / "rescore.png"))

        # The new labels in the query inspector, on the job's first question.
        inspector_link.click()
        expect(page.get_by_role("heading", name="Query inspector")).to_be_visible(timeout=WAIT_MS)
        expect(page.get_by_role("heading", name="who got the first nobel prize in physics")).to_be_visible(
            timeout=WAIT_MS)
        # One expander per passage, its summary line ending with each label method's mark.
        passages = page.get_by_test_id("stExpander").locator("summary")
        labelled = passages.filter(has_text=re.compile(re.escape(method) + " [✓✗]$"))
        expect(labelled.first).to_be_visible(timeout=WAIT_MS)
        expect(labelled).to_have_count(2)  # the top 2 passages carry the new label...
        expect(passages.filter(has_text=re.compile(re.escape(method) + " –$"))).to_have_count(3)  # ...ranks 3-5 none
        page.screenshot(path=str(SHOTS / "rescore_inspector.png"), full_page=True)
        assert not page_errors, page_errors
