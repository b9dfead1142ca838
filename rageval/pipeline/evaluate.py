"""One evaluation pipeline over any questions, candidates and RAG LLM: eRAG, E2E, baselines, LLM-retEval.

:func:`evaluate_run` takes a starting :class:`~rageval.store.Run` (queries with answers, the passages, each
query's ranked candidates, any labels already given) and computes what :class:`EvaluationOptions` asks for, in
this order (every LLM call goes through the generator, normally the LLM-call cache, so a killed run loses
nothing and a rerun costs no call already made):

1. ``erag`` (Salemi & Zamani, SIGIR 2024): each of the top ``max(ks)`` passages read alone,
   G_q[d] = E(M(q, {d}), y), labelled under every answer metric (EM, token F1, accuracy, ROUGE-L, BERTScore);
2. ``e2e``: the top-k in one prompt, M(q, R_k), scored by E at every k of the sweep;
3. ``baselines``: gold passages (the questions' own or the qrels' positives), page-level gold, contains-answer
   and the LLM's yes/no relevance;
4. ``reteval`` (Alinejad et al. 2024): semi-gold answers from the gold passages, the judges (LLM prompt, EM, token
   F1, embedding cosine) and failure cases A-F (needs gold passages; E2E is computed at its ks);
5. the per-query IR measures of every label method at every k;
6. the correlation of every label method x measure with the E2E score at every k of the sweep (eRAG's Table 1,
   what the Correlations page shows; :func:`compute_correlations`), so the page reads it instead of bootstrapping.

The same function builds the shipped demo runs (:mod:`rageval.pipeline.demo`), ``rageval evaluate`` on the user's
files, and the dashboard's "compute what this run lacks" job (:func:`complete_run_file`).

:class:`StageMeter` wraps the generator, counts each stage's calls (cached / new) and reports progress;
with :class:`DryRunGenerator` in place of the model the same code path counts, without loading any model, the LLM
calls a run will make and how many are already cached (``--dry-run``).
"""

from __future__ import annotations

import datetime as dt
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING

from rageval import reteval as llm_reteval
from rageval.erag.baselines import compute_judge_labels, compute_reference_labels, judge_of
from rageval.erag.e2e import compute_e2e
from rageval.erag.labels import (
    ALL_METRICS,
    MODEL_METRICS,
    EragSettings,
    compute_erag_labels,
    metric_labels,
    prompt_builder,
)
from rageval.erag.measures import GRADED_MEASURES, compute_measure_values, is_graded_method
from rageval.errors import RagevalError
from rageval.generation.base import DecodingSettings
from rageval.generation.cache import LLMCache, cache_key, stopped_key
from rageval.generation.dtype_check import precision_of
from rageval.generation.em_stop import generate_stopping_early
from rageval.labelmethods import CONTAINS_ANSWER, DEFAULT_JUDGES, GOLD, GOLD_PAGE, judges, method_kind
from rageval.measures import parse_measure_list
from rageval.prompts import ANSWER_JUDGE_FEW_SHOT, QA_FEW_SHOT, RELEVANCE_FEW_SHOT, PromptTemplate
from rageval.stats.correlation import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED
from rageval.store import Correlation, E2EOutput, MeasureValue, Run
from rageval.store.provenance import brought
from rageval.store.records import UnparsedAnswer
from rageval.types import Passage, Query, Ranking
from rageval.version import __version__

if TYPE_CHECKING:
    import pandas as pd

METHODS = ("erag", "e2e", "baselines", "reteval")


def llm_stages() -> tuple[str, ...]:
    """Stages that call the LLM, in pipeline order (the names of progress bars and call counts): each LLM judge of
    :mod:`rageval.labelmethods` is a stage of its own."""
    return ("erag", "e2e", *(kind.name for kind in judges()), "semi_gold", "llm_judge")


Log = Callable[[str], None]
#: (stage, done, total, cached): ``done`` of ``total`` LLM calls of the stage made, ``cached`` of them answered from
#: the LLM-call cache (no model time), so a rate and an ETA can count the new calls alone.
Progress = Callable[[str, int, int, int], None]


