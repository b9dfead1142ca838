"""OpenTelemetry spans with OpenInference attributes, read into :class:`~rageval.traces.records.TraceRecord`.

Three files are read (by content, not by name):

- **OTLP JSON**: the OTLP/HTTP JSON encoding (``resourceSpans[].scopeSpans[].spans[]``, attributes as
  ``{key, value: {stringValue | intValue | doubleValue | boolValue | arrayValue | kvlistValue}}``), one request per
  file or one per line (the OpenTelemetry Collector's file exporter). Ids in hex (the OTLP spec) or base64
  (protobuf's ``json_format``, what the Python SDK's encoder gives) are both read.
- **Phoenix's span export as JSON Lines**: one span per line, either a row of Phoenix's spans dataframe
  (``context.span_id``, ``context.trace_id``, ``parent_id``, ``span_kind``, ``attributes.<convention>``, lists of
  documents as lists of ``{"document.id": ...}``) or Phoenix's span JSON (``context: {span_id, trace_id}``,
  ``attributes`` nested).
- **Phoenix's spans dataframe as Parquet** (``df.to_parquet``): the same rows.

Spans are grouped by trace id, in the order each trace first appears; every span id becomes 16 lower-case hex
digits, the form Phoenix shows. A span given twice with the same content (a file read twice, overlapping exports)
counts once; one span id with two different contents (another answer, another document order) is refused naming
both places: two traces are never merged into one. Per trace:

- the question: the root span's ``input.value`` (the text inside a JSON input when the root's input is JSON), else
  the retriever span's ``input.value``, else the reranker's ``reranker.query``;
- ``retrieved``: the first retriever span's ``retrieval.documents.N.document.{id, content, score, metadata}``, in N
  order (an id or score the document lacks is looked up in its metadata, as on the LangSmith path: LangChain's
  instrumentation writes only content and metadata); ``reranked``: the first reranker span's
  ``reranker.output_documents.N...``. A retriever span inside a retriever span (LangChain's
  ``ContextualCompressionRetriever`` traced by openinference-instrumentation-langchain: the compressor's reranked
  documents around the base retriever's) follows the rule LangSmith and Langfuse follow
  (:mod:`rageval.traces.runtree`): the inner one gives ``retrieved``, the outer one ``reranked`` (a RERANKER span,
  where there is one, gives ``reranked``). A span with documents but no ``openinference.span.kind`` (the kind was
  dropped by the attribute limit below) is read by its documents' prefix;
- a document's position is its place in that list (0, 1, 2 ... even where N skips a number), which is Phoenix's
  ``document_position``; except in a span that lost attributes to the OpenTelemetry SDK's limit (128 a span by
  default: ``droppedAttributesCount``; the SDK drops the oldest, so the first documents): there each keeps its N,
  the list is marked cut (:attr:`TraceRecord.cut`, ``missing`` ``<stage>.cut_by_attribute_limit``) and never
  renumbered as if it were whole;
- the answer: the last LLM span's last ``llm.output_messages.N.message.content``, else its ``output.value``, else
  the root's ``output.value``; ``answers_field`` names another attribute (looked up on the root, then every span);
- ``span_ids``: the retriever's span id for ``retrieved``, the reranker's for ``reranked``.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rageval.errors import DataError
from rageval.traces import parsing
from rageval.traces.records import RERANKED, RETRIEVED, TraceDocument, TraceRecord

KIND = "openinference.span.kind"
RETRIEVAL_DOCUMENTS = "retrieval.documents"
RERANKER_OUTPUT = "reranker.output_documents"
RERANKER_QUERY = "reranker.query"
INPUT_VALUE, INPUT_MIME = "input.value", "input.mime_type"
OUTPUT_VALUE, OUTPUT_MIME = "output.value", "output.mime_type"
OUTPUT_MESSAGES = "llm.output_messages"
DOCUMENT_FIELDS = ("document.id", "document.content", "document.score", "document.metadata")
#: Attributes whose value is a JSON text (Phoenix loads them into objects): kept whole, never flattened.
JSON_VALUED = ("document.metadata", "metadata", "llm.prompt_template.variables", "tool.parameters")
_HEX = re.compile(r"[0-9a-fA-F]+")
#: The ``missing`` entry of a stage whose span lost attributes to the tracer's limit (``<stage>.cut_by_...``).
CUT = "cut_by_attribute_limit"
_DOCUMENT_KEY = re.compile(r"(\d+)\.(document\.(?:id|content|score|metadata))$")
_MESSAGE_KEY = re.compile(r"(\d+)\.message\.(content|role)$")


@dataclass(frozen=True)
class Span:
    """One span, whatever file it came from: ids in hex, attributes flattened to dotted keys."""

    span_id: str
    trace_id: str
    parent_id: str | None
    name: str
    kind: str
    start: str  # sortable: nanoseconds (OTLP) or an ISO time (Phoenix), zero-padded
    attributes: Mapping[str, Any]
    path: Path
    line: int | None  # the line of a JSON Lines file, for error messages
    dropped: int = 0  # attributes the tracer dropped (OTLP droppedAttributesCount)

    def error(self, message: str, field: str) -> DataError:
        return DataError(self.path, message, line=self.line, record=f"span {self.span_id}", field=field)

    @property
    def place(self) -> str:
        return f"{self.path}, line {self.line}" if self.line is not None else str(self.path)

    def content(self) -> tuple:
        """What two copies of one span must agree on (not the start time: an OTLP file writes it in nanoseconds,
        Phoenix's export as an ISO time)."""
        return (self.parent_id, self.name, self.kind, _comparable(self.attributes), self.dropped)


def read(paths: Sequence[Path], *, answers_field: str | None = None) -> list[TraceRecord]:
    """Every trace of the span files ``paths``, in order of first appearance."""
    traces: dict[str, dict[str, Span]] = {}
    for path in paths:
        for span in read_spans(Path(path)):
            spans = traces.setdefault(span.trace_id, {})
            earlier = spans.get(span.span_id)
            if earlier is None:
                spans[span.span_id] = span
            elif earlier.content() != span.content():
                raise DataError(span.path, f"span {span.span_id} of trace {span.trace_id} is also at {earlier.place} "
                                f"with other content ({_difference(earlier, span)}); two traces under one id are "
                                "not merged (import them separately, or give one of them new ids)", line=span.line,
                                record=f"span {span.span_id}")
    return [_record(trace_id, list(spans.values()), answers_field) for trace_id, spans in traces.items()]


def _comparable(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """Attributes as two files of one span compare them: a JSON-valued attribute (metadata) decoded, as Phoenix's
    export holds it and an OTLP file does not; an empty value (Parquet's null or NaN for a column the span lacks)
    as absent."""
    compared = {key: value for key, value in attributes.items()
                if value is not None and not (isinstance(value, float) and value != value)}
    for key, value in list(compared.items()):
        if key.endswith(JSON_VALUED) and isinstance(value, str):
            with contextlib.suppress(json.JSONDecodeError):
                compared[key] = json.loads(value)
    return compared


def _difference(one: Span, other: Span) -> str:
    """The first attributes (or fields) two copies of a span disagree on, for the message."""
    mine, theirs = _comparable(one.attributes), _comparable(other.attributes)
    keys = sorted(key for key in set(mine) | set(theirs) if mine.get(key) != theirs.get(key))
    fields = [name for name in ("parent_id", "name", "kind", "dropped")
              if getattr(one, name) != getattr(other, name)]
    differing = fields + keys
    return ", ".join(differing[:3]) + (f" and {len(differing) - 3} more" if len(differing) > 3 else "")


def read_spans(path: Path) -> list[Span]:
    """Every span of one OTLP JSON, Phoenix JSON Lines or Phoenix Parquet file."""
    if path.suffix.lower() == ".parquet":
        return _phoenix_parquet(path)
    spans: list[Span] = []
    for line, value in parsing.read_json_records(path):
        if isinstance(value, Mapping) and "resourceSpans" in value:
            spans.extend(_otlp_request(path, line, value))
        elif isinstance(value, Mapping) and ("context.span_id" in value or "context" in value):
            spans.append(_phoenix_row(path, line, value))
        else:
            raise DataError(path, "expected an OTLP request (resourceSpans) or a Phoenix span (context.span_id)",
                            line=line, field="resourceSpans")
    return spans


# ---- OTLP JSON


def _otlp_request(path: Path, line: int | None, request: Mapping) -> list[Span]:
    spans = []
    for r, resource_spans in enumerate(_list(path, line, request, "resourceSpans")):
        for s, scope_spans in enumerate(_list(path, line, resource_spans, "scopeSpans", f"resourceSpans[{r}]")):
            for n, raw in enumerate(_list(path, line, scope_spans, "spans", f"resourceSpans[{r}].scopeSpans[{s}]")):
                at = f"resourceSpans[{r}].scopeSpans[{s}].spans[{n}]"
                if not isinstance(raw, Mapping):
                    raise DataError(path, "expected a span object", line=line, field=at)
                spans.append(_otlp_span(path, line, raw, at))
    return spans


def _list(path: Path, line: int | None, value: Any, key: str, at: str = "") -> list:
    items = value.get(key, []) if isinstance(value, Mapping) else None
    if not isinstance(items, list):
        raise DataError(path, "expected a list", line=line, field=f"{at}.{key}" if at else key)
    return items


def _otlp_span(path: Path, line: int | None, raw: Mapping, at: str) -> Span:
    span_id = _otlp_id(path, line, raw.get("spanId"), 8, f"{at}.spanId")
    trace_id = _otlp_id(path, line, raw.get("traceId"), 16, f"{at}.traceId")
    parent = raw.get("parentSpanId") or None
    parent_id = _otlp_id(path, line, parent, 8, f"{at}.parentSpanId") if parent else None
    attributes: dict[str, Any] = {}
    for a, item in enumerate(raw.get("attributes") or []):
        if not isinstance(item, Mapping) or not isinstance(item.get("key"), str):
            raise DataError(path, "expected {key, value}", line=line, record=f"span {span_id}",
                            field=f"attributes[{a}]")
        try:
            attributes[item["key"]] = _any_value(item.get("value"))
        except ValueError as error:
            raise DataError(path, str(error), line=line, record=f"span {span_id}", field=item["key"]) from None
    start = str(raw.get("startTimeUnixNano", "")).zfill(20)
    dropped = raw.get("droppedAttributesCount") or 0
    if isinstance(dropped, str) and dropped.isdigit():
        dropped = int(dropped)
    if isinstance(dropped, bool) or not isinstance(dropped, int) or dropped < 0:
        raise DataError(path, f"expected a count, found {dropped!r}", line=line, record=f"span {span_id}",
                        field=f"{at}.droppedAttributesCount")
    return Span(span_id, trace_id, parent_id, str(raw.get("name", "")), _kind(attributes), start, attributes, path,
                line, dropped)


def _kind(attributes: Mapping[str, Any]) -> str:
    """The span's OpenInference kind; where the attribute is gone (dropped by a limit) but documents remain, the
    kind their prefix names."""
    kind = str(attributes.get(KIND) or "").upper()
    if kind:
        return kind
    if any(key.startswith(RERANKER_OUTPUT + ".") for key in attributes):
        return "RERANKER"
    if any(key.startswith(RETRIEVAL_DOCUMENTS + ".") for key in attributes):
        return "RETRIEVER"
    return ""


def _otlp_id(path: Path, line: int | None, value: Any, size: int, field: str) -> str:
    """An OTLP id as lower-case hex: hex as the OTLP spec writes it, or base64 as protobuf's JSON mapping does."""
    if isinstance(value, str) and len(value) == 2 * size and _HEX.fullmatch(value):
        return value.lower()
    if isinstance(value, str) and value:
        try:
            raw = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raw = b""
        if len(raw) == size:
            return raw.hex()
    raise DataError(path, f"expected a {size}-byte id in hex ({2 * size} digits) or base64, found {value!r}",
                    line=line, field=field)


def _any_value(value: Any) -> Any:
    """An OTLP AnyValue as a Python value (an int64 arrives as text in JSON)."""
    if not isinstance(value, Mapping) or not value:
        return None
    if "stringValue" in value:
        return value["stringValue"]
    if "intValue" in value:
        try:
            return int(value["intValue"])
        except (TypeError, ValueError):
            raise ValueError(f"expected an integer intValue, found {value['intValue']!r}") from None
    if "doubleValue" in value:
        double = value["doubleValue"]
        if isinstance(double, str) and double in ("NaN", "Infinity", "-Infinity"):
            return float(double.replace("Infinity", "inf"))
        if isinstance(double, bool) or not isinstance(double, (int, float)):
            raise ValueError(f"expected a number doubleValue, found {double!r}")
        return float(double)
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "arrayValue" in value:
        return [_any_value(item) for item in (value["arrayValue"] or {}).get("values", [])]
    if "kvlistValue" in value:
        return {item.get("key"): _any_value(item.get("value"))
                for item in (value["kvlistValue"] or {}).get("values", [])}
    if "bytesValue" in value:
        return value["bytesValue"]
    raise ValueError(f"expected one of stringValue, intValue, doubleValue, boolValue, arrayValue, kvlistValue, "
                     f"found {sorted(value)}")


# ---- Phoenix


def _phoenix_parquet(path: Path) -> list[Span]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as error:
        raise DataError(path, f"expected a Parquet file of Phoenix spans: {error}") from None
    return [_phoenix_row(path, None, row) for row in table.to_pylist()]


def _phoenix_row(path: Path, line: int | None, row: Mapping) -> Span:
    found_context = row.get("context")
    context: Mapping = found_context if isinstance(found_context, Mapping) else {}
    span_id = row.get("context.span_id", context.get("span_id"))
    trace_id = row.get("context.trace_id", context.get("trace_id"))
    for value, name in ((span_id, "context.span_id"), (trace_id, "context.trace_id")):
        if not isinstance(value, str) or not value:
            raise DataError(path, "expected the span's id as text", line=line, field=name)
    attributes: dict[str, Any] = {}
    if isinstance(row.get("attributes"), Mapping):  # Phoenix's span JSON: attributes nested
        _flatten(row["attributes"], "", attributes)
    for key, value in row.items():  # Phoenix's dataframe: one column per convention, "attributes." first
        if key.startswith("attributes.") and value is not None:
            _flatten(value, key[len("attributes."):], attributes)
    kind = str(row.get("span_kind") or "").upper() or _kind(attributes)
    parent = row.get("parent_id")
    start = row.get("start_time")
    return Span(str(span_id).lower(), str(trace_id).lower(), str(parent).lower() if parent else None,
                str(row.get("name", "")), kind, str(start) if start is not None else "", attributes, path, line)


def _flatten(value: Any, prefix: str, into: dict[str, Any]) -> None:
    """Phoenix's nested attributes back to OpenInference's dotted keys (lists of objects get index keys)."""
    if hasattr(value, "tolist"):  # a numpy array from Parquet
        value = value.tolist()
    if prefix.endswith(JSON_VALUED) or not isinstance(value, (Mapping, list)):
        into[prefix] = value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            _flatten(item, f"{prefix}.{key}" if prefix else str(key), into)
    elif any(isinstance(item, Mapping) for item in value):
        for index, item in enumerate(value):
            if item is not None:
                _flatten(item, f"{prefix}.{index}", into)
    else:
        into[prefix] = value


# ---- one trace


def _record(trace_id: str, spans: list[Span], answers_field: str | None) -> TraceRecord:
    spans = sorted(spans, key=lambda span: span.start)  # stable: file order among equal times
    ids = {span.span_id for span in spans}
    roots = [span for span in spans if span.parent_id is None or span.parent_id not in ids]
    root = roots[0]
    by_id = {span.span_id: span for span in spans}

    def ancestors(span: Span) -> list[Span]:
        chain, seen = [], {span.span_id}
        while span.parent_id in by_id and span.parent_id not in seen:
            span = by_id[span.parent_id]
            seen.add(span.span_id)
            chain.append(span)
        return chain

    retrievers = [span for span in spans if span.kind == "RETRIEVER"]
    outer = next((span for span in retrievers if not any(a.kind == "RETRIEVER" for a in ancestors(span))), None)
    inner = next((span for span in retrievers if outer is not None and outer in ancestors(span)), None)
    retriever = inner or outer
    reranker = next((span for span in spans if span.kind == "RERANKER"), None)
    stages: dict[str, list[TraceDocument]] = {}
    span_ids: dict[str, str] = {}
    cut: dict[str, int] = {}
    for stage, span, prefix in ((RETRIEVED, retriever, RETRIEVAL_DOCUMENTS),
                                (RERANKED, reranker, RERANKER_OUTPUT),
                                (RERANKED, outer if inner is not None and reranker is None else None,
                                 RETRIEVAL_DOCUMENTS)):
        if span is None:
            continue
        stages[stage] = _documents(span, prefix)
        span_ids[stage] = span.span_id
        if span.dropped:
            cut[stage] = span.dropped
    question = _question(root, retriever, reranker)
    answer = _answer(root, spans, answers_field)
    missing = parsing.record_missing(question or "", stages, answer)
    missing += tuple(f"{stage}.{CUT}" for stage in cut)
    return TraceRecord(
        trace_id=trace_id, question=question or "", stages=stages, answer=answer, span_ids=span_ids,
        source=f"{root.path}, trace {trace_id}", missing=missing, cut=cut)


def _documents(span: Span, prefix: str) -> list[TraceDocument]:
    fields: dict[int, dict[str, Any]] = {}
    start = prefix + "."
    for key, value in span.attributes.items():
        if key.startswith(start) and (match := _DOCUMENT_KEY.fullmatch(key[len(start):])):
            fields.setdefault(int(match.group(1)), {})[match.group(2)] = (key, value)
    documents = []
    for place, index in enumerate(sorted(fields)):
        position = index if span.dropped else place  # a cut list keeps the span's own numbers
        found = fields[index]
        try:
            document_id = parsing.as_id(found.get("document.id", (None, None))[1])
        except ValueError as error:
            raise span.error(str(error), found["document.id"][0]) from None
        content = found.get("document.content", (None, None))[1]
        if content is not None and not isinstance(content, str):
            raise span.error(f"expected text, found {type(content).__name__}", found["document.content"][0])
        try:
            score = parsing.as_score(found.get("document.score", (None, None))[1])
        except ValueError as error:
            raise span.error(str(error), found["document.score"][0]) from None
        metadata = _metadata(found.get("document.metadata", (None, None))[1])
        if not document_id or score is None:  # LangChain's instrumentation: the Document's id and scores in metadata
            document_id, score = _from_metadata(span, found, metadata, document_id, score)
        documents.append(TraceDocument(document_id, content if content else None, position, score,
                                       metadata=metadata))
    return documents


def _from_metadata(span: Span, found: Mapping, metadata: Mapping, document_id: str,
                   score: float | None) -> tuple[str, float | None]:
    """The id and score a document's metadata holds where its own attributes have none (openinference-
    instrumentation-langchain writes a ``Document`` as ``document.content`` and ``document.metadata`` only), by the
    keys the LangSmith and Langfuse paths read (:data:`rageval.traces.parsing.ID_KEYS`, ``SCORE_KEYS``:
    ``relevance_score`` first)."""
    field = found.get("document.metadata", ("document.metadata", None))[0]
    if not document_id:
        raw = next((metadata[key] for key in parsing.ID_KEYS if metadata.get(key) is not None), None)
        try:
            document_id = parsing.as_id(raw)
        except ValueError as error:
            raise span.error(f"metadata id: {error}", field) from None
    if score is None:
        raw = next((metadata[key] for key in parsing.SCORE_KEYS if metadata.get(key) is not None), None)
        try:
            score = parsing.as_score(raw)
        except ValueError as error:
            raise span.error(f"metadata score: {error}", field) from None
    return document_id, score


def _metadata(value: Any) -> dict:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return {"metadata": value}
    return dict(value) if isinstance(value, Mapping) else {}


def _question(root: Span, retriever: Span | None, reranker: Span | None) -> str | None:
    candidates = [(root, INPUT_VALUE, INPUT_MIME)]
    if retriever is not None:
        candidates.append((retriever, INPUT_VALUE, INPUT_MIME))
    if reranker is not None:
        candidates.append((reranker, RERANKER_QUERY, ""))
    for span, key, mime in candidates:
        text = _text(span.attributes.get(key), span.attributes.get(mime))
        if text is not None:
            return text
    return None


def _answer(root: Span, spans: list[Span], answers_field: str | None) -> str | None:
    if answers_field:
        for span in [root, *spans]:
            value = parsing.dig(span.attributes, answers_field)
            if value is not None:
                return _text(value, None)
        return None
    for span in reversed([span for span in spans if span.kind == "LLM"]):
        messages = {}
        for key, value in span.attributes.items():
            if key.startswith(OUTPUT_MESSAGES + ".") and (match := _MESSAGE_KEY.fullmatch(
                    key[len(OUTPUT_MESSAGES) + 1:])) and match.group(2) == "content":
                messages[int(match.group(1))] = value
        for index in sorted(messages, reverse=True):
            if (text := parsing.as_text(messages[index])) is not None:
                return text
        if (text := _text(span.attributes.get(OUTPUT_VALUE), span.attributes.get(OUTPUT_MIME))) is not None:
            return text
    if root.kind not in ("RETRIEVER", "RERANKER"):
        return _text(root.attributes.get(OUTPUT_VALUE), root.attributes.get(OUTPUT_MIME))
    return None


#: Keys under which instrumentations put the text of a JSON input or output (LangChain's chains, LlamaIndex).
_TEXT_KEYS = ("input", "question", "query", "query_str", "output", "answer", "response", "result", "text",
              "content")


def _text(value: Any, mime: Any) -> str | None:
    """The text of an ``input.value`` / ``output.value``: the text itself, or for JSON (``application/json``, or
    no MIME type and an object's text) the one string inside it, or the first of the usual keys."""
    if isinstance(value, str) and (mime == "application/json" or (not mime and value.lstrip().startswith("{"))):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return parsing.as_text(value)
    if isinstance(value, Mapping):
        strings = [item for item in value.values() if isinstance(item, str) and item.strip()]
        if len(strings) == 1 and len(value) == 1:
            return strings[0]
        for key in _TEXT_KEYS:
            if parsing.as_text(value.get(key)) is not None:
                return parsing.as_text(value.get(key))
        return None
    return parsing.as_text(value)


def field_names(paths: Sequence[Path]) -> list[str]:
    """The attributes of the spans of ``paths`` (numbered list items left out), where ``answers_field`` is looked
    up."""
    names: dict[str, None] = {}
    for path in paths:
        for span in read_spans(Path(path)):
            names.update(dict.fromkeys(key for key in span.attributes if not re.search(r"\.\d+(\.|$)", key)))
    return list(names)
