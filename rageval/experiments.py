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

import datetime as dt
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np

from rageval import __version__, erag
from rageval import reteval as llm_reteval
from rageval.generation.base import DecodingSettings
from rageval.prompts import ANSWER_JUDGE_FEW_SHOT, QA_FEW_SHOT, RELEVANCE_FEW_SHOT
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
    label_metrics: tuple[str, ...] = erag.ALL_METRICS
    llm_relevance: bool = True
    reteval: bool = False
    reteval_settings: llm_reteval.RetEvalSettings = field(default_factory=llm_reteval.RetEvalSettings)
    offset: int = 0
    folder: str = ""                 # sub-folder of the runs folder ("" = top level, listed first)

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


#: The shipped demo runs (CPU-sized: see docs/results.md for what a GPU would add). The NQ BM25 run is the only
#: top-level one, so the dashboard opens on it; the others live in ``data/runs/demo/``.
DEMO_PLANS: tuple[RunPlan, ...] = (
    RunPlan("nq_open-bm25-gemma3_270m", "nq_open", "bm25", 300, k=10, e2e_ks=(1, 5, 10), reteval=True),
    RunPlan("nq_open-dense-gemma3_270m", "nq_open", "dense", 300, k=5, e2e_ks=(1, 5), llm_relevance=False,
            reteval=True, reteval_settings=llm_reteval.RetEvalSettings(ks=(1, 5), judges=("em", "token_f1", "cosine")),
            folder="demo"),
    RunPlan("nq_open-bm25-gemma3_270m-k20", "nq_open", "bm25", 30, k=20, e2e_ks=(1, 3, 5, 10, 20),
            llm_relevance=False, folder="demo"),
    RunPlan("hotpotqa-candidates-gemma3_270m", "hotpotqa", "candidates", 30, k=10, e2e_ks=(1, 3, 5, 10),
            folder="demo"),
    RunPlan("hotpotqa-bm25-gemma3_270m", "hotpotqa", "bm25", 30, k=10, e2e_ks=(1, 3, 5, 10), llm_relevance=False,
            folder="demo"),
)
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


