"""The audit log of a dashboard served for a team: ``audit.sqlite`` in the runs folder (kind "RAGL",
:data:`rageval.store.schemas.AUDIT_SCHEMA`), one row per sign-in, job start or cancel, upload, queue created and
adjudication, with who (the signed-in user's id) and when (UTC).

Append-only: this module only inserts, and the file's triggers refuse UPDATE and DELETE from anyone, so an entry
once committed stays as written. Each append is its own transaction (committed before the action's page goes on),
so a killed server loses no entry it had written.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rageval.errors import StoreError
from rageval.store.files import open_for_write, open_readonly, stamp
from rageval.store.schemas import AUDIT, AUDIT_SCHEMA

AUDIT_FILE = "audit.sqlite"
SIGN_IN, JOB_START, JOB_CANCEL, JOB_RESUME, UPLOAD, QUEUE_CREATE, ADJUDICATE = (
    "sign_in", "job_start", "job_cancel", "job_resume", "upload", "queue_create", "adjudicate")


def audit_path(runs_folder: str | os.PathLike) -> Path:
    """``audit.sqlite`` in ``runs_folder``."""
    return Path(runs_folder) / AUDIT_FILE


@dataclass(frozen=True)
class AuditEntry:
    entry: int
    at: str       # UTC, ISO 8601
    user_id: str
    action: str
    detail: dict[str, Any]


def append(path: str | os.PathLike, user_id: str, action: str, detail: Mapping[str, Any] | None = None,
           *, at: dt.datetime | None = None) -> AuditEntry:
    """Append one entry (created with the file on the first append) and commit it; the entry as stored."""
    if not user_id or not action:
        raise ValueError("an audit entry needs a user id and an action")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    when = (at or dt.datetime.now(dt.UTC)).astimezone(dt.UTC).replace(microsecond=0).isoformat()
    text = json.dumps(dict(detail or {}), sort_keys=True, default=str)
    connection = open_for_write(path, AUDIT, create=True, isolation_level=None)
    try:
        if connection.execute("PRAGMA user_version").fetchone()[0] == 0:  # new: its tables, then its stamp
            connection.executescript(AUDIT_SCHEMA)  # IF NOT EXISTS: two first appends at once are both fine
            stamp(connection, AUDIT)
        connection.execute("BEGIN IMMEDIATE")
        try:
            cursor = connection.execute("INSERT INTO audit (at, user_id, action, detail) VALUES (?, ?, ?, ?)",
                                        (when, user_id, action, text))
            connection.execute("COMMIT")
        except BaseException:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            raise
    except sqlite3.DatabaseError as error:
        raise StoreError(f"{path}: cannot append to the audit log (SQLite said: {error})") from error
    finally:
        connection.close()
    assert cursor.lastrowid is not None
    return AuditEntry(cursor.lastrowid, when, user_id, action, json.loads(text))


def read_entries(path: str | os.PathLike, *, limit: int | None = None) -> list[AuditEntry]:
    """The entries, newest first (at most ``limit``); none when the file does not exist yet."""
    path = Path(path)
    if not path.exists():
        return []
    connection = open_readonly(path, AUDIT)
    try:
        rows = connection.execute("SELECT entry, at, user_id, action, detail FROM audit ORDER BY entry DESC"
                                  + (" LIMIT ?" if limit is not None else ""),
                                  (limit,) if limit is not None else ()).fetchall()
    except sqlite3.DatabaseError as error:
        raise StoreError(f"{path}: cannot read the audit log (SQLite said: {error})") from error
    finally:
        connection.close()
    return [AuditEntry(int(e), at, user, action, json.loads(detail)) for e, at, user, action, detail in rows]
