"""``rageval evaluate`` end to end: config -> the user's sources -> the generator -> :func:`evaluate_run` -> one
run file; and ``--dry-run``, the same path with :class:`DryRunGenerator`, which loads no model."""

from __future__ import annotations

import contextlib
import re
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

from rageval.erag.labels import EragSettings, compute_erag_labels
from rageval.errors import RagevalError
from rageval.generation.cache import CachedGenerator, LLMCache
from rageval.generation.factory import check_model, expected_model_id, load_generator
from rageval.labelmethods import DEFAULT_JUDGES
from rageval.paths import REPO_ROOT, not_writable_file, user_runs_dir
from rageval.pipeline.config import EvaluateConfig
from rageval.pipeline.evaluate import DryRunGenerator, EvaluationOptions, Log, Progress, evaluate_run, llm_stages
from rageval.pipeline.sources import LoadedInputs, ShippedData, load_inputs, load_shipped_inputs
from rageval.store import Run, write_run
from rageval.store.provenance import UPLOADED, brought, keep_brought, record_brought
from rageval.types import Ranking, ScoredPassage

ANSWERS_NEEDED = "eRAG, E2E, the contains-answer baseline and LLM-retEval score answers against them"


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def default_out_path(config: EvaluateConfig, inputs: LoadedInputs) -> Path:
    """``<user runs folder>/<dataset>-<retriever or run>-<model>.sqlite``."""
    candidates = config.retriever or Path(config.run or "").stem  # (load_inputs checked: one of the two)
    model = Path(config.model_settings.model.rstrip("/")).name
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", f"{inputs.run.settings.get('dataset', 'run')}-{candidates}-{model}")
    return user_runs_dir() / f"{name.strip('-.')[:100]}.sqlite"


def check_out_path(path: Path) -> Path:
    """Where ``--out`` writes: a bare file name (``mine.sqlite``) goes into the user's runs folder; user runs never go
    into the checkout (the shipped runs in data/runs are read-only, and user data is never in the repository)."""
    path = Path(path).expanduser()
    if path.parent == Path("."):
        path = user_runs_dir() / path.name
    resolved = path.resolve()
    if resolved.is_relative_to(REPO_ROOT / "data"):
        raise RagevalError(f"--out {path}: the shipped data folder is read-only; write user runs elsewhere (default: "
                           f"{user_runs_dir()}, or $RAGEVAL_RUNS_DIR)")
    if resolved.is_relative_to(REPO_ROOT) and (REPO_ROOT / ".git").exists():
        raise RagevalError(f"--out {path}: that is inside rageval's checkout ({REPO_ROOT}), where user data never "
                           f"goes; give a bare name (it goes to {user_runs_dir()}) or a folder of yours")
    reason = not_writable_file(resolved)
    if reason:
        raise RagevalError(f"--out {path}: {reason}; expected a .sqlite file name")
    return resolved


def prepare(config: EvaluateConfig, log: Log = _stderr,
            shipped: ShippedData | None = None) -> tuple[LoadedInputs, EvaluationOptions]:
    """Read and validate every input (raises a one-line :class:`~rageval.errors.DataError` before any model
    loads or any file is written). ``shipped``: the shipped corpus and retrievers to share (a config without
    files evaluates a shipped dataset slice; built on first use otherwise)."""
    options = config.options()
    if config.shipped:
        inputs = load_shipped_inputs(config.dataset or "", config.retriever or "", options.depth,
                                     shipped or ShippedData(), offset=config.offset, num_queries=config.num_queries,
                                     log=log)
    else:
        if config.offset or config.num_queries is not None or config.retriever == "candidates":
            raise RagevalError("offset, num_queries and the candidates retriever are for a shipped dataset "
                               "(--dataset nq_open or hotpotqa without --queries, --corpus or --run)")
        inputs = load_inputs(config.sources(), options.depth, dataset=config.dataset or "", log=log)
    if {"erag", "e2e", "reteval"} & set(options.methods) or "baselines" in options.methods:
        inputs.require_answers(ANSWERS_NEEDED)
    check_model(config.model_settings)
    return inputs, options


