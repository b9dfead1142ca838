"""The classic relevance labels eRAG is compared with (Salemi & Zamani, SIGIR 2024, §4.1, baselines a-c).

- ``gold``: the dataset's gold passages (KILT provenance), retrieved or not;
- ``gold_page``: page-level provenance: a retrieved passage of a gold passage's page (same title) counts;
- ``contains_answer``: a normalised gold answer occurs in the passage's text;
- ``llm_relevance``: the LLM asked per passage "is this passage relevant to the question?" (Thomas et al., 2023),
  label 1 when it says Yes.

Every one is stored as qrels-like rows and scored with the same measures as eRAG's labels
(:mod:`rageval.erag.measures`). The method names are those of :mod:`rageval.erag.methods`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rageval.erag.labels import ProgressCallback, generate_in_batches, top_k
from rageval.erag.methods import CONTAINS_ANSWER, GOLD, GOLD_PAGE, LLM_RELEVANCE
from rageval.generation.base import DecodingSettings, Generator
from rageval.prompts import RELEVANCE_FEW_SHOT, PromptTemplate, build_relevance_prompt, parse_yes_no
from rageval.store import Label, LabelEvidence
from rageval.text_metrics import contains_answer
from rageval.types import Passage, Query, Ranking


def compute_llm_relevance_labels(queries: Sequence[Query], rankings: Mapping[str, Ranking],
                                 passages: Mapping[str, Passage], generator: Generator, k: int,
                                 template: PromptTemplate = RELEVANCE_FEW_SHOT,
                                 decoding: DecodingSettings = DecodingSettings(max_new_tokens=3),
                                 batch_size: int = 64, on_progress: ProgressCallback | None = None
                                 ) -> tuple[list[Label], list[LabelEvidence]]:
    """Baseline (c) of eRAG: the LLM asked per passage "is this passage relevant?" (Thomas et al. 2023).

    Label 1 when the reply starts with Yes, 0 otherwise; the raw reply is kept as the label's evidence (a reply
    that is neither Yes nor No is marked as such and counted as not relevant).
    """
    pairs = [(q, pid) for q in queries for pid in top_k(rankings[q.query_id], k)]
    prompts = [build_relevance_prompt(q.text, passages[pid], template) for q, pid in pairs]
    replies = generate_in_batches(generator, prompts, decoding, batch_size, on_progress)
    labels, evidence = [], []
    for (q, pid), reply in zip(pairs, replies):
        parsed = parse_yes_no(reply)
        labels.append(Label(LLM_RELEVANCE, q.query_id, pid, float(bool(parsed))))
        note = f"{generator.model_id} replied '{reply.strip()}'"
        evidence.append(LabelEvidence(LLM_RELEVANCE, q.query_id, pid,
                                      note if parsed is not None else note + " (neither Yes nor No: counted as No)"))
    return labels, evidence


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
