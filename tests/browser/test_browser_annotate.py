"""The annotation journey in a real Chromium, with the mouse: ``streamlit run app.py`` on the fixture run, open the
Annotate page, enter a name, draw a sample of every passage (the queue walks nq:0's five first), label two passages
with the buttons, see Cohen's kappa, download the CSV export and check its rows against what was clicked; the passage
holding HTML/script is shown literally and runs nothing. Screenshot: ``test-output/annotate.png``. The keyboard
journey is tests/browser/test_browser_annotate_keys.py.

Runs on the session's dashboard (tests/conftest.py ``dashboard``), on a copy of the fixture run of its own: the
annotation file is the runs folder's, shared with the other tests, so what is read back is this run's rows only.
Debian's Chromium, skipped without it unless ``CI`` is set (tests/browser_support.py).
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from rageval.annotations import ANNOTATIONS_FILE
from rageval.store import RunReader
from tests.browser_support import SHOTS, WAIT_MS
from tests.run_fixtures import INJECTION, make_small_run

pytestmark = pytest.mark.browser

NAME = "Ada Lovelace"
RUN = "annotate-mouse"  # the fixture run under this module's name


@pytest.fixture(scope="module")
def annotate_server(dashboard) -> tuple[str, Path]:
    """(URL, runs folder) of the session's dashboard, with the fixture run placed as :data:`RUN`."""
    make_small_run(dashboard.runs / f"{RUN}.sqlite")
    return dashboard.url, dashboard.runs


def sample_items(runs: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(runs / ANNOTATIONS_FILE) as connection:
        return [tuple(row) for row in connection.execute(
            "SELECT query_id, passage_id FROM sample_items JOIN samples ON samples.id = sample_id WHERE run = ?"
            " ORDER BY position", (RUN,))]


def test_annotate_label_kappa_and_csv_download_in_chromium(annotate_server, chromium_page, tmp_path):
    from playwright.sync_api import expect

    url, runs = annotate_server
    with RunReader(runs / f"{RUN}.sqlite") as reader:
        first, second = reader.rankings()["nq:0"].passage_ids[:2]
    with chromium_page(height=3200) as (page, page_errors):  # tall: the screenshot shows the kappa table too
        page.goto(f"{url}/Annotate?run={RUN}")
        expect(page.get_by_role("heading", name="Annotate", exact=True)).to_be_visible(timeout=WAIT_MS)
        expect(page.get_by_text("Enter your name to start labelling")).to_be_visible()

        name = page.get_by_role("textbox", name="Your name (annotator)")
        name.fill(NAME)
        name.press("Enter")
        expect(page).to_have_url(re.compile(r"[?&]annotator=Ada(\+|%20)Lovelace\b"), timeout=WAIT_MS)
        expect(page.get_by_text("Start by drawing the sample")).to_be_visible(timeout=WAIT_MS)
        size = page.get_by_role("spinbutton", name="Passages to label")
        size.fill("30")  # every passage: with seed 0 the queue starts with nq:0's five (tests/ui/test_app_annotate.py)
        size.press("Tab")
        page.get_by_role("button", name="Start: draw the sample").click()
        expect(page.get_by_text("0 of 30 sampled passages done by Ada Lovelace")).to_be_visible(timeout=WAIT_MS)
        expect(page.get_by_role("heading", name="who got the first nobel prize in physics")).to_be_visible(
            timeout=WAIT_MS)
        assert sample_items(runs)[:2] == [("nq:0", first), ("nq:0", second)]

        page.get_by_role("button", name="Useful [1]", exact=False).first.click()
        expect(page.get_by_text("1 of 30 sampled passages done")).to_be_visible(timeout=WAIT_MS)
        page.get_by_role("button", name="Not useful [0]").click()
        expect(page.get_by_text("2 of 30 sampled passages done by Ada Lovelace")).to_be_visible(timeout=WAIT_MS)
        # The third of nq:0 (rank 3) is the injection passage: shown as text.
        injected = page.get_by_test_id("stText").filter(has_text="<script>window.__pwned=1</script>")
        expect(injected).to_contain_text(INJECTION)

        # A label reloads only the queue; the agreement follows on Update (or when the sample is finished).
        page.get_by_role("button", name="Update the agreement").click()
        expect(page.get_by_text("From Ada Lovelace's 2 decisions")).to_be_visible(timeout=WAIT_MS)
        expect(page.get_by_role("heading", name="Agreement with the automatic labels")).to_be_visible(
            timeout=WAIT_MS)
        expect(page.get_by_text("Cohen's kappa (Cohen 1960)")).to_be_visible()
        expect(page.get_by_test_id("stVegaLiteChart").locator("canvas, svg").first).to_be_visible()  # drawn
        page.screenshot(path=str(SHOTS / "annotate.png"), full_page=True)

        with page.expect_download(timeout=WAIT_MS) as download_info:
            page.get_by_role("button", name="Download CSV (every label)").click()
        download = download_info.value
        assert download.suggested_filename == f"{RUN}-passage-annotations.csv"
        saved = tmp_path / download.suggested_filename
        download.save_as(saved)
        assert page.evaluate("typeof window.__pwned") == "undefined"
        assert not page_errors, page_errors

    exported = pd.read_csv(saved, dtype=str, keep_default_na=False)
    assert list(zip(exported["query_id"], exported["passage_id"], exported["label"], exported["annotator"],
                    exported["current"])) == [("nq:0", first, "1", NAME, "1"), ("nq:0", second, "0", NAME, "1")]
    with sqlite3.connect(runs / ANNOTATIONS_FILE) as connection:
        in_file = connection.execute("SELECT id, query_id, passage_id, label, annotator FROM labels WHERE run = ?"
                                     " ORDER BY id", (RUN,)).fetchall()
    assert [tuple(map(str, row)) for row in in_file] == list(zip(
        exported["id"], exported["query_id"], exported["passage_id"], exported["label"], exported["annotator"]))
