"""``rageval evaluate`` end to end: config -> the user's sources -> the generator -> :func:`evaluate_run` -> one
run file; and ``--dry-run``, the same path with :class:`DryRunGenerator`, which loads no model."""

from __future__ import annotations

import re
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

from rageval.errors import RagevalError
from rageval.generation.cache import CachedGenerator, LLMCache
from rageval.generation.factory import check_model, expected_model_id, load_generator
from rageval.paths import REPO_ROOT, not_writable_file, user_runs_dir
from rageval.pipeline.config import EvaluateConfig
from rageval.pipeline.evaluate import LLM_STAGES, DryRunGenerator, EvaluationOptions, Log, Progress, evaluate_run
from rageval.pipeline.sources import LoadedInputs, load_inputs
from rageval.store import write_run

ANSWERS_NEEDED = "eRAG, E2E, the contains-answer baseline and LLM-retEval score answers against them"


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def default_out_path(config: EvaluateConfig, inputs: LoadedInputs) -> Path:
    """``<user runs folder>/<dataset>-<retriever or run>-<model>.sqlite``."""
    candidates = config.retriever or Path(config.run or "").stem  # (load_inputs checked: one of the two)
    model = Path(config.model.rstrip("/")).name
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


def prepare(config: EvaluateConfig, log: Log = _stderr) -> tuple[LoadedInputs, EvaluationOptions]:
    """Read and validate every input (raises a one-line :class:`~rageval.errors.DataError` before any model
    loads or any file is written)."""
    options = config.options()
    inputs = load_inputs(config.sources(), options.depth, dataset=config.dataset or "", log=log)
    if {"erag", "e2e", "reteval"} & set(options.methods) or "baselines" in options.methods:
        inputs.require_answers(ANSWERS_NEEDED)
    check_model(config.model_settings())
    return inputs, options


def _settings_of(config: EvaluateConfig, inputs: LoadedInputs, command: str) -> dict:
    return {**inputs.run.settings, **inputs.description, "source": "rageval evaluate",
            "corpus": {"passages": inputs.corpus_size, "file": config.corpus},
            "config": config.as_dict(), "command": command}


def evaluate(config: EvaluateConfig, *, generator=None, log: Log = _stderr, progress: Progress | None = None,
             command: str = "") -> Path:
    """Run ``config`` end to end and write one run file (atomically; nothing is written on an input error).
    ``generator``: a ready model (tests); else loaded with :func:`rageval.generation.factory.load_generator`.
    Every LLM call goes through the LLM-call cache, so a killed run resumes at no LLM cost."""
    started = time.perf_counter()
    if config.out:
        check_out_path(Path(config.out))  # before the inputs are read and retrieved
    inputs, options = prepare(config, log)
    out = check_out_path(Path(config.out) if config.out else default_out_path(config, inputs))
    with LLMCache(config.cache) if config.cache else LLMCache() as cache:  # closed: no -wal/-shm left behind
        model = generator if generator is not None else load_generator(config.model_settings())
        cached = CachedGenerator(model, cache)
        base = replace(inputs.run, settings=_settings_of(config, inputs, command))
        run = evaluate_run(base, cached, options, log=log, progress=progress)
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
        generator = DryRunGenerator(expected_model_id(config.model_settings()), cache)
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
    options = EvaluationOptions(methods=methods, ks=ks)
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
