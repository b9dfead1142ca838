"""Attributed answers out of imported traces: a trace whose answer cites its documents sentence by sentence (TREC
RAG's ``answer`` with ``citations``) becomes one line of ``rageval evaluate-citations``' input
(docs/citations_format.md), which scores the citations (AutoAIS, ALCE) with an NLI checker into the attribution
run file the Citations page shows.

Each cited sentence becomes a statement followed by its ``[n]`` markers, ``n`` the 1-based position in the
answer's passage list: the trace's main list (the run's main ranking), then any cited document the list lacks.
Passages without a text (in neither the trace nor the corpus) are left out of the list, so a citation of one is
dropped and counted, as is a citation of a document the run does not have.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rageval.store import Run
from rageval.store.files import temporary_prefix
from rageval.traces.records import TraceRecord


def attributed_answers(records: Sequence[TraceRecord], run: Run) -> tuple[list[dict[str, Any]], Counter[str]]:
    """The ``evaluate-citations`` lines of the traces with citations (see the module docstring), in trace order,
    and what was dropped: ``cited_documents_unknown``, ``cited_documents_without_text``,
    ``answers_without_question``."""
    passages = {p.passage_id: p for p in run.passages}
    rankings = {r.query_id: r.passage_ids for r in run.rankings}
    queries = {q.query_id: q for q in run.queries}
    rows: list[dict[str, Any]] = []
    dropped: Counter[str] = Counter()
    for record in records:
        if not record.citations or record.trace_id not in queries:
            continue
        if not record.question.strip():
            dropped["answers_without_question"] += 1
            continue
        listed = list(rankings.get(record.trace_id, ()))
        for _, cited in record.citations:
            listed += [d for d in cited if d in passages and d not in listed]
        number = {p: n for n, p in enumerate((p for p in listed if passages[p].text), start=1)}
        statements = []
        for sentence, cited in record.citations:
            for document in cited:
                if document not in passages:
                    dropped["cited_documents_unknown"] += 1
                elif document not in number:
                    dropped["cited_documents_without_text"] += 1
            marks = sorted({number[d] for d in cited if d in number})
            statements.append(sentence.strip() + (f" [{', '.join(map(str, marks))}]" if marks else ""))
        rows.append({"query_id": record.trace_id, "answer_id": "trace", "question": record.question,
                     "answer": " ".join(statements),
                     "passages": [{"passage_id": p, "title": passages[p].title, "text": passages[p].text}
                                  for p in number],
                     "gold_answers": list(queries[record.trace_id].answers)})
    return rows, dropped


def write_jsonl_atomically(rows: Sequence[dict[str, Any]], path: Path) -> Path:
    """``rows`` as JSONL at ``path``, written to a temporary sibling and renamed into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=temporary_prefix(path), suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
        os.replace(temporary, path)
    finally:
        Path(temporary).unlink(missing_ok=True)
    return path