def _settings_of(config: EvaluateConfig, inputs: LoadedInputs, command: str, name: str) -> dict:
    if inputs.shipped:  # a shipped dataset slice: its name (the run file's), slice, retriever and corpus note
        return {**inputs.run.settings, "name": name, **inputs.description, "command": command}
    given = inputs.run
    files = ", ".join(f"{name}: {value}" for name, value in (("queries", config.queries), ("run", config.run),
                                                            ("qrels", config.qrels)) if value)
    brought = record_brought(f"rageval evaluate ({files})", labels={x.method for x in given.labels},
                             e2e_ks={o.k for o in given.e2e_outputs}, e2e_answers=len(given.e2e_outputs),
                             cutoffs=config.options().measure_cutoffs)
    return {**inputs.run.settings, **inputs.description, "source": "rageval evaluate",
            "corpus": {"passages": inputs.corpus_size, "file": config.corpus},
            "config": config.as_dict(), "command": command, "brought": brought,
            **({"e2e_answers": UPLOADED} if given.e2e_outputs else {})}


def evaluate_inputs(config: EvaluateConfig, inputs: LoadedInputs, options: EvaluationOptions, generator, *,
                    name: str = "", log: Log = _stderr, progress: Progress | None = None, command: str = "",
                    encoder=None) -> Run:
    """The run of ``config`` on its prepared ``inputs`` (:func:`prepare`): :func:`evaluate_run`, then (when
    ``config.rerank_check``) the re-ranking check. ``generator`` must count ``hits``/``misses`` (a
    :class:`~rageval.generation.cache.CachedGenerator`); ``name``: the run's name (the file's stem)."""
    base = replace(inputs.run, settings=_settings_of(config, inputs, command, name))
    run = evaluate_run(base, generator, options, log=log, progress=progress, encoder=encoder)
    run = replace(run, settings={**run.settings, "timing_s": {**inputs.timing_s, **run.settings["timing_s"]}})
    if config.rerank_check:
        run = replace(run, settings={**run.settings, "rerank_check": rerank_check(run, generator, options)})
        log(f"re-ranking check: {run.settings['rerank_check']}")
    return run


def evaluate_config(config: EvaluateConfig, generator, *, shipped: ShippedData | None = None, name: str = "",
                    log: Log = _stderr, progress: Progress | None = None, command: str = "") -> Run:
    """:func:`prepare` then :func:`evaluate_inputs`: the run of ``config`` in memory, nothing written."""
    inputs, options = prepare(config, log, shipped)
    return evaluate_inputs(config, inputs, options, generator, name=name, log=log, progress=progress,
                           command=command)


def rerank_check(run: Run, generator, options: EvaluationOptions) -> dict:
    """Each of the run's top-k lists reversed goes through eRAG again: with every (question, passage) answer in
    the LLM-call cache, the counters show no new call (eRAG's labels do not depend on the list's order)."""
    depth = options.depth
    rankings = {r.query_id: Ranking(r.query_id, tuple(reversed(r.passages[:depth]))) for r in run.rankings}
    settings = EragSettings(k=depth, metric=options.metric, decoding=options.decoding,
                            batch_size=options.batch_size, cutoffs=options.cutoffs, prompt=options.prompt,
                            em_early_stop=options.em_early_stop)
    hits, misses = generator.hits, generator.misses
    compute_erag_labels(run.queries, rankings, {p.passage_id: p for p in run.passages}, generator, settings)
    return {"reranking": f"each top-{depth} reversed, eRAG labels recomputed",
            "cache_hits": generator.hits - hits, "cache_misses": generator.misses - misses}


def evaluate(config: EvaluateConfig, *, generator=None, shipped: ShippedData | None = None, out: Path | None = None,
             log: Log = _stderr, progress: Progress | None = None, command: str = "", encoder=None) -> Path:
    """Run ``config`` end to end and write one run file (atomically; nothing is written on an input error).
    ``generator``: a ready model (tests, or one shared by several runs); else loaded with
    :func:`rageval.generation.factory.load_generator`. ``out``: the run file, written where it says (``rageval
    demo-runs`` writes the shipped runs into data/runs); else ``config.out``, never in the checkout. Every LLM call
    goes through the LLM-call cache, so a killed run resumes at no LLM cost."""
    started = time.perf_counter()
    if out is None and config.out:
        check_out_path(Path(config.out))  # before the inputs are read and retrieved
    inputs, options = prepare(config, log, shipped)
    if out is None:
        out = check_out_path(Path(config.out) if config.out else default_out_path(config, inputs))
    out = Path(out)
    with LLMCache(config.cache) if config.cache else LLMCache() as cache:  # closed: no -wal/-shm left behind
        model = generator if generator is not None else load_generator(config.model_settings)
        cached = CachedGenerator(model, cache)
        run = evaluate_inputs(config, inputs, options, cached, name=out.stem, log=log, progress=progress,
                              command=command, encoder=encoder)
    run.settings["timing_s"]["total"] = round(time.perf_counter() - started, 1)
    out.parent.mkdir(parents=True, exist_ok=True)
    return write_run(run, out)


