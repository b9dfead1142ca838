"""What every trace reader shares: reading JSON and JSON Lines with errors that name the file and line, the names
of what a trace may lack (:attr:`~rageval.traces.records.TraceRecord.missing`), and the checks of one value.

A trace that lacks a piece is kept; its record lists the piece in ``missing``:

- ``"question"``, ``"answer"``, ``"gold_answers"``: the trace has no question, answer, or reference answers;
- ``"retrieved"``: it has no retrieved documents at all;
- ``"<stage>[<position>].document_id"`` / ``"<stage>[<position>].content"``: one document has no id (the importer
  gives it a content hash) or no text (the importer looks it up in the corpus).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from rageval.errors import DataError, binary_kind, not_utf8_message
from rageval.traces.records import TraceDocument

QUESTION, ANSWER, GOLD_ANSWERS, RETRIEVED_PIECE = "question", "answer", "gold_answers", "retrieved"


def read_text(path: Path) -> str:
    """The file's text, UTF-8 (a byte-order mark is dropped); a file that is not UTF-8 names the line, and one
    that is not text at all (gzip, Parquet, binary) says what it is."""
    data = path.read_bytes()
    if (kind := binary_kind(data)) is not None:
        raise DataError(path, f"expected UTF-8 text, found {kind}")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise DataError(path, not_utf8_message(data, error.start), line=line) from None


def read_json(path: Path) -> Any:
    """The one JSON value of ``path``."""
    try:
        return json.loads(read_text(path))
    except json.JSONDecodeError as error:
        raise DataError(path, f"expected JSON: {error.msg}", line=error.lineno) from None


def json_lines(path: Path, text: str | None = None) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` of every non-blank line of a JSON Lines file (1-based, blank lines counted)."""
    text = read_text(path) if text is None else text
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as error:
            raise DataError(path, f"expected one JSON value per line: {error.msg}", line=number) from None


def read_json_records(path: Path) -> list[tuple[int | None, Any]]:
    """The records of a JSON or JSON Lines file: a JSON array gives its items, one JSON object itself, and a file
    of one value per line gives each line. The number is the line (JSON Lines) or ``None`` (one JSON value).
    A file that is neither is reported where its JSON breaks: a pretty-printed file (its first line not a whole
    value) at the line of the error, or its end when it is cut short; a JSON Lines file at its bad line."""
    text = read_text(path)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as whole:
        first = next((line for line in text.splitlines() if line.strip()), "")
        try:
            json.loads(first)
        except json.JSONDecodeError:  # not JSON Lines: one value spread over lines
            rest = text[whole.pos:].rstrip()
            if not rest or (whole.msg.startswith("Unterminated string") and "\n" not in rest):
                raise DataError(path, "expected JSON: the file ends inside a value; it looks cut short (an "
                                "interrupted download or copy?)", line=whole.lineno) from None
            raise DataError(path, f"expected JSON: {whole.msg} (column {whole.colno})",
                            line=whole.lineno) from None
        return list(json_lines(path, text))
    if isinstance(value, list):
        return [(None, item) for item in value]
    return [(None, value)]


def dig(value: Any, dotted: str) -> Any:
    """``value[a][b]...`` for the dotted path ``"a.b"`` (a number indexes a list); ``None`` where a step is
    absent. A key that itself holds dots (``"output.value"``) is tried whole before it is split."""
    if not dotted:
        return value
    if isinstance(value, Mapping) and dotted in value:
        return value[dotted]
    head, _, rest = dotted.partition(".")
    if isinstance(value, Mapping) and head in value:
        return dig(value[head], rest)
    if isinstance(value, Sequence) and not isinstance(value, str) and head.isdigit() and int(head) < len(value):
        return dig(value[int(head)], rest)
    return None


def as_text(value: Any) -> str | None:
    """A non-empty string as is, a number as its text, anything else (or blank text) ``None``."""
    if isinstance(value, str):
        return value if value.strip() else None
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return str(value)
    return None


