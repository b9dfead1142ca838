"""``rageval`` commands on the shipped data: the corpus, its BM25 index, ``erag`` on an NQ-open slice, the
retriever comparison, the rerankers, sub-query retrieval, the demo runs, the cost report and docs/results.md.

Your own data goes through ``rageval evaluate`` (:mod:`rageval.cli.evaluate`) instead.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import time
from pathlib import Path

from rageval import __version__
from rageval.cli.common import CORPUS_NOTE, MEASURE_SYNTAX, add_server_arguments, stage_progress
from rageval.cli.common import bm25_index as _bm25_index
from rageval.cli.common import load_corpus as _load_corpus
from rageval.cli.common import progress_bar as _progress_bar
from rageval.errors import RagevalError
from rageval.generation.factory import DEFAULT_MODEL, ModelSettings, load_generator
from rageval.paths import DATA_DIR, REPO_ROOT, RUNS_DIR, not_writable_folder, user_runs_dir


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
    path = evaluate(config, shipped=ShippedData(_load_corpus(args.data_dir)), out=Path(args.out),
                    command="rageval " + " ".join(sys.argv[1:]), progress=stage_progress())
    print(f"wrote {path}")
    from rageval.cli.runs import print_summary

    print_summary(path)
    return 0


def cmd_build_corpus(args: argparse.Namespace) -> int:
    corpus = _load_corpus(args.data_dir)
    counts: dict[str, int] = {}
    for passage in corpus.passages:
        counts[passage.source] = counts.get(passage.source, 0) + 1
    for source, count in sorted(counts.items()):
        print(f"{source:>12}  {count:6,d}")
    if args.out:
        from rageval.corpus import write_corpus

        write_corpus(corpus, args.out)
        print(f"wrote {args.out}")
    return 0


def cmd_build_index(args: argparse.Namespace) -> int:
    _bm25_index(_load_corpus(args.data_dir))
    return 0


def cmd_eval_retrieval(args: argparse.Namespace) -> int:
    from rageval.retrieval import evaluate as ev
    from rageval.store import write_run

    systems = ev.parse_systems(args.systems)
    measures = ev.parse_retrieval_measures(args.measures or ",".join(ev.RETRIEVAL_MEASURES))
    started = time.perf_counter()
    if args.out_dir and not_writable_folder(args.out_dir):
        raise RagevalError(f"--out-dir {args.out_dir}: {not_writable_folder(args.out_dir)}")
    if args.queries or args.corpus:  # your own questions, corpus and qrels
        from rageval.pipeline.sources import load_retrieval_inputs

        dataset, queries, passages, fingerprint = load_retrieval_inputs(args.queries, args.corpus, args.qrels,
                                                                        args.num_queries)
        slice_note, notes = f"the first {len(queries)} queries of {args.queries}", f"Corpus: {args.corpus}"
        out_dir = args.out_dir or user_runs_dir() / "retrieval"
    else:
        from rageval.corpus import corpus_fingerprint

        corpus = _load_corpus(args.data_dir)
        dataset = args.dataset
        queries = ev.load_queries(args.dataset, corpus, args.num_queries, args.data_dir)
        passages = {p.passage_id: p for p in corpus.passages}
        fingerprint = corpus_fingerprint(corpus)  # (the passages' fingerprint: one index cache per corpus)
        slice_note, notes = f"the first {len(queries)} {args.dataset} queries (file order)", CORPUS_NOTE
        out_dir = args.out_dir or RUNS_DIR / "retrieval"
    from rageval.retrieval.retrievers import Retrievers

    retrievers = Retrievers(passages.values(), fingerprint, batch_size=args.batch_size)
    reranker = None
    if "bm25+rerank" in systems:
        from rageval.retrieval.rerank import CrossEncoderReranker

        reranker = CrossEncoderReranker.load(args.reranker or ev.latest_nq_reranker_dir())
    bar = _progress_bar("bm25+rerank: queries reranked", len(queries))[0] if reranker else None
    try:
        results = ev.run_systems(systems, queries, args.k, retrievers=retrievers, reranker=reranker,
                                 passages=passages, rerank_depth=args.rerank_depth,
                                 progress=lambda message: print(message, file=sys.stderr),
                                 on_reranked=bar.update if bar else None)
    finally:
        if bar is not None:
            bar.close()
    settings = {
        "dataset_slice": slice_note, "k": args.k,
        "corpus": {"passages": len(passages), "fingerprint": fingerprint[:16]}, "notes": notes,
        "created_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "rageval_version": __version__, "command": "rageval " + " ".join(sys.argv[1:]),
    }
    per_query = {}
    for system, result in results.items():
        per_query[system] = ev.compute_retrieval_measures(result.rankings, queries, measures)
        run = ev.build_retrieval_run(dataset, result, queries, passages, per_query[system], settings,
                                     stored_depth=args.stored_depth)
        print(f"wrote {write_run(run, out_dir / ev.run_file_name(dataset, system))}")
    print(f"{dataset}: {len(queries)} queries, {len(passages):,} passages, top {args.k} "
          f"({time.perf_counter() - started:.0f} s)")
    print(ev.summarize(per_query).round(3).to_string())
    return 0


def cmd_train_reranker(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from rageval.corpus import corpus_fingerprint
    from rageval.measures import aggregate_measures, compute_measures
    from rageval.retrieval import rerank
    from rageval.retrieval.bm25 import BM25Retriever

    corpus = _load_corpus(args.data_dir)
    config = rerank.NqRerankerConfig(num_queries=args.num_queries, negatives_per_query=args.negatives,
                                     epochs=args.epochs, lr=args.lr, batch_size=args.batch_size,
                                     trainable_layers=None if args.trainable_layers < 0 else args.trainable_layers,
                                     seed=args.seed)
    bm25 = BM25Retriever(_bm25_index(corpus))
    directory = rerank.nq_reranker_dir(config, corpus_fingerprint(corpus))
    if (directory / rerank.CONFIG_NAME).is_file() and not args.retrain:
        started = time.perf_counter()
        reranker = rerank.CrossEncoderReranker.load(directory)
        print(f"loaded {directory} ({time.perf_counter() - started:.1f} s)")
    else:
        with tqdm(desc="training steps", unit="step", file=sys.stderr, dynamic_ncols=True) as bar:
            def update(done: int, total: int) -> None:
                bar.total = total
                bar.update(done - bar.n)

            reranker, log = rerank.train_nq_reranker(corpus, bm25, config, update)
        reranker.save(directory)
        size = sum(f.stat().st_size for f in directory.iterdir()) / 2**20
        print(f"trained {reranker.model_id}: {log.examples} pairs, {log.steps} steps, {log.seconds:.0f} s; "
              f"mean loss first 10 steps {sum(log.losses[:10]) / len(log.losses[:10]):.3f}, last 10 "
              f"{sum(log.losses[-10:]) / len(log.losses[-10:]):.3f}; saved {directory} ({size:.0f} MiB)")
    if args.eval_queries:
        if args.eval_offset + args.eval_queries > rerank.EVAL_QUERIES:
            raise RagevalError(f"evaluation queries must come from the first {rerank.EVAL_QUERIES} (held out)")
        queries = list(corpus.nq_queries[args.eval_offset:args.eval_offset + args.eval_queries])
        passages = {p.passage_id: p for p in corpus.passages}
        qrels = {q.query_id: dict.fromkeys(q.gold_passage_ids, 1) for q in queries}
        systems = {"bm25": bm25.batch_search(queries, 10)}
        started = time.perf_counter()
        with tqdm(total=len(queries), desc="reranking", unit="query", file=sys.stderr, dynamic_ncols=True) as bar:
            def advance(done: int, _total: int) -> None:
                bar.update(done - bar.n)

            systems[f"bm25 top-{args.first_k} -> rerank"] = rerank.two_stage(
                bm25, reranker, queries, passages, args.first_k, 10, advance)
        seconds = time.perf_counter() - started
        measures = ["R@1", "R@5", "R@10", "nDCG@10", "Hit@1", "Hit@10"]
        rows = {name: aggregate_measures(compute_measures(measures, {q: list(r.passage_ids) for q, r in run.items()},
                                                          qrels)).set_index("measure")["value"]
                for name, run in systems.items()}
        import pandas as pd

        print(f"NQ-open queries {args.eval_offset}..{args.eval_offset + len(queries) - 1} (held out), "
              f"reranking {seconds:.0f} s ({seconds / len(queries):.2f} s/query)")
        print(pd.DataFrame(rows).T[measures].round(3).to_string())
    return 0


def cmd_subquery_retrieval(args: argparse.Namespace) -> int:
    """Sub-query generation (the LLM) -> BM25 per sub-query -> fusion, vs BM25 on the question and MAX."""
    import json

    from rageval.generation.cache import CachedGenerator, LLMCache
    from rageval.retrieval.subqueries import evaluate_subquery_retrieval, parse_fusion_methods

    methods = parse_fusion_methods(args.fusion)
    started = time.perf_counter()
    if args.queries or args.corpus:
        from rageval.pipeline.sources import load_retrieval_inputs

        described, queries, passages, fingerprint = load_retrieval_inputs(args.queries, args.corpus, args.qrels,
                                                                          args.num_queries)
        described = f"{described}: first {len(queries)} queries"
    else:
        from rageval.corpus import corpus_fingerprint

        corpus = _load_corpus(args.data_dir)
        queries = list(corpus.nq_queries[:args.num_queries])
        passages, fingerprint = {p.passage_id: p for p in corpus.passages}, corpus_fingerprint(corpus)
        described = f"NQ-open queries 0..{len(queries) - 1}"
    if not queries:
        raise RagevalError(f"--num-queries {args.num_queries}: no queries selected")
    from rageval.retrieval.retrievers import Retrievers

    retriever = Retrievers(passages.values(), fingerprint).bm25
    cache = LLMCache(args.cache) if args.cache else LLMCache()
    generator = CachedGenerator(load_generator(ModelSettings(model=args.model, batch_size=args.batch_size)), cache)
    reranker = None
    if "rerank" in methods:
        from rageval.retrieval.evaluate import latest_nq_reranker_dir
        from rageval.retrieval.rerank import CrossEncoderReranker

        reranker = CrossEncoderReranker.load(args.reranker or latest_nq_reranker_dir())
    result = evaluate_subquery_retrieval(queries, retriever, generator, methods, args.k, passages=passages,
                                         reranker=reranker, max_new_tokens=args.max_new_tokens)
    print(f"{described}, BM25 top-{args.k} per query, {result.mean_subqueries:.2f} sub-queries/question "
          f"by {generator.model_id} ({result.generation_s:.1f} s; cache hits {generator.hits}, misses "
          f"{generator.misses}); total {time.perf_counter() - started:.1f} s")
    print(result.table.round(3).to_string())
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({
            "num_queries": len(queries), "k": args.k, "model_id": generator.model_id,
            "table": {name: {m: float(v) for m, v in row.items()} for name, row in result.table.iterrows()},
            "subqueries": {q.query_id: subs for q, subs in zip(queries, result.subqueries)}}, indent=1))
        print(f"wrote {args.out}")
    return 0


def cmd_demo_runs(args: argparse.Namespace) -> int:
    from rageval.pipeline.demo import build_demo_runs, load_demo_runs

    all_runs = load_demo_runs(args.plans)
    runs = all_runs
    if args.only:
        wanted = args.only.split(",")
        unknown = sorted(set(wanted) - {r.name for r in all_runs})
        if unknown:
            raise RagevalError(f"--only: unknown run(s) {', '.join(unknown)}; known: "
                               f"{', '.join(r.name for r in all_runs)}")
        runs = tuple(r for r in all_runs if r.name in wanted)
    started = time.perf_counter()
    if args.correlations_only:
        from rageval.pipeline.evaluate import store_correlations

        for demo in runs:
            path = args.out_dir / demo.file_name
            if not path.is_file():
                raise RagevalError(f"{path}: no such run; build it first (rageval demo-runs --only {demo.name})")
            added = store_correlations(path, command="rageval " + " ".join(sys.argv[1:]))
            print(f"{path}: " + (f"{added} correlations added" if added else "has its correlations (or no E2E "
                                                                             "scores to correlate with)"))
        print(f"done in {time.perf_counter() - started:.0f} s")
        return 0
    paths = build_demo_runs(args.out_dir, runs, scale=args.scale, dtype=args.dtype or None,
                            command="rageval " + " ".join(sys.argv[1:]))
    print(f"built {len(paths)} runs in {time.perf_counter() - started:.0f} s:")
    for path in paths:
        print(f"  {path} ({path.stat().st_size / 1e6:.1f} MB)")
    return 0


def cmd_cost_report(args: argparse.Namespace) -> int:
    import json

    import torch

    from rageval.erag.cost import CONFIGURATIONS, cost_prompts, measure_configuration
    from rageval.generation.gemma import gemma_model_id

    erag_prompts, e2e_prompts, described = cost_prompts(args.run, args.num_queries, args.k)
    if args.run.resolve().is_relative_to(REPO_ROOT):
        described["run"] = str(args.run.resolve().relative_to(REPO_ROOT))
    measurements = []
    for configuration in CONFIGURATIONS:
        result = measure_configuration(configuration, erag_prompts, e2e_prompts, dtype=args.dtype or None,
                                       threads=args.threads, answers=described["answers"])
        print(result, file=sys.stderr)
        measurements.append(result.__dict__)
    report = described | {"model": f"{gemma_model_id()} [{args.dtype}]" if args.dtype else gemma_model_id(),
                          "device": measurements[0]["device"], "threads": args.threads or torch.get_num_threads(),
                          "measurements": measurements,
                          "command": "rageval " + " ".join(sys.argv[1:])}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


def cmd_results(args: argparse.Namespace) -> int:
    from rageval.results_doc import write_results

    path = write_results(args.runs_dir, args.out, args.cost)
    print(f"wrote {path}")
    return 0


def add_parsers(sub) -> None:
    corpus = sub.add_parser("build-corpus", help="build the deduplicated corpus and print its sizes")
    corpus.add_argument("--data-dir", type=Path, default=DATA_DIR)
    corpus.add_argument("--out", type=Path, help="also write the corpus as gzip JSON lines")
    corpus.set_defaults(handler=cmd_build_corpus)

    index = sub.add_parser("build-index", help="build the BM25 index over the corpus (cached)")
    index.add_argument("--data-dir", type=Path, default=DATA_DIR)
    index.set_defaults(handler=cmd_build_index)

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

    retrieval = sub.add_parser("eval-retrieval", help="Recall/nDCG/MRR of retrieval systems against gold "
                                                      "passages; one run file per system")
    retrieval.add_argument("--dataset", choices=("nq_open", "hotpotqa"), default="nq_open")
    retrieval.add_argument("--systems", default="bm25,dense,hybrid,hybrid-rrf,bm25+rerank",
                           help="comma-separated: bm25, dense, hybrid (CombSUM), hybrid-rrf, bm25+rerank")
    retrieval.add_argument("--k", type=int, default=100, help="depth retrieved and evaluated")
    retrieval.add_argument("--num-queries", type=int, help="the first N queries (default: all)")
    retrieval.add_argument("--rerank-depth", type=int, default=20, help="BM25 passages re-scored by the reranker")
    retrieval.add_argument("--reranker", type=Path,
                           help="a saved cross-encoder folder (default: the latest `rageval train-reranker` model)")
    retrieval.add_argument("--batch-size", type=int, default=64, help="texts per embedding batch")
    retrieval.add_argument("--stored-depth", type=int, default=10, help="ranks kept in the run files")
    retrieval.add_argument("--measures", help="the measures against the gold passages (default: R@1, R@5, R@10, "
                                              "R@20, R@100, nDCG@10, RR@10), in " + MEASURE_SYNTAX)
    retrieval.add_argument("--data-dir", type=Path, default=DATA_DIR)
    retrieval.add_argument("--queries", type=Path, help="your questions (JSONL or BEIR queries.jsonl) instead of "
                                                        "--dataset; gold passages from gold_passage_ids or --qrels")
    retrieval.add_argument("--corpus", type=Path, help="your passages (JSONL or BEIR corpus.jsonl), with --queries")
    retrieval.add_argument("--qrels", type=Path, help="TREC qrels or BEIR qrels TSV (positives = gold passages)")
    retrieval.add_argument("--out-dir", type=Path,
                           help="folder of the run files, one per system (default: data/runs/retrieval for the "
                                "shipped datasets, <user runs folder>/retrieval for yours)")
    retrieval.set_defaults(handler=cmd_eval_retrieval)

    reranker = sub.add_parser("train-reranker", help="train (once, cached) the MiniLM cross-encoder NQ reranker; "
                                                     "optionally compare BM25 with BM25 -> rerank on held-out queries")
    # The defaults of rerank.NqRerankerConfig, written out so that `--help` imports nothing (a test compares them).
    reranker.add_argument("--num-queries", type=int, default=1900, help="training questions (from NQ query 1000 on)")
    reranker.add_argument("--negatives", type=int, default=3, help="BM25 top-20 hard negatives per question")
    reranker.add_argument("--epochs", type=int, default=1)
    reranker.add_argument("--lr", type=float, default=5e-5)
    reranker.add_argument("--batch-size", type=int, default=16)
    reranker.add_argument("--trainable-layers", type=int, default=-1,
                          help="top encoder layers fine-tuned; -1: all (the default)")
    reranker.add_argument("--seed", type=int, default=0)
    reranker.add_argument("--retrain", action="store_true", help="train even if the model is cached")
    reranker.add_argument("--eval-queries", type=int, default=0, help="held-out NQ queries to evaluate (0: none)")
    reranker.add_argument("--eval-offset", type=int, default=0, help="first evaluation query (< 1000)")
    reranker.add_argument("--first-k", type=int, default=50, help="BM25 candidates re-scored per query")
    reranker.add_argument("--data-dir", type=Path, default=DATA_DIR)
    reranker.set_defaults(handler=cmd_train_reranker)

    subq = sub.add_parser("subquery-retrieval", help="LLM sub-queries -> BM25 per sub-query -> fusion; "
                                                     "Recall@10/nDCG@10 vs BM25 and the MAX oracle")
    subq.add_argument("--num-queries", type=int, default=20, help="the first N questions")
    subq.add_argument("--queries", type=Path, help="your questions (JSONL or BEIR) instead of NQ-open; gold passages "
                                                   "from gold_passage_ids or --qrels")
    subq.add_argument("--corpus", type=Path, help="your passages (JSONL or BEIR corpus.jsonl), with --queries")
    subq.add_argument("--qrels", type=Path, help="TREC qrels or BEIR qrels TSV (positives = gold passages)")
    subq.add_argument("--k", type=int, default=10, help="passages retrieved per (sub-)query and kept after fusion")
    subq.add_argument("--fusion", default="combsum,combmnz,rrf,sort,pm2",
                      help="comma-separated: combsum, combmnz, rrf, sort, pm2")
    subq.add_argument("--model", default=DEFAULT_MODEL, help=f"'{DEFAULT_MODEL}' or a local Hugging Face model path")
    subq.add_argument("--batch-size", type=int, default=8)
    subq.add_argument("--max-new-tokens", type=int, default=48)
    subq.add_argument("--cache", type=Path, help="LLM-call cache file (default: the user cache)")
    subq.add_argument("--data-dir", type=Path, default=DATA_DIR)
    subq.add_argument("--reranker", type=Path,
                      help="cross-encoder folder for --fusion rerank "
                           "(default: the latest `rageval train-reranker` model)")
    subq.add_argument("--out", type=Path, help="also write the table (and the sub-queries) as JSON")
    subq.set_defaults(handler=cmd_subquery_retrieval)

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
