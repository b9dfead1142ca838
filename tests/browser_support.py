"""What the Chromium tests share: Debian's Chromium and playwright (or a skip), a dashboard server started as
``make dashboard`` starts it, and a page in a fresh browser context. The session's one server and one browser are
the fixtures ``dashboard`` and ``chromium_page`` of tests/conftest.py.

Needs Debian's Chromium at /usr/bin/chromium (``apt-get install -y chromium``) and the ``playwright`` package (its
own browser downloads are never used). Without them a browser test is skipped, unless ``CI`` is set, in which case
it fails. Screenshots and server logs go to ``test-output/``.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")
SHOTS = REPO / "test-output"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SERVER_START_S = 45
#: Every ``expect`` of the browser tests waits for its condition up to this (not Playwright's default 5 s): a
#: Streamlit page draws its elements one by one as its script runs, and on a loaded machine the next one may come
#: more than 5 s after the one a test waited for.
WAIT_MS = 20_000


def require_browser() -> None:
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
    require_browser()
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


@dataclass(frozen=True)
class Dashboard:
    """The session's dashboard server: its URL and its runs folder. A test places the runs it needs there under
    names of its own (no other test reads or changes them) and opens them by name (``?run=<name>``), since which
    run is the default depends on what the other tests have placed."""

    url: str
    runs: Path

    def place(self, source: Path, name: str) -> Path:
        """A copy of the run file ``source`` in the runs folder as ``<name>.sqlite``."""
        return Path(shutil.copy(source, self.runs / f"{name}.sqlite"))


@contextmanager
def page_in(browser, width: int = 1400, height: int = 1000):
    """A page of ``browser`` in a fresh context (no cookies, storage or history of another test), with the
    JavaScript errors it raises; the context closes after."""
    context = browser.new_context(viewport={"width": width, "height": height})
    try:
        page = context.new_page()
        page_errors: list[str] = []
        page.on("pageerror", lambda error: page_errors.append(str(error)))
        yield page, page_errors
    finally:
        context.close()


@contextmanager
def launched_chromium_page(width: int = 1400, height: int = 1000):
    """A page of a Chromium launched for it, closed after: for a script that runs outside pytest (tests use the
    session's browser through the ``chromium_page`` fixture)."""
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=WAIT_MS)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            with page_in(browser, width, height) as opened:
                yield opened
        finally:
            browser.close()


# --- the Upload page's TREC form ---------------------------------------------------------------------------------

def upload_and_validate(page, url: str, files: dict[str, Path], valid: str) -> None:
    """On the Upload page's TREC form, choose ``files["run"]``, ``files["queries"]`` and ``files["passages"]`` (no
    qrels), each seen by the page before the next, press Validate and wait for the ``valid`` pattern."""
    import re

    from playwright.sync_api import expect

    page.goto(f"{url}/Upload")
    expect(page.get_by_role("heading", name="Upload a run")).to_be_visible(timeout=WAIT_MS)
    inputs = page.locator("input[type=file]")  # the TREC form's slots: run, qrels, queries, passages
    expect(inputs).to_have_count(4, timeout=WAIT_MS)
    chosen = []
    for index, key in ((0, "run"), (2, "queries"), (3, "passages")):
        inputs.nth(index).set_input_files(str(files[key]))
        chosen.append(files[key].name)
        expect(page.get_by_text(re.compile(rf"(Chosen: |Press Validate to check ){re.escape(', '.join(chosen))}"))
               ).to_be_visible(timeout=WAIT_MS)  # the page saw this file before the next one is set
    page.get_by_role("button", name="Validate").click()
    expect(page.get_by_text(re.compile(valid))).to_be_visible(timeout=WAIT_MS)


def save_upload_and_open(page, name: str) -> None:
    """Save the validated upload as ``name`` and follow the link to its overview."""
    from playwright.sync_api import expect

    box = page.get_by_role("textbox", name="Run name")
    box.fill(name)
    box.press("Enter")
    save = page.get_by_role("button", name="Save")
    expect(save).to_be_enabled(timeout=WAIT_MS)
    save.click()
    page.get_by_role("link", name="Open its overview").click()
