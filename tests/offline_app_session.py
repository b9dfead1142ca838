"""The dashboard with outgoing connections blocked, for ``tests/engine/test_offline.py``, which runs this module in a
new network namespace where it can (so the server and the browser share the namespace's only network, loopback):

    python -m tests.offline_app_session SETTINGS.json

The dashboard is started as ``make dashboard`` starts it (``python -m ui.serve``: ``streamlit run app.py`` with
the pages' modules imported first; its settings from ``.streamlit/config.toml``; only a free
port is given), under the Python guard and strace (``tests/offline_helpers.py``); every page is opened in
Chromium on the run named in the settings and waited for until drawn. What was seen is written to the settings'
``out`` as JSON: the addresses the server listens on, each page's title and error elements, the browser's
requests outside loopback, the server log's URL lines. The test makes the assertions.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import traceback
import urllib.parse
import urllib.request
from pathlib import Path

from tests.offline_helpers import REPO, guarded_env, listening_addresses, strace_prefix

SERVER_START_S = 90
PAGE_WAIT_MS = 120_000


def page_paths() -> list[str]:
    """The URL path of the home page and of every page file (``app_pages/4_Agents_IUM.py`` -> ``Agents_IUM``)."""
    names = sorted((REPO / "app_pages").glob("*.py"), key=lambda p: int(p.name.split("_", 1)[0]))
    return ["", *(p.stem.split("_", 1)[1] for p in names)]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_until_healthy(url: str, server: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + SERVER_START_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"streamlit exited with {server.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.read().strip() == b"ok":
                    return
        except OSError:
            time.sleep(0.2)  # polling interval of a readiness probe
    raise RuntimeError(f"streamlit did not answer within {SERVER_START_S} s:\n{log.read_text()[-3000:]}")


def _stop(server: subprocess.Popen) -> None:
    try:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()
    except ProcessLookupError:
        pass


def visit_pages(url: str, run: str) -> tuple[list[dict], list[str]]:
    """Each page opened on ``run`` and waited for until drawn: (per page: path, title, error texts; the requests
    the browser made to hosts other than loopback)."""
    from playwright.sync_api import expect

    from tests.browser.test_browser_pages import wait_until_rendered
    from tests.browser_support import launched_chromium_page

    outside: list[str] = []

    def note(request) -> None:
        parsed = urllib.parse.urlparse(request.url)
        if parsed.scheme in ("http", "https", "ws", "wss") and parsed.hostname not in ("127.0.0.1", "localhost"):
            outside.append(request.url)

    pages = []
    with launched_chromium_page() as (page, page_errors):
        page.on("request", note)
        for path in page_paths():
            page.goto(f"{url}/{path}?run={urllib.parse.quote(run)}")
            heading = page.locator("h1").first
            expect(heading).to_be_visible(timeout=PAGE_WAIT_MS)
            wait_until_rendered(page)
            errors = [e.inner_text() for e in page.get_by_test_id("stException").all()]
            errors += [e.inner_text() for e in page.get_by_test_id("stAlertContentError").all()]
            pages.append({"path": path, "title": heading.inner_text(), "errors": errors,
                          "page_errors": list(page_errors)})
            page_errors.clear()
    return pages, outside


def main(settings_path: str) -> int:
    settings = json.loads(Path(settings_path).read_text())
    out = Path(settings["out"])
    server_log = Path(settings["server_log"])
    result: dict = {}
    port = _free_port()
    env = guarded_env(Path(settings["guard_log"]), RAGEVAL_RUNS_DIR=settings["runs_dir"],
                      RAGEVAL_SHIPPED_RUNS_DIR="", RAGEVAL_CACHE_DIR=settings["cache_dir"],
                      RAGEVAL_ANNOTATIONS=str(Path(settings["cache_dir"]) / "annotations.sqlite"))
    command = [*strace_prefix(Path(settings["strace_log"])), sys.executable, "-m", "ui.serve",
               "--server.port", str(port)]
    with server_log.open("w") as log_file:
        server = subprocess.Popen(command, cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=log_file,
                                  stderr=subprocess.STDOUT, start_new_session=True)
    try:
        url = f"http://127.0.0.1:{port}"
        _wait_until_healthy(url, server, server_log)
        result["listening"] = sorted(listening_addresses(port))
        result["pages"], result["outside_requests"] = visit_pages(url, settings["run"])
    except Exception:  # reported to the test, which fails with it
        result["error"] = traceback.format_exc()
    finally:
        _stop(server)
    result["server_urls"] = [line.strip() for line in server_log.read_text().splitlines() if "URL:" in line]
    out.write_text(json.dumps(result, indent=1))
    return 0 if "error" not in result else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
