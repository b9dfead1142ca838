"""Many annotators labelling one annotation queue at once, without the dashboard: each annotator is a process that
opens their next item (:meth:`rageval.queues.QueueStore.next_item`), saves a label, and reads the run's labels back
(as the Annotate page does after a label), until their items are done. Reports labels per second, the p50 / p95
time of a save (the transaction and its commit), labels lost (assignments without their label: must be 0) and
errors ("database is locked" or any other: must be 0).

    python benchmarks/bench_queue_writers.py                    # 20 annotators, 20 items each
    python benchmarks/bench_queue_writers.py --annotators 50

The annotation file is a fresh one in a temporary folder; the population is synthetic (the queue's rows are what
is measured, not the run).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def annotator_session(path: str, queue_id: int, annotator: str, results) -> None:
    from rageval.annotations import AnnotationStore
    from rageval.queues import QueueStore

    store, saves, errors = QueueStore(path), [], []
    while True:
        try:
            position = store.next_item(queue_id, annotator)
            if position is None:
                break
            start = time.perf_counter()
            store.save_label(queue_id, position, annotator, position % 2)
            saves.append(time.perf_counter() - start)
            AnnotationStore(path).labels("bench")
        except Exception as error:  # counted and reported: the benchmark's point
            errors.append(f"{type(error).__name__}: {error}")
            if len(errors) > 20:
                break
    results.put((annotator, saves, errors))


def main() -> None:
    import pandas as pd

    from rageval.queue_plans import QueuePlan
    from rageval.queues import QueueStore

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--annotators", type=int, default=20)
    parser.add_argument("--items-each", type=int, default=20, help="assigned items per annotator")
    parser.add_argument("--overlap", type=int, default=2)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp())
    path = folder / "annotations.sqlite"
    size = args.annotators * args.items_each // args.overlap
    population = pd.DataFrame([(f"q{i // 10}", f"p{i}", i % 10 + 1) for i in range(max(size, 1) * 2)],
                               columns=["query_id", "passage_id", "rank"])
    names = [f"annotator{i:02d}" for i in range(args.annotators)]
    store = QueueStore(path)
    queue_id = store.create_queue("bench", "bench", "passage", population, population.iloc[:0].assign(
        method="", value=0.0), QueuePlan("uniform", size), args.overlap, names, "", "bench")
    context = multiprocessing.get_context("fork")
    results = context.Queue()
    workers = [context.Process(target=annotator_session, args=(str(path), queue_id, name, results)) for name in names]
    start = time.perf_counter()
    for worker in workers:
        worker.start()
    collected = [results.get() for _ in workers]
    for worker in workers:
        worker.join()
    elapsed = time.perf_counter() - start
    saves = sorted(s for _, times, _ in collected for s in times)
    errors = [e for _, _, errs in collected for e in errs]
    assigned = len(store.assignments(queue_id))
    stored = len(store.decisions(queue_id))
    print(json.dumps({
        "annotators": args.annotators, "assignments": assigned, "labels_stored": stored,
        "labels_lost": assigned - stored, "errors": len(errors),
        "database_is_locked": sum("locked" in e for e in errors), "seconds": round(elapsed, 2),
        "labels_per_second": round(stored / elapsed, 1),
        "save_p50_ms": round(1000 * statistics.median(saves), 1) if saves else None,
        "save_p95_ms": round(1000 * saves[int(0.95 * (len(saves) - 1))], 1) if saves else None,
        "first_errors": errors[:3]}, indent=1))


if __name__ == "__main__":
    main()
