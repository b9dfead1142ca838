"""The six kinds of SQLite file rageval writes, and the one way to open each: kind and schema version checked.

Every file carries its kind in SQLite's ``application_id`` (four ASCII letters) and its schema version in
``user_version``; :func:`stamp` writes both, :func:`open_readonly` and :func:`open_for_write` check both and raise
:class:`~rageval.errors.StoreError` naming the file for anything wrong: missing, empty, not SQLite or damaged,
another kind (named when it is one of ours), a schema newer than this rageval or older than it still reads.

Paths are opened through proper ``file:`` URIs (:func:`sqlite_uri`), so ``#``, ``?`` and ``%`` in a file name are
just characters. The jobs database and the LLM cache were first written without an ``application_id``; such
unmarked files of a known version are still accepted (and the cache is stamped when next opened for writing).
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rageval.errors import StoreError


def _tag(letters: str) -> int:
    return int.from_bytes(letters.encode("ascii"), "big")


@dataclass(frozen=True)
class SqliteKind:
    """One kind of rageval SQLite file: its ``application_id``, the schema version this rageval writes and the
    oldest it still reads."""

    name: str          # in messages: "run schema version 3 is newer ..."
    noun: str          # in messages: "not a rageval run file"
    application_id: int
    version: int
    oldest: int = 1
    unmarked_ok: bool = False  # files of this kind written before it had an application_id are accepted

    @property
    def tag(self) -> str:
        return self.application_id.to_bytes(4, "big").decode("ascii")


RUN = SqliteKind("run", "run file", _tag("RAGE"), version=2)  # v1: one E2E output per query (rageval.store.runs)
ATTRIBUTION = SqliteKind("attribution", "attribution run file", _tag("RAGA"), version=1)
IUM = SqliteKind("IUM", "IUM run file", _tag("RAGI"), version=1)
ANNOTATIONS = SqliteKind("annotation", "annotation file", _tag("RAGN"), version=1)
JOBS = SqliteKind("jobs database", "jobs database", _tag("RAGJ"), version=2, unmarked_ok=True)
LLM_CACHE = SqliteKind("LLM cache", "LLM cache", _tag("RAGC"), version=1, unmarked_ok=True)
KINDS = (RUN, ATTRIBUTION, IUM, ANNOTATIONS, JOBS, LLM_CACHE)


def sqlite_uri(path: str | os.PathLike, mode: str = "ro") -> str:
    """The ``file:`` URI of ``path`` opened with ``mode``, every special character escaped (``a#b.sqlite`` ->
    ``file:///.../a%23b.sqlite?mode=ro``)."""
    return f"{Path(path).resolve().as_uri()}?mode={mode}"


def sqlite_application_id(path: str | os.PathLike) -> int | None:
    """The ``application_id`` of a SQLite file (big-endian at byte 68 of its header), None if not SQLite."""
    try:
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


def _not_a_file(path: Path, kind: SqliteKind) -> str:
    return f"is a folder; expected a {kind.noun}" if path.is_dir() else f"no such {kind.noun}"


def open_readonly(path: str | os.PathLike, kind: SqliteKind, *, check_same_thread: bool = True
                  ) -> sqlite3.Connection:
    """A read-only connection to the ``kind`` file ``path``, its kind and schema version checked."""
    path = Path(path)
    if not path.is_file():
        raise StoreError(f"{path}: {_not_a_file(path, kind)}")
    if path.stat().st_size == 0:
        raise StoreError(f"{path}: empty file, not a rageval {kind.noun}")
    try:
        connection = sqlite3.connect(sqlite_uri(path), uri=True, check_same_thread=check_same_thread)
    except sqlite3.Error as error:
        raise StoreError(f"{path}: cannot open the {kind.noun} (SQLite says: {error})") from error
    try:
        check_kind(connection, path, kind)
    except BaseException:
        connection.close()
        raise
    return connection


def open_for_write(path: str | os.PathLike, kind: SqliteKind, *, create: bool = False, timeout_s: float = 30.0,
                   **connect_args) -> sqlite3.Connection:
    """A read-write connection to the ``kind`` file ``path``, its kind and schema version checked. With
    ``create`` a missing or empty database is fine (its ``user_version`` reads 0): the caller creates its schema
    and calls :func:`stamp`. ``connect_args`` go to :func:`sqlite3.connect` (``isolation_level``,
    ``check_same_thread``)."""
    path = Path(path)
    if path.is_dir() or (not create and not path.is_file()):
        raise StoreError(f"{path}: {_not_a_file(path, kind)}")
    try:
        connection = sqlite3.connect(path, timeout=timeout_s, **connect_args)
    except sqlite3.Error as error:
        raise StoreError(f"{path}: cannot open the {kind.noun} (SQLite says: {error})") from error
    try:
        check_kind(connection, path, kind, allow_new=create)
    except BaseException:
        connection.close()
        raise
    return connection


def write_sqlite_atomically(path: str | os.PathLike, fill: Callable[[sqlite3.Connection], None]) -> Path:
    """Create the SQLite file ``path`` with ``fill(connection)`` in a temporary sibling, commit, then rename.

    A reader never sees half a file; a failure (or a kill) leaves any earlier file at ``path`` untouched.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
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
        os.replace(temp_name, path)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise
    return path
