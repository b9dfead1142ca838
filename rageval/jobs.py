"""Re-scoring jobs: label a run's retrieved passages again with another model, in a background process.

A job is a run file, a label kind, a model and the passages to label: the top ``k`` of the run's ranking for all
or some of its queries. Two label kinds exist, both per passage:

- ``erag``: the model answers the question from each passage alone and the answer is scored against the gold
  answers with a downstream metric E (eRAG, Salemi & Zamani, SIGIR 2024: G_q[d] = E(M(q, {d}), y));
  method ``erag:<metric>@<model>``, e.g. ``erag:em@gemma-3-270m``;
- ``llm_relevance``: the model is asked whether the passage is relevant (eRAG's baseline (c), after Thomas et al.
  2023); method ``llm_relevance@<model>``.

A third kind, ``complete``, is not per passage: it computes what the run file lacks (eRAG labels, E2E answers at
the usual ks, the baselines, LLM-retEval; :func:`rageval.pipeline.summary.missing_pieces`) with
:func:`rageval.pipeline.run.complete_run_file`, which rewrites the file atomically once everything is computed.
Its progress is per stage (``erag 30/120``, stored in the jobs database as ``stage``, ``done``, ``total``); a
cancel or a kill leaves the run file as it was, and since every LLM call is in the LLM-call cache, resuming it
costs no call already made. Its method is ``complete@<model>``.

The worker runs as its own OS process (``rageval rescore run JOB``, started detached by :func:`launch_worker`),
so it outlives the dashboard's reruns and a closed browser. Its state lives in a small SQLite database, the
jobs database (:func:`default_jobs_db`: ``jobs.sqlite`` in the user cache, beside the LLM-call cache), which the
command line and every dashboard session share wherever the run file lives; ``$RAGEVAL_CACHE_DIR`` moves both.

What survives what:

- every label is written into the run file itself (tables ``labels`` and ``label_evidence``: the model's output
  from that passage alone is the evidence) in one transaction per small batch, as soon as it is produced, so a
  killed worker loses at most the batch in flight; every LLM call also goes through the LLM-call cache, so that
  batch costs nothing when the job runs again;
- cancelling sets a flag the worker reads between batches (``cancel_job(..., terminate=True)`` also sends the
  worker SIGTERM, which the command line turns into the same clean stop);
- resuming starts the same job again: the labels already in the run file are skipped (they are the record of
  what is done), so every passage is labelled exactly once;
- when the job is done, the per-query measure values of the new method are computed with the run builders' own
  code (:func:`rageval.erag.compute_measure_values`) and written into the run file with what produced them
  (settings ``rescored``), so every view of the dashboard shows the new method like any other.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime as dt
import hashlib
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Self

import pandas as pd

from rageval import erag
from rageval.errors import RagevalError, StoreError
from rageval.generation import factory
from rageval.generation.base import DecodingSettings, Generator
from rageval.generation.factory import DEFAULT_BASE_URL, DEFAULT_MODEL
from rageval.store import JOBS, RUN, Label, LabelEvidence, MeasureValue, RunReader, open_for_write, open_readonly, stamp
from rageval.types import Passage, Query, Ranking, ScoredPassage

LABEL_KINDS = ("erag", "llm_relevance")
COMPLETE = "complete"
JOB_KINDS = (*LABEL_KINDS, COMPLETE)
#: What a complete job can compute (:data:`rageval.pipeline.summary.PIECES`), in pipeline order.
PIECES = ("erag", "e2e", "baselines", "reteval")
BACKENDS = ("transformers", "openai")
DTYPES = factory.DTYPES
#: Statuses stored in the jobs database; :func:`job_status` adds ``interrupted`` (active, but its worker is gone).
QUEUED, RUNNING, DONE, FAILED, CANCELLED = "queued", "running", "done", "failed", "cancelled"
INTERRUPTED = "interrupted"
ACTIVE = (QUEUED, RUNNING)
HEARTBEAT_S = 2.0
#: A worker whose heartbeat is older than this is taken for dead even if its process id is in use (pid reuse).
STALE_AFTER_S = 60.0
#: How long a worker waits for a dashboard reader to release the run file before a write fails.
RUN_WRITE_TIMEOUT_S = 60.0
SCHEMA_VERSION = JOBS.version  # 2: the stage column of the complete job

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    job_id           INTEGER PRIMARY KEY AUTOINCREMENT,
    run_path         TEXT NOT NULL,     -- absolute path of the run file
    method           TEXT NOT NULL,     -- label method the job writes, e.g. erag:em@gemma-3-270m
    spec             TEXT NOT NULL,     -- JSON of the JobSpec
    status           TEXT NOT NULL,     -- queued | running | done | failed | cancelled
    total            INTEGER NOT NULL,  -- (query, passage) items the job labels
    done             INTEGER NOT NULL DEFAULT 0,
    done_at_start    INTEGER NOT NULL DEFAULT 0,  -- items already done when the current attempt began
    attempts         INTEGER NOT NULL DEFAULT 0,
    created          REAL NOT NULL,     -- Unix times
    started          REAL,              -- the current attempt's start
    items_started    REAL,              -- when it began labelling (after loading the model)
    updated          REAL,              -- last committed batch
    finished         REAL,
    heartbeat        REAL,
    pid              INTEGER,
    model_id         TEXT,
    device           TEXT,
    log_path         TEXT,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    error            TEXT,
    stage            TEXT               -- complete jobs: the pipeline stage that done/total count
);
"""
#: Schema 1 -> 2: the stage column of complete jobs.
_MIGRATIONS = {1: "ALTER TABLE jobs ADD COLUMN stage TEXT"}


