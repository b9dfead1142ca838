"""Reading a piece of a long text column without loading the whole value.

A passage can be hundreds of megabytes (a file another tool wrote, a user's corpus). SQL ``substr`` and ``length``
still make SQLite read the whole value into memory, so :func:`text_window` reads the bytes it needs through
SQLite's incremental blob I/O (which works on TEXT values): the memory it takes is that of the window, whatever the
size of the text.

A window is a range of UTF-8 bytes ``[start, start + size)``; it shows the characters whose first byte lies in it
(a character cut by the window's end is completed from the next bytes, and its continuation bytes at the next
window's start are skipped), so consecutive windows show every character exactly once. Sizes are therefore in
bytes, which for ASCII text are characters. A file where that is impossible (a table without rowids, a UTF-16
database) is read with ``substr`` and ``length`` instead, and its sizes are in characters.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

_MAX_UTF8_TAIL = 3  # continuation bytes after a character's first byte


def _is_continuation(byte: int) -> bool:
    return byte & 0xC0 == 0x80


def utf8_window(raw: bytes, size: int, *, at_start: bool) -> str:
    """The characters whose first byte is among the first ``size`` bytes of ``raw`` (the window's bytes followed by
    up to 3 more); ``at_start``: the window starts the text (no continuation bytes of an earlier character)."""
    limit = min(size, len(raw))
    begin = 0
    if not at_start:
        while begin < limit and _is_continuation(raw[begin]):
            begin += 1
    if begin == limit:  # no character starts in the window (it lies inside one)
        return ""
    end = limit
    while end < len(raw) and _is_continuation(raw[end]):
        end += 1
    return raw[begin:end].decode("utf-8")  # invalid UTF-8 is damage: the reader names the file


def text_window(connection: sqlite3.Connection, table: str, where: str, params: Sequence[Any], start: int,
                size: int, column: str = "text") -> tuple[str, int] | None:
    """``(window, total)``: the piece ``[start, start + size)`` of ``column`` in the one row of ``table`` matching
    ``where`` (an SQL condition with ``?`` parameters ``params``; trusted names only) and the whole text's size:
    UTF-8 bytes when read incrementally, characters when the file only allows ``substr`` (see the module's
    docstring). None when no row matches or the value is NULL."""
    if _utf8(connection):
        try:
            row = connection.execute(f"SELECT rowid, typeof({column}) FROM {table} WHERE {where}", params).fetchone()
        except sqlite3.OperationalError:  # a WITHOUT ROWID table
            row = ()
        if row is None:
            return None
        if row and row[1] == "null":
            return None
        if row and row[1] in ("text", "blob"):
            try:
                with connection.blobopen(table, column, row[0], readonly=True) as blob:
                    total = len(blob)
                    blob.seek(min(max(int(start), 0), total))
                    raw = blob.read(int(size) + _MAX_UTF8_TAIL)
                return utf8_window(raw, int(size), at_start=start <= 0), total
            except sqlite3.Error:
                pass
    found = connection.execute(f"SELECT substr({column}, ?, ?), length({column}) FROM {table} WHERE {where}",
                               (int(start) + 1, int(size), *params)).fetchone()
    if found is None or found[1] is None:
        return None
    return str(found[0]), int(found[1])


def _utf8(connection: sqlite3.Connection) -> bool:
    return connection.execute("PRAGMA encoding").fetchone()[0] == "UTF-8"
