"""N signed-in people labelling at once on a served team dashboard while a re-score job writes the run: how many
labels a second it takes, how long from the key press to the label being in annotations.sqlite, and whether any is
lost or any page or the server says "database is locked".

    python benchmarks/bench_team_concurrency.py                       # 20 people, 5 labels each, at most 120 s
    python benchmarks/bench_team_concurrency.py --sessions 50 --labels-per-session 5 --seconds 240

What runs (tests/team_support.py, as tests/browser/test_team_mode.py runs it): a real OpenID Connect provider
(``oidc-provider-mock``) in a thread, ``rageval serve --team team.toml`` as a subprocess on a temporary runs folder
holding a copy of the shipped NQ run (300 questions x 10 passages), and one headless Chromium with N browser contexts,
each signed in through the provider's form as a distinct annotator (``annNN@annotators.example.org``). Each person has
two tabs: the Annotate page (the run's shared sample of 50 passages) and the Query inspector. Then
``rageval rescore start RUN --detach`` starts a re-score job with a tiny random Gemma built from a config
(tests/model_fixtures.py): its worker commits labels into the run file and progress into the jobs database every
batch while the people work. In the measured phase every person, as soon as their Annotate tab shows their previous
label counted and is idle, presses 1 or 0 (the labelling block's keys; alternating), and presses j (Next) on their
inspector tab as soon as it shows the previous question settled.

"Saved" is the moment the label's row is in annotations.sqlite, seen by a thread of this process polling the file
every 20 ms (read-only); click-to-saved is that moment minus the key press. A label is lost when its row never
arrives (30 s grace after the phase); a page time-out is a tab that did not come back to idle within ``--wait-s``.
"database is locked" is searched in every tab's text at the end and in the server's log. The server's CPU (percent
of one core) and resident memory are those of ``rageval serve`` and its children (the Streamlit server), sampled
every second. Results print and go to ``test-output/team_concurrency_N<n>.md``.
Needs Debian's Chromium and playwright (tests/browser_support.py).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
RUN = "nq_open-bm25-gemma3_270m"
SAMPLE_SIZE = 50  # rageval.annotations.DEFAULT_SAMPLE_SIZE: the Annotate page's default sample
LOCKED = "database is locked"
#: JavaScript: whether the tab is idle (no element of a previous script run still shown as stale) and its text.
IDLE_AND_TEXT = "() => [!document.querySelector('[data-stale=true]'), document.body.innerText]"


@dataclass
class Person:
    sub: str
    email: str
    annotate: object = None  # Playwright pages
    inspector: object = None
    pressed: list[float] = field(default_factory=list)  # perf_counter of each key press on Annotate
    saved: list[float] = field(default_factory=list)  # when each of this person's rows was first seen in the file
    steps: list[float] = field(default_factory=list)  # inspector: seconds from j to the next question settled
    step_started: float | None = None
    walked: int = 0
    timeouts: list[str] = field(default_factory=list)
    socket_closes: int = 0
    done: bool = False


class RowWatcher(threading.Thread):
    """Polls annotations.sqlite (read-only) every ``interval`` s and records when each new label row was first
    seen, per annotator; counts the polls SQLite refused with "database is locked"."""

    def __init__(self, path: Path, interval: float = 0.02):
        super().__init__(daemon=True)
        self.path, self.interval = path, interval
        self.seen: dict[str, list[float]] = {}
        self.last_id = 0
        self.locked_polls = 0
        self.readonly_polls = 0
        self.stop = threading.Event()

    def poll(self) -> None:
        if not self.path.exists():
            return
        try:
            connection = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=5)
            try:
                rows = connection.execute("SELECT id, annotator FROM labels WHERE id > ? ORDER BY id",
                                          (self.last_id,)).fetchall()
            finally:
                connection.close()
        except sqlite3.OperationalError as error:
            if LOCKED in str(error):
                self.locked_polls += 1
            elif "readonly" in str(error):  # a journal seen mid-commit, which a read-only reader may not roll back
                self.readonly_polls += 1
            elif "no such table" not in str(error):
                raise
            return
        now = time.perf_counter()
        for row_id, annotator in rows:
            self.seen.setdefault(annotator, []).append(now)
            self.last_id = row_id

    def run(self) -> None:
        while not self.stop.is_set():
            self.poll()
            time.sleep(self.interval)


class ProcessSampler(threading.Thread):
    """CPU (percent of one core), resident memory and threads of a process and its children, every second."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        import psutil

        self.root = psutil.Process(pid)
        self.cpu: list[float] = []
        self.rss_mb: list[float] = []
        self.threads: list[int] = []
        self.stop = threading.Event()

    def run(self) -> None:
        import psutil

        tracked: dict[int, psutil.Process] = {}
        while not self.stop.is_set():
            try:
                for process in [self.root, *self.root.children(recursive=True)]:
                    if process.pid not in tracked:
                        tracked[process.pid] = process
                        process.cpu_percent(None)  # the first call starts the interval
            except psutil.NoSuchProcess:
                return
            time.sleep(1.0)
            cpu = rss = threads = 0
            for pid, process in list(tracked.items()):
                try:
                    cpu += process.cpu_percent(None)
                    rss += process.memory_info().rss
                    threads += process.num_threads()
                except psutil.NoSuchProcess:
                    del tracked[pid]
            self.cpu.append(cpu)
            self.rss_mb.append(rss / 2**20)
            self.threads.append(threads)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def start_job(run_path: Path, model: Path, cache: Path) -> int:
    """``rageval rescore start RUN --detach`` on the server's jobs database; the job's id."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAGEVAL_CACHE_DIR": str(cache), "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-m", "rageval", "rescore", "start", str(run_path), "--model", str(model),
                           "--device", "cpu", "--batch-size", "8", "--max-new-tokens", "8", "--detach"],
                          cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    print(done.stdout.strip())
    return int(re.search(r"job (\d+)", done.stdout).group(1))


def job_state(cache: Path, job_id: int):
    from rageval.jobs.spec import JobStore

    with JobStore(cache / "jobs.sqlite") as store:
        return store.get(job_id)


def wait_for(page, predicate, timeout_s: float) -> bool:
    """Poll ``page`` (idle flag, text) until ``predicate(idle, text)`` or ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        idle, text = page.evaluate(IDLE_AND_TEXT)
        if predicate(idle, text):
            return True
        page.wait_for_timeout(100)  # the page's own event loop runs meanwhile
    return False


