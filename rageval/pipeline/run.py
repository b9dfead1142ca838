"""``rageval evaluate`` end to end: config -> the user's sources -> the generator -> :func:`evaluate_run` -> one
run file; and ``--dry-run``, the same path with :class:`DryRunGenerator`, which loads no model."""

from __future__ import annotations

import re
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

from rageval.erag.labels import EragSettings, compute_erag_labels
from rageval.errors import RagevalError
from rageval.generation.cache import CachedGenerator, LLMCache
from rageval.generation.factory import check_model, expected_model_id, load_generator
from rageval.paths import REPO_ROOT, not_writable_file, user_runs_dir
from rageval.pipeline.config import EvaluateConfig
from rageval.pipeline.evaluate import LLM_STAGES, DryRunGenerator, EvaluationOptions, Log, Progress, evaluate_run
from rageval.pipeline.sources import LoadedInputs, ShippedData, load_inputs, load_shipped_inputs
from rageval.store import Run, write_run
from rageval.types import Ranking

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
    """User runs never go into the checkout (the shipped runs in data/runs are read-only)."""
    resolved = Path(path).expanduser().resolve()
    if resolved.is_relative_to(REPO_ROOT / "data"):
        raise RagevalError(f"--out {path}: the shipped data folder is read-only; write user runs elsewhere (default: "
                           f"{user_runs_dir()}, or $RAGEVAL_RUNS_DIR)")
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
    return {**inputs.run.settings, **inputs.description, "source": "rageval evaluate",
            "corpus": {"passages": inputs.corpus_size, "file": config.corpus},
            "config": config.as_dict(), "command": command}


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
        for stage in LLM_STAGES:
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


def complete_run_file(path: Path, model_settings, pieces: tuple[str, ...] | None = None, *, generator=None,
                      cache: LLMCache | None = None, log: Log = _stderr, progress: Progress | None = None) -> Path:
    """Compute what the run file at ``path`` lacks (:func:`rageval.pipeline.summary.missing_pieces`, or
    ``pieces``) with the model ``model_settings`` describe, and rewrite the file atomically with them. Given
    labels and answers (an upload's) are kept; pieces already present are not recomputed. Every LLM call goes
    through the LLM-call cache, so a killed completion resumes at no LLM cost. The dashboard's "compute what
    this run lacks" job runs this."""
    from rageval.pipeline.summary import missing_pieces, run_summary
    from rageval.store import read_run

    path = Path(path)
    run = read_run(path)
    lacking = missing_pieces(run_summary(path), dict(run.settings))
    wanted = tuple(p for p in (pieces or tuple(lacking)) if p in lacking or p == "reteval")
    if not wanted:
        log(f"{path.name}: nothing to compute")
        return path
    missing_answers = [q.query_id for q in run.queries if not q.answers]
    if missing_answers:
        raise RagevalError(f"{path}: query {missing_answers[0]!r} has no gold answers; {ANSWERS_NEEDED}")
    depth = max((len(r.passages) for r in run.rankings), default=0)
    if depth == 0:
        raise RagevalError(f"{path}: the run ranks no passages")
    have_ks = sorted({o.k for o in run.e2e_outputs})
    ks = tuple(sorted({k for k in (1, 5, 10, *have_ks) if k <= depth} | {min(depth, 10)}))
    methods = tuple(m for m in ("erag", "e2e", "baselines", "reteval") if m in wanted)
    from rageval.pipeline.summary import wants_umbrela

    options = EvaluationOptions(methods=methods, ks=ks, umbrela=wants_umbrela(dict(run.settings)))
    model = generator if generator is not None else load_generator(model_settings)
    cached = CachedGenerator(model, cache if cache is not None else LLMCache())  # an empty cache is falsy (len 0)
    final = evaluate_run(replace(run, measure_values=()), cached, options, log=log, progress=progress)
    settings = dict(final.settings)
    history = list(run.settings.get("completed", []))
    history.append({"pieces": list(methods), "model_id": cached.model_id, "model": model_settings.as_dict()
                    if hasattr(model_settings, "as_dict") else str(model_settings),
                    "at": settings.get("created_at"), "llm_calls": settings.get("llm_calls")})
    settings["completed"] = history
    for key in ("source", "format", "uploaded_files", "uploaded_at", "retriever", "dataset", "name", "notes"):
        if key in run.settings:
            settings[key] = run.settings[key]
    return write_run(replace(final, settings=settings), path)
