"""Reading an uploaded text file line by line (strict UTF-8, within the limits) and a JSON record field by field:
every bad line or field is reported as a problem naming the file, the line and the field, never raised."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from rageval.upload.problems import Problems, UploadFile, UploadLimits

#: Ids: what stays one field in a TREC file and one safe token in a URL.
_ID_PATTERN = re.compile(r"^\S+$")


def read_lines(file: UploadFile, problems: Problems, limits: UploadLimits) -> list[tuple[int, str]] | None:
    """The non-blank lines of ``file`` with their 1-based numbers, or None (reported) when the file is too large,
    empty or not UTF-8. Lines end at ``\\n`` only (a JSON string may hold U+2028); a trailing ``\\r`` is dropped."""
    size = len(file.data)
    if size > limits.max_file_bytes:
        problems.error(file.name, None, f"the file is larger than the limit of {limits.max_file_bytes:,} bytes "
                                        "per file")
        return None
    try:
        text = file.data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = file.data.count(b"\n", 0, error.start) + 1
        problems.error(file.name, line, f"expected UTF-8 text, found the byte {file.data[error.start]:#04x} "
                                        f"(save the file as UTF-8)")
        return None
    text = text.removeprefix("\ufeff")  # a byte-order mark some editors write
    lines = [(number, line.removesuffix("\r")) for number, line in enumerate(text.split("\n"), start=1)
             if line.strip()]
    if not lines:
        problems.error(file.name, None, "the file is empty: expected one record per line")
        return None
    return lines


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


def read_json_records(file: UploadFile, problems: Problems, limits: UploadLimits) -> list[tuple[int, dict]]:
    """Each line of a JSONL file parsed as one JSON object; bad lines are reported and skipped."""
    records = []
    for number, line in read_lines(file, problems, limits) or ():
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
