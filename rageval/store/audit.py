"""The audit log of a dashboard served for a team: ``audit.sqlite`` in the runs folder (kind "RAGL",
:data:`rageval.store.schemas.AUDIT_SCHEMA`), one row per sign-in, job start or cancel, upload, queue created and
adjudication, with who (the signed-in user's id) and when (UTC); the actions' names, and the sessions the log says
are over, are team mode's (:mod:`rageval.team.audit`).

Append-only and tamper-evident: this module only inserts; the file's triggers refuse UPDATE, DELETE, an INSERT
(OR REPLACE) onto an existing entry and an entry that does not carry the last entry's hash, from anyone. Each entry
carries ``hash`` = sha256 over its content and the previous entry's hash
(:func:`rageval.store.schemas.audit_entry_hash`), so an entry changed, removed or slipped in by someone who can write
the file (and drop its triggers) shows in :func:`verify` (``rageval audit verify``) at the first entry that does not
verify. A chain cannot show entries cut from its end, nor a log rewritten whole: keep a copy of the log, or of each
entry's line the server prints (:func:`entry_line`), off this machine (docs/deploy.md).

Each append is its own transaction (committed before the action's page goes on), so a killed server loses no entry
it had written. A v1 log (no hashes) is upgraded at its next append: its entries are chained as they are then.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sqlite3
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rageval.errors import StoreError
from rageval.store.files import open_for_write, open_readonly, stamp
from rageval.store.schemas import (
    AUDIT,
    AUDIT_GENESIS,
    AUDIT_SCHEMA,
    AUDIT_TRIGGER_NAMES,
    audit_entry_hash,
    upgrade_audit_log,
)

AUDIT_FILE = "audit.sqlite"


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
    hash: str = ""  # "" in a v1 log, read before its upgrade


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
            upgrade_audit_log(connection)  # a v1 log: chained now, in this transaction
            last = connection.execute("SELECT entry, hash FROM audit ORDER BY entry DESC LIMIT 1").fetchone()
            entry, previous = (last[0] + 1, last[1]) if last else (1, AUDIT_GENESIS)
            digest = audit_entry_hash(entry, when, user_id, action, text, previous)
            connection.execute("INSERT INTO audit (entry, at, user_id, action, detail, prev_hash, hash) "
                               "VALUES (?, ?, ?, ?, ?, ?, ?)", (entry, when, user_id, action, text, previous, digest))
            connection.execute("COMMIT")
        except BaseException:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            raise
    except sqlite3.DatabaseError as error:
        raise StoreError(f"{path}: cannot append to the audit log (SQLite said: {error})") from error
    finally:
        connection.close()
    return AuditEntry(entry, when, user_id, action, json.loads(text), digest)


def entry_line(entry: AuditEntry) -> str:
    """One line for the server log (journald, syslog) holding the whole entry and its hash, so a copy of the log
    can live off this machine and be compared with the file."""
    return "rageval audit: " + json.dumps({"entry": entry.entry, "at": entry.at, "user_id": entry.user_id,
                                           "action": entry.action, "detail": entry.detail, "hash": entry.hash},
                                          sort_keys=True, default=str)


def read_entries(path: str | os.PathLike, *, limit: int | None = None,
                 actions: Collection[str] | None = None) -> list[AuditEntry]:
    """The entries, newest first (at most ``limit``; only those of ``actions`` when given); none when the file does
    not exist yet."""
    path = Path(path)
    if not path.exists():
        return []
    where = "" if actions is None else f" WHERE action IN ({', '.join('?' * len(actions))})"
    params: list[object] = list(actions or ())
    if limit is not None:
        params.append(limit)
    connection = open_readonly(path, AUDIT)
    try:
        chained = connection.execute("PRAGMA user_version").fetchone()[0] >= 2
        rows = connection.execute(f"SELECT entry, at, user_id, action, detail, {'hash' if chained else chr(39) * 2} "
                                  f"FROM audit{where} ORDER BY entry DESC" + (" LIMIT ?" if limit is not None else ""),
                                  params).fetchall()
    except sqlite3.DatabaseError as error:
        raise StoreError(f"{path}: cannot read the audit log (SQLite said: {error})") from error
    finally:
        connection.close()
    return [AuditEntry(int(e), at, user, action, json.loads(detail), digest)
            for e, at, user, action, detail, digest in rows]


@dataclass(frozen=True)
class Verification:
    """What :func:`verify` found: the entries read, the first that does not verify (None: all do) and why, and the
    last entry's hash (to compare with a copy kept elsewhere)."""

    path: Path
    entries: int
    first_bad: int | None
    problem: str | None
    last_hash: str | None

    @property
    def ok(self) -> bool:
        return self.problem is None

    def summary(self) -> str:
        if self.problem is None:
            if not self.entries:
                return f"{self.path}: no entries yet"
            return (f"{self.path}: all {self.entries:,} entries verify (hash chain intact; last hash "
                    f"{self.last_hash})")
        where = f"entry {self.first_bad}" if self.first_bad is not None else "the file"
        return f"{self.path}: {where} does not verify: {self.problem}"

    def as_json(self) -> dict[str, Any]:
        return {"path": str(self.path), "entries": self.entries, "ok": self.ok, "first_bad_entry": self.first_bad,
                "problem": self.problem, "last_hash": self.last_hash}


def verify(path: str | os.PathLike) -> Verification:
    """Walk the hash chain of the audit log ``path`` in entry order: the first entry whose ``prev_hash`` is not the
    previous entry's hash (an entry removed or slipped in before it) or whose ``hash`` is not that of its content
    (changed), and whether the append-only triggers are all there. ``path`` may be the runs folder that holds it.
    A missing file has no entries (ok)."""
    path = audit_path(path) if Path(path).is_dir() else Path(path)
    if not path.exists():
        return Verification(path, 0, None, None, None)
    connection = open_readonly(path, AUDIT)
    try:
        version = connection.execute("PRAGMA user_version").fetchone()[0]
        count = connection.execute("SELECT COUNT(*) FROM audit").fetchone()[0]
        if version < 2:
            return Verification(path, count, None, f"a version {version} log carries no hashes yet (they are added "
                                                   "at its next append, e.g. the next sign-in)", None)
        triggers = {name for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
        rows = connection.execute("SELECT entry, at, user_id, action, detail, prev_hash, hash FROM audit "
                                  "ORDER BY entry").fetchall()
    except sqlite3.DatabaseError as error:
        raise StoreError(f"{path}: cannot read the audit log (SQLite said: {error})") from error
    finally:
        connection.close()
    previous, before = AUDIT_GENESIS, None
    for entry, at, user_id, action, detail, prev_hash, digest in rows:
        if prev_hash != previous:
            what = "the first entry" if before is None else f"entry {before}"
            return Verification(path, len(rows), entry, f"its previous hash is not {what}'s: an entry before it was "
                                                        "removed, replaced or inserted", previous)
        if audit_entry_hash(entry, at, user_id, action, detail, prev_hash) != digest:
            return Verification(path, len(rows), entry, "its content (time, who, action or details) is not what "
                                                        "its hash was computed over: it was changed", previous)
        previous, before = digest, entry
    missing = [name for name in AUDIT_TRIGGER_NAMES if name not in triggers]
    if missing:
        return Verification(path, len(rows), None, f"its append-only triggers are gone ({', '.join(missing)}): "
                                                   "someone changed the file's schema", previous if rows else None)
    return Verification(path, len(rows), None, None, previous if rows else None)
