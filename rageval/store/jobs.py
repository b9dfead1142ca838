"""The jobs database: one SQLite file (kind "RAGJ", ``jobs.sqlite`` in the user cache) that the command line and
every dashboard session share, one row per job (:class:`Job`: status, counts, heartbeat, pid).

The store keeps a job's spec as the JSON text its :meth:`~StoredSpec.to_json` gives and reads it back with the
spec type of the jobs package (:class:`rageval.jobs.spec.JobStore` binds :class:`JobsDatabase` to
:class:`rageval.jobs.spec.JobSpec`), so what a spec means stays in :mod:`rageval.jobs`."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Protocol, Self, TypeVar

from rageval.errors import JobError, StoreError
from rageval.store.files import checked_reads, open_for_write, process_alive, stamp
from rageval.store.schemas import JOBS, JOBS_MIGRATIONS, JOBS_SCHEMA

SCHEMA_VERSION = JOBS.version  # 2: the stage column of the complete job; 3: who started it; 4: plan, activity
#: Statuses stored in the jobs database; :func:`rageval.jobs.spec.job_status` adds ``interrupted`` (active, but its
#: worker is gone).
QUEUED, RUNNING, DONE, FAILED, CANCELLED = "queued", "running", "done", "failed", "cancelled"
#: A worker whose heartbeat is older than this is taken for dead even if its process id is in use (pid reuse).
STALE_AFTER_S = 60.0


class StoredSpec(Protocol):
    """What the jobs database keeps of a job's spec (:class:`rageval.jobs.spec.JobSpec`): its run file (a column of
    its own) and its stored form."""

    @property
    def run_path(self) -> str: ...

    def to_json(self) -> str: ...


S = TypeVar("S", bound=StoredSpec)


@dataclass(frozen=True)
class Job(Generic[S]):
    """One row of the jobs database; ``spec`` as the database's spec type reads it."""

    job_id: int
    run_path: str
    method: str
    spec: S
    status: str
    total: int
    done: int
    done_at_start: int
    attempts: int
    created: float
    started: float | None
    items_started: float | None
    updated: float | None
    finished: float | None
    heartbeat: float | None
    pid: int | None
    model_id: str | None
    device: str | None
    log_path: str | None
    cancel_requested: bool
    error: str | None
    stage: str | None = None
    started_by: str | None = None  # team mode: the signed-in user who started it; None: the command line
    plan: tuple[tuple[str, int, int], ...] | None = None  # complete jobs: (stage, LLM calls, cached) each
    llm_started: float | None = None  # when the attempt's model was ready
    activity: str | None = None  # what the worker does before its first LLM call
    activity_since: float | None = None


def worker_alive(job: Job[Any], now: float | None = None) -> bool:
    """Whether the job's worker process is alive: its pid runs and its heartbeat is recent."""
    if job.pid is None:
        return False
    now = time.time() if now is None else now
    beat = job.heartbeat if job.heartbeat is not None else job.created
    return now - beat < STALE_AFTER_S and process_alive(job.pid)


def _plan(text: str | None) -> tuple[tuple[str, int, int], ...] | None:
    """A stored plan (JSON ``[[stage, calls, cached], ...]``); one that does not read so is no plan: it only
    feeds the whole job's ETA, which is then not given."""
    if not text:
        return None
    try:
        return tuple((str(stage), int(calls), int(cached)) for stage, calls, cached in json.loads(text))
    except (ValueError, TypeError):
        return None


def default_jobs_db() -> Path:
    """``jobs.sqlite`` in the user cache (:func:`rageval.paths.cache_dir`), shared by the CLI and the dashboard."""
    from rageval.paths import cache_dir

    return cache_dir() / "jobs.sqlite"


