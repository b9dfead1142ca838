"""The annotator's journey with the keyboard only, in a real Chromium (issue 15): ``streamlit run app.py`` on the
fixture run, open the Annotate page with a name in the link, draw a sample of 10 passages with the form, then label
all 10 with the 1 / 0 keys (auto-advance opens the next pending item after each), walk back with k and forward with j,
see the automatic labels revealed beside the person's once a question's passages are done, and Cohen's kappa.

What was typed is checked against the annotation file itself (labels, in the sample's order; this run's rows only:
the file is the runs folder's, shared with the other tests on the session's dashboard). Screenshot:
``test-output/annotate_keys.png``. Debian's Chromium, skipped without it unless ``CI`` is set
(tests/browser_support.py).
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from rageval.annotations import ANNOTATIONS_FILE
from tests.browser_support import SHOTS, WAIT_MS
from tests.run_fixtures import make_small_run

pytestmark = pytest.mark.browser

NAME = "Ada"
SAMPLE = 10
#: What the annotator types, one key per sampled passage (1 useful, 0 not): both labels, so kappa is informative.
KEYS = "1001100101"
RUN = "annotate-keys"  # the fixture run under this module's name


@pytest.fixture(scope="module")
def annotate_server(dashboard) -> tuple[str, Path]:
    """(URL, runs folder) of the session's dashboard, with the fixture run placed as :data:`RUN`."""
    make_small_run(dashboard.runs / f"{RUN}.sqlite")
    return dashboard.url, dashboard.runs


def progress(page, done: int):
    """The progress bar's text once ``done`` items are done (what each key press must lead to)."""
    return page.get_by_text(f"{done} of {SAMPLE} sampled passages done by {NAME}")


def test_label_ten_passages_with_the_keyboard_then_reveal_and_kappa(annotate_server, chromium_page):
    from playwright.sync_api import expect

    url, runs = annotate_server
    with chromium_page(height=2400) as (page, page_errors):
        page.goto(f"{url}/Annotate?run={RUN}&annotator={NAME}")
        expect(page.get_by_text("Start by drawing the sample")).to_be_visible(timeout=WAIT_MS)
        size = page.get_by_role("spinbutton", name="Passages to label")
        size.fill(str(SAMPLE))
        size.press("Tab")
        page.get_by_role("button", name="Start: draw the sample").click()
        expect(progress(page, 0)).to_be_visible(timeout=WAIT_MS)
        expect(page).to_have_url(re.compile(r"[?&]item=1\b"))
        with sqlite3.connect(runs / ANNOTATIONS_FILE) as connection:
            items = connection.execute("SELECT query_id, passage_id FROM sample_items JOIN samples"
                                       " ON samples.id = sample_id WHERE run = ? ORDER BY position", (RUN,)).fetchall()
        connection.close()
        assert len(items) == SAMPLE

        # Keyboard only from here: the focus is on the page body, not on a text box.
        page.get_by_role("heading", name="Annotate", exact=True).click()
        page.wait_for_function("() => typeof window.__ragevalAnnotateKeys === 'function'",
                               timeout=WAIT_MS)  # the hotkey script is listening
        for done, key in enumerate(KEYS, start=1):
            page.keyboard.press(key)
            expect(progress(page, done)).to_be_visible(timeout=WAIT_MS)  # saved, the next item opened
            if done < SAMPLE:
                expect(page).to_have_url(re.compile(rf"[?&]item={done + 1}\b"))
        expect(page.get_by_text("Every sampled passage is done")).to_be_visible(timeout=WAIT_MS)

        # The Done view: j / k walk the done items; a key typed into the note box is text, not a label.
        page.get_by_text(f"Done ({SAMPLE})").click()
        expect(page).to_have_url(re.compile(r"[?&]item=1\b"), timeout=WAIT_MS)
        page.get_by_role("heading", name="Annotate", exact=True).click()
        page.keyboard.press("j")
        expect(page).to_have_url(re.compile(r"[?&]item=2\b"), timeout=WAIT_MS)
        page.keyboard.press("j")
        expect(page).to_have_url(re.compile(r"[?&]item=3\b"), timeout=WAIT_MS)
        page.keyboard.press("k")
        expect(page).to_have_url(re.compile(r"[?&]item=2\b"), timeout=WAIT_MS)
        expect(page.get_by_text("Your label: not useful")).to_be_visible(timeout=WAIT_MS)  # KEYS[1] == "0"
        note = page.get_by_role("textbox", name="Note (saved with your next label of this passage)")
        note.fill("1 0 u s")
        expect(progress(page, SAMPLE)).to_be_visible()
        with sqlite3.connect(runs / ANNOTATIONS_FILE) as connection:
            assert connection.execute("SELECT COUNT(*) FROM labels WHERE run = ?", (RUN,)
                                      ).fetchone()[0] == SAMPLE  # typing saved nothing
        connection.close()

        # The reveal (each method's label beside hers) and Cohen's kappa against every method.
        expect(page.get_by_text("Revealed: the automatic labels on")).to_be_visible(timeout=WAIT_MS)
        expect(page.get_by_role("heading", name="Agreement with the automatic labels")).to_be_visible()
        expect(page.get_by_text("Cohen's kappa (Cohen 1960)")).to_be_visible()
        expect(page.get_by_text("Only items you labelled useful or not")).to_be_visible()
        expect(page.get_by_test_id("stVegaLiteChart").locator("canvas, svg").first).to_be_visible()  # drawn
        page.screenshot(path=str(SHOTS / "annotate_keys.png"), full_page=True)
        assert not page_errors, page_errors

    with sqlite3.connect(runs / ANNOTATIONS_FILE) as connection:
        saved = connection.execute("SELECT query_id, passage_id, label, status, annotator FROM labels WHERE run = ?"
                                   " ORDER BY id", (RUN,)).fetchall()
    connection.close()
    assert saved == [(*item, int(key), "labelled", NAME) for item, key in zip(items, KEYS)]
