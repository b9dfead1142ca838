"""rageval's measures against pytrec_eval, ranx and ir_measures, from Python dicts and from TREC files, in one process.

    python benchmarks/bench_measures.py                                # 100,000 and 1,000,000 queries x 100 docs
    python benchmarks/bench_measures.py --sizes 1000000 --floor-max-queries 1000000   # ~12 GB for the floor
    python benchmarks/bench_measures.py --sizes 100000 --peers pytrec_eval,ranx,ir_measures --repeat 3
    python benchmarks/bench_measures.py --sizes 2000 --docs 20         # seconds

The inputs are generated (seeded): every query retrieves ``--docs`` passages out of a pool of 20 x that many,
with scores rounded to 3 decimals (so about 1 passage in 10 shares its score with another: ties are broken by
passage id as trec_eval does), 5 relevant passages among the retrieved ones (one of grade 2), 3 judged
non-relevant retrieved ones, 2 judged non-relevant unretrieved ones and one relevant passage never retrieved;
every 50th query has no relevant passage. To fit a million queries in memory the run dicts share one Python float
per distinct score (real dicts hold one per entry; both rageval and the peers read them alike).

Every tool computes the same 7 measures per query (P@10, R@10, AP@100, nDCG@10, RR, R-precision, Hit@10) from the
same inputs:

- from dicts: ``{query: {passage: score}}`` and ``{query: {passage: label}}``, built once, not timed;
- from files: a TREC run and a TREC qrels file, written once to a temporary folder, not timed; each tool's own
  reader (rageval: ``compute_measures_from_files``; pytrec_eval: ``parse_run``/``parse_qrel``; ranx:
  ``Run.from_file``/``Qrels.from_file``; ir_measures: ``read_trec_run``/``read_trec_qrels``), and, as the floor,
  a plain ``pyarrow.csv.read_csv`` of both files (every column, types inferred, nothing computed; skipped above
  ``--floor-max-queries``: its string columns took 12 GB at a million queries).

Seconds are wall-clock, best of ``--repeat``; CPU seconds are the process's (Arrow reads with its thread pool, ranx
computes with numba's threads; Arrow allocates with the system allocator, see ``main``). Peak memory is the
resident set's high-water mark during the call above what was resident before it (``/proc/self/clear_refs`` resets
the mark; where that is not allowed, RSS sampled every 5 ms).
"x rageval" is a tool's seconds over rageval's on the same input and size. Peers are skipped, with a note, above
``--peer-max-queries`` (their time or memory rules them out on a small machine); pytrec_eval from dicts is run in
calls of ``--pytrec-chunk`` queries above that (one call copies the whole run: ~6 GB at a million queries), which
can only make it faster. Every value is checked against pytrec_eval on a sample of queries: rageval, pytrec_eval
and ir_measures (which calls pytrec_eval) agree to 1e-15; ranx breaks ties between equal scores its own way, not by
passage id as trec_eval does, so its values differ on the queries whose relevant passages tie with others.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from rageval.measures import compute_measures_from_files, compute_measures_from_run, parse_measure

#: rageval's measure -> (pytrec_eval, ranx, ir_measures) names of the same measure (RR@100 = RR: docs <= 100).
MEASURES = {
    "P@10": ("P_10", "precision@10", "P@10"),
    "R@10": ("recall_10", "recall@10", "R@10"),
    "AP@100": ("map_cut_100", "map@100", "AP@100"),
    "nDCG@10": ("ndcg_cut_10", "ndcg@10", "nDCG@10"),
    "RR@100": ("recip_rank", "mrr@100", "RR"),
    "Rprec": ("Rprec", "r-precision", "Rprec"),
    "Hit@10": ("success_10", "hit_rate@10", "Success@10"),
}
PEERS = ("pytrec_eval", "ranx", "ir_measures")
PYTREC_NAMES = {"P.10", "recall.10", "map_cut.100", "ndcg_cut.10", "recip_rank", "Rprec", "success.10"}


# ----------------------------------------------------------------------------------------------
# Inputs
# ----------------------------------------------------------------------------------------------


@dataclass
class Inputs:
    """The generated run and qrels as arrays: query ``q`` retrieves passages ``docs[q]`` with ``scores[q]``."""

    docs: np.ndarray  # int32 [n, d], passage numbers (names "p<number>")
    scores: np.ndarray  # float64 [n, d], rounded to 3 decimals
    judged: np.ndarray  # int32 [n, 10], judged passage numbers
    labels: np.ndarray  # int8 [n, 10]
    pool: int

    @property
    def n_queries(self) -> int:
        return len(self.docs)


def make_inputs(n_queries: int, n_docs: int, seed: int = 0) -> Inputs:
    rng = np.random.default_rng(seed)
    pool = 20 * n_docs
    docs = np.empty((n_queries, n_docs), dtype=np.int32)
    judged = np.empty((n_queries, 10), dtype=np.int32)
    chunk = max(1, 2**22 // pool)
    for start in range(0, n_queries, chunk):
        size = min(chunk, n_queries - start)
        drawn = np.argpartition(rng.random((size, pool), dtype=np.float32), n_docs + 2, axis=1)[:, :n_docs + 2]
        docs[start:start + size] = drawn[:, :n_docs]
        picked = np.argpartition(rng.random((size, n_docs), dtype=np.float32), 8, axis=1)[:, :8]
        judged[start:start + size, :8] = np.take_along_axis(drawn[:, :n_docs], picked, axis=1)
        judged[start:start + size, 8:] = drawn[:, n_docs:]  # judged, never retrieved
    labels = np.zeros((n_queries, 10), dtype=np.int8)
    labels[:, :5] = 1
    labels[:, 0] = 2
    labels[::50] = 0
    scores = np.round(rng.random((n_queries, n_docs)), 3)
    return Inputs(docs, scores, judged, labels, pool)


def as_dicts(inputs: Inputs) -> tuple[dict, dict]:
    """The inputs as pytrec_eval takes them; the relevant unretrieved passage is ``u<query>``."""
    names = [f"p{i}" for i in range(inputs.pool)]
    floats = [i / 1000 for i in range(1001)]  # one object per distinct score
    run, qrels = {}, {}
    for q, (docs, codes, judged, labels) in enumerate(zip(
            inputs.docs.tolist(), np.rint(inputs.scores * 1000).astype(np.int64).tolist(), inputs.judged.tolist(),
            inputs.labels.tolist())):
        query_id = f"q{q}"
        run[query_id] = dict(zip(map(names.__getitem__, docs), map(floats.__getitem__, codes)))
        judgments = dict(zip(map(names.__getitem__, judged), labels))
        if q % 50:
            judgments[f"u{q}"] = 1
        qrels[query_id] = judgments
    return run, qrels


def write_files(inputs: Inputs, folder: Path) -> tuple[Path, Path]:
    """The TREC run (lines in retrieval order, rank 1..d) and qrels, written with Arrow's CSV writer."""
    import pyarrow as pa
    from pyarrow import csv as pacsv

    n, d = inputs.docs.shape
    names = pa.array([f"p{i}" for i in range(inputs.pool)])
    options = pacsv.WriteOptions(include_header=False, delimiter=" ", quoting_style="none")
    run_path, qrels_path = folder / "run.trec", folder / "qrels.trec"
    run_schema = pa.schema([("q", pa.string()), ("q0", pa.string()), ("p", pa.string()), ("rank", pa.int32()),
                            ("score", pa.float64()), ("tag", pa.string())])
    qrels_schema = pa.schema([("q", pa.string()), ("i", pa.int8()), ("p", pa.string()), ("label", pa.int8())])
    with pacsv.CSVWriter(run_path, run_schema, write_options=options) as run_file, \
            pacsv.CSVWriter(qrels_path, qrels_schema, write_options=options) as qrels_file:
        for start in range(0, n, 50_000):
            stop = min(n, start + 50_000)
            query_ids = pa.array([f"q{q}" for q in range(start, stop)])
            rows = np.repeat(np.arange(stop - start), d)
            run_file.write_table(pa.table([
                query_ids.take(rows), pa.array(np.full(len(rows), "Q0")), names.take(inputs.docs[start:stop].ravel()),
                np.tile(np.arange(1, d + 1, dtype=np.int32), stop - start), inputs.scores[start:stop].ravel(),
                pa.array(np.full(len(rows), "rageval")),
            ], schema=run_schema))
            judged = inputs.judged[start:stop]
            relevant = np.flatnonzero(np.arange(start, stop) % 50)  # the unretrieved relevant passage
            query_column = np.concatenate([np.repeat(np.arange(stop - start), judged.shape[1]), relevant])
            order = np.argsort(query_column, kind="stable")
            passages = pa.concat_arrays([names.take(judged.ravel()),
                                         pa.array([f"u{start + q}" for q in relevant.tolist()], pa.string())])
            qrels_file.write_table(pa.table([
                query_ids.take(query_column[order]), pa.array(np.zeros(len(order), np.int8)), passages.take(order),
                np.concatenate([inputs.labels[start:stop].ravel(), np.ones(len(relevant), np.int8)])[order],
            ], schema=qrels_schema))
    return run_path, qrels_path