def _quiet(message: str) -> None:
    pass


def parse_methods(text: str) -> tuple[str, ...]:
    """``all`` or a comma list of :data:`METHODS`, in pipeline order."""
    names = [x.strip() for x in text.split(",") if x.strip()]
    if names == ["all"]:
        return METHODS
    unknown = [x for x in names if x not in METHODS]
    if not names or unknown:
        raise RagevalError(f"--methods {text!r}: expected 'all' or a comma list of {', '.join(METHODS)}")
    return tuple(m for m in METHODS if m in names)


def parse_ks(text: str | Sequence[int]) -> tuple[int, ...]:
    """``1,5,10`` -> (1, 5, 10): distinct positive cutoffs, sorted."""
    try:
        values = [int(x) for x in (text.split(",") if isinstance(text, str) else text) if str(x).strip()]
    except ValueError:
        raise RagevalError(f"--k {text!r}: expected a comma list of positive integers, e.g. 1,5,10") from None
    if not values or min(values) < 1:
        raise RagevalError(f"--k {text!r}: expected a comma list of positive integers, e.g. 1,5,10")
    return tuple(sorted(set(values)))


@dataclass(frozen=True)
class EvaluationOptions:
    """What :func:`evaluate_run` computes. ``ks``: the E2E sweep; its maximum is the eRAG depth. ``metric``: the
    answer metric E2E answers are scored with. LLM-retEval runs at ``reteval.ks`` that are in ``ks`` (all of
    ``ks`` when none are)."""

    methods: tuple[str, ...] = METHODS
    ks: tuple[int, ...] = (1, 5, 10)
    label_metrics: tuple[str, ...] = ALL_METRICS
    metric: str = "em"
    #: The LLM judges of the baselines stage (registered in :mod:`rageval.labelmethods`): the yes/no relevance by
    #: default; each other one costs one more LLM call per judged passage, so it runs when asked for.
    label_judges: tuple[str, ...] = DEFAULT_JUDGES
    reteval: llm_reteval.RetEvalSettings = field(default_factory=llm_reteval.RetEvalSettings)
    decoding: DecodingSettings = field(default_factory=DecodingSettings)
    batch_size: int = 8
    prompt: PromptTemplate = QA_FEW_SHOT
    measure_cutoffs: tuple[int, ...] = ()  # more cutoffs of the IR measures than the E2E sweep's
    measures: tuple[str, ...] = ()  # IR measures beyond the stored set, e.g. "P(rel=2)@5" (rageval.measures)
    #: Exact-match early stopping of the eRAG answers (:mod:`rageval.generation.em_stop`): the same ``erag:em``
    #: labels, fewer decode steps; stopped answers are stored marked. Only with ``label_metrics == ("em",)``.
    em_early_stop: bool = False

    def __post_init__(self):
        unknown = [m for m in self.methods if m not in METHODS]
        if unknown:
            raise RagevalError(f"methods: unknown {', '.join(unknown)}; expected some of {', '.join(METHODS)}")
        if not self.ks or min(self.ks) < 1:
            raise RagevalError(f"ks: expected positive cutoffs, got {self.ks}")
        bad = [m for m in (*self.label_metrics, self.metric) if m not in ALL_METRICS]
        if bad:
            raise RagevalError(f"answer metric {bad[0]!r}: expected one of {', '.join(ALL_METRICS)}")
        if self.em_early_stop and (tuple(self.label_metrics) != ("em",) or self.metric != "em"):
            raise RagevalError("exact-match early stopping: the eRAG labels must be exact match only (a stopped "
                               "answer has no F1, ROUGE or BERTScore), got label metrics "
                               f"{', '.join(self.label_metrics)} and metric {self.metric}")
        try:
            canonical = tuple(str(m) for m in parse_measure_list(self.measures))
        except ValueError as error:
            raise RagevalError(f"measures: {error}") from None
        object.__setattr__(self, "measures", canonical)

    @property
    def depth(self) -> int:
        return max(self.ks)

    @property
    def cutoffs(self) -> tuple[int, ...]:
        """The IR measures' cutoffs: the sweep and ``measure_cutoffs`` up to the eRAG depth."""
        return tuple(sorted({k for k in (*self.ks, *self.measure_cutoffs) if k <= self.depth}))

    @property
    def reteval_ks(self) -> tuple[int, ...]:
        wanted = tuple(k for k in self.reteval.ks if k in self.ks)
        return wanted or self.ks

    @property
    def e2e_ks(self) -> tuple[int, ...]:
        """The ks E2E answers are needed at: the sweep when ``e2e`` is asked for, else LLM-retEval's."""
        if "e2e" in self.methods:
            return self.ks
        return self.reteval_ks if "reteval" in self.methods else ()

    def as_dict(self) -> dict:
        described = asdict(self)
        described["prompt"] = self.prompt.identifier
        return described


