"""One entry point for every trace format: :func:`read_traces` dispatches to the format's reader module.

The readers (one module per format under :mod:`rageval.traces`) are filled in by the trace-import work; the
importer (:mod:`rageval.traces.importer`) and ``rageval import`` call only this.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rageval.traces.records import TraceRecord

FORMATS = ("openinference", "langfuse", "langsmith", "ragas", "trec-rag")


def read_traces(format_name: str, paths: Sequence[Path], *, answers_field: str | None = None) -> list[TraceRecord]:
    """Every trace of ``paths`` in format ``format_name`` (:data:`FORMATS`), in file order. A malformed trace raises
    :class:`rageval.errors.DataError` naming the file, the line or span and the field; a trace that lacks a piece
    is returned with it listed in :attr:`TraceRecord.missing`. ``answers_field`` overrides where the answer is read
    from, for formats where teams put it in different places."""
    raise NotImplementedError(f"reading {format_name!r} traces is not written yet")
