"""``rageval eval-retrieval``, ``train-reranker`` and ``subquery-retrieval``: retrieval systems scored against gold
passages, on the shipped NQ-open / HotpotQA questions over the rageval corpus or on your own files. The work is in
:mod:`rageval.retrieval.evaluate`, :mod:`rageval.retrieval.rerank` and :mod:`rageval.retrieval.subqueries`."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from rageval.cli.common import MEASURE_SYNTAX, bm25_index, load_corpus
from rageval.errors import RagevalError
from rageval.generation.factory import DEFAULT_MODEL, ModelSettings
from rageval.paths import DATA_DIR, RUNS_DIR, not_writable_folder, user_runs_dir

if TYPE_CHECKING:
    from tqdm import tqdm as Tqdm


class CountingBar:
    """A tqdm bar on stderr (rate and ETA), drawn from the first ``(done, total)`` call on; ``close()`` ends it."""

    def __init__(self, description: str, unit: str):
        self.description, self.unit = description, unit
        self.bar: Tqdm | None = None

    def __call__(self, done: int, total: int) -> None:
        if self.bar is None:
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc=self.description, unit=self.unit, file=sys.stderr, dynamic_ncols=True)
        self.bar.total = total
        self.bar.update(done - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def retrieval_inputs(args: argparse.Namespace, default_dataset: str = "nq_open"):
    """Your ``--queries``/``--corpus``/``--qrels`` files, else the shipped ``--dataset`` over the rageval corpus:
    a :class:`~rageval.retrieval.evaluate.RetrievalInputs` of the first ``--num-queries`` questions."""
    from rageval.retrieval.evaluate import RetrievalInputs, shipped_retrieval_inputs

    if args.queries or args.corpus:
        from rageval.pipeline.sources import load_retrieval_inputs

        dataset, queries, passages, fingerprint = load_retrieval_inputs(args.queries, args.corpus, args.qrels,
                                                                        args.num_queries)
        return RetrievalInputs(dataset, queries, passages, fingerprint,
                               f"the first {len(queries)} queries of {args.queries}", f"Corpus: {args.corpus}")
    return shipped_retrieval_inputs(getattr(args, "dataset", default_dataset), load_corpus(args.data_dir),
                                    args.num_queries, args.data_dir)


def command_line() -> str:
    return "rageval " + " ".join(sys.argv[1:])


def cmd_eval_retrieval(args: argparse.Namespace) -> int:
    from rageval.retrieval import evaluate as ev

    systems = ev.parse_systems(args.systems)
    measures = ev.parse_retrieval_measures(args.measures or ",".join(ev.RETRIEVAL_MEASURES))
    started = time.perf_counter()
    if args.out_dir and not_writable_folder(args.out_dir):
        raise RagevalError(f"--out-dir {args.out_dir}: {not_writable_folder(args.out_dir)}")
    inputs = retrieval_inputs(args)
    out_dir = args.out_dir or (user_runs_dir() if args.queries or args.corpus else RUNS_DIR) / "retrieval"
    bar = CountingBar("bm25+rerank: queries reranked", "prompt")
    try:
        result = ev.evaluate_retrieval(inputs, systems, args.k, out_dir, measures=measures,
                                       reranker_dir=args.reranker, rerank_depth=args.rerank_depth,
                                       batch_size=args.batch_size, stored_depth=args.stored_depth,
                                       command=command_line(), progress=lambda message: print(message, file=sys.stderr),
                                       on_reranked=bar, wrote=lambda path: print(f"wrote {path}"))
    finally:
        bar.close()
    print(f"{inputs.dataset}: {len(inputs.queries)} queries, {len(inputs.passages):,} passages, top {args.k} "
          f"({time.perf_counter() - started:.0f} s)")
    print(result.summary.round(3).to_string())
    return 0


def cmd_train_reranker(args: argparse.Namespace) -> int:
    from rageval.retrieval import rerank

    corpus = load_corpus(args.data_dir)
    config = rerank.NqRerankerConfig(num_queries=args.num_queries, negatives_per_query=args.negatives,
                                     epochs=args.epochs, lr=args.lr, batch_size=args.batch_size,
                                     trainable_layers=None if args.trainable_layers < 0 else args.trainable_layers,
                                     seed=args.seed)
    steps, reranked = CountingBar("training steps", "step"), CountingBar("reranking", "query")
    try:
        comparison = rerank.train_reranker(corpus, bm25_index(corpus), config, retrain=args.retrain,
                                           eval_queries=args.eval_queries, eval_offset=args.eval_offset,
                                           first_k=args.first_k, log=print, on_step=steps, on_reranked=reranked)
    finally:
        steps.close()
        reranked.close()
    if comparison is not None:
        print(f"NQ-open queries {comparison.offset}..{comparison.offset + comparison.num_queries - 1} (held out), "
              f"reranking {comparison.seconds:.0f} s ({comparison.seconds / comparison.num_queries:.2f} s/query)")
        print(comparison.table.round(3).to_string())
    return 0


def cmd_subquery_retrieval(args: argparse.Namespace) -> int:
    """Sub-query generation (the LLM) -> BM25 per sub-query -> fusion, vs BM25 on the question and MAX."""
    from rageval.retrieval.subqueries import parse_fusion_methods, subquery_retrieval

    methods = parse_fusion_methods(args.fusion)
    started = time.perf_counter()
    inputs = retrieval_inputs(args)
    queries = inputs.queries
    described = (f"{inputs.dataset}: first {len(queries)} queries" if args.queries or args.corpus
                 else f"NQ-open queries 0..{len(queries) - 1}")
    if not queries:
        raise RagevalError(f"--num-queries {args.num_queries}: no queries selected")
    report = subquery_retrieval(queries, inputs.passages, inputs.fingerprint, methods, args.k,
                                model=ModelSettings(model=args.model, batch_size=args.batch_size), cache=args.cache,
                                reranker_dir=args.reranker, max_new_tokens=args.max_new_tokens, out=args.out)
    result = report.result
    print(f"{described}, BM25 top-{args.k} per query, {result.mean_subqueries:.2f} sub-queries/question "
          f"by {report.model_id} ({result.generation_s:.1f} s; cache hits {report.cache_hits}, misses "
          f"{report.cache_misses}); total {time.perf_counter() - started:.1f} s")
    print(result.table.round(3).to_string())
    if args.out:
        print(f"wrote {args.out}")
    return 0


def add_parsers(sub) -> None:
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
