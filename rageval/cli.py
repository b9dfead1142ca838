"""The ``rageval`` command line (also ``python -m rageval``).

    rageval build-corpus            build the deduplicated passage corpus from data/ and print its sizes
    rageval build-index             build (once, cached) the BM25 Lucene index over that corpus
    rageval erag --num-queries 100  BM25 top-k -> RAG LLM per passage -> eRAG labels + E2E -> a run file
    rageval info RUN                what a run file holds and its aggregate measures
    rageval eval-retrieval          BM25 / dense / hybrid / reranked retrieval vs gold passages
    rageval train-reranker          train (once, cached) the MiniLM cross-encoder NQ reranker
    rageval subquery-retrieval      LLM sub-queries -> BM25 each -> fused ranking, vs BM25 and MAX
    rageval train-nli               train (once, cached) the MiniLM NLI model; accuracy on held-out test splits
    rageval attribution             HAGRID attributed answers (G / RTG / GTR, gold answers) NLI-scored -> a run file
    rageval ium                     offline + online IUM with four agents and the baselines -> a run file
    rageval upload --name NAME ...  your own run (TREC files or JSONL with answers) -> a run file
    rageval rescore start RUN ...   label a run's passages again with another model (background job, resumable)
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import time
from pathlib import Path

from rageval import __version__
from rageval.errors import RagevalError
from rageval.paths import DATA_DIR, REPO_ROOT, RUNS_DIR

DEFAULT_MODEL = "gemma-3-270m"
DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"  # vLLM's and our test server's default port

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


def load_generator(model: str, batch_size: int, backend: str = "transformers", *,
                   base_url: str = DEFAULT_BASE_URL, api_key_env: str | None = None, api: str = "completions"):
    """The RAG LLM named by ``model``.

    ``backend="transformers"``: the packaged Gemma-3-270M by default, else any local HF model path/id, run in
    process. ``backend="openai"``: ``model`` is the name an OpenAI-compatible server at ``base_url`` serves
    (vLLM, Ollama, ``python -m rageval.generation.server``), ``batch_size`` requests at a time, with the API
    key read from the environment variable ``api_key_env`` when given.
    """
    if backend == "openai":
        import os

        from rageval.generation.openai_backend import OpenAIGenerator

        api_key = None
        if api_key_env:
            api_key = os.environ.get(api_key_env)
            if not api_key:
                raise RagevalError(f"--api-key-env {api_key_env}: that environment variable is not set or empty")
        return OpenAIGenerator(base_url, model, api=api, concurrency=batch_size, api_key=api_key)
    if backend != "transformers":
        raise RagevalError(f"backend {backend!r}: expected 'transformers' or 'openai'")
    if model == DEFAULT_MODEL:
        from rageval.generation.gemma import load_gemma_generator

        return load_gemma_generator(batch_size=batch_size)
    if _is_encoder_decoder(model):
        from rageval.generation.fid import FiDGenerator

        return FiDGenerator(model, batch_size=batch_size)  # eRAG and E2E then read passages with FiD
    from rageval.generation.transformers_backend import TransformersGenerator

    return TransformersGenerator(model, batch_size=batch_size)


def _is_encoder_decoder(model: str) -> bool:
    """Whether the local model folder ``model`` holds an encoder-decoder (T5-style) model."""
    import json

    config = Path(model) / "config.json"
    return config.is_file() and bool(json.loads(config.read_text()).get("is_encoder_decoder"))


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
                                 cutoffs=tuple(sorted({c for c in (1, 5, 10, 20) if c <= args.k} | {args.k})))
    cache = LLMCache(args.cache) if args.cache else LLMCache()
    generator = CachedGenerator(load_generator(args.model, args.batch_size, args.backend, base_url=args.base_url,
                                               api_key_env=args.api_key_env, api=args.api), cache)

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


def cmd_eval_retrieval(args: argparse.Namespace) -> int:
    from rageval.corpus import corpus_fingerprint
    from rageval.retrieval import evaluate as ev
    from rageval.store import write_run

    systems = ev.parse_systems(args.systems)
    started = time.perf_counter()
    corpus = _load_corpus(args.data_dir)
    queries = ev.load_queries(args.dataset, corpus, args.num_queries, args.data_dir)
    passages = {p.passage_id: p for p in corpus.passages}
    fingerprint = corpus_fingerprint(corpus)
    bm25 = dense = reranker = None
    if ev.NEEDS_BM25.intersection(systems):
        from rageval.retrieval.bm25 import BM25Retriever

        bm25 = BM25Retriever(_bm25_index(corpus))
    if ev.NEEDS_DENSE.intersection(systems):
        from rageval.retrieval.dense import load_dense_retriever

        dense = load_dense_retriever(corpus.passages, fingerprint, batch_size=args.batch_size)
    if "bm25+rerank" in systems:
        from rageval.retrieval.rerank import CrossEncoderReranker

        reranker = CrossEncoderReranker.load(args.reranker or ev.latest_nq_reranker_dir())
    bar = _progress_bar("bm25+rerank: queries reranked", len(queries))[0] if reranker else None
    try:
        results = ev.run_systems(systems, queries, args.k, bm25=bm25, dense=dense, reranker=reranker,
                                 passages=passages, rerank_depth=args.rerank_depth,
                                 progress=lambda message: print(message, file=sys.stderr),
                                 on_reranked=bar.update if bar else None)
    finally:
        if bar is not None:
            bar.close()
    settings = {
        "dataset_slice": f"the first {len(queries)} {args.dataset} queries (file order)", "k": args.k,
        "corpus": {"passages": len(corpus.passages), "fingerprint": fingerprint[:16]}, "notes": CORPUS_NOTE,
        "created_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "rageval_version": __version__, "command": "rageval " + " ".join(sys.argv[1:]),
    }
    per_query = {}
    for system, result in results.items():
        per_query[system] = ev.compute_retrieval_measures(result.rankings, queries)
        run = ev.build_retrieval_run(args.dataset, result, queries, passages, per_query[system], settings,
                                     stored_depth=args.stored_depth)
        print(f"wrote {write_run(run, args.out_dir / ev.run_file_name(args.dataset, system))}")
    print(f"{args.dataset}: {len(queries)} queries, {len(corpus.passages):,} passages, top {args.k} "
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
        qrels = {q.query_id: {pid: 1 for pid in q.gold_passage_ids} for q in queries}
        systems = {"bm25": bm25.batch_search(queries, 10)}
        started = time.perf_counter()
        with tqdm(total=len(queries), desc="reranking", unit="query", file=sys.stderr, dynamic_ncols=True) as bar:
            systems[f"bm25 top-{args.first_k} -> rerank"] = rerank.two_stage(
                bm25, reranker, queries, passages, args.first_k, 10, lambda done, _: bar.update(done - bar.n))
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

    import pandas as pd

    from rageval.generation.cache import CachedGenerator, LLMCache
    from rageval.generation.base import DecodingSettings
    from rageval.retrieval.bm25 import BM25Retriever
    from rageval.retrieval.evaluate import compute_retrieval_measures
    from rageval.retrieval.subqueries import (FUSION_METHODS, SUBQUERY_DECODING, fuse, generate_subqueries,
                                              max_oracle, subquery_rankings)

    allowed = (*FUSION_METHODS, "rerank")
    methods = [m.strip() for m in args.fusion.split(",") if m.strip()]
    if not methods or any(m not in allowed for m in methods) or len(set(methods)) != len(methods):
        raise RagevalError(f"--fusion {args.fusion!r}: expected distinct names among {', '.join(allowed)}")
    started = time.perf_counter()
    corpus = _load_corpus(args.data_dir)
    queries = list(corpus.nq_queries[:args.num_queries])
    if not queries:
        raise RagevalError(f"--num-queries {args.num_queries}: no NQ-open queries selected")
    retriever = BM25Retriever(_bm25_index(corpus))
    cache = LLMCache(args.cache) if args.cache else LLMCache()
    generator = CachedGenerator(load_generator(args.model, args.batch_size), cache)
    settings = DecodingSettings(max_new_tokens=args.max_new_tokens, stop=SUBQUERY_DECODING.stop)
    gen_started = time.perf_counter()
    subqueries = generate_subqueries(generator, [q.text for q in queries], settings)
    gen_seconds = time.perf_counter() - gen_started

    lists = {q.query_id: subquery_rankings(retriever, q.text, subs, args.k) for q, subs in zip(queries, subqueries)}
    systems = {"bm25 (question)": {qid: rankings[0] for qid, rankings in lists.items()}}
    for method in methods:
        if method == "rerank":  # the paper's Rerank: the cross-encoder re-scores the union for the question
            from rageval.retrieval.evaluate import latest_nq_reranker_dir
            from rageval.retrieval.fusion import rerank_fusion
            from rageval.retrieval.rerank import CrossEncoderReranker

            reranker = CrossEncoderReranker.load(args.reranker or latest_nq_reranker_dir())
            passages = {p.passage_id: p for p in corpus.passages}
            systems[method] = {q.query_id: rerank_fusion(reranker, q, lists[q.query_id], passages, args.k)
                               for q in queries}
        else:
            systems[method] = {qid: fuse(rankings, method, args.k, qid) for qid, rankings in lists.items()}
    measures = ("R@10", "nDCG@10")
    per_query = {name: compute_retrieval_measures(run, queries, measures) for name, run in systems.items()}

    def by_measure(frame) -> dict[str, dict[str, float]]:
        return {m: dict(zip(part["query_id"], part["value"])) for m, part in frame.groupby("measure")}

    # The paper's MAX: every list (question and each sub-query) evaluated alone, the best per query and measure.
    depth = max(len(rankings) for rankings in lists.values())
    per_list = {f"list {t}": compute_retrieval_measures(
        {qid: rankings[t] for qid, rankings in lists.items() if t < len(rankings)},
        [q for q in queries if t < len(lists[q.query_id])], measures) for t in range(depth)}
    rows = {name: {m: frame[frame["measure"] == m]["value"].mean() for m in measures}
            for name, frame in per_query.items()}
    for label, group in (("MAX (per list)", per_list), ("MAX (per method)", per_query)):
        scores = {name: by_measure(frame) for name, frame in group.items()}
        rows[label] = {m: sum(max_oracle({n: s[m] for n, s in scores.items()}).values()) / len(queries)
                       for m in measures}
    table = pd.DataFrame(rows).T[list(measures)]
    mean_subs = sum(len(s) for s in subqueries) / len(subqueries)
    print(f"NQ-open queries 0..{len(queries) - 1}, BM25 top-{args.k} per query, {mean_subs:.2f} sub-queries/question "
          f"by {generator.model_id} ({gen_seconds:.1f} s; cache hits {generator.hits}, misses {generator.misses}); "
          f"total {time.perf_counter() - started:.1f} s")
    print(table.round(3).to_string())
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({
            "num_queries": len(queries), "k": args.k, "model_id": generator.model_id,
            "table": {name: {m: float(v) for m, v in row.items()} for name, row in table.iterrows()},
            "subqueries": {q.query_id: subs for q, subs in zip(queries, subqueries)}}, indent=1))
        print(f"wrote {args.out}")
    return 0


def cmd_demo_runs(args: argparse.Namespace) -> int:
    from rageval.experiments import DEMO_PLANS, build_demo_runs

    plans = DEMO_PLANS
    if args.only:
        wanted = args.only.split(",")
        unknown = sorted(set(wanted) - {p.name for p in DEMO_PLANS})
        if unknown:
            raise RagevalError(f"--only: unknown run(s) {', '.join(unknown)}; known: "
                               f"{', '.join(p.name for p in DEMO_PLANS)}")
        plans = tuple(p for p in DEMO_PLANS if p.name in wanted)
    started = time.perf_counter()
    paths = build_demo_runs(args.out_dir, plans, scale=args.scale, dtype=args.dtype or None,
                            command="rageval " + " ".join(sys.argv[1:]))
    print(f"built {len(paths)} runs in {time.perf_counter() - started:.0f} s:")
    for path in paths:
        print(f"  {path} ({path.stat().st_size / 1e6:.1f} MB)")
    return 0


def cmd_cost_report(args: argparse.Namespace) -> int:
    import json

    import torch

    from rageval.cost import CONFIGURATIONS, cost_prompts, measure_configuration
    from rageval.generation.gemma import gemma_model_id

    erag_prompts, e2e_prompts, described = cost_prompts(args.run, args.num_queries, args.k)
    if args.run.resolve().is_relative_to(REPO_ROOT):
        described["run"] = str(args.run.resolve().relative_to(REPO_ROOT))
    measurements = []
    for configuration in CONFIGURATIONS:
        result = measure_configuration(configuration, erag_prompts, e2e_prompts, dtype=args.dtype or None,
                                       threads=args.threads)
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
    from rageval.report import write_results

    path = write_results(args.runs_dir, args.out, args.cost)
    print(f"wrote {path}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from rageval.export import export_run

    path = export_run(args.run, args.what, args.out, fmt=args.format, method=args.method)
    print(f"wrote {path}")
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
    run.add_argument("--batch-size", type=int, default=8,
                     help="prompts per model batch (transformers) or concurrent requests (openai)")
    run.add_argument("--backend", choices=("transformers", "openai"), default="transformers",
                     help="run the model in process, or call an OpenAI-compatible server (vLLM, Ollama, "
                          "python -m rageval.generation.server); then --model is the served model name")
    run.add_argument("--base-url", default=DEFAULT_BASE_URL, help="the OpenAI-compatible server (--backend openai)")
    run.add_argument("--api-key-env", metavar="VAR", help="environment variable holding the server's API key")
    run.add_argument("--api", choices=("completions", "chat"), default="completions",
                     help="/v1/completions (raw prompt) or /v1/chat/completions (--backend openai)")
    run.add_argument("--max-new-tokens", type=int, default=16)
    run.add_argument("--cache", type=Path, help="LLM-call cache file (default: the user cache)")
    run.add_argument("--out", type=Path, default=RUNS_DIR / "nq_open-bm25-gemma3_270m-erag.sqlite")
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
    retrieval.add_argument("--data-dir", type=Path, default=DATA_DIR)
    retrieval.add_argument("--out-dir", type=Path, default=RUNS_DIR / "retrieval",
                           help="folder of the run files, one per system (default: data/runs/retrieval)")
    retrieval.set_defaults(handler=cmd_eval_retrieval)

    reranker = sub.add_parser("train-reranker", help="train (once, cached) the MiniLM cross-encoder NQ reranker; "
                                                     "optionally compare BM25 with BM25 -> rerank on held-out queries")
    reranker.add_argument("--num-queries", type=int, default=400, help="training questions (from NQ query 1000 on)")
    reranker.add_argument("--negatives", type=int, default=2, help="BM25 top-20 hard negatives per question")
    reranker.add_argument("--epochs", type=int, default=1)
    reranker.add_argument("--lr", type=float, default=1e-4)
    reranker.add_argument("--batch-size", type=int, default=16)
    reranker.add_argument("--trainable-layers", type=int, default=2, help="top encoder layers fine-tuned; -1: all")
    reranker.add_argument("--seed", type=int, default=0)
    reranker.add_argument("--retrain", action="store_true", help="train even if the model is cached")
    reranker.add_argument("--eval-queries", type=int, default=0, help="held-out NQ queries to evaluate (0: none)")
    reranker.add_argument("--eval-offset", type=int, default=0, help="first evaluation query (< 1000)")
    reranker.add_argument("--first-k", type=int, default=50, help="BM25 candidates re-scored per query")
    reranker.add_argument("--data-dir", type=Path, default=DATA_DIR)
    reranker.set_defaults(handler=cmd_train_reranker)

    subq = sub.add_parser("subquery-retrieval", help="LLM sub-queries -> BM25 per sub-query -> fusion; "
                                                     "Recall@10/nDCG@10 vs BM25 and the MAX oracle")
    subq.add_argument("--num-queries", type=int, default=20, help="the first N NQ-open questions")
    subq.add_argument("--k", type=int, default=10, help="passages retrieved per (sub-)query and kept after fusion")
    subq.add_argument("--fusion", default="combsum,combmnz,rrf,sort,pm2",
                      help="comma-separated: combsum, combmnz, rrf, sort, pm2")
    subq.add_argument("--model", default=DEFAULT_MODEL, help=f"'{DEFAULT_MODEL}' or a local Hugging Face model path")
    subq.add_argument("--batch-size", type=int, default=8)
    subq.add_argument("--max-new-tokens", type=int, default=48)
    subq.add_argument("--cache", type=Path, help="LLM-call cache file (default: the user cache)")
    subq.add_argument("--data-dir", type=Path, default=DATA_DIR)
    subq.add_argument("--reranker", type=Path,
                      help="cross-encoder folder for --fusion rerank (default: the latest `rageval train-reranker` model)")
    subq.add_argument("--out", type=Path, help="also write the table (and the sub-queries) as JSON")
    subq.set_defaults(handler=cmd_subquery_retrieval)

    demo = sub.add_parser("demo-runs", help="build the shipped demo runs (eRAG with every label method and a k "
                                            "sweep, LLM-retEval) into data/runs through the LLM-call cache")
    demo.add_argument("--only", help="comma-separated run names (default: all of rageval.experiments.DEMO_PLANS)")
    demo.add_argument("--scale", type=float, default=1.0, help="multiply every run's question count")
    demo.add_argument("--dtype", default="bfloat16", help="RAG LLM precision ('' for the device default)")
    demo.add_argument("--out-dir", type=Path, default=RUNS_DIR)
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

    export = sub.add_parser("export", help="write a run's labels, verdicts or failure cases as CSV, or one label "
                                           "method as TREC qrels")
    export.add_argument("run", type=Path)
    export.add_argument("--what", choices=("labels", "verdicts", "failures"), default="labels")
    export.add_argument("--format", choices=("csv", "qrels"), default="csv")
    export.add_argument("--method", help="label method (required for qrels), e.g. erag:em")
    export.add_argument("--out", type=Path, required=True)
    export.set_defaults(handler=cmd_export)

    from rageval.attribution.cli import add_parsers as add_attribution_parsers

    add_attribution_parsers(sub)
    from rageval.ium.cli import add_parsers as add_ium_parsers

    add_ium_parsers(sub)
    from rageval.upload import add_parsers as add_upload_parsers

    add_upload_parsers(sub)
    from rageval.jobs import add_parsers as add_rescore_parsers

    add_rescore_parsers(sub)

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
