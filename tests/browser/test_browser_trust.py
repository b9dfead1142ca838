"""The trust views in a real Chromium: on a copy of the fixture run with 20 human labels of a shared sample, the
Annotate page shows the PPI section (intervals beside the human-only one, the chart over the label count) and the
Findings page says what the human labels make of eRAG EM's P@5. Screenshot: ``test-output/trust_annotate.png``.

Runs on the session's dashboard (tests/conftest.py ``dashboard``); the annotation file is the runs folder's, shared
with the other tests, and this module's labels are under its own run name."""

from __future__ import annotations

import pandas as pd
import pytest

from rageval.annotations import ANNOTATIONS_FILE, AnnotationStore
from tests.browser_support import SHOTS, WAIT_MS
from tests.run_fixtures import K, build_small_run, make_small_run

pytestmark = pytest.mark.browser

RUN = "trust-chromium"
LABELLED = 20


@pytest.fixture(scope="module")
def trust_server(dashboard) -> str:
    run = build_small_run()
    make_small_run(dashboard.runs / f"{RUN}.sqlite")
    items = pd.DataFrame([(r.query_id, p.passage_id, rank) for r in run.rankings
                          for rank, p in enumerate(r.passages, start=1)], columns=["query_id", "passage_id", "rank"])
    store = AnnotationStore(dashboard.runs / ANNOTATIONS_FILE)
    store.create_sample(RUN, items, len(items), seed=4, created_by="Ada")
    queue = store.latest_sample(RUN).items
    contains = {(x.query_id, x.passage_id): int(x.value) for x in run.labels if x.method == "contains_answer"}
    store.save_passage_labels(RUN, [(q, p, contains[(q, p)], "Ada") for q, p in
                                    list(zip(queue["query_id"], queue["passage_id"]))[:LABELLED]])
    return dashboard.url


def test_annotate_and_findings_show_the_ppi_estimates_in_chromium(trust_server, chromium_page):
    from playwright.sync_api import expect

    with chromium_page(height=4200) as (page, page_errors):
        page.goto(f"{trust_server}/Annotate?run={RUN}&annotator=Ada")
        expect(page.get_by_role("heading", name="What people would say: PPI estimates")).to_be_visible(
            timeout=WAIT_MS)
        expect(page.get_by_text(f"{LABELLED} of its passages labelled", exact=False)).to_be_visible(timeout=WAIT_MS)
        expect(page.get_by_text("Calibration against people")).to_be_visible(timeout=WAIT_MS)
        expect(page.locator(".vega-embed").filter(has_text="as labels arrive")).to_have_count(1, timeout=WAIT_MS)
        page.screenshot(path=str(SHOTS / "trust_annotate.png"), full_page=True)

        page.goto(f"{trust_server}/?run={RUN}")
        sentence = page.get_by_text(f"P@{K}", exact=False).filter(has_text="from automatic labels")
        expect(sentence).to_contain_text(f"with {LABELLED} human labels", timeout=WAIT_MS)
        expect(sentence).to_contain_text("(PPI, uniform sample")
        assert not page_errors, page_errors
