"""How fast each dashboard page is usable in a real browser, next to an empty Streamlit page: every page of
``app.py`` opened in headless Chromium (Playwright, Debian's /usr/bin/chromium) on the shipped NQ run and on
generated runs of 10,000 and 100,000 queries, each timed cold (the first visit after ``streamlit run`` started).

    python benchmarks/bench_dashboard.py                                   # shipped, 10k and 100k queries
    python benchmarks/bench_dashboard.py --quick                           # shipped and 2,000 queries (~4 min)
    python benchmarks/bench_dashboard.py --sizes shipped,10000 --pages Correlations,Compare_runs
    python benchmarks/bench_dashboard.py --sizes shipped --repeat 3                  # medians of 3 rounds
    python benchmarks/bench_dashboard.py --sizes shipped --repeat 4 --before ../old   # against an old checkout
    python benchmarks/bench_dashboard.py --sizes shipped --cpu     # + CPU seconds of the server and the browser

**Time until usable**: from the browser's navigation start (``performance.now()`` of the new document) until the
page's title heading and its main content (a page-specific locator: its first table, chart, metric or notice) are
visible and Streamlit's status widget (``stStatusWidget``, "Running...") is gone, i.e. the page script has
finished. **The floor** is the same measure on a one-line page (``st.title``) served by its own ``streamlit run``
in the same browser: what any Streamlit page costs (the server's first session, the frontend bundle, the
websocket). Every page visit gets a fresh server (cold: empty caches, page modules not yet imported) and a fresh
browser context (no HTTP cache); the floor too. The goal (issue 15): every page within 2x the floor on the shipped
run and within 3x at 100,000 queries (between the two sizes: 3x); changing k on Correlations within 2x the floor.
The floor is measured again just before each page (the load of a shared machine changes by the minute).
``--cpu`` adds what each visit cost in CPU seconds, the server's and the browser's (every Chromium process), next
to the floor's: on a 2-core machine a cold visit of a chart page keeps both cores busy, so where the CPU goes
says which side a change must make cheaper.

Runs: ``shipped`` is data/runs/nq_open-bm25-gemma3_270m.sqlite (300 queries x 10 passages) with the shipped dense
run as Compare's partner; a number N is a generated run of N queries x ``--docs`` passages with what
``rageval evaluate`` stores (three label methods on every passage, their per-query measures at k = 1, 5, docs,
single-passage outputs, E2E answers at those k, the correlation table with bootstrap intervals) and a partner run
over the same queries (other E2E scores and measures). Generated runs are kept in ``--cache`` (built once, not
timed). Each runs folder holds only these two runs (``RAGEVAL_RUNS_DIR``; no shipped runs listed), and each run
is opened once before anything is timed, as ``rageval info`` or any earlier visit would: the integrity checks of
an unchanged file are remembered (``checked_files.json`` in rageval's cache folder), so the cold visits below do
not include the one-time check of a file never opened before (about 20 s for the 100,000-query run, 880 MB),
nor the one-time overview of it remembered the same way (``rageval.store.files.remembered_summary``: measure
moments, measure names, E2E ks, ``run_summary``; about 3 s at 100,000 queries), which any earlier visit to the run
computed,
nor LLM-retEval's Tables 1-2 per judge and Home's failure counts, remembered the same way
(``rageval.reteval.tables.read_reteval_table``, ``read_failure_counts``; about 5 s and 0.5 s at 100,000 queries,
once per version of the file), nor the Failure cases page's lean table of each judge's cases, remembered as an
Arrow file (``RunReader.failure_case_table(details=False)`` through ``rageval.store.files.remembered_frame``; 0.4 s
a run at 100,000 queries), nor Home's per-query gold retrieval at each k, remembered the same way
(``aggregates.read_gold_retrieval``; 0.4-0.9 s at 100,000 queries), nor the Correlations page's spread of each
measure over the scored queries at each k (``aggregates.read_scored_spread``, read when a coefficient is undefined;
6-10 s a k at 100,000 queries on a busy 2-core machine).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run from a checkout without installing

SHIPPED = REPO / "data" / "runs" / "nq_open-bm25-gemma3_270m.sqlite"
SHIPPED_PARTNER = REPO / "data" / "runs" / "demo" / "nq_open-dense-gemma3_270m.sqlite"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SERVER_START_S = 90
PAGE_TIMEOUT_MS = 600_000
QUIET_MS = 400  # the status widget must stay gone this long for the script to count as finished (not timed)
WORDS = ("river", "film", "season", "player", "album", "court", "island", "war", "city", "song", "king", "league",
         "award", "novel", "station", "church", "bridge", "empire", "series", "election")
#: The modification time the runs get in their folder (fixed, so that a generated run keeps the time its
#: integrity check was remembered under between invocations: rageval.store.files.remembered_good).
RUN_TIME_S = 1_700_000_000
FLOOR_SCRIPT = "import streamlit as st\n\nst.title('Empty page')\n"


@dataclass(frozen=True)
class Page:
    name: str
    url_path: str
    main: str  # CSS of the page's main content (any of), besides its title heading


CONTENT = ('[data-testid="stDataFrame"], [data-testid="stPlotlyChart"], [data-testid="stVegaLiteChart"], '
           '[data-testid="stMetric"]')
NOTICE = '[data-testid="stAlert"], [data-testid="stFileUploader"], [data-testid="stForm"]'
#: A chart once drawn: a Vega-Lite chart's marks (the element itself shows before the chart code has loaded;
#: Streamlit draws svg, a canvas past 2,000 rows), or a plotly chart (as pages drew them before Vega-Lite, so that
#: ``--before`` can time an older checkout).
CHART = '[data-testid="stVegaLiteChart"] .marks, [data-testid="stPlotlyChart"]'  # .marks: Vega's svg or canvas
PAGES = (
    Page("Home", "", CONTENT),
    Page("Query inspector", "Query_inspector", '[data-testid="stText"], [data-testid="stExpander"], ' + CONTENT),
    Page("LLM-retEval", "LLM_retEval", CONTENT + ", " + NOTICE),
    Page("Failure cases", "Failure_cases", CONTENT + ", " + NOTICE),
    Page("Correlations", "Correlations", CHART),
    Page("Compare runs", "Compare_runs", CHART),
    Page("Annotate", "Annotate", '[data-testid="stButton"], [data-testid="stRadio"], ' + CONTENT + ", " + NOTICE),
    Page("Citations", "Citations", CONTENT + ", " + NOTICE),
    Page("Agents", "Agents_IUM", CONTENT + ", " + NOTICE),
    Page("Re-score", "Re_score", '[data-testid="stSelectbox"], ' + NOTICE),
    Page("Upload", "Upload", '[data-testid="stFileUploader"], ' + NOTICE),
    Page("Queues", "Queues", '[data-testid="stExpander"], ' + NOTICE),
)


# --- the runs ------------------------------------------------------------------------------------------------

def synthetic_run(num_queries: int, docs: int, seed: int = 0):
    """A run of ``num_queries`` x ``docs`` with labels, measures, single-passage and E2E outputs (random text), the
    correlation table ``rageval evaluate`` stores, and LLM-retEval's semi-gold answers, exact-match verdicts and
    failure cases A-F (made by the engine's own judge and classifier from the synthetic answers), so that the
    LLM-retEval and Failure cases pages show a big run's cases."""
    from rageval.erag.measures import compute_measure_values
    from rageval.pipeline.evaluate import compute_correlations
    from rageval.reteval import find_failure_cases, judge_answers, make_judge
    from rageval.store import DocOutput, E2EOutput, Label, Run, SemiGoldOutput
    from rageval.types import Passage, Query, Ranking, ScoredPassage

    rng = random.Random(seed)
    pool = [Passage(f"p{i}", f"Title {i}", " ".join(rng.choices(WORDS, k=100)), "synthetic")
            for i in range(max(num_queries * docs // 4, docs))]
    ks = sorted({1, min(5, docs), docs})
    queries, rankings, labels, outputs, e2e = [], {}, [], [], []
    semi_gold: dict[str, list[str]] = {}
    retrieved: dict[str, list[Passage]] = {}
    for q in range(num_queries):
        qid = f"q{q}"
        answer = rng.choice(WORDS)
        ranked = rng.sample(pool, docs + 1)
        # The gold passage: the top one for 60% of the queries, else one the retriever missed (recall failures).
        gold_passage = ranked.pop() if rng.random() < 0.4 else ranked[0]
        queries.append(Query(qid, f"which {' '.join(rng.choices(WORDS, k=6))}?", (answer,),
                             (gold_passage.passage_id,), "synthetic"))
        rankings[qid] = Ranking(qid, tuple(ScoredPassage(p.passage_id, float(docs - r)) for r, p in enumerate(ranked)))
        hits = 0
        for p in ranked:
            contains = answer in p.text.split()[:30]
            useful = contains and rng.random() < 0.5
            hits += useful
            labels += [Label("contains_answer", qid, p.passage_id, float(contains)),
                       Label("erag:em", qid, p.passage_id, float(useful)),
                       Label("gold", qid, p.passage_id, float(p is gold_passage))]
            outputs.append(DocOutput(qid, p.passage_id, answer if contains else rng.choice(WORDS)))
        for k in ks:
            right = rng.random() < 0.2 + 0.2 * min(hits, 3)
            e2e.append(E2EOutput(qid, k, answer if right else rng.choice(WORDS), float(right)))
        semi_gold[qid] = [answer if rng.random() < 0.7 else rng.choice(WORDS)]
        retrieved[qid] = ranked
    measures = compute_measure_values(labels, rankings, ks)
    answers_at_k = {k: {o.query_id: o.output for o in e2e if o.k == k} for k in ks}
    verdicts, _unparsed = judge_answers(make_judge("em"), queries, answers_at_k, semi_gold)  # em always parses
    by_id = {p.passage_id: p for p in pool}
    gold = {q.query_id: [by_id[p] for p in q.gold_passage_ids] for q in queries}
    cases = find_failure_cases(queries, retrieved, gold, answers_at_k, semi_gold, verdicts)
    settings = {"dataset": "synthetic", "retriever": "random", "model_id": "none (synthetic)", "k": docs,
                "label_metric": "em", "e2e_metric": "em", "num_queries": num_queries, "cutoffs": ks,
                "notes": "benchmarks/bench_dashboard.py"}
    settings["reteval"] = {"judges": ["em"], "semi_gold": {"samples": 1, "temperature": 0.0}}
    return Run(settings, queries, pool, list(rankings.values()), outputs, labels, e2e, measures,
               semi_gold_outputs=[SemiGoldOutput(q, 0, a) for q, answers in semi_gold.items() for a in answers],
               verdicts=verdicts, failure_cases=cases, correlations=compute_correlations(measures, e2e))


def make_partner(run_file: Path, partner: Path) -> Path:
    """A second run over the same queries (Compare's run B): a copy with other E2E scores and measure values, and
    no stored correlations (they would no longer match)."""
    shutil.copy(run_file, partner)
    with sqlite3.connect(partner) as connection:
        connection.execute("UPDATE e2e_outputs SET score = CAST(abs(random()) % 10 < 3 AS REAL)")
        connection.execute("UPDATE measure_values SET value = value * (abs(random()) % 4 > 0)")
        connection.execute("DELETE FROM correlations")
        settings = json.loads(connection.execute("SELECT value FROM meta WHERE key = 'settings'").fetchone()[0])
        settings["retriever"] = "random-b"
        connection.execute("UPDATE meta SET value = ? WHERE key = 'settings'", (json.dumps(settings),))
    connection.close()
    return partner


def generated_runs(num_queries: int, docs: int, cache: Path) -> tuple[Path, Path]:
    """The generated run of ``num_queries`` x ``docs`` and its partner, built into ``cache`` unless there."""
    from rageval.store import write_run

    cache.mkdir(parents=True, exist_ok=True)
    run_file = cache / f"synthetic-v2-{num_queries}x{docs}.sqlite"  # v2: with LLM-retEval cases
    partner = cache / f"synthetic-v2-{num_queries}x{docs}-b.sqlite"
    if not run_file.exists():
        started = time.perf_counter()
        write_run(synthetic_run(num_queries, docs), run_file)
        print(f"  built {run_file.name} ({run_file.stat().st_size / 1e6:.0f} MB) in "
              f"{time.perf_counter() - started:.0f} s (not timed)", flush=True)
    if not partner.exists():
        make_partner(run_file, partner)
    return run_file, partner


def runs_folder(size: str, docs: int, cache: Path, work: Path) -> Path:
    """A folder holding the size's run (newest, so every page opens on it) and its partner."""
    folder = work / f"runs-{size}"
    folder.mkdir()
    main, partner = (SHIPPED, SHIPPED_PARTNER) if size == "shipped" else generated_runs(int(size), docs, cache)
    for source, mtime in ((partner, RUN_TIME_S), (main, RUN_TIME_S + 100)):
        target = folder / source.name
        try:
            if size == "shipped":
                raise OSError("copied: the shipped files keep their times")
            os.link(source, target)  # the generated runs are only read: a link spares copying a gigabyte
        except OSError:
            shutil.copy(source, target)
        os.utime(target, (mtime, mtime))  # the main run is the newest, so every page opens on it
    from rageval.pipeline.summary import run_summary
    from rageval.reteval.tables import read_reteval_table
    from rageval.store import RunReader, aggregates

    for run in folder.glob("*.sqlite"):  # opened once, as by `rageval info` or any earlier visit (not timed)
        with RunReader(run) as reader:  # and its overview summed, as any earlier visit did (remembered)
            reader.measure_moments()
            reader.measure_names()
            for k in reader.e2e_ks():
                reader.every_query_scored(k)
            for judge in reader.judges():  # LLM-retEval's Tables 1-2, remembered per file version
                read_reteval_table(reader, judge)
                reader.failure_case_table(judge, details=False)  # the Failure cases page's lean table, the same
            aggregates.read_failure_counts(reader)  # Home's failure counts, remembered the same way
            for k in reader.e2e_ks():  # Home's 2 x 2 (one row a query), remembered as an Arrow file
                aggregates.read_gold_retrieval(reader, k)
                aggregates.read_scored_spread(reader, k)  # Correlations' constant side, remembered the same way
        run_summary(run)
    return folder


# --- the server and the browser --------------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


#: The server process of each URL :func:`streamlit_server` serves (for ``--cpu``).
SERVER_PIDS: dict[str, int] = {}


@contextmanager
def streamlit_server(script: Path, runs: Path, log: Path, checkout: Path = REPO) -> Iterator[str]:
    """``streamlit run script`` on ``runs`` (no shipped runs), on a free port, importing rageval and ui from
    ``checkout``; yields its URL once healthy. The dashboard (``app.py``) is started as ``make dashboard`` starts
    it: ``python -m ui.serve`` (its modules imported before the server answers) where the checkout has it."""
    port = free_port()
    env = {**os.environ, "RAGEVAL_RUNS_DIR": str(runs), "RAGEVAL_SHIPPED_RUNS_DIR": "",
           "PYTHONPATH": str(checkout), "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    options = ["--server.headless", "true", "--server.address", "127.0.0.1", "--server.port", str(port),
               "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"]
    if script.name == "app.py" and (checkout / "ui" / "serve.py").exists():
        command = [sys.executable, "-m", "ui.serve", *options]  # as `make dashboard` starts it: pages preloaded
    else:
        command = [sys.executable, "-m", "streamlit", "run", str(script), *options]
    with log.open("w") as log_file:
        server = subprocess.Popen(command, cwd=script.parent, env=env, stdout=log_file, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    SERVER_PIDS[url] = server.pid
    try:
        deadline = time.monotonic() + SERVER_START_S
        while True:
            if server.poll() is not None:
                raise RuntimeError(f"streamlit exited with {server.returncode}:\n{log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                    if response.read().strip() == b"ok":
                        break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"streamlit did not answer in {SERVER_START_S} s") from None
                time.sleep(0.1)  # readiness polling, before anything is timed
        yield url
    finally:
        SERVER_PIDS.pop(url, None)
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()


def finished_ms(page) -> float:
    """``performance.now()`` when Streamlit's status widget went away for good: it must stay gone
    :data:`QUIET_MS` (a wait that is not counted), else the next time it goes is taken."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    status = page.locator('[data-testid="stStatusWidget"]')
    while True:
        status.wait_for(state="detached", timeout=PAGE_TIMEOUT_MS)
        done_ms = page.evaluate("performance.now()")
        try:
            status.wait_for(state="attached", timeout=QUIET_MS)
        except PlaywrightTimeout:
            return done_ms


def wait_usable(page, main: str) -> float:
    """Seconds from the document's navigation start until its title heading and ``main`` are visible and the page
    script has finished (the status widget gone, and still gone :data:`QUIET_MS` later; that wait is not
    counted). Raises when the page shows an exception."""
    page.locator("h1").first.wait_for(state="visible", timeout=PAGE_TIMEOUT_MS)
    page.locator(main).first.wait_for(state="visible", timeout=PAGE_TIMEOUT_MS)
    done_ms = finished_ms(page)
    if page.locator('[data-testid="stException"]').count():
        raise RuntimeError(page.locator('[data-testid="stException"]').first.inner_text()[:1000])
    return done_ms / 1000


def visit(browser, url: str, main: str) -> tuple[float, object, object]:
    """A cold visit in a fresh browser context: (seconds until usable, context, page)."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.goto(url, wait_until="commit", timeout=PAGE_TIMEOUT_MS)
    return wait_usable(page, main), context, page


def change_k(page) -> float:
    """Seconds from choosing another k on the Correlations page until it is usable again."""
    box = page.get_by_test_id("stSelectbox").filter(has_text="k (passages given")
    combobox = box.get_by_role("combobox")
    current = combobox.input_value().strip()
    combobox.click()
    options = page.get_by_role("option")
    options.first.wait_for(state="visible")
    names = [name.strip() for name in options.all_inner_texts()]
    target = next(name for name in names if name != current)
    started_ms = page.evaluate("performance.now()")
    page.get_by_role("option", name=target, exact=True).click()
    page.get_by_text(f"Every label method and measure at k={target}").first.wait_for(
        state="visible", timeout=PAGE_TIMEOUT_MS)
    return (finished_ms(page) - started_ms) / 1000


# --- CPU seconds of a visit (--cpu; Linux /proc) -------------------------------------------------------------

def _process_cpu(pid: int) -> tuple[int, float] | None:
    """(parent pid, user + system CPU seconds) of a process from /proc; None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_snapshot(server_url: str) -> dict[str, dict[int, float]]:
    """CPU seconds so far of the server behind ``server_url`` and of each Chromium process this benchmark
    started (every process below this one other than a Streamlit server)."""
    table = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (found := _process_cpu(int(entry.name))) is not None:
            table[int(entry.name)] = found
    below, frontier = set(), {os.getpid()}
    while frontier:
        frontier = {pid for pid, (parent, _) in table.items() if parent in frontier} - below
        below |= frontier
    servers = set(SERVER_PIDS.values())
    server = SERVER_PIDS[server_url]
    return {"server": {server: table[server][1]} if server in table else {},
            "browser": {pid: table[pid][1] for pid in below if pid not in servers
                        and "chrom" in _process_name(pid)}}


def _process_name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def cpu_snapshot_if(wanted: bool, server_url: str) -> dict[str, dict[int, float]]:
    """:func:`cpu_snapshot` with ``--cpu``, else nothing (no /proc scan: other systems have none)."""
    return cpu_snapshot(server_url) if wanted else {}


def cpu_used(before: dict[str, dict[int, float]], after: dict[str, dict[int, float]]) -> dict[str, float]:
    """CPU seconds each side used between two :func:`cpu_snapshot` s (a process started in between counts from
    0; one that ended in between is not seen after, so visits are measured before their context closes). The
    second snapshot is taken once the page is usable and the status widget stayed gone :data:`QUIET_MS`, so the
    seconds include that wait."""
    return {side: sum(seconds - before[side].get(pid, 0.0) for pid, seconds in after[side].items())
            for side in after}


# --- the benchmark ----------------------------------------------------------------------------------------------

def goal(size: str) -> float:
    return 2.0 if size == "shipped" else 3.0


def floor_seconds(browser, runs: Path, work: Path, log: Path, cpu: bool = False) -> tuple[float, dict[str, float]]:
    """The empty page's time until usable, cold (its own fresh server, a fresh browser context), and with ``cpu``
    the CPU seconds the server and the browser used meanwhile (:func:`cpu_used`; else none)."""
    floor_script = work / "floor_app.py"
    floor_script.write_text(FLOOR_SCRIPT, encoding="utf-8")
    with streamlit_server(floor_script, runs, log) as url:
        start = cpu_snapshot_if(cpu, url)
        floor, context, _ = visit(browser, url, "h1")
        used = cpu_used(start, cpu_snapshot_if(cpu, url))
        context.close()
    return floor, used


def measure_size(browser, size: str, pages: list[Page], runs: Path, work: Path, log: Path,
                 repeat: int = 1, before: Path | None = None, cpu: bool = False) -> list[dict]:
    """Each page cold, right after the floor is measured again: on a machine shared with other jobs the load
    changes from minute to minute, so every page is compared with a floor taken just before it. With ``repeat``
    > 1 the pages are visited in that many rounds (all pages, then all again), and a page's row holds the
    medians of its cold times and of its floors (one visit's ratio moves by +-30% on a loaded machine). With
    ``before`` (another checkout) each round also visits the page served from it, this checkout and that one
    in alternating order after the same floor, so that a change of load hits both alike; ``before`` in a row is
    that checkout's median. With ``cpu`` each visit's CPU seconds are kept too (:func:`cpu_used`)."""
    visits: dict[str, dict[str, list[float]]] = {}
    checkouts = [("cold", REPO)] + ([("before", before)] if before is not None else [])

    def record(name: str, what: str, seconds: float) -> None:
        visits.setdefault(name, {}).setdefault(what, []).append(seconds)

    for round_ in range(repeat):
        for entry in pages:
            floor, floor_cpu = floor_seconds(browser, runs, work, log, cpu)
            for what, checkout in (checkouts if round_ % 2 == 0 else checkouts[::-1]):
                with streamlit_server(checkout / "app.py", runs, log, checkout) as url:
                    start = cpu_snapshot_if(cpu, url)
                    cold, context, page = visit(browser, f"{url}/{entry.url_path}", entry.main)
                    for side, seconds in cpu_used(start, cpu_snapshot_if(cpu, url)).items():
                        record(entry.name, f"{what} {side} cpu", seconds)
                        record(entry.name, f"floor {side} cpu", floor_cpu[side])
                    record(entry.name, what, cold)
                    record(entry.name, "floor", floor)
                    label = "" if what == "cold" else f" ({before})"
                    print(f"  {entry.name}{label}: {cold:.2f} s (floor {floor:.2f} s)", flush=True)
                    if entry.url_path == "Correlations":
                        seconds = change_k(page)
                        record("Correlations, change k", what, seconds)
                        record("Correlations, change k", "floor", floor)
                        print(f"  Correlations, change k{label}: {seconds:.2f} s", flush=True)
                    context.close()
        if repeat > 1:
            print(f"  (round {round_ + 1} of {repeat} done)", flush=True)
    return [{"page": name, "size": size, **{what: statistics.median(times) for what, times in found.items()}}
            for name, found in visits.items()]


def print_cpu(rows: list[dict], before: bool) -> None:
    """CPU seconds used during the visits (medians): the page's server and browser (all Chromium processes), and
    the floor's (:func:`cpu_used`: each includes the :data:`QUIET_MS` wait after the page was usable)."""
    sides = ["cold"] + (["before"] if before else [])
    header = "".join(f"{f'{w} server':>14}{f'{w} browser':>15}" for w in sides)
    print(f"\n{'CPU seconds (medians)':<24}{'size':>9}{header}{'floor server':>14}{'floor browser':>15}")
    for row in rows:
        if "floor server cpu" not in row:
            continue  # a change of k: measured within the visit
        cells = "".join(f"{row[f'{w} server cpu']:>14.2f}{row[f'{w} browser cpu']:>15.2f}" for w in sides)
        print(f"{row['page']:<24}{row['size']:>9}{cells}{row['floor server cpu']:>14.2f}"
              f"{row['floor browser cpu']:>15.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="shipped,10000,100000",
                        help="comma-separated: 'shipped' and/or numbers of queries of generated runs")
    parser.add_argument("--docs", type=int, default=10, help="passages per query of the generated runs")
    parser.add_argument("--quick", action="store_true", help="the shipped run and a 2,000-query run")
    parser.add_argument("--pages", default="", help="comma-separated page names or URL paths (default: all)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="rounds of visits: each row is then the median cold time over its median floor")
    parser.add_argument("--before", type=Path, default=None,
                        help="another checkout (e.g. before a change): its pages visited alternately with these")
    parser.add_argument("--cpu", action="store_true",
                        help="also print the CPU seconds the server and the browser used during each visit (Linux)")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "rageval-bench-dashboard",
                        help="where generated runs are kept between invocations")
    args = parser.parse_args()
    sizes = ["shipped", "2000"] if args.quick else [s.strip() for s in args.sizes.split(",") if s.strip()]
    wanted = {p.strip() for p in args.pages.split(",") if p.strip()}
    pages = [p for p in PAGES if not wanted or p.name in wanted or p.url_path in wanted]
    if not CHROMIUM.exists():
        print(f"needs {CHROMIUM} (apt-get install -y chromium)", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    rows = []
    with tempfile.TemporaryDirectory() as work, sync_playwright() as playwright:
        work = Path(work)
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            for size in sizes:
                print(f"{size}:", flush=True)
                runs = runs_folder(size, args.docs, args.cache, work)
                rows += measure_size(browser, size, pages, runs, work, work / f"streamlit-{size}.log", args.repeat,
                                     args.before.resolve() if args.before else None, args.cpu)
        finally:
            browser.close()

    before = f"{'before s':>10}{'ratio':>7}" if args.before else ""
    print(f"\n{'page':<24}{'size':>9}{before}{'cold s':>8}{'floor s':>9}{'ratio':>7}{'goal':>6}  met?")
    for row in rows:
        ratio = row["cold"] / row["floor"]
        target = 2.0 if row["page"].endswith("change k") else goal(row["size"])
        earlier = f"{row['before']:>10.2f}{row['before'] / row['floor']:>7.1f}" if args.before else ""
        print(f"{row['page']:<24}{row['size']:>9}{earlier}{row['cold']:>8.2f}{row['floor']:>9.2f}{ratio:>7.1f}"
              f"{target:>5.0f}x  {'yes' if ratio <= target else 'NO'}")
    if args.cpu:
        print_cpu(rows, bool(args.before))
    print("\ncold: first visit after `streamlit run` started, fresh browser context; floor: an empty page the same "
          "way, measured just before each page; seconds from navigation start until title + main content visible and "
          "the script finished. "
          + (f"Medians of {args.repeat} visits each (cold and floor apart). " if args.repeat > 1 else "") +
          f"Generated runs: {args.docs} passages per query.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