@dataclass(frozen=True)
class DryRunReport:
    """What a run will compute: sizes, and per LLM stage the calls it makes, how many are cached and how many new."""

    queries: int
    passages_labelled: int
    corpus_size: int
    model_id: str
    options: EvaluationOptions
    calls: dict[str, dict[str, int]]
    out: Path

    @property
    def new_calls(self) -> int:
        return sum(c["new"] for c in self.calls.values())

    def lines(self) -> list[str]:
        o = self.options
        described = [f"queries: {self.queries:,}; corpus: {self.corpus_size:,} passages; eRAG depth {o.depth} "
                     f"({self.passages_labelled:,} (question, passage) pairs), k = {', '.join(map(str, o.ks))}; "
                     f"methods: {', '.join(o.methods)}",
                     f"model: {self.model_id} (not loaded)", f"run file: {self.out}",
                     f"{'stage':<15} {'LLM calls':>10} {'cached':>8} {'new':>8}"]
        for stage in llm_stages():
            if stage in self.calls:
                c = self.calls[stage]
                bound = "  (at most: depends on answers not generated yet)" if stage == "llm_judge" else ""
                described.append(f"{stage:<15} {c['calls']:>10,} {c['cached']:>8,} {c['new']:>8,}{bound}")
        total = {k: sum(c[k] for c in self.calls.values()) for k in ("calls", "cached", "new")}
        described.append(f"{'total':<15} {total['calls']:>10,} {total['cached']:>8,} {total['new']:>8,}")
        return described


def dry_run(config: EvaluateConfig, *, log: Log = _stderr) -> DryRunReport:
    """What :func:`evaluate` would do, and how many LLM calls it would make (and how many are already in the
    cache), without loading any model: the pipeline runs with a :class:`DryRunGenerator` that only reads the
    cache. Scoring that loads a model (BERTScore, the cosine judge) and the measures are skipped."""
    if config.out:
        check_out_path(Path(config.out))  # before the inputs are read and retrieved
    inputs, options = prepare(config, log)
    out = check_out_path(Path(config.out) if config.out else default_out_path(config, inputs))
    with LLMCache(config.cache) if config.cache else LLMCache() as cache:  # closed: no -wal/-shm left behind
        generator = DryRunGenerator(expected_model_id(config.model_settings), cache)
        run = evaluate_run(inputs.run, generator, options, dry_run=True)
    calls = run.settings["llm_calls"]["by_stage"]
    pairs = sum(min(len(r.passages), options.depth) for r in inputs.run.rankings)
    return DryRunReport(len(inputs.run.queries), pairs, inputs.corpus_size, generator.model_id, options, calls, out)


@dataclass(frozen=True)
class _Completion:
    """What :func:`complete_run_file` computes for a run file: the run read, the pipeline methods and options."""

    run: Run
    methods: tuple[str, ...]
    options: EvaluationOptions
    imported: bool
    missing_answers: tuple[str, ...]


