"""Complete evaluation runs: eRAG with every label method and a k sweep, plus LLM-retEval, in one run file.

One :class:`RunPlan` names a dataset slice, a retriever, the deepest k and the E2E k sweep; :func:`build_run`
computes, in this order (every LLM call goes through the caller's generator, normally the LLM-call cache, so
a killed build loses nothing and a rebuild costs no LLM call):

1. rankings (BM25 or dense over the rageval corpus, or HotpotQA's own candidate paragraphs ordered by MiniLM);
2. eRAG single-passage outputs for the top-k, labelled under every downstream metric (EM, F1, accuracy,
   ROUGE-L, BERTScore) without new LLM calls;
3. E2E outputs at every k of the sweep;
4. baseline labels: gold, contains-answer, and (optionally) the LLM's yes/no relevance judgement;
5. (optionally) LLM-retEval: semi-gold samples, every judge's verdicts, failure cases A-F;
6. per-query measures at every sweep cutoff for every label method;
7. the re-ranking check: the run's own lists reversed go through eRAG again; the cache counters must show no
   new LLM call (stored in the settings as proof).

:data:`DEMO_PLANS` are the runs shipped in ``data/runs/`` (``rageval demo-runs`` builds them).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from rageval import reteval as llm_reteval
from rageval.erag.labels import ALL_METRICS, EragSettings, compute_erag_labels
from rageval.errors import RagevalError
from rageval.generation.base import DecodingSettings
from rageval.paths import DATA_DIR
from rageval.store import Run, write_run
from rageval.types import Passage, Query, Ranking, ScoredPassage

RETRIEVER_DESCRIPTIONS = {
    "bm25": "bm25 (pyserini Lucene, k1=0.9, b=0.4) over the rageval corpus",
    "dense": "dense (all-MiniLM-L6-v2, exact inner product) over the rageval corpus",
    "candidates": "HotpotQA's own ~10 candidate paragraphs (2 supporting + distractors), ordered by MiniLM cosine",
}
CORPUS_NOTE = ("The rageval corpus is the deduplicated union of the shipped passages (16,507), not the 21M-passage "
               "Wikipedia of the papers: retrieval is easier and gold passages rank higher than in the papers.")


@dataclass(frozen=True)
class RunPlan:
    """What one run evaluates. ``k``: depth of the eRAG labels and of the measures; ``e2e_ks``: the k sweep."""

    name: str
    dataset: str                     # "nq_open" or "hotpotqa"
    retriever: str                   # "bm25", "dense" or "candidates"
    num_queries: int
    k: int = 10
    e2e_ks: tuple[int, ...] = (1, 3, 5, 10)
    label_metrics: tuple[str, ...] = ALL_METRICS
    llm_relevance: bool = True
    reteval: bool = False
    reteval_settings: llm_reteval.RetEvalSettings = field(default_factory=llm_reteval.RetEvalSettings)
    offset: int = 0
    folder: str = ""                 # sub-folder of the runs folder ("" = top level, listed first)
    metric: str = "em"               # the answer metric of the E2E scores
    max_new_tokens: int = 16
    measure_cutoffs: tuple[int, ...] = ()  # IR measure cutoffs beyond e2e_ks (up to k)
    em_early_stop: bool = False      # exact-match early stopping of the eRAG answers (label_metrics must be em only)

    def __post_init__(self):
        if self.retriever not in RETRIEVER_DESCRIPTIONS:
            raise ValueError(f"RunPlan.retriever: expected one of {sorted(RETRIEVER_DESCRIPTIONS)}, "
                             f"got {self.retriever!r}")
        if not self.e2e_ks or max(self.e2e_ks) > self.k or min(self.e2e_ks) < 1:
            raise ValueError(f"RunPlan.e2e_ks: expected values in 1..k={self.k}, got {self.e2e_ks}")
        if self.reteval and not set(self.reteval_settings.ks) <= set(self.e2e_ks):
            raise ValueError(f"RunPlan: LLM-retEval ks {self.reteval_settings.ks} need E2E outputs at those k "
                             f"(e2e_ks={self.e2e_ks})")

    @property
    def file_name(self) -> str:
        """The run file's path relative to the runs folder."""
        return f"{self.folder}/{self.name}.sqlite" if self.folder else f"{self.name}.sqlite"


#: The file of the shipped demo runs' configurations (one ``[[run]]`` table per :class:`RunPlan`).
DEMO_PLANS_FILE = DATA_DIR / "configs" / "demo_runs.toml"
_PLAN_FIELDS = {"name", "dataset", "retriever", "num_queries", "k", "e2e_ks", "llm_relevance", "reteval",
                "reteval_ks", "reteval_judges", "offset", "folder", "metric", "max_new_tokens", "label_metrics"}


