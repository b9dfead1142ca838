"""The run store and the LLM-call cache at a million labels: write, read back, look up; file sizes.

    python benchmarks/bench_store_scale.py                        # 1,000,000 labels (100,000 queries x 10)
    python benchmarks/bench_store_scale.py --labels 100000 --keep /tmp/scale

1. A run file of ``--labels`` eRAG labels written with rageval's own store (``rageval.store.write_run``, in a child
   process so its peak memory is its own): 10 passages per query, the passages drawn from a corpus of
   ``labels / 5`` distinct ones (about 600 characters each, so every passage is ranked for two queries), one
   single-passage answer and one label per (query, passage), E2E answers at k = 1, 5, 10, seven measures per
   query. Then ``rageval info RUN`` and ``info RUN --json`` on it, each in a fresh process (CPU = user + system).
2. An LLM-call cache (``rageval.generation.cache.LLMCache``) of ``--labels`` rows, keyed as rageval keys them (the
   sha256 of model, prompt and decoding; prompts are eRAG-sized, ~1.6 kB), filled in chunks of 10,000 (each one
   transaction, as ``CachedGenerator`` commits per chunk); then 20,000 lookups of present keys and 20,000 of
   absent ones through ``get_many`` (batches of 500), and ``CachedGenerator.generate`` on 10,000 cached prompts
   (key hashing included): what resuming a finished 1M-label run costs before the first new call.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

ROOT = Path(__file__).resolve().parents[1]
K = 10
MEASURES = ("P@10", "R@10", "AP@10", "RR@10", "nDCG@10", "Hit@10", "Rprec")
WORDS = ("the", "river", "city", "was", "built", "in", "century", "by", "king", "who", "ruled", "empire", "north",
         "south", "old", "new", "great", "battle", "between", "army", "named", "after", "famous", "people", "first",
         "largest", "population", "known", "capital", "island", "mountain")


def passage_text(rng: random.Random, characters: int = 600) -> str:
    words: list[str] = []
    while sum(len(w) + 1 for w in words) < characters:
        words.append(rng.choice(WORDS))
    return " ".join(words)


def write_big_run(path: Path, labels: int, seed: int = 0) -> dict:
    """The run file of ``labels`` labels (see the module docstring), written with ``write_run``."""
    from rageval.store import DocOutput, E2EOutput, Label, MeasureValue, Run, write_run
    from rageval.types import Passage, Query, Ranking, ScoredPassage

    rng = random.Random(seed)
    num_queries, num_passages = labels // K, max(labels // 5, K)
    texts = [passage_text(rng) for _ in range(1000)]  # distinct enough; the size is what matters
    passages = [Passage(f"doc{i}", f"Title {i}", texts[i % 1000] + f" ({i})", "bench") for i in range(num_passages)]
    started = time.perf_counter()
    queries, rankings, outputs, label_rows, e2e, measures = [], [], [], [], [], []
    for q in range(num_queries):
        query_id = f"q{q}"
        ranked = [f"doc{(q * K + r) % num_passages}" for r in range(K)]
        queries.append(Query(query_id, f"who was the king of city number {q}", (f"King {q}",), (ranked[0],), "bench"))
        rankings.append(Ranking(query_id, tuple(ScoredPassage(p, 20.0 - r) for r, p in enumerate(ranked))))
        for passage_id in ranked:
            answer_right = rng.random() < 0.1
            outputs.append(DocOutput(query_id, passage_id, f"King {q}" if answer_right else "unknown"))
            label_rows.append(Label("erag:em", query_id, passage_id, 1.0 if answer_right else 0.0))
        e2e += [E2EOutput(query_id, k, f"King {q}", float(rng.random() < 0.3)) for k in (1, 5, 10)]
        measures += [MeasureValue("erag:em", m, query_id, rng.random()) for m in MEASURES]
    settings = {"dataset": "bench", "retriever": "synthetic", "k": K, "model_id": "bench", "num_queries": num_queries,
                "e2e_metric": "em", "label_methods": ["erag:em"]}
    run = Run(settings, queries, passages, rankings, outputs, label_rows, e2e, measures)
    built = time.perf_counter() - started
    started = time.perf_counter()
    write_run(run, path)
    return {"build_s": built, "write_s": time.perf_counter() - started,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def timed_command(args: list[str]) -> tuple[float, float]:
    """(CPU s, wall s) of ``python -m rageval ARGS`` in a fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "rageval", *args], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                   stdout=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def bench_cache(path: Path, rows: int) -> dict:
    from rageval.generation.base import DecodingSettings, FakeGenerator
    from rageval.generation.cache import CachedGenerator, LLMCache, cache_key

    settings = DecodingSettings(max_new_tokens=16)
    model_id = "openai-compatible:bench-model"
    filler = passage_text(random.Random(1), 1500)

    def prompt(i: int) -> str:  # eRAG-sized: the few-shot block + a passage, made unique by the number
        return f"{filler}\nQuestion: who was the king of city number {i}\nAnswer:"

    results: dict[str, float] = {}
    with LLMCache(path) as cache:
        started = time.perf_counter()
        for start in range(0, rows, 10_000):
            chunk = range(start, min(start + 10_000, rows))
            cache.put_many(model_id, settings, {cache_key(model_id, prompt(i), settings): f"King {i}" for i in chunk})
        results["fill_s"] = time.perf_counter() - started
    results["file_mb"] = path.stat().st_size / 1e6 + sum(
        p.stat().st_size for p in path.parent.glob(path.name + "-*")) / 1e6
    started = time.perf_counter()
    cache = LLMCache(path)
    results["open_s"] = time.perf_counter() - started
    rng = random.Random(2)
    present = [cache_key(model_id, prompt(rng.randrange(rows)), settings) for _ in range(20_000)]
    absent = [cache_key(model_id, prompt(rows + i), settings) for i in range(20_000)]
    for name, keys in (("present", present), ("absent", absent)):
        started = time.perf_counter()
        found = cache.get_many(keys)
        results[f"lookup_{name}_per_s"] = len(keys) / (time.perf_counter() - started)
        assert (len(found) > 0) == (name == "present")
    prompts = [prompt(rng.randrange(rows)) for _ in range(10_000)]
    generator = CachedGenerator(FakeGenerator(model_id=model_id), cache)
    started = time.perf_counter()
    generator.generate(prompts, settings)
    results["cached_generate_per_s"] = len(prompts) / (time.perf_counter() - started)
    assert generator.misses == 0
    cache.close()
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--labels", type=int, default=1_000_000)
    parser.add_argument("--keep", type=Path, help="write the files here and keep them (default: a temporary folder)")
    parser.add_argument("--write-only", type=Path, help=argparse.SUPPRESS)  # the child process that writes the run
    args = parser.parse_args()
    if args.write_only:
        print(json.dumps(write_big_run(args.write_only, args.labels)))
        return 0
    folder = args.keep or Path(tempfile.mkdtemp(prefix="rageval-scale-"))
    folder.mkdir(parents=True, exist_ok=True)
    run_path, cache_path = folder / "million.sqlite", folder / "llm_cache.sqlite"
    for stale in (run_path, cache_path):
        stale.unlink(missing_ok=True)
    try:
        child = subprocess.run([sys.executable, __file__, "--labels", str(args.labels), "--write-only", str(run_path)],
                               capture_output=True, text=True, check=True)
        written = json.loads(child.stdout.splitlines()[-1])
        print(f"run file: {args.labels:,} labels ({args.labels // K:,} queries x {K}), "
              f"{run_path.stat().st_size / 1e6:,.0f} MB; objects built in {written['build_s']:.1f} s, "
              f"write_run {written['write_s']:.1f} s, writer peak RSS {written['peak_rss_mb']:,.0f} MB")
        for label, extra in (("rageval info RUN", []), ("rageval info RUN --json", ["--json"])):
            cpu, wall = timed_command(["info", str(run_path), *extra])
            print(f"  {label:<26} CPU {cpu:.2f} s, wall {wall:.2f} s")
        cache = bench_cache(cache_path, args.labels)
        print(f"LLM cache: {args.labels:,} rows, {cache['file_mb']:,.0f} MB; filled in {cache['fill_s']:.1f} s "
              f"({args.labels / cache['fill_s']:,.0f} rows/s, 10,000 a transaction); opened in "
              f"{1000 * cache['open_s']:.1f} ms")
        print(f"  get_many: {cache['lookup_present_per_s']:,.0f} present keys/s, "
              f"{cache['lookup_absent_per_s']:,.0f} absent keys/s; CachedGenerator.generate on cached prompts "
              f"(hashing included): {cache['cached_generate_per_s']:,.0f} prompts/s")
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
