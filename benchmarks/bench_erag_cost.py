"""eRAG against end-to-end (E2E) evaluation: CPU time and peak memory above the loaded model, same model, questions
and passages, at several k.

    nice python benchmarks/bench_erag_cost.py                 # 8 questions of the shipped k=20 BM25 run, k=10 and 20
    nice python benchmarks/bench_erag_cost.py --ks 10 --num-queries 4 --dtype float32 --json cost.json

Each configuration of :mod:`rageval.erag.cost` runs in a fresh process, uncached (``e2e``: one top-k prompt per
question, batch 1; ``erag-query``: a question's k single-passage prompts as one ``generate`` call, the paper's
query-level setting; ``erag-document``: one passage per call; ``erag-query-em``: ``erag-query`` with exact-match
early stopping, the same ``erag:em`` labels; the last two with ``--configurations``). The table gives each one's
CPU time (all threads of its process; on a shared machine far steadier than wall time) and peak resident memory above
the loaded model, with E2E's value divided by it: above 1, eRAG is cheaper. The eRAG paper (Salemi & Zamani, SIGIR
2024, Table 2; T5-small FiD, 50 passages, GPU) measured eRAG 2.47x faster on average and 7-15x less memory at query
level. ``--threads`` defaults to 1 (one core each, no oversubscription beside other work).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from rageval.erag.cost import CONFIGURATIONS, cost_prompts, measure_configuration
from rageval.paths import RUNS_DIR


def ratio(e2e: float | None, this: float | None) -> str:
    return f"{e2e / this:.2f}" if e2e and this else "–"


def labels_note(m, full) -> str:
    """How many of this configuration's exact-match labels are 1, and whether they are erag-query's."""
    if m.em_labels is None:
        return ""
    note = f"{sum(m.em_labels):.0f}/{len(m.em_labels)} = 1"
    if full is not None and full is not m and full.em_labels is not None:
        note += ", same as erag-query's" if m.em_labels == full.em_labels else ", DIFFERENT from erag-query's"
    return note


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", type=Path, default=RUNS_DIR / "demo" / "nq_open-bm25-gemma3_270m-k20.sqlite",
                        help="a run file with at least max(--ks) passages per question")
    parser.add_argument("--num-queries", type=int, default=8)
    parser.add_argument("--ks", default="10,20", help="comma-separated k values")
    parser.add_argument("--model", default=None, help="gemma-3-270m (default), smollm2-135m-instruct or a folder")
    parser.add_argument("--dtype", default="bfloat16", help="float32, bfloat16 ('' for the device default)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--configurations", default="e2e,erag-query",
                        help=f"comma-separated, from {', '.join(CONFIGURATIONS)}")
    parser.add_argument("--option", action="append", default=[], metavar="NAME=INT",
                        help="a generator attribute set in each child, e.g. decode_memory_mb=16")
    parser.add_argument("--json", type=Path, help="also write the measurements here")
    args = parser.parse_args()

    options = {name: int(value) for name, value in (item.split("=", 1) for item in args.option)}
    configurations = args.configurations.split(",")
    model = args.model or "gemma-3-270m"
    print(f"{model} [{args.dtype or 'device default'}], {args.threads} thread(s), run {args.run.name}, "
          f"options {options or 'none'}")
    header = (f"{'k':>3} {'configuration':<14}{'prompts':>8}{'CPU s':>9}{'wall s':>8}{'E2E/this':>9}"
              f"{'peak MB':>9}{'E2E/this':>9}  EM labels")
    print(header)
    report = []
    for k in (int(value) for value in args.ks.split(",")):
        erag_prompts, e2e_prompts, described = cost_prompts(args.run, args.num_queries, k)
        results = {c: measure_configuration(c, erag_prompts, e2e_prompts, dtype=args.dtype or None,
                                            threads=args.threads, model=args.model, options=options,
                                            answers=described["answers"])
                   for c in configurations}
        e2e, full = results.get("e2e"), results.get("erag-query")
        for name, m in results.items():
            print(f"{k:>3} {name:<14}{m.prompts:>8}{m.cpu_s:>9.1f}{m.wall_s:>8.1f}"
                  f"{ratio(e2e.cpu_s if e2e else None, m.cpu_s):>9}{m.peak_above_model_mb:>9.0f}"
                  f"{ratio(e2e.peak_above_model_mb if e2e else None, m.peak_above_model_mb):>9}  "
                  f"{labels_note(m, full)}", flush=True)
        report.append(described | {"measurements": [m.__dict__ for m in results.values()]})
    if args.json:
        args.json.write_text(json.dumps({"model": model, "dtype": args.dtype, "threads": args.threads,
                                         "options": options, "runs": report}, indent=2) + "\n")


if __name__ == "__main__":
    main()
