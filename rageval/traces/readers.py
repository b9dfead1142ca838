"""One entry point for every trace format: :func:`read_traces` dispatches to the format's reader module.

The readers (one module per format under :mod:`rageval.traces`) are filled in by the trace-import work; the
importer (:mod:`rageval.traces.importer`) and ``rageval import`` call only this.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from pathlib import Path

from rageval.errors import DataError
from rageval.traces.records import TraceRecord

FORMATS = ("openinference", "langfuse", "langsmith", "ragas", "trec-rag")
#: The reader module of each format; each has ``read(paths, *, answers_field)``. Imported only when used.
_MODULES = {"openinference": "rageval.traces.openinference", "langfuse": "rageval.traces.langfuse",
            "langsmith": "rageval.traces.langsmith", "ragas": "rageval.traces.ragas",
            "trec-rag": "rageval.traces.trec_rag"}


def read_traces(format_name: str, paths: Sequence[Path], *, answers_field: str | None = None) -> list[TraceRecord]:
    """Every trace of ``paths`` in format ``format_name`` (:data:`FORMATS`), in file order. A malformed trace raises
    :class:`rageval.errors.DataError` naming the file, the line or span and the field; a trace that lacks a piece
    is returned with it listed in :attr:`TraceRecord.missing`. ``answers_field`` overrides where the answer is read
    from, for formats where teams put it in different places; when no trace has an answer there (a typo) it is a
    :class:`DataError` naming the fields the traces have."""
    if format_name not in _MODULES:
        raise ValueError(f"unknown trace format {format_name!r}: expected one of {', '.join(FORMATS)}")
    paths = [Path(path) for path in paths]
    for path in paths:
        if not path.is_file():
            raise DataError(path, "no such file")
    reader = importlib.import_module(_MODULES[format_name])
    records = reader.read(paths, answers_field=answers_field)
    if answers_field and records and all(record.answer is None for record in records):
        raise _no_answers_field(reader, paths, answers_field)
    return records


#: How many of the fields a file has an ``--answers-field`` error names, those whose last part is one of
#: ``ANSWER_LIKE`` first.
SHOWN_FIELDS = 12
ANSWER_LIKE = ("answer", "output", "response", "result", "text", "content", "value", "completion")


def _no_answers_field(reader, paths: Sequence[Path], answers_field: str) -> DataError:
    """``--answers-field`` found nothing in any trace (a typo, or the wrong place): the error names the field and
    the fields the traces do have (the reader's ``field_names``, where answers are looked up)."""
    names: list[str] = reader.field_names(paths) if hasattr(reader, "field_names") else []
    near = [name for name in names if name.rsplit(".", 1)[-1].lower() in ANSWER_LIKE]
    shown = list(dict.fromkeys(near + names))[:SHOWN_FIELDS]
    more = f" and {len(names) - len(shown)} more" if len(names) > len(shown) else ""
    where = f"; fields there: {', '.join(shown)}{more}" if shown else ""
    return DataError(paths[0], f"no trace has an answer in {answers_field!r} (--answers-field){where}",
                     field=answers_field)