def build_run(plan: RunPlan, resources: Resources, generator, *, decoding: DecodingSettings = DecodingSettings(),
              batch_size: int = 8, log: Log = _stderr, command: str = "") -> Run:
    """Compute everything :class:`RunPlan` asks for (see the module docstring). ``generator`` should be a
    :class:`~rageval.generation.cache.CachedGenerator`: its hit/miss counters are stored with the run."""
    timings: dict[str, float] = {}
    hits_at_start, misses_at_start = generator.hits, generator.misses

    def stage(name: str):
        started = time.perf_counter()

        def done():
            timings[name] = round(time.perf_counter() - started, 1)
            log(f"[{plan.name}] {name}: {timings[name]} s (LLM calls so far: "
                f"{getattr(generator, 'hits', '?')} cached, {getattr(generator, 'misses', '?')} new)")
        return done

    done = stage("rankings")
    queries = plan_queries(plan, resources)
    rankings = plan_rankings(plan, queries, resources)
    passages = resources.passages
    done()

    settings = erag.EragSettings(k=plan.k, metric="em", decoding=decoding, batch_size=batch_size,
                                 cutoffs=tuple(sorted(set(plan.e2e_ks))))
    done = stage("erag")
    doc_outputs, _ = erag.compute_erag_labels(queries, rankings, passages, generator, settings)
    labels = erag.metric_labels(doc_outputs, {q.query_id: q for q in queries}, plan.label_metrics)
    done()

    done = stage("e2e")
    e2e_outputs = [o for k in sorted(set(plan.e2e_ks))
                   for o in erag.compute_e2e(queries, rankings, passages, generator, settings, k=k)]
    done()

    labels += erag.compute_reference_labels(queries, rankings, passages, plan.k)
    evidence = []
    if plan.llm_relevance:
        done = stage("llm_relevance")
        relevance, evidence = erag.compute_llm_relevance_labels(queries, rankings, passages, generator, plan.k)
        labels += relevance
        done()

    semi_gold, verdicts, failures = [], [], []
    if plan.reteval:
        done = stage("reteval")
        semi_gold, verdicts, failures = run_reteval(plan, queries, rankings, passages, e2e_outputs, generator,
                                                    resources)
        done()

    done = stage("measures")
    measure_values = erag.compute_measure_values(labels, rankings, settings.cutoffs)
    done()

    hits_before, misses_before = generator.hits, generator.misses
    erag.compute_erag_labels(queries, _reversed(rankings, plan.k), passages, generator, settings)
    rerank_check = {"reranking": f"each top-{plan.k} reversed, eRAG labels recomputed",
                    "cache_hits": generator.hits - hits_before, "cache_misses": generator.misses - misses_before}
    log(f"[{plan.name}] re-ranking check: {rerank_check}")

    used_ids = {pid for r in rankings.values() for pid in r.passage_ids[:plan.k]}
    used_ids |= {pid for q in queries for pid in q.gold_passage_ids}
    run_settings = {
        "name": plan.name, "dataset": plan.dataset,
        "dataset_slice": f"questions {plan.offset}..{plan.offset + len(queries) - 1} of the shipped "
                         f"{'NQ-open test' if plan.dataset == 'nq_open' else 'HotpotQA dev (distractor)'} file, in file order",
        "num_queries": len(queries), "retriever": RETRIEVER_DESCRIPTIONS[plan.retriever], "retriever_name": plan.retriever,
        "k": plan.k, "e2e_ks": sorted(set(plan.e2e_ks)), "model_id": generator.model_id,
        "prompt": QA_FEW_SHOT.identifier,
        "prompts": {t.identifier: asdict(t) for t in (QA_FEW_SHOT, RELEVANCE_FEW_SHOT, ANSWER_JUDGE_FEW_SHOT)},
        "decoding": {"max_new_tokens": decoding.max_new_tokens, "temperature": decoding.temperature,
                     "stop": list(decoding.stop)},
        "label_metric": "em", "label_metrics": list(plan.label_metrics),
        "label_methods": sorted({x.method for x in labels}),
        "graded_label_methods": sorted({x.method for x in labels if erag.is_graded_method(x.method)}),
        "graded_measures": list(erag.GRADED_MEASURES),
        "reteval": plan.reteval_settings.as_dict() if plan.reteval else None,
        "corpus": {"passages": len(resources.corpus.passages)}, "notes": CORPUS_NOTE,
        "llm_calls": {"cache_hits": hits_before - hits_at_start, "cache_misses": misses_before - misses_at_start},
        "rerank_check": rerank_check, "timing_s": timings,
        "created_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "rageval_version": __version__, "command": command,
    }
    return Run(settings=run_settings, queries=queries,
               passages=[passages[pid] for pid in sorted(used_ids) if pid in passages],
               rankings=[Ranking(q.query_id, rankings[q.query_id].passages[:plan.k]) for q in queries],
               doc_outputs=doc_outputs, labels=labels, e2e_outputs=e2e_outputs, measure_values=measure_values,
               label_evidence=evidence, semi_gold_outputs=semi_gold, verdicts=verdicts, failure_cases=failures)


def run_reteval(plan: RunPlan, queries: Sequence[Query], rankings: Mapping[str, Ranking],
                passages: Mapping[str, Passage], e2e_outputs, generator, resources: Resources):
    """Semi-gold samples, every judge's verdicts at every LLM-retEval k, and the failure cases of each judge."""
    options = plan.reteval_settings
    gold_passages = {q.query_id: [passages[p] for p in q.gold_passage_ids if p in passages] for q in queries}
    semi_gold = llm_reteval.sample_semi_gold(queries, gold_passages, generator, erag.prompt_builder(generator),
                                         options.semi_gold)
    semi_by_query: dict[str, list[str]] = {}
    for output in semi_gold:
        semi_by_query.setdefault(output.query_id, []).append(output.output)
    answers_at_k = {k: {o.query_id: o.output for o in e2e_outputs if o.k == k} for k in options.ks}
    verdicts = []
    for name in options.judges:
        judge = llm_reteval.make_judge(name, generator=generator, encoder=resources.encoder,
                                   f1_threshold=options.f1_threshold, cosine_threshold=options.cosine_threshold)
        verdicts += llm_reteval.judge_answers(judge, queries, answers_at_k, semi_by_query)
    retrieved = {q.query_id: [passages[p] for p in rankings[q.query_id].passage_ids] for q in queries}
    failures = llm_reteval.find_failure_cases(queries, retrieved, gold_passages, answers_at_k, semi_by_query, verdicts)
    return semi_gold, verdicts, failures


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