# --------------------------------------------------------------------------------------------- generators

class DryRunGenerator:
    """Answers from the LLM-call cache only and never loads a model: a prompt not in the cache is counted as a
    new call (once per distinct prompt, as the cache would make its repeats hits) and answered with a placeholder
    unique to that prompt (so later stages, e.g. the LLM judge, see distinct inputs, as a real run would)."""

    def __init__(self, model_id: str, cache: LLMCache):
        self._model_id = model_id
        self.cache = cache
        self.pending: set[str] = set()
        self.hits = 0
        self.misses = 0

    @property
    def model_id(self) -> str:
        return self._model_id

    #: With ``em_targets`` an answer stopped early against them is found too (:func:`stopped_key`).
    supports_em_early_stop = True

    def generate(self, prompts: Sequence[str], settings: DecodingSettings, *,
                 em_targets: Sequence[Sequence[str]] | None = None) -> list[str]:
        keys = [cache_key(self._model_id, prompt, settings) for prompt in prompts]
        ids = keys if em_targets is None else [stopped_key(k, golds) for k, golds in zip(keys, em_targets)]
        found = self.cache.get_many(keys)
        stopped = {} if em_targets is None else self.cache.get_many(i for i, k in zip(ids, keys) if k not in found)
        answers = []
        for i, key in zip(ids, keys):
            answer = found.get(key, stopped.get(i))
            if answer is not None or i in self.pending:
                self.hits += 1
            else:
                self.pending.add(i)
                self.misses += 1
            answers.append(answer if answer is not None else f"(not generated yet {key[:12]})")
        return answers


class StageMeter:
    """Wraps a generator with ``hits``/``misses`` counters (the cache or a dry run): counts every stage's calls,
    cached and new, and reports ``(stage, done, total, cached)`` after each batch, so a progress bar's rate and
    ETA count the new calls only (a cache hit costs no model time)."""

    def __init__(self, generator, progress: Progress | None = None):
        self.generator = generator
        self.progress = progress
        self.stage = ""
        self.total = 0
        self.done = 0
        self.cached = 0
        self.calls: dict[str, dict[str, int]] = {}

    @property
    def model_id(self) -> str:
        return self.generator.model_id

    @property
    def build_prompt(self):
        return getattr(self.generator, "build_prompt", None)

    @property
    def hits(self) -> int:
        return getattr(self.generator, "hits", 0)

    @property
    def misses(self) -> int:
        return getattr(self.generator, "misses", 0)

    def begin(self, stage: str, total: int) -> None:
        self.stage, self.total, self.done, self.cached = stage, total, 0, 0
        self.calls.setdefault(stage, {"calls": 0, "cached": 0, "new": 0})
        if self.progress is not None:
            self.progress(stage, 0, total, 0)

    @property
    def supports_em_early_stop(self) -> bool:
        return bool(getattr(self.generator, "supports_em_early_stop", False))

    def generate(self, prompts: Sequence[str], settings: DecodingSettings, *,
                 em_targets: Sequence[Sequence[str]] | None = None) -> list[str]:
        hits, misses = self.hits, self.misses
        outputs = (self.generator.generate(prompts, settings) if em_targets is None
                   else generate_stopping_early(self.generator, prompts, settings, em_targets))
        counts = self.calls.setdefault(self.stage, {"calls": 0, "cached": 0, "new": 0})
        counts["calls"] += len(prompts)
        counts["cached"] += self.hits - hits
        counts["new"] += self.misses - misses
        self.done += len(prompts)
        self.cached += self.hits - hits
        if self.progress is not None:
            self.progress(self.stage, self.done, max(self.total, self.done), self.cached)
        return outputs


