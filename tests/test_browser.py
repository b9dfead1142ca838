"""End-to-end tests in a real Chromium: start ``streamlit run app.py`` on the fixture run, read the summary,
open the query inspector, pick a query, and check that passage text holding HTML/script is shown literally
and never executed; then open the LLM-retEval page on a complete run (``tests/test_app.py``'s
:func:`reteval_run_file`), follow a failure case to the query inspector and switch the judge. Screenshots go
to ``test-output/``.

Needs Debian's Chromium at /usr/bin/chromium (``apt-get install -y chromium``) and the ``playwright`` package
(its own browser downloads are never used). Without Chromium the test is skipped, unless ``CI`` is set, in
which case it fails.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from rageval.store import RunReader
from tests.run_fixtures import INJECTION, make_small_run
from tests.test_app import MARKUP, RETEVAL_RUN, reteval_run_file

REPO = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")
SHOTS = REPO / "test-output"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SERVER_START_S = 45
WAIT_MS = 20_000


def _require_browser() -> None:
    missing = [] if CHROMIUM.exists() else [f"{CHROMIUM} (apt-get install -y chromium)"]
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing.append("the playwright package (pip install -r requirements-dev.txt)")
    if missing:
        reason = "browser test needs " + " and ".join(missing)
        if os.environ.get("CI"):
            pytest.fail(reason + "; CI is set, so this is a failure, not a skip")
        pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_until_healthy(url: str, server: subprocess.Popen, log: Path) -> None:
    """Poll Streamlit's health endpoint until it answers ``ok`` (or the server dies / times out)."""
    deadline = time.monotonic() + SERVER_START_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"streamlit exited with {server.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.read().strip() == b"ok":
                    return
        except OSError:
            time.sleep(0.2)  # polling interval of a readiness probe, not a wait for content
    pytest.fail(f"streamlit did not answer within {SERVER_START_S} s:\n{log.read_text()[-3000:]}")


@contextmanager
def streamlit_server(runs: Path, log_name: str, **extra_env: str) -> Iterator[str]:
    """``streamlit run app.py`` on ``runs`` (``$RAGEVAL_RUNS_DIR``; no shipped runs; plus ``extra_env``), bound to
    127.0.0.1 on a free port, its log in ``test-output/<log_name>``; yields its URL once healthy and stops it
    afterwards."""
    _require_browser()
    SHOTS.mkdir(exist_ok=True)
    log = SHOTS / log_name
    port = _free_port()
    # The shipped demo runs are left out unless a test asks for them (RAGEVAL_SHIPPED_RUNS_DIR in extra_env).
    env = {**os.environ, "RAGEVAL_RUNS_DIR": str(runs), "RAGEVAL_SHIPPED_RUNS_DIR": "", **extra_env}
    # Started as `make dashboard` starts it (ui.serve: `streamlit run app.py` with the pages' modules preloaded).
    command = [sys.executable, "-m", "ui.serve", "--server.headless", "true",
               "--server.address", "127.0.0.1", "--server.port", str(port),
               "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"]
    with log.open("w") as log_file:
        server = subprocess.Popen(command, cwd=REPO, env=env, stdout=log_file, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_until_healthy(url, server, log)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()


@pytest.fixture(scope="module")
def server_url(tmp_path_factory) -> Iterator[str]:
    _require_browser()
    runs = tmp_path_factory.mktemp("browser_runs")
    complete_run = shutil.copy(reteval_run_file(tmp_path_factory), runs / f"{RETEVAL_RUN}.sqlite")
    os.utime(complete_run, (1_000_000, 1_000_000))  # older, so the fixture run stays the default run
    make_small_run(runs / "fixture.sqlite")
    with streamlit_server(runs, "streamlit_server.log") as url:
        yield url


@contextmanager
def chromium_page(width: int = 1400, height: int = 1000):
    """A page in headless Debian chromium, with the JavaScript errors it raises; the browser closes after.

    Every ``expect`` of the browser tests waits for its condition up to :data:`WAIT_MS` (not Playwright's default
    5 s): a Streamlit page draws its elements one by one as its script runs, and on a loaded machine the next one
    may come more than 5 s after the one a test waited for."""
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=WAIT_MS)

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            page_errors: list[str] = []
            page.on("pageerror", lambda error: page_errors.append(str(error)))
            yield page, page_errors
        finally:
            browser.close()


