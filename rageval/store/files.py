"""The six kinds of SQLite file rageval writes (each defined with its schema in :mod:`rageval.store.schemas`), and
the one way to open each: kind and schema version checked.

Every file carries its kind in SQLite's ``application_id`` (four ASCII letters) and its schema version in
``user_version``; :func:`stamp` writes both, :func:`open_readonly` and :func:`open_for_write` check both and raise
:class:`~rageval.errors.StoreError` naming the file for anything wrong: missing, empty, not SQLite or damaged,
another kind (named when it is one of ours), a schema newer than this rageval or older than it still reads.

Paths are opened through proper ``file:`` URIs (:func:`sqlite_uri`), so ``#``, ``?`` and ``%`` in a file name are
just characters, and a read-only open never creates a file. A write that a killed writer left half done (a "hot"
rollback journal beside the file) is rolled back when the file and its folder can be written
(:func:`recover_hot_journal`); otherwise the file is read as it is on disk (SQLite's ``immutable``) and the
connection says so (:attr:`ReadonlyConnection.note`).

Damage past the header is found as early as it can be: :func:`open_readonly` runs SQLite's ``quick_check``; what
only shows when a row is read (undecodable text, a table of another shape, malformed JSON) is turned into the same
:class:`~rageval.errors.StoreError` by :func:`reading` / :func:`checked_reads`, which every reader uses, and
:func:`json_object` parses a JSON column that must hold an object.

The jobs database and the LLM cache were first written without an ``application_id``; such unmarked files of a
known version are still accepted (and the cache is stamped when next opened for writing).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import json
import os
import re
import sqlite3
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from rageval.errors import StoreError

# The kinds are defined with their schemas (rageval.store.schemas) and named here too, beside the opening of them.
from rageval.store.schemas import ANNOTATIONS as ANNOTATIONS
from rageval.store.schemas import ATTRIBUTION as ATTRIBUTION
from rageval.store.schemas import IUM as IUM
from rageval.store.schemas import JOBS as JOBS
from rageval.store.schemas import KINDS as KINDS
from rageval.store.schemas import LLM_CACHE as LLM_CACHE
from rageval.store.schemas import RUN as RUN
from rageval.store.schemas import SqliteKind as SqliteKind

if TYPE_CHECKING:
    import pandas as pd


def sqlite_uri(path: str | os.PathLike, mode: str = "ro", *, immutable: bool = False) -> str:
    """The ``file:`` URI of ``path`` opened with ``mode`` (``ro``, ``rw``, ``rwc``), every special character escaped
    (``a#b.sqlite`` -> ``file:///.../a%23b.sqlite?mode=ro``); ``immutable``: read the file as it is on disk, without
    locks or journals."""
    return f"{Path(path).resolve().as_uri()}?mode={mode}" + ("&immutable=1" if immutable else "")


def sqlite_application_id(path: str | os.PathLike) -> int | None:
    """The ``application_id`` of a SQLite file (big-endian at byte 68 of its header), None if not SQLite (or not a
    regular file: a pipe would block the read)."""
    try:
        if not Path(path).is_file():
            return None
        with open(path, "rb") as handle:
            header = handle.read(72)
    except OSError:
        return None
    if len(header) < 72 or not header.startswith(b"SQLite format 3\x00"):
        return None
    return int.from_bytes(header[68:72], "big")


def kind_of(path: str | os.PathLike) -> SqliteKind | None:
    """The kind of rageval file ``path`` is by its header (None: not SQLite, or no kind of ours), without opening
    it with SQLite."""
    application_id = sqlite_application_id(path)
    return next((kind for kind in KINDS if kind.application_id == application_id), None)


def stamp(connection: sqlite3.Connection, kind: SqliteKind) -> None:
    """Mark the database of ``connection`` as a ``kind`` file of the current schema version."""
    connection.execute(f"PRAGMA application_id = {kind.application_id}")
    connection.execute(f"PRAGMA user_version = {kind.version}")


def check_kind(connection: sqlite3.Connection, path: str | os.PathLike, kind: SqliteKind,
               *, allow_new: bool = False) -> int:
    """The schema version of the ``kind`` file open on ``connection`` (0 for a new, empty database when
    ``allow_new``); :class:`StoreError` naming ``path`` when it is not such a file."""
    try:
        application_id = connection.execute("PRAGMA application_id").fetchone()[0]
        version = connection.execute("PRAGMA user_version").fetchone()[0]
        has_tables = connection.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0] > 0
    except sqlite3.DatabaseError as error:
        raise StoreError(f"{path}: not a rageval {kind.noun} (SQLite says: {error})") from error
    if application_id == 0 and version == 0 and not has_tables:
        if allow_new:
            return 0
        raise StoreError(f"{path}: not a rageval {kind.noun} (an empty SQLite database)")
    if application_id != kind.application_id and not (application_id == 0 and kind.unmarked_ok):
        other = next((k for k in KINDS if k.application_id == application_id), None)
        found = f"it is a rageval {other.noun}" if other else f"SQLite application_id {application_id:#x}"
        raise StoreError(f"{path}: not a rageval {kind.noun} ({found}, expected {kind.tag!r})")
    if version > kind.version:
        raise StoreError(f"{path}: {kind.name} schema version {version} is newer than this rageval understands "
                         f"({kind.version}); upgrade rageval to read it")
    if version < kind.oldest:
        raise StoreError(f"{path}: unknown {kind.name} schema version {version}; this rageval reads "
                         f"{kind.oldest} to {kind.version}")
    return version


class ReadonlyConnection(sqlite3.Connection):
    """A connection :func:`open_readonly` made; ``note`` says why the file may not read as its writer left it
    (None when it does)."""

    note: str | None = None


def journal_path(path: str | os.PathLike) -> Path:
    """The rollback journal SQLite keeps beside ``path`` while a write is in progress."""
    return Path(f"{path}-journal")


def recover_hot_journal(path: str | os.PathLike, timeout_s: float = 30.0) -> bool:
    """Roll back a write that a killed writer left half done: with a "hot" rollback journal beside ``path``, SQLite
    rolls it back on the first read of a read-write connection. Returns whether a journal was there and is gone;
    False, touching nothing, when there is none or the file or its folder cannot be written. Never creates a file."""
    path = Path(path)
    journal = journal_path(path)
    if not journal.exists() or not path.is_file():
        return False
    if not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)):
        return False
    try:
        connection = sqlite3.connect(sqlite_uri(path, "rw"), uri=True, timeout=timeout_s)
        try:
            connection.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        finally:
            connection.close()
    except sqlite3.Error:
        return False
    return not journal.exists()


def _interrupted_write_note(path: Path) -> str:
    return (f"{path}: a write to this file was interrupted (its journal {journal_path(path).name} is still there) and "
            f"it cannot be rolled back here (the file or its folder is read-only), so it is read as it is on disk and "
            f"may hold half of that write")


def _connect_readonly(path: Path, kind: SqliteKind, check_same_thread: bool, immutable: bool = False
                      ) -> ReadonlyConnection:
    try:
        return sqlite3.connect(sqlite_uri(path, immutable=immutable), uri=True, check_same_thread=check_same_thread,
                               factory=ReadonlyConnection)
    except sqlite3.Error as error:
        raise StoreError(f"{path}: cannot open the {kind.noun} (SQLite says: {error})") from error


def _in_wal_mode(path: Path) -> bool:
    """Whether the SQLite header of ``path`` marks it as a write-ahead-log database (bytes 18-19 are 2)."""
    try:
        with open(path, "rb") as handle:
            header = handle.read(20)
    except OSError:
        return False
    return header.startswith(b"SQLite format 3\x00") and header[18:20] == b"\x02\x02"


def _needs_rollback(connection: sqlite3.Connection) -> bool:
    """Whether the file has a hot journal that this read-only connection may not roll back."""
    try:
        connection.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
    except sqlite3.Error as error:
        return getattr(error, "sqlite_errorcode", None) == sqlite3.SQLITE_READONLY_ROLLBACK
    return False


def open_readonly(path: str | os.PathLike, kind: SqliteKind, *, check_same_thread: bool = True,
                  shared: bool = False) -> ReadonlyConnection:
    """A read-only connection to the ``kind`` file ``path``, its kind and schema version checked and its pages
    checked by SQLite's ``quick_check``. Creates no file (unless ``shared``); a hot journal is rolled back where that
    is possible, else read around (the connection's ``note`` says so).

    ``shared``: a WAL-mode file that other connections write while it is read (the annotation file): once its kind
    and pages are checked, it is read with SQLite's locks, never as immutable (a writer's checkpoint could change
    pages under an immutable read), so the reader may leave the -wal and -shm files beside a good file (where its
    folder can be written; a file in a read-only folder has no writer)."""
    path = Path(path)
    describe_missing(path, kind)
    # A WAL-mode file with no write-ahead log holds everything in itself; opened the usual way, a read-only
    # connection would still leave empty -wal and -shm files beside it.
    quiet_wal = _in_wal_mode(path) and not Path(f"{path}-wal").exists()
    connection = _connect_readonly(path, kind, check_same_thread, immutable=quiet_wal)
    if _needs_rollback(connection):
        connection.close()
        # A journal gone by now was a live write's, finished since: a read-only reader takes one for a hot journal
        # when writes follow each other closely (SQLite checks the journal, then the writer's lock, and one write
        # can end and the next begin between the two). The file is whole then, and read as usual.
        immutable = not recover_hot_journal(path) and journal_path(path).exists()
        connection = _connect_readonly(path, kind, check_same_thread, immutable=immutable)
        if immutable:
            connection.note = _interrupted_write_note(path)
    try:
        check_kind(connection, path, kind)
        check_pages(connection, path, kind)
    except BaseException:
        connection.close()
        raise
    if quiet_wal and shared and os.access(path.parent, os.W_OK):  # checked as it is; now read it with locks
        connection.close()
        connection = _connect_readonly(path, kind, check_same_thread)
        try:
            check_kind(connection, path, kind)
        except BaseException:
            connection.close()
            raise
    return connection


def describe_missing(path: Path, kind: SqliteKind) -> None:
    """:class:`StoreError` naming ``path`` when it is not a regular, non-empty file (missing, a dangling link, a
    directory, a pipe or device, empty)."""
    if path.is_symlink() and not path.exists():
        raise StoreError(f"{path}: a link to {os.readlink(path)}, which does not exist")
    if not path.exists():
        raise StoreError(f"{path}: no such {kind.noun}")
    if path.is_dir():
        raise StoreError(f"{path}: is a folder; expected a {kind.noun}")
    if not path.is_file():
        raise StoreError(f"{path}: not a regular file, so not a rageval {kind.noun}")
    if path.stat().st_size == 0:
        raise StoreError(f"{path}: empty file, not a rageval {kind.noun}")


def check_pages(connection: sqlite3.Connection, path: str | os.PathLike, kind: SqliteKind) -> None:
    """SQLite's ``quick_check`` of the open file (every page and index, about 1 ms per MB): :class:`StoreError`
    naming ``path`` and the first problem when the file is damaged. A file that passed before and has not changed
    since is not checked again (:func:`remembered_good`)."""
    key = _good_key(path, f"pages:{kind.name}")
    if key is not None and remembered_good(key):
        return
    _check_pages(connection, path, kind)
    if key is not None:
        remember_good(key)


def _check_pages(connection: sqlite3.Connection, path: str | os.PathLike, kind: SqliteKind) -> None:
    try:
        problems = [row[0] for row in connection.execute("PRAGMA quick_check(3)")]
    except sqlite3.Error as error:
        raise StoreError(f"{path}: damaged {kind.noun} (SQLite says: {error})") from error
    if problems != ["ok"]:
        raise StoreError(f"{path}: damaged {kind.noun} (SQLite's check: {_shorten('; '.join(problems))})")


def open_for_write(path: str | os.PathLike, kind: SqliteKind, *, create: bool = False, timeout_s: float = 30.0,
                   **connect_args) -> sqlite3.Connection:
    """A read-write connection to the ``kind`` file ``path``, its kind and schema version checked. With
    ``create`` a missing or empty database is fine (its ``user_version`` reads 0): the caller creates its schema
    and calls :func:`stamp`; without it, a missing file is an error and never created. ``connect_args`` go to
    :func:`sqlite3.connect` (``isolation_level``, ``check_same_thread``)."""
    path = Path(path)
    dangling = path.is_symlink() and not path.exists()  # never create the target of a dangling link
    if not create or dangling or (path.exists() and not path.is_file()):
        describe_missing(path, kind)
    try:
        connection = sqlite3.connect(sqlite_uri(path, "rwc" if create else "rw"), uri=True, timeout=timeout_s,
                                     **connect_args)
    except sqlite3.Error as error:
        raise StoreError(f"{path}: cannot open the {kind.noun} (SQLite says: {error})") from error
    try:
        check_kind(connection, path, kind, allow_new=create)
    except BaseException:
        connection.close()
        raise
    return connection


#: SQLite's ``typeof`` of the values a column of each declared type holds when rageval wrote it.
_STORED_TYPES = {"TEXT": ("text",), "REAL": ("real", "integer"), "INTEGER": ("integer",)}


def schema_shape(schema: str) -> dict[str, dict[str, tuple[str, bool]]]:
    """table -> column -> (declared type, NOT NULL), as the SQL ``schema`` creates them (read back from an in-memory
    database)."""
    connection = sqlite3.connect(":memory:")
    try:
        connection.executescript(schema)
        tables = [r[0] for r in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite%'")]
        return {t: {r[1]: (r[2].upper(), bool(r[3])) for r in connection.execute(f"PRAGMA table_info('{t}')")}
                for t in tables}
    finally:
        connection.close()


def check_shape(connection: sqlite3.Connection, path: str | os.PathLike, kind: SqliteKind,
                shape: dict[str, dict[str, tuple[str, bool]]], required: Sequence[str]) -> set[str]:
    """The file's tables, after checking each table of ``shape`` (:func:`schema_shape` of the writer's schema) is of
    that shape: :class:`StoreError` naming the file for a missing ``required`` table, a missing column, a column
    that allows NULL where the writer's does not, or a value of another type than the writer stores (text in a
    number column; one scan per table, about 5 ms per MB). rageval never writes such a file.

    A file found good is not scanned again while it stays unchanged (:func:`remembered_good`)."""
    key = _good_key(path, f"shape:{kind.name}:{kind.version}:{','.join(sorted(required))}")
    if key is not None:
        tables = remembered_good(key)
        if tables is not None:
            return set(tables)
    tables = _check_shape(connection, path, kind, shape, required)
    if key is not None:
        remember_good(key, sorted(tables))
    return tables


# --- checks remembered ----------------------------------------------------------------------------------------
#: A file modified less than this long ago is never remembered as checked: a change within the file system's
#: timestamp granularity (a few ms) could leave its size and modification time as they were ("racy" entries, as
#: git calls them).
_SETTLED_NS = 2_000_000_000
_GOOD_FILE_NAME = "checked_files.json"
_GOOD_ENTRIES = 512
_good: dict[str, Any] | None = None


def _good_key(path: str | os.PathLike, what: str) -> str | None:
    """The key under which a check ``what`` of ``path`` as it is now is remembered: its device, inode, size and
    modification time (ns); None for a file modified in the last :data:`_SETTLED_NS`."""
    import time

    try:
        stat = os.stat(path)
    except OSError:
        return None
    if time.time_ns() - stat.st_mtime_ns < _SETTLED_NS:
        return None
    return f"{what}|{stat.st_dev}|{stat.st_ino}|{stat.st_size}|{stat.st_mtime_ns}"  # a link or a move: same file


def _in_cache(*parts: str) -> Path | None:
    """``parts`` under :func:`rageval.paths.cache_dir`; None when there is no usable cache folder (remembering is
    then skipped, never an error)."""
    try:
        from rageval.paths import cache_dir

        return cache_dir().joinpath(*parts)
    except OSError:
        return None


def _good_file() -> Path | None:
    return _in_cache(_GOOD_FILE_NAME)


def remembered_good(key: str) -> Any:
    """What a check stored for ``key`` (:func:`_good_key`) when the file passed it, else None: checks of an
    unchanged file (same inode, size and modification time) are not repeated, in this process nor the next (the
    record is ``checked_files.json`` in :func:`rageval.paths.cache_dir`), so a dashboard page opening a 1 GB run
    does not spend seconds re-checking what passed yesterday."""
    global _good
    if _good is None:
        record = _good_file()
        try:
            loaded = json.loads(record.read_text(encoding="utf-8")) if record is not None else {}
            _good = loaded if isinstance(loaded, dict) else {}
        except (OSError, ValueError):
            _good = {}
    return _good.get(key)


def remember_good(key: str, value: Any = True) -> None:
    """Remember that the check ``key`` passed (with what it found, ``value``), here and in the record file (best
    effort: an unwritable cache folder only costs the check next time)."""
    global _good
    if remembered_good(key) == value:
        return
    record = _good_file()
    entries = dict(_good or {})
    try:  # what other processes remembered since this one read the record is kept (read, merged, replaced)
        on_disk = json.loads(record.read_text(encoding="utf-8")) if record is not None else {}
        entries.update(on_disk if isinstance(on_disk, dict) else {})
    except (OSError, ValueError):
        pass
    entries.pop(key, None)
    entries[key] = value
    while len(entries) > _GOOD_ENTRIES:
        entries.pop(next(iter(entries)))
    _good = entries
    if record is None:
        return
    try:
        handle, temp_name = tempfile.mkstemp(prefix=f".{record.name}.", suffix=".tmp", dir=record.parent)
        with os.fdopen(handle, "w", encoding="utf-8") as temp:
            json.dump(entries, temp)
        os.replace(temp_name, record)
    except OSError:
        pass


#: Summaries are remembered in their own record (``run_summaries.json`` next to ``checked_files.json``), so that
#: the several summaries of each run never push a run's integrity checks out of theirs.
_SUMMARY_FILE_NAME = "run_summaries.json"
_SUMMARY_ENTRIES = 4096
#: Record file -> its entries as this process last read or wrote them.
_summaries: dict[str, dict[str, Any]] = {}


def _read_record(record: Path) -> dict[str, Any]:
    try:
        loaded = json.loads(record.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def _write_record(record: Path, entries: dict[str, Any]) -> None:
    """Replace ``record`` with ``entries`` atomically (best effort: an unwritable folder only costs the work)."""
    try:
        handle, temp_name = tempfile.mkstemp(prefix=f".{record.name}.", suffix=".tmp", dir=record.parent)
        with os.fdopen(handle, "w", encoding="utf-8") as temp:
            json.dump(entries, temp)
        os.replace(temp_name, record)
    except OSError:
        pass


def remembered_summary(path: str | os.PathLike, what: str, compute: Callable[[], Any]) -> Any:
    """``compute()`` (a JSON value: a summary of the file ``path``, e.g. one pass over a big table), remembered
    like the checks (:func:`remembered_good`, keyed the same way, in ``run_summaries.json`` in
    :func:`rageval.paths.cache_dir`) for the file as it is now: computed once per version of the file (device,
    inode, size, modification time), in this process or an earlier one. ``what`` names the summary and its
    format (change it when the format changes). A file modified in the last two seconds is never remembered: its
    summary is computed every time."""
    import copy

    key = _good_key(path, f"summary:{what}")
    record = _in_cache(_SUMMARY_FILE_NAME) if key is not None else None
    if record is not None:
        entries = _summaries.get(str(record))
        if entries is None:
            entries = _summaries[str(record)] = _read_record(record)
        if key in entries:
            return copy.deepcopy(entries[key])  # the caller's to change
    value = compute()
    if record is not None and key is not None:  # a record only for a file with a key
        merged = {**_read_record(record), **_summaries.get(str(record), {})}  # what other processes wrote too
        merged.pop(key, None)
        merged[key] = copy.deepcopy(value)
        while len(merged) > _SUMMARY_ENTRIES:
            merged.pop(next(iter(merged)))
        _summaries[str(record)] = merged
        _write_record(record, merged)
    return value


#: Frames are remembered as Arrow IPC files in this folder of the cache (one file per run version and frame).
_FRAME_FOLDER = "frames"
#: Frames of fewer rows are computed every time: reading them from the run is as quick as from a file.
FRAME_MIN_ROWS = 20_000
#: The most frame files kept (the least recently written go first).
_FRAME_FILES = 256


def remembered_frame(path: str | os.PathLike, what: str, compute: Callable[[], pd.DataFrame]) -> pd.DataFrame:
    """``compute()`` (a frame read from the run file ``path``: e.g. every failure case of a judge, 205,000 rows of
    a 100,000-query run, 0.4 s to read and sort), remembered like :func:`remembered_summary` per version of the
    file, but as an Arrow IPC file of its own (``frames/`` in :func:`rageval.paths.cache_dir`; a JSON record of
    megabytes would slow every summary): a later process reads it back in milliseconds, with its dtypes. Frames of
    fewer than :data:`FRAME_MIN_ROWS` rows are not stored; a missing or unreadable frame file is computed again;
    at most :data:`_FRAME_FILES` files are kept. ``what`` names the frame and its format (change it when the
    format changes); the frame returned is the caller's to change."""
    import hashlib

    from pyarrow import feather

    key = _good_key(path, f"frame:{what}")
    target = (_in_cache(_FRAME_FOLDER, f"{hashlib.sha256(key.encode()).hexdigest()[:32]}.arrow")
              if key is not None else None)
    if target is not None and target.exists():
        try:
            return feather.read_feather(target, memory_map=False)
        except Exception:  # a damaged cache file (a killed writer, another pyarrow) is computed again
            pass
    frame = compute()
    if target is not None and len(frame) >= FRAME_MIN_ROWS:
        _write_frame(target, frame)
    return frame


