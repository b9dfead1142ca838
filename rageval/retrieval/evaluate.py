"""Retrieval evaluation against gold passages: NQ-open and HotpotQA questions over the whole rageval corpus.

Datasets (queries and their gold passage ids, all ids canonical corpus ids):

- ``nq_open``: the corpus' NQ-open queries in file order (:func:`rageval.corpus.build_corpus`); gold = the NQ
  long answer and the DPR gold passage of the question (one or two ids after deduplication).
- ``hotpotqa``: the 400 HotpotQA dev (distractor setting) questions; gold = the 2 supporting paragraphs, whose ids
  ``hotpotqa:<question_id>:<context id>`` are resolved through the corpus' duplicate aliases.

Systems: ``bm25`` (Lucene BM25), ``dense`` (all-MiniLM-L6-v2, exact inner product), ``hybrid`` (CombSUM of the
min-max normalised BM25 and dense top-k), ``hybrid-rrf`` (reciprocal rank fusion of the same lists, rrf_k = 60),
``bm25+rerank`` (the BM25 top ``rerank_depth`` re-scored by a cross-encoder, the rest of the BM25 top-k after it
in BM25 order). CombSUM is the default hybrid because it was better than RRF on both datasets here (500 NQ-open
and 400 HotpotQA questions, top 100: nDCG@10 0.887 vs 0.850 and 0.836 vs 0.808): RRF gives the weaker BM25 list
as much say as the dense one, while min-max scores keep how far ahead each list's top passages are.

Measures (:data:`RETRIEVAL_MEASURES`, computed with :mod:`rageval.measures` on binary gold labels): Recall@1, 5,
10, 20, 100, nDCG@10 and RR@10 (its mean is MRR@10). The corpus (~16.5k passages) is small and mostly off-topic
for NQ, so every number here is higher than over full Wikipedia.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from rageval.errors import RagevalError
from rageval.measures import aggregate_measures, compute_measures, parse_measure_list
from rageval.paths import DATA_DIR
from rageval.retrieval.retrievers import Retrievers, fuse
from rageval.store import Label, MeasureValue, Run
from rageval.types import Passage, Query, Ranking
from rageval.version import __version__

DATASETS = ("nq_open", "hotpotqa")
SYSTEMS = ("bm25", "dense", "hybrid", "hybrid-rrf", "bm25+rerank")
RETRIEVAL_MEASURES = ("R@1", "R@5", "R@10", "R@20", "R@100", "nDCG@10", "RR@10")
GOLD = "gold"
# Run files keep the top 10 of each ranking (what nDCG@10 and RR@10 look at); measures use the full top k.
# Passage text is ~95% of a run file: 500 NQ queries take ~4 MB at depth 10, ~6.6 MB at depth 20.
STORED_DEPTH = 10
RERANK_DEPTH = 20

NEEDS_BM25 = frozenset({"bm25", "hybrid", "hybrid-rrf", "bm25+rerank"})
NEEDS_DENSE = frozenset({"dense", "hybrid", "hybrid-rrf"})

SYSTEM_DESCRIPTIONS = {
    "bm25": "BM25 (pyserini Lucene, k1=0.9, b=0.4)",
    "dense": "dense: all-MiniLM-L6-v2 mean-pooled unit vectors, cosine = inner product, faiss IndexFlatIP (exact)",
    "hybrid": "hybrid: CombSUM of min-max normalised BM25 and dense scores over their top-k",
    "hybrid-rrf": "hybrid: reciprocal rank fusion (rrf_k=60) of the BM25 and dense top-k",
    "bm25+rerank": "BM25 top-{depth} re-scored by the cross-encoder {model}; BM25 order below rank {depth}",
}

Progress = Callable[[str], None]

#: The run settings' ``notes`` of a retrieval run on the shipped corpus.
CORPUS_NOTE = (
    "Corpus: ~16.5k deduplicated real Wikipedia passages (NQ gold passages, HotpotQA paragraphs, HAGRID quotes, "
    "2Wiki and wiki-18 samples). Only the NQ gold passages are on-topic for NQ, so retrieval here is easier than over "
    "full Wikipedia.")


# ------------------------------------------------------------------------------------------- datasets


def nq_open_queries(corpus, num_queries: int | None = None, offset: int = 0) -> list[Query]:
    """The corpus' NQ-open queries ``offset .. offset + num_queries - 1`` (file order), with gold ids."""
    end = None if num_queries is None else offset + num_queries
    return list(corpus.nq_queries[offset:end])


