"""Damage any rageval SQLite file can suffer, each a function ``(path, kind)`` that breaks the good file at ``path``
in place (or puts something else in its place). Bytes-level damage uses a fixed seed, so every build is the same."""

from __future__ import annotations

import gzip
import os
import random
import shutil
import sqlite3
import tempfile
from collections.abc import Callable
from pathlib import Path

from rageval.store import KINDS, SqliteKind

Damage = Callable[[Path, SqliteKind], None]
PAGE_SIZE_OFFSET = 16


def _page_size(data: bytes) -> int:
    size = int.from_bytes(data[PAGE_SIZE_OFFSET:PAGE_SIZE_OFFSET + 2], "big")
    return 65536 if size == 1 else size


def _noise(n: int, seed: int = 7) -> bytes:
    return random.Random(seed).randbytes(n)


def empty(path: Path, kind: SqliteKind) -> None:
    path.write_bytes(b"")


def gzipped(path: Path, kind: SqliteKind) -> None:
    path.write_bytes(gzip.compress(path.read_bytes()))


def random_bytes(path: Path, kind: SqliteKind) -> None:
    path.write_bytes(_noise(len(path.read_bytes())))


def text_file(path: Path, kind: SqliteKind) -> None:
    path.write_text("query_id\ttext\nq1\tnot a database at all\n", encoding="utf-8")


def truncated_half(path: Path, kind: SqliteKind) -> None:
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2])


def truncated_header(path: Path, kind: SqliteKind) -> None:
    path.write_bytes(path.read_bytes()[:60])  # "SQLite format 3" and part of the 100-byte header


def pages_zeroed(path: Path, kind: SqliteKind) -> None:
    """Every page after the first (the header and the schema) overwritten with zeros."""
    data = path.read_bytes()
    size = _page_size(data)
    path.write_bytes(data[:size] + bytes(len(data) - size))


def page_overwritten(path: Path, kind: SqliteKind) -> None:
    """The second page overwritten with random bytes (a b-tree page of some table)."""
    data = bytearray(path.read_bytes())
    size = _page_size(data)
    data[size:2 * size] = _noise(size)
    path.write_bytes(bytes(data))


def foreign_sqlite(path: Path, kind: SqliteKind) -> None:
    """Another program's SQLite database (no application_id) in its place."""
    path.unlink()
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
        connection.execute("INSERT INTO notes (body) VALUES ('not rageval''s')")
    connection.close()


def _pragma(path: Path, statement: str) -> None:
    connection = sqlite3.connect(path)
    try:
        connection.execute(statement)
        connection.commit()
    finally:
        connection.close()


def newer_schema(path: Path, kind: SqliteKind) -> None:
    _pragma(path, f"PRAGMA user_version = {kind.version + 1}")


def schema_zero(path: Path, kind: SqliteKind) -> None:
    """Marked as its kind, but with schema version 0 (no rageval writes that)."""
    _pragma(path, "PRAGMA user_version = 0")


def other_kind(path: Path, kind: SqliteKind) -> None:
    """Marked as the next of rageval's kinds."""
    other = KINDS[(KINDS.index(kind) + 1) % len(KINDS)]
    _pragma(path, f"PRAGMA application_id = {other.application_id}")


def unknown_application(path: Path, kind: SqliteKind) -> None:
    _pragma(path, "PRAGMA application_id = 305419896")  # 0x12345678: nobody's


def folder(path: Path, kind: SqliteKind) -> None:
    path.unlink()
    path.mkdir()
    (path / "inside.txt").write_text("a folder named like a database\n")


def dangling_link(path: Path, kind: SqliteKind) -> None:
    path.unlink()
    path.symlink_to(path.parent / "this-file-does-not-exist.sqlite")


def outside(path: Path) -> Path:
    """A folder beside the runs folder (never inside it), for what links point to."""
    place = path.parent.parent / f"outside-{path.parent.name}"
    place.mkdir(exist_ok=True)
    return place


def link_outside_to_text(path: Path, kind: SqliteKind) -> None:
    """A link to a text file outside the folder."""
    target = outside(path) / f"{path.stem}.txt"
    target.write_text("root:x:0:0:root:/root:/bin/bash\n")
    path.unlink()
    path.symlink_to(target)


def link_outside_to_good_file(path: Path, kind: SqliteKind) -> None:
    """A link to a good file of the kind outside the folder (fine: it is read through the link)."""
    target = outside(path) / path.name
    shutil.move(path, target)
    path.symlink_to(target)


def named_pipe(path: Path, kind: SqliteKind) -> None:
    """A FIFO: opening it for reading would block forever."""
    path.unlink()
    os.mkfifo(path)


def hot_journal(path: Path, kind: SqliteKind) -> None:
    """The file and its rollback journal as a writer killed inside a large transaction leaves them: the file holds
    half of the write, the "hot" journal beside it the pages to roll back."""
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch) / "db.sqlite"
        shutil.copy(path, work)
        connection = sqlite3.connect(work, isolation_level=None)
        try:
            connection.execute("PRAGMA journal_mode = DELETE")  # a file in WAL mode (annotations) as older ones were
            connection.execute("PRAGMA cache_size = 1")  # spill the uncommitted pages into the file
            connection.execute("BEGIN IMMEDIATE")
            connection.execute("CREATE TABLE half_written (x TEXT)")
            connection.executemany("INSERT INTO half_written VALUES (?)", [(str(i) * 50,) for i in range(3000)])
            shutil.copy(work, path)
            shutil.copy(f"{work}-journal", f"{path}-journal")
            connection.execute("ROLLBACK")
        finally:
            connection.close()


def wal_mode(path: Path, kind: SqliteKind) -> None:
    """Switched to write-ahead logging and closed (no -wal file left): a plain read-only open would leave empty
    -wal and -shm files beside it."""
    connection = sqlite3.connect(path)
    try:
        connection.execute("PRAGMA journal_mode = WAL")
    finally:
        connection.close()


def sql(*statements: str, schema_edit: bool = False) -> Damage:
    """Damage by SQL statements on the file (``schema_edit``: with ``PRAGMA writable_schema`` on, to change a
    table's declared shape in place)."""
    def damage(path: Path, kind: SqliteKind) -> None:
        connection = sqlite3.connect(path, isolation_level=None)
        try:
            if schema_edit:
                connection.execute("PRAGMA writable_schema = ON")
            for statement in statements:
                connection.execute(statement)
        finally:
            connection.close()
    return damage
