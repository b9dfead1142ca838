"""The re-scoring page's data layer: the jobs database (:mod:`rageval.jobs`) and the actions on it.

The job list is live state: a worker commits a batch every few seconds. It is cached keyed by the database's
revision, the modification times and sizes of the SQLite file and its write-ahead log (every commit changes
the log), so a poll that finds nothing new costs one ``stat``. Liveness (is the worker process still there?)
is not stored and is derived at render time (:func:`rageval.jobs.spec.job_progress`), outside the cache.
The run files themselves stay keyed by ``(path, mtime_ns)`` in :mod:`ui.data`: a worker's commit changes the
run file's mtime, so every other page shows the new labels on its next rerun. Nothing here creates widgets.
"""

from __future__ import annotations

import os
from pathlib import Path

import streamlit as st

from rageval.erag.format_probe import FormatProbe
from rageval.jobs.spec import INTERRUPTED, JobSpec, JobStore, job_status
from rageval.store.jobs import Job, default_jobs_db
from rageval.team import audit as audit_log
from rageval.team.roles import RUN_JOBS
from ui import auth, data

_TTL_S = 3600


def jobs_db() -> Path:
    """The jobs database the dashboard and ``rageval rescore`` share (:func:`rageval.store.jobs.default_jobs_db`)."""
    return default_jobs_db()


def jobs_revision(path: Path) -> tuple[int, ...]:
    """(mtime_ns, size) of the database file and of its ``-wal`` file (zeros when absent)."""
    stamps: list[int] = []
    for name in (path, Path(f"{path}-wal")):
        try:
            stat = os.stat(name)
            stamps += [stat.st_mtime_ns, stat.st_size]
        except FileNotFoundError:
            stamps += [0, 0]
    return tuple(stamps)


@st.cache_data(ttl=_TTL_S, max_entries=64, show_spinner=False)
def load_jobs(path: str, revision: tuple[int, ...]) -> list[Job[JobSpec]]:
    """Every job of the database, newest first."""
    with JobStore(path) as store:
        return store.list()


def load_folder_jobs(folder: Path | None = None) -> list[Job[JobSpec]]:
    """The jobs on run files in the dashboard's runs folder (or ``folder``), newest first. The run file of a job
    whose worker died is repaired on the way (:func:`rageval.jobs.run_file.recover_run_file`), so every page can
    read it."""
    path = jobs_db()
    if not (path.exists() or path.is_symlink()):  # no job yet (a dangling link is an error)
        return []
    folder = (folder or data.runs_dir()).resolve()
    found = [job for job in load_jobs(str(path), jobs_revision(path)) if Path(job.run_path).is_relative_to(folder)]
    for job in found:
        if job_status(job) == INTERRUPTED and Path(job.run_path).is_file():
            from rageval.jobs.run_file import recover_run_file  # here: a page with a lacks panel loads no job writer

            recover_run_file(job.run_path)
    return found


def start_rescore(spec: JobSpec) -> Job[JobSpec]:
    """Create the job and start its worker process (raises :class:`rageval.errors.JobError` on bad input, and
    :class:`ui.auth.NotAllowed` when this session's role may not run jobs). Team mode: stored with the signed-in
    user's id, and audited."""
    from rageval.jobs.control import start_job

    identity = auth.check(RUN_JOBS)
    with JobStore(jobs_db()) as store:
        job = start_job(spec, store, started_by=identity.user_id if identity.team_mode else None)
    auth.audit(audit_log.JOB_START, {"job": job.job_id, "run": job.run_path, "method": job.method})
    return job


def needs_probe(spec: JobSpec) -> bool:
    """Whether the job's judge is one whose format a model may not write (UMBRELA, a judge file): the page tries
    the model first (:func:`probe_rescore`)."""
    from rageval.jobs.labelling import needs_format_probe

    return needs_format_probe(spec)


def probe_rescore(spec: JobSpec) -> FormatProbe:
    """Try the job's model on the first passages it would label (:func:`rageval.jobs.labelling.probe_job`), its
    replies kept in the job's LLM-call cache so the job reuses them. Refused, as :func:`start_rescore`, for a role
    that may not run jobs (it spends model time)."""
    from rageval.jobs.labelling import probe_job

    auth.check(RUN_JOBS)
    return probe_job(spec)


def cancel_rescore(job_id: int, terminate: bool = False) -> Job[JobSpec]:
    """Ask job ``job_id`` to stop after its batch; ``terminate`` also sends its worker SIGTERM (refused, as
    :func:`start_rescore`, for a role that may not run jobs; audited in team mode)."""
    from rageval.jobs.control import cancel_job

    auth.check(RUN_JOBS)
    with JobStore(jobs_db()) as store:
        job = cancel_job(job_id, store, terminate=terminate)
    auth.audit(audit_log.JOB_CANCEL, {"job": job_id, "run": job.run_path, "terminate": terminate})
    return job


def resume_rescore(job_id: int) -> Job[JobSpec]:
    """Start a stopped job again in a new worker; its labels already saved are skipped (checked and audited as
    :func:`start_rescore`)."""
    from rageval.jobs.control import resume_job

    auth.check(RUN_JOBS)
    with JobStore(jobs_db()) as store:
        job = resume_job(job_id, store)
    auth.audit(audit_log.JOB_RESUME, {"job": job_id, "run": job.run_path})
    return job


def apply_action(job_id: int, action: str | None) -> None:
    """What a job block's button asks for (:func:`ui.render_jobs.render_job`): ``cancel`` (after the batch),
    ``stop`` (SIGTERM now), ``resume``; None does nothing. Raises :class:`rageval.errors.RagevalError` with our
    own message when it cannot be done."""
    if action == "cancel":
        cancel_rescore(job_id)
    elif action == "stop":
        cancel_rescore(job_id, terminate=True)
    elif action == "resume":
        resume_rescore(job_id)