def hotpotqa_queries(corpus, data_dir: Path = DATA_DIR, num_queries: int | None = None) -> list[Query]:
    """HotpotQA dev questions (file order) with their supporting paragraphs as gold, as canonical corpus ids.

    Query ids are ``hotpotqa:<question_id>``. A supporting paragraph missing from the corpus is an error.
    """
    from rageval.data import HOTPOTQA_FILE, read_hotpotqa

    path = Path(data_dir) / HOTPOTQA_FILE
    queries = []
    for record in read_hotpotqa(path)[:num_queries]:
        gold = []
        for context in record.contexts:
            if not context.is_supporting:
                continue
            pid = f"hotpotqa:{record.question_id}:{context.context_id}"
            if pid not in corpus:
                raise RagevalError(f"{path}, line {record.line}: supporting paragraph {pid!r} is not in the corpus")
            gold.append(corpus.resolve(pid))
        queries.append(Query(f"hotpotqa:{record.question_id}", record.question, record.answers,
                             tuple(dict.fromkeys(gold)), "hotpotqa"))
    return queries


def load_queries(dataset: str, corpus, num_queries: int | None = None, data_dir: Path = DATA_DIR) -> list[Query]:
    """The queries of ``dataset`` (one of :data:`DATASETS`), the first ``num_queries`` (None: all)."""
    if dataset == "nq_open":
        return nq_open_queries(corpus, num_queries)
    if dataset == "hotpotqa":
        return hotpotqa_queries(corpus, data_dir, num_queries)
    raise ValueError(f"dataset must be one of {DATASETS}, got {dataset!r}")


@dataclass(frozen=True)
class RetrievalInputs:
    """Questions with their gold passages, the passages retrieved from and their fingerprint (which names the
    index caches), and how a run's settings describe them (``slice_note``, ``notes``)."""

    dataset: str
    queries: list[Query]
    passages: dict[str, Passage]
    fingerprint: str
    slice_note: str
    notes: str


def shipped_retrieval_inputs(dataset: str, corpus, num_queries: int | None = None,
                             data_dir: Path = DATA_DIR) -> RetrievalInputs:
    """The first ``num_queries`` questions of a shipped ``dataset`` (:func:`load_queries`) over the whole
    rageval ``corpus``."""
    from rageval.corpus import corpus_fingerprint

    queries = load_queries(dataset, corpus, num_queries, data_dir)
    return RetrievalInputs(dataset, queries, {p.passage_id: p for p in corpus.passages}, corpus_fingerprint(corpus),
                           f"the first {len(queries)} {dataset} queries (file order)", CORPUS_NOTE)


def gold_qrels(queries: Iterable[Query]) -> dict[str, dict[str, float]]:
    """Binary qrels: every gold passage of every query labelled 1 (a query without gold has an empty mapping)."""
    return {q.query_id: dict.fromkeys(q.gold_passage_ids, 1.0) for q in queries}


def gold_labels(queries: Iterable[Query]) -> list[Label]:
    return [Label(GOLD, q.query_id, pid, 1.0) for q in queries for pid in q.gold_passage_ids]


# ------------------------------------------------------------------------------------------- measures


def compute_retrieval_measures(rankings: Mapping[str, Ranking], queries: Sequence[Query],
                               measures: Sequence[str] = RETRIEVAL_MEASURES) -> pd.DataFrame:
    """Per-query values (``query_id, measure, value``) of ``measures`` against the gold passages.

    Every query counts (a missing ranking scores 0), in the order of ``queries``.
    """
    run = {qid: list(r.passage_ids) for qid, r in rankings.items()}
    return compute_measures(measures, run, gold_qrels(queries), queries=[q.query_id for q in queries])


