"""RAGAS evaluation datasets read into :class:`~rageval.traces.records.TraceRecord`.

A file holds ``SingleTurnSample`` rows as RAGAS writes them (``EvaluationDataset.to_jsonl`` / ``to_csv``, or a
pandas frame of ``to_pandas()`` saved with ``to_csv``): JSON Lines (or one JSON array) with one object per row, or
CSV with a header, where list columns hold a list's text (Python's ``['a', 'b']`` as RAGAS and pandas write it,
or JSON). Per row (its line is the trace id: ``<file name>:<line>``):

- ``user_input`` -> the question; ``retrieved_contexts[i]`` -> the text of ``retrieved`` document i;
  ``retrieved_context_ids[i]`` -> its id (no ids: the importer hashes the text); ``response`` -> the answer
  (``answers_field`` names another column); ``reference`` -> the one gold answer.
- Not read: ``reference_contexts`` / ``reference_context_ids`` (gold passages), ``multi_responses``, ``rubrics``;
  multi-turn samples (``user_input`` a list of messages) are refused.
"""

from __future__ import annotations

import ast
import csv
import io
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rageval.errors import DataError
from rageval.traces import parsing
from rageval.traces.records import RETRIEVED, TraceDocument, TraceRecord

QUESTION, CONTEXTS, CONTEXT_IDS, RESPONSE, REFERENCE = (
    "user_input", "retrieved_contexts", "retrieved_context_ids", "response", "reference")


def read(paths: Sequence[Path], *, answers_field: str | None = None) -> list[TraceRecord]:
    """Every row of the dataset files ``paths``, in file order."""
    records = []
    for path in paths:
        path = Path(path)
        rows = _csv_rows(path) if path.suffix.lower() in (".csv", ".tsv") else _json_rows(path)
        for line, row in rows:
            records.append(_record(path, line, row, answers_field or RESPONSE))
    return records


def _json_rows(path: Path) -> list[tuple[int, Mapping]]:
    rows: list[tuple[int, Mapping]] = []
    for number, (line, row) in enumerate(parsing.read_json_records(path), start=1):
        if not isinstance(row, Mapping):
            raise DataError(path, "expected an object with user_input, retrieved_contexts, response",
                            line=line, record=None if line else f"row {number}")
        rows.append((line if line is not None else number, row))
    return rows


def _csv_rows(path: Path) -> list[tuple[int, Mapping]]:
    text = parsing.read_text(path)
    reader = csv.DictReader(io.StringIO(text, newline=""), delimiter="\t" if path.suffix.lower() == ".tsv" else ",")
    if reader.fieldnames is None or QUESTION not in reader.fieldnames:
        raise DataError(path, f"expected a header naming the RAGAS columns ({QUESTION}, {CONTEXTS}, {RESPONSE}, "
                        f"...)", line=1, field=QUESTION)
    rows: list[tuple[int, Mapping]] = []
    for row in reader:
        line = reader.line_num  # the last physical line of the row (a quoted cell may span lines)
        parsed: dict[str, Any] = {}
        for key, value in row.items():
            if key is None:
                raise DataError(path, "more cells than header columns", line=line)
            if value is None or value == "":
                continue
            parsed[key] = _list_cell(path, line, key, value) if key in (CONTEXTS, CONTEXT_IDS) else value
        rows.append((line, parsed))
    return rows


def _list_cell(path: Path, line: int, column: str, text: str) -> list:
    """A list column's text: Python's repr (what RAGAS' ``to_csv`` and pandas write) or JSON."""
    for parse in (json.loads, ast.literal_eval):
        try:
            value = parse(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if isinstance(value, (list, tuple)):
            return list(value)
    raise DataError(path, f"expected a list such as ['first text', 'second text'], found {text[:60]!r}",
                    line=line, field=column)


def _record(path: Path, line: int, row: Mapping, answer_column: str) -> TraceRecord:
    def fail(message: str, field: str) -> DataError:
        return DataError(path, message, line=line, field=field)

    question = row.get(QUESTION)
    if isinstance(question, list):
        raise fail("multi-turn samples (a list of messages) are not read; expected the question as text", QUESTION)
    if question is not None and not isinstance(question, str):
        raise fail(f"expected text, found {type(question).__name__}", QUESTION)
    contexts = row.get(CONTEXTS) or []
    if not isinstance(contexts, list) or not all(isinstance(item, str) for item in contexts):
        raise fail("expected a list of texts", CONTEXTS)
    ids = row.get(CONTEXT_IDS)
    if ids is not None and (not isinstance(ids, list) or len(ids) != len(contexts)):
        raise fail(f"expected a list of {len(contexts)} ids, one per retrieved context", CONTEXT_IDS)
    documents = []
    for position, content in enumerate(contexts):
        try:
            document_id = parsing.as_id(ids[position]) if ids is not None else ""
        except ValueError as error:
            raise fail(str(error), f"{CONTEXT_IDS}[{position}]") from None
        documents.append(TraceDocument(document_id, content if content.strip() else None, position))
    answer = parsing.dig(row, answer_column)
    if answer is not None and not isinstance(answer, str):
        raise fail(f"expected the answer as text, found {type(answer).__name__}", answer_column)
    answer = parsing.as_text(answer)
    reference = parsing.as_text(row.get(REFERENCE))
    gold = (reference,) if reference is not None else ()
    stages = {RETRIEVED: documents}
    return TraceRecord(
        trace_id=f"{path.name}:{line}", question=(question or "").strip(), stages=stages, answer=answer,
        gold_answers=gold, source=f"{path}, line {line}",
        missing=parsing.record_missing((question or "").strip(), stages, answer, gold))


def field_names(paths: Sequence[Path]) -> list[str]:
    """The columns of the dataset files ``paths`` (``answers_field`` names one)."""
    names: dict[str, None] = {}
    for path in (Path(p) for p in paths):
        rows = _csv_rows(path) if path.suffix.lower() in (".csv", ".tsv") else _json_rows(path)
        for _, row in rows:
            names.update(dict.fromkeys(row))
    return list(names)
