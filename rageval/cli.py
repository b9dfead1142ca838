"""The ``rageval`` command line (also ``python -m rageval``).

    rageval build-corpus            build the deduplicated passage corpus from data/ and print its sizes
    rageval build-index             build (once, cached) the BM25 Lucene index over that corpus
    rageval erag --num-queries 100  BM25 top-k -> RAG LLM per passage -> eRAG labels + E2E -> a run file
    rageval info RUN                what a run file holds and its aggregate measures
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import time
from pathlib import Path

from rageval import __version__
from rageval.errors import RagevalError
from rageval.paths import DATA_DIR, RUNS_DIR

DEFAULT_MODEL = "gemma-3-270m"

CORPUS_NOTE = (
    "Corpus: ~16.5k deduplicated real Wikipedia passages (NQ gold passages, HotpotQA paragraphs, HAGRID quotes, 2Wiki and "
    "wiki-18 samples). Only the NQ gold passages are on-topic for NQ, so retrieval here is easier than over "
    "full Wikipedia.")


def _progress_bar(description: str, total: int):
    """A tqdm bar (with rate and ETA) on stderr, and the (done, total) callback that advances it."""
    from tqdm import tqdm

    bar = tqdm(total=total, desc=description, unit="prompt", file=sys.stderr, dynamic_ncols=True)

    def update(done: int, _total: int) -> None:
        bar.update(done - bar.n)

    return bar, update


def _load_corpus(data_dir: Path):
    from rageval.corpus import build_corpus

    started = time.perf_counter()
    corpus = build_corpus(data_dir)
    print(f"corpus: {len(corpus.passages):,} passages, {len(corpus.nq_queries):,} NQ-open queries "
          f"({time.perf_counter() - started:.1f} s)", file=sys.stderr)
    return corpus


def _bm25_index(corpus):
    from rageval.corpus import corpus_fingerprint
    from rageval.retrieval.bm25 import load_or_build_bm25_index

    started = time.perf_counter()
    index_dir = load_or_build_bm25_index(corpus.passages, corpus_fingerprint(corpus))
    print(f"BM25 index: {index_dir} ({time.perf_counter() - started:.1f} s)", file=sys.stderr)
    return index_dir


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


def load_generator(model: str, batch_size: int):
    """The RAG LLM named by ``model``: the packaged Gemma-3-270M by default, else any local HF model path/id."""
    if model == DEFAULT_MODEL:
        from rageval.generation.gemma import load_gemma_generator

        return load_gemma_generator(batch_size=batch_size)
    from rageval.generation.transformers_backend import TransformersGenerator

    return TransformersGenerator(model, batch_size=batch_size)


def cmd_erag(args: argparse.Namespace) -> int:
    from rageval import erag
    from rageval.generation.base import DecodingSettings
    from rageval.generation.cache import CachedGenerator, LLMCache
    from rageval.prompts import QA_FEW_SHOT
    from rageval.retrieval.bm25 import BM25Retriever
    from rageval.store import Run, write_run

    started = time.perf_counter()
    corpus = _load_corpus(args.data_dir)
    queries = list(corpus.nq_queries[args.offset:args.offset + args.num_queries])
    if not queries:
        raise RagevalError(f"no NQ-open queries in the slice offset={args.offset}, n={args.num_queries}")
    retriever = BM25Retriever(_bm25_index(corpus))
    rankings = retriever.batch_search(queries, args.k)
    passages = {p.passage_id: p for p in corpus.passages}

    settings = erag.EragSettings(k=args.k, metric=args.metric,
                                 decoding=DecodingSettings(max_new_tokens=args.max_new_tokens),
                                 batch_size=args.batch_size,
                                 cutoffs=tuple(c for c in (1, 5, 10, 20) if c <= args.k))
    cache = LLMCache(args.cache) if args.cache else LLMCache()
    generator = CachedGenerator(load_generator(args.model, args.batch_size), cache)

    bar, update = _progress_bar("eRAG: one passage per prompt", len(queries) * args.k)
    with bar:
        erag_started = time.perf_counter()
        doc_outputs, erag_labels = erag.compute_erag_labels(queries, rankings, passages, generator, settings, update)
        erag_seconds = time.perf_counter() - erag_started
    bar, update = _progress_bar(f"E2E: top-{args.k} in one prompt", len(queries))
    with bar:
        e2e_started = time.perf_counter()
        e2e_outputs = erag.compute_e2e(queries, rankings, passages, generator, settings, update)
        e2e_seconds = time.perf_counter() - e2e_started

    labels = erag_labels + erag.compute_reference_labels(queries, rankings, passages, args.k)
    measure_values = erag.compute_measure_values(labels, rankings, settings.cutoffs)
    used_ids = {pid for r in rankings.values() for pid in r.passage_ids} | {
        pid for q in queries for pid in q.gold_passage_ids}
    run_settings = {
        "dataset": "nq_open", "dataset_slice": f"queries {args.offset}..{args.offset + len(queries) - 1} "
                                               "of the NQ-open test questions (file order)",
        "num_queries": len(queries), "retriever": "bm25 (pyserini Lucene, k1=0.9, b=0.4)", "k": args.k,
        "model_id": generator.model_id, "prompt": QA_FEW_SHOT.identifier,
        "decoding": {"max_new_tokens": settings.decoding.max_new_tokens, "temperature": settings.decoding.temperature,
                     "stop": list(settings.decoding.stop)},
        "label_metric": args.metric, "label_methods": sorted({x.method for x in labels}),
        "corpus": {"passages": len(corpus.passages)}, "notes": CORPUS_NOTE,
        "llm_calls": {"cache_hits": generator.hits, "cache_misses": generator.misses},
        "timing_s": {"erag": round(erag_seconds, 1), "e2e": round(e2e_seconds, 1),
                     "total": round(time.perf_counter() - started, 1)},
        "created_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "rageval_version": __version__, "command": "rageval " + " ".join(sys.argv[1:]),
    }
    run = Run(settings=run_settings, queries=queries,
              passages=[passages[pid] for pid in sorted(used_ids) if pid in passages],
              rankings=[rankings[q.query_id] for q in queries], doc_outputs=doc_outputs, labels=labels,
              e2e_outputs=e2e_outputs, measure_values=measure_values)
    path = write_run(run, args.out)
    print(f"wrote {path}")
    _print_summary(path)
    return 0


def _print_summary(path: Path) -> None:
    from rageval.store import RunReader

    with RunReader(path) as reader:
        settings = reader.settings()
        print(f"{settings.get('dataset')} | {settings.get('retriever')} | k={settings.get('k')} | "
              f"{settings.get('model_id')} | {settings.get('num_queries')} queries")
        labels = reader.labels()
        for method, group in labels.groupby("method"):
            print(f"  share of labels = 1 ({method}): {group['value'].mean():.3f} over {len(group)} labels")
        queries = reader.query_table()
        print(f"  E2E {settings.get('label_metric')}: {queries['e2e_score'].mean():.3f} over "
              f"{queries['e2e_score'].notna().sum()} queries")
        table = reader.measure_table()
        if not table.empty:
            wide = table.groupby(["method", "measure"])["value"].mean().unstack("measure")
            print(wide.round(3).to_string())


def cmd_info(args: argparse.Namespace) -> int:
    _print_summary(args.run)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rageval", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"rageval {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

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
    run.add_argument("--batch-size", type=int, default=8)
    run.add_argument("--max-new-tokens", type=int, default=16)
    run.add_argument("--cache", type=Path, help="LLM-call cache file (default: the user cache)")
    run.add_argument("--out", type=Path, default=RUNS_DIR / "nq_open-bm25-gemma3_270m-erag.sqlite")
    run.set_defaults(handler=cmd_erag)

    info = sub.add_parser("info", help="print what a run file holds")
    info.add_argument("run", type=Path)
    info.set_defaults(handler=cmd_info)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except RagevalError as error:
        print(f"rageval: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
