"""The classic relevance labels eRAG is compared with (Salemi & Zamani, SIGIR 2024, §4.1, baselines a-c).

- ``gold``: the dataset's gold passages (KILT provenance), retrieved or not;
- ``gold_page``: page-level provenance: a retrieved passage of a gold passage's page (same title) counts;
- ``contains_answer``: a normalised gold answer occurs in the passage's text;
- ``llm_relevance``: the LLM asked per passage "is this passage relevant to the question?" (Thomas et al., 2023),
  label 1 when it says Yes;
- ``umbrela``: the LLM asked per passage for UMBRELA's graded 0-3 score (Upadhyay et al., 2024; TREC RAG 2024),
  label the grade. The same code with another :class:`RelevanceJudgement`.

An LLM answer neither judgement can read (neither Yes nor No; no ``##final score: 0-3`` line) is no label at all:
it is returned as an :class:`~rageval.store.records.UnparsedAnswer`, counted and shown, never taken for "no".

Every one is stored as qrels-like rows and scored with the same measures as eRAG's labels
(:mod:`rageval.erag.measures`). The method names are those of :mod:`rageval.erag.methods`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from rageval.erag.labels import ProgressCallback, generate_in_batches, top_k
from rageval.erag.methods import CONTAINS_ANSWER, GOLD, GOLD_PAGE, LLM_RELEVANCE, UMBRELA
from rageval.generation.base import DecodingSettings, Generator
from rageval.prompts import (
    RELEVANCE_FEW_SHOT,
    UMBRELA_ZERO_SHOT,
    PromptTemplate,
    build_relevance_prompt,
    build_umbrela_prompt,
    parse_umbrela,
    parse_yes_no,
)
from rageval.store import Label, LabelEvidence
from rageval.store.records import UnparsedAnswer
from rageval.text_metrics import contains_answer
from rageval.types import Passage, Query, Ranking


@dataclass(frozen=True)
class RelevanceJudgement:
    """One way of asking the LLM whether a passage is relevant: the label method it writes, its prompt, how a reply
    becomes a label (None: unparsed), the decoding, and the words its evidence uses for an unread reply."""

    method: str
    template: PromptTemplate
    build_prompt: Callable[[str, Passage, PromptTemplate], str]
    parse: Callable[[str], float | None]
    decoding: DecodingSettings
    expected: str


def _yes_no_label(reply: str) -> float | None:
    parsed = parse_yes_no(reply)
    return None if parsed is None else float(parsed)


def _umbrela_label(reply: str) -> float | None:
    grade = parse_umbrela(reply)
    return None if grade is None else float(grade)


#: eRAG's baseline (c): "is this passage relevant?", Yes (1) or No (0); three tokens are enough.
YES_NO = RelevanceJudgement(LLM_RELEVANCE, RELEVANCE_FEW_SHOT, build_relevance_prompt, _yes_no_label,
                            DecodingSettings(max_new_tokens=3), "neither Yes nor No")
#: UMBRELA: the grade of the "##final score: N" line, 0-3. The prompt asks for the line alone; 24 tokens leave room
#: for a model that says a few words first (``parse_umbrela`` finds the line anywhere in the reply).
UMBRELA_GRADED = RelevanceJudgement(UMBRELA, UMBRELA_ZERO_SHOT, build_umbrela_prompt, _umbrela_label,
                                    DecodingSettings(max_new_tokens=24), "no '##final score: 0-3' line")
#: Label method -> its judgement: the LLM relevance methods a run, a re-score job or "complete" may compute.
RELEVANCE_JUDGEMENTS = {j.method: j for j in (YES_NO, UMBRELA_GRADED)}


def compute_llm_relevance_labels(queries: Sequence[Query], rankings: Mapping[str, Ranking],
                                 passages: Mapping[str, Passage], generator: Generator, k: int,
                                 judgement: RelevanceJudgement = YES_NO,
                                 decoding: DecodingSettings | None = None,
                                 batch_size: int = 64, on_progress: ProgressCallback | None = None
                                 ) -> tuple[list[Label], list[LabelEvidence], list[UnparsedAnswer]]:
    """The LLM's relevance judgement of each query's top ``k`` passages under ``judgement``: eRAG's baseline (c)
    (:data:`YES_NO`, Thomas et al. 2023) or UMBRELA's grades (:data:`UMBRELA_GRADED`); ``decoding`` overrides the
    judgement's own.

    Returns the labels with the raw reply as each one's evidence, and the replies that could not be read
    (:class:`~rageval.store.records.UnparsedAnswer`): those passages get no label (never "no", never grade 0).
    """
    pairs = [(q, pid) for q in queries for pid in top_k(rankings[q.query_id], k)]
    prompts = [judgement.build_prompt(q.text, passages[pid], judgement.template) for q, pid in pairs]
    replies = generate_in_batches(generator, prompts, decoding or judgement.decoding, batch_size, on_progress)
    labels, evidence, unparsed = [], [], []
    for (q, pid), reply in zip(pairs, replies):
        value = judgement.parse(reply)
        if value is None:
            unparsed.append(UnparsedAnswer(judgement.method, generator.model_id, q.query_id, pid, reply))
            continue
        labels.append(Label(judgement.method, q.query_id, pid, value))
        evidence.append(LabelEvidence(judgement.method, q.query_id, pid,
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
