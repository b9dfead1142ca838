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
