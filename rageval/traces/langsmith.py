"""A LangSmith runs export read into :class:`~rageval.traces.records.TraceRecord`.

The file holds runs as LangSmith's ``Run`` schema writes them (``langsmith.schemas.Run``, what
``Client.list_runs`` returns, serialised one per line or as one JSON array): ``id``, ``trace_id``,
``parent_run_id``, ``run_type`` (``retriever`` / ``llm`` / ``chain`` ...), ``start_time``, ``inputs``, ``outputs``.
Runs are grouped by ``trace_id`` (a run without one joins its parent's trace), in the order each trace first
appears. Per trace (see :mod:`rageval.traces.runtree`):

- ``retrieved``: the retriever run's ``outputs.documents`` (LangChain ``Document``: ``page_content``, ``id`` or
  ``metadata.id``, ``metadata.score``), in order; ``reranked``: the outer retriever's when a retriever wraps
  another (a ``ContextualCompressionRetriever`` with a reranking compressor);
- the question: the root run's ``inputs`` (its one string, or ``question`` / ``query`` / ``input``), else the
  retriever's ``inputs.query``;
- the answer: the last ``llm`` run's ``outputs.generations[-1][-1]`` (its ``text`` or its message's content), else
  the root run's ``outputs`` (``output`` / ``answer`` ...); ``answers_field`` is a path into the root run
  (``outputs.answer``);
- ``span_ids``: the retriever runs' ids.

A trace has one root run: two root runs under one ``trace_id`` (two questions logged under one id), or one run
id with two different records, is refused naming both places, never merged; a run given twice as it is counts
once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from rageval.errors import DataError
from rageval.traces import parsing
from rageval.traces.records import TraceRecord
from rageval.traces.runtree import Node, record_from_nodes


def read(paths: Sequence[Path], *, answers_field: str | None = None) -> list[TraceRecord]:
    """Every trace of the runs files ``paths``, in order of first appearance."""
    nodes: list[Node] = []
    for path in paths:
        nodes.extend(_runs(Path(path)))
    parents = {node.node_id: node.parent_id for node in nodes}
    trace_of = {node.node_id: str(node.record.get("trace_id") or "") for node in nodes}
    traces: dict[str, list[Node]] = {}
    for node in nodes:
        trace_id = trace_of[node.node_id]
        walk, seen = node.node_id, set()
        while not trace_id and parents.get(walk) and walk not in seen:  # no trace_id: the root's id
            seen.add(walk)
            walk = parents[walk] or walk
            trace_id = trace_of.get(walk, "")
        traces.setdefault(trace_id or walk, []).append(node)
    return [record_from_nodes(trace_id, trace_nodes, answers_field, what="run", one_root=True)
            for trace_id, trace_nodes in traces.items()]


def _runs(path: Path) -> list[Node]:
    nodes = []
    for line, run in parsing.read_json_records(path):
        if not isinstance(run, Mapping):
            raise DataError(path, "expected a run object", line=line)
        run_id = run.get("id")
        if not isinstance(run_id, str) or not run_id:
            raise DataError(path, "expected the run's id", line=line, field="id")
        run_type = run.get("run_type")
        if not isinstance(run_type, str):
            raise DataError(path, "expected the run's type (retriever, llm, chain, ...)", line=line,
                            record=run_id, field="run_type")
        for key in ("inputs", "outputs"):
            if run.get(key) is not None and not isinstance(run[key], Mapping):
                raise DataError(path, "expected an object", line=line, record=run_id, field=key)
        parent = run.get("parent_run_id")
        nodes.append(Node(run_id, str(parent) if parent else None, run_type.lower(), str(run.get("start_time", "")),
                          run.get("inputs") or {}, run.get("outputs") or {}, run, path, line, "outputs"))
    return nodes


def field_names(paths: Sequence[Path]) -> list[str]:
    """The dotted fields of the root runs of ``paths``, where ``answers_field`` is looked up."""
    names: dict[str, None] = {}
    for path in paths:
        for node in _runs(Path(path)):
            if node.parent_id is None:
                names.update(dict.fromkeys(parsing.dotted_keys(node.record)))
    return list(names)