class JobError(RagevalError):
    """A job that cannot be created, started or resumed; the message names the job, file or id at fault."""


class JobCancelled(BaseException):
    """Raised in the worker by SIGTERM: stop at once, keeping what is committed. A BaseException, like
    KeyboardInterrupt, so no ``except Exception`` on the way (a retry loop, a thread pool) swallows it."""


# --- what a job is ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class JobSpec:
    """What one re-scoring job labels and with what. ``k=None``: the run's own k; ``query_ids=None``: every query;
    ``max_new_tokens=None``: the run's decoding (eRAG) or 3 tokens (yes/no relevance); ``llm_cache=None``: the
    user's LLM-call cache. ``device="auto"`` runs on CUDA when present, else on the CPU.
    ``label_kind="complete"``: compute the run's missing pieces (``pieces``, None: all it lacks); ``metric``,
    ``k``, ``query_ids`` and ``max_new_tokens`` do not apply to it."""

    run_path: str
    model: str = DEFAULT_MODEL
    backend: str = "transformers"
    label_kind: str = "erag"
    metric: str = "em"
    k: int | None = None
    query_ids: tuple[str, ...] | None = None
    base_url: str = DEFAULT_BASE_URL
    api: str = "completions"
    api_key_env: str | None = None
    device: str = "auto"
    dtype: str | None = None
    batch_size: int = 8
    max_new_tokens: int | None = None
    llm_cache: str | None = None
    pieces: tuple[str, ...] | None = None

    def __post_init__(self):
        object.__setattr__(self, "run_path", str(Path(self.run_path).expanduser().resolve()))
        if self.query_ids is not None:
            object.__setattr__(self, "query_ids", tuple(str(q) for q in self.query_ids))
        if self.pieces is not None:
            unknown = [p for p in self.pieces if p not in PIECES]
            if unknown:
                raise JobError(f"pieces {', '.join(map(str, unknown))}: expected some of {', '.join(PIECES)}")
            object.__setattr__(self, "pieces", tuple(p for p in PIECES if p in self.pieces))
        checks = [
            (self.backend in BACKENDS, f"backend {self.backend!r}: expected one of {', '.join(BACKENDS)}"),
            (self.label_kind in JOB_KINDS,
             f"label kind {self.label_kind!r}: expected one of {', '.join(JOB_KINDS)}"),
            (self.metric in erag.ALL_METRICS,
             f"label metric {self.metric!r}: expected one of {', '.join(erag.ALL_METRICS)}"),
            (self.api in ("completions", "chat"), f"api {self.api!r}: expected completions or chat"),
            (self.k is None or self.k >= 1, f"k: expected at least 1, got {self.k}"),
            (self.batch_size >= 1, f"batch size: expected at least 1, got {self.batch_size}"),
            (self.max_new_tokens is None or self.max_new_tokens >= 1,
             f"max new tokens: expected at least 1, got {self.max_new_tokens}"),
            (self.dtype is None or self.dtype in DTYPES, f"dtype {self.dtype!r}: expected one of {', '.join(DTYPES)}"),
            (bool(self.model.strip()), "model: expected a model name, folder or served model, got nothing"),
            (self.query_ids is None or len(self.query_ids) > 0, "queries: expected at least one query id"),
            (self.pieces is None or len(self.pieces) > 0,
             f"pieces: expected at least one of {', '.join(PIECES)}"),
        ]
        for ok, message in checks:
            if not ok:
                raise JobError(message)

    @property
    def base_method(self) -> str:
        """The run builders' name of this kind of label (``erag:em``, ``llm_relevance``): what the measure code
        keys its rules on (binary or graded, bound to the retrieved list)."""
        return erag.erag_method(self.metric) if self.label_kind == "erag" else erag.LLM_RELEVANCE

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> JobSpec:
        fields = json.loads(text)
        for name in ("query_ids", "pieces"):
            if fields.get(name) is not None:
                fields[name] = tuple(fields[name])
        return cls(**fields)

    @property
    def is_complete(self) -> bool:
        """Whether this is a "compute what the run lacks" job rather than a per-passage labelling job."""
        return self.label_kind == COMPLETE