def progress(email: str, count: int) -> str:
    return f"{count} of {SAMPLE_SIZE} sampled passages done by {email}"


def open_tabs(people: list[Person], url: str, contexts: dict, wait_s: float) -> None:
    """Each person's Annotate tab (the first draws the sample) and inspector tab, ready for keys."""
    first = people[0]
    first.annotate = contexts[first.sub].new_page()
    first.annotate.goto(f"{url}/Annotate?run={RUN}")
    first.annotate.get_by_role("button", name="Start: draw the sample").click(timeout=wait_s * 1000)
    if not wait_for(first.annotate, lambda idle, text: idle and progress(first.email, 0) in text, wait_s):
        raise SystemExit(f"{first.email}: the sample was not drawn within {wait_s} s")
    for person in people:
        if person.annotate is None:
            person.annotate = contexts[person.sub].new_page()
            person.annotate.goto(f"{url}/Annotate?run={RUN}")
        person.inspector = contexts[person.sub].new_page()
        person.inspector.goto(f"{url}/Query_inspector?run={RUN}")
        for page in (person.annotate, person.inspector):
            page.on("websocket", lambda socket, p=person: socket.on(
                "close", lambda *_: setattr(p, "socket_closes", p.socket_closes + 1)))
    for person in people:
        ready = wait_for(person.annotate, lambda idle, text, p=person: idle and progress(p.email, 0) in text, wait_s)
        if not ready:
            raise SystemExit(f"{person.email}: the Annotate tab did not show its queue within {wait_s} s")
        person.annotate.get_by_role("heading", name="Annotate", exact=True).click()  # focus for the keys
        person.annotate.wait_for_function("() => typeof window.__ragevalAnnotateKeys === 'function'",
                                          timeout=wait_s * 1000)
        if not wait_for(person.inspector, lambda idle, text: idle and "Query 1 of" in text, wait_s):
            raise SystemExit(f"{person.email}: the inspector tab did not show its first question within {wait_s} s")
        person.inspector.get_by_role("heading", name="Query inspector", exact=True).click()


