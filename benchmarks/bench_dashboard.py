"""How fast the dashboard opens a large run: the run overview (app.py) and the query inspector on a synthetic run of
10,000 queries x 20 passages, against the same pages on the shipped NQ run (300 queries x 10) as the peer, in one
process, through Streamlit's AppTest (the page scripts as the server runs them, without the browser).

    python benchmarks/bench_dashboard.py                       # 10,000 x 20 (issue 7's goal: < 3 s and < 1.5 s)
    python benchmarks/bench_dashboard.py --queries 2000 --docs 10

The synthetic run has what a real run stores: three label methods (eRAG EM, contains-answer, gold) on every
retrieved passage, their per-query measures (computed by the engine), a single-passage output per passage and
end-to-end answers at k = 1, 5, 20. It is written once to a temporary folder (not timed). A first pass over the
peer warms the imports (not reported). Each page is then timed cold (Streamlit's caches cleared: the first visit
to a run after the server started) and warm (the same page again), and the inspector also on a switch to another
query (the common interaction). Figures are seconds of wall time, one timing each.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run from a checkout without installing

from rageval.erag import compute_measure_values  # noqa: E402  (after the sys.path line)
from rageval.store import DocOutput, E2EOutput, Label, Run, write_run  # noqa: E402
from rageval.types import Passage, Query, Ranking, ScoredPassage  # noqa: E402

SHIPPED = REPO / "data" / "runs" / "nq_open-bm25-gemma3_270m.sqlite"
OVERVIEW_GOAL_S, INSPECTOR_GOAL_S = 3.0, 1.5
WORDS = ("river", "film", "season", "player", "album", "court", "island", "war", "city", "song", "king", "league",
         "award", "novel", "station", "church", "bridge", "empire", "series", "election")


def synthetic_run(num_queries: int, docs: int, seed: int = 0) -> Run:
    """A run of ``num_queries`` x ``docs`` with labels, measures, single-passage and E2E outputs (random text)."""
    rng = random.Random(seed)
    pool = [Passage(f"p{i}", f"Title {i}", " ".join(rng.choices(WORDS, k=100)), "synthetic")
            for i in range(max(num_queries * docs // 4, docs))]
    queries, rankings, labels, outputs, e2e = [], {}, [], [], []
    for q in range(num_queries):
        qid = f"q{q}"
        answer = rng.choice(WORDS)
        ranked = rng.sample(pool, docs)
        queries.append(Query(qid, f"which {' '.join(rng.choices(WORDS, k=6))}?", (answer,), (ranked[0].passage_id,),
                             "synthetic"))
        rankings[qid] = Ranking(qid, tuple(ScoredPassage(p.passage_id, float(docs - r)) for r, p in enumerate(ranked)))
        for p in ranked:
            contains = answer in p.text.split()[:30]
            labels += [Label("contains_answer", qid, p.passage_id, float(contains)),
                       Label("erag:em", qid, p.passage_id, float(contains and rng.random() < 0.5)),
                       Label("gold", qid, p.passage_id, float(p is ranked[0]))]
            outputs.append(DocOutput(qid, p.passage_id, answer if contains else rng.choice(WORDS)))
        e2e += [E2EOutput(qid, k, answer, float(rng.random() < 0.3)) for k in (1, 5, docs)]
    measures = compute_measure_values(labels, rankings, (1, 5, docs))
    settings = {"dataset": "synthetic", "retriever": "random", "model_id": "none (synthetic)", "k": docs,
                "label_metric": "em", "num_queries": num_queries, "notes": "benchmarks/bench_dashboard.py"}
    return Run(settings, queries, pool, list(rankings.values()), outputs, labels, e2e, measures)


def middle_query_ids(run_file: Path) -> tuple[str, str]:
    """Two consecutive query ids from the middle of the run (the inspector's cold and switch targets)."""
    from rageval.store import RunReader

    with RunReader(run_file) as reader:
        ids = reader.query_table()["query_id"].tolist()
    return ids[len(ids) // 2], ids[len(ids) // 2 + 1]


def harness_seconds(folder: Path) -> float:
    """AppTest's own cost per run (it rescans the installed packages for components on every run, which a real
    server does once at start-up): the fastest of three runs of a one-line page."""
    from streamlit.testing.v1 import AppTest

    script = folder / "one_line_page.py"
    script.write_text("import streamlit as st\nst.title('harness')\n", encoding="utf-8")
    timings = []
    for _ in range(3):
        started = time.perf_counter()
        AppTest.from_file(str(script), default_timeout=600).run()
        timings.append(time.perf_counter() - started)
    return min(timings)


def time_pages(run_file: Path, query_ids: tuple[str, str]) -> dict[str, float]:
    """Seconds to run the overview and the inspector on ``run_file`` (cold, warm, another query)."""
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    os.environ["RAGEVAL_RUNS_DIR"] = str(run_file.parent)
    st.cache_data.clear()
    st.cache_resource.clear()
    timings = {}

    def timed(label: str, action) -> AppTest:
        started = time.perf_counter()
        app = action()
        timings[label] = time.perf_counter() - started
        if app.exception or app.error:
            raise RuntimeError(f"{label}: {[e.value for e in [*app.exception, *app.error]]}")
        return app

    def page(script: str | None, **params: str):
        def open_page() -> AppTest:
            app = AppTest.from_file(str(REPO / "app.py"), default_timeout=600)
            app.query_params.update(params)
            if script:
                app.switch_page(script)
            return app.run()
        return open_page

    overview = timed("overview, cold", page(None))
    timed("overview, warm", page(None))
    inspector = "app_pages/1_Query_inspector.py"
    timed("inspector, cold", page(inspector, query=query_ids[0]))
    app = timed("inspector, warm", page(inspector, query=query_ids[0]))
    timed("inspector, another query", lambda: app.selectbox(key="inspect.query_id.widget").select(query_ids[1]).run())
    # What was timed rendered the run: its query count, and the second query's ranked passages.
    shown = {metric.label: metric.value for metric in overview.metric}["Queries"]
    if shown.replace(",", "") != str(len(data_layer_queries(run_file))) or "Ranked passages" not in [
            h.value for h in app.subheader] or app.query_params["query"] != query_ids[1]:
        raise RuntimeError(f"{run_file.name}: the pages did not render the run (Queries shown: {shown})")
    return timings


def data_layer_queries(run_file: Path) -> list[str]:
    from rageval.store import RunReader

    with RunReader(run_file) as reader:
        return reader.query_table()["query_id"].tolist()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--docs", type=int, default=20)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        started = time.perf_counter()
        big = write_run(synthetic_run(args.queries, args.docs), work / "big" / "synthetic.sqlite")
        print(f"synthetic run: {args.queries:,} queries x {args.docs} passages, "
              f"{big.stat().st_size / 1e6:.0f} MB, built in {time.perf_counter() - started:.0f} s (not timed below)")
        peer = shutil.copy(SHIPPED, (work / "peer").mkdir() or work / "peer" / SHIPPED.name)
        time_pages(Path(peer), middle_query_ids(peer))  # warm-up, not reported: module imports are paid once here
        harness = harness_seconds(work)
        results = {"synthetic": time_pages(big, middle_query_ids(big)),
                   "peer": time_pages(Path(peer), middle_query_ids(peer))}

    print(f"\nAppTest harness per run: {harness:.2f} s (subtracted below; a server pays it once at start-up)")
    print(f"{'page':<26}{'synthetic (s)':>14}{'peer (s)':>10}{'ratio':>8}   goal   (raw AppTest s)")
    for label, raw in results["synthetic"].items():
        goal = OVERVIEW_GOAL_S if label.startswith("overview") else INSPECTOR_GOAL_S
        seconds = raw - harness if label != "inspector, another query" else raw  # a rerun does not rescan
        peer_raw = results["peer"][label]
        peer_s = peer_raw - harness if label != "inspector, another query" else peer_raw
        verdict = "ok" if seconds < goal else "MISSED"
        print(f"{label:<26}{seconds:>14.2f}{peer_s:>10.2f}{seconds / peer_s:>8.1f}   < {goal:g} s {verdict}"
              f"   ({raw:.2f} / {peer_raw:.2f})")
    print(f"\npeer: the shipped run {SHIPPED.name} (300 queries x 10). Page script time = AppTest wall time minus "
          "the harness, one timing each; the browser's own rendering is not included.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
