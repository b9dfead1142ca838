"""Reading an uploaded text file line by line (strict UTF-8, within the limits) and a JSON record field by field:
every bad line or field is reported as a problem naming the file, the line and the field, never raised."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from rageval.errors import not_utf8_message
from rageval.upload.problems import Problems, UploadFile, UploadLimits, too_large_message

#: Ids: what stays one field in a TREC file and one safe token in a URL.
_ID_PATTERN = re.compile(r"^\S+$")


def read_lines(file: UploadFile, problems: Problems, limits: UploadLimits) -> list[tuple[int, str]] | None:
    """The non-blank lines of ``file`` with their 1-based numbers, or None (reported) when the file is too large,
    empty or not UTF-8. Lines end at ``\\n`` only (a JSON string may hold U+2028); a trailing ``\\r`` is dropped."""
    unreadable = file_problem(file, limits)
    if unreadable:
        problems.error(file.name, None, unreadable)
        return None
    try:
        text = file.data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = file.data.count(b"\n", 0, error.start) + 1
        problems.error(file.name, line, not_utf8_message(file.data, error.start))
        return None
    text = text.removeprefix("\ufeff")  # the UTF-8 byte-order mark some editors write: fine
    lines = [(number, line.removesuffix("\r")) for number, line in enumerate(text.split("\n"), start=1)
             if line.strip()]
    if not lines:
        problems.error(file.name, None, "the file is empty: expected one record per line")
        return None
    return lines


def file_problem(file: UploadFile, limits: UploadLimits) -> str | None:
    """Why ``file`` cannot be read line by line at all (too large, or plainly not UTF-8 text), else None."""
    if file.size > limits.max_file_bytes:
        return too_large_message(file.size, limits.max_file_bytes)
    return encoding_problem(file.data)


#: Byte-order marks of the encodings other than UTF-8, longest first (UTF-32-LE's starts like UTF-16-LE's).
_BOMS = ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"), (b"\xff\xfe", "UTF-16"),
         (b"\xfe\xff", "UTF-16"))
#: The first bytes of files that are no text at all, and what to do about each.
_SIGNATURES = (
    (b"\x1f\x8b", "gzip-compressed", "decompress it (gunzip) and give the text file"),
    (b"PK\x03\x04", "a zip archive (a spreadsheet or a zipped folder?)", "give the text file itself"),
    (b"SQLite format 3\x00", "an SQLite database (a rageval run file?)", "give the text file; a run file is "
                                                                          "read from the runs folder as it is"),
    (b"%PDF-", "a PDF document", "give the text file"),
)
_SAMPLE_BYTES = 4096


def encoding_problem(data: bytes) -> str | None:
    """Why ``data`` is plainly not UTF-8 text, in words that say what to do; None when it may be.

    Recognised: UTF-16 and UTF-32 with a byte-order mark, and without one by their NUL bytes (ASCII characters
    in UTF-16-LE are each followed by a NUL byte: valid UTF-8, which would otherwise surface as a baffling "not
    valid JSON"); gzip, zip, SQLite and PDF files by their first bytes; any other file with NUL bytes as binary.
    The UTF-8 byte-order mark is fine (readers drop it)."""
    head = data[:_SAMPLE_BYTES]
    for bom, name in _BOMS:
        if head.startswith(bom):
            return f"the file is {name} (it starts with a {name} byte-order mark); save it as UTF-8"
    for signature, what, advice in _SIGNATURES:
        if head.startswith(signature):
            return f"the file is {what}, not text: {advice}"
    if b"\x00" not in head:
        return None
    quarters = [head[i::4] for i in range(4)]
    zeros = [part.count(0) / max(len(part), 1) for part in quarters]
    mostly, rarely = [z > 0.5 for z in zeros], [z < 0.1 for z in zeros]
    if all(rarely[i] == (i % 2 == 0) and mostly[i] == (i % 2 == 1) for i in range(4)):
        return "the file is UTF-16 (little-endian, without a byte-order mark); save it as UTF-8"
    if all(rarely[i] == (i % 2 == 1) and mostly[i] == (i % 2 == 0) for i in range(4)):
        return "the file is UTF-16 (big-endian, without a byte-order mark); save it as UTF-8"
    if (rarely[0] and all(mostly[1:])) or (rarely[3] and all(mostly[:3])):
        return "the file is UTF-32 (without a byte-order mark); save it as UTF-8"
    return "the file holds NUL bytes: it is not a text file (save it as UTF-8 text)"


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")


def describe(value: Any) -> str:
    """The JSON type of ``value``, for messages ('a string', 'a list', ...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, float) and not math.isfinite(value):
        return "a number too large for a float"  # JSON's 1e999 reads as infinity
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object"


#: Field separators of a delimited text file (CSV, TSV and their kin), and the name each file goes by.
_DELIMITERS = ((",", "CSV file"), ("\t", "tab-separated (TSV) file"), (";", "CSV file (with ';')"),
               ("|", "'|'-separated file"))


def delimited_file_problem(lines: list[tuple[int, str]]) -> str | None:
    """Why ``lines`` are a delimited table (CSV, TSV) rather than JSON lines, or None: no line is a JSON object
    (none starts with ``{`` or ``[``) and the first line splits at one separator into at least two fields, as a
    header does. One problem instead of one "not valid JSON" per line."""
    if any(line.lstrip().startswith(("{", "[")) for _, line in lines):
        return None
    first = lines[0][1]
    counts = [(first.count(sep), sep, name) for sep, name in _DELIMITERS]
    count, sep, name = max(counts, key=lambda c: c[0])
    if count == 0:
        return None
    cells = [cell.strip().strip('"') for cell in first.split(sep)]
    shown = ", ".join(c[:30] + ("…" if len(c) > 30 else "") for c in cells[:6]) + (", …" if len(cells) > 6 else "")
    return f"this looks like a {name} (first line: {shown}): expected JSON lines, one object a line"


def read_json_records(file: UploadFile, problems: Problems, limits: UploadLimits) -> list[tuple[int, dict]]:
    """Each line of a JSONL file parsed as one JSON object; bad lines are reported and skipped. A delimited table
    (:func:`delimited_file_problem`) is one problem of the whole file."""
    records = []
    lines = read_lines(file, problems, limits) or []
    table = delimited_file_problem(lines) if lines else None
    if table:
        problems.error(file.name, None, table)
        return []
    for number, line in lines:
        try:
            value = json.loads(line, parse_constant=_reject_constant)
        except json.JSONDecodeError as error:
            problems.error(file.name, number, f"not valid JSON: {error.msg} (column {error.colno}); expected one "
                                              "JSON object per line")
            continue
        except (ValueError, RecursionError) as error:
            problems.error(file.name, number, f"not valid JSON: {error}")
            continue
        if not isinstance(value, dict):
            problems.error(file.name, number, f"expected a JSON object {{...}}, found {describe(value)}")
            continue
        records.append((number, value))
    return records


class FieldReader:
    """Typed access to one JSON object's fields; every bad field is reported with file, line and field name."""

    def __init__(self, record: Mapping[str, Any], file: str, line: int, problems: Problems, limits: UploadLimits,
                 where: str = ""):
        self.record, self.file, self.line, self.problems, self.limits = record, file, line, problems, limits
        self.where = where  # e.g. "passages[3]." for a nested object
        self.ok = True

    def fail(self, key: str, message: str) -> None:
        self.ok = False
        self.problems.error(self.file, self.line, f"field '{self.where}{key}': {message}")

    def value(self, key: str, required: bool) -> Any:
        """The raw value of ``key``; None (reported when ``required``) when it is missing or null."""
        if key in self.record and self.record[key] is not None:
            return self.record[key]
        if required:
            self.fail(key, "missing (required)" if key not in self.record else "null (required)")
        return None

    def identifier(self, key: str) -> str | None:
        value = self.value(key, required=True)
        if value is None:
            return None
        if not isinstance(value, str):
            numeric = isinstance(value, int) and not isinstance(value, bool)
            hint = f' (write it as a string: "{value}")' if numeric else ""
            self.fail(key, f"expected a string id, found {describe(value)}{hint}")
            return None
        if not _ID_PATTERN.match(value):
            self.fail(key, f"expected a non-empty id without spaces, found {value!r}")
            return None
        if len(value) > self.limits.max_id_chars:
            self.fail(key, f"the id has {len(value):,} characters; the limit is {self.limits.max_id_chars:,}")
            return None
        return value

    def text(self, key: str, required: bool = True, non_empty: bool = True) -> str | None:
        value = self.value(key, required)
        if value is None:
            return None if required else ""
        if not isinstance(value, str):
            self.fail(key, f"expected a string, found {describe(value)}")
            return None
        if non_empty and required and not value.strip():
            self.fail(key, "expected a non-empty string")
            return None
        return self._within_limit(key, value)

    def _within_limit(self, key: str, value: str) -> str | None:
        if len(value) > self.limits.max_text_chars:
            self.fail(key, f"the text has {len(value):,} characters; the limit is "
                           f"{self.limits.max_text_chars:,} per text field")
            return None
        return value

    def string_list(self, key: str, item: str = "string") -> list[str] | None:
        value = self.value(key, required=False)
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
            found = describe(value) if not isinstance(value, list) else "a list with " + next(
                describe(x) for x in value if not isinstance(x, str))
            self.fail(key, f"expected a list of {item}s, found {found}")
            return None
        for x in value:
            if self._within_limit(key, x) is None:
                return None
        return value

    def number(self, key: str, required: bool) -> float | None:
        value = self.value(key, required)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            self.fail(key, f"expected a finite number, found {describe(value)}")
            return None
        return float(value)

    def warn_unknown(self, known: Iterable[str], seen: set[str]) -> None:
        """A warning, once per file, for each field name this format does not know (a typo such as 'anwsers')."""
        prefix = re.sub(r"\[\d+\]", "[]", self.where)  # passages[3]. -> passages[].: one warning per file
        for key in self.record:
            if key not in known and (prefix + key) not in seen:
                seen.add(prefix + key)
                self.problems.warning(self.file, self.line, f"unknown field '{self.where}{key}' is ignored "
                                                            f"(known fields: {', '.join(known)})")