def labelling_phase(people: list[Person], watcher: RowWatcher, labels: int, seconds: float, wait_s: float,
                    rounds: list[float]) -> float:
    """Every person labels ``labels`` passages and walks the inspector meanwhile, until done or ``seconds``; the
    phase's length in seconds. ``rounds`` gets the seconds each round over all tabs took (this driver visits the
    tabs one by one: a tab that is ready waits up to a round before its next key press)."""
    started = time.perf_counter()
    last_change = {person.sub: started for person in people}
    while time.perf_counter() - started < seconds and not all(p.done for p in people):
        round_started = time.perf_counter()
        for person in people:
            if person.done:
                continue
            now = time.perf_counter()
            pressed = len(person.pressed)
            idle, text = person.annotate.evaluate(IDLE_AND_TEXT)
            if idle and progress(person.email, pressed) in text and len(watcher.seen.get(person.email, ())) >= pressed:
                if pressed == labels:
                    person.done = True
                else:
                    person.annotate.keyboard.press("1" if pressed % 2 == 0 else "0")
                    person.pressed.append(time.perf_counter())
                    last_change[person.sub] = now
            elif now - last_change[person.sub] > wait_s:
                person.timeouts.append(f"Annotate: not idle at {pressed} labels after {wait_s:.0f} s")
                person.done = True
                continue
            idle, text = person.inspector.evaluate(IDLE_AND_TEXT)
            if idle and f"Query {person.walked + 1} of" in text:
                if person.step_started is not None:
                    person.steps.append(now - person.step_started)
                person.inspector.keyboard.press("j")
                person.step_started = time.perf_counter()
                person.walked += 1
            elif person.step_started is not None and now - person.step_started > wait_s:
                person.timeouts.append(f"inspector: question {person.walked + 1} not shown after {wait_s:.0f} s")
                person.step_started = None
        people[0].annotate.wait_for_timeout(20)  # let Playwright deliver the pages' events
        rounds.append(time.perf_counter() - round_started)
    return time.perf_counter() - started