# --------------------------------------------------------------------------------------------- the pipeline

def _graded_given_methods(labels) -> set[str]:
    from rageval.upload.build import is_graded

    values: dict[str, list[float]] = {}
    for label in labels:
        values.setdefault(label.method, []).append(label.value)
    return {m for m, v in values.items() if is_graded(m, v)}


def gold_passages_of(queries: Sequence[Query], passages: Mapping[str, Passage]) -> dict[str, list[Passage]]:
    return {q.query_id: [passages[p] for p in q.gold_passage_ids if p in passages] for q in queries}


def evaluate_run(base: Run, generator, options: EvaluationOptions, *, log: Log = _quiet,
                 progress: Progress | None = None, encoder=None, dry_run: bool = False) -> Run:
    """``base`` with every piece ``options`` asks for computed (see the module docstring). ``generator`` must
    count ``hits``/``misses`` (a :class:`~rageval.generation.cache.CachedGenerator` or :class:`DryRunGenerator`).
    ``encoder``: the MiniLM encoder of the cosine judge (loaded on first use). ``dry_run``: skip the scoring that
    loads models (BERTScore, cosine) and the measures; only the LLM calls are counted."""
    meter = StageMeter(generator, progress)
    hits_at_start, misses_at_start = meter.hits, meter.misses
    queries = list(base.queries)
    by_id = {q.query_id: q for q in queries}
    rankings = {r.query_id: r for r in base.rankings}
    passages = {p.passage_id: p for p in base.passages}
    methods = set(options.methods)
    metrics = tuple(m for m in options.label_metrics if not (dry_run and m in MODEL_METRICS))
    settings = EragSettings(k=options.depth, metric=options.metric, decoding=options.decoding,
                            batch_size=options.batch_size, cutoffs=options.cutoffs, prompt=options.prompt,
                            em_early_stop=options.em_early_stop)
    timings: dict[str, float] = {}
    notes: list[str] = []

    def timed(name: str, started: float) -> None:
        timings[name] = round(time.perf_counter() - started, 1)
        counts = meter.calls.get(name, {})
        log(f"{name}: {timings[name]} s" + (f" ({counts['cached']} cached, {counts['new']} new LLM calls)"
                                            if counts else ""))

    pairs = sum(min(len(rankings[q.query_id].passages), options.depth) for q in queries)
    doc_outputs, labels = list(base.doc_outputs), list(base.labels)
    # What the user brought (store/provenance.py) is never recomputed: their label methods keep their values, and
    # when they brought end-to-end answers those are the run's answers, none is generated at any k.
    user = brought(base.settings)
    if "erag" in methods:
        started = time.perf_counter()
        meter.begin("erag", pairs)
        doc_outputs, _ = compute_erag_labels(queries, rankings, passages, meter, settings)
        computed = metric_labels(doc_outputs, by_id, metrics)
        labels = [x for x in labels if not x.method.startswith("erag:") or x.method in user.labels]
        labels += [x for x in computed if x.method not in user.labels]
        timed("erag", started)

    e2e_outputs = list(base.e2e_outputs)
    given = {(o.query_id, o.k) for o in e2e_outputs}
    todo = {} if user.answers else {k: [q for q in queries if (q.query_id, k) not in given] for k in options.e2e_ks}
    if user.answers and "e2e" in methods:
        notes.append(f"the end-to-end answers are the user's ({user.by}): none generated")
    if any(todo.values()):
        started = time.perf_counter()
        meter.begin("e2e", sum(len(qs) for qs in todo.values()))
        for k, missing in todo.items():
            if missing:
                e2e_outputs += compute_e2e(missing, rankings, passages, meter, settings, k=k)
        timed("e2e", started)

    evidence, unparsed = list(base.label_evidence), list(base.unparsed)
    if "baselines" in methods:
        reference = compute_reference_labels(queries, rankings, passages, options.depth)
        if not any(q.gold_passage_ids for q in queries) and GOLD not in user.labels:
            reference = [x for x in reference if x.method not in (GOLD, GOLD_PAGE)]
            notes.append("no gold passages (neither in the questions nor in qrels): no gold / gold_page baselines")
        unanswered = {q.query_id for q in queries if not q.answers}
        if unanswered:  # (an imported trace without reference answers): no answer to look for in its passages
            reference = [x for x in reference if not (x.method == CONTAINS_ANSWER and x.query_id in unanswered)]
            notes.append(f"{len(unanswered)} queries without gold answers: no contains_answer labels for them")
        reference = [x for x in reference if x.method not in user.labels]
        asked = [method for method in options.label_judges if method not in user.labels]
        replaced = {x.method for x in reference} | set(asked)
        labels = [x for x in labels if x.method not in replaced]
        labels += reference
        unparsed = [x for x in unparsed if x.judge not in asked]
        for method in asked:  # the LLM judges, each a stage
            started = time.perf_counter()
            meter.begin(method, pairs)
            relevance, new_evidence, new_unparsed = compute_judge_labels(
                queries, rankings, passages, meter, options.depth, method)
            labels += relevance
            evidence = [x for x in evidence if x.method != method] + new_evidence
            unparsed += new_unparsed
            timed(method, started)

    semi_gold, verdicts, failures = list(base.semi_gold_outputs), list(base.verdicts), list(base.failure_cases)
    reteval_settings = None
    if "reteval" in methods:
        gold = gold_passages_of(queries, passages)
        if not any(gold.values()):
            notes.append("LLM-retEval needs gold passages (gold_passage_ids in the questions, or qrels): skipped")
            log("LLM-retEval skipped: no query has gold passages in the corpus")
        else:
            started = time.perf_counter()
            reteval_settings = replace(options.reteval, ks=options.reteval_ks,
                                       judges=tuple(j for j in options.reteval.judges
                                                    if not (dry_run and j == "cosine")))
            semi_gold, verdicts, failures, judged_unparsed = run_reteval(
                queries, rankings, passages, e2e_outputs, meter, reteval_settings, encoder,
                build_prompt=settings.prompt_builder(meter))
            unparsed = [x for x in unparsed if "/" not in x.judge] + judged_unparsed
            timings["reteval"] = round(time.perf_counter() - started, 1)
            log(f"reteval: {timings['reteval']} s")

    given_graded = _graded_given_methods(labels)
    measure_values = []
    if not dry_run:
        started = time.perf_counter()
        measure_values = compute_measure_values(labels, rankings, options.cutoffs, graded_methods=given_graded,
                                                extra_measures=options.measures,
                                                unparsed=unparsed_queries(unparsed))
        timed("measures", started)

    correlations = []
    if not dry_run:
        started = time.perf_counter()
        correlations = compute_correlations(measure_values, e2e_outputs)
        timed("correlations", started)

    used = dict.fromkeys([p for r in rankings.values() for p in r.passage_ids[:options.depth]]
                         + [p for q in queries for p in q.gold_passage_ids] + [x.passage_id for x in labels])
    method_names = sorted({x.method for x in labels})
    graded = sorted({m for m in method_names if is_graded_method(m)} | given_graded)
    run_settings = dict(base.settings) | {
        "num_queries": len(queries), "k": options.depth, "e2e_ks": sorted({o.k for o in e2e_outputs}),
        "cutoffs": list(options.cutoffs), "model_id": generator.model_id,
        "precision": precision_of(generator),
        "prompt": options.prompt.identifier,
        "prompts": {t.identifier: asdict(t) for t in (options.prompt, RELEVANCE_FEW_SHOT, ANSWER_JUDGE_FEW_SHOT)
                    + tuple(judge_of(m).template for m in options.label_judges if m not in DEFAULT_JUDGES)},
        "decoding": {"max_new_tokens": options.decoding.max_new_tokens, "temperature": options.decoding.temperature,
                     "stop": list(options.decoding.stop)},
        "label_metric": options.metric, "e2e_metric": options.metric, "label_metrics": list(metrics),
        **({"em_early_stop": True} if options.em_early_stop else {}),
        "label_methods": method_names, "graded_label_methods": graded,
        **({"label_kinds": stored_kinds} if (stored_kinds := {
            k.name: k.stored() for k in map(method_kind, options.label_judges) if k.source != "built-in"}) else {}),
        "graded_measures": list(GRADED_MEASURES), "extra_measures": list(options.measures),
        "methods": list(options.methods),
        "reteval": reteval_settings.as_dict() if reteval_settings else None,
        "correlations": correlation_settings(correlations),
        "llm_calls": {"cache_hits": meter.hits - hits_at_start, "cache_misses": meter.misses - misses_at_start,
                      "by_stage": meter.calls},
        "timing_s": timings, "pipeline_notes": notes,
        "created_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "rageval_version": __version__,
    }
    return Run(settings=run_settings, queries=queries,
               passages=[passages[p] for p in used if p in passages],
               rankings=[Ranking(q.query_id, rankings[q.query_id].passages[:max(options.depth, _given_depth(base))])
                         for q in queries],
               doc_outputs=doc_outputs, labels=labels, e2e_outputs=sorted(e2e_outputs, key=lambda o: (o.query_id, o.k)),
               measure_values=measure_values, label_evidence=evidence, semi_gold_outputs=semi_gold,
               verdicts=verdicts, failure_cases=failures, correlations=correlations,
               trace_rankings=base.trace_rankings, unparsed=unparsed)