@checked_reads(JOBS)
class JobsDatabase(ABC, Generic[S]):
    """The jobs database (SQLite, WAL mode, so the dashboard reads while a worker writes). One connection, guarded
    by a lock, so a worker's heartbeat thread may share it. A damaged database is a StoreError naming it, on opening
    or on any later read. A subclass reads the stored specs (:meth:`_read_spec`)."""

    def __init__(self, path: str | os.PathLike | None = None, *, timeout_s: float = 30.0):
        self.path = Path(path) if path is not None else default_jobs_db()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        try:
            self._conn = open_for_write(self.path, JOBS, create=True, timeout_s=timeout_s, isolation_level=None,
                                        check_same_thread=False)
            self._conn.execute("PRAGMA journal_mode=WAL")
            version = self._conn.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise StoreError(f"{self.path}: jobs database schema version {version} is newer than this rageval "
                                 f"understands ({SCHEMA_VERSION})")
            if version < SCHEMA_VERSION:  # only a new or older file is written to on opening
                with self._transaction():
                    if version == 0:
                        self._conn.execute(JOBS_SCHEMA)
                    else:
                        for step in range(version, SCHEMA_VERSION):
                            statements = JOBS_MIGRATIONS[step]
                            for statement in (statements,) if isinstance(statements, str) else statements:
                                self._conn.execute(statement)
                    stamp(self._conn, JOBS)
        except sqlite3.DatabaseError as error:
            raise StoreError(f"{self.path}: not a usable jobs database (SQLite said: {error})") from error

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def _update(self, job_id: int, **values) -> None:
        columns = ", ".join(f"{name} = ?" for name in values)
        with self._transaction() as conn:
            conn.execute(f"UPDATE jobs SET {columns} WHERE job_id = ?", (*values.values(), job_id))

    @abstractmethod
    def _read_spec(self, text: str) -> S:
        """A job's spec from its stored JSON text."""

    def _job(self, fields: dict) -> Job[S]:
        fields = dict(fields)
        fields["spec"] = self._read_spec(fields["spec"])
        fields["cancel_requested"] = bool(fields["cancel_requested"])
        fields["plan"] = _plan(fields.get("plan"))
        return Job(**fields)

    def _rows(self, where: str = "", params: Sequence = ()) -> list[Job[S]]:
        with self._lock:
            cursor = self._conn.execute(f"SELECT * FROM jobs {where} ORDER BY job_id DESC", params)
            names = [d[0] for d in cursor.description]
            rows = cursor.fetchall()
        return [self._job(dict(zip(names, row))) for row in rows]

    def create(self, spec: S, method: str, total: int, *, started_by: str | None = None) -> Job[S]:
        """Add a queued job; ``started_by``: the signed-in user's id on a dashboard served for a team."""
        with self._transaction() as conn:
            cursor = conn.execute(
                "INSERT INTO jobs (run_path, method, spec, status, total, created, started_by) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (spec.run_path, method, spec.to_json(), QUEUED, total, time.time(), started_by))
            job_id = cursor.lastrowid
        assert job_id is not None  # an INSERT sets it
        return self.get(job_id)

    def get(self, job_id: int) -> Job[S]:
        rows = self._rows("WHERE job_id = ?", (int(job_id),))
        if not rows:
            raise JobError(f"{self.path}: no job {job_id}")
        return rows[0]

    def list(self, run_path: str | os.PathLike | None = None) -> list[Job[S]]:
        """Every job, newest first; only those on ``run_path`` when given."""
        if run_path is None:
            return self._rows()
        return self._rows("WHERE run_path = ?", (str(Path(run_path).resolve()),))

    def claim(self, job_id: int, pid: int) -> Job[S]:
        """Mark the job running in process ``pid`` (a new attempt), unless another live worker runs it."""
        with self._transaction() as conn:
            job = self._rows_unlocked(conn, job_id)
            if job.status == RUNNING and job.pid not in (None, pid) and worker_alive(job):
                raise JobError(f"job {job_id} is already running in process {job.pid}")
            now = time.time()
            conn.execute("UPDATE jobs SET status = ?, pid = ?, attempts = attempts + 1, started = ?, heartbeat = ?, "
                         "items_started = NULL, updated = NULL, finished = NULL, error = NULL, llm_started = NULL, "
                         "activity = NULL, activity_since = NULL WHERE job_id = ?",
                         (RUNNING, pid, now, now, job_id))
        return self.get(job_id)

    def _rows_unlocked(self, conn: sqlite3.Connection, job_id: int) -> Job[S]:
        cursor = conn.execute("SELECT * FROM jobs WHERE job_id = ?", (int(job_id),))
        row = cursor.fetchone()
        if row is None:
            raise JobError(f"{self.path}: no job {job_id}")
        return self._job(dict(zip([d[0] for d in cursor.description], row)))

    def set_launched(self, job_id: int, pid: int, log_path: str) -> None:
        """Record the process started for the job (status stays queued until the worker claims it)."""
        with self._transaction() as conn:
            conn.execute("UPDATE jobs SET pid = ?, log_path = ?, heartbeat = ? WHERE job_id = ? AND status = ?",
                         (pid, log_path, time.time(), job_id, QUEUED))

    def begin_items(self, job_id: int, total: int, done: int) -> None:
        self._update(job_id, total=total, done=done, done_at_start=done)

    def set_model(self, job_id: int, model_id: str, device: str) -> None:
        """The model is ready: its first LLM call comes next (the rate clocks start; no activity before it)."""
        now = time.time()
        self._update(job_id, model_id=model_id, device=device, items_started=now, updated=now, heartbeat=now,
                     llm_started=now, activity=None, activity_since=None)

    def set_activity(self, job_id: int, activity: str) -> None:
        """What the worker does before its first LLM call, in words (counting the calls, preparing the model),
        shown with the time since it began."""
        now = time.time()
        self._update(job_id, activity=activity, activity_since=now, heartbeat=now)

    def set_plan(self, job_id: int, plan: Sequence[tuple[str, int, int]]) -> None:
        """A complete job's stages, ``(stage, LLM calls, of them cached)`` each, in the order they run
        (:func:`rageval.pipeline.run.completion_plan`), for the whole job's share and ETA."""
        self._update(job_id, plan=json.dumps([list(row) for row in plan]))

    def add_done(self, job_id: int, count: int) -> None:
        now = time.time()
        with self._transaction() as conn:
            conn.execute("UPDATE jobs SET done = done + ?, updated = ?, heartbeat = ? WHERE job_id = ?",
                         (count, now, now, job_id))

    def set_stage(self, job_id: int, stage: str, done: int, total: int, *, cached: int = 0,
                  new_stage: bool = False) -> None:
        """A complete job's progress: ``done`` of ``total`` LLM calls of pipeline stage ``stage``, ``cached`` of
        them answered from the LLM-call cache. The cached calls are stored as ``done_at_start``, the work done
        before this attempt (by an earlier attempt or run), so the rate and ETA of :func:`~rageval.jobs.spec.
        job_progress` count the new calls alone. A new stage restarts the rate's clock (``items_started``), so the
        ETA is that of the stage in progress."""
        now = time.time()
        values = {"stage": stage, "done": done, "total": total, "done_at_start": cached, "updated": now,
                  "heartbeat": now}
        if new_stage:
            values.update(items_started=now)
        self._update(job_id, **values)

    def beat(self, job_id: int) -> None:
        self._update(job_id, heartbeat=time.time())

    def cancel_requested(self, job_id: int) -> bool:
        with self._lock:
            row = self._conn.execute("SELECT cancel_requested FROM jobs WHERE job_id = ?", (job_id,)).fetchone()
        return bool(row and row[0])

    def request_cancel(self, job_id: int) -> None:
        self._update(job_id, cancel_requested=1)

    def finish(self, job_id: int, status: str, error: str | None = None) -> Job[S]:
        now = time.time()
        self._update(job_id, status=status, finished=now, heartbeat=now, error=error)
        return self.get(job_id)

    def requeue(self, job_id: int) -> None:
        """Make a stopped job startable again (resume): queued, no cancel request, no error, no worker yet."""
        self._update(job_id, status=QUEUED, cancel_requested=0, error=None, pid=None, finished=None)