def main(argv: list[str] | None = None, browser=None) -> dict:
    """Run the benchmark in ``browser`` (a Playwright Browser; default: a Chromium launched for it); the figures
    (also printed and written as markdown)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=20, help="signed-in people (browser contexts)")
    parser.add_argument("--labels-per-session", type=int, default=5, help=f"at most {SAMPLE_SIZE}")
    parser.add_argument("--seconds", type=float, default=120, help="the labelling phase ends after this at most")
    parser.add_argument("--sign-in-batch", type=int, default=0,
                        help="sign in this many people at a time (default: everyone at once)")
    parser.add_argument("--wait-s", type=float, default=60, help="a tab not idle again after this is a time-out")
    args = parser.parse_args(argv)
    if not 1 <= args.labels_per_session <= SAMPLE_SIZE:
        parser.error(f"--labels-per-session: 1 to {SAMPLE_SIZE}")

    from playwright.sync_api import sync_playwright

    from rageval.annotations import ANNOTATIONS_FILE
    from tests.browser_support import CHROMIUM, CHROMIUM_ARGS, SHOTS
    from tests.model_fixtures import build_tiny_gemma
    from tests.team_support import ANNOTATOR_DOMAIN, sign_in_many, team_server

    load_before = os.getloadavg()
    root = Path(tempfile.mkdtemp(prefix="bench-team-"))
    runs, cache = root / "runs", root / "cache"
    runs.mkdir()
    run_path = Path(shutil.copy(ROOT / "data/runs" / f"{RUN}.sqlite", runs / f"{RUN}.sqlite"))
    model = build_tiny_gemma(root / "tiny-gemma3")
    people = [Person(f"ann{i:02d}", f"ann{i:02d}@{ANNOTATOR_DOMAIN}") for i in range(1, args.sessions + 1)]
    claims = {p.sub: ("annotator", {"email": p.email, "email_verified": True}) for p in people}
    log_name = f"streamlit_server_team_bench_N{args.sessions}.log"
    watcher = RowWatcher(runs / ANNOTATIONS_FILE)
    report: dict[str, object] = {}
    try:
        with team_server(root, runs, cache, claims, log_name) as server, contextlib.ExitStack() as stack:
            sampler = ProcessSampler(server.process.pid)
            if browser is None:
                playwright = stack.enter_context(sync_playwright())
                browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
                stack.callback(browser.close)
            contexts: dict = {}
            try:
                began = time.perf_counter()
                subs = [p.sub for p in people]
                batch = args.sign_in_batch or len(subs)
                for first in range(0, len(subs), batch):
                    contexts.update(sign_in_many(browser, server.url, subs[first:first + batch], width=1200,
                                                 height=1400, wait_ms=int(args.wait_s * 1000)))
                report["sign_in_s"] = time.perf_counter() - began
                began = time.perf_counter()
                open_tabs(people, server.url, contexts, args.wait_s)
                report["tabs_s"] = time.perf_counter() - began
                job_id = start_job(run_path, model, cache)
                deadline = time.monotonic() + 120
                while (job := job_state(cache, job_id)).done == 0 and job.status in ("queued", "running"):
                    if time.monotonic() > deadline:
                        raise SystemExit(f"job {job_id} committed nothing in 120 s: {job.status} {job.error}")
                    time.sleep(0.5)  # waiting for the worker's first commit: the writer is then at work
                done_at_start = job.done
                watcher.start()
                sampler.start()
                rounds: list[float] = []
                phase_s = labelling_phase(people, watcher, args.labels_per_session, args.seconds, args.wait_s,
                                          rounds)
                grace = time.monotonic() + 30
                while time.monotonic() < grace and any(
                        len(watcher.seen.get(p.email, ())) < len(p.pressed) for p in people):
                    time.sleep(0.2)  # late rows: still saved, not lost
                job = job_state(cache, job_id)
                locked_pages = []
                for person in people:
                    for name, page in (("Annotate", person.annotate), ("inspector", person.inspector)):
                        if LOCKED in page.evaluate("() => document.body.innerText"):
                            locked_pages.append(f"{person.email} {name}")
                report.update(phase_s=phase_s, rounds=rounds, job=job, job_done_in_phase=job.done - done_at_start,
                              locked_pages=locked_pages)
            finally:
                sampler.stop.set()
                watcher.stop.set()
                for context in contexts.values():
                    context.close()
        log_text = (SHOTS / log_name).read_text(errors="replace")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return write_report(args, people, watcher, sampler, report, log_text, load_before, SHOTS)


def write_report(args, people, watcher, sampler, report, log_text, load_before, out_dir: Path) -> dict:
    latencies, lost = [], 0
    for person in people:
        seen = watcher.seen.get(person.email, [])
        for index, pressed in enumerate(person.pressed):
            if index < len(seen):
                latencies.append(seen[index] - pressed)
            else:
                lost += 1
    saved = sum(min(len(watcher.seen.get(p.email, [])), len(p.pressed)) for p in people)
    steps = [s for p in people for s in p.steps]
    timeouts = [f"{p.email}: {t}" for p in people for t in p.timeouts]
    log_locked = log_text.count(LOCKED)
    tracebacks = log_text.count("Traceback")
    job = report["job"]
    load_after = os.getloadavg()
    batch = f" --sign-in-batch {args.sign_in_batch}" if args.sign_in_batch else ""
    lines = [
        f"# Team mode under {args.sessions} signed-in annotators (benchmarks/bench_team_concurrency.py)",
        "",
        f"`python benchmarks/bench_team_concurrency.py --sessions {args.sessions} --labels-per-session "
        f"{args.labels_per_session} --seconds {args.seconds:g} --wait-s {args.wait_s:g}{batch}` "
        f"on {os.cpu_count()} CPUs, load average "
        f"{load_before[0]:.1f} before / {load_after[0]:.1f} after (1 min). Run: a copy of the shipped {RUN}; each "
        f"person an Annotate tab and a Query inspector tab ({2 * args.sessions} Streamlit sessions); a re-score job "
        f"(tiny random Gemma, batch 8) writing the run and the jobs database throughout "
        f"({report['job_done_in_phase']} passages labelled by it in the phase; status at the end: {job.status}).",
        "",
        "| measure | value |",
        "|---|---|",
        f"| all {args.sessions} signed in through the provider ({args.sign_in_batch or args.sessions} side by side) "
        f"| {report['sign_in_s']:.0f} s |",
        f"| opening the {2 * args.sessions} tabs until every one is ready | {report['tabs_s']:.0f} s |",
        f"| labelling phase | {report['phase_s']:.0f} s |",
        f"| labels pressed / saved | {sum(len(p.pressed) for p in people)} / {saved} |",
        f"| labels per second (saved / phase) | {saved / report['phase_s']:.2f} |",
        f"| key press to row in annotations.sqlite, p50 / p95 / max | {percentile(latencies, 50):.2f} s / "
        f"{percentile(latencies, 95):.2f} s / {max(latencies, default=float('nan')):.2f} s |",
        f"| labels lost (pressed, never in the file) | {lost} |",
        f"| inspector steps (j to next question settled, as the driver sees it), n, p50 / p95 | {len(steps)}, "
        f"{percentile(steps, 50):.2f} s / {percentile(steps, 95):.2f} s |",
        f"| the driver's round over all {2 * args.sessions} tabs, p50 / max (bounds the two lines above) | "
        f"{percentile(report['rounds'], 50):.2f} s / {max(report['rounds'], default=float('nan')):.2f} s |",
        f"| tab time-outs (not idle again within {args.wait_s:.0f} s) | {len(timeouts)} |",
        f"| websocket closes during the run | {sum(p.socket_closes for p in people)} |",
        f"| \"{LOCKED}\": tabs / server log / this process's polls | {len(report['locked_pages'])} / {log_locked} / "
        f"{watcher.locked_polls} |",
        f"| this process's read-only polls refused for a journal mid-commit (retried) | {watcher.readonly_polls} |",
        f"| tracebacks in the server log | {tracebacks} |",
        f"| server CPU (rageval serve + Streamlit, % of one core), mean / max | "
        f"{statistics.fmean(sampler.cpu) if sampler.cpu else float('nan'):.0f} / {max(sampler.cpu, default=0):.0f} |",
        f"| server resident memory, max | {max(sampler.rss_mb, default=0):.0f} MiB |",
        f"| server threads (Streamlit's script runs among them), median / max | "
        f"{statistics.median(sampler.threads) if sampler.threads else 0:.0f} / {max(sampler.threads, default=0)} |",
        "",
    ]
    problems = sorted({line.strip()[:200] for line in log_text.splitlines()
                       if re.search(r"Error|Exception|WARNING|ERROR|locked", line)})
    if problems:
        lines += ["Server log lines naming an error or warning (distinct, first 20):", "", "```",
                  *problems[:20], "```", ""]
    if timeouts:
        lines += ["Time-outs:", "", *[f"- {t}" for t in timeouts[:20]], ""]
    if report["locked_pages"]:
        lines += ["Tabs showing the lock error:", "", *[f"- {t}" for t in report["locked_pages"][:20]], ""]
    text = "\n".join(lines)
    print(text)
    out_dir.mkdir(exist_ok=True)
    (out_dir / f"team_concurrency_N{args.sessions}.md").write_text(text)
    return {"pressed": sum(len(p.pressed) for p in people), "saved": saved, "lost": lost, "latencies": latencies,
            "locked": len(report["locked_pages"]) + log_locked + watcher.locked_polls, "timeouts": timeouts,
            "inspector_steps": len(steps)}


if __name__ == "__main__":
    main()