def unparsed_queries(unparsed: Sequence[UnparsedAnswer]) -> set[tuple[str, str]]:
    """(label method, query id) of every label method's query with an unparsed answer: left out of that method's
    measures (:func:`rageval.erag.measures.compute_measure_values`). A verdict's unparsed answer (its ``judge`` is
    ``<judge>/<reference>``, never a label method's name) has no measure."""
    return {(u.judge, u.query_id) for u in unparsed if "/" not in u.judge}


def compute_correlations(measure_values: Sequence[MeasureValue], e2e_outputs: Sequence[E2EOutput],
                         n_resamples: int = DEFAULT_RESAMPLES) -> list[Correlation]:
    """Kendall's tau-b and Spearman's rho, with percentile bootstrap intervals (``n_resamples`` resamples,
    :data:`~rageval.stats.correlation.DEFAULT_CONFIDENCE`, seed :data:`~rageval.stats.correlation.DEFAULT_SEED`),
    between every (label method, measure@k or R-precision) and the E2E score at k, for every k with E2E outputs:
    :func:`rageval.correlations.correlation_table_at_k` at each k, exactly what the Correlations page shows."""
    import pandas as pd

    e2e_outputs = [o for o in e2e_outputs if math.isfinite(o.score)]  # (an unscored imported answer: no score)
    if not measure_values or not e2e_outputs:
        return []
    measures = pd.DataFrame(measure_values, columns=["method", "measure", "query_id", "value"])
    e2e = pd.DataFrame([(o.query_id, o.k, o.score) for o in e2e_outputs], columns=["query_id", "k", "score"])
    return correlations_from_tables(measures, e2e, n_resamples)


