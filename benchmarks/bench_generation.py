"""eRAG labels per second with the real Gemma-3-270M: the naive loop against batching + shared-prefix reuse.

    python benchmarks/bench_generation.py                  # 200 NQ (question, gold passage) pairs
    python benchmarks/bench_generation.py --pairs 16 --threads 1   # 1 thread is faster on a busy machine

An eRAG label needs one LLM answer per (question, passage) pair. The pairs are the first ``--pairs`` lines of
``data/nq_open/nq_open_oracle_psgs_w100.jsonl.gz`` (the question and its gold passage), each turned into the
few-shot prompt of :func:`rageval.prompts.build_qa_prompt`; decoding is greedy, ``max_new_tokens=16``, stop at
``"\\n"`` (the eRAG settings). Everything runs in one process on the CPU, one timing per path (no warm-up run;
the model is loaded before timing):

1. naive: one prompt per ``generate`` call, no prefix reuse;
2. optimised: one call; the few-shot prefix's key/value cache computed once (inside the timing), each suffix
   prefilled on a copy of it, and ``--batch-size`` rows decoded together (finished rows leave the batch);
3. (extra) the optimised path with the model in bfloat16 (CPUs with avx512_bf16 run bf16 matmuls natively);
   its answers may differ from float32, so only the count of identical answers is printed.

The optimised answers must equal the naive ones (the script fails otherwise). Other processes on the machine
change the absolute times; compare the ratio.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from rageval.data.loaders import read_nq_open_oracle
from rageval.generation.base import DecodingSettings
from rageval.generation.gemma import converted_model_dir, load_gemma_generator
from rageval.generation.transformers_backend import TransformersGenerator
from rageval.paths import DATA_DIR
from rageval.prompts import build_qa_prompt
from rageval.types import Passage

SETTINGS = DecodingSettings(max_new_tokens=16, temperature=0.0, stop=("\n",))


def read_prompts(n_pairs: int) -> list[str]:
    records = read_nq_open_oracle(DATA_DIR / "nq_open" / "nq_open_oracle_psgs_w100.jsonl.gz")[:n_pairs]
    return [build_qa_prompt(r.question, [Passage(str(r.line), r.title, r.text)]) for r in records]


def time_naive(gen: TransformersGenerator, prompts: list[str]) -> tuple[float, list[str]]:
    gen.prefix_reuse = False
    start = time.perf_counter()
    answers = [gen.generate([p], SETTINGS)[0] for p in prompts]
    return time.perf_counter() - start, answers


def time_optimised(gen: TransformersGenerator, prompts: list[str]) -> tuple[float, list[str]]:
    gen.prefix_reuse = True
    gen.prefix_caches.clear()  # the prefix's cache is computed inside the timing
    start = time.perf_counter()
    answers = gen.generate(prompts, SETTINGS)
    return time.perf_counter() - start, answers


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=200, help="(question, passage) pairs (default 200)")
    parser.add_argument("--batch-size", type=int, default=32,
                        help="rows decoded together on the optimised path (default 32)")
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (default: torch's choice)")
    parser.add_argument("--no-bf16", action="store_true", help="skip the bfloat16 path")
    parser.add_argument("--model", type=Path, help="a Hugging Face model folder (default: the converted Gemma)")
    args = parser.parse_args(argv)

    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    prompts = read_prompts(args.pairs)
    gen = (TransformersGenerator(args.model, device="cpu", batch_size=args.batch_size) if args.model
           else load_gemma_generator(device="cpu", batch_size=args.batch_size))
    lengths = [len(ids) for ids in gen.tokenizer(prompts)["input_ids"]]
    print(f"{len(prompts)} pairs, prompt tokens mean {sum(lengths) / len(lengths):.0f} "
          f"(min {min(lengths)}, max {max(lengths)}), torch threads {torch.get_num_threads()}, "
          f"batch size {args.batch_size}", flush=True)

    naive_s, naive = time_naive(gen, prompts)
    print(f"naive     (batch 1, no prefix reuse): {naive_s:8.1f} s  {len(prompts) / naive_s:6.2f} labels/s", flush=True)
    fast_s, fast = time_optimised(gen, prompts)
    (prefix,) = gen.prefix_caches.prefixes()
    print(f"optimised (batch {args.batch_size} + prefix reuse):  {fast_s:8.1f} s  {len(prompts) / fast_s:6.2f} labels/s"
          f"  (shared prefix {len(prefix)} tokens)", flush=True)
    differing = [i for i, (a, b) in enumerate(zip(naive, fast)) if a != b]
    print(f"speed-up optimised / naive: {naive_s / fast_s:.2f}x; identical answers: "
          f"{len(prompts) - len(differing)}/{len(prompts)}", flush=True)

    if not args.no_bf16:
        bf16 = TransformersGenerator(args.model or converted_model_dir(), device="cpu", batch_size=args.batch_size,
                                     dtype="bfloat16", model_id=gen.model_id)
        bf16_s, bf16_answers = time_optimised(bf16, prompts)
        same = sum(a == b for a, b in zip(naive, bf16_answers))
        print(f"bf16 optimised (extra):              {bf16_s:8.1f} s  {len(prompts) / bf16_s:6.2f} labels/s  "
              f"{naive_s / bf16_s:.2f}x naive; identical to float32: {same}/{len(prompts)}", flush=True)

    if differing:
        for i in differing[:5]:
            print(f"  pair {i}: naive {naive[i]!r} vs optimised {fast[i]!r}", file=sys.stderr)
        print(f"FAIL: {len(differing)} answers differ between the naive and the optimised path", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