def load_run_plans(path: Path | None = None) -> tuple[RunPlan, ...]:
    """The :class:`RunPlan` s of a TOML file of ``[[run]]`` tables (default: :data:`DEMO_PLANS_FILE`); an unknown
    field or a bad value is a :class:`~rageval.errors.DataError` naming the file and the run."""
    import tomllib

    from rageval.errors import DataError

    path = Path(path or DEMO_PLANS_FILE)
    try:
        tables = tomllib.loads(path.read_text(encoding="utf-8")).get("run", [])
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise DataError(path, f"not a readable TOML file of [[run]] tables: {error}") from error
    plans = []
    for number, table in enumerate(tables, start=1):
        unknown = sorted(set(table) - _PLAN_FIELDS)
        if unknown:
            raise DataError(path, f"unknown field; known: {', '.join(sorted(_PLAN_FIELDS))}",
                            record=table.get("name", f"run {number}"), field=unknown[0])
        values = dict(table)
        reteval: dict[str, Any] = {}
        if "reteval_ks" in values:
            reteval["ks"] = tuple(values.pop("reteval_ks"))
        if "reteval_judges" in values:
            reteval["judges"] = tuple(values.pop("reteval_judges"))
        for name in ("e2e_ks", "label_metrics"):
            if name in values:
                values[name] = tuple(values[name])
        try:
            plans.append(RunPlan(**values, reteval_settings=llm_reteval.RetEvalSettings(**reteval)))
        except (TypeError, ValueError) as error:
            raise DataError(path, str(error), record=table.get("name", f"run {number}")) from error
    return tuple(plans)


#: The shipped demo runs (CPU-sized: see docs/results.md for what a GPU would add). The NQ BM25 run is the only
#: top-level one, so the dashboard opens on it; the others live in ``data/runs/demo/``.
DEMO_PLANS: tuple[RunPlan, ...] = load_run_plans()
#: The RAG LLM of the demo runs: Gemma-3-270M in bfloat16 (twice as fast on CPU as float32; about 1 in 10
#: greedy answers differ from float32, so the precision is part of the model id and of every cache key).
DEMO_DTYPE = "bfloat16"


class Resources:
    """Corpus, retrievers and encoders, loaded on first use and shared by every run of a build."""

    def __init__(self, corpus):
        self.corpus = corpus
        self.passages: dict[str, Passage] = {p.passage_id: p for p in corpus.passages}
        self._bm25 = self._dense = self._encoder = None

    @property
    def bm25(self):
        if self._bm25 is None:
            from rageval.corpus import corpus_fingerprint
            from rageval.retrieval.bm25 import BM25Retriever, load_or_build_bm25_index

            self._bm25 = BM25Retriever(load_or_build_bm25_index(self.corpus.passages,
                                                                corpus_fingerprint(self.corpus)))
        return self._bm25

    @property
    def dense(self):
        if self._dense is None:
            from rageval.corpus import corpus_fingerprint
            from rageval.retrieval.dense import load_dense_retriever

            self._dense = load_dense_retriever(self.corpus.passages, corpus_fingerprint(self.corpus),
                                               encoder=self.encoder)
        return self._dense

    @property
    def encoder(self):
        if self._encoder is None:
            from rageval.retrieval.dense import MiniLMEncoder

            self._encoder = MiniLMEncoder()
        return self._encoder


def plan_queries(plan: RunPlan, resources: Resources) -> list[Query]:
    from rageval.retrieval.evaluate import hotpotqa_queries, nq_open_queries

    if plan.dataset == "nq_open":
        queries = nq_open_queries(resources.corpus, plan.num_queries, plan.offset)
    elif plan.dataset == "hotpotqa":
        queries = hotpotqa_queries(resources.corpus, num_queries=plan.offset + plan.num_queries)[plan.offset:]
    else:
        raise ValueError(f"RunPlan.dataset: expected 'nq_open' or 'hotpotqa', got {plan.dataset!r}")
    return queries


def hotpotqa_candidate_rankings(queries: Sequence[Query], resources: Resources) -> dict[str, Ranking]:
    """Each HotpotQA question's own candidate paragraphs (canonical corpus ids), ordered by the MiniLM cosine
    between question and paragraph (ties keep the file order)."""
    from rageval.data import HOTPOTQA_FILE, read_hotpotqa
    from rageval.paths import DATA_DIR

    records = {f"hotpotqa:{r.question_id}": r for r in read_hotpotqa(DATA_DIR / HOTPOTQA_FILE)}
    corpus, rankings = resources.corpus, {}
    for query in queries:
        record = records[query.query_id]
        ids = list(dict.fromkeys(corpus.resolve(f"hotpotqa:{record.question_id}:{c.context_id}")
                                 for c in record.contexts))
        vectors = resources.encoder.encode([query.text] + [resources.passages[i].as_document() for i in ids])
        scores = vectors[1:] @ vectors[0]
        order = np.argsort(-scores, kind="stable")
        rankings[query.query_id] = Ranking(query.query_id,
                                           tuple(ScoredPassage(ids[i], float(scores[i])) for i in order))
    return rankings


def plan_rankings(plan: RunPlan, queries: Sequence[Query], resources: Resources) -> dict[str, Ranking]:
    if plan.retriever == "bm25":
        return resources.bm25.batch_search(queries, plan.k)
    if plan.retriever == "dense":
        return resources.dense.batch_search(queries, plan.k)
    return hotpotqa_candidate_rankings(queries, resources)