def correlations_from_tables(measures: pd.DataFrame, e2e: pd.DataFrame,
                             n_resamples: int = DEFAULT_RESAMPLES) -> list[Correlation]:
    """:func:`compute_correlations` on a run's tables as :class:`~rageval.store.RunReader` reads them
    (``measures``: method, measure, query_id, value; ``e2e``: query_id, k, score)."""
    from rageval.correlations import correlation_table_at_k

    correlations = []
    for k in sorted(e2e["k"].unique()):
        table = correlation_table_at_k(measures, e2e, int(k), n_resamples, with_rprec=True)
        correlations += [Correlation(int(k), r.method, r.measure, int(r.n), float(r.tau), float(r.tau_low),
                                     float(r.tau_high), float(r.rho), float(r.rho_low), float(r.rho_high),
                                     n_resamples, DEFAULT_CONFIDENCE) for r in table.itertuples(index=False)]
    return correlations


def correlation_settings(correlations: Sequence[Correlation]) -> dict | None:
    """What a run's ``settings["correlations"]`` says about its stored correlations (None when there are none)."""
    if not correlations:
        return None
    return {"n_resamples": DEFAULT_RESAMPLES, "confidence": DEFAULT_CONFIDENCE, "seed": DEFAULT_SEED,
            "interval": "percentile bootstrap over queries", "ks": sorted({c.k for c in correlations})}


