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


class JobError(RagevalError):
    """A job that cannot be created, started or resumed; the message names the job, file or id at fault."""


#: The first bytes of files that are not text at all, and what to do with them (checked before any encoding
#: hint: a gzip or Parquet file is not Windows-1252 text).
BINARY_SIGNATURES = (
    (b"\x1f\x8b", "a gzip-compressed file; decompress it first (gunzip FILE)"),
    (b"PAR1", "a Parquet file, not text; read it with pandas.read_parquet, or export the data as JSON Lines"),
    (b"PK\x03\x04", "a ZIP archive (or an .xlsx/.docx file); extract the text file from it first"),
    (b"\x28\xb5\x2f\xfd", "a zstd-compressed file; decompress it first (zstd -d FILE)"),
    (b"BZh", "a bzip2-compressed file; decompress it first (bunzip2 FILE)"),
    (b"\xfd7zXZ\x00", "an xz-compressed file; decompress it first (unxz FILE)"),
    (b"SQLite format 3\x00", "an SQLite database, not text"),
)


def binary_kind(data: bytes) -> str | None:
    """What ``data`` is when it is plainly not a text file (a known signature, or NUL bytes in its first 4 KiB,
    which no UTF-8 or Windows-1252 text holds), else ``None``."""
    for signature, kind in BINARY_SIGNATURES:
        if data.startswith(signature):
            return kind
    if b"\x00" in data[:4096] and not data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "binary data, not a text file"
    return None


def not_utf8_message(data: bytes, position: int) -> str:
    """The message of a byte at ``position`` that is not UTF-8: for a file that is not text at all (gzip, Parquet,
    ZIP, binary: :func:`binary_kind`) what it is; else the byte with what it would be in Windows-1252 / Latin-1
    (the usual other encoding of a text file: ``0xe9`` is ``é``)."""
    if (kind := binary_kind(data)) is not None:
        return f"expected UTF-8 text, found {kind}"
    byte = data[position]
    guess = bytes([byte]).decode("cp1252", errors="replace")
    hint = (f" ({guess!r} in Windows-1252/Latin-1: the file looks saved in that encoding)"
            if guess.isprintable() and guess != "\ufffd" else "")
    return f"expected UTF-8 text, found the byte {byte:#04x}{hint}; save the file as UTF-8"
