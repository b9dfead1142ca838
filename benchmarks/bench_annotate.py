"""Seconds a label costs on the Annotate page, in Chromium, on the shipped NQ run: from the input to the page idle
again (no stale element), the median over the labels; optionally against another checkout (the page before a change).

    python benchmarks/bench_annotate.py                                   # this checkout: 1 (key press) a label
    git archive 346da14 | tar -x -C /tmp/annotate-before                  # the page before the sample queue
    python benchmarks/bench_annotate.py --before /tmp/annotate-before     # and that one: a click per passage

This checkout draws the default sample (50 passages) and presses 1 for each label; a checkout without the queue
(``--before``) lists a whole query and is clicked "✓ Useful" passage after passage. The two alternate, each on a
fresh ``streamlit run`` with an empty runs folder (the shipped runs read from this checkout's ``data/runs``), for
``--rounds`` rounds of ``--labels`` labels. Needs Debian's Chromium and playwright (tests/browser_support.py).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
RUN = "nq_open-bm25-gemma3_270m"
IDLE = "() => !document.querySelector('[data-stale=true]')"
WAIT_MS = 90_000


def start_server(checkout: Path) -> tuple[subprocess.Popen, str]:
    from tests.browser_support import _free_port

    port = _free_port()
    env = {**os.environ, "RAGEVAL_RUNS_DIR": tempfile.mkdtemp(), "RAGEVAL_SHIPPED_RUNS_DIR": str(ROOT / "data/runs"),
           "PYTHONPATH": str(checkout)}
    server = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
                               "--server.address", "127.0.0.1", "--server.port", str(port),
                               "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
                              cwd=checkout, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2):
                return server, url
        except OSError:
            time.sleep(0.2)  # a readiness probe's polling interval
    server.kill()
    raise SystemExit(f"streamlit in {checkout} did not start")


def label_times(checkout: Path, labels: int, queue: bool) -> list[float]:
    from tests.browser_support import launched_chromium_page

    server, url = start_server(checkout)
    times = []
    try:
        with launched_chromium_page(height=1400) as (page, _errors):
            page.goto(f"{url}/Annotate?annotator=M&run={RUN}")
            if queue:
                page.get_by_role("button", name="Start: draw the sample").click(timeout=WAIT_MS)
                page.get_by_text("0 of 50 sampled passages done by M").wait_for(timeout=WAIT_MS)
                page.get_by_role("heading", name="Annotate", exact=True).click()
                page.wait_for_function("() => typeof window.__ragevalAnnotateKeys === 'function'",
                                       timeout=WAIT_MS)  # the hotkey script is listening
            else:
                page.get_by_text("retrieved passages of this run labelled by M").wait_for(timeout=WAIT_MS)
            page.wait_for_function(IDLE, timeout=WAIT_MS)
            for done in range(1, labels + 1):
                started = time.perf_counter()
                if queue:
                    page.keyboard.press("1")
                    page.get_by_text(f"{done} of 50 sampled passages done by M").wait_for(timeout=WAIT_MS)
                else:
                    page.get_by_role("button", name="✓ Useful").nth(done - 1).click()
                    page.get_by_text(f"{done} of ").first.wait_for(timeout=WAIT_MS)
                page.wait_for_function(IDLE, timeout=WAIT_MS)
                times.append(time.perf_counter() - started)
    finally:
        server.terminate()
        server.wait()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", type=Path, help="another checkout whose Annotate page lists a query to click")
    parser.add_argument("--labels", type=int, default=10, help="labels per round (at most 10 with --before)")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    checkouts = ([("before", args.before, False)] if args.before else []) + [("this checkout", ROOT, True)]
    results: dict[str, list[float]] = {name: [] for name, _, _ in checkouts}
    for _ in range(args.rounds):
        for name, checkout, queue in checkouts:
            results[name] += label_times(checkout, args.labels, queue)
    for name, times in results.items():
        print(f"{name}: median {statistics.median(times):.2f} s a label, max {max(times):.2f} s, n = {len(times)}")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