def model_short_name(model: str, dtype: str | None = None) -> str:
    """A short, file-name-safe name of a model: the last part of its path or hub id (``/m/tiny-gemma3`` ->
    ``tiny-gemma3``, ``google/gemma-3-270m`` -> ``gemma-3-270m``), with the precision when one is forced."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", model.rstrip("/\\").replace("\\", "/").rsplit("/", 1)[-1]).strip("-")
    name = name or "model"
    return f"{name}-{dtype}" if dtype else name


def method_name(spec: JobSpec) -> str:
    """The label method a job writes: ``erag:<metric>@<model>`` or ``llm_relevance@<model>``; a complete job's
    name is ``complete@<model>`` (it writes the run's standard methods)."""
    if spec.is_complete:
        return f"{COMPLETE}@{model_short_name(spec.model, spec.dtype)}"
    return f"{spec.base_method}@{model_short_name(spec.model, spec.dtype)}"


def _model_identity(spec: JobSpec) -> str:
    where = spec.base_url if spec.backend == "openai" else ""
    return f"{spec.backend}|{spec.model}|{spec.dtype or ''}|{spec.api if spec.backend == 'openai' else ''}|{where}"


@dataclass(frozen=True)
class Job:
    """One row of the jobs database."""

    job_id: int
    run_path: str
    method: str
    spec: JobSpec
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


@dataclass(frozen=True)
class Progress:
    """Where a job stands: ``status`` as :func:`job_status` gives it, the share of items done, the labelling rate
    of the current attempt (items per second) and the estimated seconds left (None until a rate is known)."""

    status: str
    fraction: float
    rate_per_s: float | None
    eta_s: float | None


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie (an exited child not yet reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True  # no /proc (not Linux): trust kill(pid, 0)
    return state not in ("Z", "X")


def worker_alive(job: Job, now: float | None = None) -> bool:
    """Whether the job's worker process is alive: its pid runs and its heartbeat is recent."""
    if job.pid is None:
        return False
    now = time.time() if now is None else now
    beat = job.heartbeat if job.heartbeat is not None else job.created
    return now - beat < STALE_AFTER_S and process_alive(job.pid)


def job_status(job: Job, now: float | None = None) -> str:
    """The stored status, except that an active job whose worker is gone is ``interrupted`` (or ``cancelled``
    when a cancel had been asked for)."""
    if job.status in ACTIVE and job.pid is not None and not worker_alive(job, now):
        return CANCELLED if job.cancel_requested else INTERRUPTED
    return job.status


def job_progress(job: Job, now: float | None = None) -> Progress:
    """Share done and ETA. The rate is that of the current attempt, items labelled since it began labelling over
    the time to its last committed batch: ETA = (total - done) / rate."""
    now = time.time() if now is None else now
    status = job_status(job, now)
    fraction = job.done / job.total if job.total else 1.0
    rate = eta = None
    new_items = job.done - job.done_at_start
    if job.items_started is not None and job.updated is not None and new_items > 0 and job.updated > job.items_started:
        rate = new_items / (job.updated - job.items_started)
        if status in ACTIVE:
            eta = (job.total - job.done) / rate
    return Progress(status, fraction, rate, eta)


# --- the jobs database -------------------------------------------------------------------------------------

def default_jobs_db() -> Path:
    """``jobs.sqlite`` in the user cache (:func:`rageval.paths.cache_dir`), shared by the CLI and the dashboard."""
    from rageval.paths import cache_dir

    return cache_dir() / "jobs.sqlite"


class JobStore:
    """The jobs database (SQLite, WAL mode, so the dashboard reads while a worker writes). One connection, guarded
    by a lock, so a worker's heartbeat thread may share it."""

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
                        self._conn.execute(_SCHEMA)
                    else:
                        for step in range(version, SCHEMA_VERSION):
                            self._conn.execute(_MIGRATIONS[step])
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
        return Job(**fields)

    def _rows(self, where: str = "", params: Sequence = ()) -> list[Job]:
        with self._lock:
            cursor = self._conn.execute(f"SELECT * FROM jobs {where} ORDER BY job_id DESC", params)
            names = [d[0] for d in cursor.description]
            rows = cursor.fetchall()
        return [self._job(dict(zip(names, row))) for row in rows]

    def create(self, spec: JobSpec, method: str, total: int) -> Job:
        with self._transaction() as conn:
            cursor = conn.execute(
                "INSERT INTO jobs (run_path, method, spec, status, total, created) VALUES (?, ?, ?, ?, ?, ?)",
                (spec.run_path, method, spec.to_json(), QUEUED, total, time.time()))
            job_id = cursor.lastrowid
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
                         "items_started = NULL, updated = NULL, finished = NULL, error = NULL WHERE job_id = ?",
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
        now = time.time()
        self._update(job_id, model_id=model_id, device=device, items_started=now, updated=now, heartbeat=now)

    def add_done(self, job_id: int, count: int) -> None:
        now = time.time()
        with self._transaction() as conn:
            conn.execute("UPDATE jobs SET done = done + ?, updated = ?, heartbeat = ? WHERE job_id = ?",
                         (count, now, now, job_id))

    def set_stage(self, job_id: int, stage: str, done: int, total: int, *, new_stage: bool = False) -> None:
        """A complete job's progress: ``done`` of ``total`` LLM calls of pipeline stage ``stage``. A new stage
        restarts the rate's clock (``items_started``), so the ETA is that of the stage in progress."""
        now = time.time()
        values = {"stage": stage, "done": done, "total": total, "updated": now, "heartbeat": now}
        if new_stage:
            values.update(items_started=now, done_at_start=done)
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


# --- reading the run and writing into it ------------------------------------------------------------------

@dataclass(frozen=True)
class JobInputs:
    """What a job reads from its run file: the chosen queries, their rankings, the passages, the items."""

    queries: dict[str, Query]
    rankings: dict[str, Ranking]
    passages: dict[str, Passage]
    items: list[tuple[str, str]]     # (query_id, passage_id), queries in run order, passages by rank
    settings: dict


def read_job_inputs(spec: JobSpec) -> JobInputs:
    """The queries, rankings and passages a job needs, and its items: the top-k of each chosen query's ranking.
    Errors name the run file and, for unknown queries, the ids."""
    if Path(spec.run_path).is_file():
        recover_run_file(spec.run_path)
    try:
        reader = RunReader(spec.run_path)
    except StoreError as error:
        raise JobError(str(error)) from error
    with reader:
        settings = reader.settings()
        order = reader.query_table()["query_id"].tolist()
        if spec.query_ids is None:
            chosen = order
        else:
            known = set(order)
            unknown = [q for q in spec.query_ids if q not in known]
            if unknown:
                shown = ", ".join(repr(q) for q in unknown[:5])
                shown += f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
                raise JobError(f"{spec.run_path}: no query {shown} in this run "
                               f"({len(order)} queries, e.g. {order[0]!r})" if order
                               else f"{spec.run_path}: this run has no queries")
            wanted = set(spec.query_ids)
            chosen = [q for q in order if q in wanted]
        if not chosen:
            raise JobError(f"{spec.run_path}: this run has no queries to re-score")
        all_rankings = reader.rankings()
        k = spec.k or settings.get("k") or max((len(r.passages) for r in all_rankings.values()), default=0)
        rankings = {q: all_rankings[q] for q in chosen if q in all_rankings}
        items = [(q, pid) for q in chosen for pid in rankings.get(q, Ranking(q, ())).passage_ids[:k]]
        if not items:
            raise JobError(f"{spec.run_path}: the chosen queries have no ranked passages to re-score")
        queries = {q: reader.query(q) for q in chosen}
    passages = _read_passages(spec.run_path, {pid for _, pid in items})
    return JobInputs(queries, rankings, passages, items, settings)


def _read_passages(path: str, passage_ids: set[str]) -> dict[str, Passage]:
    ids = sorted(passage_ids)
    found: dict[str, Passage] = {}
    connection = open_readonly(path, RUN)
    try:
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            rows = connection.execute(f"SELECT passage_id, title, text, source FROM passages WHERE passage_id IN "
                                      f"({','.join('?' * len(chunk))})", chunk)
            found.update({row[0]: Passage(*row) for row in rows})
    finally:
        connection.close()
    missing = passage_ids - set(found)
    if missing:
        raise JobError(f"{path}: ranked passage {min(missing)!r} is not in the run's passages table")
    return found


@contextmanager
def _run_transaction(path: str | os.PathLike) -> Iterator[sqlite3.Connection]:
    """A write transaction on a run file in place (not the atomic rewrite of ``store.write_run``: results must
    appear as they are produced, and a commit is what survives a kill). Waits up to
    :data:`RUN_WRITE_TIMEOUT_S` for readers."""
    path = Path(path)
    if not path.is_file():
        raise JobError(f"{path}: no such run file")
    try:
        connection = open_for_write(path, RUN, timeout_s=RUN_WRITE_TIMEOUT_S, isolation_level=None)
    except StoreError as error:
        raise JobError(str(error)) from error
    try:
        connection.execute("BEGIN IMMEDIATE")
        try:
            yield connection
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        connection.execute("COMMIT")
    finally:
        connection.close()


def recover_run_file(path: str | os.PathLike) -> bool:
    """Roll back a write that a killed worker left half done. A worker killed inside a commit leaves a "hot"
    rollback journal beside the run file, and read-only readers (the dashboard's) cannot open the file until a
    read-write connection has rolled it back; opening one and reading does that. Returns whether a journal was
    there."""
    if not Path(f"{path}-journal").exists():
        return False
    connection = sqlite3.connect(path, timeout=RUN_WRITE_TIMEOUT_S)
    try:
        connection.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
    finally:
        connection.close()
    return True


def write_labels(path: str | os.PathLike, labels: Sequence[Label], evidence: Sequence[LabelEvidence]) -> None:
    """Insert (or replace) labels and their evidence in the run file, in one committed transaction."""
    with _run_transaction(path) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS label_evidence (method TEXT NOT NULL, query_id TEXT NOT NULL, "
                     "passage_id TEXT NOT NULL, evidence TEXT NOT NULL, PRIMARY KEY (method, query_id, passage_id))")
        conn.executemany("INSERT OR REPLACE INTO labels VALUES (?, ?, ?, ?)",
                         [(x.method, x.query_id, x.passage_id, float(x.value)) for x in labels])
        conn.executemany("INSERT OR REPLACE INTO label_evidence VALUES (?, ?, ?, ?)",
                         [(e.method, e.query_id, e.passage_id, e.evidence) for e in evidence])


def labelled_items(path: str | os.PathLike, method: str) -> set[tuple[str, str]]:
    """The (query, passage) pairs that already have a ``method`` label in the run file."""
    with RunReader(path) as reader:
        labels = reader.labels(method)
    return set(zip(labels["query_id"], labels["passage_id"]))


def _update_settings(path: str | os.PathLike, change: Callable[[dict], None]) -> None:
    with _run_transaction(path) as conn:
        row = conn.execute("SELECT value FROM meta WHERE key = 'settings'").fetchone()
        settings = json.loads(row[0]) if row else {}
        change(settings)
        conn.execute("INSERT OR REPLACE INTO meta VALUES ('settings', ?)", (json.dumps(settings, sort_keys=True),))


def record_provenance(path: str | os.PathLike, method: str, entry: Mapping) -> None:
    """Store what produced ``method``'s labels under the run's ``rescored`` setting and list the method in
    ``label_methods`` (and ``graded_label_methods`` when its labels are graded)."""
    def change(settings: dict) -> None:
        settings.setdefault("rescored", {})[method] = {**settings.get("rescored", {}).get(method, {}), **entry}
        settings["label_methods"] = sorted(set(settings.get("label_methods", [])) | {method})
        base = method.split("@", 1)[0]
        if erag.is_graded_method(base):
            settings["graded_label_methods"] = sorted(set(settings.get("graded_label_methods", [])) | {method})

    _update_settings(path, change)


def labelled_depth(ranking: Ranking, labelled: set[str]) -> float:
    """How many of the ranking's top passages all carry a label (infinite when the whole ranking does)."""
    for depth, passage_id in enumerate(ranking.passage_ids):
        if passage_id not in labelled:
            return depth
    return float("inf")


def compute_method_measures(labels: pd.DataFrame, rankings: Mapping[str, Ranking], run_cutoffs: Sequence[int],
                            base_method: str, method: str) -> list[MeasureValue]:
    """Per-query measure values of a re-scored method, by the run builders' own rules
    (:func:`rageval.erag.compute_measure_values` applied as to ``base_method``, e.g. ``erag:em``: binary or
    graded, cut to the top c at cutoff c), for the queries that have its labels.

    Cutoffs: the run's own cutoffs no deeper than the labelled depth d (the fewest top passages labelled in a
    query), plus d itself, so no measure counts an unlabelled passage as not relevant.
    """
    per_query: dict[str, set[str]] = {}
    for query_id, passage_id in zip(labels["query_id"], labels["passage_id"]):
        per_query.setdefault(query_id, set()).add(passage_id)
    measured = {q: rankings[q] for q in rankings if q in per_query}
    if not measured:
        return []
    depth = min(labelled_depth(r, per_query[q]) for q, r in measured.items())
    if depth == float("inf"):
        depth = max(len(r.passages) for r in measured.values())
    depth = int(depth)
    if depth < 1:
        return []
    cutoffs = sorted({c for c in run_cutoffs if c <= depth} | {depth})
    base_labels = [Label(base_method, q, p, float(v))
                   for q, p, v in zip(labels["query_id"], labels["passage_id"], labels["value"]) if q in measured]
    values = erag.compute_measure_values(base_labels, measured, cutoffs)
    return [dataclasses.replace(v, method=method) for v in values]


def run_cutoffs(path: str | os.PathLike) -> list[int]:
    """The cutoffs of the measures a run already stores (``P@5`` -> 5), ascending."""
    connection = open_readonly(path, RUN)
    try:
        names = [row[0] for row in connection.execute("SELECT DISTINCT measure FROM measure_values")]
    finally:
        connection.close()
    return sorted({int(match.group(1)) for name in names if (match := re.search(r"@(\d+)$", name))})


def write_method_measures(path: str | os.PathLike, method: str, base_method: str) -> list[MeasureValue]:
    """Recompute ``method``'s measure values from all its labels in the run file and replace the stored ones."""
    with RunReader(path) as reader:
        labels = reader.labels(method)
        rankings = reader.rankings()
    values = compute_method_measures(labels, rankings, run_cutoffs(path), base_method, method)
    with _run_transaction(path) as conn:
        conn.execute("DELETE FROM measure_values WHERE method = ?", (method,))
        conn.executemany("INSERT INTO measure_values VALUES (?, ?, ?, ?)",
                         [(v.method, v.measure, v.query_id, v.value) for v in values])
    return values


# --- the model -------------------------------------------------------------------------------------------

def model_settings(spec: JobSpec) -> factory.ModelSettings:
    """The job's model as the one generator factory describes it."""
    return factory.ModelSettings(model=spec.model, backend=spec.backend, base_url=spec.base_url, api=spec.api,
                                 api_key_env=spec.api_key_env, device=spec.device, dtype=spec.dtype,
                                 batch_size=spec.batch_size)


def check_model(spec: JobSpec) -> None:
    """Fail early, without loading anything, when the job's model cannot be found
    (:func:`rageval.generation.factory.check_model`)."""
    try:
        factory.check_model(model_settings(spec))
    except factory.ModelError as error:
        raise JobError(str(error)) from error


def load_job_generator(spec: JobSpec) -> Generator:
    """The job's model from :func:`rageval.generation.factory.load_generator`; loading errors become a
    :class:`JobError` naming the model."""
    try:
        return factory.load_generator(model_settings(spec))
    except factory.ModelError as error:
        raise JobError(str(error)) from error


def _device_of(generator) -> str:
    inner = getattr(generator, "generator", generator)
    if hasattr(inner, "device"):
        return str(inner.device)
    return f"server {inner.base_url}" if hasattr(inner, "base_url") else "unknown"


def _decoding(spec: JobSpec, settings: Mapping) -> DecodingSettings:
    """The run's own decoding for eRAG (so answers and cache entries match the run's), 3 tokens for yes/no;
    ``spec.max_new_tokens`` overrides the length."""
    if spec.label_kind == "llm_relevance":
        return DecodingSettings(max_new_tokens=spec.max_new_tokens or 3)
    stored = settings.get("decoding") or {}
    return DecodingSettings(max_new_tokens=spec.max_new_tokens or stored.get("max_new_tokens", 16),
                            temperature=stored.get("temperature", 0.0),
                            stop=tuple(stored.get("stop", ("\n",))))


def label_items(spec: JobSpec, method: str, query: Query, passage_ids: Sequence[str], passages: Mapping[str, Passage],
                generator: Generator, decoding: DecodingSettings) -> tuple[list[Label], list[LabelEvidence]]:
    """Labels of one query's passages under ``method``, with the engine's own eRAG / LLM-relevance code; eRAG's
    evidence is the model's answer from the passage alone."""
    ranking = {query.query_id: Ranking(query.query_id, tuple(ScoredPassage(p, 0.0) for p in passage_ids))}
    if spec.label_kind == "erag":
        settings = erag.EragSettings(k=len(passage_ids), metric=spec.metric, decoding=decoding,
                                     batch_size=spec.batch_size)
        outputs, labels = erag.compute_erag_labels([query], ranking, passages, generator, settings)
        values = {x.passage_id: x.value for x in labels}
        evidence = [LabelEvidence(method, o.query_id, o.passage_id,
                                  erag_evidence(generator.model_id, o.output, spec.metric, values[o.passage_id]))
                    for o in outputs]
    else:
        labels, evidence = erag.compute_llm_relevance_labels([query], ranking, passages, generator, len(passage_ids),
                                                             decoding=decoding, batch_size=spec.batch_size)
        evidence = [dataclasses.replace(e, method=method) for e in evidence]
    return [dataclasses.replace(x, method=method) for x in labels], evidence


_EVIDENCE_ANSWER = re.compile(r" answered '(?P<answer>.*)' from this passage alone \(", re.DOTALL)


def erag_evidence(model_id: str, output: str, metric: str, value: float) -> str:
    """The label evidence of an eRAG label a job writes: the model's answer from the passage alone and its score."""
    return (f"{model_id} answered '{output}' from this passage alone ({metric} against the gold answers: "
            f"{value:g})")


def answer_from_evidence(evidence: str) -> str | None:
    """The answer an :func:`erag_evidence` text holds (None for other evidence): what the inspector shows as the
    re-scored model's single-passage answer."""
    match = _EVIDENCE_ANSWER.search(evidence)
    return match.group("answer") if match else None


def _batches(items: Sequence[tuple[str, str]], size: int) -> Iterator[tuple[str, list[str]]]:
    """(query_id, passage ids) batches: each query's passages in rank order, at most ``size`` per batch."""
    by_query: dict[str, list[str]] = {}
    for query_id, passage_id in items:
        by_query.setdefault(query_id, []).append(passage_id)
    for query_id, passage_ids in by_query.items():
        for start in range(0, len(passage_ids), size):
            yield query_id, passage_ids[start:start + size]


# --- creating, launching, cancelling, resuming, running ----------------------------------------------------

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
    nothing to compute; a run whose questions lack gold answers is refused."""
    from rageval.pipeline.summary import missing_pieces, run_summary

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
    if lacking and unanswered is not None:
        raise JobError(f"{spec.run_path}: query {unanswered!r} has no gold answers; eRAG, E2E, the baselines and "
                       f"LLM-retEval score answers against them (upload the queries with their answers)")
    return lacking


def create_job(spec: JobSpec, store: JobStore) -> Job:
    """Check the run file, the queries and the model, and add a queued job; nothing runs yet."""
    check_writable(spec)
    check_no_conflict(spec, store)
    if spec.is_complete:
        lacking = lacking_pieces(spec)
        if not lacking:
            raise JobError(f"{spec.run_path}: the run already has every piece (eRAG, E2E, baselines, LLM-retEval); "
                           "nothing to compute")
        check_model(spec)
        return store.create(spec, method_name(spec), len(lacking))
    inputs = read_job_inputs(spec)
    check_model(spec)
    method = method_name(spec)
    recorded = inputs.settings.get("rescored", {}).get(method, {})
    if recorded.get("identity") not in (None, _model_identity(spec)):
        # Another model with the same short name labelled this method already: keep both apart.
        method = f"{method}-{hashlib.sha256(_model_identity(spec).encode()).hexdigest()[:6]}"
    return store.create(spec, method, len(inputs.items))


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


def start_job(spec: JobSpec, store: JobStore) -> Job:
    """Create the job and start its worker in the background."""
    job = create_job(spec, store)
    launch_worker(job.job_id, store)
    return store.get(job.job_id)


def resume_job(job_id: int, store: JobStore, *, launch: bool = True) -> Job:
    """Start a stopped job again (failed, cancelled, interrupted or never started); what it already labelled is
    skipped. Refused while its worker is alive."""
    job = store.get(job_id)
    if job_status(job) in ACTIVE and worker_alive(job):
        raise JobError(f"job {job_id} is still {job.status} in process {job.pid}; cancel it first")
    store.requeue(job_id)
    if launch:
        launch_worker(job_id, store)
    return store.get(job_id)


def cancel_job(job_id: int, store: JobStore, *, terminate: bool = False) -> Job:
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
    if terminate:
        with contextlib.suppress(ProcessLookupError):
            os.kill(job.pid, signal.SIGTERM)
    return store.get(job_id)


def run_job(job_id: int, store: JobStore | None = None, *, generator: Generator | None = None,
            log: Callable[[str], None] | None = None) -> Job:
    """The worker: label the job's remaining items batch by batch (each batch committed to the run file, then
    counted in the jobs database), check the cancel flag between batches, and when all are labelled write the
    method's measure values. ``generator`` replaces the job's model (tests); either way calls go through the
    LLM-call cache. Returns the job as it ended; a failure is stored with its message and raised."""
    from rageval.generation.cache import CachedGenerator, LLMCache
    from rageval.prompts import QA_FEW_SHOT, RELEVANCE_FEW_SHOT

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
        done = labelled_items(spec.run_path, method) & set(inputs.items)
        pending = [item for item in inputs.items if item not in done]
        store.begin_items(job_id, len(inputs.items), len(done))
        log(f"job {job_id}: {method} on {spec.run_path}: {len(done)} of {len(inputs.items)} items already "
            f"labelled, {len(pending)} to go")
        if pending:
            cache = resources.enter_context(LLMCache(spec.llm_cache) if spec.llm_cache else LLMCache())
            model = CachedGenerator(generator or load_job_generator(spec), cache)
            store.set_model(job_id, model.model_id, _device_of(model))
            decoding = _decoding(spec, inputs.settings)
            prompt = QA_FEW_SHOT if spec.label_kind == "erag" else RELEVANCE_FEW_SHOT
            record_provenance(spec.run_path, method, {
                "identity": _model_identity(spec), "label_kind": spec.label_kind,
                "metric": spec.metric if spec.label_kind == "erag" else None, "model": spec.model,
                "model_id": model.model_id, "backend": spec.backend, "device": _device_of(model),
                "base_url": spec.base_url if spec.backend == "openai" else None, "prompt": prompt.identifier,
                "decoding": decoding.as_dict(), "k": spec.k or inputs.settings.get("k"), "job_id": job_id,
                "command": f"rageval rescore run {job_id} --jobs-db {store.path}"})
            finished = len(done)
            for query_id, passage_ids in _batches(pending, spec.batch_size):
                if store.cancel_requested(job_id):
                    log(f"job {job_id}: cancelled after {finished} of {len(inputs.items)} items")
                    return store.finish(job_id, CANCELLED)
                labels, evidence = label_items(spec, method, inputs.queries[query_id], passage_ids,
                                               inputs.passages, model, decoding)
                write_labels(spec.run_path, labels, evidence)
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


class _StageReporter:
    """The ``progress`` callback of a complete job: writes ``(stage, done, total)`` into the jobs database after
    each LLM batch (one small WAL commit, as a re-score job's per batch) and reads the cancel flag, raising
    :class:`JobCancelled` so the pipeline stops between two batches."""

    def __init__(self, store: JobStore, job_id: int):
        self.store, self.job_id = store, job_id
        self.stage: str | None = None

    def __call__(self, stage: str, done: int, total: int) -> None:
        new_stage = stage != self.stage
        self.stage = stage
        self.store.set_stage(self.job_id, stage, done, total, new_stage=new_stage)
        if self.store.cancel_requested(self.job_id):
            raise JobCancelled(f"cancel requested during {stage}")


def run_complete_job(job: Job, store: JobStore, *, generator: Generator | None = None,
                     log: Callable[[str], None]) -> Job:
    """The worker of a complete job: :func:`rageval.pipeline.run.complete_run_file` on its run file with its
    model, stage progress into the jobs database. The file is rewritten once, atomically, at the end; a cancel
    (the flag, or SIGTERM) stops between LLM batches and leaves it as it was, every call made kept in the
    LLM-call cache for the next attempt."""
    from rageval.generation.cache import LLMCache
    from rageval.pipeline.run import complete_run_file

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
        model = generator or load_job_generator(spec)
        store.set_model(job_id, model.model_id, _device_of(model))
        complete_run_file(Path(spec.run_path), model_settings(spec), tuple(lacking), generator=model,
                          cache=cache, log=lambda message: log(f"job {job_id}: {message}"),
                          progress=_StageReporter(store, job_id))
        log(f"job {job_id}: done; {spec.run_path} now has {', '.join(lacking)}")
        return store.finish(job_id, DONE)
    return store.get(job_id)  # stopped: recorded by _attempt


# --- the command line: rageval rescore ... -----------------------------------------------------------------

def _store(args: argparse.Namespace) -> JobStore:
    return JobStore(args.jobs_db) if args.jobs_db else JobStore()


def _raise_cancelled(signum, frame) -> None:
    raise JobCancelled(f"signal {signum}")


def _run_here(job_id: int, store: JobStore, *, exit_when_stopped: bool = False) -> int:
    signal.signal(signal.SIGTERM, _raise_cancelled)
    job = run_job(job_id, store)
    print(f"job {job_id}: {job.status} ({job.done}/{job.total} items, method {job.method}, run {job.run_path})",
          flush=True)
    if job.status == CANCELLED and exit_when_stopped:
        # A background worker exits now: request threads still waiting on a model server would otherwise hold
        # the interpreter's exit until their requests time out. Everything that matters is committed.
        sys.stderr.flush()
        os._exit(1)
    return 0 if job.status == DONE else 1


def _parse_pieces(text: str | None) -> tuple[str, ...] | None:
    if not text:
        return None
    names = [x.strip() for x in text.split(",") if x.strip()]
    if names == ["all"]:
        return PIECES
    unknown = [x for x in names if x not in PIECES]
    if unknown or not names:
        raise JobError(f"--pieces {text!r}: expected 'all' or a comma list of {', '.join(PIECES)}")
    return tuple(names)


def cmd_start(args: argparse.Namespace) -> int:
    if args.pieces and not args.complete:
        raise JobError("--pieces goes with --complete")
    if args.complete:
        spec = JobSpec(str(args.run), model=args.model, backend=args.backend, label_kind=COMPLETE,
                       pieces=_parse_pieces(args.pieces), base_url=args.base_url, api=args.api,
                       api_key_env=args.api_key_env, device=args.device, dtype=args.dtype, batch_size=args.batch_size,
                       llm_cache=str(args.cache) if args.cache else None)
        with _store(args) as store:
            job = create_job(spec, store)
            print(f"job {job.job_id}: {job.method}, computing "
                  f"{', '.join(f'{p} ({w})' for p, w in lacking_pieces(spec).items())} of {job.run_path}")
            if args.detach:
                pid = launch_worker(job.job_id, store)
                print(f"started in the background (pid {pid}); follow it with `rageval rescore list`")
                return 0
            return _run_here(job.job_id, store)
    query_ids = tuple(q for q in args.queries.split(",") if q) if args.queries else None
    if args.num_queries is not None:
        with RunReader(args.run) as reader:
            query_ids = tuple(reader.query_table()["query_id"][:args.num_queries])
    spec = JobSpec(str(args.run), model=args.model, backend=args.backend, label_kind=args.labels,
                   metric=args.metric, k=args.k, query_ids=query_ids, base_url=args.base_url, api=args.api,
                   api_key_env=args.api_key_env, device=args.device, dtype=args.dtype, batch_size=args.batch_size,
                   max_new_tokens=args.max_new_tokens, llm_cache=str(args.cache) if args.cache else None)
    with _store(args) as store:
        job = create_job(spec, store)
        print(f"job {job.job_id}: {job.method}, {job.total} items on {job.run_path}")
        if args.detach:
            pid = launch_worker(job.job_id, store)
            print(f"started in the background (pid {pid}); follow it with `rageval rescore list`")
            return 0
        return _run_here(job.job_id, store)


def cmd_run(args: argparse.Namespace) -> int:
    with _store(args) as store:
        return _run_here(args.job_id, store, exit_when_stopped=True)


def cmd_resume(args: argparse.Namespace) -> int:
    with _store(args) as store:
        job = resume_job(args.job_id, store, launch=args.detach)
        if args.detach:
            print(f"job {job.job_id}: resumed in the background (pid {job.pid})")
            return 0
        return _run_here(args.job_id, store)


def cmd_cancel(args: argparse.Namespace) -> int:
    with _store(args) as store:
        job = cancel_job(args.job_id, store, terminate=args.now)
        print(f"job {job.job_id}: cancel requested ({job_status(job)})")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    with _store(args) as store:
        for job in store.list():
            progress = job_progress(job)
            eta = f", ETA {progress.eta_s:.0f} s" if progress.eta_s is not None else ""
            stage = f"stage {job.stage} " if job.stage else ""
            print(f"{job.job_id:>4}  {progress.status:<11} {stage}{job.done:>5}/{job.total:<5}{eta}  {job.method}  "
                  f"{job.run_path}" + (f"  error: {job.error}" if job.error else ""))
    return 0


def add_parsers(sub) -> None:
    """``rageval rescore start|run|resume|cancel|list``."""
    rescore = sub.add_parser("rescore", help="label a run's passages again with another model, in the background; "
                                             "labels saved as produced, resumable")
    actions = rescore.add_subparsers(dest="rescore_action", required=True)

    def with_db(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
        parser.add_argument("--jobs-db", type=Path, help="jobs database (default: jobs.sqlite in the user cache)")
        return parser

    start = with_db(actions.add_parser("start", help="create a job and run it here (or --detach)"))
    start.add_argument("run", type=Path, help="the run file to add labels to")
    start.add_argument("--complete", action="store_true",
                       help="compute what the run lacks (eRAG labels, E2E answers, baselines, LLM-retEval) instead "
                            "of one label method; the file is rewritten once, at the end")
    start.add_argument("--pieces", help=f"with --complete: a comma list of {', '.join(PIECES)} (default: all the "
                                        "run lacks)")
    start.add_argument("--labels", choices=LABEL_KINDS, default="erag",
                       help="erag: answer from each passage alone, scored against the gold answers; "
                            "llm_relevance: the model's yes/no relevance judgement")
    start.add_argument("--metric", choices=erag.ALL_METRICS, default="em", help="downstream metric of eRAG labels")
    start.add_argument("--model", default=DEFAULT_MODEL,
                       help=f"'{DEFAULT_MODEL}', a local Hugging Face model folder or cached id, or a served model")
    start.add_argument("--backend", choices=BACKENDS, default="transformers")
    start.add_argument("--base-url", default=DEFAULT_BASE_URL, help="OpenAI-compatible server (--backend openai)")
    start.add_argument("--api", choices=("completions", "chat"), default="completions")
    start.add_argument("--api-key-env", metavar="VAR", help="environment variable holding the server's API key")
    start.add_argument("--device", default="auto", help="auto (CUDA when present), cpu, cuda, cuda:1, ...")
    start.add_argument("--dtype", choices=DTYPES, help="precision (default: float32 on CPU, bfloat16 on CUDA)")
    start.add_argument("--k", type=int, help="top passages per query (default: the run's k)")
    chosen = start.add_mutually_exclusive_group()
    chosen.add_argument("--queries", help="comma-separated query ids (default: all)")
    chosen.add_argument("--num-queries", type=int, help="the run's first N queries")
    start.add_argument("--batch-size", type=int, default=8, help="prompts per batch, and per commit")
    start.add_argument("--max-new-tokens", type=int, help="answer length (default: the run's)")
    start.add_argument("--cache", type=Path, help="LLM-call cache file (default: the user cache)")
    start.add_argument("--detach", action="store_true", help="run in a background process and return at once")
    start.set_defaults(handler=cmd_start)

    run = with_db(actions.add_parser("run", help="run job N in this process (what a background worker runs)"))
    run.add_argument("job_id", type=int)
    run.set_defaults(handler=cmd_run)

    resume = with_db(actions.add_parser("resume", help="start a stopped job again, skipping what it labelled"))
    resume.add_argument("job_id", type=int)
    resume.add_argument("--detach", action="store_true")
    resume.set_defaults(handler=cmd_resume)

    cancel = with_db(actions.add_parser("cancel", help="stop job N after its current batch"))
    cancel.add_argument("job_id", type=int)
    cancel.add_argument("--now", action="store_true", help="also send the worker SIGTERM")
    cancel.set_defaults(handler=cmd_cancel)

    listing = with_db(actions.add_parser("list", help="every job with its status and progress"))
    listing.set_defaults(handler=cmd_list)
