"""The worker: what ``rageval rescore run JOB`` does in its own process. A labelling job labels its remaining
passages batch by batch into the run file; a complete job runs :func:`rageval.pipeline.run.complete_run_file`. Both
beat a heartbeat, read the cancel flag between batches, and store how the attempt ended."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import signal
import sqlite3
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from rageval.errors import RagevalError
from rageval.generation.base import Generator
from rageval.jobs.control import lacking_pieces
from rageval.jobs.labelling import batches, decoding_for, device_of, label_items, load_job_generator
from rageval.jobs.run_file import (
    answered_items,
    labelled_items,
    read_job_inputs,
    record_provenance,
    write_labels,
    write_method_measures,
)
from rageval.jobs.spec import HEARTBEAT_S, JobCancelled, JobSpec, JobStore, model_identity
from rageval.store.jobs import CANCELLED, DONE, FAILED, Job


@contextmanager
def _heartbeat(store_path: Path, job_id: int, interval_s: float = HEARTBEAT_S) -> Iterator[None]:
    """Beat the job's heartbeat every ``interval_s`` from a thread (with its own connection) while the body runs,
    so a long model load or batch still reads as alive."""
    stop = threading.Event()

    def beat() -> None:
        with JobStore(store_path) as store:
            while not stop.wait(interval_s):
                with contextlib.suppress(sqlite3.Error):
                    store.beat(job_id)

    thread = threading.Thread(target=beat, name=f"rescore-heartbeat-{job_id}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


@contextmanager
def _attempt(store: JobStore, job_id: int, log: Callable[[str], None], stopped: str
             ) -> Iterator[contextlib.ExitStack]:
    """One attempt of a worker: the heartbeat while it runs, resources closed at its end (the yielded stack), and
    its outcome stored: a cancel (SIGTERM, Ctrl-C) is logged with ``stopped`` and recorded, then swallowed (the
    caller returns the stored job); any other error is recorded with its message and raised."""
    with _heartbeat(store.path, job_id), contextlib.ExitStack() as resources:
        try:
            yield resources
        except (JobCancelled, KeyboardInterrupt):
            log(f"job {job_id}: {stopped}")
            store.finish(job_id, CANCELLED)
        except Exception as error:
            store.finish(job_id, FAILED, error=str(error) if isinstance(error, RagevalError)
                         else f"{type(error).__name__}: {error}")
            raise


def run_job(job_id: int, store: JobStore | None = None, *, generator: Generator | None = None,
            log: Callable[[str], None] | None = None) -> Job[JobSpec]:
    """The worker: label the job's remaining items batch by batch (each batch committed to the run file, then
    counted in the jobs database), check the cancel flag between batches, and when all are labelled write the
    method's measure values. ``generator`` replaces the job's model (tests); either way calls go through the
    LLM-call cache. Returns the job as it ended; a failure is stored with its message and raised."""
    from rageval.erag.baselines import judge_of
    from rageval.generation.cache import CachedGenerator, LLMCache
    from rageval.prompts import QA_FEW_SHOT

    store = store or JobStore()
    log = log or (lambda message: print(message, file=sys.stderr, flush=True))
    job = store.claim(job_id, os.getpid())
    if job.cancel_requested:
        return store.finish(job_id, CANCELLED)
    if job.spec.is_complete:
        return run_complete_job(job, store, generator=generator, log=log)
    spec, method = job.spec, job.method
    with _attempt(store, job_id, log, "stopped") as resources:
        inputs = read_job_inputs(spec)
        done = answered_items(spec.run_path, method) & set(inputs.items)
        pending = [item for item in inputs.items if item not in done]
        store.begin_items(job_id, len(inputs.items), len(done))
        log(f"job {job_id}: {method} on {spec.run_path}: {len(done)} of {len(inputs.items)} items already "
            f"labelled, {len(pending)} to go")
        if pending:
            cache = resources.enter_context(LLMCache(spec.llm_cache) if spec.llm_cache else LLMCache())
            _doing(store, job_id, log, preparing_words(spec))
            model = CachedGenerator(generator or load_job_generator(spec), cache)
            store.set_model(job_id, model.model_id, device_of(model))
            decoding = decoding_for(spec, inputs.settings)
            prompt = QA_FEW_SHOT if spec.label_kind == "erag" else judge_of(spec.label_kind).template
            record_provenance(spec.run_path, method, {
                "identity": model_identity(spec), "label_kind": spec.label_kind,
                "metric": spec.metric if spec.label_kind == "erag" else None, "model": spec.model_settings.model,
                "model_id": model.model_id, "backend": spec.model_settings.backend, "device": device_of(model),
                "base_url": spec.model_settings.base_url if spec.model_settings.is_server else None,
                "prompt": prompt.identifier,
                **({"judge_file": spec.judge_file, "prompt_text": prompt.instruction} if spec.judge_file else {}),
                "decoding": decoding.as_dict(), "k": spec.k or inputs.settings.get("k"), "job_id": job_id,
                "command": f"rageval rescore run {job_id} --jobs-db {store.path}"})
            finished = len(done)
            for query_id, passage_ids in batches(pending, spec.model_settings.batch_size):
                if store.cancel_requested(job_id):
                    log(f"job {job_id}: cancelled after {finished} of {len(inputs.items)} items")
                    return store.finish(job_id, CANCELLED)
                labels, evidence, unparsed = label_items(spec, method, inputs.queries[query_id], passage_ids,
                                                         inputs.passages, model, decoding)
                write_labels(spec.run_path, labels, evidence, unparsed)
                store.add_done(job_id, len(passage_ids))
                finished += len(passage_ids)
                log(f"job {job_id}: {finished}/{len(inputs.items)} items")
        values = write_method_measures(spec.run_path, method, spec.base_method)
        labelled = {q for q, _ in labelled_items(spec.run_path, method)}
        record_provenance(spec.run_path, method, {
            "num_queries": len(labelled), "measures": sorted({v.measure for v in values}),
            "updated_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")})
        log(f"job {job_id}: done; {len(values)} measure values for {method}")
        return store.finish(job_id, DONE)
    return store.get(job_id)  # stopped: recorded by _attempt


def _doing(store: JobStore, job_id: int, log: Callable[[str], None], activity: str) -> None:
    """Report what the worker does before its first LLM call: into the jobs database (the panel shows it with
    the time since) and the job's log."""
    store.set_activity(job_id, activity)
    log(f"job {job_id}: {activity}")


