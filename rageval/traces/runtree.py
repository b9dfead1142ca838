"""One trace as a tree of runs (LangSmith) or observations (Langfuse), read into a
:class:`~rageval.traces.records.TraceRecord` by the same rules:

- one id, one content: a run or observation given twice with the same record (a file read twice, overlapping
  exports) counts once; given twice with different records, or (``one_root``: LangSmith, where a trace is one root
  run and its id that run's) two root runs under one trace id, is refused in one line naming both places
  (:func:`unique_nodes`): two traces are never merged into one;
- the first retriever (by start time) that no other retriever contains gives ``retrieved``; when it contains a
  retriever itself (LangChain's ``ContextualCompressionRetriever`` around a base retriever, i.e. a reranker or a
  filter), the inner one gives ``retrieved`` and the outer one ``reranked``;
- the question: the root's input (its text, or the text under ``question`` / ``query`` / ``input`` ...), else the
  retriever's input;
- the answer: the last LLM node's output (a generation's text or a message's content), else the root's output;
  ``answers_field`` names a dotted path into the root node's record instead (``outputs.answer``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rageval.errors import DataError
from rageval.traces import parsing
from rageval.traces.records import RERANKED, RETRIEVED, TraceDocument, TraceRecord


@dataclass(frozen=True)
class Node:
    """One run or observation: its kind is ``"retriever"``, ``"llm"`` or anything else (lower case)."""

    node_id: str
    parent_id: str | None
    kind: str
    start: str
    inputs: Any
    outputs: Any
    record: Mapping = field(repr=False)
    path: Path = Path()
    line: int | None = None
    output_field: str = "outputs"  # the name of the output in the file, for errors

    def error(self, message: str, field: str) -> DataError:
        return DataError(self.path, message, line=self.line, record=self.node_id, field=field)

    @property
    def place(self) -> str:
        """Where the node is written: its file, and line where the file has lines."""
        return f"{self.path}, line {self.line}" if self.line is not None else str(self.path)


def unique_nodes(trace_id: str, nodes: Sequence[Node], *, what: str = "run", one_root: bool = False) -> list[Node]:
    """``nodes`` with each id once: a node repeated with the same record is kept once; the same id with another
    record, or (``one_root``) a second root, raises :class:`DataError` naming both places. Two traces under one id
    are never merged (a question from one, documents or an answer from the other)."""
    kept: dict[str, Node] = {}
    for node in nodes:
        earlier = kept.get(node.node_id)
        if earlier is None:
            kept[node.node_id] = node
        elif earlier.record != node.record:
            raise DataError(node.path, f"{what} {node.node_id} of trace {trace_id} is also at {earlier.place} with "
                            "other content; two traces under one id are not merged (import them separately, or "
                            "give one of them new ids)", line=node.line, record=node.node_id)
    unique = list(kept.values())
    if one_root:
        roots = [node for node in unique if node.parent_id is None]
        if len(roots) > 1:
            first, second = roots[0], roots[1]
            raise DataError(second.path, f"trace {trace_id} has a second root {what} {second.node_id} (the first, "
                            f"{first.node_id}, is at {first.place}): two traces under one id are not merged "
                            "(import them separately, or give one of them a new trace_id)", line=second.line,
                            record=second.node_id, field="trace_id")
    return unique


def record_from_nodes(trace_id: str, nodes: Sequence[Node], answers_field: str | None, *,
                      root_record: Mapping | None = None, what: str = "run", one_root: bool = False) -> TraceRecord:
    """The trace of ``nodes`` (one trace's runs or observations, any order; see :func:`unique_nodes` for ``what``
    and ``one_root``). ``root_record`` is the trace's own record where the format has one (a Langfuse trace with
    its observations): its input and output come first."""
    nodes = sorted(unique_nodes(trace_id, nodes, what=what, one_root=one_root), key=lambda node: node.start)
    by_id = {node.node_id: node for node in nodes}
    roots = [node for node in nodes if node.parent_id is None or node.parent_id not in by_id]
    root = roots[0] if roots else nodes[0]

    def ancestors(node: Node) -> list[Node]:
        chain, seen = [], {node.node_id}
        while node.parent_id in by_id and node.parent_id not in seen:
            node = by_id[node.parent_id]
            seen.add(node.node_id)
            chain.append(node)
        return chain

    retrievers = [node for node in nodes if node.kind == "retriever"]
    outer = next((node for node in retrievers
                  if not any(a.kind == "retriever" for a in ancestors(node))), None)
    inner = next((node for node in retrievers if outer is not None and outer in ancestors(node)), None)
    stages: dict[str, list[TraceDocument]] = {}
    span_ids: dict[str, str] = {}
    for stage, node in ((RETRIEVED, inner or outer), (RERANKED, outer if inner is not None else None)):
        if node is None:
            continue
        try:
            stages[stage] = parsing.documents_from_objects(node.outputs, stage, node.output_field)
        except ValueError as error:
            raise node.error(str(error), node.output_field) from None
        span_ids[stage] = node.node_id

    question = None
    if root_record is not None:
        question = parsing.text_of(root_record.get("input"), parsing.QUESTION_KEYS)
    question = question or parsing.text_of(root.inputs, parsing.QUESTION_KEYS)
    first = inner or outer
    if question is None and first is not None:
        question = parsing.text_of(first.inputs, parsing.QUESTION_KEYS)

    answer = _answer(root, nodes, answers_field, root_record)
    return TraceRecord(
        trace_id=trace_id, question=question or "", stages=stages, answer=answer, span_ids=span_ids,
        source=f"{root.path}, trace {trace_id}",
        missing=parsing.record_missing(question or "", stages, answer))


def _answer(root: Node, nodes: Sequence[Node], answers_field: str | None,
            root_record: Mapping | None) -> str | None:
    if answers_field:
        for record in (root_record, root.record):
            if record is not None and (value := parsing.dig(record, answers_field)) is not None:
                return parsing.text_of(value, parsing.ANSWER_KEYS)
        return None
    for node in reversed([node for node in nodes if node.kind in ("llm", "generation")]):
        if (text := llm_text(node.outputs)) is not None:
            return text
    for value in ((root_record or {}).get("output"), root.outputs):
        if root.kind != "retriever" and (text := parsing.text_of(value, parsing.ANSWER_KEYS)) is not None:
            return text
    return None


def llm_text(value: Any) -> str | None:
    """The text an LLM produced, from the shapes its output is logged in: text; LangChain's ``LLMResult``
    (``generations[-1][-1]``: ``text``, or a chat ``message``'s content); a chat message (``content``); OpenAI's
    ``choices[-1]`` (``message.content`` or ``text``); a list of those (the last)."""
    if isinstance(value, str):
        return parsing.as_text(value)
    if isinstance(value, list):
        return llm_text(value[-1]) if value else None
    if not isinstance(value, Mapping):
        return None
    if "generations" in value:
        return llm_text(value["generations"])
    if "choices" in value:
        return llm_text(value["choices"])
    message = value.get("message")
    if isinstance(message, Mapping):
        content = message.get("content", (message.get("kwargs") or {}).get("content"))
        if (text := llm_text(content)) is not None:
            return text
    if isinstance(value.get("kwargs"), Mapping) and "content" in value["kwargs"]:  # a serialised LangChain message
        return llm_text(value["kwargs"]["content"])
    for key in ("text", "content", "completion", "output", "answer"):
        if isinstance(value.get(key), (str, list, Mapping)) and (text := llm_text(value[key])) is not None:
            return text
    return None