def _completion(path: Path, pieces: tuple[str, ...] | None) -> _Completion | None:
    """The run at ``path`` and what completing it computes (None: nothing)."""
    from rageval.pipeline.summary import is_imported, missing_pieces, run_summary
    from rageval.reteval.settings import RetEvalSettings
    from rageval.store import read_run

    run = read_run(path)
    lacking = missing_pieces(run_summary(path), dict(run.settings))
    wanted = tuple(p for p in (pieces or tuple(lacking)) if p in lacking or p == "reteval")
    if not wanted:
        return None
    imported = is_imported(dict(run.settings))
    missing_answers = [q.query_id for q in run.queries if not q.answers]
    if missing_answers and not imported:  # (an imported run lacks then only what needs no answers: missing_pieces)
        raise RagevalError(f"{path}: query {missing_answers[0]!r} has no gold answers; {ANSWERS_NEEDED}")
    depth = max((len(r.passages) for r in run.rankings), default=0)
    if depth == 0:
        raise RagevalError(f"{path}: the run ranks no passages")
    have_ks = sorted({o.k for o in run.e2e_outputs})
    user = brought(run.settings)
    if imported:
        # The system's answers are the E2E answers, at its k: none is generated (no e2e method, LLM-retEval at
        # those ks only); every passage of the lists is labelled (eRAG depth: the longest list).
        wanted = tuple(p for p in wanted if p != "e2e")
        ks = tuple(sorted({*have_ks, depth}))
        reteval = RetEvalSettings(ks=tuple(have_ks) or (depth,))
    elif user.answers:  # an upload's answers: the run's own, at the ks the user gave; none generated
        wanted = tuple(p for p in wanted if p != "e2e")
        ks = tuple(sorted({*have_ks, min(depth, 10)}))
        reteval = RetEvalSettings(ks=tuple(have_ks))
    else:
        # The E2E sweep covers every measure cutoff the run has (missing_pieces asks for E2E there, so the
        # correlations at an upload's k=3 have answers to correlate with).
        run_cutoffs = {int(c) for c in run.settings.get("cutoffs", ())}
        ks = tuple(sorted({k for k in (1, 5, 10, *have_ks, *run_cutoffs) if k <= depth} | {min(depth, 10)}))
        reteval = RetEvalSettings()
    methods = tuple(m for m in ("erag", "e2e", "baselines", "reteval") if m in wanted)
    from rageval.pipeline.summary import wanted_judges

    # Every cutoff the run had keeps its measures (an upload's k=3 as much as an import's).
    cutoffs = tuple(sorted({int(c) for c in run.settings.get("cutoffs", ())} | set(user.cutoffs)))
    options = EvaluationOptions(methods=methods, ks=ks, reteval=reteval, measure_cutoffs=cutoffs,
                                label_judges=(*DEFAULT_JUDGES, *wanted_judges(dict(run.settings))))
    return _Completion(run, methods, options, imported, tuple(missing_answers))


def _complete(c: _Completion, generator, log: Log, progress: Progress | None, dry_run: bool = False) -> Run:
    """The run of ``c`` with its missing pieces computed by ``generator`` (one that counts hits and misses)."""
    run, options = c.run, c.options
    if c.imported and 0 < len(c.missing_answers) < len(run.queries):
        final = _complete_in_two_parts(run, generator, options, log, progress, dry_run)
    else:
        final = evaluate_run(replace(run, measure_values=()), generator, options, log=log, progress=progress,
                             dry_run=dry_run)
    if c.imported:
        final = _label_other_stages(run, final, generator, options, log, progress, dry_run)
    return final


def completion_plan(path: Path, model_id: str, pieces: tuple[str, ...] | None = None, *,
                    cache: LLMCache | None = None) -> tuple[tuple[str, int, int], ...]:
    """What :func:`complete_run_file` will ask the model, without loading it (as :func:`dry_run`: a
    :class:`DryRunGenerator` reads the LLM-call cache only): ``(stage, LLM calls, of them cached)`` per stage, in
    the order the stages run (a stage met twice, as in an imported run's two parts, counted once, where first met).
    The LLM judge's count is an upper bound (it depends on answers not generated yet)."""
    c = _completion(Path(path), pieces)
    if c is None:
        return ()
    counts: dict[str, list[int]] = {}
    last: list = [None, 0, 0]  # the stage visit in progress: stage, calls, cached

    def record(stage: str, done: int, total: int, cached: int) -> None:
        if stage != last[0] or done < last[1]:  # a new visit (a stage met again starts from 0)
            last[:] = [stage, 0, 0]
        row = counts.setdefault(stage, [0, 0])
        row[0] += done - last[1]
        row[1] += cached - last[2]
        last[:] = [stage, done, cached]

    with contextlib.ExitStack() as stack:
        if cache is None:
            cache = stack.enter_context(LLMCache())
        _complete(c, DryRunGenerator(model_id, cache), lambda message: None, record, dry_run=True)
    return tuple((stage, calls, cached) for stage, (calls, cached) in counts.items())