def _write_frame(target: Path, frame: pd.DataFrame) -> None:
    """Write ``frame`` to ``target`` atomically and keep the folder to :data:`_FRAME_FILES` files (best effort: an
    unwritable folder only costs the work next time)."""
    from pyarrow import feather

    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, temp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        os.close(handle)
        try:
            feather.write_feather(frame, temp_name, compression="uncompressed")
            os.replace(temp_name, target)
        finally:
            if os.path.exists(temp_name):
                os.unlink(temp_name)
        kept = sorted(target.parent.glob("*.arrow"), key=lambda f: f.stat().st_mtime_ns, reverse=True)
        for old in kept[_FRAME_FILES:]:
            old.unlink(missing_ok=True)
    except (OSError, ValueError, TypeError):
        pass


def _check_shape(connection: sqlite3.Connection, path: str | os.PathLike, kind: SqliteKind,
                 shape: dict[str, dict[str, tuple[str, bool]]], required: Sequence[str]) -> set[str]:
    with reading(path, kind):
        tables = {r[0] for r in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        for table, columns in shape.items():
            if table not in tables:
                if table in required:
                    raise StoreError(f"{path}: damaged {kind.noun} (no table {table!r})")
                continue
            # notnull, or part of the primary key (v1 files declared "query_id TEXT PRIMARY KEY" without NOT NULL)
            found = {r[1]: bool(r[3] or r[5]) for r in connection.execute(f"PRAGMA table_info('{table}')")}
            missing = [c for c in columns if c not in found]
            if missing:
                raise StoreError(f"{path}: damaged {kind.noun} (table {table!r} has no column {', '.join(missing)}; "
                                 f"it has {', '.join(found) or 'none'})")
            nullable = [c for c, (_, not_null) in columns.items() if not_null and not found[c]]
            if nullable:
                raise StoreError(f"{path}: damaged {kind.noun} (table {table!r} allows empty (NULL) "
                                 f"{', '.join(nullable)}, which rageval never writes)")
            _check_types(connection, path, kind, table, columns)
    return tables


def _check_types(connection: sqlite3.Connection, path: str | os.PathLike, kind: SqliteKind, table: str,
                 columns: dict[str, tuple[str, bool]]) -> None:
    tests = {column: tuple(_STORED_TYPES[declared]) + (() if not_null else ("null",))
             for column, (declared, not_null) in columns.items() if declared in _STORED_TYPES}
    if not tests:
        return
    kinds = ", ".join(f'typeof("{column}")' for column in tests)
    wrong = " OR ".join(f'typeof("{column}") NOT IN ({", ".join(map(repr, types))})' for column, types in tests.items())
    row = connection.execute(f'SELECT {kinds} FROM "{table}" WHERE {wrong} LIMIT 1').fetchone()
    if row is not None:
        column, found = next((c, t) for (c, types), t in zip(tests.items(), row) if t not in types)
        raise StoreError(f"{path}: damaged {kind.noun} (table {table!r}, column {column}: a {found} value where "
                         f"rageval stores {' or '.join(tests[column])})")


# --- reading past the header ------------------------------------------------------------------------------

#: What reading a damaged file can raise past its header: SQLite's errors (pandas wraps them in its DatabaseError,
#: an OSError), undecodable text and malformed JSON (ValueError), rows of another shape (TypeError, KeyError,
#: IndexError) and JSON nested deeper than the parser goes (RecursionError).
READ_ERRORS = (sqlite3.Error, OSError, ValueError, TypeError, KeyError, IndexError, RecursionError)
_MESSAGE_CHARS = 240
_JSON_TYPES = {list: "an array", str: "a string", int: "a number", float: "a number", bool: "a boolean",
               type(None): "null"}


def _shorten(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= _MESSAGE_CHARS else text[:_MESSAGE_CHARS - 1] + "…"


def damaged(path: str | os.PathLike, kind: SqliteKind, error: BaseException) -> StoreError:
    """The :class:`StoreError` for ``error``, raised while reading the ``kind`` file ``path``: the file and the
    innermost cause in one line (pandas' "Execution failed on sql ..." is reduced to SQLite's own words)."""
    cause = error
    while cause.__cause__ is not None:
        cause = cause.__cause__
    detail = "nested too deeply" if isinstance(cause, RecursionError) else (str(cause) or type(cause).__name__)
    return StoreError(f"{path}: unreadable {kind.noun} ({_shorten(detail)})")


@contextmanager
def reading(path: str | os.PathLike, kind: SqliteKind) -> Iterator[None]:
    """Reads inside turn any failure of a damaged file (:data:`READ_ERRORS`) into :func:`damaged`'s StoreError."""
    try:
        yield
    except StoreError:
        raise
    except READ_ERRORS as error:
        raise damaged(path, kind, error) from error


C = TypeVar("C", bound=type)


def checked_reads(kind: SqliteKind, *, path_attribute: str = "path") -> Callable[[C], C]:
    """Class decorator of a reader of ``kind`` files: each of its public methods runs inside :func:`reading` on the
    reader's ``path``, so a read that fails past the header is one StoreError naming the file."""
    def decorate(cls: C) -> C:
        for name, member in list(vars(cls).items()):
            if name.startswith("_") or name == "close" or not inspect.isfunction(member):
                continue
            setattr(cls, name, _checked_method(member, kind, path_attribute))
        return cls
    return decorate


def _checked_method(method: Callable[..., Any], kind: SqliteKind, path_attribute: str) -> Callable[..., Any]:
    @functools.wraps(method)
    def checked(self, *args, **kwargs):
        with reading(getattr(self, path_attribute), kind):
            return method(self, *args, **kwargs)
    return checked


def json_object(text: Any, path: str | os.PathLike, kind: SqliteKind, what: str = "settings") -> dict[str, Any]:
    """``text`` (a JSON column of the ``kind`` file ``path``) parsed, which must give a JSON object; StoreError
    naming the file and ``what`` otherwise (not JSON, another JSON type, nested too deeply)."""
    try:
        value = json.loads(text)
    except RecursionError as error:
        raise StoreError(f"{path}: damaged {kind.noun} ({what}: JSON nested too deeply)") from error
    except (ValueError, TypeError) as error:
        raise StoreError(f"{path}: damaged {kind.noun} ({what}: not JSON: {_shorten(str(error))})") from error
    if not isinstance(value, dict):
        raise StoreError(f"{path}: damaged {kind.noun} ({what}: {_JSON_TYPES.get(type(value), 'not')} JSON, "
                         f"expected an object)")
    return value


def is_integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_string(value: Any) -> bool:
    return isinstance(value, str)


def list_of(test: Callable[[Any], bool]) -> Callable[[Any], bool]:
    """A test: a JSON array whose every item passes ``test``."""
    return lambda value: isinstance(value, list) and all(test(item) for item in value)


def object_of(**fields: Callable[[Any], bool]) -> Callable[[Any], bool]:
    """A test: a JSON object whose ``fields``, where present and not null, pass their tests."""
    return lambda value: isinstance(value, dict) and all(
        value.get(name) is None or test(value[name]) for name, test in fields.items())


def check_settings(settings: dict[str, Any], path: str | os.PathLike, kind: SqliteKind,
                   types: dict[str, tuple[str, Callable[[Any], bool]]]) -> dict[str, Any]:
    """``settings`` (of the ``kind`` file ``path``), after checking that every setting named in ``types`` (name ->
    (its type in words, its test)) that it has is of that type: StoreError naming the file and the setting
    otherwise. rageval never writes such settings, and its views compute with them."""
    for name, (words, test) in types.items():
        if settings.get(name) is not None and not test(settings[name]):
            raise StoreError(f"{path}: damaged {kind.noun} (setting {name!r} is not {words}: "
                             f"{_shorten(repr(settings[name]))})")
    return settings


def write_text_atomically(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` through a temporary file beside it, renamed over ``path``: a reader sees
    the old file or the whole new one, and a killed writer leaves at most the temporary file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".partial")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)
    return path


def write_sqlite_atomically(path: str | os.PathLike, fill: Callable[[sqlite3.Connection], None], *,
                            overwrite: bool = True) -> Path:
    """Create the SQLite file ``path`` with ``fill(connection)`` in a temporary sibling, commit, then rename.

    A reader never sees half a file; a failure (or a kill) leaves any earlier file at ``path`` untouched.
    ``overwrite=False``: the new file is linked into place only where ``path`` does not exist yet (a file another
    process created first is kept, and the new one dropped): how a file that many writers share is created.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(path.parent)
    handle, temp_name = tempfile.mkstemp(prefix=temporary_prefix(path), suffix=".tmp", dir=path.parent)
    os.close(handle)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(temp_name, 0o666 & ~umask)  # mkstemp makes the file private; a run file is an ordinary file
    try:
        connection = sqlite3.connect(temp_name)
        try:
            fill(connection)
            connection.commit()
        finally:
            connection.close()
        if overwrite:
            os.replace(temp_name, path)
        else:
            _link_new(Path(temp_name), path)
    finally:
        Path(temp_name).unlink(missing_ok=True)
    return path


#: ``.<name>.<pid>.<random>.tmp`` (and its ``-journal``): a temporary sibling of an atomic write, by process.
_TEMPORARY = re.compile(r"\.(?P<name>.+)\.(?P<pid>\d+)\.[^.]+\.tmp(-journal|-wal|-shm)?")
#: A temporary sibling named before the pid was part of the name is stale once it is this old.
_UNNAMED_STALE_S = 3600


def temporary_prefix(path: Path) -> str:
    """The prefix of an atomic write's temporary sibling of ``path``: hidden, named after it and this process, so
    :func:`remove_stale_temporaries` can tell a killed writer's leftovers from a live write."""
    return f".{path.name}.{os.getpid()}."


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


def remove_stale_temporaries(folder: str | os.PathLike) -> list[Path]:
    """Delete the temporary siblings (and their journals) that a killed atomic write left in ``folder``: those of
    a process that no longer runs, and older unnamed ones (``.NAME.*.tmp`` over an hour old). A live write's are
    kept. Returns what was deleted."""
    removed: list[Path] = []
    try:
        entries = list(os.scandir(os.fspath(folder)))
    except OSError:
        return removed
    now = time.time()
    for entry in entries:
        if not entry.name.startswith(".") or ".tmp" not in entry.name or not entry.is_file(follow_symlinks=False):
            continue
        match = _TEMPORARY.fullmatch(entry.name)
        if match is not None:
            stale = not process_alive(int(match["pid"]))
        else:
            stale = (re.fullmatch(r"\..+\.tmp(-journal|-wal|-shm)?", entry.name) is not None
                     and now - entry.stat(follow_symlinks=False).st_mtime > _UNNAMED_STALE_S)
        if stale:
            with contextlib.suppress(OSError):
                os.unlink(entry.path)
                removed.append(Path(entry.path))
    return removed


def _link_new(source: Path, path: Path) -> None:
    """Give ``source`` the name ``path`` unless ``path`` exists (atomically where the file system has hard links;
    else a rename, unless another process was quicker)."""
    try:
        os.link(source, path)  # atomic, and fails if another process created the file first
    except FileExistsError:
        pass
    except OSError:  # a file system without hard links
        if not path.exists():
            os.replace(source, path)


class ReaderParts:
    """What the mixins of :class:`~rageval.store.runs.RunReader` (``runs_measures``, ``runs_reteval``) read through:
    the reader's path, connection and tables, and (for the type checker) its own frame helpers."""

    path: Path
    _connection: ReadonlyConnection
    _tables: set[str]

    if TYPE_CHECKING:
        def _frame(self, sql: str, params: Sequence[Any] = ()) -> pd.DataFrame: ...

        def _optional_frame(self, table: str, sql: str, params: Sequence[Any] = (), columns: Sequence[str] = ()
                            ) -> pd.DataFrame: ...

        def _methods_of(self, table: str) -> list[str]: ...