# ----------------------------------------------------------------------------------------------
# Measuring one call
# ----------------------------------------------------------------------------------------------


@dataclass
class Timing:
    size: int
    source: str
    tool: str
    seconds: float | None = None
    cpu: float | None = None
    peak_mb: float | None = None
    note: str = ""
    result: object = None


def _status(field: str) -> int:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"{field} not in /proc/self/status")


def _release_memory() -> None:
    """Hand freed memory back to the system, so that the next call's baseline is what is really in use."""
    gc.collect()
    with contextlib.suppress(ImportError):
        import pyarrow as pa

        pa.default_memory_pool().release_unused()  # Arrow's allocator keeps freed blocks otherwise
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


class PeakMemory:
    """The resident set's high-water mark above its level at the start, over a ``with`` block."""

    def __enter__(self) -> PeakMemory:
        _release_memory()
        self.sampled = 0
        self.base = _status("VmRSS")
        try:
            with open("/proc/self/clear_refs", "w") as handle:
                handle.write("5")  # reset VmHWM to the current RSS
            self.sampler = None
        except OSError:
            self.stop = threading.Event()
            self.sampler = threading.Thread(target=self._sample, daemon=True)
            self.sampler.start()
        return self

    def _sample(self) -> None:
        while not self.stop.wait(0.005):
            self.sampled = max(self.sampled, _status("VmRSS"))

    def __exit__(self, *exc) -> None:
        if self.sampler is None:
            self.peak = _status("VmHWM")
        else:
            self.stop.set()
            self.sampler.join()
            self.peak = max(self.sampled, _status("VmRSS"))
        self.mb = max(self.peak - self.base, 0) / 2**20