def complete_run_file(path: Path, model_settings, pieces: tuple[str, ...] | None = None, *, generator=None,
                      cache: LLMCache | None = None, log: Log = _stderr, progress: Progress | None = None) -> Path:
    """Compute what the run file at ``path`` lacks (:func:`rageval.pipeline.summary.missing_pieces`, or
    ``pieces``) with the model ``model_settings`` describe, and rewrite the file atomically with them. Given
    labels and answers (an upload's) are kept; pieces already present are not recomputed. Every LLM call goes
    through the LLM-call cache, so a killed completion resumes at no LLM cost. The dashboard's "compute what
    this run lacks" job runs this."""
    path = Path(path)
    c = _completion(path, pieces)
    if c is None:
        log(f"{path.name}: nothing to compute")
        return path
    run, methods = c.run, c.methods
    user = brought(run.settings)
    model = generator if generator is not None else load_generator(model_settings)
    cached = CachedGenerator(model, cache if cache is not None else LLMCache())  # an empty cache is falsy (len 0)
    final = _complete(c, cached, log, progress)
    settings = dict(final.settings)
    history = list(run.settings.get("completed", []))
    history.append({"pieces": list(methods), "model_id": cached.model_id, "model": model_settings.as_dict()
                    if hasattr(model_settings, "as_dict") else str(model_settings),
                    "at": settings.get("created_at"), "llm_calls": settings.get("llm_calls")})
    settings["completed"] = history
    for key in ("source", "format", "uploaded_files", "uploaded_at", "retriever", "dataset", "name", "notes",
                *(("k",) if user.answers else ())):
        if key in run.settings:
            settings[key] = run.settings[key]
    return write_run(replace(final, settings=keep_brought(run.settings, settings)), path)


def _label_other_stages(run: Run, final: Run, generator, options: EvaluationOptions, log: Log,
                        progress: Progress | None, dry_run: bool = False) -> Run:
    """An imported run's passages that only an earlier stage's list holds (a first-stage passage the reranker
    dropped) labelled too, by the same label methods as the main ranking's (eRAG, the baselines; no answer is
    generated), so the stage analysis (:mod:`rageval.traces.stages`) knows whether the passage the reranker
    dropped would have helped. Their labels are stored beside the others; the measures stay those of the main
    ranking (labels of passages outside a list do not count for list-bound methods)."""
    main = {r.query_id: set(r.passage_ids) for r in final.rankings}
    extra: dict[str, list[ScoredPassage]] = {}
    for row in sorted(run.trace_rankings, key=lambda t: (t.query_id, t.stage, t.rank)):
        if row.passage_id not in main.get(row.query_id, set()) and row.passage_id not in {
                p.passage_id for p in extra.get(row.query_id, [])}:
            extra.setdefault(row.query_id, []).append(ScoredPassage(row.passage_id, -float(row.rank)))
    if not extra:
        return final
    log(f"labelling {sum(map(len, extra.values()))} passages that only an earlier stage's list holds")
    for answered in (True, False):  # eRAG only where there are gold answers to score against
        methods = tuple(m for m in options.methods if m in (("erag", "baselines") if answered else ("baselines",)))
        queries = [q for q in run.queries if q.query_id in extra and bool(q.answers) == answered]
        if queries and methods:
            final = _add_labels(final, _labelled(run, queries, extra, generator, options, methods, log, progress,
                                                        dry_run))
    return final


def _labelled(run: Run, queries, extra, generator, options: EvaluationOptions, methods, log: Log,
              progress: Progress | None, dry_run: bool = False) -> Run:
    depth = max(len(extra[q.query_id]) for q in queries)
    base = Run(run.settings, queries, run.passages, [Ranking(q.query_id, tuple(extra[q.query_id])) for q in queries])
    return evaluate_run(base, generator, replace(options, methods=methods, ks=(depth,), measure_cutoffs=()),
                        log=log, progress=progress, dry_run=dry_run)