def _reversed(rankings: Mapping[str, Ranking], k: int) -> dict[str, Ranking]:
    return {q: Ranking(q, tuple(reversed(r.passages[:k]))) for q, r in rankings.items()}


Log = Callable[[str], None]


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def build_run(plan: RunPlan, resources: Resources, generator, *, decoding: DecodingSettings | None = None,
              batch_size: int = 8, log: Log = _stderr, command: str = "", progress=None) -> Run:
    """Compute everything :class:`RunPlan` asks for with the one pipeline (:func:`rageval.pipeline.evaluate.
    evaluate_run`), then the re-ranking check (see the module docstring). ``generator`` should be a
    :class:`~rageval.generation.cache.CachedGenerator`: its hit/miss counters are stored with the run."""
    from rageval.pipeline.evaluate import EvaluationOptions, evaluate_run

    decoding = decoding or DecodingSettings(max_new_tokens=plan.max_new_tokens)
    started = time.perf_counter()
    queries = plan_queries(plan, resources)
    if not queries:
        name = {"nq_open": "NQ-open", "hotpotqa": "HotpotQA"}.get(plan.dataset, plan.dataset)
        raise RagevalError(f"no {name} queries in the slice offset={plan.offset}, n={plan.num_queries}")
    rankings = plan_rankings(plan, queries, resources)
    passages = resources.passages
    rankings_s = round(time.perf_counter() - started, 1)
    log(f"[{plan.name}] rankings: {rankings_s} s")
    used_ids = dict.fromkeys([pid for q in queries for pid in rankings[q.query_id].passage_ids[:plan.k]]
                             + [pid for q in queries for pid in q.gold_passage_ids])
    base = Run(settings={
        "name": plan.name, "dataset": plan.dataset,
        "dataset_slice": f"questions {plan.offset}..{plan.offset + len(queries) - 1} of the shipped "
                         f"{'NQ-open test' if plan.dataset == 'nq_open' else 'HotpotQA dev (distractor)'} file, "
                         "in file order",
        "retriever": RETRIEVER_DESCRIPTIONS[plan.retriever], "retriever_name": plan.retriever,
        "corpus": {"passages": len(resources.corpus.passages)}, "notes": CORPUS_NOTE, "command": command},
        queries=queries, passages=[passages[pid] for pid in used_ids if pid in passages],
        rankings=[Ranking(q.query_id, rankings[q.query_id].passages[:plan.k]) for q in queries])
    options = EvaluationOptions(
        methods=("erag", "e2e", "baselines") + (("reteval",) if plan.reteval else ()),
        ks=tuple(sorted(set(plan.e2e_ks))),
        label_metrics=plan.label_metrics, metric=plan.metric, llm_relevance=plan.llm_relevance,
        reteval=plan.reteval_settings, decoding=decoding, batch_size=batch_size, measure_cutoffs=plan.measure_cutoffs,
        em_early_stop=plan.em_early_stop)
    run = evaluate_run(base, generator, options, log=lambda message: log(f"[{plan.name}] {message}"),
                       progress=progress, encoder=resources.encoder if plan.reteval else None)
    timing = {"rankings": rankings_s, **run.settings["timing_s"]}

    settings = EragSettings(k=plan.k, metric=plan.metric, decoding=decoding, batch_size=batch_size,
                            cutoffs=options.cutoffs)
    hits_before, misses_before = generator.hits, generator.misses
    compute_erag_labels(queries, _reversed(rankings, plan.k), passages, generator, settings)
    rerank_check = {"reranking": f"each top-{plan.k} reversed, eRAG labels recomputed",
                    "cache_hits": generator.hits - hits_before, "cache_misses": generator.misses - misses_before}
    run = replace(run, settings={**run.settings, "timing_s": timing, "rerank_check": rerank_check})
    log(f"[{plan.name}] re-ranking check: {run.settings['rerank_check']}")
    return run


def build_demo_runs(out_dir: Path, plans: Sequence[RunPlan] = DEMO_PLANS, *, scale: float = 1.0,
                    dtype: str | None = DEMO_DTYPE, log: Log = _stderr, command: str = "") -> list[Path]:
    """Build ``plans`` (query counts times ``scale``) with the packaged Gemma through the LLM-call cache and
    write each to ``out_dir/<name>.sqlite`` as soon as it is complete."""
    from rageval.corpus import build_corpus
    from rageval.generation.cache import CachedGenerator, LLMCache
    from rageval.generation.gemma import load_gemma_generator

    resources = Resources(build_corpus())
    generator = CachedGenerator(load_gemma_generator(batch_size=8, dtype=dtype), LLMCache())
    paths = []
    for plan in plans:
        plan = replace(plan, num_queries=max(1, round(plan.num_queries * scale)))
        started = time.perf_counter()
        run = build_run(plan, resources, generator, log=log, command=command)
        paths.append(write_run(run, Path(out_dir) / plan.file_name))
        log(f"wrote {paths[-1]} ({paths[-1].stat().st_size / 1e6:.1f} MB, {time.perf_counter() - started:.0f} s)")
    return paths
