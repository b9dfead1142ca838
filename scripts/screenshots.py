"""The README's screenshots: Home, Query inspector, Correlations and Annotate on the shipped NQ run, in the light and
the dark theme (the browser's colour-scheme preference, which the dashboard follows), at 1400 and 800 px wide.

    .venv/bin/python scripts/screenshots.py            # writes docs/screenshots/<page>-<theme>-<width>.png

Starts the dashboard as ``make dashboard`` does (``python -m ui.serve``, i.e. ``streamlit run app.py``) on
127.0.0.1 with an empty runs folder (so the shipped runs are what it shows) and a throwaway annotations file,
drives Debian's Chromium with Playwright, waits for each page's content and for the script to finish (no fixed
sleeps), and takes the first screen (900 px high) of each page.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "docs" / "screenshots"
RUN = "nq_open-bm25-gemma3_270m"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
#: page name -> (URL path with query, CSS of the content that shows the page drew)
PAGES = {
    "home": (f"?run={RUN}", '[data-testid="stMetric"]'),
    "inspector": (f"Query_inspector?run={RUN}", '[data-testid="stExpander"]'),
    "correlations": (f"Correlations?run={RUN}", '[data-testid="stVegaLiteChart"] .marks'),
    "annotate": (f"Annotate?run={RUN}&annotator=Ada", '[data-testid="stButton"]'),
}
QUIET_MS = 1_000  # the script has finished when Streamlit's status widget stays away this long


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_healthy(url: str, server: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"streamlit exited with {server.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.read().strip() == b"ok":
                    return
        except OSError:
            time.sleep(0.2)  # readiness polling, not a wait for content
    raise SystemExit("streamlit did not start within 60 s")


def wait_finished(page) -> None:
    """Until Streamlit's status widget ("Running...") is gone and stays gone :data:`QUIET_MS`."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    status = page.locator('[data-testid="stStatusWidget"]')
    while True:
        status.wait_for(state="detached", timeout=60_000)
        try:
            status.wait_for(state="attached", timeout=QUIET_MS)
        except PlaywrightTimeout:
            return


def start_annotating(browser, url: str) -> None:
    """Draw a 20-passage sample as annotator "Ada" and label three passages with the keys, so that Annotate's
    screenshot shows the queue at work (the annotations file is the throwaway one)."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto(f"{url}/Annotate?run={RUN}&annotator=Ada")
    size = page.get_by_role("spinbutton", name="Passages to label")
    size.fill("20")
    size.press("Tab")
    page.get_by_role("button", name="Start: draw the sample").click()
    page.get_by_text("0 of 20 sampled passages done by Ada").wait_for(timeout=60_000)
    page.get_by_role("heading", name="Annotate", exact=True).click()
    page.wait_for_function("() => typeof window.__ragevalAnnotateKeys === 'function'", timeout=60_000)
    for done, key in enumerate("101", start=1):
        page.keyboard.press(key)
        page.get_by_text(f"{done} of 20 sampled passages done by Ada").wait_for(timeout=60_000)
    page.close()


def take(url: str, widths: list[int], themes: list[str]) -> list[Path]:
    from playwright.sync_api import sync_playwright

    OUT.mkdir(parents=True, exist_ok=True)
    written = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        start_annotating(browser, url)
        for theme in themes:
            for width in widths:
                page = browser.new_page(viewport={"width": width, "height": 900}, color_scheme=theme)
                for name, (path, content) in PAGES.items():
                    page.goto(f"{url}/{path}")
                    page.locator("h1").first.wait_for(state="visible", timeout=60_000)
                    page.locator(content).first.wait_for(state="visible", timeout=60_000)
                    wait_finished(page)
                    target = OUT / f"{name}-{theme}-{width}.png"
                    page.screenshot(path=str(target))
                    written.append(target)
                page.close()
        browser.close()
    return written


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--widths", default="1400,800")
    parser.add_argument("--themes", default="light,dark")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "RAGEVAL_RUNS_DIR": tmp, "RAGEVAL_ANNOTATIONS": str(Path(tmp) / "annotations.sqlite")}
        port = _free_port()
        server = subprocess.Popen([sys.executable, "-m", "ui.serve", "--server.port", str(port)],
                                  cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        try:
            url = f"http://127.0.0.1:{port}"
            _wait_healthy(url, server)
            written = take(url, [int(w) for w in args.widths.split(",")], args.themes.split(","))
        finally:
            server.terminate()
            server.wait(timeout=10)
    for path in written:
        print(path.relative_to(REPO))
    return 0


if __name__ == "__main__":
    sys.exit(main())