def test_summary_inspector_and_escaping_in_chromium(server_url):
    from playwright.sync_api import expect

    with chromium_page() as (page, page_errors):
        # Home: the summary of the fixture run (6 queries; dataset named in the provenance caption).
        page.goto(server_url)
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
        page.goto(f"{server_url}/Query_inspector?query=nq:0")
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


def test_reteval_page_failure_case_to_inspector_in_chromium(server_url, tmp_path_factory):
    from playwright.sync_api import expect

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



def test_a_two_by_two_cell_opens_the_inspector_on_its_queries_in_the_same_tab(server_url, tmp_path,
                                                                             tmp_path_factory):
    """The engineer's first click: a cell of the home page's 2 x 2 opens the query inspector in the same tab, with
    the cell's queries as the worklist in the URL; Back returns to the findings; a leaderboard row opens that run's
    findings, in the same tab too."""
    from urllib.parse import parse_qs, urlsplit

    from playwright.sync_api import expect

    from tests.run_fixtures import K
    from tests.test_findings import pandas_two_by_two
    from ui import worklist

    fixture = make_small_run(tmp_path / "fixture.sqlite")  # the server's default run, built the same way
    with RunReader(fixture) as reader:
        order = reader.query_table()["query_id"].tolist()
    cells = {f"gold {'retrieved' if g else 'not retrieved'}, answer {'right' if r else 'wrong'} at k={K}": ids
             for (g, r), ids in pandas_two_by_two(fixture, K).items()}
    with chromium_page() as (page, page_errors):
        page.goto(server_url)
        expect(page.get_by_role("heading", name="Findings")).to_be_visible(timeout=WAIT_MS)
        link = page.get_by_role("link", name=re.compile(r"^Inspect these \d+$")).first
        expect(link).to_be_visible(timeout=WAIT_MS)
        link.click()
        expect(page.get_by_role("heading", name="Query inspector")).to_be_visible(timeout=WAIT_MS)
        assert len(page.context.pages) == 1  # the same tab
        params = {key: values[0] for key, values in parse_qs(urlsplit(page.url).query).items()}
        assert params["run"] == "fixture"
        ids = worklist.decode_worklist(params[worklist.LIST_PARAM], order)
        assert ids == cells[params[worklist.NAME_PARAM]] and params["query"] == ids[0]
        page.go_back()
        expect(page.get_by_role("heading", name="Findings")).to_be_visible(timeout=WAIT_MS)

        # The leaderboard: selecting the other run's row opens its findings in the same tab.
        with RunReader(reteval_run_file(tmp_path_factory)) as reader:
            other_mean = reader.query_table()["e2e_score"].mean()
        with RunReader(fixture) as reader:
            fixture_mean = reader.query_table()["e2e_score"].mean()
        order = sorted([(-fixture_mean, "fixture"), (-other_mean, RETEVAL_RUN)])  # best E2E score first
        row = [name for _, name in order].index(RETEVAL_RUN)
        expect(page.get_by_role("heading", name="All runs")).to_be_visible(timeout=WAIT_MS)
        board = page.get_by_test_id("stDataFrame").first
        board.scroll_into_view_if_needed()
        box = board.bounding_box()
        page.mouse.click(box["x"] + 15, box["y"] + 35 * (row + 1) + 17)  # the row's selection box (35 px rows)
        expect(page).to_have_url(re.compile(rf"[?&]run={RETEVAL_RUN}\b"), timeout=WAIT_MS)
        expect(page.get_by_text(f"Run {RETEVAL_RUN}.sqlite").first).to_be_visible(timeout=WAIT_MS)
        assert len(page.context.pages) == 1
        assert not page_errors, page_errors
