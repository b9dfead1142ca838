"""The jobs database: one SQLite file (kind "RAGJ", ``jobs.sqlite`` in the user cache) that the command line and
every dashboard session share, one row per job (status, counts, heartbeat, pid)."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Self

from rageval.errors import StoreError
from rageval.jobs.spec import QUEUED, RUNNING, Job, JobError, JobSpec, worker_alive
from rageval.store.files import checked_reads, open_for_write, stamp
from rageval.store.schemas import JOBS, JOBS_MIGRATIONS, JOBS_SCHEMA

SCHEMA_VERSION = JOBS.version  # 2: the stage column of the complete job; 3: who started it; 4: plan, activity


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
class JobStore:
    """The jobs database (SQLite, WAL mode, so the dashboard reads while a worker writes). One connection, guarded
    by a lock, so a worker's heartbeat thread may share it. A damaged database is a StoreError naming it, on opening
    or on any later read."""

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

    @staticmethod
    def _job(fields: dict) -> Job:
        fields = dict(fields)
        fields["spec"] = JobSpec.from_json(fields["spec"])
        fields["cancel_requested"] = bool(fields["cancel_requested"])
        fields["plan"] = _plan(fields.get("plan"))
        return Job(**fields)

    def _rows(self, where: str = "", params: Sequence = ()) -> list[Job]:
        with self._lock:
            cursor = self._conn.execute(f"SELECT * FROM jobs {where} ORDER BY job_id DESC", params)
            names = [d[0] for d in cursor.description]
            rows = cursor.fetchall()
        return [self._job(dict(zip(names, row))) for row in rows]

    def create(self, spec: JobSpec, method: str, total: int, *, started_by: str | None = None) -> Job:
        """Add a queued job; ``started_by``: the signed-in user's id on a dashboard served for a team."""
        with self._transaction() as conn:
            cursor = conn.execute(
                "INSERT INTO jobs (run_path, method, spec, status, total, created, started_by) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (spec.run_path, method, spec.to_json(), QUEUED, total, time.time(), started_by))
            job_id = cursor.lastrowid
        assert job_id is not None  # an INSERT sets it
        return self.get(job_id)

    def get(self, job_id: int) -> Job:
        rows = self._rows("WHERE job_id = ?", (int(job_id),))
        if not rows:
            raise JobError(f"{self.path}: no job {job_id}")
        return rows[0]

    def list(self, run_path: str | os.PathLike | None = None) -> list[Job]:
        """Every job, newest first; only those on ``run_path`` when given."""
        if run_path is None:
            return self._rows()
        return self._rows("WHERE run_path = ?", (str(Path(run_path).resolve()),))

    def claim(self, job_id: int, pid: int) -> Job:
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

    def _rows_unlocked(self, conn: sqlite3.Connection, job_id: int) -> Job:
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

    def finish(self, job_id: int, status: str, error: str | None = None) -> Job:
        now = time.time()
        self._update(job_id, status=status, finished=now, heartbeat=now, error=error)
        return self.get(job_id)

    def requeue(self, job_id: int) -> None:
        """Make a stopped job startable again (resume): queued, no cancel request, no error, no worker yet."""
        self._update(job_id, status=QUEUED, cancel_requested=0, error=None, pid=None, finished=None)