def measure(size: int, source: str, tool: str, call: Callable[[], object], repeat: int) -> Timing:
    timing = Timing(size, source, tool)
    for _ in range(repeat):
        timing.result = None
        with PeakMemory() as memory:
            wall, cpu = time.perf_counter(), time.process_time()
            result = call()
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        if timing.seconds is None or wall < timing.seconds:
            timing.seconds, timing.cpu = wall, cpu
        timing.peak_mb = max(timing.peak_mb or 0.0, memory.mb)
        timing.result = result
        del result
    print(f"  {tool:16s} {source:6s} {timing.seconds:8.2f} s  {timing.cpu:8.2f} cpu s  {timing.peak_mb:8.0f} MB",
          flush=True)
    return timing


@dataclass
class Check:
    """One tool's values on one input against pytrec_eval's on the sample: the largest absolute difference (``gap``)
    and its description (which measure and query, how many queries differ)."""

    size: int
    source: str
    tool: str
    gap: float
    detail: str


@dataclass
class Comparison:
    """What a benchmark run computed: every tool's timing, and every tool's values checked against pytrec_eval."""

    timings: list[Timing]
    checks: list[Check]


def skipped(size: int, source: str, tool: str, note: str) -> Timing:
    print(f"  {tool:16s} {source:6s} skipped: {note}", flush=True)
    return Timing(size, source, tool, note=note)


# ----------------------------------------------------------------------------------------------
# The tools
# ----------------------------------------------------------------------------------------------


def rageval_dicts(run, qrels):
    return compute_measures_from_run(list(MEASURES), run, qrels)


def rageval_files(run_path, qrels_path):
    return compute_measures_from_files(list(MEASURES), run_path, qrels_path)


def pyarrow_floor(run_path, qrels_path):
    from pyarrow import csv as pacsv

    space = pacsv.ParseOptions(delimiter=" ")
    run = pacsv.read_csv(run_path, read_options=pacsv.ReadOptions(column_names=["q", "q0", "p", "rank", "s", "t"]),
                         parse_options=space)
    qrels = pacsv.read_csv(qrels_path, read_options=pacsv.ReadOptions(column_names=["q", "i", "p", "label"]),
                           parse_options=space)
    return run.num_rows + qrels.num_rows


