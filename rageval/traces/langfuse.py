"""A Langfuse export read into :class:`~rageval.traces.records.TraceRecord`.

Two shapes of Langfuse's public API, as JSON or JSON Lines:

- **observations** (``GET /api/public/v2/observations`` / ``/api/public/observations``: ``{"data": [...]}``, a
  JSON array, or one observation per line), each with ``id``, ``traceId``, ``parentObservationId``, ``type``
  (``SPAN``, ``GENERATION``, ``RETRIEVER``, ``CHAIN`` ...), ``startTime``, ``input``, ``output``, ``metadata``;
- **traces with their observations** (``GET /api/public/traces/{id}``: ``id``, ``input``, ``output``,
  ``observations``), one object, an array, or one per line.

``input`` / ``output`` are read in both shapes the API has: decoded JSON (v1, and the UI's export) and the raw
JSON text the v2 observations endpoint returns (Langfuse 5.x's ``api.observations.get_many``): the text of an
object or a list is decoded (a retriever's documents, a GENERATION's chat message, whose ``content`` is the
answer), plain text is kept as it is.

Observations are grouped by ``traceId`` in the order each trace first appears. Per trace (see
:mod:`rageval.traces.runtree`):

- ``retrieved``: the ``RETRIEVER`` observation's ``output`` (a list of documents: LangChain ``Document``
  ``page_content`` / ``id`` / ``metadata``, or ``{text, id, score}``, or bare strings); ``reranked``: the outer
  retriever's when one wraps another;
- the question: the trace's ``input``, else the root observation's, else the retriever's;
- the answer: the last ``GENERATION``'s ``output`` (text, a chat message's ``content``, or a completion), else the
  trace's or root observation's ``output``; ``answers_field`` is a dotted path into the trace (or the root
  observation), e.g. ``output.answer``;
- ``span_ids``: the retriever observations' ids.

An observation (or a trace) given twice with the same content counts once; one id with two different contents is
refused naming both places, never merged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rageval.errors import DataError
from rageval.traces import parsing
from rageval.traces.records import TraceRecord
from rageval.traces.runtree import Node, record_from_nodes

#: Observation types whose output is a list of documents, and those whose output is an LLM's answer.
RETRIEVER_TYPES = ("RETRIEVER",)
LLM_TYPES = ("GENERATION",)


def read(paths: Sequence[Path], *, answers_field: str | None = None) -> list[TraceRecord]:
    """Every trace of the export files ``paths``, in order of first appearance."""
    traces: dict[str, list[Node]] = {}
    trace_records: dict[str, Mapping] = {}
    where: dict[str, tuple[Path, int | None]] = {}
    for path in paths:
        path = Path(path)
        for line, value in _items(path):
            if isinstance(value, Mapping) and isinstance(value.get("observations"), list):
                trace_id = _required(path, line, value, "id", "the trace's id")
                if trace_id in trace_records:
                    if _decoded(value) == trace_records[trace_id]:
                        continue  # the same trace given twice
                    earlier, earlier_line = where[trace_id]
                    place = f"{earlier}, line {earlier_line}" if earlier_line is not None else str(earlier)
                    raise DataError(path, f"trace {trace_id} is also at {place} with other content; two traces "
                                    "under one id are not merged (import them separately, or give one a new id)",
                                    line=line, record=trace_id)
                trace_records[trace_id] = _decoded(value)
                where[trace_id] = (path, line)
                traces.setdefault(trace_id, [])
                for index, observation in enumerate(value["observations"]):
                    node = _node(path, line, observation, f"observations[{index}]", trace_id)
                    traces[trace_id].append(node)
            else:
                node = _node(path, line, value, "", None)
                traces.setdefault(str(node.record["traceId"]), []).append(node)
    records = []
    for trace_id, nodes in traces.items():
        if not nodes:
            trace = trace_records[trace_id]
            path, line = where[trace_id]
            nodes = [Node(trace_id, None, "trace", "", trace.get("input"), trace.get("output"), trace, path, line)]
        records.append(record_from_nodes(trace_id, nodes, answers_field, root_record=trace_records.get(trace_id),
                                         what="observation"))
    return records


def _items(path: Path) -> list[tuple[int | None, Any]]:
    items: list[tuple[int | None, Any]] = []
    for line, value in parsing.read_json_records(path):
        if isinstance(value, Mapping) and isinstance(value.get("data"), list):
            items.extend((line, item) for item in value["data"])
        else:
            items.append((line, value))
    return items


def _required(path: Path, line: int | None, value: Any, key: str, what: str, at: str = "") -> str:
    found = value.get(key) if isinstance(value, Mapping) else None
    if not isinstance(found, str) or not found:
        raise DataError(path, f"expected {what}", line=line, field=f"{at}.{key}" if at else key)
    return found


def _node(path: Path, line: int | None, observation: Any, at: str, trace_id: str | None) -> Node:
    if not isinstance(observation, Mapping):
        raise DataError(path, "expected an observation object", line=line, field=at or None)
    observation_id = _required(path, line, observation, "id", "the observation's id", at)
    if trace_id is None:
        _required(path, line, observation, "traceId", "the observation's traceId", at)
    kind = observation.get("type")
    if not isinstance(kind, str):
        raise DataError(path, "expected the observation's type (SPAN, GENERATION, RETRIEVER, ...)", line=line,
                        record=observation_id, field="type")
    kind = kind.upper()
    node_kind = "retriever" if kind in RETRIEVER_TYPES else "llm" if kind in LLM_TYPES else kind.lower()
    parent = observation.get("parentObservationId")
    return Node(observation_id, str(parent) if parent else None, node_kind, str(observation.get("startTime", "")),
                parsing.decoded_json_text(observation.get("input")),
                parsing.decoded_json_text(observation.get("output")), observation, path, line, "output")


def _decoded(trace: Mapping) -> dict:
    """A trace record with its ``input`` / ``output`` decoded when the API gave them as JSON text."""
    return {**trace, **{key: parsing.decoded_json_text(trace[key]) for key in ("input", "output") if key in trace}}


def field_names(paths: Sequence[Path]) -> list[str]:
    """The dotted fields of the traces (or root observations) of ``paths``, where ``answers_field`` is looked up."""
    names: dict[str, None] = {}
    for path in paths:
        for _, value in _items(Path(path)):
            if isinstance(value, Mapping) and (isinstance(value.get("observations"), list)
                                               or not value.get("parentObservationId")):
                record = {key: item for key, item in _decoded(value).items() if key != "observations"}
                names.update(dict.fromkeys(parsing.dotted_keys(record)))
    return list(names)