def parse_retrieval_measures(text: str) -> list[str]:
    """``--measures``: measure strings separated by commas (:data:`rageval.measures.MEASURE_SYNTAX`) -> their
    canonical strings; a string that does not parse is an error saying why."""
    try:
        measures = [str(m) for m in parse_measure_list(text)]
    except ValueError as error:
        raise RagevalError(f"--measures: {error}") from None
    if not measures:
        raise RagevalError("--measures: expected at least one measure, e.g. " + ",".join(RETRIEVAL_MEASURES))
    return measures


def parse_systems(text: str) -> list[str]:
    """``"bm25,dense"`` -> ``["bm25", "dense"]``; unknown or repeated names are an error naming them."""
    systems = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in systems if name not in SYSTEMS]
    if unknown or not systems or len(set(systems)) != len(systems):
        raise RagevalError(f"--systems {text!r}: expected distinct names among {', '.join(SYSTEMS)}")
    return systems


def summarize(per_query: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Every measure per system (the mean over queries; the sum for counts such as NumRet): one row per system
    (input order), one column per measure."""
    rows = {system: aggregate_measures(frame).set_index("measure")["value"] for system, frame in per_query.items()}
    return pd.DataFrame(rows).T.rename_axis("system")


# ------------------------------------------------------------------------------------------- systems


def rerank_head(reranker, queries: Sequence[Query], rankings: Mapping[str, Ranking],
                passages: Mapping[str, Passage], depth: int,
                progress: Callable[[int], None] | None = None) -> dict[str, Ranking]:
    """Each ranking with its top ``depth`` re-scored by ``reranker`` and the rest appended in its first order.

    The appended passages keep their first-stage scores, which are not comparable with the reranker's: use the
    order, not the scores, below rank ``depth``.
    """
    out: dict[str, Ranking] = {}
    for query in queries:
        ranking = rankings[query.query_id]
        if not ranking.passages:
            out[query.query_id] = ranking
            continue
        head = reranker.rerank(query, ranking, passages, depth)
        out[query.query_id] = Ranking(ranking.query_id, head.passages + ranking.passages[depth:])
        if progress is not None:
            progress(1)
    return out


def latest_nq_reranker_dir() -> Path:
    """The most recently saved NQ reranker in ``cache_dir()/models`` (``rageval train-reranker`` writes it).

    Evaluation never trains one: a :class:`RagevalError` says how to when there is none.
    """
    from rageval.paths import cache_dir
    from rageval.retrieval.rerank import CONFIG_NAME

    saved = [d for d in (cache_dir() / "models").glob("reranker-nq-minilm-*") if (d / CONFIG_NAME).is_file()]
    if not saved:
        raise RagevalError(f"{cache_dir() / 'models'}: no trained NQ reranker; run `rageval train-reranker` "
                           f"first or pass --reranker DIR")
    return max(saved, key=lambda d: (d / CONFIG_NAME).stat().st_mtime)


@dataclass(frozen=True)
class SystemRun:
    """One system's rankings for a dataset and how long producing them took (components included)."""

    system: str
    rankings: Mapping[str, Ranking]
    seconds: float
    description: str = ""
    details: Mapping[str, Any] = field(default_factory=dict)


def run_systems(systems: Sequence[str], queries: Sequence[Query], k: int, *, retrievers: Retrievers | None = None,
                bm25=None, dense=None, reranker=None, passages: Mapping[str, Passage] | None = None,
                rerank_depth: int = RERANK_DEPTH,
                progress: Progress | None = None,
                on_reranked: Callable[[int], None] | None = None) -> dict[str, SystemRun]:
    """Rankings of the top ``k`` of every system in ``systems`` (see the module docstring) for ``queries``.

    ``retrievers`` (:class:`~rageval.retrieval.retrievers.Retrievers`, the one dispatch of a retriever name) or
    ready ``bm25`` and ``dense`` retrievers with ``batch_search(queries, k)``; BM25 and dense rankings are computed
    once and shared by the systems built on them. ``reranker`` (a ``rageval.retrieval.rerank.Reranker``) and
    ``passages`` are needed for ``bm25+rerank`` only. A system's ``seconds`` include its components.
    ``progress(message)`` announces each retrieval step; ``on_reranked(n)`` counts reranked queries.
    """
    unknown = [s for s in systems if s not in SYSTEMS]
    if unknown:
        raise ValueError(f"unknown systems {unknown}; expected some of {SYSTEMS}")
    note = progress or (lambda _message: None)
    base: dict[str, SystemRun] = {}

    if retrievers is None:
        retrievers = Retrievers((), fingerprint="0" * 64, bm25=bm25, dense=dense)

    def component(name: str) -> SystemRun:
        if name not in base:
            if retrievers.loaded(name) is None and not retrievers.corpus:
                raise RagevalError(f"system {name!r} needs a {name} retriever")
            note(f"{name}: retrieving the top {k} for {len(queries)} queries")
            started = time.perf_counter()
            rankings = retrievers.search(name, queries, k)
            base[name] = SystemRun(name, rankings, time.perf_counter() - started, SYSTEM_DESCRIPTIONS[name])
        return base[name]

    out: dict[str, SystemRun] = {}
    for system in systems:
        if system in ("bm25", "dense"):
            out[system] = component(system)
        elif system in ("hybrid", "hybrid-rrf"):
            lexical, semantic = component("bm25"), component("dense")
            started = time.perf_counter()
            fused = fuse(system, lexical.rankings, semantic.rankings, k)
            seconds = lexical.seconds + semantic.seconds + time.perf_counter() - started
            out[system] = SystemRun(system, fused, seconds, SYSTEM_DESCRIPTIONS[system])
        else:  # bm25+rerank
            if reranker is None or passages is None:
                raise RagevalError("system 'bm25+rerank' needs a reranker and the passage texts")
            lexical = component("bm25")
            depth = min(rerank_depth, k)
            note(f"bm25+rerank: re-scoring the BM25 top {depth} of {len(queries)} queries with {reranker.model_id}")
            started = time.perf_counter()
            reranked = rerank_head(reranker, queries, lexical.rankings, passages, depth, on_reranked)
            seconds = lexical.seconds + time.perf_counter() - started
            description = SYSTEM_DESCRIPTIONS[system].format(depth=depth, model=reranker.model_id)
            out[system] = SystemRun(system, reranked, seconds, description,
                                    {"reranker": reranker.model_id, "rerank_depth": depth})
    return out


# ------------------------------------------------------------------------------------------- run files


def run_file_name(dataset: str, system: str) -> str:
    """``retrieval-<dataset>-<system>.sqlite`` (``+`` becomes ``_``: ``retrieval-nq_open-bm25_rerank.sqlite``)."""
    return f"retrieval-{dataset}-{system.replace('+', '_')}.sqlite"


def build_retrieval_run(dataset: str, system_run: SystemRun, queries: Sequence[Query],
                        passages: Mapping[str, Passage], per_query: pd.DataFrame, settings: Mapping[str, Any],
                        stored_depth: int = STORED_DEPTH) -> Run:
    """A run of one system on one dataset: its rankings cut to ``stored_depth``, the passages those rankings and
    the gold labels use, the gold labels (method ``"gold"``) and the per-query measure values (computed on the
    full rankings before the cut, so ``R@100`` is kept even though only the top ``stored_depth`` is stored).

    ``settings`` is merged into the run's settings after the fields this function fills in.
    """
    # rows in primary-key order (the store's tables are keyed by query id, not file order): denser B-tree pages
    rankings = [Ranking(qid, system_run.rankings[qid].passages[:stored_depth])
                for qid in sorted(q.query_id for q in queries)]
    used = dict.fromkeys(pid for r in rankings for pid in r.passage_ids)
    used.update(dict.fromkeys(pid for q in queries for pid in q.gold_passage_ids))
    missing = [pid for pid in used if pid not in passages]
    if missing:
        raise RagevalError(f"{dataset}/{system_run.system}: passages {missing[:5]} are not in the corpus")
    measure_values = sorted((MeasureValue(GOLD, row.measure, row.query_id, float(row.value))
                             for row in per_query.itertuples(index=False)), key=lambda m: (m.measure, m.query_id))
    run_settings = {
        "dataset": dataset, "system": system_run.system, "retriever": system_run.description,
        "num_queries": len(queries), "stored_depth": stored_depth, "measures": sorted(set(per_query["measure"])),
        "label_methods": [GOLD], "timing_s": {"retrieval": round(system_run.seconds, 2)},
        **dict(system_run.details), **dict(settings),
    }
    return Run(settings=run_settings, queries=list(queries), passages=[passages[pid] for pid in sorted(used)],
               rankings=rankings, labels=sorted(gold_labels(queries), key=lambda x: (x.query_id, x.passage_id)),
               measure_values=measure_values)


# ------------------------------------------------------------------------------------------- the evaluation


@dataclass(frozen=True)
class RetrievalEvaluation:
    """What :func:`evaluate_retrieval` did: the run files written (one per system) and the mean of every measure
    per system (:func:`summarize`)."""

    paths: list[Path]
    summary: pd.DataFrame


def evaluate_retrieval(inputs: RetrievalInputs, systems: Sequence[str], k: int, out_dir: Path, *,
                       measures: Sequence[str] = RETRIEVAL_MEASURES, reranker_dir: Path | None = None,
                       rerank_depth: int = RERANK_DEPTH, batch_size: int = 64, stored_depth: int = STORED_DEPTH,
                       command: str = "", progress: Progress | None = None,
                       on_reranked: Callable[[int, int], None] | None = None,
                       wrote: Callable[[Path], None] = lambda path: None) -> RetrievalEvaluation:
    """``rageval eval-retrieval``: every system's top ``k`` (:func:`run_systems`; ``bm25+rerank`` with the
    cross-encoder saved in ``reranker_dir``, default the latest ``rageval train-reranker`` model), scored with
    ``measures`` against the gold passages, each written as a run file ``out_dir/retrieval-<dataset>-<system>
    .sqlite`` (:func:`build_retrieval_run`; ``wrote(path)`` after each). ``on_reranked(done, total)`` counts the
    queries reranked."""
    from rageval.retrieval.retrievers import Retrievers
    from rageval.store import write_run

    queries, passages = inputs.queries, inputs.passages
    retrievers = Retrievers(passages.values(), inputs.fingerprint, batch_size=batch_size)
    reranker = None
    if "bm25+rerank" in systems:
        from rageval.retrieval.rerank import CrossEncoderReranker

        reranker = CrossEncoderReranker.load(reranker_dir or latest_nq_reranker_dir())
    reranked = 0

    def count_reranked(n: int) -> None:
        nonlocal reranked
        reranked += n
        if on_reranked is not None:
            on_reranked(reranked, len(queries))

    results = run_systems(systems, queries, k, retrievers=retrievers, reranker=reranker, passages=passages,
                          rerank_depth=rerank_depth, progress=progress, on_reranked=count_reranked)
    settings = {
        "dataset_slice": inputs.slice_note, "k": k,
        "corpus": {"passages": len(passages), "fingerprint": inputs.fingerprint[:16]}, "notes": inputs.notes,
        "created_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "rageval_version": __version__, "command": command,
    }
    per_query, paths = {}, []
    for system, result in results.items():
        per_query[system] = compute_retrieval_measures(result.rankings, queries, measures)
        run = build_retrieval_run(inputs.dataset, result, queries, passages, per_query[system], settings,
                                  stored_depth=stored_depth)
        paths.append(write_run(run, Path(out_dir) / run_file_name(inputs.dataset, system)))
        wrote(paths[-1])
    return RetrievalEvaluation(paths, summarize(per_query))
