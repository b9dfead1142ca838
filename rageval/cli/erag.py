"""``rageval erag``: eRAG labels and E2E answers for an NQ-open slice, an alias of ``rageval evaluate`` on the
shipped NQ-open dataset with BM25 (:mod:`rageval.cli.evaluate`): the config it builds goes through the one
pipeline."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rageval.cli.common import add_server_arguments, load_corpus, stage_progress
from rageval.generation.factory import DEFAULT_MODEL, ModelSettings
from rageval.paths import DATA_DIR, user_runs_dir


def cmd_erag(args: argparse.Namespace) -> int:
    """eRAG labels + E2E answers for an NQ-open slice: an alias of ``rageval evaluate`` on the shipped NQ-open
    dataset with BM25 (the config it builds goes through the one pipeline)."""
    from rageval.pipeline.config import EvaluateConfig
    from rageval.pipeline.run import evaluate
    from rageval.pipeline.sources import ShippedData

    cutoffs = sorted({c for c in (1, 5, 10, 20) if c <= args.k} | {args.k})
    config = EvaluateConfig(
        dataset="nq_open", retriever="bm25", offset=args.offset, num_queries=args.num_queries, k=str(args.k),
        methods="erag,e2e,baselines", metric=args.metric, label_metrics=args.metric, llm_relevance=False,
        measure_cutoffs=",".join(map(str, cutoffs)), max_new_tokens=args.max_new_tokens,
        em_early_stop=args.em_early_stop, cache=str(args.cache) if args.cache else None, out=str(args.out),
        rerank_check=True, model_settings=ModelSettings(
            model=args.model, backend=args.backend, base_url=args.base_url, api=args.api,
            api_key_env=args.api_key_env, batch_size=args.batch_size, balance=args.balance,
            max_requests_per_minute=args.max_requests_per_minute, max_tokens_per_minute=args.max_tokens_per_minute))
    path = evaluate(config, shipped=ShippedData(load_corpus(args.data_dir)), out=Path(args.out),
                    command="rageval " + " ".join(sys.argv[1:]), progress=stage_progress())
    print(f"wrote {path}")
    from rageval.cli.runs import print_summary

    print_summary(path)
    return 0


def add_parsers(sub) -> None:
    run = sub.add_parser("erag", help="eRAG labels + E2E answers for an NQ-open slice into a run file")
    run.add_argument("--data-dir", type=Path, default=DATA_DIR)
    run.add_argument("--num-queries", type=int, default=100)
    run.add_argument("--offset", type=int, default=0, help="first query of the slice (file order)")
    run.add_argument("--k", type=int, default=10, help="passages retrieved and labelled per query")
    run.add_argument("--metric", default="em", help="downstream metric E for labels and E2E: em or f1")
    run.add_argument("--model", default=DEFAULT_MODEL,
                     help=f"'{DEFAULT_MODEL}' (packaged GGUF) or a local Hugging Face model path")
    run.add_argument("--batch-size", type=int, default=8,
                     help="prompts per model batch (transformers) or concurrent requests (openai)")
    run.add_argument("--backend", choices=("transformers", "openai"), default="transformers",
                     help="run the model in process, or call an OpenAI-compatible server (vLLM, Ollama, "
                          "rageval serve-model); then --model is the served model name")
    add_server_arguments(run)
    run.add_argument("--api-key-env", metavar="VAR", help="environment variable holding the server's API key")
    run.add_argument("--api", choices=("completions", "chat"), default="completions",
                     help="/v1/completions (raw prompt) or /v1/chat/completions (--backend openai)")
    run.add_argument("--max-new-tokens", type=int, default=16)
    run.add_argument("--em-early-stop", action="store_true",
                     help="stop each eRAG answer as soon as its exact match is sure to be 0 (needs --metric em): "
                          "the same erag:em labels in fewer decode steps; stopped answers are stored marked "
                          "'[stopped early: ...]' (greedy rows after a shared prefix; transformers backend)")
    run.add_argument("--cache", type=Path, help="LLM-call cache file (default: the user cache)")
    run.add_argument("--out", type=Path, default=user_runs_dir() / "nq_open-bm25-gemma3_270m-erag.sqlite",
                     help="the run file (default: in the user runs folder, $RAGEVAL_RUNS_DIR)")
    run.set_defaults(handler=cmd_erag)