def _add_labels(final: Run, others: Run) -> Run:
    """``final`` with the labels, their evidence, the unparsed answers, the single-passage outputs and the passages
    of ``others`` it lacks (nothing of ``final`` is replaced)."""
    have = {(x.method, x.query_id, x.passage_id) for x in final.labels}
    labels = [x for x in others.labels if (x.method, x.query_id, x.passage_id) not in have]
    outputs = {(o.query_id, o.passage_id) for o in final.doc_outputs}
    evidence = {(e.method, e.query_id, e.passage_id) for e in final.label_evidence}
    passages = {p.passage_id for p in final.passages}
    unread = {(u.judge, u.query_id, u.item) for u in final.unparsed}
    return replace(final, labels=[*final.labels, *labels],
                   unparsed=[*final.unparsed, *(u for u in others.unparsed
                                                if (u.judge, u.query_id, u.item) not in unread)],
                   doc_outputs=[*final.doc_outputs, *(o for o in others.doc_outputs
                                                      if (o.query_id, o.passage_id) not in outputs)],
                   label_evidence=[*final.label_evidence, *(e for e in others.label_evidence
                                                           if (e.method, e.query_id, e.passage_id) not in evidence)],
                   passages=[*final.passages, *(p for p in others.passages if p.passage_id not in passages)])


def _complete_in_two_parts(run: Run, generator, options: EvaluationOptions, log: Log,
                           progress: Progress | None, dry_run: bool = False) -> Run:
    """An imported run where only some questions have gold answers: those get every piece ``options`` asks for,
    the others only what needs no gold answers (the baselines: the LLM's relevance labels); one run again, in
    the questions' order, its correlations those of the first part (the others' answers have no score)."""
    answered = {q.query_id for q in run.queries if q.answers}

    def part(keep: bool) -> Run:
        def mine(query_id: str) -> bool:
            return (query_id in answered) == keep

        return replace(
            run, queries=[q for q in run.queries if mine(q.query_id)],
            rankings=[r for r in run.rankings if mine(r.query_id)],
            doc_outputs=[o for o in run.doc_outputs if mine(o.query_id)],
            labels=[x for x in run.labels if mine(x.query_id)],
            e2e_outputs=[o for o in run.e2e_outputs if mine(o.query_id)],
            label_evidence=[e for e in run.label_evidence if mine(e.query_id)],
            semi_gold_outputs=[o for o in run.semi_gold_outputs if mine(o.query_id)],
            verdicts=[v for v in run.verdicts if mine(v.query_id)],
            failure_cases=[f for f in run.failure_cases if mine(f.query_id)],
            measure_values=(), correlations=(), trace_rankings=())

    log(f"{len(answered)} of {len(run.queries)} questions have gold answers: the others get only what needs none")
    first = evaluate_run(part(True), generator, options, log=log, progress=progress, dry_run=dry_run)
    rest_methods = tuple(m for m in options.methods if m == "baselines")
    second = evaluate_run(part(False), generator, replace(options, methods=rest_methods), log=log, progress=progress,
                          dry_run=dry_run)
    order = {q.query_id: i for i, q in enumerate(run.queries)}
    labels = [*first.labels, *second.labels]
    settings = dict(first.settings)
    settings["num_queries"] = len(run.queries)
    settings["label_methods"] = sorted({x.method for x in labels})
    settings["graded_label_methods"] = sorted(set(first.settings.get("graded_label_methods", []))
                                              | set(second.settings.get("graded_label_methods", [])))
    settings["pipeline_notes"] = [*first.settings.get("pipeline_notes", []),
                                  *second.settings.get("pipeline_notes", [])]
    passages = {p.passage_id: p for p in [*first.passages, *second.passages]}
    return Run(settings, run.queries, list(passages.values()),
               sorted([*first.rankings, *second.rankings], key=lambda r: order[r.query_id]),
               doc_outputs=[*first.doc_outputs, *second.doc_outputs], labels=labels,
               e2e_outputs=sorted([*first.e2e_outputs, *second.e2e_outputs], key=lambda o: (o.query_id, o.k)),
               measure_values=[*first.measure_values, *second.measure_values],
               label_evidence=[*first.label_evidence, *second.label_evidence],
               semi_gold_outputs=first.semi_gold_outputs, verdicts=first.verdicts,
               failure_cases=first.failure_cases, correlations=first.correlations,
               trace_rankings=run.trace_rankings)
