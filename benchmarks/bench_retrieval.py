"""Index build time and queries per second of rageval's retrievers over the whole corpus, in one process.

    python benchmarks/bench_retrieval.py                       # 500 NQ-open questions, k = 100
    python benchmarks/bench_retrieval.py --queries 200 --rerank-queries 20

Systems: BM25 (Lucene through pyserini: a fresh index is built into a temporary folder, then ``batch_search``
with 2 threads and one-at-a-time ``search``), dense all-MiniLM-L6-v2 with a flat (exact) and an HNSW faiss
index (``batch_search`` including query encoding, then search alone on pre-encoded queries), and BM25 top-20
re-scored by the cross-encoder when ``rageval train-reranker`` has cached one (or ``--reranker DIR`` is
given; the benchmark never trains one). Passage embeddings come from the cache (``load_or_encode_passages``); on a cold
cache they are encoded once and the time is printed. One timing each, no warm-up; on a shared machine the
numbers move by tens of percent between runs: compare the ratios, not the absolute values.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from rageval.corpus import build_corpus, corpus_fingerprint
from rageval.retrieval.evaluate import nq_open_queries, rerank_head


def timed(function, *args, **kwargs):
    started = time.perf_counter()
    result = function(*args, **kwargs)
    return result, time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=500, help="NQ-open questions searched")
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--single", type=int, default=100, help="questions searched one at a time")
    parser.add_argument("--rerank-queries", type=int, default=50)
    parser.add_argument("--rerank-depth", type=int, default=20)
    parser.add_argument("--reranker", type=Path, help="a saved cross-encoder folder")
    parser.add_argument("--passages", type=int, help="only the corpus' first N passages (a smoke run; default all)")
    args = parser.parse_args(argv)

    corpus, corpus_s = timed(build_corpus)
    if args.passages:
        corpus = dataclasses.replace(corpus, passages=corpus.passages[:args.passages])
    queries = nq_open_queries(corpus, args.queries)
    print(f"corpus: {len(corpus):,} passages ({corpus_s:.1f} s); {len(queries)} NQ-open questions, k={args.k}")
    rows = []  # (system, index build seconds or None, what was timed, queries, seconds)

    from rageval.retrieval.bm25 import BM25Retriever, build_bm25_index
    from rageval.retrieval.jvm import ensure_jvm

    _, jvm_s = timed(ensure_jvm)
    with tempfile.TemporaryDirectory() as folder:
        index_dir, build_s = timed(build_bm25_index, corpus.passages, Path(folder) / "bm25")
        with BM25Retriever(index_dir) as bm25:
            bm25_rankings, batch_s = timed(bm25.batch_search, queries, args.k)
            _, single_s = timed(lambda: [bm25.search(q.text, args.k) for q in queries[:args.single]])
            rows.append(("bm25", build_s, "batch_search, 2 threads", len(queries), batch_s))
            rows.append(("bm25", build_s, "search, one at a time", min(args.single, len(queries)), single_s))
    print(f"JVM start + pyserini import: {jvm_s:.1f} s")

    from rageval.retrieval.dense import DenseRetriever, MiniLMEncoder, load_or_encode_passages

    encoder, load_s = timed(MiniLMEncoder)
    embeddings, embed_s = timed(load_or_encode_passages, corpus.passages, corpus_fingerprint(corpus), encoder)
    print(f"MiniLM load: {load_s:.1f} s; passage embeddings (cache or encode): {embed_s:.1f} s")
    vectors, encode_s = timed(encoder.encode, [q.text for q in queries])
    ids = [q.query_id for q in queries]
    dense_rankings = {}
    for kind in ("flat", "hnsw"):
        dense, build_s = timed(DenseRetriever, embeddings, encoder, index=kind)
        _, batch_s = timed(dense.batch_search, queries, args.k)
        dense_rankings[kind], search_s = timed(dense.search_vectors, ids, vectors, args.k)
        rows.append((f"dense-{kind}", build_s, "batch_search (encode + search)", len(queries), batch_s))
        rows.append((f"dense-{kind}", build_s, "search only (pre-encoded)", len(queries), search_s))
    rows.append(("minilm", None, "query encoding only", len(queries), encode_s))
    agree = sum(dense_rankings["flat"][q].passage_ids[:10] == dense_rankings["hnsw"][q].passage_ids[:10]
                for q in ids) / len(ids)

    reranker = _load_reranker(args.reranker)
    if reranker is not None:
        subset = queries[:args.rerank_queries]
        passages = {p.passage_id: p for p in corpus.passages}
        _, rerank_s = timed(rerank_head, reranker, subset, bm25_rankings, passages, args.rerank_depth)
        rows.append((f"bm25+rerank@{args.rerank_depth}", None, "rerank only (BM25 time excluded)", len(subset),
                     rerank_s))

    bm25_qps = rows[0][3] / rows[0][4]
    print(f"\n{'system':<18} {'build s':>8}  {'timed':<34} {'queries':>7} {'seconds':>8} {'q/s':>9} {'vs bm25':>8}")
    for system, build_s, what, count, seconds in rows:
        qps = count / seconds
        build = "-" if build_s is None else f"{build_s:.2f}"
        print(f"{system:<18} {build:>8}  {what:<34} {count:7d} {seconds:8.2f} {qps:9.1f} {qps / bm25_qps:8.3f}")
    print(f"\nflat and HNSW top-10 lists identical for {agree:.3f} of the questions")
    if reranker is None:
        print("bm25+rerank: skipped (no trained reranker)")
    return 0


def _load_reranker(path: Path | None):
    from rageval.errors import RagevalError
    from rageval.retrieval.evaluate import latest_nq_reranker_dir
    from rageval.retrieval.rerank import CrossEncoderReranker

    try:
        return CrossEncoderReranker.load(path or latest_nq_reranker_dir())
    except RagevalError as error:
        print(f"bm25+rerank: {error}")
        return None


if __name__ == "__main__":
    sys.exit(main())
