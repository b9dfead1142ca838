"""Exact-match early stopping against the full decode on real prompts: Gemma-3-270M (bfloat16 by default), the first
questions of the shipped k=20 run, each question's eRAG prompts as one call, full decode then early stopping.

    OMP_NUM_THREADS=1 nice python benchmarks/check_em_early_stop.py            # 8 questions, k = 10 and 20, ~3 min

Prints, per k, how many exact-match labels agree (they must all), how many rows stopped, and whether the rows not
stopped gave the full decode's answers.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from rageval.paths import RUNS_DIR


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", type=Path, default=RUNS_DIR / "demo" / "nq_open-bm25-gemma3_270m-k20.sqlite")
    parser.add_argument("--num-queries", type=int, default=8)
    parser.add_argument("--ks", default="10,20")
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--model", default="gemma-3-270m", help="a model name or folder (ModelSettings.model)")
    args = parser.parse_args(argv)

    import torch

    from rageval.erag.cost import cost_prompts
    from rageval.generation.base import DecodingSettings
    from rageval.generation.em_stop import is_stopped
    from rageval.generation.factory import ModelSettings, load_generator
    from rageval.text_metrics import exact_match

    torch.set_num_threads(args.threads)
    ks = [int(k) for k in args.ks.split(",")]
    generator = load_generator(ModelSettings(model=args.model, batch_size=max(ks), dtype=args.dtype or None))
    decoding = DecodingSettings()
    print(f"{generator.model_id}, {args.threads} thread(s), the first {args.num_queries} questions of {args.run.name}")
    for k in ks:
        erag_prompts, _, described = cost_prompts(args.run, args.num_queries, k)
        golds = described["answers"]
        full = [generator.generate(prompts, decoding) for prompts in erag_prompts]
        early = [generator.generate(prompts, decoding, em_targets=[golds[i]] * len(prompts))
                 for i, prompts in enumerate(erag_prompts)]
        rows = [(f, e, golds[i]) for i in range(len(erag_prompts)) for f, e in zip(full[i], early[i])]
        agree = sum(exact_match(f, g) == exact_match(e, g) for f, e, g in rows)
        stopped = sum(is_stopped(e) for _, e, _ in rows)
        same = sum(f == e for f, e, _ in rows if not is_stopped(e))
        positives = sum(exact_match(f, g) for f, _, g in rows)
        print(f"k={k}: {len(rows)} prompts, exact-match labels equal {agree}/{len(rows)} ({positives:.0f} of them 1), "
              f"{stopped} rows stopped, rows not stopped equal to the full decode {same}/{len(rows) - stopped}",
              flush=True)


if __name__ == "__main__":
    main()
