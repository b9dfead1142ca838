"""eRAG against end-to-end (E2E) evaluation: wall time and peak memory, same model, questions and passages.

    python benchmarks/bench_erag_cost.py                       # 10 questions of the shipped BM25 run, top-10
    python benchmarks/bench_erag_cost.py --num-queries 4 --k 5 --dtype float32

Runs the three configurations of :mod:`rageval.erag.cost` (E2E one query per batch; eRAG with a query's k passages as
one batch; eRAG one passage at a time), each in a fresh process, uncached, and prints each one's time and peak
memory above the loaded model with its ratio to E2E (the eRAG paper's Table 2: eRAG 2.47x faster on average,
7-48x less GPU memory). Other processes on the machine change absolute times; compare the ratios. ``rageval
cost-report`` runs the same code and writes the JSON file ``docs/results.md`` reads.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from rageval.erag.cost import CONFIGURATIONS, cost_prompts, measure_configuration
from rageval.paths import RUNS_DIR


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", type=Path, default=RUNS_DIR / "nq_open-bm25-gemma3_270m.sqlite")
    parser.add_argument("--num-queries", type=int, default=10)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--threads", type=int)
    args = parser.parse_args()

    erag_prompts, e2e_prompts, described = cost_prompts(args.run, args.num_queries, args.k)
    print(f"{described['num_queries']} questions of {args.run.name}, top-{args.k}, Gemma-3-270M [{args.dtype}]")
    results = {c: measure_configuration(c, erag_prompts, e2e_prompts, dtype=args.dtype, threads=args.threads)
               for c in CONFIGURATIONS}
    e2e = results["e2e"]
    print(f"{'configuration':<15}{'prompts':>8}{'batch':>6}{'wall s':>9}{'E2E/this':>10}{'peak MB':>9}{'E2E/this':>10}")
    for name, m in results.items():
        time_ratio = e2e.wall_s / m.wall_s if m.wall_s else float("nan")
        memory_ratio = e2e.peak_above_model_mb / m.peak_above_model_mb if m.peak_above_model_mb else float("nan")
        print(f"{name:<15}{m.prompts:>8}{m.batch_size:>6}{m.wall_s:>9.1f}{time_ratio:>10.2f}"
              f"{m.peak_above_model_mb:>9.0f}{memory_ratio:>10.1f}")


if __name__ == "__main__":
    main()
