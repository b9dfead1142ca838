"""Errors that tell the user which file, record and field went wrong."""

from __future__ import annotations


class RagevalError(Exception):
    """Base class of every error rageval raises on purpose."""


class DataError(RagevalError):
    """A malformed input file or record.

    The message always names the file, and where known the line (1-based) or record id and the field,
    followed by what was expected: ``data/nq.jsonl.gz, line 12, field 'answers': expected a list of strings``.
    """

    def __init__(self, path, message: str, *, line: int | None = None, record: str | None = None,
                 field: str | None = None):
        self.path = str(path)
        self.line = line
        self.record = record
        self.field = field
        where = [self.path]
        if line is not None:
            where.append(f"line {line}")
        if record is not None:
            where.append(f"record {record!r}")
        if field is not None:
            where.append(f"field {field!r}")
        super().__init__(f"{', '.join(where)}: {message}")


class StoreError(RagevalError):
    """A run file or cache file that cannot be read (unknown or newer schema, not SQLite, ...)."""


def not_utf8_message(data: bytes, position: int) -> str:
    """The message of a byte at ``position`` that is not UTF-8, with what it would be in Windows-1252 / Latin-1
    (the usual other encoding of a text file: ``0xe9`` is ``é``)."""
    byte = data[position]
    guess = bytes([byte]).decode("cp1252", errors="replace")
    hint = (f" ({guess!r} in Windows-1252/Latin-1: the file looks saved in that encoding)"
            if guess.isprintable() and guess != "\ufffd" else "")
    return f"expected UTF-8 text, found the byte {byte:#04x}{hint}; save the file as UTF-8"