def preparing_words(spec: JobSpec) -> str:
    """What the worker does while it prepares the job's model, in words (shown until its first LLM call): a
    packaged model not yet converted is converted first (once, minutes on a CPU)."""
    from rageval.generation import gemma, smollm2
    from rageval.generation.factory import DEFAULT_MODEL, SMOLLM2_MODEL
    from rageval.generation.gguf import is_complete

    settings = spec.model_settings
    if settings.is_server:
        return f"preparing the model: connecting to {settings.model} at {settings.base_url}"
    where = "the GPU if there is one, else the CPU" if settings.device == "auto" else settings.device
    packaged = {DEFAULT_MODEL: gemma.converted_model_dir, SMOLLM2_MODEL: smollm2.converted_model_dir}
    if settings.model in packaged and not is_complete(packaged[settings.model]()):
        return (f"preparing the model: converting the packaged {settings.model} (once; minutes on a CPU), then "
                f"loading it on {where}")
    return f"preparing the model: loading {settings.model} on {where}"


class _StageReporter:
    """The ``progress`` callback of a complete job: writes ``(stage, done, total, cached)`` into the jobs database
    after each LLM batch (one small WAL commit, as a re-score job's per batch) and reads the cancel flag, raising
    :class:`JobCancelled` so the pipeline stops between two batches."""

    def __init__(self, store: JobStore, job_id: int):
        self.store, self.job_id = store, job_id
        self.stage: str | None = None

    def __call__(self, stage: str, done: int, total: int, cached: int = 0) -> None:
        new_stage = stage != self.stage
        self.stage = stage
        self.store.set_stage(self.job_id, stage, done, total, cached=cached, new_stage=new_stage)
        if self.store.cancel_requested(self.job_id):
            raise JobCancelled(f"cancel requested during {stage}")


def _raise_cancelled(signum, frame) -> None:
    raise JobCancelled(f"signal {signum}")


def run_job_in_this_process(job_id: int, store: JobStore) -> Job[JobSpec]:
    """:func:`run_job` with SIGTERM turned into the same clean stop as a cancel (``rageval rescore run`` and
    ``start`` without ``--detach``: ``cancel_job(..., terminate=True)`` sends the worker SIGTERM)."""
    signal.signal(signal.SIGTERM, _raise_cancelled)
    return run_job(job_id, store)


def run_complete_job(job: Job[JobSpec], store: JobStore, *, generator: Generator | None = None,
                     log: Callable[[str], None]) -> Job[JobSpec]:
    """The worker of a complete job: :func:`rageval.pipeline.run.complete_run_file` on its run file with its
    model, stage progress into the jobs database. The file is rewritten once, atomically, at the end; a cancel
    (the flag, or SIGTERM) stops between LLM batches and leaves it as it was, every call made kept in the
    LLM-call cache for the next attempt."""
    from rageval.generation.cache import LLMCache
    from rageval.generation.factory import expected_model_id
    from rageval.pipeline.run import complete_run_file, completion_plan

    spec, job_id = job.spec, job.job_id
    stopped = "stopped; the run file is unchanged, the LLM calls made are cached for a resume"
    with _attempt(store, job_id, log, stopped) as resources:
        lacking = lacking_pieces(spec)
        if not lacking:  # an earlier attempt finished the file and was stopped before it could say so
            log(f"job {job_id}: {spec.run_path} lacks nothing; done")
            return store.finish(job_id, DONE)
        log(f"job {job_id}: computing {', '.join(f'{p} ({w})' for p, w in lacking.items())} of {spec.run_path}")
        store.begin_items(job_id, 0, 0)
        cache = resources.enter_context(LLMCache(spec.llm_cache) if spec.llm_cache else LLMCache())
        _doing(store, job_id, log, "counting each stage's LLM calls (a dry run over the LLM-call cache)")
        model_id = generator.model_id if generator is not None else expected_model_id(spec.model_settings)
        plan = completion_plan(Path(spec.run_path), model_id, tuple(lacking), cache=cache)
        store.set_plan(job_id, plan)
        log(f"job {job_id}: plan: " + ", ".join(f"{s} {c} LLM calls ({h} cached)" for s, c, h in plan))
        _doing(store, job_id, log, preparing_words(spec))
        model = generator or load_job_generator(spec)
        store.set_model(job_id, model.model_id, device_of(model))
        complete_run_file(Path(spec.run_path), spec.model_settings, tuple(lacking), generator=model,
                          cache=cache, log=lambda message: log(f"job {job_id}: {message}"),
                          progress=_StageReporter(store, job_id))
        log(f"job {job_id}: done; {spec.run_path} now has {', '.join(lacking)}")
        return store.finish(job_id, DONE)
    return store.get(job_id)  # stopped: recorded by _attempt