def as_score(value: Any) -> float | None:
    """A retrieval score: a finite number (or the text of one); ``None`` when absent. Raises ``ValueError``."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool):
        raise ValueError(f"expected a number, found {value!r}")
    try:
        score = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"expected a number, found {value!r}") from None
    if not math.isfinite(score):
        raise ValueError(f"expected a finite number, found {value!r}")
    return score


def as_id(value: Any) -> str:
    """A document id as text (a number's text); ``""`` when absent."""
    if isinstance(value, bool) or value is None:
        return ""
    if isinstance(value, (str, int)):
        return str(value).strip()
    raise ValueError(f"expected a string or integer id, found {type(value).__name__}")


def document_missing(stage: str, documents: Sequence[TraceDocument]) -> list[str]:
    """The ``missing`` entries of one stage's documents (no id, no text)."""
    missing = []
    for document in documents:
        if not document.document_id:
            missing.append(f"{stage}[{document.position}].document_id")
        if document.content is None:
            missing.append(f"{stage}[{document.position}].content")
    return missing


def record_missing(question: str, stages: Mapping[str, Sequence[TraceDocument]], answer: str | None,
                   gold_answers: Sequence[str] = ()) -> tuple[str, ...]:
    """Every ``missing`` entry of a trace, in one order: question, retrieved, each stage's documents, answer, gold."""
    missing = [] if question else [QUESTION]
    if not any(stages.values()):
        missing.append(RETRIEVED_PIECE)
    for stage, documents in stages.items():
        missing.extend(document_missing(stage, documents))
    if answer is None:
        missing.append(ANSWER)
    if not gold_answers:
        missing.append(GOLD_ANSWERS)
    return tuple(missing)


#: Where a document object keeps its text, id and score: LangChain's ``Document`` (``page_content``, ``id``,
#: ``metadata``) as LangSmith and Langfuse serialise it, LlamaIndex's nodes, and plain ``{text, id, score}``.
TEXT_KEYS = ("page_content", "pageContent", "content", "text")
ID_KEYS = ("id", "doc_id", "document_id", "docid", "passage_id", "node_id")
#: ``relevance_score`` comes first: a reranker (CohereRerank, LangChain's cross-encoder and LLM compressors) writes it
#: beside the first stage's ``score`` it copied, and the reranked list is ordered by it.
SCORE_KEYS = ("relevance_score", "score", "similarity", "distance_score")


def documents_from_objects(items: Any, stage: str, field: str) -> list[TraceDocument]:
    """A retriever's output read as documents, in order: each item a document object (keys above, looked up
    first in the item and then in its ``metadata``) or a bare string (the text). Raises ``ValueError`` naming
    ``field[i].key`` for a value of the wrong type."""
    if isinstance(items, Mapping):
        for key in ("documents", "nodes", "results", "contexts", "output"):
            if isinstance(items.get(key), list):
                items, field = items[key], f"{field}.{key}"
                break
    if not isinstance(items, list):
        raise ValueError(f"{field}: expected a list of documents, found {type(items).__name__}")
    documents = []
    for position, item in enumerate(items):
        at = f"{field}[{position}]"
        if isinstance(item, str):
            documents.append(TraceDocument("", item if item.strip() else None, position))
            continue
        if not isinstance(item, Mapping):
            raise ValueError(f"{at}: expected a document object or text, found {type(item).__name__}")
        found_metadata = item.get("metadata")
        metadata: Mapping = found_metadata if isinstance(found_metadata, Mapping) else {}
        places: tuple[Mapping, Mapping] = (item, metadata)
        text = next((place[key] for key in TEXT_KEYS for place in places if place.get(key) is not None), None)
        if text is not None and not isinstance(text, str):
            raise ValueError(f"{at}: expected the document's text as a string, found {type(text).__name__}")
        raw_id = next((place[key] for key in ID_KEYS for place in places if place.get(key) is not None), None)
        raw_score = next((place[key] for key in SCORE_KEYS for place in places if place.get(key) is not None),
                         None)
        try:
            document_id = as_id(raw_id)
        except ValueError as error:
            raise ValueError(f"{at}.id: {error}") from None
        try:
            score = as_score(raw_score)
        except ValueError as error:
            raise ValueError(f"{at}.score: {error}") from None
        found_title = metadata.get("title")
        title = found_title if isinstance(found_title, str) else ""
        documents.append(TraceDocument(document_id, text if text and text.strip() else None, position, score,
                                       title, dict(metadata)))
    return documents


#: Keys under which frameworks put the text of a question or an answer inside an object.
QUESTION_KEYS = ("question", "query", "input", "user_input", "query_str", "prompt", "topic")
ANSWER_KEYS = ("answer", "output", "response", "result", "text", "content", "completion", "generation")


def text_of(value: Any, keys: Sequence[str]) -> str | None:
    """The text of an input or output: a string itself; in an object, its only string or the first of ``keys``;
    a chat message's ``content``."""
    if isinstance(value, str):
        return as_text(value)
    if isinstance(value, Mapping):
        strings = [item for item in value.values() if isinstance(item, str) and item.strip()]
        if len(value) == 1 and len(strings) == 1:
            return strings[0]
        for key in keys:
            found = value.get(key)
            if isinstance(found, (str, Mapping)) and (text := text_of(found, keys)) is not None:
                return text
    return None


def decoded_json_text(value: Any) -> Any:
    """A value an API returned as the JSON text of an object or a list (Langfuse's v2 observations return
    ``input`` / ``output`` as raw strings) as that object or list; anything else (plain text, a number's text,
    a value already decoded) as it is."""
    if isinstance(value, str) and value.lstrip()[:1] in ("{", "[", '"'):
        try:
            decoded = json.loads(value)
        except json.JSONDecodeError:
            return value
        if isinstance(decoded, (Mapping, list, str)):
            return decoded
    return value


def dotted_keys(value: Any, prefix: str = "", depth: int = 3) -> list[str]:
    """The dotted paths (:func:`dig`'s form) to the values inside ``value``, objects followed ``depth`` levels
    deep, lists not entered: what ``--answers-field`` can name in a record."""
    if not isinstance(value, Mapping) or depth == 0:
        return [prefix] if prefix else []
    keys: list[str] = []
    for key, item in value.items():
        path = f"{prefix}.{key}" if prefix else str(key)
        keys.extend(dotted_keys(item, path, depth - 1) if isinstance(item, Mapping) and item else [path])
    return keys
