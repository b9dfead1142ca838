"""The journey of issue 14 in a real Chromium: upload a run of one's own data (the TREC form: a run file, questions
with answers and gold passages, passages; tests/user_run_fixtures.py), see on its overview what it lacks, start
"Compute missing pieces" with a model served by an OpenAI-compatible server (rageval's own, serving the fake
generator, so the background worker loads no model), watch the job finish, and find the Correlations and LLM-retEval
pages filled in. Screenshots: ``test-output/complete*.png``.

Runs on the session's dashboard (tests/conftest.py ``dashboard``: its own runs and cache folders), the upload under
a name of its own. Skipped without Chromium, unless ``CI`` (tests/browser_support.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from rageval.generation.base import FakeGenerator
from rageval.generation.server import serve
from tests.browser_support import SHOTS, WAIT_MS, save_upload_and_open, upload_and_validate
from tests.user_run_fixtures import write_user_files
from ui.data_lacks import lacks_text
from ui.render_lacks import MODEL_CHOICES

RUN_NAME = "my-system"
MODEL = "fake-span"
JOB_WAIT_MS = 90_000  # a worker process starts, imports the pipeline, loads MiniLM (BERTScore, cosine judge)

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def complete_server(dashboard) -> Iterator[tuple[str, str]]:
    """(dashboard URL, model server base URL): the session's dashboard and rageval's own OpenAI-compatible server
    serving the fake generator."""
    with serve(FakeGenerator(model_id=MODEL), model_name=MODEL) as model_server:
        yield dashboard.url, model_server.base_url


def test_upload_see_what_it_lacks_compute_it_and_the_pages_fill_in(complete_server, chromium_page, tmp_path):
    from playwright.sync_api import expect

    url, model_url = complete_server
    files = write_user_files(tmp_path / "mine")
    uploads = {"run": files["run"], "queries": files["queries"], "passages": files["passages"]}
    with chromium_page(height=1400) as (page, page_errors):
        upload_and_validate(page, url, uploads, r"Valid: 6 queries; 15 passages; 18 ranking rows")
        save_upload_and_open(page, RUN_NAME)

        # The overview says what the upload lacks and offers the job.
        lacks = page.get_by_text("What this run lacks:")
        expect(lacks).to_be_visible(timeout=WAIT_MS)
        expect(page.get_by_text(lacks_text(dict.fromkeys(("erag", "e2e", "baselines", "reteval"), "missing")))
               ).to_be_visible()
        page.get_by_text(MODEL_CHOICES["server"]).click()
        page.get_by_label("Server base URL").fill(model_url)
        page.get_by_label("Served model name").fill(MODEL)
        page.get_by_role("button", name="Compute missing pieces").click()
        expect(page.get_by_text(f"complete@{MODEL}")).to_be_visible(timeout=WAIT_MS)  # the job's block
        page.screenshot(path=str(SHOTS / "complete_job.png"), full_page=True)
        # When the job is done the page reruns on the rewritten file: the panel goes, the E2E metric fills in.
        expect(lacks).to_have_count(0, timeout=JOB_WAIT_MS)
        # (A stale copy of the metric may stand beside the new one while the page redraws: wait for the filled one.)
        filled = page.get_by_test_id("stMetric").filter(has_text=re.compile(r"E2E EM \(mean\)\s*\d+(\.\d+)?%"))
        expect(filled.first).to_be_visible(timeout=WAIT_MS)

        page.goto(f"{url}/Correlations?run={RUN_NAME}")
        expect(page.get_by_role("heading", name="Correlations: labels against the end-to-end answer")).to_be_visible(
            timeout=WAIT_MS)
        expect(page.get_by_text("Kendall's tau-b").first).to_be_visible(timeout=WAIT_MS)
        expect(page.get_by_test_id("stVegaLiteChart").first.locator(".marks").first).to_be_visible(timeout=WAIT_MS)
        page.screenshot(path=str(SHOTS / "complete_correlations.png"), full_page=True)

        page.goto(f"{url}/LLM_retEval?run={RUN_NAME}")
        expect(page.get_by_role("heading", name=re.compile("Retriever evaluation, judge"))).to_be_visible(
            timeout=WAIT_MS)
        expect(page.get_by_role("heading", name="Failure cases")).to_be_visible(timeout=WAIT_MS)
        expect(page.get_by_text("has no LLM-retEval verdicts")).to_have_count(0)
        page.screenshot(path=str(SHOTS / "complete_reteval.png"), full_page=True)
        assert not page_errors, page_errors