def pytrec_dicts(run, qrels, chunk: int | None):
    import pytrec_eval

    if chunk is None or len(qrels) <= chunk:
        return pytrec_eval.RelevanceEvaluator(qrels, PYTREC_NAMES).evaluate(run)
    results, query_ids = {}, list(qrels)
    for start in range(0, len(query_ids), chunk):
        part = query_ids[start:start + chunk]
        evaluator = pytrec_eval.RelevanceEvaluator({q: qrels[q] for q in part}, PYTREC_NAMES)
        results.update(evaluator.evaluate({q: run[q] for q in part if q in run}))
    return results


def pytrec_files(run_path, qrels_path):
    import pytrec_eval

    with open(run_path) as run_file, open(qrels_path) as qrels_file:
        run, qrels = pytrec_eval.parse_run(run_file), pytrec_eval.parse_qrel(qrels_file)
    return pytrec_eval.RelevanceEvaluator(qrels, PYTREC_NAMES).evaluate(run)


def _ranx_metrics() -> list[str]:
    return [names[1] for names in MEASURES.values()]


def ranx_dicts(run, qrels):
    import ranx

    ranx_run, ranx_qrels = ranx.Run(run), ranx.Qrels(qrels)
    ranx.evaluate(ranx_qrels, ranx_run, _ranx_metrics(), make_comparable=True)
    return ranx_run.scores


def ranx_files(run_path, qrels_path):
    import ranx

    ranx_run, ranx_qrels = ranx.Run.from_file(str(run_path), kind="trec"), ranx.Qrels.from_file(str(qrels_path),
                                                                                                 kind="trec")
    ranx.evaluate(ranx_qrels, ranx_run, _ranx_metrics(), make_comparable=True)
    return ranx_run.scores


def _ir_measures_measures():
    import ir_measures

    return [ir_measures.parse_measure(names[2]) for names in MEASURES.values()]


def ir_measures_dicts(run, qrels):
    import ir_measures

    return list(ir_measures.iter_calc(_ir_measures_measures(), qrels, run))


def ir_measures_files(run_path, qrels_path):
    import ir_measures

    return list(ir_measures.iter_calc(_ir_measures_measures(), ir_measures.read_trec_qrels(str(qrels_path)),
                                      ir_measures.read_trec_run(str(run_path))))


def warm_up(peers: list[str]) -> None:
    """Import every tool and compile ranx's numba kernels on a tiny input, so no timing includes them."""
    tiny = make_inputs(3, 10)
    run, qrels = as_dicts(tiny)
    rageval_dicts(run, qrels)
    with tempfile.TemporaryDirectory(prefix="bench-measures-") as folder:
        run_path, qrels_path = write_files(tiny, Path(folder))
        rageval_files(run_path, qrels_path)
        for peer in peers:
            {"pytrec_eval": lambda: pytrec_dicts(run, qrels, None), "ranx": lambda: ranx_dicts(run, qrels),
             "ir_measures": lambda: ir_measures_dicts(run, qrels)}[peer]()
            {"pytrec_eval": pytrec_files, "ranx": ranx_files, "ir_measures": ir_measures_files}[peer](run_path,
                                                                                                     qrels_path)


# ----------------------------------------------------------------------------------------------
# Checking values
# ----------------------------------------------------------------------------------------------


def per_query(tool: str, result) -> dict[tuple[str, str], float]:
    """``{(query_id, our measure name): value}`` from any tool's result."""
    ours = {names[i]: measure for measure, names in MEASURES.items() for i in range(3)}
    if tool == "rageval":
        return dict(zip(zip(result["query_id"], result["measure"]), result["value"]))
    if tool == "pytrec_eval":
        return {(q, ours[name]): value for q, values in result.items() for name, value in values.items()}
    if tool == "ranx":
        return {(q, ours[metric]): float(value) for metric, values in result.items() for q, value in values.items()}
    return {(m.query_id, ours[str(m.measure)]): m.value for m in result}


def largest_difference(reference: dict, values: dict, sample: list[str]) -> tuple[float, str]:
    """The largest |value - pytrec_eval's| over the sample, and it described with its measure and how many queries
    differ."""
    gaps = {(q, measure): abs(values.get((q, measure), 0.0) - reference[q, measure])
            for q in sample for measure in MEASURES}
    (query, measure), gap = max(gaps.items(), key=lambda item: item[1])
    if gap <= 1e-12:
        return gap, f"{gap:.3g}"
    differing = {q for (q, m), g in gaps.items() if g > 1e-12}
    return gap, f"{gap:.3g} ({measure} of {query}; {len(differing)} of {len(sample)} queries differ)"


