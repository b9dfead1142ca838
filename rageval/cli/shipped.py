"""``rageval demo-runs``, ``cost-report`` and ``results``: the shipped demo runs (:mod:`rageval.pipeline.demo`),
eRAG's cost against E2E (:mod:`rageval.erag.cost`) and docs/results.md built from them.

The shipped corpus and its index are :mod:`rageval.cli.corpus`; ``rageval erag`` is :mod:`rageval.cli.erag`; the
retrieval experiments are :mod:`rageval.cli.retrieval`; your own data goes through ``rageval evaluate``
(:mod:`rageval.cli.evaluate`).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from rageval.paths import REPO_ROOT, RUNS_DIR


def cmd_demo_runs(args: argparse.Namespace) -> int:
    from rageval.pipeline.demo import add_demo_correlations, build_demo_runs, load_demo_runs, select_demo_runs

    runs = select_demo_runs(load_demo_runs(args.plans), args.only)
    started = time.perf_counter()
    command = "rageval " + " ".join(sys.argv[1:])
    if args.correlations_only:
        for path, added in add_demo_correlations(args.out_dir, runs, command=command):
            print(f"{path}: " + (f"{added} correlations added" if added else "has its correlations (or no E2E "
                                                                             "scores to correlate with)"))
        print(f"done in {time.perf_counter() - started:.0f} s")
        return 0
    paths = build_demo_runs(args.out_dir, runs, scale=args.scale, dtype=args.dtype or None, command=command)
    print(f"built {len(paths)} runs in {time.perf_counter() - started:.0f} s:")
    for path in paths:
        print(f"  {path} ({path.stat().st_size / 1e6:.1f} MB)")
    return 0


def cmd_cost_report(args: argparse.Namespace) -> int:
    from rageval.erag.cost import cost_report

    path = cost_report(args.run, args.out, num_queries=args.num_queries, k=args.k, dtype=args.dtype,
                       threads=args.threads, command="rageval " + " ".join(sys.argv[1:]),
                       log=lambda message: print(message, file=sys.stderr))
    print(f"wrote {path}")
    return 0


def cmd_results(args: argparse.Namespace) -> int:
    from rageval.results_doc import write_results

    path = write_results(args.runs_dir, args.out, args.cost)
    print(f"wrote {path}")
    return 0


def add_parsers(sub) -> None:
    demo = sub.add_parser("demo-runs", help="build the shipped demo runs (eRAG with every label method and a k "
                                            "sweep, LLM-retEval) into data/runs through the LLM-call cache")
    demo.add_argument("--only", help="comma-separated run names (default: every config of --plans)")
    demo.add_argument("--plans", type=Path, nargs="+", metavar="CONFIG",
                      help="rageval evaluate config files of shipped dataset slices, or folders of them (default: "
                           "data/configs/demo_runs, the shipped demo runs; a file's path there is its run's path)")
    demo.add_argument("--scale", type=float, default=1.0, help="multiply every run's question count")
    demo.add_argument("--dtype", default="bfloat16", help="RAG LLM precision ('' for the device default)")
    demo.add_argument("--out-dir", type=Path, default=RUNS_DIR)
    demo.add_argument("--correlations-only", action="store_true",
                      help="generate nothing: add to the built runs that lack them the correlations a run stores "
                           "(label method x measure vs the E2E score at every k, bootstrap intervals)")
    demo.set_defaults(handler=cmd_demo_runs)

    cost = sub.add_parser("cost-report", help="eRAG vs E2E wall time and peak memory (fresh process each)")
    cost.add_argument("--run", type=Path, default=RUNS_DIR / "nq_open-bm25-gemma3_270m.sqlite",
                      help="run whose questions and lists are used")
    cost.add_argument("--num-queries", type=int, default=10)
    cost.add_argument("--k", type=int, default=10)
    cost.add_argument("--dtype", default="bfloat16")
    cost.add_argument("--threads", type=int, help="torch threads (default: torch's)")
    cost.add_argument("--out", type=Path, default=RUNS_DIR / "cost" / "erag_vs_e2e.json")
    cost.set_defaults(handler=cmd_cost_report)

    results = sub.add_parser("results", help="regenerate docs/results.md from the demo runs")
    results.add_argument("--runs-dir", type=Path, default=RUNS_DIR)
    results.add_argument("--cost", type=Path, default=RUNS_DIR / "cost",
                         help="a cost-report JSON file, or a folder of them (default: data/runs/cost)")
    results.add_argument("--out", type=Path, default=REPO_ROOT / "docs" / "results.md")
    results.set_defaults(handler=cmd_results)
