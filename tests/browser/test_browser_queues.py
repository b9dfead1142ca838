"""The annotation-queue journey in a real Chromium, in local mode: an admin creates a queue on the Queues page (4 of
the fixture run's passages, each to both of two annotators), each annotator opens Annotate, finds "My queue" with
the guidelines and labels their items (Ada with the keyboard, Bob with the mouse, always the opposite label), then
the admin adjudicates one of the disagreements. What was stored is read back from the annotation file. Screenshot:
``test-output/queues.png``.

Runs on the session's dashboard (tests/conftest.py ``dashboard``), on a copy of the fixture run of its own and with
annotator names of its own, so that the other tests sharing the annotation file are not given a queue.
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

RUN = "queues-journey"
ADMIN, ADA, BOB = "Queue Admin", "Queue Ada", "Queue Bob"
GUIDELINES = "Useful: the passage alone answers the question."


@pytest.fixture(scope="module")
def queue_server(dashboard) -> tuple[str, Path]:
    make_small_run(dashboard.runs / f"{RUN}.sqlite")
    return dashboard.url, dashboard.runs


def stored(runs: Path, sql: str, *params) -> list[tuple]:
    with sqlite3.connect(runs / ANNOTATIONS_FILE) as connection:
        rows = connection.execute(sql, params).fetchall()
    connection.close()
    return rows


def test_create_a_queue_label_it_and_adjudicate_in_chromium(queue_server, chromium_page):
    from playwright.sync_api import expect

    url, runs = queue_server
    with chromium_page(height=2400) as (page, page_errors):
        page.goto(f"{url}/Queues?annotator={ADMIN}&run={RUN}")
        expect(page.get_by_role("heading", name="Queues", exact=True)).to_be_visible(timeout=WAIT_MS)
        expect(page.locator('[data-testid="stApp"][data-test-script-state="notRunning"]')).to_have_count(
            1, timeout=WAIT_MS)
        name = page.get_by_role("textbox", name="Queue name")
        try:
            expect(name).to_be_visible(timeout=5000)
        except AssertionError:  # the file already holds another test's queue: the form is folded
            page.get_by_text("Create a queue").click()
        name.fill("journey")
        for name, value in (("Items", "4"), ("Overlap (annotators per item)", "2")):
            box = page.get_by_role("spinbutton", name=name)
            box.fill(value)
            box.press("Tab")
        page.get_by_role("textbox", name="Annotators (one id per line)").fill(f"{ADA}\n{BOB}")
        guidelines = page.get_by_role("textbox", name="Guidelines (shown to each annotator with their queue)")
        guidelines.fill(GUIDELINES)
        page.get_by_role("button", name="Create the queue").click()
        expect(page.get_by_text(re.compile(r"Queue \d+ 'journey' created: 4 items of queues-journey"))).to_be_visible(
            timeout=WAIT_MS)
        [(queue_id,)] = stored(runs, "SELECT id FROM queues WHERE run = ?", RUN)
        assert len(stored(runs, "SELECT * FROM queue_assignments WHERE queue_id = ?", queue_id)) == 8

        # Ada: My queue opens by default, with the guidelines; she labels with the keyboard (1 everywhere).
        page.goto(f"{url}/Annotate?annotator={ADA}")
        expect(page.get_by_text(GUIDELINES)).to_be_visible(timeout=WAIT_MS)
        expect(page.get_by_text(f"0 of 4 items of queue 'journey' done by {ADA}")).to_be_visible(timeout=WAIT_MS)
        page.get_by_role("heading", name="Annotate", exact=True).click()
        page.wait_for_function("() => typeof window.__ragevalAnnotateKeys === 'function'", timeout=WAIT_MS)
        for done in range(1, 5):
            page.keyboard.press("1")
            expect(page.get_by_text(f"{done} of 4 items of queue 'journey' done by {ADA}")).to_be_visible(
                timeout=WAIT_MS)
        expect(page.get_by_text(re.compile("Every item of queue 'journey' assigned to Queue Ada is done"))
               ).to_be_visible(timeout=WAIT_MS)

        # Bob: the mouse, "Not useful" on each item.
        page.goto(f"{url}/Annotate?annotator={BOB}")
        expect(page.get_by_text(f"0 of 4 items of queue 'journey' done by {BOB}")).to_be_visible(timeout=WAIT_MS)
        for done in range(1, 5):
            page.get_by_role("button", name="Not useful [0]").click()
            expect(page.get_by_text(f"{done} of 4 items of queue 'journey' done by {BOB}")).to_be_visible(
                timeout=WAIT_MS)
        labels = stored(runs, "SELECT l.annotator, l.label, ql.position FROM queue_labels ql JOIN labels l ON "
                              "l.id = ql.label_id WHERE ql.queue_id = ? ORDER BY l.id", queue_id)
        assert sorted((a, v) for a, v, _ in labels) == [(ADA, 1)] * 4 + [(BOB, 0)] * 4
        assert sorted(p for _, _, p in labels) == [0, 0, 1, 1, 2, 2, 3, 3]

        # The admin: every item is a disagreement; adjudicate the first as useful.
        page.goto(f"{url}/Queues?annotator={ADMIN}&queue={queue_id}")
        expect(page.get_by_text("4 items where the annotators decided differently, 4 not adjudicated yet")
               ).to_be_visible(timeout=WAIT_MS)
        page.get_by_role("button", name="Adjudicate: useful").first.click()
        expect(page.get_by_text(f"Adjudicated: useful by {ADMIN}")).to_be_visible(timeout=WAIT_MS)
        expect(page.get_by_text("3 not adjudicated yet")).to_be_visible(timeout=WAIT_MS)
        page.screenshot(path=str(SHOTS / "queues.png"), full_page=True)
        assert not page_errors, page_errors

    assert stored(runs, "SELECT position, label, adjudicator FROM adjudications WHERE queue_id = ?", queue_id) == [
        (0, 1, ADMIN)]
    assert len(stored(runs, "SELECT * FROM queue_labels WHERE queue_id = ?", queue_id)) == 8  # none overwritten
