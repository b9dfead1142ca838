"""What an upload's reader read: the parts of a run (:class:`UploadRead`), before anything is computed from them,
and the one rule both forms use to turn gold passage ids into labels (:func:`gold_labels`).

The readers (:mod:`~rageval.upload.jsonl`, :mod:`~rageval.upload.trec`) return an :class:`UploadRead`;
:func:`rageval.upload.build.finish_upload`, called by :mod:`~rageval.upload.convert` alone (the pipeline's sources
go through it too), builds the run from it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from rageval.labelmethods import GOLD
from rageval.store import DocOutput, E2EOutput, Label
from rageval.types import Passage, Query, Ranking
from rageval.upload.problems import Problems


@dataclass
class UploadRead:
    """The parts of an uploaded run as its reader read them, and every problem found (with errors, the parts may be
    incomplete: no run is built from them)."""

    problems: Problems
    form: str
    files: Mapping[str, str] = field(default_factory=dict)
    dataset: str = "uploaded"
    retriever: str = ""
    model: str | None = None
    queries: list[Query] = field(default_factory=list)
    passages: list[Passage] = field(default_factory=list)
    rankings: list[Ranking] = field(default_factory=list)
    labels: list[Label] = field(default_factory=list)
    doc_outputs: Sequence[DocOutput] = ()
    e2e: Sequence[E2EOutput] = ()


def gold_labels(query_id: str, gold_ids: Iterable[str], ranked_ids: Iterable[str]) -> list[Label]:
    """The label method ``gold`` of one query from its ``gold_passage_ids``, the one rule of both upload forms: 1 for
    each gold passage (retrieved or not: a global judgment, so an unretrieved one counts for recall, as a qrels
    file's would) and 0 for each other ranked passage (so the inspector shows ✗ there, not "no label"). The
    measures equal those of a qrels file judging the gold passages 1; the pipeline's ``gold`` baseline
    (:func:`rageval.erag.baselines.compute_reference_labels`) stores the same 1s."""
    gold = dict.fromkeys(gold_ids)
    return ([Label(GOLD, query_id, p, 1.0) for p in gold]
            + [Label(GOLD, query_id, p, 0.0) for p in dict.fromkeys(ranked_ids) if p not in gold])