def store_correlations(path, command: str = "") -> int:
    """Add to the run file at ``path`` the correlations :func:`evaluate_run` stores (:func:`compute_correlations`
    over its stored measures and E2E scores), when it has none: runs built before correlations were stored then
    open the Correlations page and Home without a bootstrap at load. The file is rewritten atomically with every
    other table as it was; ``settings["correlations"]`` says how they were computed and ``correlations_added``
    when and by which command. Returns the number of correlations added (0: it had some, or it has no E2E
    scores or measures)."""
    from rageval.store import read_run, write_run

    run = read_run(path)
    if run.correlations:
        return 0
    started = time.perf_counter()
    correlations = compute_correlations(run.measure_values, run.e2e_outputs)
    if not correlations:
        return 0
    settings = dict(run.settings) | {
        "correlations": correlation_settings(correlations),
        "correlations_added": {"at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "command": command,
                               "seconds": round(time.perf_counter() - started, 1), "rageval_version": __version__}}
    write_run(replace(run, settings=settings, correlations=correlations), path)
    return len(correlations)


def _given_depth(base: Run) -> int:
    return max((len(r.passages) for r in base.rankings), default=0)


def run_reteval(queries: Sequence[Query], rankings: Mapping[str, Ranking], passages: Mapping[str, Passage],
                e2e_outputs, meter: StageMeter, options: llm_reteval.RetEvalSettings, encoder=None, *,
                build_prompt=None):
    """Semi-gold samples, every judge's verdicts at every LLM-retEval k, the failure cases of each judge, and the
    judges' replies that could not be read (:class:`~rageval.store.records.UnparsedAnswer`)."""
    gold = gold_passages_of(queries, passages)
    answerable = [q for q in queries if gold[q.query_id]]
    meter.begin("semi_gold", len(answerable) * options.semi_gold.samples)
    semi_gold = llm_reteval.sample_semi_gold(queries, gold, meter, build_prompt or prompt_builder(meter),
                                             options.semi_gold)
    semi_by_query: dict[str, list[str]] = {}
    for output in semi_gold:
        semi_by_query.setdefault(output.query_id, []).append(output.output)
    answers_at_k = {k: {o.query_id: o.output for o in e2e_outputs if o.k == k} for k in options.ks}
    verdicts, unparsed = [], []
    for name in options.judges:
        if name == "llm":
            meter.begin("llm_judge", 2 * sum(len([q for q in answerable if q.query_id in answers_at_k[k]])
                                             for k in options.ks))
        if name == "cosine" and encoder is None:
            from rageval.retrieval.dense import MiniLMEncoder

            encoder = MiniLMEncoder()
        judge = llm_reteval.make_judge(name, generator=meter, encoder=encoder, f1_threshold=options.f1_threshold,
                                       cosine_threshold=options.cosine_threshold)
        judged, not_read = llm_reteval.judge_answers(judge, queries, answers_at_k, semi_by_query)
        verdicts += judged
        unparsed += not_read
    retrieved = {q.query_id: [passages[p] for p in rankings[q.query_id].passage_ids] for q in queries}
    failures = llm_reteval.find_failure_cases(queries, retrieved, gold, answers_at_k, semi_by_query, verdicts)
    return semi_gold, verdicts, failures, unparsed
