"""The first hour with a small run of one's own (issue 34), in a real Chromium: five questions of the shipped
HotpotQA slice that no shipped run holds, written as a user has them (a TREC run of each question's own
paragraphs, queries JSONL with answers and gold passages, passages JSONL); uploaded through the Upload page;
"Compute missing pieces" with a model served by rageval's own OpenAI-compatible server (the fake generator behind a
gate, so the job is seen while it runs); then every page of the dashboard on the new run. No screenshot is compared:
each page's texts are asserted.

Each page has a check function below (``check_<page>``), called with the page once it has drawn; a fixed item's
assertions go into its page's function. Runs on the session's dashboard (tests/conftest.py ``dashboard``) under a
run name of its own. Skipped without Chromium, unless ``CI`` (tests/browser_support.py).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from rageval.data import HOTPOTQA_FILE, read_hotpotqa
from rageval.generation.base import first_capitalised_span
from rageval.generation.server import serve
from rageval.paths import DATA_DIR
from tests.browser_support import SHOTS, WAIT_MS, save_upload_and_open, upload_and_validate
from tests.jobs.test_jobs import GatedReader
from ui import navigation
from ui.data_lacks import lacks_text
from ui.render_jobs import LOADING, STATUS_NAMES
from ui.render_lacks import MODEL_CHOICES

pytestmark = pytest.mark.browser

RUN_NAME = "journey-hotpotqa"
MODEL = "fake-journey"
#: Five questions no shipped run holds: the HotpotQA file's 31st to 35th (the shipped HotpotQA demo runs use its
#: first 30; scripts/export_hotpotqa_beir.py starts at the 31st for the same reason).
FIRST, COUNT = 31, 5
JOB_WAIT_MS = 180_000  # a worker process starts, imports the pipeline, loads MiniLM (BERTScore, cosine judge)
#: The complete job's progress bar while its first LLM batch waits at the gate (:func:`ui.render_jobs.progress_text`).
STAGE_TEXT = re.compile(r"stage (\w+) (\d+)/(\d+) LLM calls \((\d+) from the cache, (\d+) new\)")


def write_hotpotqa_files(folder: Path) -> dict[str, Path]:
    """The five questions as a user has them: ``system.trec`` (each question's own ~10 paragraphs in file order,
    scores descending), ``questions.jsonl`` (query_id, text, answers, gold_passage_ids: the supporting paragraphs)
    and ``passages.jsonl`` (passage_id, title, text); passage ids ``<question id>:<paragraph id>`` as
    scripts/export_hotpotqa_beir.py writes them."""
    records = read_hotpotqa(DATA_DIR / HOTPOTQA_FILE)[FIRST - 1:FIRST - 1 + COUNT]
    folder.mkdir(parents=True, exist_ok=True)
    run, queries, passages = [], [], []
    for record in records:
        ids = [f"{record.question_id}:{c.context_id}" for c in record.contexts]
        queries.append({"query_id": record.question_id, "text": record.question, "answers": list(record.answers),
                        "gold_passage_ids": [i for i, c in zip(ids, record.contexts) if c.is_supporting]})
        for rank, (passage_id, context) in enumerate(zip(ids, record.contexts), start=1):
            passages.append({"passage_id": passage_id, "title": context.title, "text": context.text})
            run.append(f"{record.question_id} Q0 {passage_id} {rank} {len(ids) - rank + 1} mine\n")
    files = {"run": folder / "system.trec", "queries": folder / "questions.jsonl",
             "passages": folder / "passages.jsonl"}
    files["run"].write_text("".join(run), encoding="utf-8")
    files["queries"].write_text("".join(json.dumps(q) + "\n" for q in queries), encoding="utf-8")
    files["passages"].write_text("".join(json.dumps(p) + "\n" for p in passages), encoding="utf-8")
    return files


@pytest.fixture(scope="module")
def gated_server(dashboard) -> Iterator[tuple[str, str, GatedReader]]:
    """(dashboard URL, model server base URL, its generator): rageval's own server serving the fake generator behind
    a gate, so a job can be held at a known point."""
    generator = GatedReader(rule=first_capitalised_span, model_id=MODEL)
    with serve(generator, model_name=MODEL) as model_server:
        yield dashboard.url, model_server.base_url, generator
    generator.gate.set()


# --- one check per page: what the page must say about the new run --------------------------------------------

def check_findings(page) -> None:
    from playwright.sync_api import expect

    filled = page.get_by_test_id("stMetric").filter(has_text=re.compile(r"E2E EM \(mean\)\s*\d+(\.\d+)?%"))
    expect(filled.first).to_be_visible(timeout=WAIT_MS)
    expect(page.get_by_text("What this run lacks:")).to_have_count(0)
    # Item 2: five queries are a small sample, and the page says so.
    expect(page.get_by_text(f"Small sample: {COUNT} queries.").first).to_be_visible(timeout=WAIT_MS)
    # Issue 42, item 3: the leaderboard ranks by what the intervals support and marks small runs.
    expect(page.get_by_text(re.compile(r"ranked by what the intervals support: a run ranks below another only "
                                       r"when its interval lies wholly below it")).first).to_be_visible()


def check_glossary(page) -> None:
    pass  # the same for every run: its own tests (tests/ui/test_app_glossary*.py)


def check_inspector(page) -> None:
    from playwright.sync_api import expect

    expect(page.get_by_text("End-to-end answer").first).to_be_visible(timeout=WAIT_MS)


def check_failures(page) -> None:
    from playwright.sync_api import expect

    # Item 3: opened with ?run=, the page is filtered to this run (its panel on its own y scale, or the run named
    # among those without failure cases), never lost among the shipped runs' bars.
    expect(page.get_by_text(re.compile(r"Each run's panel has its own y scale|without failure cases")).first
           ).to_be_visible(timeout=WAIT_MS)


def check_reteval(page) -> None:
    from playwright.sync_api import expect

    expect(page.get_by_text("has no LLM-retEval verdicts")).to_have_count(0)


def check_citations(page) -> None:
    pass  # an uploaded run has no attributed answers: the page offers the runs that have them


def check_correlations(page) -> None:
    from playwright.sync_api import expect

    expect(page.get_by_text("Kendall's tau-b").first).to_be_visible(timeout=WAIT_MS)
    # Items 1-2: five queries get no interval, or the constant side is named (with a k where it varies).
    expect(page.get_by_text(f"Small sample: {COUNT} queries.").first).to_be_visible(timeout=WAIT_MS)
    expect(page.get_by_text(re.compile(r"too few queries for an interval \(n = \d+ < 20\)|nothing to correlate with"))
           .first).to_be_visible(timeout=WAIT_MS)


def check_compare(page) -> None:
    from playwright.sync_api import expect

    # Issue 42, item 6: opened with ?run=, run A is that run (not silently the newest).
    expect(page.get_by_text(re.compile(rf"^A: {RUN_NAME} · B: ")).first).to_be_visible(timeout=WAIT_MS)


def check_agents(page) -> None:
    pass  # IUM runs are of their own kind: nothing of an uploaded run shows there


def check_annotate(page) -> None:
    from playwright.sync_api import expect

    # Issue 42, item 8: the provenance line once, under the heading.
    expect(page.get_by_text(re.compile(rf"^Run {RUN_NAME} · ")).first).to_be_visible(timeout=WAIT_MS)
    expect(page.get_by_text(re.compile(rf"^Run {RUN_NAME} · ")).filter(visible=True)).to_have_count(1)


def check_rescore(page) -> None:
    from playwright.sync_api import expect

    # The finished complete job is listed with its last stage's counts, and its one status.
    expect(page.get_by_text(f"complete@{MODEL}").first).to_be_visible(timeout=WAIT_MS)
    expect(page.get_by_text(STATUS_NAMES["done"]).first).to_be_visible(timeout=WAIT_MS)


def check_upload(page) -> None:
    pass


def check_queues(page) -> None:
    from playwright.sync_api import expect

    # A queue can be created (the form is open while the annotation file holds no queue).
    expect(page.get_by_text("Create a queue").first).to_be_visible(timeout=WAIT_MS)


#: Page file -> (its title heading, as a pattern; the check of what it says). A page with no run of its kind (an
#: uploaded run has no attributed answers, no IUM experiment) is titled by that kind.
PAGE_CHECKS: dict[str, tuple[str, Callable]] = {
    navigation.HOME: ("^Findings$", check_findings), navigation.GLOSSARY: ("^Glossary$", check_glossary),
    navigation.INSPECTOR: ("^Query inspector$", check_inspector),
    navigation.FAILURES: ("^Failure cases$", check_failures), navigation.RETEVAL: ("^LLM-retEval$", check_reteval),
    navigation.CITATIONS: ("^(attribution|Citations)", check_citations),
    navigation.CORRELATIONS: ("^Correlations", check_correlations),
    navigation.COMPARE: ("^Compare runs$", check_compare), navigation.AGENTS: ("^(IUM|Agents)", check_agents),
    navigation.ANNOTATE: ("^Annotate$", check_annotate), navigation.RESCORE: ("^Re-score$", check_rescore),
    navigation.UPLOAD: ("^Upload a run$", check_upload), navigation.QUEUES: ("^Queues$", check_queues),
}


# --- the journey ---------------------------------------------------------------------------------------------

def upload(page, url: str, files: dict[str, Path]) -> None:
    """The Upload page's TREC form: run, queries and passages (no qrels: the gold passages are in the queries),
    validated and saved as :data:`RUN_NAME`; then to its overview."""
    from playwright.sync_api import expect

    n_passages = len(files["passages"].read_text().splitlines())
    upload_and_validate(page, url, files, rf"Valid: {COUNT} queries; {n_passages} passages; {n_passages} ranking rows")
    # Item 5: the queries' gold_passage_ids are the run's gold labels (no "no qrels file" warning in the table).
    expect(page.get_by_text(re.compile(r"labels: gold\b")).first).to_be_visible(timeout=WAIT_MS)
    expect(page.get_by_text("no qrels file: the run has no relevance labels").filter(visible=True)).to_have_count(0)
    save_upload_and_open(page, RUN_NAME)


def compute_missing_pieces(page, model_url: str, generator: GatedReader) -> None:
    """The overview's lacks panel: only the chosen model option's inputs show; the job starts held at its first
    LLM batch, and the panel, its progress bar and the page's hint say what is going on; then the gate opens and
    the page reruns on the rewritten file."""
    from playwright.sync_api import expect

    expect(page.get_by_text("What this run lacks:")).to_be_visible(timeout=WAIT_MS)
    expect(page.get_by_text(lacks_text(dict.fromkeys(("erag", "e2e", "baselines", "reteval"), "missing")))
           ).to_be_visible()
    hint = page.get_by_text("Compute the E2E answers with the button above")
    expect(hint).to_be_visible()
    # The packaged model needs no folder and no server: their inputs show only once chosen.
    expect(page.get_by_label("Server base URL")).to_have_count(0)
    expect(page.get_by_label("Model folder (local Hugging Face model)")).to_have_count(0)
    page.get_by_text(MODEL_CHOICES["folder"]).click()
    expect(page.get_by_label("Model folder (local Hugging Face model)")).to_be_visible(timeout=WAIT_MS)
    expect(page.get_by_label("Server base URL")).to_have_count(0)
    page.get_by_text(MODEL_CHOICES["server"]).click()
    page.get_by_label("Server base URL").fill(model_url)
    page.get_by_label("Served model name").fill(MODEL)
    expect(page.get_by_label("Model folder (local Hugging Face model)")).to_have_count(0)

    generator.close_after(prompts=0)  # the job's first LLM batch waits at the server until the gate opens
    page.get_by_role("button", name="Compute missing pieces").click()
    expect(page.get_by_text(f"complete@{MODEL}")).to_be_visible(timeout=WAIT_MS)  # the job's block
    bar = page.get_by_test_id("stProgress").filter(has_text=STAGE_TEXT)
    expect(bar).to_be_visible(timeout=JOB_WAIT_MS)
    stage, done, total, cached, new = STAGE_TEXT.search(bar.inner_text()).groups()
    assert stage == "erag" and int(cached) + int(new) == int(done) == 0 < int(total), bar.inner_text()  # held
    assert "per s" not in bar.inner_text() and "ETA" not in bar.inner_text()  # no new call yet: no rate to tell
    # One status at a time: the job runs, so it is neither queued nor loading its model.
    block = page.get_by_test_id("stVerticalBlock").filter(has=bar).last  # the job block's head
    expect(block).to_contain_text(STATUS_NAMES["running"])
    expect(block).not_to_contain_text(STATUS_NAMES["queued"])
    expect(block).not_to_contain_text(LOADING)
    # The page's own hint follows the panel: the button it pointed at is gone while the job runs.
    expect(hint).to_have_count(0)
    expect(page.get_by_text("A background job is computing the E2E answers now")).to_be_visible()
    page.screenshot(path=str(SHOTS / "journey_job.png"), full_page=True)

    generator.gate.set()
    expect(page.get_by_text("What this run lacks:")).to_have_count(0, timeout=JOB_WAIT_MS)


def test_upload_compute_then_every_page_says_what_the_new_run_holds(gated_server, chromium_page, tmp_path):
    from playwright.sync_api import expect

    url, model_url, generator = gated_server
    files = write_hotpotqa_files(tmp_path / "mine")
    with chromium_page(height=1400) as (page, page_errors):
        upload(page, url, files)
        compute_missing_pieces(page, model_url, generator)
        for entry in navigation.PAGES:
            page.goto(f"{url}/{entry.url_path}?run={RUN_NAME}")
            heading, check = PAGE_CHECKS[entry.file]
            expect(page.get_by_role("heading", name=re.compile(heading)).first).to_be_visible(timeout=JOB_WAIT_MS)
            expect(page.locator('[data-testid="stApp"][data-test-script-state="notRunning"]')).to_have_count(
                1, timeout=JOB_WAIT_MS)
            expect(page.get_by_test_id("stException")).to_have_count(0)
            check(page)
            page.screenshot(path=str(SHOTS / f"journey_{entry.url_path or 'Findings'}.png"), full_page=True)
        assert not page_errors, page_errors
