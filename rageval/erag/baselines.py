"""The classic relevance labels eRAG is compared with (Salemi & Zamani, SIGIR 2024, §4.1, baselines a-c).

- ``gold``: the dataset's gold passages (KILT provenance), retrieved or not;
- ``gold_page``: page-level provenance: a retrieved passage of a gold passage's page (same title) counts;
- ``contains_answer``: a normalised gold answer occurs in the passage's text;
- the LLM judges (:func:`rageval.labelmethods.judges`): the LLM asked per passage "is this passage relevant to the
  question?" (Thomas et al., 2023), label 1 when it says Yes; the graded 0-3 judge; a user's judge file. The same
  code with another :class:`~rageval.labelmethods.Judge`.

An LLM answer a judge cannot read (neither Yes nor No; no grade line) is no label at all: it is returned as an
:class:`~rageval.store.records.UnparsedAnswer`, counted and shown, never taken for "no".

Every one is stored as qrels-like rows and scored with the same measures as eRAG's labels
(:mod:`rageval.erag.measures`). The methods are those registered in :mod:`rageval.labelmethods`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rageval.erag.labels import ProgressCallback, generate_in_batches, top_k
from rageval.generation.base import DecodingSettings, Generator
from rageval.labelmethods import (
    CONTAINS_ANSWER,
    GOLD,
    GOLD_PAGE,
    LLM_RELEVANCE,
    Judge,
    LabelMethodError,
    judges,
    method_kind,
)
from rageval.store import Label, LabelEvidence
from rageval.store.records import UnparsedAnswer
from rageval.text_metrics import contains_answer
from rageval.types import Passage, Query, Ranking


def judge_of(method: str) -> Judge:
    """The LLM judge of a registered judge method (:func:`rageval.labelmethods.judges`); a :class:`LabelMethodError`
    for a method that is not one."""
    kind = method_kind(method)
    if kind.judge is None:
        names = ", ".join(k.name for k in judges())
        raise LabelMethodError(f"label method {method!r} is not an LLM judge; expected one of {names} or a judge file")
    return kind.judge


def compute_judge_labels(queries: Sequence[Query], rankings: Mapping[str, Ranking],
                                 passages: Mapping[str, Passage], generator: Generator, k: int,
                                 method: str = LLM_RELEVANCE,
                                 decoding: DecodingSettings | None = None,
                                 batch_size: int = 64, on_progress: ProgressCallback | None = None
                                 ) -> tuple[list[Label], list[LabelEvidence], list[UnparsedAnswer]]:
    """The judgement of each query's top ``k`` passages by the LLM judge of ``method`` (a registered judge:
    eRAG's baseline (c), Thomas et al. 2023, by default; :func:`rageval.labelmethods.judges`); ``decoding``
    overrides the judge's own (its ``max_new_tokens``, greedy).

    Returns the labels with the raw reply as each one's evidence, and the replies that could not be read
    (:class:`~rageval.store.records.UnparsedAnswer`): those passages get no label (never "no", never grade 0).
    """
    judge = judge_of(method)
    pairs = [(q, pid) for q in queries for pid in top_k(rankings[q.query_id], k)]
    prompts = [judge.build_prompt(q, passages[pid]) for q, pid in pairs]
    decoding = decoding or DecodingSettings(max_new_tokens=judge.max_new_tokens)
    replies = generate_in_batches(generator, prompts, decoding, batch_size, on_progress)
    labels, evidence, unparsed = [], [], []
    for (q, pid), reply in zip(pairs, replies):
        value = judge.parse(reply)
        if value is None:
            unparsed.append(UnparsedAnswer(method, generator.model_id, q.query_id, pid, reply))
            continue
        labels.append(Label(method, q.query_id, pid, value))
        evidence.append(LabelEvidence(method, q.query_id, pid,
                                      f"{generator.model_id} replied '{reply.strip()}'"))
    return labels, evidence, unparsed


def compute_reference_labels(queries: Sequence[Query], rankings: Mapping[str, Ranking],
                             passages: Mapping[str, Passage], k: int) -> list[Label]:
    """The classic baselines:

    - *gold*: the dataset's gold passages (NQ: the annotated passage; HotpotQA: the supporting paragraphs),
      retrieved or not;
    - *gold_page*: KILT-style page-level provenance: a passage is relevant when its title is the title of a
      gold passage (case-insensitive), so another passage or version of the gold page counts;
    - *contains_answer*: a normalised gold answer occurs in the retrieved passage's text.
    """
    labels = [Label(GOLD, q.query_id, pid, 1.0) for q in queries for pid in q.gold_passage_ids]
    for q in queries:
        gold_titles = {passages[pid].title.strip().lower() for pid in q.gold_passage_ids if pid in passages}
        gold_titles.discard("")
        page_labels = dict.fromkeys(q.gold_passage_ids, 1.0)
        for pid in top_k(rankings[q.query_id], k):
            found = contains_answer(passages[pid].as_document(), q.answers)
            labels.append(Label(CONTAINS_ANSWER, q.query_id, pid, float(found)))
            page_labels.setdefault(pid, float(passages[pid].title.strip().lower() in gold_titles))
        labels.extend(Label(GOLD_PAGE, q.query_id, pid, value) for pid, value in page_labels.items())
    return labels