# ----------------------------------------------------------------------------------------------
# Main
# ----------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    report(compare(argv))
    return 0


def compare(argv: list[str] | None = None) -> Comparison:
    """Time every tool on every size (progress lines as it goes) and check their values: the arguments of
    :func:`main`."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000", help="numbers of queries, comma-separated")
    parser.add_argument("--docs", type=int, default=100, help="retrieved passages per query")
    parser.add_argument("--peers", default=",".join(PEERS), help=f"any of {', '.join(PEERS)}, or none")
    parser.add_argument("--repeat", type=int, default=1, help="best of this many runs of every tool")
    parser.add_argument("--peer-max-queries", type=int, default=200_000,
                        help="skip ranx, ir_measures and pytrec_eval from files above this many queries")
    parser.add_argument("--floor-max-queries", type=int, default=200_000,
                        help="skip the plain pyarrow read above this many queries (its string columns took 12 GB "
                             "at a million queries x 100 docs)")
    parser.add_argument("--pytrec-chunk", type=int, default=200_000,
                        help="above this many queries, pytrec_eval from dicts runs in calls of this many")
    parser.add_argument("--sample", type=int, default=1000, help="queries whose values are checked")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.docs < 10:
        parser.error("--docs: at least 10 (each query has 8 judged retrieved passages)")
    sizes = [int(size) for size in args.sizes.split(",")]
    peers = [] if args.peers == "none" else [peer for peer in args.peers.split(",") if peer]
    unknown = set(peers) - set(PEERS)
    if unknown:
        parser.error(f"--peers: unknown {', '.join(sorted(unknown))}; expected any of {', '.join(PEERS)}")
    parse_measure("P@10")  # fail early on a broken install
    import pyarrow as pa

    # Arrow's default allocator (jemalloc) keeps freed blocks, so a call's peak could hide under the previous
    # call's leftovers; with the system allocator freed memory goes back before each call (_release_memory).
    # Every tool here allocates through it alike.
    previous_pool = pa.default_memory_pool()
    pa.set_memory_pool(pa.system_memory_pool())
    try:
        warm_up(peers)
        print(f"{args.docs} docs a query; Arrow threads: {os.cpu_count()} cores; best of {args.repeat}")
        timings: list[Timing] = []
        checks: list[Check] = []
        for size in sizes:
            timings += run_size(size, args, peers, checks)
    finally:
        pa.set_memory_pool(previous_pool)
    return Comparison(timings, checks)


def report(comparison: Comparison) -> None:
    print_table(comparison.timings)
    print("values against pytrec_eval on a sample of queries (largest absolute difference over 7 measures):")
    for check in comparison.checks:
        print(f"  {check.size:>9,} {check.source:5s} {check.tool:12s} {check.detail}")


def run_size(size: int, args, peers: list[str], checks: list[Check]) -> list[Timing]:
    print(f"{size:,} queries: generating", flush=True)
    inputs = make_inputs(size, args.docs, args.seed)
    rng = np.random.default_rng(args.seed + 1)
    sample = [f"q{q}" for q in sorted(rng.choice(size, min(args.sample, size), replace=False).tolist())]
    too_big = size > args.peer_max_queries
    note = f"above --peer-max-queries {args.peer_max_queries:,}"
    timings = []
    results: dict[tuple[str, str], dict] = {}
    with tempfile.TemporaryDirectory(prefix="bench-measures-") as folder:
        run_path, qrels_path = write_files(inputs, Path(folder))
        megabytes = (run_path.stat().st_size + qrels_path.stat().st_size) / 1e6
        print(f"  files: {megabytes:,.0f} MB run + qrels", flush=True)
        if size > args.floor_max_queries:
            timings.append(skipped(size, "files", "pyarrow read", f"above --floor-max-queries "
                                                                  f"{args.floor_max_queries:,} (memory)"))
        else:
            timings.append(measure(size, "files", "pyarrow read", lambda: pyarrow_floor(run_path, qrels_path),
                                   args.repeat))
        timings.append(measure(size, "files", "rageval", lambda: rageval_files(run_path, qrels_path), args.repeat))
        results["rageval", "files"] = _sampled("rageval", timings[-1], sample)
        file_tools = {"pytrec_eval": pytrec_files, "ranx": ranx_files, "ir_measures": ir_measures_files}
        for peer in peers:
            if too_big:
                timings.append(skipped(size, "files", peer, note))
                continue
            timings.append(measure(size, "files", peer, lambda tool=file_tools[peer]: tool(run_path, qrels_path),
                                   args.repeat))
            results[peer, "files"] = _sampled(peer, timings[-1], sample)
    print("  building the dicts", flush=True)
    run, qrels = as_dicts(inputs)
    del inputs
    timings.append(measure(size, "dicts", "rageval", lambda: rageval_dicts(run, qrels), args.repeat))
    results["rageval", "dicts"] = _sampled("rageval", timings[-1], sample)
    for peer in peers:
        if peer == "pytrec_eval":
            chunk = args.pytrec_chunk if size > args.pytrec_chunk else None
            label = peer if chunk is None else f"{peer} /{chunk // 1000}k"
            timings.append(measure(size, "dicts", label, partial(pytrec_dicts, run, qrels, chunk), args.repeat))
            if chunk is not None:
                timings[-1].note = f"in calls of {chunk:,} queries (one call would copy the whole run)"
        elif too_big:
            timings.append(skipped(size, "dicts", peer, note))
            continue
        else:
            tool = {"ranx": ranx_dicts, "ir_measures": ir_measures_dicts}[peer]
            timings.append(measure(size, "dicts", peer, lambda tool=tool: tool(run, qrels), args.repeat))
        results[peer, "dicts"] = _sampled(peer, timings[-1], sample)
    reference = per_query("pytrec_eval", pytrec_dicts({q: run[q] for q in sample}, {q: qrels[q] for q in sample},
                                                      None))
    for (tool, source), values in results.items():
        checks.append(Check(size, source, tool, *largest_difference(reference, values, sample)))
    return timings


def _sampled(tool: str, timing: Timing, sample: list[str]) -> dict:
    """The sample's values of a result, and the result dropped (a million queries' output is large)."""
    wanted = set(sample)
    if tool == "rageval":
        frame = timing.result
        values = per_query(tool, frame[frame["query_id"].isin(wanted)])  # type: ignore[index]
    elif tool == "pytrec_eval":
        values = per_query(tool, {q: timing.result[q] for q in sample if q in timing.result})  # type: ignore
    elif tool == "ranx":
        values = {key: value for key, value in per_query(tool, timing.result).items() if key[0] in wanted}
    else:
        values = per_query(tool, [m for m in timing.result if m.query_id in wanted])  # type: ignore[attr-defined]
    timing.result = None
    return values


def print_table(timings: list[Timing]) -> None:
    ours = {(t.size, t.source): t.seconds for t in timings if t.tool == "rageval"}
    ours_cpu = {(t.size, t.source): t.cpu for t in timings if t.tool == "rageval"}
    print()
    print(f"{'queries':>9} {'input':6s} {'tool':16s} {'seconds':>8} {'cpu s':>8} {'peak MB':>8} {'x rageval':>9} "
          f"{'cpu x':>6}")
    for t in timings:
        if t.seconds is None:
            print(f"{t.size:>9,} {t.source:6s} {t.tool:16s} {'':>8} {'':>8} {'':>8} {'':>9} {'':>6}  {t.note}")
            continue
        base, base_cpu = ours[t.size, t.source], ours_cpu[t.size, t.source]
        ratio = f"{t.seconds / base:.2f}" if base else ""
        cpu_ratio = f"{t.cpu / base_cpu:.2f}" if base_cpu and t.cpu is not None else ""
        print(f"{t.size:>9,} {t.source:6s} {t.tool:16s} {t.seconds:8.2f} {t.cpu:8.2f} {t.peak_mb:8.0f} {ratio:>9} "
              f"{cpu_ratio:>6}  {t.note}")
    print("x rageval: the tool's seconds over rageval's (above 1: rageval is faster)")
    for t in timings:
        if t.tool == "pyarrow read" and t.seconds:
            ratio = ours[t.size, t.source] / t.seconds
            cpu = ours_cpu[t.size, t.source] / t.cpu if t.cpu else float("nan")
            print(f"{t.size:>9,} queries: rageval from files (read + measures) = {ratio:.2f} x a plain pyarrow read "
                  f"of the same files (cpu {cpu:.2f} x)")


if __name__ == "__main__":
    sys.exit(main())
