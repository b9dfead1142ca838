"""Creating, launching, resuming and cancelling jobs: what the dashboard and ``rageval rescore`` call. The work
itself runs in a separate process, ``rageval rescore run JOB`` (:func:`worker_command`; :mod:`rageval.jobs.worker`)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

from rageval.errors import JobError, StoreError
from rageval.jobs.labelling import check_model
from rageval.jobs.run_file import read_job_inputs, recover_run_file
from rageval.jobs.spec import (
    ACTIVE,
    JobSpec,
    JobStore,
    job_estimate,
    job_progress,
    job_status,
    method_name,
    model_identity,
)
from rageval.store import RunReader
from rageval.store.jobs import CANCELLED, Job, default_jobs_db, worker_alive
from rageval.store.provenance import brought


def open_job_store(jobs_db: Path | None = None, *, create: bool = True) -> JobStore:
    """The jobs database at ``jobs_db`` (default :func:`~rageval.store.jobs.default_jobs_db`); without ``create``
    (commands that only look at jobs) a missing one is a :class:`JobError` naming it, never created."""
    path = Path(jobs_db) if jobs_db else default_jobs_db()
    if not create and not (path.exists() or path.is_symlink()):
        raise JobError(f"{path}: no jobs database yet (no job was ever started with it)")
    return JobStore(path)


def list_jobs(jobs_db: Path | None = None) -> list[Job[JobSpec]]:
    """Every job of the jobs database at ``jobs_db`` (default: the user cache's); none, and nothing created, when
    no job was ever started with it."""
    path = Path(jobs_db) if jobs_db else default_jobs_db()
    if not (path.exists() or path.is_symlink()):
        return []
    with JobStore(path) as store:
        return store.list()


def job_line(job: Job[JobSpec]) -> str:
    """One line describing ``job`` (``rageval rescore list``): id, status, stage, done/total (a complete job's LLM
    calls, with those answered from the cache, and the whole job's over all its stages), ETA (of the new calls,
    the whole job's when it has a plan), method, run file and error."""
    progress = job_progress(job)
    estimate = job_estimate(job) if job.spec.is_complete else None
    eta_s = estimate.eta_s if estimate is not None else progress.eta_s
    eta = f", ETA {eta_s:.0f} s" if eta_s is not None else ""
    if estimate is not None:
        eta = f", whole job {estimate.calls_done}/{estimate.calls} LLM calls, {estimate.new_left} new left{eta}"
    stage = f"stage {job.stage} " if job.stage else ""
    cached = f" ({min(job.done_at_start, job.done)} cached)" if job.stage and job.spec.is_complete else ""
    return (f"{job.job_id:>4}  {progress.status:<11} {stage}{job.done:>5}/{job.total:<5}{cached}{eta}  {job.method}  "
            f"{job.run_path}" + (f"  error: {job.error}" if job.error else ""))


def first_query_ids(run_path: str | Path, count: int) -> tuple[str, ...]:
    """The ids of the first ``count`` queries of the run file at ``run_path``."""
    with RunReader(run_path) as reader:
        return tuple(reader.query_table()["query_id"][:count])


def check_run_file(run_path: str | Path) -> None:
    """Open and close the run file: a missing or broken one raises its :class:`~rageval.errors.StoreError`."""
    RunReader(run_path).close()


def check_writable(spec: JobSpec) -> None:
    """Refuse a run file rageval must not change: the shipped runs (``data/``) are read-only."""
    from rageval.paths import is_shipped, user_runs_dir

    if is_shipped(spec.run_path):
        raise JobError(f"{spec.run_path}: a shipped run is read-only; copy it into your runs folder "
                       f"({user_runs_dir()}, or $RAGEVAL_RUNS_DIR) and start the job on the copy")


def check_no_conflict(spec: JobSpec, store: JobStore) -> None:
    """A complete job rewrites the whole run file at its end, so it must not run beside another job on the same
    file (whose labels it would drop), nor another job beside it."""
    for other in store.list(spec.run_path):
        if job_status(other) in ACTIVE and (spec.is_complete or other.spec.is_complete):
            raise JobError(f"job {other.job_id} ({other.method}) is still {other.status} on {spec.run_path}; "
                           f"wait for it or cancel it first")


def lacking_pieces(spec: JobSpec) -> dict[str, str]:
    """What a complete job computes: piece -> what the run lacks of it, in words
    (:func:`rageval.pipeline.summary.missing_pieces`); with ``spec.pieces``, those pieces (``reteval`` is
    recomputed even when present, as :func:`rageval.pipeline.run.complete_run_file` does). Empty when there is
    nothing to compute; a run whose questions lack gold answers is refused (one imported from traces is not:
    it lacks then only what needs none)."""
    from rageval.pipeline.summary import is_imported, missing_pieces, run_summary

    if Path(spec.run_path).is_file():
        recover_run_file(spec.run_path)
    try:
        with RunReader(spec.run_path) as reader:
            settings = reader.settings()
            queries = reader.query_table()["query_id"].tolist()
            unanswered = next((q for q in queries if not reader.query(q).answers), None)
        lacking = missing_pieces(run_summary(spec.run_path), settings)
    except (StoreError, sqlite3.DatabaseError) as error:
        raise JobError(str(error)) from error
    if spec.pieces is not None:
        lacking = {p: lacking.get(p, "recomputed") for p in spec.pieces if p in lacking or p == "reteval"}
    if lacking and unanswered is not None and not is_imported(settings):
        raise JobError(f"{spec.run_path}: query {unanswered!r} has no gold answers; eRAG, E2E, the baselines and "
                       f"LLM-retEval score answers against them (upload the queries with their answers)")
    return lacking


def create_job(spec: JobSpec, store: JobStore, *, started_by: str | None = None) -> Job[JobSpec]:
    """Check the run file, the queries and the model, and add a queued job; nothing runs yet. ``started_by``: the
    signed-in user's id (a dashboard served for a team), stored with the job."""
    check_writable(spec)
    check_no_conflict(spec, store)
    if spec.is_complete:
        lacking = lacking_pieces(spec)
        if not lacking:
            raise JobError(f"{spec.run_path}: the run already has every piece (eRAG, E2E, baselines, LLM-retEval); "
                           "nothing to compute")
        check_model(spec)
        return store.create(spec, method_name(spec), len(lacking), started_by=started_by)
    inputs = read_job_inputs(spec)
    check_model(spec)
    method = method_name(spec)
    recorded = inputs.settings.get("rescored", {}).get(method, {})
    if recorded.get("identity") not in (None, model_identity(spec)):
        # Another model with the same short name labelled this method already: keep both apart.
        method = f"{method}-{hashlib.sha256(model_identity(spec).encode()).hexdigest()[:6]}"
    user = brought(inputs.settings)
    if method in user.labels:  # a job inserts or replaces its method's labels: never the user's own
        raise JobError(f"{spec.run_path}: the label method {method!r} holds labels you brought ({user.by}); a job "
                       "never writes over them: re-score with another model name, or upload yours under another name")
    return store.create(spec, method, len(inputs.items), started_by=started_by)


def worker_command(job_id: int, jobs_db: Path) -> list[str]:
    return [sys.executable, "-m", "rageval", "rescore", "run", str(job_id), "--jobs-db", str(jobs_db)]


def launch_worker(job_id: int, store: JobStore) -> int:
    """Start ``rageval rescore run JOB`` as a detached process (its own session: it outlives the caller, a
    Streamlit rerun or a closed terminal) writing to ``job-logs/job-<id>.log`` beside the jobs database.
    Returns its pid."""
    from rageval.paths import REPO_ROOT

    logs = store.path.parent / "job-logs"
    logs.mkdir(parents=True, exist_ok=True)
    log_path = logs / f"job-{job_id}.log"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH")) if p)}
    with log_path.open("ab") as log:
        process = subprocess.Popen(worker_command(job_id, store.path), cwd=REPO_ROOT, env=env,
                                   stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True, close_fds=True)
    # Reap the child when it exits, so it never lingers as a zombie that looks alive to kill(pid, 0).
    threading.Thread(target=process.wait, name=f"rescore-reaper-{job_id}", daemon=True).start()
    store.set_launched(job_id, process.pid, str(log_path))
    return process.pid


def start_job(spec: JobSpec, store: JobStore, *, started_by: str | None = None) -> Job[JobSpec]:
    """Create the job and start its worker in the background (``started_by``: as :func:`create_job`)."""
    job = create_job(spec, store, started_by=started_by)
    launch_worker(job.job_id, store)
    return store.get(job.job_id)


def resume_job(job_id: int, store: JobStore, *, launch: bool = True) -> Job[JobSpec]:
    """Start a stopped job again (failed, cancelled, interrupted or never started); what it already labelled is
    skipped. Refused while its worker is alive."""
    job = store.get(job_id)
    if job_status(job) in ACTIVE and worker_alive(job):
        raise JobError(f"job {job_id} is still {job.status} in process {job.pid}; cancel it first")
    store.requeue(job_id)
    if launch:
        launch_worker(job_id, store)
    return store.get(job_id)


def cancel_job(job_id: int, store: JobStore, *, terminate: bool = False) -> Job[JobSpec]:
    """Ask the job to stop after its current batch; ``terminate=True`` also sends its worker SIGTERM (it then
    stops at once, keeping every committed label). A job without a live worker is marked cancelled at once."""
    job = store.get(job_id)
    if job.status not in ACTIVE:
        return job
    store.request_cancel(job_id)
    if not worker_alive(job):
        if Path(job.run_path).is_file():
            recover_run_file(job.run_path)
        return store.finish(job_id, CANCELLED)
    if terminate and job.pid is not None:  # (a live worker has a pid)
        with contextlib.suppress(ProcessLookupError):
            os.kill(job.pid, signal.SIGTERM)
    return store.get(job_id)
